/* transformer.c - LayerNorm, Conv1D, activation and self-attention on batches
 * (transformer.h). */
#include "network/transformer.h"

#include <cblas.h>
#include <math.h>

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

void tf_conv1d_forward(const float *X, int M, int in, int out, const float *W, const float *bias,
                       float *Y) {
    // Y (M, out) = X (M, in) W (in, out)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, out, in, 1.0f, X, in, W, out, 0.0f, Y,
                out);
    if (bias)
        for (int r = 0; r < M; r++) moe_row_add(Y + (size_t)r * out, bias, out);
}

void tf_act_forward(float *X, size_t len, moe_act act) {
    for (size_t q = 0; q < len; q++) X[q] = moe_act_scalar(act, X[q]);
}

void tf_attention_forward(const float *QKV, int T, int d, int nh, int causal, float *S, float *O) {
    int dh = d / nh, ld = 3 * d;
    float scale = (float)(1.0 / sqrt((double)dh));
    for (int j = 0; j < nh; j++) {
        const float *q = QKV + (size_t)j * dh, *k = q + d, *v = q + 2 * d;
        // S (T, T) = scale q k^T, q and k (T, dh) at stride 3d
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, dh, scale, q, ld, k, ld, 0.0f, S, T);
        for (int i = 0; i < T; i++) {
            float *s = S + (size_t)i * T;
            int n = causal ? i + 1 : T; // the rest is masked: weight exactly 0
            float mx = s[0];
            for (int c = 1; c < n; c++) mx = s[c] > mx ? s[c] : mx;
            double sum = 0.0;
            for (int c = 0; c < n; c++) {
                s[c] = expf(s[c] - mx);
                sum += s[c];
            }
            float inv = (float)(1.0 / sum);
            for (int c = 0; c < n; c++) s[c] *= inv;
            for (int c = n; c < T; c++) s[c] = 0.0f;
        }
        // O[:, j dh ..] (T, dh) = S (T, T) v (T, dh)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, dh, T, 1.0f, S, T, v, ld, 0.0f,
                    O + (size_t)j * dh, d);
    }
}
