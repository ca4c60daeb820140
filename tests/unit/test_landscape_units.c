/* test_landscape_units.c - the per-sample losses the landscape's fused kernel
 * keeps (ls_opts.keep_units, landscape.order_units) against the plain path's
 * (align_models(order = pi) + curve_compute_units): in every path (per-order,
 * prefix, selected) and vector form, classification, regression and layer
 * mode, in sample chunks, on the sample checkpoints; keeping them changes no
 * sum, and they do not depend on the thread count. The named curves' (naive,
 * skip-order, each method's order: the kernel evaluates them beside the sweep)
 * likewise, and their barrier intervals against the plain path's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "core/env.h"
#include "core/rng.h"
#include "io/evalset.h"
#include "io/model_io.h"
#include "landscape/curve.h"
#include "landscape/landscape.h"
#include "landscape/landscape_tuning.h"
#include "testlib.h"

static void fill(float *p, size_t cnt, rng_t *r, double scale) {
    for (size_t i = 0; i < cnt; i++) p[i] = (float)(scale * rng_normal(r));
}

/* a random layer (C = 0: no head, layer mode); B a noisy copy of A; norm: a
 * LayerNorm before the head */
static void make_models(moe_model *A, moe_model *B, int n, int d, int C, uint64_t seed, int norm) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = n, c.d = d, c.h = 8, c.k = 2, c.s = 0, c.C = C;
    c.router = ROUTER_DENSE, c.act = ACT_RELU, c.residual = 1;
    c.has_gate_bias = c.has_expert_bias = 1;
    c.has_head = C > 0, c.has_norm = norm && C > 0;
    moe_alloc(A, &c);
    moe_alloc(B, &c);
    rng_t r;
    rng_seed(&r, seed);
    fill(A->mem, A->nparams, &r, 0.5);
    for (size_t i = 0; i < A->nparams; i++) B->mem[i] = A->mem[i] + (float)(0.4 * rng_normal(&r));
    if (c.has_norm) memcpy(B->norm_w, A->norm_w, (size_t)(2 * d) * sizeof(float));
    if (C) memcpy(B->head_w, A->head_w, (size_t)(C * d + C) * sizeof(float));
}

/* N samples; C > 0 with labels (classification), C < 0 with -C targets (regression) */
static void make_evalset(evalset *e, int N, int d, int C, uint64_t seed) {
    memset(e, 0, sizeof *e);
    rng_t r;
    rng_seed(&r, seed);
    e->N = N, e->d = d, e->C = C > 0 ? C : -C;
    e->inputs = ms_malloc((size_t)N * d * sizeof(float));
    fill(e->inputs, (size_t)N * d, &r, 1.0);
    if (C > 0) {
        e->labels = ms_malloc((size_t)N * sizeof(int32_t));
        for (int i = 0; i < N; i++) e->labels[i] = (int32_t)rng_below(&r, (uint64_t)C);
    } else if (C < 0) {
        e->targets = ms_malloc((size_t)N * -C * sizeof(float));
        fill(e->targets, (size_t)N * -C, &r, 1.0);
    }
}

/* order k's per-sample losses the plain way: (T, N), or NULL */
static double *plain_units(const moe_model *A, const moe_model *B, const evalset *E, const int *order, int wm,
                           int T) {
    align_opts ao;
    align_opts_default(&ao);
    ao.order_stage = 1, ao.order = order, ao.wm_stage = wm, ao.any_order = 1;
    moe_model Bp;
    align_result res;
    ms_err err;
    if (align_models(A, B, &ao, &Bp, &res, &err)) return NULL;
    ls_curve c;
    int rc = curve_compute_units(A, &Bp, E, T, &c, &err);
    moe_free(&Bp);
    align_result_free(&res);
    if (rc) return NULL;
    double *seq = c.seq;
    c.seq = NULL;
    ls_curve_free(&c);
    return seq;
}

/* the rows' sums are those without keep_units, bit for bit */
static int same_rows(const landscape *a, const landscape *b) {
    if (a->norders != b->norders) return 0;
    for (long k = 0; k < a->norders; k++)
        if (memcmp(&a->rows[k].barrier, &b->rows[k].barrier, sizeof(double)) ||
            memcmp(&a->rows[k].auc, &b->rows[k].auc, sizeof(double)) || a->rows[k].id != b->rows[k].id)
            return 0;
    return 1;
}

