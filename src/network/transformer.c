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

void tf_rmsnorm_forward(const float *X, int M, int d, int ldx, const float *w, double eps, float *Y) {
    for (int r = 0; r < M; r++) {
        const float *x = X + (size_t)r * ldx;
        float *y = Y + (size_t)r * ldx;
        double ss = 0.0;
        for (int j = 0; j < d; j++) ss += (double)x[j] * x[j];
        float inv = (float)(1.0 / sqrt(ss / d + eps));
        for (int j = 0; j < d; j++) y[j] = w[j] * (x[j] * inv);
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

/* s (n) <- exp(s - m) / (sum exp(s - m) + exp(z - m)), m = max(s, z): a softmax
 * whose denominator holds the sink logit z too (its weight dropped) */
static void softmax_sink(float *s, int n, float z) {
    float m = z;
    for (int i = 0; i < n; i++) m = s[i] > m ? s[i] : m;
    double sum = exp((double)z - m);
    for (int i = 0; i < n; i++) sum += (s[i] = expf(s[i] - m));
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) s[i] *= inv;
}

int tf_kv_head(const tf_attn_shape *a, int j) { return a->tiled ? j % a->nkv : j / (a->nh / a->nkv); }

void tf_attention_head(const float *QKV, int T, const tf_attn_shape *a, int j, float *S, float *O) {
    int dh = a->hd, vd = a->vd ? a->vd : dh, qw = a->nh * dh, g = tf_kv_head(a, j);
    int ld = qw + a->nkv * (dh + vd), ow = a->nh * vd;
    const float *q = QKV + (size_t)j * dh, *k = QKV + qw + (size_t)g * dh;
    const float *v = QKV + qw + (size_t)a->nkv * dh + (size_t)g * vd;
    for (int r0 = 0; r0 < T; r0 += ATT_BLOCK) {
        int r1 = r0 + ATT_BLOCK < T ? r0 + ATT_BLOCK : T, rows = r1 - r0, cols = a->causal ? r1 : T;
        // S (rows, cols) = scale q[r0..r1) k[0..cols)^T, q and k (., dh) at stride ld
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, dh, a->scale, q + (size_t)r0 * ld, ld, k,
                    ld, 0.0f, S, cols);
        for (int i = 0; i < rows; i++) {
            float *s = S + (size_t)i * cols;
            int n = a->causal ? r0 + i + 1 : cols; // the rest is masked: weight exactly 0
            int lo = a->window > 0 && n > a->window ? n - a->window : 0;
            if (a->sinks) softmax_sink(s + lo, n - lo, a->sinks[j]);
            else vr_softmax(s + lo, n - lo); // core/vrows.h
            for (int c = 0; c < lo; c++) s[c] = 0.0f;
            for (int c = n; c < cols; c++) s[c] = 0.0f;
        }
        // O[r0..r1), head j's columns (rows, vd) = S (rows, cols) v[0..cols) (cols, vd)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, vd, cols, 1.0f, S, cols, v, ld, 0.0f,
                    O + (size_t)r0 * ow + (size_t)j * vd, ow);
    }
}

void tf_attention_gqa(const float *QKV, int T, const tf_attn_shape *a, float *S, float *O) {
    for (int j = 0; j < a->nh; j++) tf_attention_head(QKV, T, a, j, S, O);
}

void tf_attention_forward(const float *QKV, int T, int d, int nh, int causal, float *S, float *O) {
    tf_attn_shape a = {nh, nh, d / nh, (float)(1.0 / sqrt((double)(d / nh))), causal, 0, 0, NULL, 0};
    tf_attention_gqa(QKV, T, &a, S, O);
}

void tf_rope_table(int T, int rot, const double *inv_freq, double af, float *cs) {
    int half = rot / 2;
    for (int p = 0; p < T; p++)
        for (int i = 0; i < half; i++) {
            double ang = p * inv_freq[i];
            cs[(size_t)p * rot + i] = (float)(af * cos(ang));
            cs[(size_t)p * rot + half + i] = (float)(af * sin(ang));
        }
}

void tf_rope_forward(float *X, int M, int p0, int ld, int T, int nr, int hd, int rot, const float *cs,
                     int interleave) {
    int half = rot / 2, a = interleave ? 2 : 1, b = interleave ? 1 : half; // pair i: a i and a i + b
    for (int r = 0; r < M; r++) {
        const float *c = cs + (size_t)((p0 + r) % T) * rot, *s = c + half;
        for (int j = 0; j < nr; j++) {
            float *x = X + (size_t)r * ld + (size_t)j * hd;
            for (int i = 0; i < half; i++) {
                float x1 = x[a * i], x2 = x[a * i + b];
                x[a * i] = x1 * c[i] - x2 * s[i];
                x[a * i + b] = x2 * c[i] + x1 * s[i];
            }
        }
    }
}
