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
#include "core/test_hooks.h"
#include "landscape/bootstrap.h"
#include "landscape/rank.h"
#include "landscape_int.h"

double ls_boot_max_values(const ls_opts *o) {
    if (o->all_error_bars) return (double)LS_BOOT_MAX_VALUES;
    const char *t = test_hook_get(HOOK_BOOT_BOUND);
    return t ? strtod(t, NULL) : (double)LS_BOOT_AUTO_VALUES;
}

int ls_boot_streams(const ls_opts *o) { return o->stream_units || test_hook_get(HOOK_BOOT_STREAM); }

int ls_boot_as_table(double nu) {
    return !test_hook_get(HOOK_BOOT_STREAM) && nu <= (double)LS_JSON_UNITS_MAX;
}

/* The orders' error bars as their per-unit losses come (ls_boot_acc): each
 * order's barriers in every resample are used at once (its interval, and
 * whether it is below each method's in that resample) and forgotten, so memory
 * stays (slots, T, resample block) whatever the number of orders. A row equal
 * to a reference row (the end points A and B, the same for every order of a
 * layer) takes that row's means, computed once, when those fit in one block. */
struct ls_boot_acc {
    ls_boot b;
    int T, rb, nslots;
    long norders;
    const double **ref;  // (T) the reference rows, NULL where none
    double *base;        // (T, R) their means; NULL: none cached
    double *bm;          // (COST_NMETHODS, R): each method's barrier - tau, per resample
    double *scratch;     // (nslots, T rb + R): one order's means, its barriers
    const double **ptr;  // (nslots, 3 T): rows to average, every point's means, the caller's rows
    long *below;         // (nslots, COST_NMETHODS, R): orders below each method's barrier
    double *lo, *hi;     // (norders) by order id
};

ls_boot_acc *ls_boot_acc_new(const landscape *L, int S, const double *const *ref, int nslots) {
    const int R = LS_BOOT_RESAMPLES, T = L->T;
    ls_boot_acc *a = ms_calloc(1, sizeof *a);
    ls_boot_init(&a->b, S, R, LS_BOOT_SEED);
    a->T = T, a->rb = ls_boot_block(&a->b, T), a->nslots = nslots < 1 ? 1 : nslots, a->norders = L->norders;
    a->ref = ms_calloc((size_t)T, sizeof *a->ref);
    if (a->rb == R && ref) { // the reference rows' means: (T, R) in one block
        a->base = ms_malloc((size_t)T * R * sizeof(double));
        for (int m = 0; m < T; m++)
            if (ref[m]) a->ref[m] = ref[m], ls_boot_means(&a->b, &ref[m], 1, 0, R, a->base + (size_t)m * R);
    }
    // every method's barrier in every resample, less the ranks' tolerance (ls_ranks' tau)
    a->bm = ms_malloc((size_t)COST_NMETHODS * R * sizeof(double));
    const double tau = rank_tau(L->naive.barrier);
    for (int m = 0; m < COST_NMETHODS; m++) {
        ls_boot_curve_barriers(&a->b, L->methods[m].seq, T, a->bm + (size_t)m * R);
        for (int r = 0; r < R; r++) a->bm[(size_t)m * R + r] -= tau;
    }
    a->scratch = ms_malloc((size_t)a->nslots * ((size_t)T * a->rb + R) * sizeof(double));
    a->ptr = ms_malloc((size_t)a->nslots * 3 * T * sizeof *a->ptr);
    a->below = ms_calloc((size_t)a->nslots * COST_NMETHODS * R, sizeof(long));
    a->lo = ms_malloc((size_t)(a->norders ? a->norders : 1) * sizeof(double));
    a->hi = ms_malloc((size_t)(a->norders ? a->norders : 1) * sizeof(double));
    return a;
}

const double **ls_boot_acc_rows(ls_boot_acc *a, int slot) { return a->ptr + ((size_t)slot * 3 + 2) * a->T; }

void ls_boot_acc_feed(ls_boot_acc *a, int slot, long id, const double *const *rows) {
    const int T = a->T, S = a->b.S, R = a->b.R;
    double *means = a->scratch + (size_t)slot * ((size_t)T * a->rb + R), *vals = means + (size_t)T * a->rb;
    const double **x = a->ptr + (size_t)slot * 3 * T, **mp = x + T;
    long *below = a->below + (size_t)slot * COST_NMETHODS * R;
    for (int r0 = 0; r0 < R; r0 += a->rb) {
        const int r1 = r0 + a->rb < R ? r0 + a->rb : R, n = r1 - r0;
        int nx = 0;
        for (int m = 0; m < T; m++) {
            const double *row = rows[m], *rf = a->ref[m];
            if (a->base && rf && (row == rf || !memcmp(row, rf, (size_t)S * sizeof(double))))
                mp[m] = a->base + (size_t)m * R;
            else mp[m] = means + (size_t)nx * n, x[nx++] = row;
        }
        ls_boot_means(&a->b, x, nx, r0, r1, means);
        ls_boot_barriers(mp, T, n, vals + r0);
    }
    for (int m = 0; m < COST_NMETHODS; m++)
        for (int r = 0; r < R; r++) below[(size_t)m * R + r] += vals[r] < a->bm[(size_t)m * R + r];
    ls_boot_interval(vals, R, LS_BOOT_LEVEL, &a->lo[id], &a->hi[id]);
}

