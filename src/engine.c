/* engine.c - the background worker the TUI watches (see engine.h).
 *
 * One worker thread takes the newest request and computes, publishing each
 * piece under the mutex as soon as it is ready:
 *   1. both cost matrices and their assignments (cheap),
 *   2. the curves naive, skip-order, current and selected (align_models +
 *      curve_compute), cached by (order, weight matching) so toggles that
 *      lead to a curve seen before cost nothing,
 *   3. the landscape (landscape_compute), whose rows are published as they
 *      finish. It depends only on (wm_stage, T): a request that keeps those
 *      does not cancel it; its cheap parts are served from the landscape's
 *      progress callback while the landscape goes on. A request that changes
 *      them raises the cancel flag, which landscape_compute polls.
 * Ranks and L-hat of both methods are computed here from the complete rows,
 * so toggling gate centring does not recompute the landscape either. */
#include "engine.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lap.h"

#define CURVE_CACHE 32

typedef struct {
    int used;
    unsigned long stamp;      /* for eviction: least recently used goes */
    int wm;
    int order[LS_MAX_N];
    ls_curve c;
} cached_curve;

struct engine {
    const moe_model *A, *B;
    const evalset *E;
    int n;
    ls_kind kind;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    engine_request pending;
    int has_pending, stop;
    volatile int cancel;
    int in_landscape;         /* the worker is inside landscape_compute */
    int ls_wm, ls_T;          /* ... for this key */
    engine_view pub;          /* what snapshots copy */
    /* worker only */
    cached_curve cache[CURVE_CACHE];
    int cache_T;
    unsigned long stamp;
    int have_ls;              /* the complete landscape below is valid */
    int done_wm, done_T;
    landscape *cur_L;         /* the landscape being computed (for the callbacks) */
    double last_pub;
    double *cost[2];          /* (n, n) each */
    /* ranks from the landscape's on_ranks, before every row is done */
    int have_early;
    int early_wm, early_T;
    int early_order[2][LS_MAX_N];
    int early_rank[2];
    double early_lhat[2];
};

double engine_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void) { return engine_clock(); }

/* ---- publishing (call with mu held) ---- */

static void pub_bump(engine *g) { g->pub.generation++; }

static void curve_assign(ls_curve *dst, const ls_curve *src) {
    /* copy into dst, reusing its buffers */
    double *loss = dst->loss, *acc = dst->acc;
    int T = src->T;
    *dst = *src;
    dst->loss = src->loss ? ms_realloc(loss, (size_t)T * sizeof(double)) : (free(loss), NULL);
    dst->acc = src->acc ? ms_realloc(acc, (size_t)T * sizeof(double)) : (free(acc), NULL);
    if (src->loss) memcpy(dst->loss, src->loss, (size_t)T * sizeof(double));
    if (src->acc) memcpy(dst->acc, src->acc, (size_t)T * sizeof(double));
}

static void status(engine *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void status(engine *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g->mu);
    vsnprintf(g->pub.status, sizeof g->pub.status, fmt, ap);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    va_end(ap);
}

/* Ranks and L-hat of both methods from complete rows (SPEC §5). mu held. */
static void pub_ranks(engine *g) {
    engine_view *p = &g->pub;
    p->rank[0] = p->rank[1] = 0;
    p->l_hat[0] = p->l_hat[1] = NAN;
    p->ranks_early = 0;
    if (!p->have_landscape && g->have_early && p->have_methods && g->early_wm == p->req.wm_stage &&
        g->early_T == p->req.T) {
        /* final ranks before the table is: valid for the orders they were
           computed for (gate centring may have changed since) */
        for (int m = 0; m < 2; m++)
            if (!memcmp(g->early_order[m], p->method_order[m], sizeof(int) * (size_t)g->n)) {
                p->rank[m] = g->early_rank[m];
                p->l_hat[m] = g->early_lhat[m];
                p->ranks_early = 1;
            }
        return;
    }
    if (!p->have_landscape || !p->have_methods || !p->have_naive || p->ndone < 1) return;
    double best = INFINITY;
    for (long k = 0; k < p->ndone; k++)
        if (p->rows[k].barrier < best) best = p->rows[k].barrier;
    for (int m = 0; m < 2; m++) {
        double b = NAN;
        for (long k = 0; k < p->ndone; k++)
            if (!memcmp(p->rows[k].order, p->method_order[m], sizeof(int) * (size_t)g->n)) b = p->rows[k].barrier;
        if (isnan(b)) continue; /* not in a sampled landscape */
        long r = 1;
        for (long k = 0; k < p->ndone; k++) r += p->rows[k].barrier < b;
        p->rank[m] = (int)r;
        double den = p->naive.barrier - best;
        p->l_hat[m] = den > 0 ? 100.0 * (b - best) / den : NAN;
    }
}

