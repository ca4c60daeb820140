/* test_align.c - the alignment engine on random models built with
 * moe_alloc: cost matrices against plain double-loop references, weight
 * matching against a plain S and a known hidden permutation, and the core
 * property: for B = scramble(A), align_models finds the inverse expert order
 * and every hidden permutation, the aligned B equals A parameter by parameter
 * (gate up to the translation), and aligning never changes B's function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "core/blas_threads.h"
#include "model/evaluator.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "testlib.h"
#include "align/weight_matching.h"

typedef struct {
    int n, d, h, k, s, C;
    moe_router router;
    moe_act act;
    int gate_bias, expert_bias;
} spec;

static void fill_expert(rng_t *r, moe_expert *e, const moe_config *c, int bias) {
    int h = c->h, d = c->d;
    double sw = 1.0 / sqrt((double)d), s2 = 1.0 / sqrt((double)h);
    for (size_t q = 0; q < (size_t)h * d; q++) e->fc1_w[q] = (float)(rng_normal(r) * sw);
    for (size_t q = 0; q < (size_t)d * h; q++) e->fc2_w[q] = (float)(rng_normal(r) * s2);
    for (int u = 0; u < h; u++) e->fc1_b[u] = bias ? (float)(0.1 * rng_normal(r)) : 0.0f;
    for (int j = 0; j < d; j++) e->fc2_b[j] = bias ? (float)(0.1 * rng_normal(r)) : 0.0f;
    if (c->act == ACT_SILU_GLU) {
        for (size_t q = 0; q < (size_t)h * d; q++) e->fc3_w[q] = (float)(rng_normal(r) * sw);
        for (int u = 0; u < h; u++) e->fc3_b[u] = bias ? (float)(0.1 * rng_normal(r)) : 0.0f;
    }
}

static void make_model(moe_model *m, const spec *sp, uint64_t seed) {
    moe_config c = {0};
    c.n = sp->n, c.d = sp->d, c.h = sp->h, c.k = sp->k, c.s = sp->s, c.C = sp->C;
    c.router = sp->router, c.act = sp->act, c.residual = 1;
    c.has_gate_bias = sp->gate_bias, c.has_expert_bias = sp->expert_bias;
    c.has_head = sp->C > 0, c.has_norm = sp->C > 0;
    moe_alloc(m, &c);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t q = 0; q < (size_t)c.n * c.d; q++) m->gate_w[q] = (float)rng_normal(&r);
    for (int i = 0; i < c.n; i++) m->gate_b[i] = sp->gate_bias ? (float)rng_normal(&r) : 0.0f;
    for (int i = 0; i < c.n; i++) fill_expert(&r, &m->experts[i], &c, sp->expert_bias);
    for (int j = 0; j < c.s; j++) fill_expert(&r, &m->shared[j], &c, sp->expert_bias);
    if (c.has_head) {
        for (int j = 0; j < c.d; j++) m->norm_w[j] = 1.0f + 0.1f * (float)rng_normal(&r);
        for (int j = 0; j < c.d; j++) m->norm_b[j] = 0.1f * (float)rng_normal(&r);
        for (size_t q = 0; q < (size_t)c.C * c.d; q++) m->head_w[q] = (float)rng_normal(&r);
        for (int j = 0; j < c.C; j++) m->head_b[j] = (float)rng_normal(&r);
    }
}

/* ---- plain references (double loops, no BLAS) ---- */

static void ref_gate_cost(const moe_model *A, const moe_model *B, int center, double *C) {
    int n = A->cfg.n, d = A->cfg.d;
    double *ma = calloc((size_t)d + 1, sizeof(double)), *mb = calloc((size_t)d + 1, sizeof(double));
    for (int i = 0; i < n && center; i++) {
        for (int k = 0; k < d; k++) {
            ma[k] += A->gate_w[i * d + k] / (double)n;
            mb[k] += B->gate_w[i * d + k] / (double)n;
        }
        ma[d] += A->gate_b[i] / (double)n;
        mb[d] += B->gate_b[i] / (double)n;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k <= d; k++) {
                double a = k < d ? A->gate_w[i * d + k] : A->gate_b[i];
                double b = k < d ? B->gate_w[j * d + k] : B->gate_b[j];
                double t = (a - ma[k]) - (b - mb[k]);
                s += t * t;
            }
            C[i * n + j] = sqrt(s);
        }
    free(ma);
    free(mb);
}

