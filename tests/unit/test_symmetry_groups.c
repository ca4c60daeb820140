/* test_symmetry_groups.c - each router's symmetry group: scrambles drawn from
 * it keep the function and align back (order = the inverse, total ~ 0, the
 * original parameters, the same outputs); a permutation that splits a group of
 * a group-limited router changes the function; the two-level assignment finds
 * the best group-preserving order (brute force over S_6) where a flat
 * assignment leaves the group; sigmoid routers are never centred nor
 * translated. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "model/evaluator.h"
#include "align/lap.h"
#include "model/model.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "testlib.h"

typedef struct {
    const char *name;
    int n, k, s, hs;
    moe_score score;
    moe_renorm renorm;
    float scale;
    int n_group, topk_group;
    moe_group_score gsc;
    int corr, shared_gated, out_bias;
    moe_act act;
} rv;

static const rv ROUTERS[] = {
    {"mixtral softmax top-2", 8, 2, 0, 0, SCORE_SOFTMAX, RENORM_YES, 1, 0, 0, 0, 0, 0, 0, ACT_SILU_GLU},
    {"qwen2 gated shared", 6, 2, 1, 9, SCORE_SOFTMAX, RENORM_NO, 1, 0, 0, 0, 0, 1, 0, ACT_SILU_GLU},
    {"deepseek_v2 groups", 8, 3, 1, 6, SCORE_SOFTMAX, RENORM_NO, 16, 4, 2, GROUP_MAX, 0, 0, 0, ACT_SILU_GLU},
    {"deepseek_v3 sigmoid groups", 8, 3, 1, 6, SCORE_SIGMOID, RENORM_YES, 2.5f, 4, 2, GROUP_TOP2_SUM, 1, 0, 0, ACT_SILU_GLU},
    {"sigmoid no groups", 6, 2, 0, 0, SCORE_SIGMOID, RENORM_YES, 1, 0, 0, 0, 1, 0, 0, ACT_SILU_GLU},
    {"switch top-1", 4, 1, 0, 0, SCORE_SOFTMAX, RENORM_NO, 1, 0, 0, 0, 0, 0, 0, ACT_RELU},
    {"jetmoe output bias", 6, 2, 0, 0, SCORE_SOFTMAX, RENORM_YES, 1, 0, 0, 0, 0, 0, 1, ACT_SILU_GLU},
    {"gpt_oss", 6, 2, 0, 0, SCORE_SOFTMAX, RENORM_YES, 1, 0, 0, 0, 0, 0, 0, ACT_GPT_OSS},
};
#define NROUTERS ((int)(sizeof ROUTERS / sizeof ROUTERS[0]))
#define D 10
#define H 7
#define NS 200

static void make(moe_model *m, const rv *V, uint64_t seed) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = V->n; c.d = D; c.h = H; c.k = V->k; c.s = V->s; c.hs = V->hs;
    c.router = ROUTER_TOPK; c.act = V->act;
    c.score = V->score; c.renorm = V->renorm; c.scale = V->scale;
    c.n_group = V->n_group; c.topk_group = V->topk_group; c.group_score = V->gsc;
    c.has_corr_bias = V->corr; c.shared_gated = V->shared_gated; c.has_out_bias = V->out_bias;
    c.has_gate_bias = c.has_expert_bias = 1;
    moe_alloc(m, &c);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < m->nparams; i++) m->mem[i] = (float)(0.5 * rng_normal(&r));
    for (size_t i = 0; i < (size_t)c.n * D; i++) m->gate_w[i] *= 3.0f;
    if (m->corr_b)
        for (int i = 0; i < c.n; i++) m->corr_b[i] = fabsf(m->corr_b[i]);
    m->layer = ms_strdup("moe");
}

static float *inputs(int N, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    float *X = ms_malloc((size_t)N * D * sizeof(float));
    for (size_t i = 0; i < (size_t)N * D; i++) X[i] = (float)rng_normal(&r);
    return X;
}

/* max |f_a(X) - f_b(X)| over NS samples, relative to max |f_a| */
static double out_diff(const moe_model *a, const moe_model *b, const float *X) {
    float *Za = ms_malloc((size_t)NS * D * sizeof(float)), *Zb = ms_malloc((size_t)NS * D * sizeof(float));
    moe_forward(a, X, NS, Za, NULL);
    moe_forward(b, X, NS, Zb, NULL);
    double mx = 0, sc = 1e-12;
    for (size_t i = 0; i < (size_t)NS * D; i++) {
        double t = fabs((double)Za[i] - Zb[i]);
        mx = t > mx ? t : mx;
        sc = fabs(Za[i]) > sc ? fabs(Za[i]) : sc;
    }
    free(Za);
    free(Zb);
    return mx / sc;
}