/* p is a named curve's order (the sweep takes its row, but for some points,
 * from that curve: the caller fills it) */
static int named(const landscape *L, const int *p, int wm) {
    for (int m = 0; m < COST_NMETHODS; m++)
        if (!memcmp(p, L->methods[m].order, (size_t)L->n * sizeof(int))) return 1;
    return wm && !memcmp(p, L->skip_order.order, (size_t)L->n * sizeof(int));
}

/* the largest relative difference between two (T, N) per-sample losses; INFINITY when
 * either is missing or one is NaN where the other is not */
static double units_diff(const double *x, const double *r, size_t cnt) {
    if (!x || !r) return INFINITY;
    double worst = 0.0;
    for (size_t i = 0; i < cnt; i++)
        worst = isnan(x[i]) != isnan(r[i]) ? INFINITY : isnan(x[i]) ? worst : fmax(worst, fabs(x[i] - r[i]) / fmax(1.0, fabs(r[i])));
    return worst;
}

/* The named curves' per-sample losses the landscape kept (keep_units, no
 * ls_layer_intervals) against the plain path's at every point, ends included */
static void named_units(const char *what, const moe_model *A, const moe_model *B, const evalset *E,
                        const landscape *L, int wm) {
    const ls_curve *cv[2 + COST_NMETHODS] = {&L->naive, &L->skip_order};
    int cwm[2 + COST_NMETHODS] = {0, 1};
    for (int m = 0; m < COST_NMETHODS; m++) cv[2 + m] = &L->methods[m], cwm[2 + m] = wm;
    double worst = 0.0;
    for (int a = 0; a < 2 + COST_NMETHODS; a++) {
        double *ref = plain_units(A, B, E, cv[a]->order, cwm[a], L->T);
        double w = cv[a]->nseq == E->N ? units_diff(cv[a]->seq, ref, (size_t)L->T * E->N) : INFINITY;
        worst = fmax(worst, w);
        free(ref);
    }
    CHECK(worst <= 1e-5, "%s: the named curves' kept per-sample losses vs the plain path's, largest "
          "relative difference %.3g", what, worst);
}

/* The kept losses of a few orders (ids 0, 1, the middle, the last; the
 * named curves' excepted) against the plain path's at every interior t (and
 * t = 1 when the sweep has it) */
static void units_case(const char *what, const moe_model *A, const moe_model *B, const evalset *E, int T,
                       double mem_mb, int prefix, ms_simd simd) {
    ls_opts o;
    ls_opts_default(&o);
    o.T = T, o.nthreads = 2, o.mem_mb = mem_mb;
    ls_tuning tn = {.prefix = prefix, .simd = simd};
    landscape L0, L1, L2;
    ms_err err;
    int r0 = landscape_compute_tuned(A, B, E, &o, &tn, &L0, &err);
    o.keep_units = 1;
    int r2 = landscape_compute_tuned(A, B, E, &o, &tn, &L2, &err);
    o.nthreads = 1;
    int r1 = landscape_compute_tuned(A, B, E, &o, &tn, &L1, &err);
    CHECK(!r0 && !r1 && !r2, "%s: runs (%s)", what, r0 || r1 || r2 ? err.msg : "");
    if (r0 || r1 || r2) goto out;
    CHECK(!L0.order_units && L1.order_units && L2.order_units, "%s: kept only when asked", what);
    if (!L1.order_units || !L2.order_units) goto out;
    CHECK(same_rows(&L0, &L2), "%s: the sums unchanged by keeping the per-sample losses", what);
    size_t nu = (size_t)L1.norders * T * E->N;
    CHECK(!memcmp(L1.order_units, L2.order_units, nu * sizeof(double)), "%s: 1 and 2 threads bit for bit", what);
    const int n = L1.n, N = E->N;
    long ids[4] = {0, 1, L1.norders / 2, L1.norders - 1};
    double worst = 0.0;
    int checked = 0, bad_nan = 0;
    for (int a = 0; a < 4; a++) {
        const double *u = L1.order_units + (size_t)ids[a] * T * N;
        int p[LS_MAX_N];
        for (int i = 0; i < n; i++) p[i] = L1.orders[(size_t)ids[a] * n + i];
        if (named(&L1, p, o.wm)) continue;
        double *ref = plain_units(A, B, E, p, o.wm, T);
        CHECK(ref != NULL, "%s: the plain path runs", what);
        if (!ref) continue;
        checked++;
        for (int m = 1; m < (L1.order_units_end ? T : T - 1); m++)
            for (int s = 0; s < N; s++) {
                double x = u[(size_t)m * N + s], r = ref[(size_t)m * N + s];
                if (isnan(x)) bad_nan++;
                else worst = fmax(worst, fabs(x - r) / fmax(1.0, fabs(r)));
            }
        free(ref);
    }
    CHECK(checked > 0 && bad_nan == 0 && worst <= 1e-5,
          "%s: %d orders vs the plain path, %d values missing, largest relative difference %.3g", what, checked,
          bad_nan, worst);
    CHECK(!L0.naive.seq, "%s: no named curve's per-sample losses unless asked", what);
    named_units(what, A, B, E, &L1, o.wm);
out:
    if (!r0) landscape_free(&L0);
    if (!r1) landscape_free(&L1);
    if (!r2) landscape_free(&L2);
}

