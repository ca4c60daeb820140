/* test_kernels.c - the shared kernels (moe_kernels.h): top-k selection and its
 * tie rule against brute force on tie-heavy scores, the boundary-tie test,
 * the activations against their formulas in double (the scalar ones, and the
 * 8-lane GELU and SiLU-GLU rows of moe_hidden_act: close to the formula over
 * [-12, 12], the negative GELU tail relatively too, and the same bits for a
 * value wherever it sits in a row), and the expert forward against plain loops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/moe_kernels.h"
#include "core/rng.h"
#include "testlib.h"

/* brute force: rank of i = #{j : s_j > s_i or (s_j == s_i and j < i)} */
static int brute_rank(const float *s, int n, int i) {
    int r = 0;
    for (int j = 0; j < n; j++) r += s[j] > s[i] || (s[j] == s[i] && j < i);
    return r;
}

static void test_topk(void) {
    rng_t r;
    rng_seed(&r, 7);
    int bad_sel = 0, bad_tie = 0, cases = 0, ties_seen = 0;
    for (int rep = 0; rep < 4000; rep++) {
        int n = 1 + (int)(rng_u64(&r) % 12), k = 1 + (int)(rng_u64(&r) % (uint64_t)n);
        float s[16];
        // few distinct values: most draws have ties, some at the boundary;
        // -0.0 and +0.0 are the same score
        for (int i = 0; i < n; i++) {
            int v = (int)(rng_u64(&r) % 4) - 1;
            s[i] = v == 0 && (rng_u64(&r) & 1) ? -0.0f : (float)v;
        }
        int sel[16];
        moe_topk(s, n, k, sel);
        for (int q = 0; q < k; q++) bad_sel += brute_rank(s, n, sel[q]) != q;
        // boundary tie: the expert ranked k (0-based) has the score of the one ranked k-1
        int tie = 0;
        for (int i = 0; i < n && k < n; i++)
            if (brute_rank(s, n, i) == k) tie = s[i] == s[sel[k - 1]];
        bad_tie += moe_topk_boundary_tie(s, n, k) != tie;
        ties_seen += tie;
        cases++;
    }
    CHECK(bad_sel == 0, "top-k: %d of %d selections differ from brute force", bad_sel, cases);
    CHECK(bad_tie == 0, "boundary tie: %d of %d differ from brute force", bad_tie, cases);
    CHECK(ties_seen > 100, "the draws exercise boundary ties (%d)", ties_seen);
    // the rule itself: all equal -> 0, 1, 2
    float z[5] = {0, 0, 0, 0, 0};
    int sel[3];
    moe_topk(z, 5, 3, sel);
    CHECK(sel[0] == 0 && sel[1] == 1 && sel[2] == 2, "all tied: %d %d %d", sel[0], sel[1], sel[2]);
    CHECK(moe_topk_boundary_tie(z, 5, 3) == 1, "all tied: a boundary tie");
    float w[4] = {1, 3, 3, 2};
    moe_topk(w, 4, 2, sel);
    CHECK(sel[0] == 1 && sel[1] == 2, "1 3 3 2, top-2: %d %d", sel[0], sel[1]);
    CHECK(moe_topk_boundary_tie(w, 4, 2) == 0, "1 3 3 2, top-2: no boundary tie");
    CHECK(moe_topk_boundary_tie(w, 4, 1) == 1, "1 3 3 2, top-1: a boundary tie");
    CHECK(moe_topk_boundary_tie(w, 4, 4) == 0, "k = n: nothing left out");
    // the macro on vector lanes agrees with the scalar rule
    typedef float v4f __attribute__((vector_size(16)));
    typedef int v4i __attribute__((vector_size(16)));
    v4f a = {1, 2, 2, 3}, b = {1, 2, 1, 3};
    v4i ia = {0, 3, 1, 2}, ib = {1, 2, 0, 2};
    v4i m = MOE_RANKS_BEFORE(a, ia, b, ib);
    CHECK(m[0] && !m[1] && m[2] && !m[3], "vector lanes: %d %d %d %d", m[0], m[1], m[2], m[3]);
}

static void test_act(void) {
    double worst = 0, worst_g = 0, worst_t = 0;
    moe_config c;
    memset(&c, 0, sizeof c);
    c.act = ACT_GPT_OSS;
    c.act_limit = 7.0f;
    for (int i = -400; i <= 400; i++) {
        double v = i / 40.0;
        double gelu = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        worst = fmax(worst, fabs(moe_act_scalar(ACT_GELU, (float)v) - gelu));
        double gnew = 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        worst_t = fmax(worst_t, fabs(moe_act_scalar(ACT_GELU_TANH, (float)v) - gnew) / fmax(1.0, fabs(gnew)));
        double g = fmin(v, 7.0), u = fmax(-7.0, fmin(7.0, -v / 2));
        double ref = (u + 1) * g / (1 + exp(-1.702 * g));
        worst_g = fmax(worst_g, fabs(moe_act_gated(&c, (float)v, (float)(-v / 2)) - ref) /
                                    fmax(1.0, fabs(ref)));
    }
    CHECK(worst < 2e-6, "exact-erf GELU within float rounding (%.3g)", worst);
    CHECK(worst_t < 4e-6, "tanh GELU (gelu_new) within float rounding (%.3g)", worst_t);
    // the two forms differ visibly (4.7e-4 at v = 2.7): the tests can tell them apart
    CHECK(fabs(moe_act_scalar(ACT_GELU_TANH, 2.7f) - moe_act_scalar(ACT_GELU, 2.7f)) > 4e-4,
          "gelu_new differs from the erf form");
    CHECK(worst_g < 2e-6, "gpt_oss clamped SwiGLU within float rounding (%.3g)", worst_g);
    CHECK(moe_act_scalar(ACT_RELU, -1.0f) == 0.0f && moe_act_scalar(ACT_RELU, 2.5f) == 2.5f, "relu");
}

