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
#include "core/blas_threads.h"
#include "landscape/bootstrap.h"
#include "landscape_int.h"

/* The orders go in chunks of up to BOOT_CHUNK to blas_par_for's threads; each
 * order's barriers in every resample are used at once (its interval, and whether
 * it is below each method's in that resample) and forgotten, so memory stays
 * (threads, chunk, T, resample block) whatever the number of orders. A row equal
 * to order 0's (the end points A and B, the same for every order of a layer)
 * takes order 0's means, computed once, when those fit in one block. */
#define BOOT_CHUNK 16

typedef struct {
    const landscape *L;
    const ls_boot *b;
    int rb, ck;          // resamples per block, orders per chunk
    const double *seq;   // (norders, T, S) by order id
    const double *base;  // (T, R): order 0's rows' means; NULL: no row shared
    const double *bm;    // (COST_NMETHODS, R): each method's barrier - tau, per resample
    double *scratch;     // (slots, ck T rb + ck R): the block's means, the chunk's barriers
    const double **ptr;  // (slots, 2 ck T): rows to average, every point's means
    long *below;         // (slots, COST_NMETHODS, R): orders below each method's barrier
    double *lo, *hi;     // (norders) by order id
} boot_job;

static size_t boot_slot_doubles(const boot_job *J) {
    return (size_t)J->ck * J->L->T * J->rb + (size_t)J->ck * J->b->R;
}

static void boot_chunk(void *ctx, int c, int slot) {
    boot_job *J = ctx;
    const landscape *L = J->L;
    const int T = L->T, S = J->b->S, R = J->b->R, ck = J->ck;
    const long k0 = (long)c * ck, k1 = k0 + ck < L->norders ? k0 + ck : L->norders;
    double *means = J->scratch + (size_t)slot * boot_slot_doubles(J), *vals = means + (size_t)ck * T * J->rb;
    const double **x = J->ptr + (size_t)slot * 2 * ck * T, **mp = x + (size_t)ck * T;
    long *below = J->below + (size_t)slot * COST_NMETHODS * R;
    for (int r0 = 0; r0 < R; r0 += J->rb) {
        const int r1 = r0 + J->rb < R ? r0 + J->rb : R, n = r1 - r0;
        int nx = 0;
        for (long k = k0; k < k1; k++)
            for (int m = 0; m < T; m++) {
                const double *row = J->seq + ((size_t)k * T + m) * S;
                if (J->base && !memcmp(row, J->seq + (size_t)m * S, (size_t)S * sizeof(double)))
                    mp[(k - k0) * T + m] = J->base + (size_t)m * R;
                else mp[(k - k0) * T + m] = means + (size_t)nx * n, x[nx++] = row;
            }
        ls_boot_means(J->b, x, nx, r0, r1, means);
        for (long k = k0; k < k1; k++) ls_boot_barriers(mp + (k - k0) * T, T, n, vals + (k - k0) * R + r0);
    }
    for (long k = k0; k < k1; k++) {
        double *v = vals + (k - k0) * R;
        for (int m = 0; m < COST_NMETHODS; m++)
            for (int r = 0; r < R; r++) below[(size_t)m * R + r] += v[r] < J->bm[(size_t)m * R + r];
        ls_boot_interval(v, R, LS_BOOT_LEVEL, &J->lo[k], &J->hi[k]);
    }
}

int ls_boot_landscape(landscape *L, const double *seq, int S, const char *unit, atomic_int *cancel,
                      ms_err *err) {
    for (int m = 0; m < COST_NMETHODS; m++)
        if (!L->methods[m].seq) return 0;
    const int R = LS_BOOT_RESAMPLES, T = L->T;
    ls_boot b;
    ls_boot_init(&b, S, R, LS_BOOT_SEED);
    boot_job J = {.L = L, .b = &b, .seq = seq, .rb = ls_boot_block(&b, T)};
    double fit = LS_BOOT_BLOCK_MB * 1048576.0 / ((double)T * J.rb * sizeof(double));
    J.ck = fit >= BOOT_CHUNK ? BOOT_CHUNK : fit >= 1 ? (int)fit : 1;
    const int chunks = (int)((L->norders + J.ck - 1) / J.ck), nt = L->nthreads < 1 ? 1 : L->nthreads < chunks ? L->nthreads : chunks;
    double *base = NULL, *bm = ms_malloc((size_t)COST_NMETHODS * R * sizeof(double));
    if (J.rb == R) { // order 0's rows' means: (T, R) in one block
        const double **x = ms_malloc((size_t)T * sizeof *x);
        for (int m = 0; m < T; m++) x[m] = seq + (size_t)m * S;
        base = ms_malloc((size_t)T * R * sizeof(double));
        ls_boot_means(&b, x, T, 0, R, base);
        free(x);
    }
    for (int m = 0; m < COST_NMETHODS; m++) {
        ls_boot_curve_barriers(&b, L->methods[m].seq, T, bm + (size_t)m * R);
        for (int r = 0; r < R; r++) bm[(size_t)m * R + r] -= L->tau;
    }
    J.base = base, J.bm = bm;
    J.lo = ms_malloc((size_t)L->norders * sizeof(double)), J.hi = ms_malloc((size_t)L->norders * sizeof(double));
    J.scratch = ms_malloc((size_t)nt * boot_slot_doubles(&J) * sizeof(double));
    J.ptr = ms_malloc((size_t)nt * 2 * J.ck * T * sizeof *J.ptr);
    J.below = ms_calloc((size_t)nt * COST_NMETHODS * R, sizeof(long));
    blas_par_for(chunks, nt, boot_chunk, &J, cancel);
    int rc = cancel && atomic_load(cancel) ? ms_fail(err, "cancelled") : 0;
    if (!rc) {
        for (long i = 0; i < L->norders; i++) {
            ls_row *w = &L->rows[i];
            double l = J.lo[w->id], h = J.hi[w->id];
            w->bar_lo = isnan(l) ? l : fmin(l, w->barrier);
            w->bar_hi = isnan(h) ? h : fmax(h, w->barrier);
        }
        double *rk = ms_malloc((size_t)R * sizeof(double));
        for (int m = 0; m < COST_NMETHODS; m++) {
            for (int r = 0; r < R; r++) {
                long below = 0;
                for (int t = 0; t < nt; t++) below += J.below[((size_t)t * COST_NMETHODS + m) * R + r];
                rk[r] = 1.0 + (double)below;
            }
            ls_boot_interval(rk, R, LS_BOOT_LEVEL, &L->rank_lo[m], &L->rank_hi[m]);
            L->rank_lo[m] = fmin(L->rank_lo[m], L->rank[m]);
            L->rank_hi[m] = fmax(L->rank_hi[m], L->rank[m]);
        }
        free(rk);
        L->nseq = S, L->boot_resamples = R, L->boot_unit = unit;
    }
    free(base);
    free(bm);
    free(J.lo);
    free(J.hi);
    free(J.scratch);
    free(J.ptr);
    free(J.below);
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
