/* landscape_screen.c - screening (landscape_screen.h): every order on a subset
 * of the evaluation set, the survivors again on the whole set, and the subset's
 * confidence in the cut. */
#include "landscape/landscape_screen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "align/cost_matrix.h"
#include "core/ms_alloc.h"
#include "landscape_int.h"

int ls_screen_units(int N, const ls_screen_opts *so) {
    int m = so->units > 0 ? so->units : (N + 3) / 4;
    if (m < 2) m = 2;
    return m < N ? m : N;
}

/* append order p (n) to given (cnt rows) unless it is there already */
static void survivor_add(uint8_t *given, long *cnt, int n, const int *p) {
    for (long k = 0; k < *cnt; k++)
        if (ls_order_is(given, n, k, p)) return;
    for (int i = 0; i < n; i++) given[(size_t)*cnt * n + i] = (uint8_t)p[i];
    (*cnt)++;
}

/* The orders the data-driven methods pick on the whole set: they read its
 * inputs, so the subset's may differ; have[m] 0 for the others (data-free:
 * the subset's are the same) and where there are no inputs. */
static int whole_set_orders(const moe_model *A, const moe_model *B, const evalset *E, const ls_opts *full_o,
                            int (*ord)[LS_MAX_N], int *have, ms_err *err) {
    const ls_objective *obj = full_o->objective;
    cost_input in = {.A = A, .B = B, .center = full_o->center, .X = obj ? obj->inputs : E->inputs,
                     .N = obj ? obj->ninputs : E->N, .d = A->cfg.d};
    double *C = ms_malloc((size_t)A->cfg.n * A->cfg.n * sizeof(double)), total;
    int rc = 0;
    for (int m = 0; m < COST_NMETHODS && !rc; m++) {
        have[m] = cost_methods[m].needs == COST_NEEDS_EVALSET && in.X && in.N > 0;
        if (have[m]) rc = cost_matrix_in((cost_method)m, &in, C, err) || align_order(&A->cfg, C, ord[m], &total, err);
    }
    free(C);
    return rc ? -1 : 0;
}

/* the survivors: the best keep on the subset, every method's order (on the
 * subset, and on the whole set where have[m]), the identity */
static uint8_t *survivors(const landscape *sub, int keep, int (*whole)[LS_MAX_N], const int *have, long *cnt) {
    int n = sub->n, p[LS_MAX_N];
    uint8_t *given = ms_malloc(((size_t)keep + 2 * COST_NMETHODS + 1) * n);
    *cnt = 0;
    for (long r = 0; r < keep && r < sub->norders; r++) {
        ls_order_get(sub->orders, n, sub->rows[r].id, p);
        survivor_add(given, cnt, n, p);
    }
    for (int m = 0; m < COST_NMETHODS; m++) survivor_add(given, cnt, n, sub->methods[m].order);
    for (int m = 0; m < COST_NMETHODS; m++)
        if (have[m]) survivor_add(given, cnt, n, whole[m]);
    for (int i = 0; i < n; i++) p[i] = i;
    survivor_add(given, cnt, n, p);
    return given;
}

/* the subset's curve of an order that is not among its rows: a method's, or
 * the identity's (the skip-order curve with weight matching, else the naive) */
static const ls_curve *sub_named(const landscape *sub, const uint8_t *order, int wm) {
    int n = sub->n, p[LS_MAX_N];
    for (int i = 0; i < n; i++) p[i] = order[i];
    for (int m = 0; m < COST_NMETHODS; m++)
        if (!memcmp(p, sub->methods[m].order, (size_t)n * sizeof(int))) return &sub->methods[m];
    return wm ? &sub->skip_order : &sub->naive;
}

static int row_cmp(const void *a, const void *b) {
    const ls_screen_row *x = a, *y = b;
    int fx = x->full_id >= 0, fy = y->full_id >= 0;
    if (fx != fy) return fy - fx; // the whole set's rows first
    double u = fx ? x->bar : x->sub_bar, v = fx ? y->bar : y->sub_bar;
    if (isnan(u) || isnan(v)) return isnan(u) - isnan(v);
    if (u != v) return (u > v) - (u < v);
    return (x->sub_bar > y->sub_bar) - (x->sub_bar < y->sub_bar);
}