/* moe_hidden_act's GELU and SiLU-GLU rows against the double formulas */
static void test_act_rows(void) {
    enum { NV = 9601 };
    static float H[NV], H3[NV], Z[NV], b[NV];
    moe_config c;
    memset(&c, 0, sizeof c);
    c.h = NV;
    moe_expert e;
    memset(&e, 0, sizeof e);
    e.fc1_b = e.fc3_b = Z; // zero biases
    double wa = 0, wt = 0, ws = 0;
    for (int i = 0; i < NV; i++) H[i] = (float)(-12.0 + 24.0 * i / (NV - 1));
    memcpy(b, H, sizeof H);
    c.act = ACT_GELU;
    moe_hidden_act(&e, &c, H, NULL, 1);
    for (int i = 0; i < NV; i++) {
        double v = b[i], g = 0.5 * v * erfc(-v / sqrt(2.0));
        wa = fmax(wa, fabs(H[i] - g));
        if (v < -1 && fabs(g) > 1e-20) wt = fmax(wt, fabs(H[i] - g) / fabs(g));
    }
    CHECK(wa < 3e-7, "GELU rows within 3e-7 of the double formula on [-12, 12] (%.3g)", wa);
    CHECK(wt < 2e-5, "GELU rows: the negative tail relatively close (%.3g)", wt);
    // a value's bits do not depend on its place in the row or the row's width
    float one[3] = {b[100], b[5000], b[9000]}, row[13];
    for (int w = 1; w <= 13; w++) {
        for (int q = 0; q < w; q++) row[q] = one[q % 3];
        c.h = w;
        moe_hidden_act(&e, &c, row, NULL, 1);
        int same = 1;
        for (int q = 0; q < w; q++) same &= row[q] == H[q % 3 == 0 ? 100 : q % 3 == 1 ? 5000 : 9000];
        CHECK(same, "GELU rows of width %d: the same bits as in the long row", w);
    }
    c.h = NV;
    c.act = ACT_SILU_GLU;
    for (int i = 0; i < NV; i++) H[i] = b[i], H3[i] = 1.0f - b[i] / 7;
    moe_hidden_act(&e, &c, H, H3, 1);
    for (int i = 0; i < NV; i++) {
        double a = b[i], u = (double)(1.0f - b[i] / 7), y = a / (1 + exp(-a)) * u;
        ws = fmax(ws, fabs(H[i] - y) / fmax(1.0, fabs(y)));
    }
    CHECK(ws < 1e-6, "SiLU-GLU rows within 1e-6 of the double formula (%.3g)", ws);
}

static void test_expert(void) {
    for (int act = ACT_RELU; act <= ACT_GELU_TANH; act++) {
        moe_config c;
        memset(&c, 0, sizeof c);
        c.n = 1, c.d = 5, c.h = 7, c.act = (moe_act)act, c.act_limit = 0.5f;
        size_t sz = moe_expert_size(&c);
        float *p = malloc(sz * sizeof(float));
        rng_t r;
        rng_seed(&r, 11 + (uint64_t)act);
        for (size_t q = 0; q < sz; q++) p[q] = (float)rng_normal(&r);
        moe_expert e;
        moe_expert_carve(&e, &c, p);
        enum { M = 9 };
        float X[M * 5], H[M * 7], H3[M * 7], Y[M * 5];
        for (int q = 0; q < M * 5; q++) X[q] = (float)rng_normal(&r);
        moe_expert_forward(&e, &c, X, M, H, H3, Y);
        double worst = 0;
        for (int b = 0; b < M; b++) {
            double hid[7];
            for (int u = 0; u < 7; u++) {
                double a = e.fc1_b[u], l = 0;
                for (int j = 0; j < 5; j++) a += (double)e.fc1_w[u * 5 + j] * X[b * 5 + j];
                if (moe_act_glu(c.act)) {
                    l = e.fc3_b[u];
                    for (int j = 0; j < 5; j++) l += (double)e.fc3_w[u * 5 + j] * X[b * 5 + j];
                }
                if (act == ACT_RELU) hid[u] = a > 0 ? a : 0;
                else if (act == ACT_GELU) hid[u] = 0.5 * a * (1 + erf(a / sqrt(2.0)));
                else if (act == ACT_GELU_TANH)
                    hid[u] = 0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
                else if (act == ACT_SILU_GLU) hid[u] = a / (1 + exp(-a)) * l;
                else {
                    double g = fmin(a, 0.5), uu = fmax(-0.5, fmin(0.5, l));
                    hid[u] = (uu + 1) * g / (1 + exp(-1.702 * g));
                }
            }
            for (int j = 0; j < 5; j++) {
                double y = e.fc2_b[j];
                for (int u = 0; u < 7; u++) y += (double)e.fc2_w[j * 7 + u] * hid[u];
                worst = fmax(worst, fabs(Y[b * 5 + j] - y) / fmax(1.0, fabs(y)));
            }
        }
        CHECK(worst < 1e-5, "expert forward, %s: within 1e-5 of the double loops (%.3g)",
              moe_act_name(c.act), worst);
        free(p);
    }
}

int main(void) {
    test_topk();
    test_act();
    test_act_rows();
    test_expert();
    return test_summary("test_kernels");
}
