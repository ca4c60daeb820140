/* moe_kernels.c - one expert forward and the top-k selection (moe_kernels.h). */
#include "model/moe_kernels.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"
#include "core/vrows.h"
#include "model/symmetry.h"

/* The element loops of a layer run in core/vrows.h's vector forms, the widest
 * the CPU runs (AVX-512 and AVX2 give the same bits): the bias add, relu and
 * g y + x are the scalar loops' values bit for bit (an add, a compare and
 * select, a product rounded before its add: never an FMA); GELU, gelu_new and
 * SiLU-GLU are polynomials within float rounding of the double formulas
 * (libm's erff and expf one element at a time were 40-50% of a GELU or SiLU
 * layer's evaluation), a value's bits not depending on its place in a row, h,
 * m or the chunking (tests/unit/test_vrows.c, test_kernels.c). */
void moe_row_add(float *restrict y, const float *restrict b, int d) { vr_add(y, b, d); }

void moe_row_axpy(float *restrict dr, float g, const float *restrict y, int d) { vr_axpy(dr, g, y, d); }

void moe_hidden_act(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m) {
    int h = c->h;
    switch (c->act) {
    case ACT_RELU: vr_relu_bias(H, e->fc1_b, m, h); return;
    case ACT_GELU: vr_gelu_bias(H, e->fc1_b, m, h); return;
    case ACT_SILU_GLU: vr_silu_glu_bias(H, H3, e->fc1_b, e->fc3_b, m, h); return;
    case ACT_GELU_TANH:
        for (int r = 0; r < m; r++) {
            vr_add(H + (size_t)r * h, e->fc1_b, h);
            vr_gelu_tanh(H + (size_t)r * h, (size_t)h);
        }
        return;
    default: break;
    }
    for (int r = 0; r < m; r++) { // gpt_oss's clamped SwiGLU, one value at a time
        float *hr = H + (size_t)r * h;
        const float *h3 = H3 + (size_t)r * h;
        for (int u = 0; u < h; u++) hr[u] = moe_act_gated(c, hr[u] + e->fc1_b[u], h3[u] + e->fc3_b[u]);
    }
}

/* an expert's weight: its floats (cols wide), or where a mapped layer keeps it */
static wref weight_of(const float *w, wref mapped, int cols) {
    return w ? (wref){.p = w, .dt = WP_F32, .ld = (size_t)cols} : mapped;
}

void moe_expert_forward(const moe_expert *e, const moe_config *c, const float *X, int m, float *H,
                        float *H3, float *Y) {
    int d = c->d, h = c->h;
    // H (m, h) = X (m, d) W1^T, W1 is (h, d)
    wp_gemm_nt(m, h, d, X, d, weight_of(e->fc1_w, e->w1, d), 0.0f, H, h);
    // H3 (m, h) = X W3^T for the gated forms
    if (moe_act_glu(c->act)) wp_gemm_nt(m, h, d, X, d, weight_of(e->fc3_w, e->w3, d), 0.0f, H3, h);
    moe_expert_finish(e, c, H, H3, m, Y);
}

int moe_expert_forward_until(const moe_expert *e, const moe_config *c, const float *X, int m, float *H,
                             float *H3, float *Y, const atomic_int *stop) {
    int d = c->d;
    for (int r0 = 0; r0 < m; r0 += MOE_EXPERT_ROWS) {
        if (stop && atomic_load(stop)) return 1;
        int rows = m - r0 < MOE_EXPERT_ROWS ? m - r0 : MOE_EXPERT_ROWS;
        moe_expert_forward(e, c, X + (size_t)r0 * d, rows, H, H3, Y + (size_t)r0 * d);
    }
    return 0;
}

void moe_expert_finish(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m, float *Y) {
    int d = c->d, h = c->h;
    moe_hidden_act(e, c, H, H3, m);
    // Y (m, d) = H (m, h) W2^T + b2, W2 is (d, h)
    wp_gemm_nt(m, d, h, H, h, weight_of(e->fc2_w, e->w2, h), 0.0f, Y, d);
    for (int r = 0; r < m; r++) moe_row_add(Y + (size_t)r * d, e->fc2_b, d);
}