/* 1 + the subset's rows with a barrier below b (sub's rows sorted, NaN last) */
static long sub_rank_of(const landscape *sub, double b) {
    long lo = 0, hi = sub->norders;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (sub->rows[mid].barrier < b) lo = mid + 1;
        else hi = mid;
    }
    return lo + 1;
}

/* a row's whole-set values when it survived */
static void fill_full(ls_screen *S, ls_screen_row *w, const uint8_t *given, long ng, const long *full_row) {
    int n = S->sub.n, p[LS_MAX_N];
    for (int i = 0; i < n; i++) p[i] = w->order[i];
    w->full_id = -1;
    w->bar = w->bar_lo = w->bar_hi = NAN;
    for (long k = 0; k < ng; k++)
        if (ls_order_is(given, n, k, p)) w->full_id = k;
    if (w->full_id < 0) return;
    const ls_row *r = &S->full.rows[full_row[w->full_id]];
    w->bar = r->barrier;
    if (S->full.boot_resamples) w->bar_lo = r->bar_lo, w->bar_hi = r->bar_hi;
}

/* every subset row, then the survivors the subset has no row for */
static void build_rows(ls_screen *S, const uint8_t *given, long ng, int wm) {
    landscape *sub = &S->sub;
    int n = sub->n;
    long *full_row = ms_malloc((size_t)ng * sizeof(long));
    for (long r = 0; r < S->full.norders; r++) full_row[S->full.rows[r].id] = r;
    S->rows = ms_calloc((size_t)sub->norders + ng, sizeof(ls_screen_row));
    for (long r = 0; r < sub->norders; r++) {
        ls_screen_row *w = &S->rows[S->nrows++];
        const ls_row *x = &sub->rows[r];
        w->order = sub->orders + (size_t)x->id * n;
        w->sub_bar = x->barrier;
        w->sub_lo = sub->boot_resamples ? x->bar_lo : NAN;
        w->sub_hi = sub->boot_resamples ? x->bar_hi : NAN;
        w->sub_rank = sub_rank_of(sub, x->barrier);
        fill_full(S, w, given, ng, full_row);
    }
    for (long k = 0; k < ng; k++) {
        int p[LS_MAX_N];
        ls_order_get(given, n, k, p);
        if (ls_rows_find(sub->rows, sub->norders, sub->orders, n, p) >= 0) continue;
        ls_screen_row *w = &S->rows[S->nrows++];
        const ls_curve *c = sub_named(sub, given + (size_t)k * n, wm);
        w->order = S->full.orders + (size_t)k * n;
        w->sub_bar = c->barrier, w->sub_lo = c->bar_lo, w->sub_hi = c->bar_hi;
        w->sub_rank = sub_rank_of(sub, c->barrier);
        fill_full(S, w, given, ng, full_row);
    }
    free(full_row);
    qsort(S->rows, (size_t)S->nrows, sizeof(ls_screen_row), row_cmp);
}

/* a layer's subset intervals: the survivors and the next keep orders on the
 * subset, from the per-sample losses the subset's sweep kept (ls_kept_units),
 * else evaluated again the plain way */