/* The error bars streamed as each order's losses come (no table) against those
 * from the table (ls_layer_intervals): the same rows, intervals and rank
 * intervals, bit for bit; T = 3 (the middle is the last chunk), a memory
 * budget that splits the points (the chunks before the last held), threads */
static void stream_case(const char *what, const moe_model *A, const moe_model *B, const evalset *E, int T,
                        double mem_mb, int nthreads, int prefix) {
    ls_opts o;
    ls_opts_default(&o);
    o.T = T, o.mem_mb = mem_mb, o.nthreads = nthreads, o.keep_units = 1;
    ls_tuning tn = {.prefix = prefix};
    landscape Lt, Ls;
    ms_err err;
    int rt = landscape_compute_tuned(A, B, E, &o, &tn, &Lt, &err);
    if (!rt) rt = ls_layer_intervals(A, B, E, o.wm, &Lt, NULL, &err);
    setenv("MOESCOPE_TEST_BOOT_STREAM", "1", 1); // streamed, however few
    env_refresh();
    int rs = landscape_compute_tuned(A, B, E, &o, &tn, &Ls, &err);
    int kept = !rs && (Ls.order_units != NULL || Ls.unit_loss != NULL);
    if (!rs) rs = ls_layer_intervals(A, B, E, o.wm, &Ls, NULL, &err);
    unsetenv("MOESCOPE_TEST_BOOT_STREAM");
    env_refresh();
    CHECK(!rt && !rs, "%s: runs (%s)", what, rt || rs ? err.msg : "");
    if (rt || rs) goto out;
    CHECK(Lt.boot_resamples > 0 && Ls.boot_resamples > 0 && !kept && !Ls.unit_loss && Ls.nseq == E->N,
          "%s: error bars both ways, the streamed without a table", what);
    CHECK(same_rows(&Lt, &Ls), "%s: the same rows", what);
    long bad = 0;
    for (long k = 0; k < Lt.norders && Lt.norders == Ls.norders; k++)
        bad += memcmp(&Lt.rows[k].bar_lo, &Ls.rows[k].bar_lo, sizeof(double)) != 0 ||
               memcmp(&Lt.rows[k].bar_hi, &Ls.rows[k].bar_hi, sizeof(double)) != 0;
    int rk = 0;
    for (int m = 0; m < COST_NMETHODS; m++) rk += Lt.rank_lo[m] != Ls.rank_lo[m] || Lt.rank_hi[m] != Ls.rank_hi[m];
    CHECK(bad == 0 && rk == 0, "%s: %ld of %ld barrier intervals and %d rank intervals differ from the table's",
          what, bad, Lt.norders, rk);
out:
    if (!rt) landscape_free(&Lt);
    if (!rs) landscape_free(&Ls);
}

/* every vector form the CPU runs, the per-order path and (where it applies) the prefix path */
static void forms(const char *what, const moe_model *A, const moe_model *B, const evalset *E, int T) {
    char buf[160];
    for (int s = MS_SIMD_PLAIN; s <= (int)ms_simd_cpu(); s++)
        for (int pf = -1; pf <= 1; pf += 2) {
            snprintf(buf, sizeof buf, "%s, %s form, %s path", what, ms_simd_name((ms_simd)s),
                     pf < 0 ? "per-order" : "prefix");
            units_case(buf, A, B, E, T, 0.0, pf, (ms_simd)s);
        }
}