// At (h, D1) entry (u, p) of an expert, in double
static double at_entry(const moe_expert *e, const moe_config *c, int u, int p) {
    int d = c->d;
    if (p < d) return e->fc1_w[u * d + p];
    if (p == d) return e->fc1_b[u];
    if (p < 2 * d + 1) return e->fc3_w[u * d + (p - d - 1)];
    return e->fc3_b[u];
}

static void ref_grams(const moe_expert *e, const moe_config *c, double *G1, double *G2) {
    int d = c->d, h = c->h, D1 = c->act == ACT_SILU_GLU ? 2 * d + 2 : d + 1;
    for (int p = 0; p < D1; p++)
        for (int q = 0; q < D1; q++) {
            double s = 0;
            for (int u = 0; u < h; u++) s += at_entry(e, c, u, p) * at_entry(e, c, u, q);
            G1[p * D1 + q] = s;
        }
    for (int a = 0; a < d; a++)
        for (int b = 0; b < d; b++) {
            double s = (double)e->fc2_b[a] * e->fc2_b[b];
            for (int u = 0; u < h; u++) s += (double)e->fc2_w[a * h + u] * e->fc2_w[b * h + u];
            G2[a * d + b] = s;
        }
}

static void ref_expert_cost(const moe_expert *ea, const moe_expert *eb, int n,
                            const moe_config *c, double *C) {
    int d = c->d, D1 = c->act == ACT_SILU_GLU ? 2 * d + 2 : d + 1;
    double *a1 = malloc(sizeof(double) * D1 * D1), *b1 = malloc(sizeof(double) * D1 * D1);
    double *a2 = malloc(sizeof(double) * d * d), *b2 = malloc(sizeof(double) * d * d);
    for (int i = 0; i < n; i++) {
        ref_grams(&ea[i], c, a1, a2);
        for (int j = 0; j < n; j++) {
            ref_grams(&eb[j], c, b1, b2);
            double s = 0;
            for (int q = 0; q < D1 * D1; q++) s += (a1[q] - b1[q]) * (a1[q] - b1[q]);
            for (int q = 0; q < d * d; q++) s += (a2[q] - b2[q]) * (a2[q] - b2[q]);
            C[i * n + j] = sqrt(s);
        }
    }
    free(a1), free(b1), free(a2), free(b2);
}

static double max_rel_diff(const double *x, const double *y, int count) {
    double m = 0, scale = 0;
    for (int q = 0; q < count; q++) scale = fmax(scale, fabs(y[q]));
    for (int q = 0; q < count; q++) m = fmax(m, fabs(x[q] - y[q]));
    return m / (scale > 0 ? scale : 1);
}

static const spec SPECS[] = {
    // n  d   h  k  s  C  router       act           gate_bias expert_bias
    {4, 8, 6, 2, 0, 3, ROUTER_DENSE, ACT_RELU, 1, 1},
    {4, 8, 6, 2, 0, 0, ROUTER_DENSE, ACT_RELU, 0, 0},
    {5, 7, 9, 2, 0, 3, ROUTER_TOPK, ACT_GELU, 1, 1},
    {4, 6, 5, 2, 2, 3, ROUTER_DENSE, ACT_RELU, 1, 1},
    {4, 6, 7, 3, 1, 4, ROUTER_TOPK, ACT_SILU_GLU, 1, 1},
    {3, 5, 4, 2, 0, 0, ROUTER_DENSE, ACT_SILU_GLU, 0, 0},
    {8, 12, 16, 2, 2, 5, ROUTER_TOPK, ACT_RELU, 1, 1},
};
#define NSPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