static int layer_intervals(ls_screen *S, const moe_model *A, const moe_model *B, const evalset *E_sub,
                           const ls_opts *o, ms_err *err) {
    const landscape *sub = &S->sub;
    int n = sub->n, N = sub->naive.nseq;
    long extra = 0;
    for (long i = 0; i < S->nrows; i++) {
        ls_screen_row *w = &S->rows[i];
        if (!isnan(w->sub_lo) || (w->full_id < 0 && extra++ >= S->keep)) continue;
        if (o->cancel && atomic_load(o->cancel)) return ms_fail(err, "cancelled");
        int p[LS_MAX_N];
        for (int k = 0; k < n; k++) p[k] = w->order[k];
        ls_curve c;
        memset(&c, 0, sizeof c);
        c.n = n, c.T = sub->T;
        c.barrier = w->sub_bar; // the interval is widened to hold the table's barrier
        // a subset row's order: its id among the subset's orders
        long id = w->order >= sub->orders && w->order < sub->orders + (size_t)sub->norders * n
                      ? (long)((w->order - sub->orders) / n) : -1;
        int rc = 0;
        if (id >= 0 && sub->order_units) {
            c.seq = ms_malloc((size_t)c.T * N * sizeof(double));
            c.nseq = N;
            if (ls_kept_units(sub, o->wm, id, c.seq)) free(c.seq), c.seq = NULL, c.nseq = 0;
            else ls_curve_interval(&c);
        }
        if (!c.seq) rc = ls_order_units(A, B, E_sub, p, o->wm, o->hidden, &c, err);
        if (!rc) w->sub_lo = c.bar_lo, w->sub_hi = c.bar_hi;
        ls_curve_free(&c);
        if (rc) return -1;
    }
    return 0;
}

/* orders whose subset interval overlaps that of the subset's best */
static void overlaps(ls_screen *S) {
    const ls_screen_row *best = NULL;
    for (long i = 0; i < S->nrows; i++)
        if (!best || S->rows[i].sub_bar < best->sub_bar) best = &S->rows[i];
    for (long i = 0; i < S->nrows; i++) {
        ls_screen_row *w = &S->rows[i];
        w->undistinguished = -1;
        if (isnan(w->sub_lo) || !best || isnan(best->sub_hi)) continue;
        w->undistinguished = w->sub_lo <= best->sub_hi;
        S->with_ci++;
        S->undistinguished += w->undistinguished;
        S->undistinguished_out += w->undistinguished && w->full_id < 0;
    }
}

int landscape_screen(const moe_model *A, const moe_model *B, const evalset *E_sub, const evalset *E,
                     const ls_opts *sub_o, const ls_opts *full_o, const ls_screen_opts *so, ls_screen *S,
                     ms_err *err) {
    memset(S, 0, sizeof *S);
    S->keep = so->keep;
    if (sub_o->part || full_o->part)
        return ms_fail(err, "screening runs in one process (not split over moescope-mpi's)");
    int whole[COST_NMETHODS][LS_MAX_N], have[COST_NMETHODS];
    if (whole_set_orders(A, B, E, full_o, whole, have, err)) return -1;
    // a layer's subset keeps its orders' per-sample losses (the subset intervals,
    // layer_intervals) and the survivors theirs (ls_layer_intervals), when they fit
    ls_opts so2 = *sub_o;
    so2.keep_units = !sub_o->objective;
    if (landscape_compute(A, B, E_sub, &so2, &S->sub, err)) return -1;
    long ng;
    uint8_t *given = survivors(&S->sub, so->keep, whole, have, &ng);
    ls_opts fo = *full_o;
    fo.given = given, fo.ngiven = ng;
    fo.keep_units = !full_o->objective;
    int rc = landscape_compute(A, B, E, &fo, &S->full, err);
    if (!rc) {
        build_rows(S, given, ng, sub_o->wm);
        if (!sub_o->objective) rc = layer_intervals(S, A, B, E_sub, sub_o, err);
        free(S->sub.order_units); // read: up to LS_BOOT_MAX_MB
        S->sub.order_units = NULL;
    }
    free(given);
    if (rc) {
        ls_screen_free(S);
        return -1;
    }
    overlaps(S);
    S->units = sub_o->objective ? sub_o->objective->nseq : E_sub->N;
    S->total_units = full_o->objective ? full_o->objective->nseq : E->N;
    S->unit = sub_o->objective ? sub_o->objective->unit : E->row_unit ? E->row_unit : "samples";
    return 0;
}

void ls_screen_free(ls_screen *S) {
    landscape_free(&S->sub);
    landscape_free(&S->full);
    free(S->rows);
    memset(S, 0, sizeof *S);
}
