/* test_diagnose.c - constructed checkpoints that each break one condition of
 * the manual's formulas (assets/moescope.1) are flagged with the right finding;
 * healthy ones flag nothing. The numbers themselves are checked against numpy
 * in tests/oracle/test_diagnose.py. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "model/evaluator.h"
#include "core/progress.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "testlib.h"

static void fill(float *x, size_t n, double scale, rng_t *r) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * rng_normal(r));
}

/* A random layer with a 3-class head (no LayerNorm). */
static void make_model(moe_model *m, int n, int d, int h, moe_router router, int k, moe_act act,
                       uint64_t seed) {
    moe_config c = {.n = n, .d = d, .h = h, .k = k, .s = 0, .C = 3, .router = router, .act = act,
                    .residual = 1, .has_gate_bias = 1, .has_expert_bias = 1, .has_norm = 0,
                    .has_head = 1};
    moe_alloc(m, &c);
    rng_t r;
    rng_seed(&r, seed);
    fill(m->gate_w, (size_t)n * d, 2.0 / sqrt(d), &r);
    fill(m->gate_b, (size_t)n, 0.3, &r);
    for (int i = 0; i < n; i++) {
        moe_expert *e = &m->experts[i];
        fill(e->fc1_w, (size_t)h * d, 1 / sqrt(d), &r);
        fill(e->fc1_b, (size_t)h, 0.1, &r);
        fill(e->fc2_w, (size_t)d * h, 1 / sqrt(h), &r);
        fill(e->fc2_b, (size_t)d, 0.1, &r);
        if (act == ACT_SILU_GLU) {
            fill(e->fc3_w, (size_t)h * d, 1 / sqrt(d), &r);
            fill(e->fc3_b, (size_t)h, 0.1, &r);
        }
    }
    fill(m->head_w, (size_t)3 * d, 1 / sqrt(d), &r);
    fill(m->head_b, 3, 0.1, &r);
}

static void make_eval(evalset *e, int N, int d, uint64_t seed) {
    memset(e, 0, sizeof *e);
    rng_t r;
    rng_seed(&r, seed);
    e->N = N, e->d = d, e->C = 3;
    e->inputs = ms_malloc((size_t)N * d * sizeof(float));
    fill(e->inputs, (size_t)N * d, 1.0, &r);
    e->labels = ms_malloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) e->labels[i] = (int32_t)rng_below(&r, 3);
}

/* Labels = A's own argmax: A is accurate, and a wrong expert order costs loss. */
static void label_by_model(evalset *E, const moe_model *m) {
    int N = E->N, d = E->d;
    float *Z = ms_malloc((size_t)N * d * sizeof(float));
    float *lg = ms_malloc((size_t)N * 3 * sizeof(float));
    moe_forward(m, E->inputs, N, Z, NULL);
    moe_head(m, Z, N, lg);
    for (int i = 0; i < N; i++) {
        int a = 0;
        for (int q = 1; q < 3; q++)
            if (lg[i * 3 + q] > lg[i * 3 + a]) a = q;
        E->labels[i] = a;
    }
    free(Z);
    free(lg);
}

static void copy_expert(moe_model *m, int dst, int src) {
    const moe_config *c = &m->cfg;
    size_t hd = (size_t)c->h * c->d;
    moe_expert *a = &m->experts[dst], *b = &m->experts[src];
    memcpy(a->fc1_w, b->fc1_w, hd * sizeof(float));
    memcpy(a->fc1_b, b->fc1_b, (size_t)c->h * sizeof(float));
    memcpy(a->fc2_w, b->fc2_w, hd * sizeof(float));
    memcpy(a->fc2_b, b->fc2_b, (size_t)c->d * sizeof(float));
}

/* Run diag_checkpoint; returns the number of flags. */
static int diag_one(const moe_model *m, const evalset *E, dg_list *l, diag_ckpt *s) {
    ms_err err = {{0}};
    memset(l, 0, sizeof *l);
    int rc = diag_checkpoint(m, E, "B", s, l, &err);
    CHECK(rc == 0, "diag_checkpoint: %s", err.msg);
    return dg_count(l, DG_WARN);
}

