/* moe_kernels.c - one expert forward and the top-k selection (moe_kernels.h). */
#include "model/moe_kernels.h"

#include <cblas.h>
#include <stdlib.h>

/* 4 floats: one SSE register (wider generic vectors are split lane by lane
 * on baseline x86-64, slower than scalar code). The loops below do the scalar code's operations (an add, a
 * compare and select, a multiply), one per element, so the values are the
 * same bit for bit; none pairs a multiply with an add that a compiler could
 * fuse into an FMA. -O2 does not vectorise these loops itself (their trip
 * counts are not known, and the activation's switch sits inside). */
typedef float vf4 __attribute__((vector_size(16), aligned(4), may_alias));
typedef int vi4 __attribute__((vector_size(16), aligned(4), may_alias));

/* hr (h) <- relu(hr + b): v > 0 ? v : 0, as moe_act_scalar (NaN and -0 give +0). */
static void relu_bias_row(float *restrict hr, const float *restrict b, int h) {
    const vf4 zero = {0};
    int u = 0;
    for (; u + 4 <= h; u += 4) {
        vf4 v = *(const vf4 *)(hr + u) + *(const vf4 *)(b + u);
        vi4 pos = v > zero;
        *(vf4 *)(hr + u) = (vf4)((vi4)v & pos);
    }
    for (; u < h; u++) {
        float v = hr[u] + b[u];
        hr[u] = v > 0.0f ? v : 0.0f;
    }
}

void moe_row_add(float *restrict y, const float *restrict b, int d) {
    int j = 0;
    for (; j + 4 <= d; j += 4) *(vf4 *)(y + j) = *(const vf4 *)(y + j) + *(const vf4 *)(b + j);
    for (; j < d; j++) y[j] += b[j];
}

void moe_row_axpy(float *restrict dr, float g, const float *restrict y, int d) {
    const vf4 gv = {g, g, g, g};
    int j = 0;
    for (; j + 4 <= d; j += 4) {
        vf4 t = gv * *(const vf4 *)(y + j);
        *(vf4 *)(dr + j) = *(const vf4 *)(dr + j) + t;
    }
    for (; j < d; j++) dr[j] += g * y[j];
}

/* GELU and SiLU-GLU on 8 lanes (AVX2 + FMA when the CPU has them, else the
 * same code on SSE halves): libm's erff and expf one element at a time were
 * 40-50% of a GELU or SiLU layer's evaluation. Each element gets the same
 * operations wherever it sits in a row (the tail is padded to 8 lanes), so
 * the values do not depend on h, m or the chunking; they are not libm's bit
 * for bit (tests/unit/test_kernels.c bounds them against the double formulas). */
#define ACT_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
typedef float vf8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int vi8 __attribute__((vector_size(32), aligned(4), may_alias));
#define VF8_SEL(m, a, b) ((vf8)(((m) & (vi8)(a)) | (~(m) & (vi8)(b))))

/* *x <- e^x per lane, x clamped to [-87, 88] (moe_kernels.h's polynomial). By
 * pointer: a 32-byte vector passed by value has another ABI with and without AVX. */
static inline void vf8_exp(vf8 *x) {
    const vf8 lo = (vf8){0} - 87.0f, hi = (vf8){0} + 88.0f;
    vf8 y = VF8_SEL(*x < lo, lo, *x);
    y = VF8_SEL(y > hi, hi, y);
    MOE_VEXP_CLAMPED(vf8, vi8, *x, y);
}

/* The exact-erf GELU 0.5 v (1 + erf(v / sqrt 2)), written with erfc so that
 * the negative tail, where 1 + erf cancels, keeps its relative accuracy:
 * v >= 0: v - 0.5 v erfc(z), v < 0: 0.5 v erfc(z), z = |v| / sqrt 2, and
 * erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2) (Numerical Recipes'
 * erfcc: fractional error below 1.2e-7). Within 2.4e-7 of the double formula
 * over [-12, 12], against 4.5e-7 for float erff. */
static inline void vf8_gelu(vf8 *vp) {
    const vf8 zero = {0}, v = *vp;
    vf8 z = VF8_SEL(v < zero, zero - v, v) * 0.70710678118654752f;
    vf8 t = 1.0f / (1.0f + 0.5f * z);
    vf8 p = zero + 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    vf8 ec = p - z * z;
    vf8_exp(&ec);
    vf8 half = 0.5f * v * (t * ec);
    *vp = VF8_SEL(v < zero, half, v - half);
}

/* H (m, h) <- gelu(H + b), row by row, 8 units at a time */
ACT_HOT static void gelu_rows(float *H, const float *b, int m, int h) {
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        int u = 0;
        for (; u + 8 <= h; u += 8) {
            vf8 v = *(const vf8 *)(hr + u) + *(const vf8 *)(b + u);
            vf8_gelu(&v);
            *(vf8 *)(hr + u) = v;
        }
        if (u < h) { // the tail through the same lanes
            vf8 v = {0};
            for (int q = 0; u + q < h; q++) v[q] = hr[u + q] + b[u + q];
            vf8_gelu(&v);
            for (int q = 0; u + q < h; q++) hr[u + q] = v[q];
        }
    }
}