static void synthetic(void) {
    moe_model A, B;
    evalset E, R, Z;
    make_evalset(&E, 45, 8, 3, 2); // 45: a padded last block of 16 lanes
    make_evalset(&R, 45, 8, -3, 3);
    make_evalset(&Z, 45, 8, 0, 4);
    make_models(&A, &B, 5, 8, 3, 1, 1);
    forms("classification, n = 5", &A, &B, &E, 5);
    forms("regression, n = 5", &A, &B, &R, 5);
    A.cfg.router = B.cfg.router = ROUTER_TOPK; // the selected form: a softmax top-2 of 5
    forms("top-2 of 5", &A, &B, &E, 5);
    stream_case("top-2 of 5, streamed", &A, &B, &E, 5, 0.0, 2, 1);
    stream_case("regression, top-2 of 5, streamed", &A, &B, &R, 5, 0.0, 2, -1);
    moe_free(&A);
    moe_free(&B);
    make_models(&A, &B, 4, 8, 0, 5, 0);
    units_case("layer mode, n = 4", &A, &B, &Z, 5, 0.0, 0, MS_SIMD_AUTO);
    stream_case("layer mode, n = 4, streamed", &A, &B, &Z, 5, 0.0, 2, 0);
    moe_free(&A);
    moe_free(&B);
    // in sample chunks (a tiny memory budget: one panel of 128 samples at a time)
    evalset W;
    make_evalset(&W, 300, 8, 3, 5);
    make_models(&A, &B, 5, 8, 3, 6, 1);
    units_case("classification, n = 5, sample chunks", &A, &B, &W, 5, 0.0001, 1, MS_SIMD_AUTO);
    units_case("classification, n = 5, sample chunks, per-order path", &A, &B, &W, 5, 0.0001, -1,
               MS_SIMD_AUTO);
    moe_free(&A);
    moe_free(&B);
    evalset_free(&W);
    evalset_free(&E);
    evalset_free(&R);
    evalset_free(&Z);
}

/* ls_layer_intervals from the kept losses equals its plain path's (every
 * order evaluated again): every order's per-sample losses at every point
 * (the end points' and the named curves' rows filled in), the rows' barrier
 * intervals, the methods' rank intervals but for near-ties */
