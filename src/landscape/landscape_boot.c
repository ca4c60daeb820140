/* landscape_boot.c - a landscape's error bars: every order's barrier and each
 * method's rank in each bootstrap resample of the evaluation set's units
 * (bootstrap.h), from the per-unit losses at every point: an objective's keeps
 * them as it goes; a layer's fused kernel keeps them when asked
 * (ls_opts.keep_units), else a layer's orders are evaluated again the plain
 * way (curve.c), when they are few. A method's rank in a resample is its rank among the
 * table's orders there, as landscape.rank: 1 + #{orders with a barrier below
 * the method's - tau}. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* c's per-sample losses (no interval): B aligned by order (NULL: identity) and wm, the
 * hidden units matched as method hidden matches them on E's inputs (the landscape's pairs) */
static int order_units_raw(const moe_model *A, const moe_model *B, const evalset *E, const int *order, int wm,
                           cost_method hidden, ls_curve *c, ms_err *err) {
    align_opts ao;
    align_opts_default(&ao);
    ao.order_stage = order != NULL, ao.order = order, ao.wm_stage = wm, ao.any_order = 1;
    ao.method = hidden, ao.X = E->inputs, ao.N = E->N, ao.d = E->d;
    moe_model Bp;
    align_result res;
    if (align_models(A, B, &ao, &Bp, &res, err)) return -1;
    ls_curve pc;
    int rc = curve_compute_units(A, &Bp, E, c->T, &pc, err);
    moe_free(&Bp);
    align_result_free(&res);
    if (rc) return -1;
    free(c->seq);
    c->seq = pc.seq, c->nseq = pc.nseq, pc.seq = NULL;
    ls_curve_free(&pc);
    return 0;
}

int ls_order_units(const moe_model *A, const moe_model *B, const evalset *E, const int *order, int wm,
                   cost_method hidden, ls_curve *c, ms_err *err) {
    if (order_units_raw(A, B, E, order, wm, hidden, c, err)) return -1;
    ls_curve_interval(c);
    return 0;
}

/* the named curve whose order is p and whose values are the sweep's row of p
 * (the sweep takes those rows from the curves): a method's, and with wm,
 * skip-order's (the identity order); NULL when none */
static const ls_curve *named_row(const landscape *L, int wm, const int *p) {
    for (int m = 0; m < COST_NMETHODS; m++)
        if (L->methods[m].seq && !memcmp(p, L->methods[m].order, (size_t)L->n * sizeof(int))) return &L->methods[m];
    if (wm && L->skip_order.seq && !memcmp(p, L->skip_order.order, (size_t)L->n * sizeof(int))) return &L->skip_order;
    return NULL;
}

/* the named curves' orders' rows (their per-sample losses) */
static void named_rows(const landscape *L, int wm, double *seq) {
    const int n = L->n, T = L->T, S = L->naive.nseq;
    for (long k = 0; k < L->norders; k++) {
        int p[LS_MAX_N];
        ls_order_get(L->orders, n, k, p);
        const ls_curve *c = named_row(L, wm, p);
        if (c) memcpy(seq + (size_t)k * T * S, c->seq, (size_t)T * S * sizeof(double));
    }
}

int ls_kept_units(const landscape *L, int wm, long id, double *seq) {
    const int T = L->T, S = L->naive.nseq;
    if (!L->order_units || !L->naive.seq || S < 1 || id < 0 || id >= L->norders) return -1;
    int p[LS_MAX_N];
    ls_order_get(L->orders, L->n, id, p);
    const ls_curve *c = named_row(L, wm, p);
    if (c) {
        memcpy(seq, c->seq, (size_t)T * S * sizeof(double));
        return 0;
    }
    memcpy(seq, L->order_units + (size_t)id * T * S, (size_t)T * S * sizeof(double));
    memcpy(seq, L->naive.seq, (size_t)S * sizeof(double)); // A's, every order's
    if (!L->order_units_end) // B's, every order's
        memcpy(seq + (size_t)(T - 1) * S, L->naive.seq + (size_t)(T - 1) * S, (size_t)S * sizeof(double));
    return 0;
}