static void test_cost_reference(void) {
    for (int t = 0; t < NSPECS; t++) {
        const spec *sp = &SPECS[t];
        moe_model A, B;
        make_model(&A, sp, 100 + t);
        make_model(&B, sp, 200 + t);
        int n = sp->n;
        double *C = malloc(sizeof(double) * n * n), *R = malloc(sizeof(double) * n * n);
        ms_err e;
        for (int center = 0; center < 2; center++) {
            CHECK(cost_matrix(&A, &B, COST_GATE, center, C, &e) == 0, "gate cost spec %d", t);
            ref_gate_cost(&A, &B, center, R);
            CHECK(max_rel_diff(C, R, n * n) < 1e-9, "gate cost spec %d center %d: %g", t, center,
                  max_rel_diff(C, R, n * n));
        }
        CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C, &e) == 0, "expert cost spec %d", t);
        ref_expert_cost(A.experts, B.experts, n, &A.cfg, R);
        CHECK(max_rel_diff(C, R, n * n) < 1e-5, "expert cost spec %d: %g", t,
              max_rel_diff(C, R, n * n));
        // an expert against itself costs (about) nothing
        CHECK(cost_matrix(&A, &A, COST_EXPERT, 1, C, &e) == 0, "self cost");
        double diag = 0, off = INFINITY;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i == j) diag = fmax(diag, C[i * n + j]);
                else off = fmin(off, C[i * n + j]);
        CHECK(diag < 1e-4 * off, "self expert cost diagonal %g vs off-diagonal %g", diag, off);
        // against itself each expert's terms are formed once: the numbers of a copy, bit for bit
        moe_model A2;
        moe_clone(&A2, &A);
        double *C2 = malloc(sizeof(double) * n * n);
        CHECK(cost_matrix(&A, &A2, COST_EXPERT, 1, C2, &e) == 0 && !memcmp(C, C2, sizeof(double) * n * n),
              "self expert cost spec %d: the same numbers as against a copy", t);
        free(C2);
        moe_free(&A2);
        if (sp->s > 0) {
            int s = sp->s;
            CHECK(cost_matrix_shared(&A, &B, C, &e) == 0, "shared cost");
            ref_expert_cost(A.shared, B.shared, s, &A.cfg, R);
            CHECK(max_rel_diff(C, R, s * s) < 1e-5, "shared cost spec %d: %g", t,
                  max_rel_diff(C, R, s * s));
        }
        free(C), free(R);
        moe_free(&A), moe_free(&B);
    }
}

/* The centred gate cost ignores a gate translation; the uncentred one does not. */
static void test_gate_translation(void) {
    spec sp = SPECS[0];
    moe_model A, B, Bt;
    make_model(&A, &sp, 7);
    make_model(&B, &sp, 8);
    moe_clone(&Bt, &B);
    float cW[8];
    for (int j = 0; j < sp.d; j++) cW[j] = 3.0f * (float)(j - 3);
    moe_translate_gate(&Bt, cW, -2.5f);
    int n = sp.n;
    double C1[64], C2[64];
    ms_err e;
    cost_matrix(&A, &B, COST_GATE, 1, C1, &e);
    cost_matrix(&A, &Bt, COST_GATE, 1, C2, &e);
    CHECK(max_rel_diff(C2, C1, n * n) < 1e-5, "centred gate cost moved under translation: %g",
          max_rel_diff(C2, C1, n * n));
    cost_matrix(&A, &B, COST_GATE, 0, C1, &e);
    cost_matrix(&A, &Bt, COST_GATE, 0, C2, &e);
    CHECK(max_rel_diff(C2, C1, n * n) > 0.1, "uncentred gate cost should see the translation");
    moe_free(&A), moe_free(&B), moe_free(&Bt);
}