static double param_diff(const moe_model *a, const moe_model *b) {
    double mx = 0;
    for (size_t i = 0; i < a->nparams; i++) {
        double t = fabs((double)a->mem[i] - b->mem[i]);
        mx = t > mx ? t : mx;
    }
    return mx;
}

static void test_scramble_align(void) {
    for (int v = 0; v < NROUTERS; v++) {
        const rv *V = &ROUTERS[v];
        moe_model A, S;
        make(&A, V, 10 + v);
        moe_clone(&S, &A);
        int pi[16];
        moe_scramble(&S, 77 + v, 1, pi);
        float *X = inputs(NS, 5 + v);
        CHECK(out_diff(&A, &S, X) < 1e-4, "%s: the scramble keeps the function (%g)", V->name,
              out_diff(&A, &S, X));
        CHECK(moe_order_in_group(&A.cfg, pi), "%s: the scramble stays in the group", V->name);
        const char *tr = moe_meta_get(&S, "moescope.scramble.translate");
        CHECK(tr && !strcmp(tr, V->score == SCORE_SIGMOID ? "0" : "1"),
              "%s: translated only with softmax scores (%s)", V->name, tr ? tr : "none");
        for (int method = 0; method < 2; method++) {
            align_opts o;
            align_opts_default(&o);
            o.method = (cost_method)method;
            moe_model out;
            align_result res;
            ms_err err;
            int rc = align_models(&A, &S, &o, &out, &res, &err);
            CHECK(rc == 0, "%s: align: %s", V->name, rc ? err.msg : "");
            if (rc) continue;
            int inv = 1;
            for (int i = 0; i < V->n; i++) inv &= res.order[pi[i]] == i;
            CHECK(inv, "%s %s: the order found is the scramble's inverse", V->name,
                  cost_method_name(o.method));
            CHECK(res.cost_total < 1e-3, "%s %s: total %g ~ 0", V->name, cost_method_name(o.method),
                  res.cost_total);
            // translation aside (the gate rows keep it), the parameters come back
            double pd = V->score == SCORE_SIGMOID ? param_diff(&A, &out) : 0;
            CHECK(pd < 1e-5, "%s: aligned parameters equal the original (%g)", V->name, pd);
            if (V->score == SCORE_SOFTMAX) {
                // experts and every per-expert tensor after the gate rows equal A's
                size_t off = (size_t)(out.experts[0].fc1_w - out.mem);
                double mx = 0;
                for (size_t i = off; i < A.nparams; i++) {
                    double t = fabs((double)A.mem[i] - out.mem[i]);
                    mx = t > mx ? t : mx;
                }
                CHECK(mx < 1e-5, "%s: aligned experts equal the original (%g)", V->name, mx);
            }
            CHECK(out_diff(&A, &out, X) < 1e-4, "%s: aligned computes the same outputs", V->name);
            moe_free(&out);
            align_result_free(&res);
        }
        free(X);
        moe_free(&A);
        moe_free(&S);
    }
}