void ls_boot_acc_finish(const ls_boot_acc *a, landscape *L, const char *unit) {
    const int R = a->b.R;
    for (long i = 0; i < L->norders; i++) {
        ls_row *w = &L->rows[i];
        double l = a->lo[w->id], h = a->hi[w->id];
        w->bar_lo = isnan(l) ? l : fmin(l, w->barrier);
        w->bar_hi = isnan(h) ? h : fmax(h, w->barrier);
    }
    double *rk = ms_malloc((size_t)R * sizeof(double));
    for (int m = 0; m < COST_NMETHODS; m++) {
        for (int r = 0; r < R; r++) {
            long below = 0;
            for (int t = 0; t < a->nslots; t++) below += a->below[((size_t)t * COST_NMETHODS + m) * R + r];
            rk[r] = 1.0 + (double)below;
        }
        ls_boot_interval(rk, R, LS_BOOT_LEVEL, &L->rank_lo[m], &L->rank_hi[m]);
        L->rank_lo[m] = fmin(L->rank_lo[m], L->rank[m]);
        L->rank_hi[m] = fmax(L->rank_hi[m], L->rank[m]);
    }
    free(rk);
    L->nseq = a->b.S, L->boot_resamples = R, L->boot_unit = unit, L->boot_why = NULL;
}

int ls_boot_acc_gather(ls_boot_acc *a, const ls_partition *part, long k0, long k1, ms_err *err) {
    const size_t nb = (size_t)COST_NMETHODS * a->b.R;
    for (int t = 1; t < a->nslots; t++) // this process's slots into slot 0
        for (size_t q = 0; q < nb; q++) a->below[q] += a->below[(size_t)t * nb + q], a->below[(size_t)t * nb + q] = 0;
    // one item per process: its counts (rank 0's in place, first)
    long *all = part->rank ? a->below : ms_malloc((size_t)part->size * nb * sizeof(long));
    if (!part->rank) memcpy(all, a->below, nb * sizeof(long));
    int rc = part->gather(part, a->lo + k0, k0, k1 - k0, a->norders, sizeof(double), err) ||
             part->gather(part, a->hi + k0, k0, k1 - k0, a->norders, sizeof(double), err) ||
             part->gather(part, all, part->rank, 1, part->size, nb * sizeof(long), err);
    if (!rc && !part->rank)
        for (int r = 1; r < part->size; r++)
            for (size_t q = 0; q < nb; q++) a->below[q] += all[(size_t)r * nb + q];
    if (!part->rank) free(all);
    return rc ? -1 : 0;
}

void ls_boot_acc_free(ls_boot_acc *a) {
    if (!a) return;
    ls_boot_free(&a->b);
    free(a->ref);
    free(a->base);
    free(a->bm);
    free(a->scratch);
    free(a->ptr);
    free(a->below);
    free(a->lo);
    free(a->hi);
    free(a);
}

/* ls_boot_landscape's work: the orders in chunks of BOOT_CHUNK to blas_par_for's threads */
#define BOOT_CHUNK 16

typedef struct {
    ls_boot_acc *a;
    const double *seq; // (norders, T, S) by order id
    long norders;
} boot_job;

static void boot_chunk(void *ctx, int c, int slot) {
    boot_job *J = ctx;
    const int T = J->a->T, S = J->a->b.S;
    const double **r = ls_boot_acc_rows(J->a, slot);
    for (long k = (long)c * BOOT_CHUNK; k < (long)(c + 1) * BOOT_CHUNK && k < J->norders; k++) {
        for (int m = 0; m < T; m++) r[m] = J->seq + ((size_t)k * T + m) * S;
        ls_boot_acc_feed(J->a, slot, k, r);
    }
}

int ls_boot_landscape(landscape *L, const double *seq, int S, const char *unit, atomic_int *cancel,
                      ms_err *err) {
    for (int m = 0; m < COST_NMETHODS; m++)
        if (!L->methods[m].seq) return 0;
    const int T = L->T;
    const int chunks = (int)((L->norders + BOOT_CHUNK - 1) / BOOT_CHUNK);
    const int nt = L->nthreads < 1 ? 1 : L->nthreads < chunks ? L->nthreads : chunks;
    const double **ref = ms_malloc((size_t)T * sizeof *ref); // order 0's rows
    for (int m = 0; m < T; m++) ref[m] = seq + (size_t)m * S;
    boot_job J = {.a = ls_boot_acc_new(L, S, ref, nt), .seq = seq, .norders = L->norders};
    free(ref);
    blas_par_for(chunks, nt, boot_chunk, &J, cancel);
    int rc = cancel && atomic_load(cancel) ? ms_fail(err, "cancelled") : 0;
    if (!rc) ls_boot_acc_finish(J.a, L, unit);
    ls_boot_acc_free(J.a);
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
const ls_curve *ls_named_row(const landscape *L, int wm, const int *p) {
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
        const ls_curve *c = ls_named_row(L, wm, p);
        if (c) memcpy(seq + (size_t)k * T * S, c->seq, (size_t)T * S * sizeof(double));
    }
}

int ls_kept_units(const landscape *L, int wm, long id, double *seq) {
    const int T = L->T, S = L->naive.nseq;
    if (!L->order_units || !L->naive.seq || S < 1 || id < 0 || id >= L->norders) return -1;
    int p[LS_MAX_N];
    ls_order_get(L->orders, L->n, id, p);
    const ls_curve *c = ls_named_row(L, wm, p);
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
        if (!L->boot_why) L->boot_why = "every order's per-unit losses would take more than " LS_BOOT_MAX_MB_S " MB";
        return 0;
    }
    if (!L->order_units && L->boot_why && L->norders > LS_BOOT_LAYER_ORDERS) return 0; // the sweep's reason stands
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
    if (L->objective || L->unit_loss || L->boot_resamples) return 0; // an objective's keeps its own; done already
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