static void test_wm_similarity(void) {
    for (int t = 0; t < NSPECS; t++) {
        const spec *sp = &SPECS[t];
        moe_model A, B;
        make_model(&A, sp, 300 + t);
        make_model(&B, sp, 400 + t);
        const moe_config *c = &A.cfg;
        int h = c->h, d = c->d;
        double *S = malloc(sizeof(double) * h * h);
        const moe_expert *a = &A.experts[1], *b = &B.experts[0];
        wm_similarity(a, b, c, S);
        double worst = 0;
        for (int u = 0; u < h; u++)
            for (int v = 0; v < h; v++) {
                double s = (double)a->fc1_b[u] * b->fc1_b[v];
                for (int k = 0; k < d; k++) s += (double)a->fc1_w[u * d + k] * b->fc1_w[v * d + k];
                for (int k = 0; k < d; k++) s += (double)a->fc2_w[k * h + u] * b->fc2_w[k * h + v];
                if (c->act == ACT_SILU_GLU) {
                    s += (double)a->fc3_b[u] * b->fc3_b[v];
                    for (int k = 0; k < d; k++)
                        s += (double)a->fc3_w[u * d + k] * b->fc3_w[v * d + k];
                }
                worst = fmax(worst, fabs(S[u * h + v] - s));
            }
        CHECK(worst < 1e-5, "wm_similarity spec %d off by %g", t, worst);
        free(S);
        moe_free(&A), moe_free(&B);
    }
}

/* b = a with a known hidden permutation Q; wm_match must undo it. */
static void test_wm_recovers_permutation(void) {
    spec sp = {4, 10, 40, 2, 0, 0, ROUTER_DENSE, ACT_SILU_GLU, 1, 1};
    moe_model A, B;
    make_model(&A, &sp, 11);
    moe_clone(&B, &A);
    const moe_config *c = &A.cfg;
    int h = c->h;
    int *Q = malloc(sizeof(int) * h), *P = malloc(sizeof(int) * h);
    rng_t r;
    rng_seed(&r, 5);
    rng_permutation(&r, Q, h);
    moe_expert_permute_hidden(&B.experts[2], c, Q); // unit u of b = unit Q[u] of a
    ms_err e;
    double score;
    CHECK(wm_match(&A.experts[2], &B.experts[2], c, P, &score, &e) == 0, "wm_match: %s", e.msg);
    int ok = 1;
    for (int u = 0; u < h; u++) ok &= Q[P[u]] == u;
    CHECK(ok, "wm_match did not invert the hidden permutation");
    // the score is sum_u S[u][P[u]], here the squared norm of the expert
    double norm = 0;
    const moe_expert *x = &A.experts[2];
    for (int q = 0; q < h * c->d; q++)
        norm += (double)x->fc1_w[q] * x->fc1_w[q] + (double)x->fc2_w[q] * x->fc2_w[q] +
                (double)x->fc3_w[q] * x->fc3_w[q];
    for (int u = 0; u < h; u++)
        norm += (double)x->fc1_b[u] * x->fc1_b[u] + (double)x->fc3_b[u] * x->fc3_b[u];
    CHECK_CLOSE(score, norm, 1e-5, "wm score");
    free(Q), free(P);
    moe_free(&A), moe_free(&B);
}

static int is_inverse(const int *order, const int *sigma, int n) {
    for (int i = 0; i < n; i++)
        if (sigma[order[i]] != i) return 0;
    return 1;
}

static int expert_equal(const moe_expert *x, const moe_expert *y, const moe_config *c) {
    size_t hd = (size_t)c->h * c->d;
    int eq = !memcmp(x->fc1_w, y->fc1_w, hd * 4) && !memcmp(x->fc1_b, y->fc1_b, c->h * 4u) &&
             !memcmp(x->fc2_w, y->fc2_w, hd * 4) && !memcmp(x->fc2_b, y->fc2_b, c->d * 4u);
    if (c->act == ACT_SILU_GLU)
        eq = eq && !memcmp(x->fc3_w, y->fc3_w, hd * 4) && !memcmp(x->fc3_b, y->fc3_b, c->h * 4u);
    return eq;
}