static void test_group_breaking(void) {
    for (int v = 0; v < NROUTERS; v++) {
        const rv *V = &ROUTERS[v];
        if (V->n_group <= 1) continue;
        moe_model A, P, Q;
        make(&A, V, 300 + v);
        moe_clone(&P, &A);
        moe_clone(&Q, &A);
        int m = V->n / V->n_group, pi[16], sigma[16];
        for (int i = 0; i < V->n; i++) pi[i] = sigma[i] = i;
        // swap expert 0 (group 0) and expert m (group 1): splits both groups
        pi[0] = m;
        pi[m] = 0;
        // swap the whole groups 0 and 1 and two experts inside group 0: in the group
        for (int i = 0; i < m; i++) {
            sigma[i] = m + i;
            sigma[m + i] = i;
        }
        int t = sigma[0];
        sigma[0] = sigma[1];
        sigma[1] = t;
        CHECK(!moe_order_in_group(&A.cfg, pi) && moe_order_in_group(&A.cfg, sigma),
              "%s: group membership test", V->name);
        moe_permute_experts(&P, pi);
        moe_permute_experts(&Q, sigma);
        float *X = inputs(NS, 900 + v);
        double dp = out_diff(&A, &P, X), dq = out_diff(&A, &Q, X);
        CHECK(dp > 1e-2, "%s: a permutation that splits a group changes the function (%g)",
              V->name, dp);
        CHECK(dq < 1e-5, "%s: a group-preserving permutation keeps it (%g)", V->name, dq);
        // and align refuses to be told the group-splitting order
        align_opts o;
        align_opts_default(&o);
        o.order = pi;
        moe_model out;
        align_result res;
        ms_err err;
        CHECK(align_models(&A, &A, &o, &out, &res, &err) != 0 && strstr(err.msg, "group"),
              "%s: a given order that splits a group is refused", V->name);
        free(X);
        moe_free(&A);
        moe_free(&P);
        moe_free(&Q);
    }
}

/* Is p (n) group-preserving for G groups (written here, independently)? */
static int in_wreath(const int *p, int n, int G) {
    int m = n / G;
    for (int a = 0; a < G; a++)
        for (int i = 1; i < m; i++)
            if (p[a * m + i] / m != p[a * m] / m) return 0;
    return 1;
}

static int next_perm(int *p, int n) {
    int i = n - 2;
    while (i >= 0 && p[i] > p[i + 1]) i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (p[j] < p[i]) j--;
    int t = p[i]; p[i] = p[j]; p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) { t = p[a]; p[a] = p[b]; p[b] = t; }
    return 1;
}

static void test_two_level(void) {
    const int n = 6, Gs[2] = {2, 3};
    rng_t r;
    rng_seed(&r, 4242);
    int flat_left = 0;
    for (int trial = 0; trial < 40; trial++) {
        int G = Gs[trial % 2];
        double C[36];
        for (int i = 0; i < 36; i++) C[i] = rng_uniform(&r);
        // brute force: the best order overall and the best group-preserving one
        int p[6] = {0, 1, 2, 3, 4, 5}, best_all[6], best_grp[6];
        double ta = INFINITY, tg = INFINITY;
        do {
            double t = 0;
            for (int i = 0; i < n; i++) t += C[i * n + p[i]];
            if (t < ta) { ta = t; memcpy(best_all, p, sizeof p); }
            if (in_wreath(p, n, G) && t < tg) { tg = t; memcpy(best_grp, p, sizeof p); }
        } while (next_perm(p, n));
        int order[6];
        double tot;
        ms_err err;
        CHECK(align_order_grouped(C, n, G, order, &tot, &err) == 0, "two-level solve");
        double t = 0;
        for (int i = 0; i < n; i++) t += C[i * n + order[i]];
        CHECK(in_wreath(order, n, G), "trial %d: the two-level order is group-preserving", trial);
        CHECK(fabs(t - tg) < 1e-12 && fabs(tot - tg) < 1e-12,
              "trial %d: the two-level total %g is the best group-preserving %g", trial, t, tg);
        flat_left += !in_wreath(best_all, n, G) && ta < tg - 1e-9;
    }
    // the flat assignment would have left the group: the two levels are needed
    CHECK(flat_left > 10, "the unconstrained optimum leaves the group in %d of 40 trials", flat_left);
}

/* The second-best order among the group-preserving ones (cost, diagnose's
 * margins) against brute force over the wreath product, n = 6 and 8. */