/* ---- the cheap parts: costs and curves ---- */

static cached_curve *curve_get(engine *g, const int *order, int wm, int T, ms_err *err) {
    int n = g->n;
    if (g->cache_T != T) {
        for (int i = 0; i < CURVE_CACHE; i++) {
            if (g->cache[i].used) ls_curve_free(&g->cache[i].c);
            g->cache[i].used = 0;
        }
        g->cache_T = T;
    }
    cached_curve *slot = NULL;
    for (int i = 0; i < CURVE_CACHE; i++) {
        cached_curve *c = &g->cache[i];
        if (c->used && c->wm == wm && !memcmp(c->order, order, sizeof(int) * (size_t)n)) {
            c->stamp = ++g->stamp;
            return c;
        }
        /* an unused slot, else the least recently used */
        if (!slot || (slot->used && (!c->used || c->stamp < slot->stamp))) slot = c;
    }
    align_opts ao;
    align_opts_default(&ao);
    ao.order_stage = 1;
    ao.wm_stage = wm;
    ao.order = order;
    moe_model Bp;
    align_result res;
    memset(&res, 0, sizeof res);
    if (align_models(g->A, g->B, &ao, &Bp, &res, err)) return NULL;
    ls_curve cv;
    int rc = curve_compute(g->A, &Bp, g->E, T, &cv, err);
    moe_free(&Bp);
    align_result_free(&res);
    if (rc) return NULL;
    memcpy(cv.order, order, sizeof(int) * (size_t)n);
    if (slot->used) ls_curve_free(&slot->c);
    slot->used = 1;
    slot->wm = wm;
    memcpy(slot->order, order, sizeof slot->order);
    slot->c = cv;
    slot->stamp = ++g->stamp;
    return slot;
}

/* Costs, assignments and curves of q; -1 on error (err) or cancel. */
static int run_cheap(engine *g, const engine_request *q, ms_err *err) {
    int n = g->n, T = q->T;
    pthread_mutex_lock(&g->mu);
    g->pub.req = *q;
    g->pub.busy = 1;
    g->pub.failed = 0;
    g->pub.have_current = 0;
    g->pub.have_selected = 0;
    snprintf(g->pub.status, sizeof g->pub.status, "cost matrices");
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);

    // 1. both cost matrices (n, n) and their assignments
    int order[2][LS_MAX_N];
    double total[2];
    for (int m = 0; m < 2; m++) {
        if (cost_matrix(g->A, g->B, (cost_method)m, q->center, g->cost[m], err)) return -1;
        if (lap_solve(g->cost[m], n, n, 0, order[m], &total[m], err)) return ms_prefix(err, "%s cost", cost_method_name((cost_method)m));
    }
    int id[LS_MAX_N], cur[LS_MAX_N];
    for (int i = 0; i < n; i++) id[i] = i;
    memcpy(cur, q->order_stage ? order[q->method] : id, sizeof cur);
    pthread_mutex_lock(&g->mu);
    memcpy(g->pub.cost, g->cost[q->method], sizeof(double) * (size_t)(n * n));
    memcpy(g->pub.cost_order, order[q->method], sizeof g->pub.cost_order);
    g->pub.cost_total = total[q->method];
    memcpy(g->pub.method_order, order, sizeof order);
    g->pub.have_methods = 1;
    memcpy(g->pub.current_order, cur, sizeof cur);
    pub_ranks(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);

    // 2. curves: naive (identity, no WM), skip-order (identity + WM), current, selected
    struct {
        const int *order;
        int wm;
        ls_curve *dst;
        int *have;
        const char *name;
    } want[4] = {
        {id, 0, &g->pub.naive, &g->pub.have_naive, "naive"},
        {id, 1, &g->pub.skip_order, &g->pub.have_skip, "skip-order"},
        {cur, q->wm_stage, &g->pub.current, &g->pub.have_current, "current"},
        {q->selected, q->wm_stage, &g->pub.selected, &g->pub.have_selected, "selected"},
    };
    for (int k = 0; k < 4; k++) {
        if (k == 3 && !q->has_selected) break;
        if (g->cancel) return ms_fail(err, "cancelled");
        status(g, "curve %s", want[k].name);
        cached_curve *c = curve_get(g, want[k].order, want[k].wm, T, err);
        if (!c) return ms_prefix(err, "%s curve", want[k].name);
        pthread_mutex_lock(&g->mu);
        curve_assign(want[k].dst, &c->c);
        *want[k].have = 1;
        if (k == 0) {
            g->pub.loss_a = c->c.loss[0];
            g->pub.loss_b = c->c.loss[T - 1];
            g->pub.acc_a = c->c.acc ? c->c.acc[0] : NAN;
            g->pub.acc_b = c->c.acc ? c->c.acc[T - 1] : NAN;
        }
        pub_ranks(g);
        pub_bump(g);
        pthread_mutex_unlock(&g->mu);
    }
    return 0;
}