static int flagged(const dg_list *l, const char *code) {
    const dg_finding *f = dg_find(l, code, NULL);
    return f && f->severity >= DG_WARN;
}

static void print_flags(const dg_list *l) {
    for (int i = 0; i < l->n; i++)
        if (l->items[i].severity >= DG_WARN) printf("    flag: %s\n", l->items[i].text);
}

static void test_healthy(void) {
    const moe_router routers[2] = {ROUTER_TOPK, ROUTER_DENSE};
    const moe_act acts[3] = {ACT_RELU, ACT_GELU, ACT_SILU_GLU};
    for (int ri = 0; ri < 2; ri++)
        for (int ai = 0; ai < 3; ai++) {
            moe_model m;
            evalset E;
            make_model(&m, 4, 8, 6, routers[ri], 2, acts[ai], 100 + ri * 10 + ai);
            make_eval(&E, 300, 8, 7);
            dg_list l;
            diag_ckpt s;
            int nf = diag_one(&m, &E, &l, &s);
            CHECK(nf == 0, "healthy %s/%s checkpoint flagged %d findings",
                  moe_router_name(routers[ri]), moe_act_name(acts[ai]), nf);
            if (nf) print_flags(&l);
            // every condition is reported with its number
            CHECK(dg_find(&l, "experts_distinct", "B") && dg_find(&l, "outputs_distinct", "B") &&
                      dg_find(&l, "gate_rows_distinct", "B") &&
                      dg_find(&l, "gate_diffs_distinct", "B") && dg_find(&l, "routing", "B"),
                  "healthy: a condition is missing from the report");
            if (routers[ri] == ROUTER_TOPK)
                CHECK(dg_find(&l, "topk_rank", "B") && s.rank == 3, "top-k rank %d", s.rank);
            diag_ckpt_free(&s);
            dg_list_free(&l);
            evalset_free(&E);
            moe_free(&m);
        }
}

static void test_identical_experts(void) {
    moe_model m;
    evalset E;
    make_model(&m, 4, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 1);
    make_eval(&E, 200, 8, 2);
    copy_expert(&m, 3, 1);
    // a hidden permutation does not hide the copy
    int P[6] = {5, 3, 1, 0, 2, 4};
    moe_expert_permute_hidden(&m.experts[3], &m.cfg, P);
    dg_list l;
    diag_ckpt s;
    int nf = diag_one(&m, &E, &l, &s);
    CHECK(flagged(&l, "experts_distinct"), "identical experts not flagged");
    CHECK(flagged(&l, "outputs_distinct"), "identical outputs not flagged");
    CHECK(s.expert_pair[0] == 1 && s.expert_pair[1] == 3 && s.expert_min == 0,
          "pair %d %d at %g", s.expert_pair[0], s.expert_pair[1], s.expert_min);
    const dg_finding *f = dg_find(&l, "experts_distinct", "B");
    CHECK(f && strstr(f->text, "experts 1 and 3 of B are nearly identical") &&
              strstr(f->text, "cannot be identified"),
          "text: %s", f ? f->text : "(none)");
    CHECK(nf == 2, "identical experts: %d flags (want exactly the two expert ones)", nf);
    if (nf != 2) print_flags(&l);
    diag_ckpt_free(&s);
    dg_list_free(&l);
    evalset_free(&E);
    moe_free(&m);

    // wide experts (h > DG_WM_MAX_H) use Gram distances; the copy is still found
    make_model(&m, 3, 4, DG_WM_MAX_H + 8, ROUTER_DENSE, 2, ACT_RELU, 12);
    copy_expert(&m, 2, 0);
    nf = diag_one(&m, NULL, &l, &s);
    CHECK(s.expert_gram && flagged(&l, "experts_distinct") && s.expert_pair[0] == 0 &&
              s.expert_pair[1] == 2,
          "wide experts: gram %d pair %d %d", s.expert_gram, s.expert_pair[0], s.expert_pair[1]);
    CHECK(nf == 1, "wide experts: %d flags", nf);
    diag_ckpt_free(&s);
    dg_list_free(&l);
    moe_free(&m);
}