/* H (m, h) <- silu(H + b1) * (H3 + b3): a u / (1 + e^-a) */
ACT_HOT static void silu_glu_rows(float *H, const float *H3, const float *b1, const float *b3, int m, int h) {
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        const float *h3 = H3 + (size_t)r * h;
        for (int u = 0; u < h; u += 8) {
            vf8 a = {0}, l = {0};
            int w = h - u < 8 ? h - u : 8;
            if (w == 8) {
                a = *(const vf8 *)(hr + u) + *(const vf8 *)(b1 + u);
                l = *(const vf8 *)(h3 + u) + *(const vf8 *)(b3 + u);
            } else {
                for (int q = 0; q < w; q++) a[q] = hr[u + q] + b1[u + q], l[q] = h3[u + q] + b3[u + q];
            }
            vf8 ea = (vf8){0} - a;
            vf8_exp(&ea);
            vf8 y = a * l / (1.0f + ea);
            if (w == 8) *(vf8 *)(hr + u) = y;
            else
                for (int q = 0; q < w; q++) hr[u + q] = y[q];
        }
    }
}

void moe_hidden_act(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m) {
    int h = c->h;
    if (c->act == ACT_RELU) {
        for (int r = 0; r < m; r++) relu_bias_row(H + (size_t)r * h, e->fc1_b, h);
        return;
    }
    if (c->act == ACT_GELU) {
        gelu_rows(H, e->fc1_b, m, h);
        return;
    }
    if (c->act == ACT_SILU_GLU) {
        silu_glu_rows(H, H3, e->fc1_b, e->fc3_b, m, h);
        return;
    }
    if (moe_act_glu(c->act)) {
        for (int r = 0; r < m; r++) {
            float *hr = H + (size_t)r * h;
            const float *h3 = H3 + (size_t)r * h;
            for (int u = 0; u < h; u++)
                hr[u] = moe_act_gated(c, hr[u] + e->fc1_b[u], h3[u] + e->fc3_b[u]);
        }
        return;
    }
    if (c->act == ACT_GELU_TANH) { // 4 lanes at a time, the scalar form's values
        for (int r = 0; r < m; r++) {
            float *hr = H + (size_t)r * h;
            int u = 0;
            for (; u + 4 <= h; u += 4)
                *(vf4 *)(hr + u) = vgelu_tanh4(*(const vf4 *)(hr + u) + *(const vf4 *)(e->fc1_b + u));
            for (; u < h; u++) hr[u] = vgelu_tanh1(hr[u] + e->fc1_b[u]);
        }
        return;
    }
    for (int r = 0; r < m; r++) {
        float *hr = H + (size_t)r * h;
        for (int u = 0; u < h; u++) hr[u] = moe_act_scalar(c->act, hr[u] + e->fc1_b[u]);
    }
}

void moe_expert_forward(const moe_expert *e, const moe_config *c, const float *X, int m, float *H,
                        float *H3, float *Y) {
    int d = c->d, h = c->h;
    // H (m, h) = X (m, d) W1^T, W1 is (h, d)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, h, d, 1.0f, X, d, e->fc1_w, d, 0.0f,
                H, h);
    // H3 (m, h) = X W3^T for the gated forms
    if (moe_act_glu(c->act))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, h, d, 1.0f, X, d, e->fc3_w, d,
                    0.0f, H3, h);
    moe_expert_finish(e, c, H, H3, m, Y);
}

void moe_expert_finish(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m, float *Y) {
    int d = c->d, h = c->h;
    moe_hidden_act(e, c, H, H3, m);
    // Y (m, d) = H (m, h) W2^T + b2, W2 is (d, h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, d, h, 1.0f, H, h, e->fc2_w, h, 0.0f, Y,
                d);
    for (int r = 0; r < m; r++) moe_row_add(Y + (size_t)r * d, e->fc2_b, d);
}

void moe_gate_logits(const moe_model *m, const float *X, int B, float *S) {
    int n = m->cfg.n, d = m->cfg.d;
    // S (B, n) = X (B, d) W^T + b, W is (n, d)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, d, 1.0f, X, d, m->gate_w, d, 0.0f, S,
                n);
    for (int r = 0; r < B; r++)
        for (int i = 0; i < n; i++) S[(size_t)r * n + i] += m->gate_b[i];
}

void moe_topk(const float *s, int n, int k, int *sel) {
    // insertion into the ranked list sel[0..m): O(n k), no marks, any n
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m == k && !MOE_RANKS_BEFORE(s[i], i, s[sel[k - 1]], sel[k - 1])) continue;
        int p = m < k ? m++ : k - 1;
        while (p > 0 && MOE_RANKS_BEFORE(s[i], i, s[sel[p - 1]], sel[p - 1])) {
            sel[p] = sel[p - 1];
            p--;
        }
        sel[p] = i;
    }
}

int moe_topk_boundary_tie(const float *s, int n, int k) {
    if (k <= 0 || k >= n) return 0;
    // the k-th largest value, then whether an expert outside the top k equals it
    int sel[64], *sp = k <= 64 ? sel : ms_malloc((size_t)k * sizeof(int));
    moe_topk(s, n, k, sp);
    float kth = s[sp[k - 1]];
    int ahead = 0, equal = 0;
    for (int i = 0; i < n; i++) {
        ahead += s[i] > kth;
        equal += s[i] == kth;
    }
    if (sp != sel) free(sp);
    return ahead + equal > k;
}
