/* transformer.c - LayerNorm, Conv1D, activation and self-attention on batches
 * (transformer.h). */
#include "network/transformer.h"

#include <cblas.h>
#include <math.h>

#include "core/vrows.h"
#include "model/moe_kernels.h"

void tf_layernorm_forward(const float *X, int M, int d, const float *w, const float *b, double eps,
                          float *Y) {
    for (int r = 0; r < M; r++) vr_layernorm(X + (size_t)r * d, d, w, b, eps, Y + (size_t)r * d);
}

void tf_dense_forward(const float *X, int M, int in, int out, const float *W, tf_layout lay,
                      const float *bias, int accumulate, float *Y) {
    // Y (M, out) (+)= X (M, in) W (in, out), or X W^T for W (out, in)
    int lin = lay == TF_LINEAR;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, lin ? CblasTrans : CblasNoTrans, M, out, in, 1.0f, X, in, W,
                lin ? in : out, accumulate ? 1.0f : 0.0f, Y, out);
    if (bias)
        for (int r = 0; r < M; r++) moe_row_add(Y + (size_t)r * out, bias, out);
}

void tf_act_forward(float *X, size_t len, moe_act act) {
    if (act == ACT_GELU_TANH) { // in the vector form that runs (core/vrows.h)
        vr_gelu_tanh(X, len);
        return;
    }
    for (size_t q = 0; q < len; q++) X[q] = moe_act_scalar(act, X[q]);
}

/* Rows are taken in blocks of ATT_BLOCK: a causal block [r0, r1) attends to
 * tokens [0, r1) only, so the products cover the lower triangle (about half of
 * the T x T work at T = 128) instead of the whole square. */
#define ATT_BLOCK 32

void tf_attention_forward(const float *QKV, int T, int d, int nh, int causal, float *S, float *O) {
    int dh = d / nh, ld = 3 * d;
    float scale = (float)(1.0 / sqrt((double)dh));
    for (int j = 0; j < nh; j++) {
        const float *q = QKV + (size_t)j * dh, *k = q + d, *v = q + 2 * d;
        for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
            int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, rows = r1 - r0, cols = causal ? r1 : T;
            // S (rows, cols) = scale q[r0..r1) k[0..cols)^T, q and k (., dh) at stride 3d
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, dh, scale, q + (size_t)r0 * ld,
                        ld, k, ld, 0.0f, S, cols);
            for (int i = 0; i < rows; i++) {
                float *s = S + (size_t)i * cols;
                int n = causal ? r0 + i + 1 : cols; // the rest is masked: weight exactly 0
                vr_softmax(s, n); // core/vrows.h
                for (int c = n; c < cols; c++) s[c] = 0.0f;
            }
            // O[r0..r1), head j's columns (rows, dh) = S (rows, cols) v[0..cols) (cols, dh)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dh, cols, 1.0f, S, cols, v, ld, 0.0f,
                        O + (size_t)r0 * d + (size_t)j * dh, d);
        }
    }
}