/* every order's per-sample losses (norders, T, S) by order id: the sweep's
 * (landscape.order_units) with the end points' rows, A's and B's, from the
 * naive curve's (the same models at t = 0 and 1), and the named curves'
 * orders' from those curves; else evaluated again the plain way, up to
 * LS_BOOT_LAYER_ORDERS; then the intervals */
static double *layer_units(const moe_model *A, const moe_model *B, const evalset *E, int wm, landscape *L,
                           atomic_int *cancel, ms_err *err) {
    int T = L->T, S = L->naive.nseq, n = L->n;
    if (L->order_units) {
        double *seq = L->order_units;
        L->order_units = NULL;
        for (long k = 0; k < L->norders; k++) {
            double *o = seq + (size_t)k * T * S;
            memcpy(o, L->naive.seq, (size_t)S * sizeof(double));
            if (!L->order_units_end)
                memcpy(o + (size_t)(T - 1) * S, L->naive.seq + (size_t)(T - 1) * S, (size_t)S * sizeof(double));
        }
        named_rows(L, wm, seq);
        return seq;
    }
    if (L->norders > LS_BOOT_LAYER_ORDERS) {
        L->boot_why = "more than " LS_BOOT_LAYER_ORDERS_S " orders: a layer's orders are evaluated again one by "
                      "one for their per-sample losses, up to " LS_BOOT_LAYER_ORDERS_S " (--screen K keeps fewer)";
        return NULL;
    }
    double *seq = ms_malloc((size_t)L->norders * T * S * sizeof(double));
    int rc = 0;
    for (long k = 0; k < L->norders && !rc; k++) {
        int p[LS_MAX_N];
        ls_order_get(L->orders, n, k, p);
        if (cancel && atomic_load(cancel)) {
            rc = ms_fail(err, "cancelled");
            break;
        }
        ls_curve c;
        memset(&c, 0, sizeof c);
        c.n = n, c.T = T;
        rc = order_units_raw(A, B, E, p, wm, L->hidden, &c, err);
        if (!rc && c.nseq != S) rc = ms_fail(err, "the per-sample losses of order %ld: %d samples, not %d", k,
                                             c.nseq, S);
        if (!rc) memcpy(seq + (size_t)k * T * S, c.seq, (size_t)T * S * sizeof(double));
        ls_curve_free(&c);
    }
    if (rc) free(seq);
    return rc ? NULL : seq;
}

static int layer_orders(const moe_model *A, const moe_model *B, const evalset *E, int wm, landscape *L,
                        atomic_int *cancel, ms_err *err) {
    int T = L->T, S = L->naive.nseq;
    if (L->ndone < L->norders || S < 1) return 0;
    if ((double)L->norders * T * S * sizeof(double) > LS_BOOT_MAX_MB * 1048576.0) {
        L->boot_why = "every order's per-unit losses would take more than " LS_BOOT_MAX_MB_S " MB";
        return 0;
    }
    L->boot_why = NULL;
    double *seq = layer_units(A, B, E, wm, L, cancel, err);
    if (!seq) return L->boot_why ? 0 : -1; // too many orders to evaluate again, or an error
    int rc = ls_boot_landscape(L, seq, S, "samples", cancel, err);
    if (rc) free(seq);
    else L->unit_loss = seq;
    return rc;
}

int ls_layer_intervals(const moe_model *A, const moe_model *B, const evalset *E, int wm, landscape *L,
                       atomic_int *cancel, ms_err *err) {
    if (L->objective || L->unit_loss) return 0; // an objective's keeps its own; done already
    int rc = 0;
    // the named curves' per-sample losses: the kernel's (ls_opts.keep_units), else the plain way
    if (!L->naive.seq) {
        rc = ls_order_units(A, B, E, NULL, 0, L->hidden, &L->naive, err);
        if (!rc) rc = ls_order_units(A, B, E, NULL, 1, L->hidden, &L->skip_order, err);
        for (int m = 0; m < COST_NMETHODS && !rc; m++)
            rc = ls_order_units(A, B, E, L->methods[m].order, wm, L->hidden, &L->methods[m], err);
        if (rc) return rc;
    }
    L->nseq = L->naive.nseq, L->boot_unit = "samples";
    return layer_orders(A, B, E, wm, L, cancel, err);
}