/* ---- the landscape ---- */

static void publish_rows(engine *g, const landscape *L, long done, long total) {
    pthread_mutex_lock(&g->mu);
    engine_view *p = &g->pub;
    if (total > p->rows_cap) {
        p->rows = ms_realloc(p->rows, (size_t)total * sizeof(ls_row));
        p->rows_cap = total;
    }
    if (done > p->ndone) memcpy(p->rows + p->ndone, L->rows + p->ndone, (size_t)(done - p->ndone) * sizeof(ls_row));
    p->ndone = done;
    p->norders = total;
    p->progress = total > 0 ? (double)done / total : 0;
    if (done > 0) p->phase[0] = 0;
    if (p->ranks_early && p->rank[p->req.method] > 0)
        snprintf(p->status, sizeof p->status, "%s order rank %d of %ld; table %ld/%ld", cost_method_name(p->req.method),
                 p->rank[p->req.method], total, done, total);
    else
        snprintf(p->status, sizeof p->status, "computing landscape %ld/%ld", done, total);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    g->last_pub = now_s();
}

/* A newer request that keeps the landscape is served here, between rows. */
static void serve_pending(engine *g) {
    pthread_mutex_lock(&g->mu);
    if (!g->has_pending || g->stop || g->cancel) {
        pthread_mutex_unlock(&g->mu);
        return;
    }
    engine_request q = g->pending;
    g->has_pending = 0;
    pthread_mutex_unlock(&g->mu);
    ms_err err;
    if (run_cheap(g, &q, &err) && !g->cancel) {
        pthread_mutex_lock(&g->mu);
        g->pub.failed = 1;
        snprintf(g->pub.status, sizeof g->pub.status, "%.255s", err.msg);
        pub_bump(g);
        pthread_mutex_unlock(&g->mu);
    }
}

static void on_progress(void *ctx, long done, long total) {
    engine *g = ctx;
    /* rows arrive every ~20 ms; publishing 10 times a second is plenty */
    if (done >= total || now_s() - g->last_pub > 0.1) publish_rows(g, g->cur_L, done, total);
    serve_pending(g);
}