static void test_equal_gate_rows(void) {
    moe_model m;
    make_model(&m, 4, 8, 6, ROUTER_DENSE, 2, ACT_RELU, 3);
    int d = 8;
    memcpy(m.gate_w + 2 * d, m.gate_w, d * sizeof(float));
    m.gate_b[2] = m.gate_b[0];
    dg_list l;
    diag_ckpt s;
    int nf = diag_one(&m, NULL, &l, &s);
    CHECK(flagged(&l, "gate_rows_distinct") && flagged(&l, "gate_diffs_distinct"),
          "equal gate rows not flagged");
    CHECK(s.gate_row_pair[0] == 0 && s.gate_row_pair[1] == 2 && s.gate_row_min == 0,
          "gate row pair %d %d", s.gate_row_pair[0], s.gate_row_pair[1]);
    CHECK(!flagged(&l, "experts_distinct"), "experts flagged by a gate problem");
    CHECK(nf == 2, "equal gate rows: %d flags", nf);
    diag_ckpt_free(&s);
    dg_list_free(&l);

    // a parallelogram: r3 = r0 + r1 - r2, so r0 - r2 = r3 - r1 while all rows differ
    moe_free(&m);
    make_model(&m, 4, 8, 6, ROUTER_DENSE, 2, ACT_RELU, 4);
    for (int q = 0; q < d; q++)
        m.gate_w[3 * d + q] = m.gate_w[q] + m.gate_w[d + q] - m.gate_w[2 * d + q];
    m.gate_b[3] = m.gate_b[0] + m.gate_b[1] - m.gate_b[2];
    nf = diag_one(&m, NULL, &l, &s);
    CHECK(flagged(&l, "gate_diffs_distinct") && !flagged(&l, "gate_rows_distinct"),
          "parallelogram gate differences: rows %d diffs %d", flagged(&l, "gate_rows_distinct"),
          flagged(&l, "gate_diffs_distinct"));
    CHECK(nf == 1, "parallelogram: %d flags", nf);
    CHECK(s.gate_diff_min < 1e-5, "gate diff min %g", s.gate_diff_min);
    diag_ckpt_free(&s);
    dg_list_free(&l);
    moe_free(&m);
}

static void test_dead_expert(void) {
    for (int dense = 0; dense < 2; dense++) {
        moe_model m;
        evalset E;
        make_model(&m, 4, 8, 6, dense ? ROUTER_DENSE : ROUTER_TOPK, 2, ACT_RELU, 5);
        make_eval(&E, 250, 8, 6);
        m.gate_b[2] = -60; /* the gate never picks expert 2 */
        dg_list l;
        diag_ckpt s;
        int nf = diag_one(&m, &E, &l, &s);
        const dg_finding *f = dg_find(&l, "dead_expert", "B");
        CHECK(f && f->severity == DG_WARN && strstr(f->text, "expert 2 of B"),
              "dead expert (%s) not flagged: %s", dense ? "dense" : "topk", f ? f->text : "-");
        CHECK(s.load_frac[2] == 0 && s.load_mean[2] < 1e-6, "load of expert 2: %g %g",
              s.load_frac[2], s.load_mean[2]);
        CHECK(nf == 1, "dead expert: %d flags", nf);
        if (nf != 1) print_flags(&l);
        // shares add up: k per sample for top-k, 1 for the argmax
        double sf = 0, sm = 0;
        for (int i = 0; i < 4; i++) sf += s.load_frac[i], sm += s.load_mean[i];
        CHECK_CLOSE(sf, dense ? 1.0 : 2.0, 1e-9, "sum of top-k shares");
        CHECK_CLOSE(sm, 1.0, 1e-5, "sum of mean gate weights");
        diag_ckpt_free(&s);
        dg_list_free(&l);
        evalset_free(&E);
        moe_free(&m);
    }
}