/* max |forward(x) - forward(y)| on random inputs */
static double forward_diff(const moe_model *x, const moe_model *y, uint64_t seed) {
    int N = 64, d = x->cfg.d, n = x->cfg.n;
    float *X = malloc(sizeof(float) * N * d), *Z1 = malloc(sizeof(float) * N * d),
          *Z2 = malloc(sizeof(float) * N * d), *G = malloc(sizeof(float) * N * n);
    rng_t r;
    rng_seed(&r, seed);
    for (int q = 0; q < N * d; q++) X[q] = (float)rng_normal(&r);
    moe_forward(x, X, N, Z1, G);
    moe_forward(y, X, N, Z2, G);
    double m = 0;
    for (int q = 0; q < N * d; q++) m = fmax(m, fabs((double)Z1[q] - Z2[q]));
    free(X), free(Z1), free(Z2), free(G);
    return m;
}

/* The core property, for every spec, with and without translation, both methods. */
static void test_recovery(void) {
    for (int t = 0; t < NSPECS; t++) {
        const spec *sp = &SPECS[t];
        for (int translate = 0; translate < 2; translate++) {
            moe_model A, B;
            make_model(&A, sp, 500 + t);
            moe_clone(&B, &A);
            int n = sp->n, h = sp->h, d = sp->d;
            int sigma[16];
            moe_scramble(&B, 900 + t * 2 + translate, translate, sigma);
            for (int m = 0; m < 2; m++) {
                align_opts o;
                align_opts_default(&o);
                o.method = (cost_method)m;
                moe_model out;
                align_result res;
                ms_err e;
                int rc = align_models(&A, &B, &o, &out, &res, &e);
                CHECK(rc == 0, "align spec %d: %s", t, e.msg);
                if (rc) continue;
                CHECK(is_inverse(res.order, sigma, n), "spec %d translate %d method %s: order "
                      "is not the inverse of the scramble", t, translate, cost_method_name(o.method));
                int same = 1;
                for (int i = 0; i < n; i++) same &= expert_equal(&A.experts[i], &out.experts[i], &A.cfg);
                for (int j = 0; j < sp->s; j++) same &= expert_equal(&A.shared[j], &out.shared[j], &A.cfg);
                CHECK(same, "spec %d translate %d method %s: aligned experts differ from A", t,
                      translate, cost_method_name(o.method));
                // gate: equal, or (translated) a common shift of every row
                double worst = 0;
                for (int i = 0; i < n; i++) {
                    for (int k = 0; k < d; k++) {
                        double sh0 = (double)out.gate_w[k] - A.gate_w[k];
                        double shi = (double)out.gate_w[i * d + k] - A.gate_w[i * d + k];
                        worst = fmax(worst, translate ? fabs(shi - sh0) : fabs(shi));
                    }
                    double b0 = (double)out.gate_b[0] - A.gate_b[0];
                    double bi = (double)out.gate_b[i] - A.gate_b[i];
                    worst = fmax(worst, translate ? fabs(bi - b0) : fabs(bi));
                }
                CHECK(worst < 1e-5, "spec %d translate %d: gate rows off by %g", t, translate, worst);
                // hidden permutations compose back: every P is a permutation
                int perm_ok = 1;
                for (int i = 0; i < n; i++) {
                    char seen[64] = {0};
                    for (int u = 0; u < h; u++) {
                        int v = res.hidden_perm[i * h + u];
                        if (v < 0 || v >= h || seen[v]) perm_ok = 0;
                        else seen[v] = 1;
                    }
                }
                CHECK(perm_ok, "hidden_perm is not a permutation");
                double fd = forward_diff(&out, &B, 77);
                CHECK(fd < 1e-4, "spec %d: aligned B computes another function (%g)", t, fd);
                CHECK(res.cost_total >= 0, "cost total");
                moe_free(&out);
                align_result_free(&res);
            }
            moe_free(&A), moe_free(&B);
        }
    }
}