/* The ranks are final long before the table (landscape.h on_ranks). */
static void on_ranks(void *ctx, const landscape *L) {
    engine *g = ctx;
    pthread_mutex_lock(&g->mu);
    g->have_early = 1;
    g->early_wm = g->ls_wm;
    g->early_T = g->ls_T;
    for (int m = 0; m < 2; m++) {
        memcpy(g->early_order[m], L->methods[m].order, sizeof g->early_order[m]);
        /* sampled landscapes (n > 9): ranks among the sample only; leave them
           to the complete rows */
        g->early_rank[m] = g->n <= LS_EXHAUSTIVE_MAX ? L->rank[m] : 0;
        g->early_lhat[m] = L->l_hat[m];
    }
    if (g->n > LS_EXHAUSTIVE_MAX) g->have_early = 0;
    pub_ranks(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
}

static long orders_expected(int n, long nsample) {
    if (n > LS_EXHAUSTIVE_MAX) return nsample;
    long f = 1;
    for (int i = 2; i <= n; i++) f *= i;
    return f;
}

static int run_landscape(engine *g, const engine_request *q, ms_err *err) {
    if (g->have_ls && g->done_wm == q->wm_stage && g->done_T == q->T) return 0;
    g->have_ls = 0;
    ls_opts o;
    ls_opts_default(&o);
    pthread_mutex_lock(&g->mu);
    g->have_early = 0;
    g->pub.ndone = 0;
    g->pub.norders = orders_expected(g->n, o.nsample); /* known before the first row */
    /* landscape_compute says nothing until rows finish (its last phase): the
       pane shows this phase with a spinner meanwhile */
    snprintf(g->pub.phase, sizeof g->pub.phase, "preparing: weight matching of the %d pairs, interpolated experts",
             g->n * g->n);
    g->pub.phase_since = now_s();
    g->pub.have_landscape = 0;
    g->pub.rows_epoch++;
    g->in_landscape = 1;
    g->ls_wm = q->wm_stage;
    g->ls_T = q->T;
    snprintf(g->pub.status, sizeof g->pub.status, "computing landscape");
    pub_ranks(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);

    o.T = q->T;
    o.wm = q->wm_stage;
    o.center = q->center;
    o.cancel = &g->cancel;
    o.progress = on_progress;
    o.on_ranks = on_ranks;
    o.ctx = g;
    landscape L;
    memset(&L, 0, sizeof L);
    g->cur_L = &L;
    g->last_pub = 0;
    int rc = landscape_compute(g->A, g->B, g->E, &o, &L, err);
    g->cur_L = NULL;
    pthread_mutex_lock(&g->mu);
    g->in_landscape = 0;
    g->pub.phase[0] = 0;
    if (rc == 0) {
        /* the final rows are sorted by barrier: publish them all anew */
        engine_view *p = &g->pub;
        if (L.norders > p->rows_cap) {
            p->rows = ms_realloc(p->rows, (size_t)L.norders * sizeof(ls_row));
            p->rows_cap = L.norders;
        }
        memcpy(p->rows, L.rows, (size_t)L.norders * sizeof(ls_row));
        p->ndone = p->norders = L.norders;
        p->rows_epoch++;
        p->have_landscape = 1;
        p->exhaustive = L.exhaustive;
        p->progress = 1;
        pub_ranks(g);
        pub_bump(g);
        g->have_ls = 1;
        g->done_wm = q->wm_stage;
        g->done_T = q->T;
    }
    pthread_mutex_unlock(&g->mu);
    landscape_free(&L);
    return rc;
}

static void *worker(void *arg) {
    engine *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->has_pending && !g->stop) pthread_cond_wait(&g->cv, &g->mu);
        if (g->stop) break;
        engine_request q = g->pending;
        g->has_pending = 0;
        g->cancel = 0;
        pthread_mutex_unlock(&g->mu);
        ms_err err;
        err.msg[0] = 0;
        int rc = run_cheap(g, &q, &err);
        if (rc == 0) rc = run_landscape(g, &q, &err);
        pthread_mutex_lock(&g->mu);
        if (rc == 0) {
            g->pub.busy = g->has_pending;
            if (!g->pub.failed) {
                if (g->pub.have_landscape && g->pub.rank[q.method] > 0)
                    snprintf(g->pub.status, sizeof g->pub.status, "done: %s order rank %d of %ld", cost_method_name(q.method),
                             g->pub.rank[q.method], g->pub.norders);
                else
                    snprintf(g->pub.status, sizeof g->pub.status, "done");
            }
        } else if (g->cancel || g->has_pending) {
            /* superseded: the newer request takes over */
        } else {
            g->pub.busy = 0;
            g->pub.failed = 1;
            snprintf(g->pub.status, sizeof g->pub.status, "%.255s", err.msg);
        }
        pub_bump(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

engine *engine_start(const moe_model *A, const moe_model *B, const evalset *E, ms_err *err) {
    int n = A->cfg.n;
    if (n < 1 || n > LS_MAX_N) {
        ms_fail(err, "%s: %d experts; the explorer handles 1 to %d", A->path ? A->path : "A", n, LS_MAX_N);
        return NULL;
    }
    if (moe_check_compatible(A, B, err)) return NULL;
    engine *g = ms_calloc(1, sizeof *g);
    g->A = A;
    g->B = B;
    g->E = E;
    g->n = n;
    g->kind = ls_kind_of(A, E);
    g->cost[0] = ms_malloc(sizeof(double) * (size_t)(n * n));
    g->cost[1] = ms_malloc(sizeof(double) * (size_t)(n * n));
    g->pub.generation = 1;
    g->pub.n = n;
    g->pub.kind = g->kind;
    g->pub.cost = ms_calloc((size_t)(n * n), sizeof(double));
    g->pub.l_hat[0] = g->pub.l_hat[1] = NAN;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->th, NULL, worker, g)) {
        ms_fail(err, "cannot start the worker thread");
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        engine_view_free(&g->pub);
        free(g->cost[0]);
        free(g->cost[1]);
        free(g);
        return NULL;
    }
    return g;
}