static void test_topk_conditions(void) {
    dg_list l;
    diag_ckpt s;
    moe_model m;
    // n - 1 > d
    make_model(&m, 6, 3, 4, ROUTER_TOPK, 2, ACT_RELU, 8);
    int nf = diag_one(&m, NULL, &l, &s);
    CHECK(flagged(&l, "topk_n_d") && flagged(&l, "topk_rank"), "n - 1 > d not flagged");
    CHECK(s.rank == 3 && s.sigma_min == 0, "rank %d sigma_min %g", s.rank, s.sigma_min);
    CHECK(nf == 2, "n - 1 > d: %d flags", nf);
    if (nf != 2) print_flags(&l);
    diag_ckpt_free(&s);
    dg_list_free(&l);
    moe_free(&m);

    // rank deficient with n - 1 <= d, gate differences still distinct:
    // W3 = W2 - 0.5 (W0 - W1) - 0.7 (W1 - W2)
    make_model(&m, 4, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 9);
    int d = 8;
    float *W = m.gate_w;
    for (int q = 0; q < d; q++)
        W[3 * d + q] = W[2 * d + q] - 0.5f * (W[q] - W[d + q]) - 0.7f * (W[d + q] - W[2 * d + q]);
    nf = diag_one(&m, NULL, &l, &s);
    CHECK(flagged(&l, "topk_rank") && !flagged(&l, "topk_n_d"), "rank deficiency not flagged");
    CHECK(s.rank == 2 && s.sigma_min < 1e-5 * s.sigma_max, "rank %d sigma %g / %g", s.rank,
          s.sigma_min, s.sigma_max);
    CHECK(nf == 1, "rank deficient: %d flags", nf);
    if (nf != 1) print_flags(&l);
    diag_ckpt_free(&s);
    dg_list_free(&l);

    // known singular values: M rows 3 e0, 2 e1, 1 e2 (W3 = 0, W2 = e2, W1 = e2 + 2 e1, ...)
    memset(W, 0, 4 * d * sizeof(float));
    W[2 * d + 2] = 1;
    W[1 * d + 2] = 1, W[1 * d + 1] = 2;
    W[0 * d + 2] = 1, W[0 * d + 1] = 2, W[0] = 3;
    diag_one(&m, NULL, &l, &s);
    CHECK(s.nsigma == 3, "nsigma %d", s.nsigma);
    if (s.nsigma == 3) {
        CHECK_CLOSE(s.sigma[0], 3, 1e-12, "sigma 0");
        CHECK_CLOSE(s.sigma[1], 2, 1e-12, "sigma 1");
        CHECK_CLOSE(s.sigma[2], 1, 1e-12, "sigma 2");
    }
    diag_ckpt_free(&s);
    dg_list_free(&l);
    // a rotated version: singular values do not change (Frobenius norm check too)
    rng_t r;
    rng_seed(&r, 3);
    fill(W, 4 * (size_t)d, 1.0, &r);
    diag_one(&m, NULL, &l, &s);
    double fro = 0, ss = 0;
    for (int i = 1; i < 4; i++)
        for (int q = 0; q < d; q++) {
            double x = (double)W[(i - 1) * d + q] - W[i * d + q];
            fro += x * x;
        }
    for (int i = 0; i < s.nsigma; i++) ss += s.sigma[i] * s.sigma[i];
    CHECK_CLOSE(ss, fro, 1e-10, "sum of sigma^2 = |M|_F^2");
    diag_ckpt_free(&s);
    dg_list_free(&l);
    moe_free(&m);

    // top-1
    make_model(&m, 4, 8, 6, ROUTER_TOPK, 1, ACT_RELU, 10);
    nf = diag_one(&m, NULL, &l, &s);
    const dg_finding *f = dg_find(&l, "top1", "B");
    CHECK(f && f->severity == DG_WARN && strstr(f->text, "outside the theory"), "top-1 not flagged");
    CHECK(nf == 1, "top-1: %d flags", nf);
    diag_ckpt_free(&s);
    dg_list_free(&l);
    moe_free(&m);
}

