/* test_explore_wide.c - the explorer's worker at real expert counts: an
 * OLMoE-like layer (n = 64, top-8 softmax, not renormalised) and a
 * DeepSeek-V3-like one (n = 256 in 8 groups, 4 kept, sigmoid scores with a
 * selection bias, renormalised, scaled, a shared expert), B a scrambled copy of
 * A (moe_scramble: group-preserving for the grouped router). The worker opens
 * both, publishes the cost matrices, both methods' orders (which undo the
 * scramble), a sampled landscape (its orders, every one a permutation of the
 * right set) and, per method, the rank among the sample, the percentile with
 * its 95 % interval and the estimated rank (rank 1, interval from 0: the
 * chosen order aligns B back onto A). And the cost and matching phases are
 * cancellable: with a progress listener whose flag is up, cost_matrix and
 * align_models stop with "cancelled"; with it down they report their phases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "explore/explore_worker.h"
#include "core/progress.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "testlib.h"

static void fill(float *x, size_t cnt, rng_t *r, double sc) {
    for (size_t i = 0; i < cnt; i++) x[i] = (float)(sc * rng_normal(r));
}

/* A random layer (no head) and B = A scrambled; order_out: the scramble */
static void wide_models(moe_model *A, moe_model *B, evalset *E, int deepseek, int *order_out) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.d = 8, c.h = 4, c.k = 8;
    c.router = ROUTER_TOPK, c.act = ACT_SILU_GLU;
    if (deepseek) {
        c.n = 256, c.s = 1, c.score = SCORE_SIGMOID, c.has_corr_bias = 1, c.renorm = RENORM_YES;
        c.renorm_eps = 1e-20f, c.scale = 2.5f, c.n_group = 8, c.topk_group = 4;
        c.group_score = GROUP_TOP2_SUM;
    } else {
        c.n = 64, c.renorm = RENORM_NO;
    }
    moe_alloc(A, &c);
    rng_t r;
    rng_seed(&r, deepseek ? 7 : 5);
    fill(A->mem, A->nparams, &r, 0.35);
    for (int i = 0; i < c.n * c.d; i++) A->gate_w[i] *= 4.0f; // distinct routing
    moe_clone(B, A);
    moe_scramble(B, deepseek ? 17 : 15, 0.0, order_out);
    memset(E, 0, sizeof *E);
    E->N = 24, E->d = c.d;
    E->inputs = ms_malloc((size_t)E->N * c.d * sizeof(float));
    fill(E->inputs, (size_t)E->N * c.d, &r, 1.0);
}

#define WAIT(g, v, cond) EXPLORE_WAIT(g, v, 600000, cond)

static int is_perm(const int *p, int n) {
    char seen[LS_MAX_N] = {0};
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) return 0;
        seen[p[i]] = 1;
    }
    return 1;
}

static int in_groups(const int *p, int n, int G) {
    int m = n / G;
    for (int a = 0; a < G; a++)
        for (int i = 1; i < m; i++)
            if (p[a * m + i] / m != p[a * m] / m) return 0;
    return 1;
}

