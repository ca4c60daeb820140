/* landscape_boot.c - a landscape's error bars: every order's barrier and each
 * method's rank in each bootstrap resample of the evaluation set's units
 * (bootstrap.h), from the per-unit losses kept at every point (nothing is
 * evaluated again). A method's rank in a resample is its rank among the
 * table's orders there, as landscape.rank: 1 + #{orders with a barrier below
 * the method's - tau}. */
#include <math.h>
#include <stdlib.h>

#include "align/align.h"
#include "landscape/bootstrap.h"
#include "landscape_int.h"

/* vals (norders, R): order k's barrier in resample r; rk (COST_NMETHODS, R): the methods' ranks */
static int boot_resample(const landscape *L, const ls_boot *b, const double *seq, int r, double *vals,
                         double *rk, double *means) {
    int T = L->T, S = b->S, R = b->R;
    for (long k = 0; k < L->norders; k++) {
        ls_boot_means(b, seq + (size_t)k * T * S, T, r, means);
        vals[(size_t)k * R + r] = ls_boot_barrier_of(means, T);
    }
    for (int m = 0; m < COST_NMETHODS; m++) {
        ls_boot_means(b, L->methods[m].seq, T, r, means);
        double bm = ls_boot_barrier_of(means, T) - L->tau;
        long below = 0;
        for (long k = 0; k < L->norders; k++) below += vals[(size_t)k * R + r] < bm;
        rk[(size_t)m * R + r] = 1.0 + (double)below;
    }
    return 0;
}

int ls_boot_landscape(landscape *L, const double *seq, int S, const char *unit, atomic_int *cancel,
                      ms_err *err) {
    for (int m = 0; m < COST_NMETHODS; m++)
        if (!L->methods[m].seq) return 0;
    int R = LS_BOOT_RESAMPLES, T = L->T;
    ls_boot b;
    ls_boot_init(&b, S, R, LS_BOOT_SEED);
    double *vals = ms_malloc((size_t)L->norders * R * sizeof(double));
    double *rk = ms_malloc((size_t)COST_NMETHODS * R * sizeof(double)), *means = ms_malloc((size_t)T * sizeof(double));
    int rc = 0;
    for (int r = 0; r < R && !rc; r++) {
        if (cancel && atomic_load(cancel)) rc = ms_fail(err, "cancelled");
        else boot_resample(L, &b, seq, r, vals, rk, means);
    }
    if (!rc) {
        for (long i = 0; i < L->norders; i++) {
            ls_row *w = &L->rows[i];
            double lo, hi;
            ls_boot_interval(vals + (size_t)w->id * R, R, LS_BOOT_LEVEL, &lo, &hi);
            w->bar_lo = isnan(lo) ? lo : fmin(lo, w->barrier);
            w->bar_hi = isnan(hi) ? hi : fmax(hi, w->barrier);
        }
        for (int m = 0; m < COST_NMETHODS; m++) {
            ls_boot_interval(rk + (size_t)m * R, R, LS_BOOT_LEVEL, &L->rank_lo[m], &L->rank_hi[m]);
            L->rank_lo[m] = fmin(L->rank_lo[m], L->rank[m]);
            L->rank_hi[m] = fmax(L->rank_hi[m], L->rank[m]);
        }
        L->nseq = S, L->boot_resamples = R, L->boot_unit = unit;
    }
    free(vals);
    free(rk);
    free(means);
    ls_boot_free(&b);
    return rc;
}

int ls_order_units(const moe_model *A, const moe_model *B, const evalset *E, const int *order, int wm,
                       ls_curve *c, ms_err *err) {
    align_opts ao;
    align_opts_default(&ao);
    ao.order_stage = order != NULL, ao.order = order, ao.wm_stage = wm, ao.any_order = 1;
    moe_model Bp;
    align_result res;
    if (align_models(A, B, &ao, &Bp, &res, err)) return -1;
    ls_curve pc;
    int rc = curve_compute(A, &Bp, E, c->T, &pc, err);
    moe_free(&Bp);
    align_result_free(&res);
    if (rc) return -1;
    free(c->seq);
    c->seq = pc.seq, c->nseq = pc.nseq, pc.seq = NULL;
    ls_curve_free(&pc);
    ls_curve_interval(c);
    return 0;
}

int ls_named_intervals(const moe_model *A, const moe_model *B, const evalset *E, int wm, landscape *L,
                       ms_err *err) {
    if (L->naive.seq || L->objective) return 0;
    int rc = ls_order_units(A, B, E, NULL, 0, &L->naive, err);
    if (!rc) rc = ls_order_units(A, B, E, NULL, 1, &L->skip_order, err);
    for (int m = 0; m < COST_NMETHODS && !rc; m++) rc = ls_order_units(A, B, E, L->methods[m].order, wm, &L->methods[m], err);
    if (!rc) L->nseq = L->naive.nseq, L->boot_unit = "samples";
    return rc;
}