static void test_pairs(void) {
    ms_err err = {{0}};
    moe_model A, B;
    evalset E;
    make_model(&A, 4, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 20);
    make_eval(&E, 200, 8, 21);
    label_by_model(&E, &A); /* so misaligned orders have real barriers */
    // B: the same function with shuffled parameters
    moe_clone(&B, &A);
    int order[4];
    moe_scramble(&B, 99, 1, order);
    diag_opts o;
    diag_opts_default(&o);
    o.T = 9;
    diag_report r;
    int rc = diag_pair(&A, &B, &E, &o, &r, &err);
    CHECK(rc == 0, "diag_pair: %s", err.msg);
    if (rc == 0) {
        int nf = dg_count(&r.findings, DG_WARN);
        CHECK(nf == 0, "healthy pair flagged %d findings", nf);
        if (nf) print_flags(&r.findings);
        CHECK(r.heads_equal && r.methods_agree, "heads %d agree %d", r.heads_equal,
              r.methods_agree);
        CHECK(r.have_landscape && r.rank == 1 && r.norders == 24, "landscape rank %ld of %ld",
              r.rank, r.norders);
        // the scramble is undone: slot i holds B's expert that came from A's expert i
        int inv_ok = 1;
        for (int i = 0; i < 4; i++) inv_ok &= order[r.order[COST_EXPERT][i]] == i;
        CHECK(inv_ok, "expert order does not undo the scramble");
        for (int i = 0; i < 4; i++) CHECK(r.slot_resid[i] < 1e-5, "slot %d residual %g", i,
                                          r.slot_resid[i]);
        CHECK(r.margin_rel[COST_EXPERT] > 0.1 && r.margin_rel[COST_GATE] > 0.1,
              "margins %g %g", r.margin_rel[0], r.margin_rel[1]);
        /* every residual 0: no "infx the median", no unrelated experts */
        const dg_finding *w = dg_find(&r.findings, "worst_slot", NULL);
        CHECK(w && strstr(w->text, "the other slots match exactly") && !strstr(w->text, "inf"),
              "worst slot of a scramble: %s", w ? w->text : "(none)");
        CHECK(!dg_find(&r.findings, "experts_unrelated", NULL), "a scramble's experts correspond");
    }
    diag_report_free(&r);

    // an independently drawn B: its experts match none of A's, whatever the
    // order (median relative residual near 1 or more), and that is said
    {
        moe_model U;
        make_model(&U, 4, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 77);
        rc = diag_pair(&A, &U, &E, &o, &r, &err);
        CHECK(rc == 0, "diag_pair (unrelated): %s", err.msg);
        const dg_finding *u = dg_find(&r.findings, "experts_unrelated", NULL);
        double med = 0;
        if (rc == 0) {
            double t[4];
            memcpy(t, r.slot_rel, sizeof t);
            for (int i = 1; i < 4; i++)
                for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
                    double x = t[j];
                    t[j] = t[j - 1];
                    t[j - 1] = x;
                }
            med = 0.5 * (t[1] + t[2]);
        }
        // with the landscape known, the verdict follows the spread of its barriers
        double lo = r.barrier_best, hi = r.barrier_worst, spread = hi - lo;
        int hardly = spread <= DG_SPREAD_LOW * hi;
        char nums[64];
        snprintf(nums, sizeof nums, "run from %.4g", lo);
        CHECK(med >= DG_REL_UNRELATED && u && r.have_landscape, "unrelated experts (median relative residual %g) "
              "said", med);
        if (u && hardly)
            CHECK(u->severity == DG_WARN && strstr(u->text, "do not correspond") && strstr(u->text, "hardly") &&
                  strstr(u->text, nums), "unrelated, barriers %g..%g: %s", lo, hi, u->text);
        else if (u)
            CHECK(u->severity == DG_INFO && strstr(u->text, "yet the order matters") && !strstr(u->text, "hardly") &&
                  strstr(u->text, nums), "unrelated, barriers %g..%g: %s", lo, hi, u->text);
        diag_report_free(&r);
        // without a landscape the verdict on the barrier is left to one
        diag_opts nol = o;
        nol.landscape = 0;
        rc = diag_pair(&A, &U, &E, &nol, &r, &err);
        u = dg_find(&r.findings, "experts_unrelated", NULL);
        CHECK(rc == 0 && u && u->severity == DG_WARN && strstr(u->text, "the landscape says") &&
                  !strstr(u->text, "hardly"),
              "unrelated without a landscape: %s", u ? u->text : "(none)");
        diag_report_free(&r);
        // B's experts all one expert, its gate rows all one row: every order is the same
        // function, so the order cannot change the barrier (spread 0), and that is said
        moe_model Q;
        moe_clone(&Q, &U);
        for (int i = 1; i < 4; i++) {
            moe_expert *x = &Q.experts[i], *e0 = &Q.experts[0];
            memcpy(x->fc1_w, e0->fc1_w, sizeof(float) * 6 * 8);
            memcpy(x->fc1_b, e0->fc1_b, sizeof(float) * 6);
            memcpy(x->fc2_w, e0->fc2_w, sizeof(float) * 8 * 6);
            memcpy(x->fc2_b, e0->fc2_b, sizeof(float) * 8);
            memcpy(Q.gate_w + i * 8, Q.gate_w, sizeof(float) * 8);
            Q.gate_b[i] = Q.gate_b[0];
        }
        rc = diag_pair(&A, &Q, &E, &o, &r, &err);
        u = dg_find(&r.findings, "experts_unrelated", NULL);
        CHECK(rc == 0 && r.have_landscape && r.barrier_worst - r.barrier_best <= DG_SPREAD_LOW * r.barrier_worst,
              "one expert copied: barriers %g..%g", r.barrier_best, r.barrier_worst);
        CHECK(u && u->severity == DG_WARN && strstr(u->text, "hardly change the barrier"),
              "one expert copied: the order hardly matters, said: %s", u ? u->text : "(none)");
        diag_report_free(&r);
        moe_free(&Q);
        moe_free(&U);
    }

    // different heads
    B.head_w[0] += 0.5f;
    rc = diag_pair(&A, &B, &E, &o, &r, &err);
    CHECK(rc == 0, "diag_pair (heads): %s", err.msg);
    const dg_finding *f = dg_find(&r.findings, "heads", NULL);
    CHECK(f && f->severity == DG_WARN && strstr(f->text, "differ"), "different heads not flagged");
    diag_report_free(&r);
    B.head_w[0] -= 0.5f;

    // two nearly identical experts in A make the expert order ambiguous: tiny margin
    moe_model A2, B2;
    moe_clone(&A2, &A);
    copy_expert(&A2, 1, 0);
    A2.experts[1].fc1_w[0] += 1e-4f;
    moe_clone(&B2, &A2);
    moe_scramble(&B2, 5, 0, NULL);
    o.landscape = 0;
    rc = diag_pair(&A2, &B2, &E, &o, &r, &err);
    CHECK(rc == 0, "diag_pair (ambiguous): %s", err.msg);
    CHECK(dg_find(&r.findings, "margin_expert", "A,B") &&
              dg_find(&r.findings, "margin_expert", "A,B")->severity == DG_WARN,
          "ambiguous expert order not flagged (margin %g, %g relative)", r.margin[COST_EXPERT],
          r.margin_rel[COST_EXPERT]);
    CHECK(dg_find(&r.findings, "experts_distinct", "A") &&
              dg_find(&r.findings, "experts_distinct", "A")->severity == DG_WARN,
          "near-duplicate experts of A not flagged");
    f = dg_find(&r.findings, "best_order", NULL);
    CHECK(f && f->severity == DG_INFO && strstr(f->text, "skipped"), "landscape skip not said");
    diag_report_free(&r);

    // the TUI entry point
    dg_list l;
    rc = diag_findings(&A, &B, &E, NULL, &l, &err);
    CHECK(rc == 0 && l.n > 10 && dg_count(&l, DG_WARN) == 0, "diag_findings: %d items", l.n);
    dg_list_free(&l);

    // incompatible pair: an error, not a crash
    moe_model C;
    make_model(&C, 3, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 30);
    rc = diag_pair(&A, &C, &E, &o, &r, &err);
    CHECK(rc == -1 && err.msg[0], "incompatible pair accepted");
    diag_report_free(&r);
    moe_free(&C);

    moe_free(&A2);
    moe_free(&B2);
    moe_free(&A);
    moe_free(&B);
    evalset_free(&E);
}