/* Two unrelated models: alignment keeps B's function whatever the stages. */
static void test_function_preserved(void) {
    for (int t = 0; t < NSPECS; t++) {
        const spec *sp = &SPECS[t];
        moe_model A, B;
        make_model(&A, sp, 600 + t);
        make_model(&B, sp, 700 + t);
        for (int stages = 0; stages < 4; stages++) {
            align_opts o;
            align_opts_default(&o);
            o.order_stage = stages & 1;
            o.wm_stage = (stages >> 1) & 1;
            o.method = t % 2 ? COST_GATE : COST_EXPERT;
            moe_model out;
            align_result res;
            ms_err e;
            if (align_models(&A, &B, &o, &out, &res, &e)) {
                CHECK(0, "align: %s", e.msg);
                continue;
            }
            double fd = forward_diff(&out, &B, 78 + stages);
            CHECK(fd < 1e-4, "spec %d stages %d: function changed by %g", t, stages, fd);
            if (!o.order_stage) {
                int id = 1;
                for (int i = 0; i < sp->n; i++) id &= res.order[i] == i;
                CHECK(id && res.cost_total == 0, "order stage off must give the identity");
            }
            if (!o.wm_stage) {
                int id = 1;
                for (int i = 0; i < sp->n; i++)
                    for (int u = 0; u < sp->h; u++) id &= res.hidden_perm[i * sp->h + u] == u;
                CHECK(id, "wm off must give identity hidden permutations");
            }
            const char *meth = moe_meta_get(&out, "moescope.align.method");
            CHECK(meth && !strcmp(meth, o.order_stage ? cost_method_name(o.method) : "identity"),
                  "moescope.align.method = %s", meth ? meth : "(none)");
            CHECK(moe_meta_get(&out, "moescope.align.order") != NULL, "align.order metadata");
            moe_free(&out);
            align_result_free(&res);
        }
        moe_free(&A), moe_free(&B);
    }
}

/* A given order is used as is; the aligned slot i holds B's expert order[i]. */
static void test_given_order(void) {
    spec sp = SPECS[3];
    moe_model A, B;
    make_model(&A, &sp, 1);
    make_model(&B, &sp, 2);
    int order[4] = {2, 0, 3, 1};
    align_opts o;
    align_opts_default(&o);
    o.order = order;
    o.wm_stage = 0;
    moe_model out;
    align_result res;
    ms_err e;
    CHECK(align_models(&A, &B, &o, &out, &res, &e) == 0, "given order: %s", e.msg);
    CHECK(!memcmp(res.order, order, sizeof order), "given order not used");
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= expert_equal(&out.experts[i], &B.experts[order[i]], &A.cfg);
    for (int i = 0; i < 4; i++)
        ok &= !memcmp(out.gate_w + i * sp.d, B.gate_w + order[i] * sp.d, sizeof(float) * sp.d) &&
              out.gate_b[i] == B.gate_b[order[i]];
    CHECK(ok, "slot i must hold B's expert order[i] and its gate row");
    moe_free(&out);
    align_result_free(&res);
    int bad[4] = {0, 0, 1, 2};
    o.order = bad;
    CHECK(align_models(&A, &B, &o, &out, &res, &e) == -1 && strstr(e.msg, "permutation"),
          "a non-permutation order must be rejected");
    moe_free(&A), moe_free(&B);
}

