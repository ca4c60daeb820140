/* test_explore_ci.c - the explorer's orders table keeps its error bars without
 * holding every order's per-sample losses. On the bundled dense8 pair (40320
 * orders) at 3 points on 12 of its samples (1.45 M losses: more than a small
 * table, so each order's are resampled as its row is done) the worker's
 * complete table carries every row's interval over the 12 samples, bit for bit
 * those of the table kept whole and resampled once complete (a landscape not
 * streamed, ls_layer_intervals: how the explorer gave them before). On all 360 samples
 * (43.5 M losses: past the landscape command's 2^25 of resampling) the table
 * has none and says why, as the landscape command does; so has the 12 samples'
 * with the bound lowered below them (MOESCOPE_TEST_BOOT_BOUND), unless
 * explore_set_all_error_bars (--all-error-bars) raises it, and then the same
 * intervals again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/env.h"
#include "explore/explore_worker.h"
#include "io/evalset.h"
#include "io/model_io.h"
#include "landscape/landscape.h"
#include "testlib.h"

#define WAIT(g, v, cond) EXPLORE_WAIT(g, v, 3000000, cond)

/* the worker's complete table of (A, B) on E at T = 3, expert cost, weight
 * matching; all: explore_set_all_error_bars */
static int worker_table(const moe_model *A, const moe_model *B, const evalset *E, int all, explore_snapshot *v) {
    ms_err err;
    explore_worker *g = explore_start(A, B, E, &err);
    CHECK(g != NULL, "the worker opens dense8 (%s)", g ? "" : err.msg);
    if (!g) return -1;
    explore_set_all_error_bars(g, all);
    explore_request q;
    memset(&q, 0, sizeof q);
    q.order_stage = q.wm_stage = q.center = 1;
    q.method = COST_EXPERT;
    q.T = 3;
    explore_submit(g, &q);
    // a table within the bound: its intervals; past it: why there are none
    WAIT(g, v, v->failed || (!v->busy && v->have_landscape && (v->ci_units > 0 || v->ci_why)));
    CHECK(!v->failed && v->have_landscape && v->ndone == 40320, "the table completes (%ld rows; %s)", v->ndone,
          v->status);
    explore_stop(g);
    return v->have_landscape ? 0 : -1;
}

/* 12 samples: every row's interval, those of the table resampled whole; all:
 * past a bound lowered below them, with explore_set_all_error_bars */
static void within(const moe_model *A, const moe_model *B, const evalset *E12, int all) {
    explore_snapshot v;
    memset(&v, 0, sizeof v);
    if (worker_table(A, B, E12, all, &v)) {
        explore_snapshot_free(&v);
        return;
    }
    CHECK(v.ci_units == 12 && !v.ci_why, "the rows have intervals over the 12 samples (%d; %s)", v.ci_units,
          v.ci_why ? v.ci_why : "");
    ls_opts o;
    ls_opts_default(&o);
    o.T = 3, o.wm = 1, o.center = 1, o.hidden = COST_EXPERT, o.keep_units = 1, o.all_error_bars = all;
    landscape L;
    ms_err err;
    int rc = landscape_compute(A, B, E12, &o, &L, &err); // not streamed: the table, resampled once complete
    if (!rc) rc = ls_layer_intervals(A, B, E12, o.wm, &L, NULL, &err);
    CHECK(!rc && L.boot_resamples > 0 && L.norders == v.ndone, "the reference table's intervals (%s)",
          rc ? err.msg : "");
    if (!rc) {
        double *lo = malloc((size_t)L.norders * sizeof(double)), *hi = malloc((size_t)L.norders * sizeof(double));
        double *bar = malloc((size_t)L.norders * sizeof(double));
        for (long k = 0; k < L.norders; k++) {
            const ls_row *r = &L.rows[k];
            lo[r->id] = r->bar_lo, hi[r->id] = r->bar_hi, bar[r->id] = r->barrier;
        }
        long bad = 0, nolo = 0, width = 0;
        for (long k = 0; k < v.ndone; k++) {
            const ls_row *r = &v.rows[k];
            if (r->id < 0 || r->id >= L.norders) {
                bad++;
                continue;
            }
            bad += memcmp(&r->bar_lo, &lo[r->id], sizeof(double)) || memcmp(&r->bar_hi, &hi[r->id], sizeof(double)) ||
                   memcmp(&r->barrier, &bar[r->id], sizeof(double));
            nolo += !(r->bar_lo <= r->barrier && r->barrier <= r->bar_hi);
            width += r->bar_hi > r->bar_lo;
        }
        CHECK(bad == 0, "%ld of %ld rows' barrier or interval differ from the table's", bad, v.ndone);
        CHECK(nolo == 0 && width > 0, "every interval holds its barrier (%ld do not), %ld have width", nolo, width);
        free(lo);
        free(hi);
        free(bar);
        landscape_free(&L);
    }
    explore_snapshot_free(&v);
}

/* all 360 samples: no intervals, and the table says why */
static void past(const moe_model *A, const moe_model *B, const evalset *E) {
    explore_snapshot v;
    memset(&v, 0, sizeof v);
    if (!worker_table(A, B, E, 0, &v))
        CHECK(v.ci_units == 0 && v.ci_why && strstr(v.ci_why, "more than 33554432 per-unit losses"),
              "no intervals past 2^25 losses to resample, and why (%d; %s)", v.ci_units, v.ci_why ? v.ci_why : "");
    explore_snapshot_free(&v);
}

/* the bound lowered to 2^20 (below the 12 samples' 1.45 M losses): no
 * intervals, and why, unless explore_set_all_error_bars */
static void lowered(const moe_model *A, const moe_model *B, const evalset *E12) {
    setenv("MOESCOPE_TEST_BOOT_BOUND", "1048576", 1);
    env_refresh();
    explore_snapshot v;
    memset(&v, 0, sizeof v);
    if (!worker_table(A, B, E12, 0, &v))
        CHECK(v.ci_units == 0 && v.ci_why && strstr(v.ci_why, "--all-error-bars"),
              "past a lowered bound: no intervals, and why (%d; %s)", v.ci_units, v.ci_why ? v.ci_why : "");
    explore_snapshot_free(&v);
    within(A, B, E12, 1);
    unsetenv("MOESCOPE_TEST_BOOT_BOUND");
    env_refresh();
}

int main(void) {
    const char *pa = "sample-checkpoints/dense8/seed1.safetensors", *pb = "sample-checkpoints/dense8/seed2.safetensors";
    moe_model A, B;
    evalset E, E12;
    ms_err err;
    int ra = moe_load(&A, pa, NULL, NULL, &err), rb = ra ? -1 : moe_load(&B, pb, NULL, NULL, &err);
    int re = rb ? -1 : evalset_load(&E, "sample-checkpoints/dense8/eval.safetensors", &err);
    CHECK(!ra && !rb && !re, "dense8 loads (%s)", ra || rb || re ? err.msg : "");
    if (!re) {
        evalset_subset(&E, 12, &E12);
        within(&A, &B, &E12, 0);
        lowered(&A, &B, &E12);
        past(&A, &B, &E);
        evalset_free(&E12);
        evalset_free(&E);
    }
    if (!ra) moe_free(&A);
    if (!rb) moe_free(&B);
    return test_summary("test_explore_ci");
}