/* the explorer's quit cancels the diagnostics (progress_listen): a cancel that lands
 * after the expert distances stops the gate differences' sweep of a many-expert layer
 * (up to 5e7 distances; the explorer's q waited a minute on it at n = 256) */
static void on_phase(void *ctx, const char *phase, double done, double total) {
    (void)done, (void)total;
    if (strstr(phase, "gate differences")) atomic_store((atomic_int *)ctx, 1); // the sweep began
}

static void test_cancel_gate_sweep(void) {
    moe_model m;
    make_model(&m, 256, 4, 2, ROUTER_TOPK, 2, ACT_RELU, 41);
    atomic_int cancel = 0;
    progress_listen(on_phase, &cancel, &cancel);
    dg_list l = {0};
    diag_ckpt s;
    ms_err err = {{0}};
    int rc = diag_checkpoint(&m, NULL, "A", &s, &l, &err);
    progress_listen(NULL, NULL, NULL);
    CHECK(atomic_load(&cancel) == 1, "the gate differences' sweep reported no phase (no cancel reaches it)");
    CHECK(rc == -1 && strstr(err.msg, "cancelled"), "cancelled in the gate sweep: rc %d '%s' (it ran to its end)",
          rc, err.msg);
    dg_list_free(&l);
    diag_ckpt_free(&s);
    moe_free(&m);
}