static void test_second_in_group(void) {
    rng_t r;
    rng_seed(&r, 977);
    for (int trial = 0; trial < 24; trial++) {
        int n = trial < 16 ? 6 : 8, G = trial < 16 ? (trial % 2 ? 3 : 2) : (trial % 2 ? 4 : 2);
        double C[64];
        for (int i = 0; i < n * n; i++) C[i] = rng_uniform(&r);
        int p[8], o1[8];
        for (int i = 0; i < n; i++) p[i] = i;
        double t1 = INFINITY, t2 = INFINITY;
        do { // the two smallest totals over distinct group-preserving orders
            if (!in_wreath(p, n, G)) continue;
            double t = 0;
            for (int i = 0; i < n; i++) t += C[i * n + p[i]];
            if (t < t1) { t2 = t1; t1 = t; memcpy(o1, p, sizeof p); }
            else if (t < t2) t2 = t;
        } while (next_perm(p, n));
        moe_config c;
        memset(&c, 0, sizeof c);
        c.n = n, c.k = 2, c.router = ROUTER_TOPK, c.n_group = G, c.topk_group = 1;
        c.group_score = GROUP_TOP2_SUM;
        int best[8], second[8];
        double tb, ts;
        ms_err err;
        CHECK(align_order(&c, C, best, &tb, &err) == 0, "grouped order");
        CHECK(align_second_best(&c, C, best, second, &ts, &err) == 0, "grouped second best: %s",
              err.msg);
        double t = 0;
        for (int i = 0; i < n; i++) t += C[i * n + second[i]];
        CHECK(in_wreath(second, n, G) && memcmp(second, best, (size_t)n * sizeof(int)) != 0,
              "trial %d: the second-best order is another group-preserving order", trial);
        CHECK(fabs(ts - t2) < 1e-12 && fabs(t - t2) < 1e-12,
              "trial %d (n %d, G %d): second best %g (its cells %g), brute force %g", trial, n, G,
              ts, t, t2);
    }
}

static void test_group_limit_inactive(void) {
    // ranked by maxima with k <= topk_group the limit never binds: S_n, any
    // permutation keeps the function
    rv V = ROUTERS[2];
    V.k = 2;
    moe_model A, P;
    make(&A, &V, 77);
    CHECK(moe_groups_active(&A.cfg) == 0, "v2 top-2 of 2 kept groups: limit inactive");
    moe_symmetry g;
    moe_symmetry_group(&A.cfg, &g);
    CHECK(g.groups == 0 && strstr(g.why, "never binds"), "named as S_n: %s", g.name);
    moe_clone(&P, &A);
    int pi[8] = {4, 1, 2, 3, 0, 5, 6, 7};
    moe_permute_experts(&P, pi);
    float *X = inputs(NS, 78);
    CHECK(out_diff(&A, &P, X) < 1e-5, "inactive limit: a group-splitting swap keeps the function");
    free(X);
    moe_free(&A);
    moe_free(&P);
}

static void test_group_names(void) {
    moe_symmetry g;
    moe_model A;
    make(&A, &ROUTERS[3], 1); // deepseek_v3
    moe_symmetry_group(&A.cfg, &g);
    CHECK(!g.translation && g.groups == 4 && g.group_size == 2 && strstr(g.name, "S_2 wr S_4") &&
              strstr(g.why, "no translation"),
          "deepseek_v3: %s / %s", g.name, g.why);
    CHECK(!moe_gate_centring_valid(&A.cfg), "sigmoid: centring not valid");
    // gate cost: centring requested, not applied
    double C1[64], C2[64];
    ms_err err;
    cost_matrix(&A, &A, COST_GATE, 1, C1, &err);
    cost_matrix(&A, &A, COST_GATE, 0, C2, &err);
    CHECK(!memcmp(C1, C2, sizeof C1), "sigmoid: the gate cost ignores centring");
    moe_free(&A);
    make(&A, &ROUTERS[0], 1);
    moe_symmetry_group(&A.cfg, &g);
    CHECK(g.translation && !g.groups && !g.top1 && !strcmp(g.name, "S_8 x translations"),
          "mixtral: %s", g.name);
    moe_free(&A);
    make(&A, &ROUTERS[5], 1);
    moe_symmetry_group(&A.cfg, &g);
    CHECK(g.top1 && strstr(g.why, "Top-1"), "switch: top-1 flagged");
    moe_free(&A);
    make(&A, &ROUTERS[1], 1);
    moe_symmetry_group(&A.cfg, &g);
    CHECK(strstr(g.why, "never permuted") != NULL, "qwen2: gated shared expert explained");
    moe_free(&A);
}

int main(void) {
    test_scramble_align();
    test_group_breaking();
    test_two_level();
    test_second_in_group();
    test_group_names();
    test_group_limit_inactive();
    return test_summary("test_symmetry_groups");
}
