/* transformer.c - LayerNorm, Conv1D, activation and self-attention on batches
 * (transformer.h). */
#include "network/transformer.h"

#include <cblas.h>
#include <math.h>

#include "core/vexp.h"
#include "model/moe_kernels.h"

void tf_layernorm_forward(const float *X, int M, int d, const float *w, const float *b, double eps,
                          float *Y) {
    for (int r = 0; r < M; r++) {
        const float *x = X + (size_t)r * d;
        float *y = Y + (size_t)r * d;
        double mu = 0.0, var = 0.0;
        for (int j = 0; j < d; j++) mu += x[j];
        mu /= d;
        for (int j = 0; j < d; j++) var += (x[j] - mu) * (x[j] - mu);
        var /= d;
        double inv = 1.0 / sqrt(var + eps);
        for (int j = 0; j < d; j++) y[j] = (float)((x[j] - mu) * inv) * w[j] + b[j];
    }
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
    size_t q = 0;
    if (act == ACT_GELU_TANH) // 4 lanes at a time (core/vexp.h), the scalar form's values
        for (; q + 4 <= len; q += 4) *(vexp_f4 *)(X + q) = vgelu_tanh4(*(const vexp_f4 *)(X + q));
    for (; q < len; q++) X[q] = moe_act_scalar(act, X[q]);
}

/* s (n) <- softmax(s) in place: exp by vexp4 (4 lanes), the sum of up to a
 * few thousand floats in float lanes, then in double */
static void softmax_row(float *s, int n) {
    float mx = s[0];
    for (int c = 1; c < n; c++) mx = s[c] > mx ? s[c] : mx;
    vexp_f4 m4 = vexp_splat(mx), acc = vexp_splat(0.0f);
    int c = 0;
    for (; c + 4 <= n; c += 4) {
        vexp_f4 e = vexp4(*(const vexp_f4 *)(s + c) - m4);
        *(vexp_f4 *)(s + c) = e;
        acc += e;
    }
    double sum = (double)acc[0] + acc[1] + acc[2] + acc[3];
    for (; c < n; c++) sum += (s[c] = vexp1(s[c] - mx));
    float inv = (float)(1.0 / sum);
    vexp_f4 i4 = vexp_splat(inv);
    for (c = 0; c + 4 <= n; c += 4) *(vexp_f4 *)(s + c) *= i4;
    for (; c < n; c++) s[c] *= inv;
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
                softmax_row(s, n);
                for (int c = n; c < cols; c++) s[c] = 0.0f;
            }
            // O[r0..r1), head j's columns (rows, dh) = S (rows, cols) v[0..cols) (cols, dh)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dh, cols, 1.0f, S, cols, v, ld, 0.0f,
                        O + (size_t)r0 * d + (size_t)j * dh, d);
        }
    }
}