/* ... and the expert outputs on the evaluation inputs (a GPT-2-small expert on 2048
 * rows is 0.2 s): a cancel as their phase begins stops them within a chunk of rows,
 * before the gate (whose own checks would stop it too) */
static void on_outputs(void *ctx, const char *phase, double done, double total) {
    (void)done, (void)total;
    atomic_int *flags = ctx; // [0] the cancel, [1] the gate's sweep seen
    if (strstr(phase, "expert outputs")) atomic_store(&flags[0], 1);
    if (strstr(phase, "gate differences")) atomic_store(&flags[1], 1);
}

static void test_cancel_outputs(void) {
    moe_model m;
    make_model(&m, 4, 8, 6, ROUTER_TOPK, 2, ACT_RELU, 43);
    evalset E;
    make_eval(&E, 600, 8, 44); // several chunks of MOE_EXPERT_ROWS rows
    atomic_int flags[2] = {0, 0};
    progress_listen(on_outputs, flags, &flags[0]);
    dg_list l = {0};
    diag_ckpt s;
    ms_err err = {{0}};
    int rc = diag_checkpoint(&m, &E, "A", &s, &l, &err);
    progress_listen(NULL, NULL, NULL);
    CHECK(atomic_load(&flags[0]) == 1, "the expert outputs reported no phase (no cancel reaches them)");
    CHECK(rc == -1 && strstr(err.msg, "cancelled") && !s.output_dist && !atomic_load(&flags[1]),
          "cancelled in the expert outputs: rc %d '%s', distances %s, the gate reached %d", rc, err.msg,
          s.output_dist ? "made" : "none", atomic_load(&flags[1]));
    dg_list_free(&l);
    diag_ckpt_free(&s);
    // uncancelled, the same findings as without a listener: its chunks are the same
    dg_list l1 = {0}, l2 = {0};
    diag_ckpt s1, s2;
    atomic_int never = 0;
    progress_listen(NULL, NULL, &never);
    CHECK(diag_checkpoint(&m, &E, "A", &s1, &l1, &err) == 0, "with a listener: %s", err.msg);
    progress_listen(NULL, NULL, NULL);
    CHECK(diag_checkpoint(&m, &E, "A", &s2, &l2, &err) == 0, "without: %s", err.msg);
    CHECK(s1.output_dist && s2.output_dist && !memcmp(s1.output_dist, s2.output_dist, 16 * sizeof(double)) &&
              s1.output_rms == s2.output_rms,
          "the output distances differ with a listener");
    dg_list_free(&l1);
    dg_list_free(&l2);
    diag_ckpt_free(&s1);
    diag_ckpt_free(&s2);
    evalset_free(&E);
    moe_free(&m);
}

int main(void) {
    test_cancel_gate_sweep();
    test_cancel_outputs();
    test_healthy();
    test_identical_experts();
    test_equal_gate_rows();
    test_dead_expert();
    test_topk_conditions();
    test_pairs();
    return test_summary("test_diagnose");
}