void engine_submit(engine *g, const engine_request *r) {
    pthread_mutex_lock(&g->mu);
    g->pending = *r;
    if (g->pending.T < 2) g->pending.T = 25;
    g->has_pending = 1;
    /* a request that keeps the running landscape does not cancel it */
    if (!(g->in_landscape && g->ls_wm == r->wm_stage && g->ls_T == g->pending.T)) g->cancel = 1;
    g->pub.busy = 1;
    pub_bump(g);
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void copy_curve_if(int have, ls_curve *dst, const ls_curve *src) {
    if (have) curve_assign(dst, src);
}

int engine_snapshot(engine *g, engine_view *v) {
    pthread_mutex_lock(&g->mu);
    const engine_view *p = &g->pub;
    if (v->generation == p->generation) {
        pthread_mutex_unlock(&g->mu);
        return 0;
    }
    /* keep v's buffers, copy the scalars, then the arrays */
    engine_view keep = *v;
    *v = *p;
    v->t = keep.t;
    v->cost = keep.cost;
    v->naive = keep.naive;
    v->skip_order = keep.skip_order;
    v->current = keep.current;
    v->selected = keep.selected;
    v->rows = keep.rows;
    v->rows_cap = keep.rows_cap;
    int T = p->req.T;
    if (T >= 2) {
        v->t = ms_realloc(v->t, (size_t)T * sizeof(double));
        for (int m = 0; m < T; m++) v->t[m] = ls_t(m, T);
    }
    v->T = T;
    v->cost = ms_realloc(v->cost, sizeof(double) * (size_t)(p->n * p->n));
    memcpy(v->cost, p->cost, sizeof(double) * (size_t)(p->n * p->n));
    if (!p->have_methods) {
        free(v->cost);
        v->cost = NULL;
    }
    copy_curve_if(p->have_naive, &v->naive, &p->naive);
    copy_curve_if(p->have_skip, &v->skip_order, &p->skip_order);
    copy_curve_if(p->have_current, &v->current, &p->current);
    copy_curve_if(p->have_selected, &v->selected, &p->selected);
    /* rows: only the new ones when the same epoch just grew */
    long from = keep.rows_epoch == p->rows_epoch && keep.ndone <= p->ndone ? keep.ndone : 0;
    long need = p->norders > p->ndone ? p->norders : p->ndone;
    if (need > v->rows_cap) {
        v->rows = ms_realloc(v->rows, (size_t)need * sizeof(ls_row));
        v->rows_cap = need;
    }
    if (p->ndone > from) memcpy(v->rows + from, p->rows + from, (size_t)(p->ndone - from) * sizeof(ls_row));
    pthread_mutex_unlock(&g->mu);
    return 1;
}

void engine_view_free(engine_view *v) {
    free(v->t);
    free(v->cost);
    free(v->rows);
    ls_curve_free(&v->naive);
    ls_curve_free(&v->skip_order);
    ls_curve_free(&v->current);
    ls_curve_free(&v->selected);
    memset(v, 0, sizeof *v);
}

void engine_stop(engine *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    g->cancel = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->th, NULL);
    for (int i = 0; i < CURVE_CACHE; i++)
        if (g->cache[i].used) ls_curve_free(&g->cache[i].c);
    engine_view_free(&g->pub);
    free(g->cost[0]);
    free(g->cost[1]);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}