/* the argmax of s (n) without index skip (-1: none), ties to the smaller index */
static int argmax_but(const float *s, int n, int skip) {
    int b = -1;
    for (int i = 0; i < n; i++)
        if (i != skip && (b < 0 || s[i] > s[b])) b = i;
    return b;
}

/* the softmax at i of s (n) with skip and the logits too far below s_i masked out */
static float sparsemixer_weight(const float *s, int n, float eps, int i, int skip) {
    float top = s[i];
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        float factor = fabsf(s[j]) > top ? fabsf(s[j]) : top; // abs().clamp(min = top)
        if (j == skip || (top - s[j]) / factor > 2.0f * eps) continue;
        sum += exp((double)s[j] - top);
    }
    return (float)(1.0 / sum);
}

void moe_sparsemixer(const float *s, int n, float eps, float *g) {
    for (int i = 0; i < n; i++) g[i] = 0.0f;
    int i1 = argmax_but(s, n, -1), i2 = argmax_but(s, n, i1);
    g[i1] = sparsemixer_weight(s, n, eps, i1, -1);
    if (i2 >= 0) g[i2] = sparsemixer_weight(s, n, eps, i2, i1);
}

void moe_gate_routing(const moe_model *m, float *W, float *b) {
    int n = m->cfg.n, d = m->cfg.d;
    memcpy(W, m->gate_w, (size_t)n * d * sizeof(float));
    memcpy(b, m->gate_b, (size_t)n * sizeof(float));
    if (!moe_gate_centring_valid(&m->cfg)) return; // sigmoid, sparsemixer: no such symmetry
    // mu (d + 1): the mean over experts of the rows and (last) of the bias, in double
    double *mu = ms_calloc((size_t)d + 1, sizeof(double));
    for (int i = 0; i < n; i++) {
        const float *w = m->gate_w + (size_t)i * d; // (d)
        for (int j = 0; j < d; j++) mu[j] += w[j];
        mu[d] += m->gate_b[i];
    }
    for (int i = 0; i < n; i++) {
        const float *w = m->gate_w + (size_t)i * d;
        float *o = W + (size_t)i * d;
        for (int j = 0; j < d; j++) o[j] = (float)((double)w[j] - mu[j] / n);
        b[i] = (float)((double)m->gate_b[i] - mu[d] / n);
    }
    free(mu);
}

void moe_interpolate_routed(moe_model *out, const moe_model *a, const moe_model *b, double t) {
    moe_interpolate(out, a, b, t);
    int n = a->cfg.n, d = a->cfg.d;
    size_t nd = (size_t)n * d;
    float *ga = ms_malloc(2 * (nd + n) * sizeof(float)), *gb = ga + nd + n; // (n, d) + (n) each
    moe_gate_routing(a, ga, ga + nd);
    moe_gate_routing(b, gb, gb + nd);
    float ta = (float)(1.0 - t), tb = (float)t; // as moe_interpolate rounds
    for (size_t q = 0; q < nd; q++) out->gate_w[q] = ta * ga[q] + tb * gb[q];
    for (int i = 0; i < n; i++) out->gate_b[i] = ta * ga[nd + i] + tb * gb[nd + i];
    free(ga);
}

void moe_gate_logits_with(const float *W, const float *b, int n, int d, const float *X, int B, float *S) {
    // S (B, n) = X (B, d) W^T + b, W is (n, d)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, d, 1.0f, X, d, W, d, 0.0f, S, n);
    for (int r = 0; r < B; r++)
        for (int i = 0; i < n; i++) S[(size_t)r * n + i] += b[i];
}

void moe_gate_logits(const moe_model *m, const float *X, int B, float *S) {
    int n = m->cfg.n, d = m->cfg.d;
    float *W = ms_malloc(((size_t)n * d + n) * sizeof(float)), *b = W + (size_t)n * d; // (n, d), (n)
    moe_gate_routing(m, W, b);
    moe_gate_logits_with(W, b, n, d, X, B, S);
    free(W);
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