static void one_layer(int deepseek) {
    const char *name = deepseek ? "deepseek_v3-like" : "olmoe-like";
    moe_model A, B;
    evalset E;
    int pi[LS_MAX_N], undo[LS_MAX_N];
    wide_models(&A, &B, &E, deepseek, pi);
    int n = A.cfg.n;
    for (int i = 0; i < n; i++) undo[pi[i]] = i;
    ms_err err;
    explore_worker *g = explore_start(&A, &B, &E, &err);
    CHECK(g != NULL, "%s: the worker opens n = %d (%s)", name, n, g ? "" : err.msg);
    if (g) {
        explore_snapshot v;
        memset(&v, 0, sizeof v);
        explore_request q;
        memset(&q, 0, sizeof q);
        q.order_stage = q.wm_stage = 1;
        q.center = 1;
        q.method = COST_GATE;
        q.T = 3;
        explore_submit(g, &q);
        WAIT(g, &v, !v.busy && v.have_landscape && v.have_current);
        CHECK(!v.busy && !v.failed && v.have_landscape && v.have_methods && v.cost != NULL,
              "%s: done (%s)", name, v.status);
        CHECK(v.front_phase[0] == 0, "%s: the front is idle (%s)", name, v.front_phase);
        for (int m = 0; m < 2; m++)
            CHECK(!memcmp(v.method_order[m], undo, sizeof(int) * (size_t)n), "%s: the %s order undoes the scramble",
                  name, m ? "expert" : "gate");
        double diag = 0;
        for (int i = 0; i < n; i++) diag += v.cost[i * n + undo[i]];
        CHECK(fabs(diag - v.cost_total) < 1e-9 * (1 + fabs(diag)) && !memcmp(v.cost_order, undo, sizeof(int) * (size_t)n),
              "%s: the cost matrix and its assignment", name);
        CHECK(!v.exhaustive && v.nsampled > 0 && v.ndone == v.nsampled && v.norders == v.nsampled &&
                  v.orders != NULL && v.norders_held == v.ndone,
              "%s: a sampled table with its orders (%ld of %ld)", name, v.ndone, v.nsampled);
        double want = deepseek ? (8 * lgamma(33.0) + lgamma(9.0)) / log(10.0) : lgamma(65.0) / log(10.0);
        CHECK(fabs(v.orders_in_set_log10 - want) < 1e-9 && v.groups == (deepseek ? 8 : 0),
              "%s: ranked among 10^%.4f orders (want 10^%.4f), groups %d", name, v.orders_in_set_log10, want, v.groups);
        int bad = 0, split = 0;
        for (long k = 0; k < v.ndone; k++) {
            int o[LS_MAX_N];
            explore_row_order(&v, &v.rows[k], o);
            bad += !is_perm(o, n);
            split += deepseek && !in_groups(o, n, 8);
        }
        CHECK(bad == 0 && split == 0, "%s: %d rows not permutations, %d splitting a group", name, bad, split);
        for (int m = 0; m < 2; m++) {
            CHECK(v.rank[m] == 1 && v.pct[m] == 0 && v.pct_lo[m] == 0 && v.pct_hi[m] > 0 && v.pct_hi[m] < 100 &&
                      v.rank_est[m] == 1,
                  "%s: method %d rank %d, percentile %g (%g..%g), estimate %g", name, m, v.rank[m], v.pct[m],
                  v.pct_lo[m], v.pct_hi[m], v.rank_est[m]);
        }
        CHECK(fabs(v.current.barrier) < 1e-6, "%s: the chosen order's barrier %g ~ 0", name, v.current.barrier);
        CHECK(strstr(v.status, "sampled") != NULL, "%s: the status names the sample (%s)", name, v.status);
        explore_snapshot_free(&v);
        explore_stop(g);
    }
    moe_free(&A);
    moe_free(&B);
    free(E.inputs);
}

typedef struct {
    int calls;
    char seen[4][64];
} heard;

static void listen_fn(void *ctx, const char *phase, double done, double total) {
    heard *h = ctx;
    if (phase[0] && h->calls < 4 && strcmp(h->seen[h->calls ? h->calls - 1 : 0], phase))
        snprintf(h->seen[h->calls++], sizeof h->seen[0], "%s", phase);
    (void)done, (void)total;
}

/* the listener hears the phases; its flag cancels them */
static void test_listener(void) {
    moe_model A, B;
    evalset E;
    int pi[LS_MAX_N];
    wide_models(&A, &B, &E, 0, pi);
    int n = A.cfg.n;
    double *C = ms_malloc((size_t)n * n * sizeof(double));
    atomic_int flag = 0;
    heard h;
    memset(&h, 0, sizeof h);
    progress_listen(listen_fn, &h, &flag);
    ms_err err;
    CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C, &err) == 0, "expert cost with a listener");
    align_opts o;
    align_opts_default(&o);
    moe_model Bp;
    align_result res;
    int rc = align_models(&A, &B, &o, &Bp, &res, &err);
    CHECK(rc == 0, "align with a listener");
    if (!rc) {
        moe_free(&Bp);
        align_result_free(&res);
    }
    int cost_seen = 0, wm_seen = 0;
    for (int i = 0; i < h.calls; i++) {
        cost_seen |= !strcmp(h.seen[i], "expert cost");
        wm_seen |= !strcmp(h.seen[i], "weight matching");
    }
    CHECK(cost_seen && wm_seen, "the listener heard the expert cost and weight matching phases");
    atomic_store(&flag, 1);
    CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C, &err) != 0 && strstr(err.msg, "cancelled"),
          "a raised flag cancels the expert cost");
    rc = align_models(&A, &B, &o, &Bp, &res, &err);
    CHECK(rc != 0 && strstr(err.msg, "cancelled"), "a raised flag cancels the weight matching");
    progress_listen(NULL, NULL, NULL);
    CHECK(cost_matrix(&A, &B, COST_EXPERT, 1, C, &err) == 0, "no listener: as before");
    free(C);
    moe_free(&A);
    moe_free(&B);
    free(E.inputs);
}

int main(void) {
    test_listener();
    one_layer(0);
    one_layer(1);
    return test_summary("test_explore_wide");
}