static void intervals_case(const char *what, const moe_model *A, const moe_model *B, const evalset *E) {
    ls_opts o;
    ls_opts_default(&o);
    o.T = 7;
    landscape Lk, Lp;
    ms_err err;
    int rp = landscape_compute(A, B, E, &o, &Lp, &err);
    o.keep_units = 1;
    int rk = landscape_compute(A, B, E, &o, &Lk, &err);
    if (!rp) rp = ls_layer_intervals(A, B, E, o.wm, &Lp, NULL, &err);
    if (!rk) rk = ls_layer_intervals(A, B, E, o.wm, &Lk, NULL, &err);
    CHECK(!rp && !rk, "%s: intervals run (%s)", what, rp || rk ? err.msg : "");
    if (!rp && !rk) {
        CHECK(Lk.unit_loss && Lp.unit_loss && Lk.nseq == E->N && Lp.nseq == E->N && Lk.boot_resamples > 0,
              "%s: both kept every order's per-sample losses", what);
        double worst = Lk.unit_loss && Lp.unit_loss ? 0.0 : INFINITY, wbar = 0.0;
        size_t nu = (size_t)Lk.norders * Lk.T * E->N;
        for (size_t i = 0; Lk.unit_loss && Lp.unit_loss && i < nu; i++) {
            double x = Lk.unit_loss[i], r = Lp.unit_loss[i];
            worst = isnan(x) != isnan(r) ? INFINITY : fmax(worst, fabs(x - r) / fmax(1.0, fabs(r)));
        }
        for (long k = 0; k < Lk.norders; k++) // sorted by barrier: by id
            for (long j = 0; j < Lp.norders; j++)
                if (Lp.rows[j].id == Lk.rows[k].id) {
                    const ls_row *a = &Lk.rows[k], *b = &Lp.rows[j];
                    if (isnan(a->bar_lo) != isnan(b->bar_lo) || isnan(a->bar_hi) != isnan(b->bar_hi))
                        wbar = INFINITY;
                    else if (!isnan(a->bar_lo))
                        wbar = fmax(wbar, fmax(fabs(a->bar_lo - b->bar_lo), fabs(a->bar_hi - b->bar_hi)));
                }
        CHECK(worst <= 1e-5 && wbar <= 1e-5,
              "%s: per-sample losses within %.3g relative, barrier intervals within %.3g", what, worst, wbar);
        // the named curves: the kernel's per-sample losses and intervals, the plain path's
        const ls_curve *ck[2 + COST_NMETHODS] = {&Lk.naive, &Lk.skip_order}, *cp[2 + COST_NMETHODS] = {&Lp.naive, &Lp.skip_order};
        for (int m = 0; m < COST_NMETHODS; m++) ck[2 + m] = &Lk.methods[m], cp[2 + m] = &Lp.methods[m];
        double wn = 0.0, wni = 0.0;
        for (int a = 0; a < 2 + COST_NMETHODS; a++) {
            wn = fmax(wn, units_diff(ck[a]->seq, cp[a]->seq, (size_t)Lk.T * E->N));
            wni = isnan(ck[a]->bar_lo) || isnan(ck[a]->bar_hi)
                      ? INFINITY
                      : fmax(wni, fmax(fabs(ck[a]->bar_lo - cp[a]->bar_lo), fabs(ck[a]->bar_hi - cp[a]->bar_hi)));
        }
        CHECK(wn <= 1e-5 && wni <= 1e-5, "%s: the named curves' per-sample losses within %.3g relative, "
              "barrier intervals within %.3g of the plain path's", what, wn, wni);
        int off = 0;
        for (int m = 0; m < COST_NMETHODS; m++)
            off += fabs(Lk.rank_lo[m] - Lp.rank_lo[m]) > 1 || fabs(Lk.rank_hi[m] - Lp.rank_hi[m]) > 1;
        CHECK(off == 0, "%s: %d methods' rank intervals off by more than a near-tie", what, off);
    }
    if (!rp) landscape_free(&Lp);
    if (!rk) landscape_free(&Lk);
}

/* the sample checkpoints (a dense router and a top-2 one, 4 experts) */
static void samples(const char *dir) {
    char pa[256], pb[256], pe[256];
    snprintf(pa, sizeof pa, "sample-checkpoints/%s/seed1.safetensors", dir);
    snprintf(pb, sizeof pb, "sample-checkpoints/%s/seed2.safetensors", dir);
    snprintf(pe, sizeof pe, "sample-checkpoints/%s/eval.safetensors", dir);
    moe_model A, B;
    evalset E;
    ms_err err;
    int ra = moe_load(&A, pa, NULL, NULL, &err), rb = ra ? -1 : moe_load(&B, pb, NULL, NULL, &err);
    int re = rb ? -1 : evalset_load(&E, pe, &err);
    CHECK(!ra && !rb && !re, "%s: loads (%s)", dir, ra || rb || re ? err.msg : "");
    if (!re) {
        units_case(dir, &A, &B, &E, 7, 0.0, 0, MS_SIMD_AUTO);
        char buf[64];
        snprintf(buf, sizeof buf, "%s, prefix path", dir);
        units_case(buf, &A, &B, &E, 7, 0.0, 1, MS_SIMD_AUTO);
        intervals_case(dir, &A, &B, &E);
        snprintf(buf, sizeof buf, "%s, streamed", dir);
        stream_case(buf, &A, &B, &E, 25, 0.0, 2, 0);
        snprintf(buf, sizeof buf, "%s, streamed, prefix path, 1 thread", dir);
        stream_case(buf, &A, &B, &E, 9, 0.0, 1, 1);
        snprintf(buf, sizeof buf, "%s, streamed, T = 3", dir);
        stream_case(buf, &A, &B, &E, 3, 0.0, 2, 0);
        snprintf(buf, sizeof buf, "%s, streamed, points in chunks", dir);
        stream_case(buf, &A, &B, &E, 7, 2.5, 2, 0);
        evalset_free(&E);
    }
    if (!ra) moe_free(&A);
    if (!rb) moe_free(&B);
}

int main(void) {
    synthetic();
    samples("topk4");
    samples("dense4");
    return test_summary("test_landscape_units");
}