/* Weight matching maximises sum_i <A_i, B'_i> (fc1, b1, fc2): never below no-wm. */
static void test_wm_improves(void) {
    spec sp = SPECS[6];
    moe_model A, B;
    make_model(&A, &sp, 31);
    make_model(&B, &sp, 32);
    double dots[2];
    for (int wm = 0; wm < 2; wm++) {
        align_opts o;
        align_opts_default(&o);
        o.wm_stage = wm;
        moe_model out;
        align_result res;
        ms_err e;
        align_models(&A, &B, &o, &out, &res, &e);
        double s = 0;
        for (int i = 0; i < sp.n; i++)
            for (int q = 0; q < sp.h * sp.d; q++)
                s += (double)A.experts[i].fc1_w[q] * out.experts[i].fc1_w[q] +
                     (double)A.experts[i].fc2_w[q] * out.experts[i].fc2_w[q];
        for (int i = 0; i < sp.n; i++)
            for (int u = 0; u < sp.h; u++)
                s += (double)A.experts[i].fc1_b[u] * out.experts[i].fc1_b[u];
        dots[wm] = s;
        moe_free(&out);
        align_result_free(&res);
    }
    CHECK(dots[1] > dots[0], "weight matching should raise the similarity (%g vs %g)", dots[1],
          dots[0]);
    moe_free(&A), moe_free(&B);
}

static void test_incompatible(void) {
    spec s1 = SPECS[0], s2 = SPECS[0];
    s2.h = 7;
    moe_model A, B, out;
    align_result res;
    make_model(&A, &s1, 1);
    make_model(&B, &s2, 2);
    align_opts o;
    align_opts_default(&o);
    ms_err e;
    double C[64];
    CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C, &e) == -1, "cost on different h must fail");
    CHECK(align_models(&A, &B, &o, &out, &res, &e) == -1 && strstr(e.msg, "h"),
          "align on different h must fail: %s", e.msg);
    CHECK(out.mem == NULL && res.order == NULL, "failed align must leave nothing allocated");
    moe_free(&B);
    s2 = s1;
    s2.router = ROUTER_TOPK;
    make_model(&B, &s2, 2);
    CHECK(align_models(&A, &B, &o, &out, &res, &e) == -1 && strstr(e.msg, "router"),
          "align with different routers must fail: %s", e.msg);
    moe_free(&A), moe_free(&B);
    cost_method m;
    CHECK(cost_method_parse("gate", &m) == 0 && m == COST_GATE, "parse gate");
    CHECK(cost_method_parse("expert", &m) == 0 && m == COST_EXPERT, "parse expert");
    CHECK(cost_method_parse("gates", &m) == -1, "parse rejects 'gates'");
    CHECK(!strcmp(cost_method_name(COST_GATE), "gate"), "name");
}

/* The expert cost and weight matching's S on a layer large enough that their
 * products run on threads of their own (blas_par_for): the same bits at 1 and 2
 * BLAS threads, also with kernels whose products round by how they are split
 * (the second run's Haswell). */
static void test_threads_same_bits(void) {
    spec sp = {4, 256, 1024, 2, 0, 0, ROUTER_TOPK, ACT_SILU_GLU, 1, 1}; // S in 2 panels
    moe_model A, B;
    make_model(&A, &sp, 41);
    make_model(&B, &sp, 42);
    int n = sp.n, h = sp.h;
    double *C[2], *S[2];
    ms_err e;
    for (int k = 0; k < 2; k++) {
        blas_threads_default(k + 1);
        C[k] = malloc(sizeof(double) * n * n);
        S[k] = malloc(sizeof(double) * h * h);
        CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C[k], &e) == 0, "expert cost at %d threads: %s", k + 1, e.msg);
        wm_similarity(&A.experts[1], &B.experts[3], &A.cfg, S[k]);
    }
    blas_threads_default(1);
    CHECK(!memcmp(C[0], C[1], sizeof(double) * n * n), "expert cost: other bits at 2 threads than at 1");
    CHECK(!memcmp(S[0], S[1], sizeof(double) * h * h), "wm similarity: other bits at 2 threads than at 1");
    for (int k = 0; k < 2; k++) free(C[k]), free(S[k]);
    moe_free(&A), moe_free(&B);
}

int main(void) {
    test_threads_same_bits();
    test_cost_reference();
    test_gate_translation();
    test_wm_similarity();
    test_wm_recovers_permutation();
    test_recovery();
    test_function_preserved();
    test_given_order();
    test_wm_improves();
    test_incompatible();
    return test_summary("test_align");
}
