/* explore_worker.c - the background workers the TUI watches (see explore_worker.h).
 *
 * Two threads, so that a toggle is answered while the landscape computes:
 *   front      takes the newest request and computes its cheap parts,
 *              publishing each under the mutex as soon as it is ready:
 *              1. both cost matrices and their assignments,
 *              2. the curves naive, skip-order, current and selected
 *                 (align_models + curve_compute), cached by (order, weight
 *                 matching) so toggles that lead to a curve seen before cost
 *                 nothing.
 *              A newer request cancels the running one (polled between steps).
 *   landscape  computes the landscape (landscape_compute) for the key
 *              (wm_stage, T) of the last request the front finished, and
 *              publishes its rows as they finish. Requests that keep the key
 *              leave it running; one that changes it cancels it (the cancel
 *              flag landscape_compute polls).
 *   diag       computes the diagnostics pane's findings (diag_findings) when
 *              explore_request_diag asks, once per (method, centring): kept
 *              and published again at once when asked again; and writes the
 *              aligned checkpoint explore_export asks for (align_models +
 *              moe_save take seconds on a large layer: never the input thread).
 * Ranks and L-hat of both methods are computed here from the complete rows
 * (or taken from the landscape's on_ranks, which come long before the last
 * row), so toggling gate centring does not recompute the landscape either. */
#include "explore/explore_worker.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/outputs.h"
#include "align/lap.h"
#include "analysis/subject.h"
#include "core/progress.h"
#include "io/model_io.h"
#include "landscape/rank.h"
#include "network/net_landscape.h"

#define CURVE_CACHE 32

/* What a landscape table depends on: the weight-matching stage, the points,
 * and how every pair's hidden units are matched: by the method's own matching
 * where it has one (activation, align_match_hidden), else weight matching, as
 * the current curve's alignment matches them (gate centring and the other
 * methods only change which rows are marked). */
typedef struct {
    int wm; /* 0 or 1 */
    int T;
    cost_method hidden; /* ls_opts.hidden: COST_EXPERT for weight matching */
} ls_key;

static ls_key key_of(const explore_request *q) {
    return (ls_key){q->wm_stage ? 1 : 0, q->T, cost_methods[q->method].match_hidden ? q->method : COST_EXPERT};
}
static int ls_key_equal(ls_key a, ls_key b) { return a.wm == b.wm && a.T == b.T && a.hidden == b.hidden; }
/* the kept tables' slot of key k: per weight-matching stage and hidden matching */
#define LS_SLOTS 4
static int ls_slot(ls_key k) { return k.wm + 2 * (k.hidden != COST_EXPERT); }

typedef struct {
    int used;
    unsigned long stamp;      /* for eviction: least recently used goes */
    int wm, var;              /* var: the objective's variant (LS_VAR_*) */
    cost_method hidden;       /* how the hidden units were matched (ls_key.hidden) */
    int order[LS_MAX_N];
    ls_curve c;
} cached_curve;

struct explore_worker {
    const moe_model *A, *B;
    const evalset *E;             /* the layer's evaluation set; a network's: the block's inputs (diagnostics) */
    const ls_objective *obj;      /* a network's loss for the curves and the landscape, NULL: E's */
    int n;
    ls_kind kind;
    pthread_t th_front, th_ls, th_diag;
    int started_front, started_ls, started_diag;
    pthread_mutex_t mu;
    pthread_cond_t cv_front, cv_ls, cv_diag;
    pthread_cond_t cv_costs;  /* the front's cost matrices published, or its request ended */
    /* under mu */
    int stop;
    explore_snapshot pub;          /* what snapshots copy */
    /* front: the newest request */
    explore_request pending;
    int has_pending, front_busy, front_failed;
    atomic_int cancel_front;       /* set by the front (newer request, quit), polled by the worker */
    char front_status[256];
    /* landscape: the key wanted, the key running, the key done */
    int ls_want, want_center;
    int all_error_bars;       /* ls_opts.all_error_bars for the landscapes (mu) */
    ls_key want;
    int ls_running;
    ls_key run;
    long run_done, run_total;  /* the running landscape's rows (for keep_running) */
    /* the running landscape is for a key no longer shown: it finishes in the
       background (kept in saved[]) and publishes nothing; toggling back shows it again */
    int ls_hidden;
    atomic_int cancel_ls;
    atomic_int cancel_diag;   /* explore_stop: the diagnostics stop (an export runs to its end) */
    int have_ls;
    ls_key done;
    int ls_failed;
    char ls_status[256];
    ls_key rows_key;          /* the key pub.rows belong to */
    unsigned long run_serial; /* counts the landscapes started (and saved tables shown) */
    unsigned long orders_run; /* the run_serial pub.orders came from */
    double extra_bar[EXPLORE_EXTRA_MAX]; /* the published extra rows' barriers (pub_extra_rows) */
    /* complete tables kept per (weight-matching stage, hidden matching): toggling w or m back
       costs nothing (40320 rows are 3.5 MB) */
    struct {
        ls_row *rows;         /* NULL until one is complete */
        uint8_t *orders;      /* (n, g->n) their orders */
        long n;
        ls_key key;
        int exhaustive, ci_units;
        const char *ci_why;
    } saved[LS_SLOTS];
    /* front thread only */
    cached_curve cache[CURVE_CACHE];
    int cache_T;
    unsigned long stamp;
    double *cost[COST_NMETHODS]; /* (n, n) each */
    double *cost_expert;         /* (n, n) the expert cost once the front has it (mu; NULL before) */
    /* landscape thread only */
    landscape *cur_L;         /* the landscape being computed (for the callbacks) */
    double last_pub;
    /* ranks from the landscape's on_ranks, before every row is done (mu) */
    int have_early;
    ls_key early;
    int early_order[COST_NMETHODS][LS_MAX_N];
    int early_rank[COST_NMETHODS], early_tied[COST_NMETHODS], early_rank_auc[COST_NMETHODS];
    double early_lhat[COST_NMETHODS];
    double early_pct[COST_NMETHODS][4]; /* pct, pct_lo, pct_hi, rank_est */
    /* each finished landscape's own method curves (a sample need not hold the
       method orders among its rows), per kept table slot (mu) */
    struct fin_curves {
        int valid;
        ls_key key;
        int order[COST_NMETHODS][LS_MAX_N];
        double bar[COST_NMETHODS], auc[COST_NMETHODS];
    } fin[LS_SLOTS];
    /* diagnostics (mu): the newest ask, and the results per [method][center] */
    int diag_want, diag_want_m, diag_want_c;
    int diag_have[COST_NMETHODS][2], diag_fail[COST_NMETHODS][2];
    dg_list diag_res[COST_NMETHODS][2];
    char diag_err[COST_NMETHODS][2][256];
    /* a network (explore_start_net): its objective and the block's own inputs,
       prepared on the prep thread before the curves; prep_state under mu */
    net_objective *prep_no;
    net_model *prep_net, *prep_net_b; /* A and B: their backbones' values read here when not yet */
    int prep_same;            /* their backbones are equal: B's pointers into A's values */
    const net_evalset *prep_set;
    int prep_block, prep_state;
    pthread_t th_prep;
    int started_prep;
    atomic_int cancel_prep;   /* explore_stop only: a toggle never restarts the preparation */
    char prep_err[256];
    evalset own_E;            /* the block's own inputs, g->E once they are in */
    /* the shown block in floats (block_ready, the front's first step): until then A and B
       may be shells or mapped, and nothing reads their weights; block_state under mu */
    int block_state;
    char block_err[256];
    moe_model own_a, own_b;   /* a mapped block's floats, then g->A and g->B */
    /* front only: the pending block's weights where the files keep them (block_views),
       for its data-free costs before the floats; views_tried: 1 once looked for */
    moe_model view_a, view_b;
    const moe_model *va, *vb;
    int views_tried;
    char prep_step[64];       /* prep thread only: its current step, and when it began */
    double prep_t0;
    char front_what[48];      /* front thread only: the curve in flight, and its evaluation's start */
    double front_t0, ls_t0;   /* ... and the landscape thread's evaluation's start */
    /* the aligned-checkpoint export asked for (mu), run on the diag thread */
    int export_want;
    explore_request export_req;
    char export_path[512];
};

double explore_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void) { return explore_clock(); }

enum { PREP_NONE = 0, PREP_RUNNING, PREP_READY, PREP_FAILED };
enum { BLOCK_READY = 0, BLOCK_PENDING, BLOCK_FAILED };

/* "rows 512/8192, 0:42 left" of an evaluation begun at t0 (rows the evaluator
 * reported, NET_EVAL_ROWS); "MiB 120/340, 0:02 left" of a backbone's values */
static void count_text(char *buf, size_t cap, const char *unit, double done, double total, double t0) {
    double el = now_s() - t0, left = done > 0 ? el / done * (total - done) : -1;
    if (left >= 0 && left < 360000)
        snprintf(buf, cap, "%s %.0f/%.0f, %ld:%02ld left", unit, done, total, (long)left / 60, (long)left % 60);
    else
        snprintf(buf, cap, "%s %.0f/%.0f", unit, done, total);
}

static void rows_text(char *buf, size_t cap, double done, double total, double t0) {
    count_text(buf, cap, "rows", done, total, t0);
}

/* ---- publishing (call with mu held) ---- */

static void pub_bump(explore_worker *g) { g->pub.generation++; }

static void curve_assign(ls_curve *dst, const ls_curve *src) {
    /* copy into dst, reusing its buffers */
    double *loss = dst->loss, *acc = dst->acc, *seq = dst->seq;
    int T = src->T;
    size_t sq = (size_t)T * src->nseq * sizeof(double);
    *dst = *src;
    dst->loss = src->loss ? ms_realloc(loss, (size_t)T * sizeof(double)) : (free(loss), NULL);
    dst->acc = src->acc ? ms_realloc(acc, (size_t)T * sizeof(double)) : (free(acc), NULL);
    dst->seq = src->seq ? ms_realloc(seq, sq) : (free(seq), NULL);
    if (src->loss) memcpy(dst->loss, src->loss, (size_t)T * sizeof(double));
    if (src->acc) memcpy(dst->acc, src->acc, (size_t)T * sizeof(double));
    if (src->seq) memcpy(dst->seq, src->seq, sq);
}

/* busy, failed and status from both threads' states. mu held. */
static void pub_status(explore_worker *g) {
    explore_snapshot *p = &g->pub;
    p->busy = g->front_busy || g->has_pending || g->ls_running || g->ls_want || g->prep_state == PREP_RUNNING;
    p->failed = 0;
    if (g->prep_state == PREP_FAILED) {
        p->failed = 1;
        snprintf(p->status, sizeof p->status, "%s", g->prep_err);
    } else if (g->prep_state == PREP_RUNNING && !g->front_failed) {
        snprintf(p->status, sizeof p->status, "preparing the network: %s", p->prep);
    } else if (g->front_failed) {
        p->failed = 1;
        snprintf(p->status, sizeof p->status, "%s", g->front_status);
    } else if (g->front_busy || g->has_pending) {
        snprintf(p->status, sizeof p->status, "%s", g->front_status);
    } else if (g->ls_failed) {
        p->failed = 1;
        snprintf(p->status, sizeof p->status, "%s", g->ls_status);
    } else if (g->ls_running || g->ls_want) {
        snprintf(p->status, sizeof p->status, "%s", g->ls_status);
    } else if (!p->req.order_stage) {
        /* the method's rank would describe an order that is not in use */
        snprintf(p->status, sizeof p->status, "done: order stage off (identity order)");
    } else if (p->have_landscape && p->rank[p->req.method] > 0 && !p->exhaustive) {
        int m = p->req.method; // a sample: the percentile with its interval
        snprintf(p->status, sizeof p->status, "done: %s order at percentile %.2f%% (95%% CI %.2f..%.2f%%) of %ld sampled orders",
                 cost_method_name(m), p->pct[m], p->pct_lo[m], p->pct_hi[m], p->ndone);
    } else if (p->have_landscape && p->rank[p->req.method] > 0) {
        int m = p->req.method;
        if (p->tied[m] > 1) // rank.h: orders within tau of the chosen barrier are ties
            snprintf(p->status, sizeof p->status, "done: %s order rank %d of %ld (tied: %d; by AUC %d)",
                     cost_method_name(m), p->rank[m], p->norders, p->tied[m], p->rank_auc[m]);
        else
            snprintf(p->status, sizeof p->status, "done: %s order rank %d of %ld", cost_method_name(m),
                     p->rank[m], p->norders);
    } else {
        snprintf(p->status, sizeof p->status, "done");
    }
}

static void front_status(explore_worker *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void front_status(explore_worker *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&g->mu);
    vsnprintf(g->front_status, sizeof g->front_status, fmt, ap);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    va_end(ap);
}

/* The barrier and AUC of method m's order for the shown table: its row, else
 * (a sampled table need not hold it) the landscape's own curve of that order,
 * else the front's current curve when it is that order. mu held. */
static int method_barrier(explore_worker *g, int m, double *b, double *auc) {
    explore_snapshot *p = &g->pub;
    const int *o = p->method_order[m];
    long k = ls_rows_find(p->rows, p->ndone, p->orders, g->n, o);
    if (k >= 0) {
        *b = p->rows[k].barrier, *auc = p->rows[k].auc;
        return 1;
    }
    const struct fin_curves *f = &g->fin[ls_slot(g->rows_key)];
    for (int q = 0; q < COST_NMETHODS; q++)
        if (f->valid && ls_key_equal(f->key, g->rows_key) && !memcmp(f->order[q], o, sizeof(int) * (size_t)g->n)) {
            *b = f->bar[q], *auc = f->auc[q];
            return 1;
        }
    if (p->have_current && p->req.order_stage && p->req.method == (cost_method)m &&
        ls_key_equal(key_of(&p->req), g->rows_key) && !memcmp(p->current_order, o, sizeof(int) * (size_t)g->n)) {
        *b = p->current.barrier, *auc = p->current.auc;
        return 1;
    }
    return 0;
}

/* Method m's percentile with its 95 % interval and estimated rank, from its rank
 * among the table's ndone rows (sampled: an estimate, exhaustive: exact). mu held. */
static void pub_estimate(explore_snapshot *p, int m) {
    double ph = (double)(p->rank[m] - 1) / (double)p->ndone;
    p->pct[m] = 100.0 * ph;
    if (p->exhaustive) {
        p->pct_lo[m] = p->pct_hi[m] = p->pct[m];
        p->rank_est[m] = p->rank[m];
        return;
    }
    rank_wilson95(ph, (double)p->ndone, &p->pct_lo[m], &p->pct_hi[m]);
    p->pct_lo[m] *= 100.0;
    p->pct_hi[m] *= 100.0;
    p->rank_est[m] = ph > 0 ? 1.0 + ph * p->orders_in_set : 1.0;
}

static void pub_ranks_of(explore_worker *g);
static void pub_extra_rows(explore_worker *g);

/* the ranks, then the extra rows (they need the methods' barriers). mu held. */
static void pub_ranks(explore_worker *g) {
    pub_ranks_of(g);
    pub_extra_rows(g);
}

/* The extra rows (explore_snapshot.nextra): each method's order the sample
 * lacks, then the identity, with its barrier where known; written after the
 * sample's rows (they move as rows come in), the epochs bumped when they
 * change. mu held. */
static void pub_extra_rows(explore_worker *g) {
    explore_snapshot *p = &g->pub;
    int n = g->n, id[LS_MAX_N], cnt = 0;
    ls_row ex[EXPLORE_EXTRA_MAX];
    const int *ord[EXPLORE_EXTRA_MAX];
    for (int i = 0; i < n; i++) id[i] = i;
    const ls_curve *ic = p->req.wm_stage ? (p->have_skip ? &p->skip_order : NULL) : (p->have_naive ? &p->naive : NULL);
    for (int q = 0; q < EXPLORE_EXTRA_MAX && !p->exhaustive && p->orders && p->ndone > 0; q++) {
        int meth = q < COST_NMETHODS; // each method's order, then the identity
        const int *o = meth ? p->method_order[q] : id;
        double b = meth ? (p->method_in_rows[q] ? NAN : p->method_bar[q]) : ic ? ic->barrier : NAN;
        int dup = ls_rows_find(p->rows, p->ndone, p->orders, n, o) >= 0;
        for (int k = 0; k < cnt; k++) dup |= !memcmp(ord[k], o, sizeof(int) * (size_t)n);
        if (isnan(b) || dup) continue;
        ord[cnt] = o;
        ex[cnt] = (ls_row){.barrier = b, .acc_barrier = NAN, .auc = meth ? NAN : ic->auc, .bar_lo = NAN,
                           .bar_hi = NAN, .id = p->norders_held + cnt};
        cnt++;
    }
    int same = cnt == p->nextra;
    for (int k = 0; k < cnt && same; k++)
        same = ls_order_is(p->orders, n, p->norders_held + k, ord[k]) && g->extra_bar[k] == ex[k].barrier;
    for (int k = 0; k < cnt; k++) {
        for (int i = 0; i < n; i++) p->orders[(size_t)(p->norders_held + k) * n + i] = (uint8_t)ord[k][i];
        p->rows[p->ndone + k] = ex[k];
        g->extra_bar[k] = ex[k].barrier;
    }
    p->nextra = cnt;
    if (!same) p->rows_epoch++, p->orders_epoch++;
}

/* Ranks and L-hat of both methods: the landscape's early ones (on_ranks), or
 * from complete rows. mu held. */
static void pub_ranks_of(explore_worker *g) {
    explore_snapshot *p = &g->pub;
    for (int m = 0; m < COST_NMETHODS; m++) {
        p->rank[m] = p->tied[m] = p->rank_auc[m] = 0;
        p->l_hat[m] = p->pct[m] = p->pct_lo[m] = p->pct_hi[m] = p->rank_est[m] = NAN;
    }
    p->ranks_early = 0;
    ls_key key = key_of(&p->req);
    for (int m = 0; m < COST_NMETHODS; m++) { // the methods' barriers, whatever the ranks below
        double b, auc;
        int ok = p->have_methods && ls_key_equal(g->rows_key, key) && method_barrier(g, m, &b, &auc);
        p->method_bar[m] = ok ? b : NAN;
        p->method_in_rows[m] = ok && p->orders && ls_rows_find(p->rows, p->ndone, p->orders, g->n, p->method_order[m]) >= 0;
    }
    if (!p->have_landscape && g->have_early && p->have_methods && ls_key_equal(g->early, key) &&
        ls_key_equal(g->rows_key, key)) {
        /* final ranks before the table is: valid for the orders they were
           computed for (gate centring may have changed since) */
        for (int m = 0; m < COST_NMETHODS; m++)
            if (!memcmp(g->early_order[m], p->method_order[m], sizeof(int) * (size_t)g->n)) {
                p->rank[m] = g->early_rank[m];
                p->tied[m] = g->early_tied[m];
                p->rank_auc[m] = g->early_rank_auc[m];
                p->l_hat[m] = g->early_lhat[m];
                p->pct[m] = g->early_pct[m][0];
                p->pct_lo[m] = g->early_pct[m][1];
                p->pct_hi[m] = g->early_pct[m][2];
                p->rank_est[m] = g->early_pct[m][3];
                p->ranks_early = 1;
            }
        return;
    }
    if (!p->have_landscape || !p->have_methods || !p->have_naive || p->ndone < 1 || !ls_key_equal(g->rows_key, key)) return;
    if (!p->orders) return;
    double b[COST_NMETHODS], auc[COST_NMETHODS], best = INFINITY;
    int have[COST_NMETHODS];
    for (int m = 0; m < COST_NMETHODS; m++) have[m] = method_barrier(g, m, &b[m], &auc[m]);
    for (long k = 0; k < p->ndone; k++)
        if (p->rows[k].barrier < best) best = p->rows[k].barrier;
    for (int m = 0; m < COST_NMETHODS && !p->exhaustive; m++) // a sample's best includes the chosen orders
        if (have[m] && b[m] < best) best = b[m];
    rank_view rv = {.count = p->ndone, .width = g->n, .barrier = &p->rows[0].barrier,
                    .auc = &p->rows[0].auc, .orders8 = p->orders, .id = &p->rows[0].id,
                    .stride = sizeof(ls_row)};
    for (int m = 0; m < COST_NMETHODS; m++) {
        if (!have[m]) continue;
        rank_info ri;
        rank_chosen(&rv, b[m], auc[m], p->method_order[m], rank_tau(p->naive.barrier), &ri);
        p->rank[m] = (int)ri.rank;
        p->tied[m] = (int)ri.tied;
        p->rank_auc[m] = (int)ri.rank_auc;
        p->l_hat[m] = rank_l_hat(b[m], best, p->naive.barrier);
        pub_estimate(p, m);
    }
}

/* ---- the cheap parts: costs and curves ---- */

/* The curve of order (weight matching wm, the hidden units matched as method
 * hidden matches them: the table's rule, ls_key) on the layer's set or the
 * network's objective (variant var), from the cache when there. */
static cached_curve *curve_get(explore_worker *g, const int *order, int wm, int var, cost_method hidden, int T,
                               ms_err *err) {
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
        if (c->used && c->wm == wm && c->var == var && c->hidden == hidden &&
            !memcmp(c->order, order, sizeof(int) * (size_t)n)) {
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
    ao.any_order = 1; /* an order that splits a router's groups: a curve to another function */
    ao.method = hidden; // the inputs the landscape's pairs are matched on
    ao.X = g->obj ? g->obj->inputs : g->E->inputs, ao.N = g->obj ? g->obj->ninputs : g->E->N, ao.d = g->A->cfg.d;
    moe_model Bp;
    align_result res;
    memset(&res, 0, sizeof res);
    if (align_models(g->A, g->B, &ao, &Bp, &res, err)) return NULL;
    ls_curve cv;
    // a network's curve is seconds of evaluations: a newer request stops it between them
    int rc = g->obj ? curve_compute_obj(g->A, &Bp, g->obj, var, T, &g->cancel_front, &cv, err)
                    : curve_compute(g->A, &Bp, g->E, T, &cv, err);
    moe_free(&Bp);
    align_result_free(&res);
    if (rc) return NULL;
    memcpy(cv.order, order, sizeof(int) * (size_t)n);
    if (slot->used) ls_curve_free(&slot->c);
    slot->used = 1;
    slot->wm = wm;
    slot->var = var;
    slot->hidden = hidden;
    memcpy(slot->order, order, sizeof slot->order);
    slot->c = cv;
    slot->stamp = ++g->stamp;
    return slot;
}

/* The front's step for the snapshot (front_phase); "" when idle. */
static void front_phase(explore_worker *g, const char *what) {
    pthread_mutex_lock(&g->mu);
    snprintf(g->pub.front_phase, sizeof g->pub.front_phase, "%s", what);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
}

/* Progress of the library calls on the front thread (cost matrices, weight
 * matching; progress.h's listener, at most every 50 ms): "expert cost 1.2/3.4";
 * a network evaluation's rows (NET_EVAL_ROWS) on the status line with the
 * curve they are for and the time left. */
static void front_listener(void *ctx, const char *phase, double done, double total) {
    explore_worker *g = ctx;
    char buf[96];
    if (!strcmp(phase, NET_EVAL_ROWS)) {
        char r[64];
        if (done == 0) g->front_t0 = now_s();
        rows_text(r, sizeof r, done, total, g->front_t0);
        snprintf(buf, sizeof buf, "%.30s: %s", g->front_what, r);
        front_status(g, "%s", buf);
    } else if (phase[0] && total > 0) {
        snprintf(buf, sizeof buf, "%.60s %.3g/%.3g", phase, done, total);
    } else {
        snprintf(buf, sizeof buf, "%.60s", phase);
    }
    front_phase(g, buf);
}

/* The same on the landscape thread (its named alignments before the pairs):
 * the orders pane's phase_detail, unless the landscape runs hidden; a network
 * evaluation's rows there and on the status line. */
static void ls_listener(void *ctx, const char *phase, double done, double total) {
    explore_worker *g = ctx;
    int rows = !strcmp(phase, NET_EVAL_ROWS);
    char r[64] = "";
    if (rows && done == 0) g->ls_t0 = now_s();
    if (rows) rows_text(r, sizeof r, done, total, g->ls_t0);
    pthread_mutex_lock(&g->mu);
    explore_snapshot *p = &g->pub;
    if (!g->ls_hidden && rows) {
        if (p->ndone == 0) snprintf(p->phase_detail, sizeof p->phase_detail, "evaluation %s", r);
        snprintf(g->ls_status, sizeof g->ls_status, "computing landscape %ld/%ld; evaluation %s", p->ndone,
                 p->norders, r);
        pub_status(g);
        pub_bump(g);
    } else if (!g->ls_hidden && phase[0]) {
        snprintf(p->phase_detail, sizeof p->phase_detail, "%.60s %.3g/%.3g", phase, done, total);
        pub_bump(g);
    }
    pthread_mutex_unlock(&g->mu);
}

/* The prep thread's steps (NET_PREP_*) and its evaluations' rows: the
 * snapshot's prep, and the orders pane's phase until the landscape begins. */
static void prep_listener(void *ctx, const char *phase, double done, double total) {
    explore_worker *g = ctx;
    char buf[128], r[64];
    if (!phase[0]) return;
    int rows = !strcmp(phase, NET_EVAL_ROWS), mib = !strcmp(phase, NET_BACKBONE_MIB);
    if (!rows && !mib) {
        if (!strcmp(phase, g->prep_step)) return; // a phase's own updates: its counts come as MiB or rows
        snprintf(g->prep_step, sizeof g->prep_step, "%s", phase);
        snprintf(buf, sizeof buf, "%s", phase);
        g->prep_t0 = now_s();
    } else {
        if (rows && done == 0) g->prep_t0 = now_s();
        count_text(r, sizeof r, rows ? "rows" : "MiB", done, total, g->prep_t0);
        snprintf(buf, sizeof buf, "%.60s: %s", g->prep_step, r);
    }
    pthread_mutex_lock(&g->mu);
    snprintf(g->pub.prep, sizeof g->pub.prep, "%s", buf);
    snprintf(g->pub.phase_detail, sizeof g->pub.phase_detail, "%.95s", buf);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
}

/* The front waits for the network's preparation (the prep thread) before its
 * curves; a newer request or the stop ends the wait. 0 ready, else -1. */
static int prep_wait(explore_worker *g, ms_err *err) {
    pthread_mutex_lock(&g->mu);
    while (g->prep_state == PREP_RUNNING && !g->cancel_front && !g->stop) pthread_cond_wait(&g->cv_front, &g->mu);
    int st = g->prep_state;
    if (st == PREP_FAILED) ms_fail(err, "%s", g->prep_err);
    pthread_mutex_unlock(&g->mu);
    return st == PREP_READY || st == PREP_NONE ? 0 : st == PREP_FAILED ? -1 : ms_fail(err, "cancelled");
}

/* A network's shown block in floats, A's and B's into use[]: a shell (net_load_lazy)
 * read in place, a mapped block decoded into own[]; their values then checked as a
 * loaded layer's. 0; 1 cancelled (done again for the next request); -1 with err. */
typedef struct {
    explore_worker *g;
    int side; /* 0 A, 1 B */
    atomic_int *cancel; /* the front's, for a thread of its own (NULL: the front's thread) */
    const moe_model *use;
    int rc;
    ms_err err;
} block_job;

/* one side's block in floats (a shell filled, a mapped block copied), its values checked */
static void *block_side(void *arg) {
    block_job *j = arg;
    explore_worker *g = j->g;
    if (j->cancel) progress_listen(NULL, NULL, j->cancel); // read between tensors (family_load)
    net_model *net = j->side ? g->prep_net_b : g->prep_net;
    moe_model *own = j->side ? &g->own_b : &g->own_a;
    j->rc = net_block_pending(net, g->prep_block) ? net_block_fill(net, g->prep_block, &j->err) : 0;
    j->use = &net->moe[g->prep_block];
    if (!j->rc && moe_is_mapped(j->use)) {
        if (!own->experts) moe_clone_floats(own, j->use);
        j->use = own;
    }
    if (!j->rc) j->rc = moe_range_check(j->use, NULL, &j->err);
    return NULL;
}

static int block_read_both(explore_worker *g, const moe_model **use, ms_err *err) {
    if (progress_cancelled()) return 1;
    // A's and B's at once (two threads get twice one's share of a loaded machine), each
    // polling the front's cancel between tensors: the read follows the matrix on the
    // screen, where q must not wait for it
    block_job jb[2] = {{.g = g, .side = 0}, {.g = g, .side = 1, .cancel = progress_cancel_flag()}};
    pthread_t th;
    int two = pthread_create(&th, NULL, block_side, &jb[1]) == 0;
    block_side(&jb[0]);
    if (two) pthread_join(th, NULL);
    else jb[1].cancel = NULL, block_side(&jb[1]);
    // q or a newer request: a side read stays read, the other is read by the next request
    if (progress_cancelled()) return 1;
    for (int s = 0; s < 2; s++) {
        if (jb[s].rc) return ms_fail(err, "%s", jb[s].err.msg);
        use[s] = jb[s].use;
    }
    return 0;
}

/* the views of block_views dropped (the floats are in, or the worker ends) */
static void views_free(explore_worker *g) {
    if (g->va == &g->view_a) moe_free(&g->view_a);
    if (g->vb == &g->view_b) moe_free(&g->view_b);
    g->va = g->vb = NULL;
}

/* The front's first step on a network: the shown block in floats (block_read_both),
 * then g->A and g->B, told to the threads that wait for it (the preparation, the
 * diagnostics, the export). 0 ready, else -1 with err. */
static int block_ready(explore_worker *g, ms_err *err) {
    pthread_mutex_lock(&g->mu);
    int st = g->block_state;
    pthread_mutex_unlock(&g->mu);
    if (st == BLOCK_READY) return 0;
    if (st == BLOCK_FAILED) return ms_fail(err, "%s", g->block_err);
    double t0 = now_s();
    front_phase(g, "reading the block"); // the status line says it (the preparation's first step)
    const moe_model *use[2] = {NULL, NULL};
    int rc = block_read_both(g, use, err);
    pthread_mutex_lock(&g->mu);
    if (rc == 0) {
        g->A = use[0], g->B = use[1];
        g->block_state = BLOCK_READY;
        if (g->prep_state == PREP_RUNNING) snprintf(g->pub.prep, sizeof g->pub.prep, "starting");
        pub_status(g);
        pub_bump(g);
    } else if (rc < 0) {
        g->block_state = BLOCK_FAILED;
        snprintf(g->block_err, sizeof g->block_err, "MoE block %d: %.200s",
                 g->prep_net->cfg.moe_layers[g->prep_block], err->msg);
    }
    pthread_cond_broadcast(&g->cv_costs);
    pthread_cond_broadcast(&g->cv_diag);
    pthread_mutex_unlock(&g->mu);
    if (rc == 0) timing_add("explorer block read", now_s() - t0);
    if (rc == 0) views_free(g);
    if (rc > 0) return ms_fail(err, "cancelled");
    return rc ? ms_fail(err, "%s", g->block_err) : 0;
}

/* The pending block's routed weights where the files keep them, for the data-free
 * costs while the floats are not read (the matrix on the screen first: its Grams
 * read the pages, no copy): a shell's mapped in either layout (net_block_view), a
 * mapped block as it is. 0 with g->va and g->vb; 1 when there are none (the floats
 * first, block_ready, which says why a block cannot be read). */
static int block_views(explore_worker *g) {
    pthread_mutex_lock(&g->mu);
    int pending = g->block_state == BLOCK_PENDING;
    pthread_mutex_unlock(&g->mu);
    if (!pending || !g->prep_net) return 1;
    if (g->va || g->views_tried) return g->va ? 0 : 1;
    g->views_tried = 1;
    net_model *nets[2] = {g->prep_net, g->prep_net_b};
    moe_model *own[2] = {&g->view_a, &g->view_b};
    const moe_model *v[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++) {
        const moe_model *b = &nets[s]->moe[g->prep_block];
        ms_err e;
        if (moe_is_mapped(b)) v[s] = b;
        else if (net_block_view(nets[s], g->prep_block, own[s], &e) == 0) v[s] = own[s];
    }
    g->va = v[0], g->vb = v[1];
    if (v[0] && v[1]) return 0;
    views_free(g);
    return 1;
}

/* Costs, assignments and curves of q; -1 on error (err) or cancel. */
static int run_cheap(explore_worker *g, const explore_request *q, ms_err *err) {
    int n = g->n, T = q->T;
    // a network's shown block: its data-free costs from the views, the floats after
    int early = block_views(g) == 0;
    if (!early && block_ready(g, err)) return -1;
    pthread_mutex_lock(&g->mu);
    g->pub.req = *q;
    g->pub.have_current = 0;
    g->pub.have_selected = 0;
    snprintf(g->front_status, sizeof g->front_status, "cost matrices");
    pub_ranks(g);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);

    // 1. every method's cost matrix (n, n) and assignment; the data-driven ones on the
    // evaluation set's inputs (a network's block inputs once prepared), else identity
    int order[COST_NMETHODS][LS_MAX_N], have[COST_NMETHODS];
    double total[COST_NMETHODS];
    pthread_mutex_lock(&g->mu);
    const evalset *E = g->E;
    pthread_mutex_unlock(&g->mu);
    cost_input in = {.A = g->A, .B = g->B, .center = q->center, .X = E ? E->inputs : NULL, .N = E ? E->N : 0,
                     .d = E ? E->d : 0};
    expert_source sv[2];
    if (early) {
        sv[0] = moe_mapped_source(g->va), sv[1] = moe_mapped_source(g->vb);
        in.A = g->va, in.B = g->vb, in.sa = &sv[0], in.sb = &sv[1];
    }
    for (int m = 0; m < COST_NMETHODS; m++) {
        if (g->cancel_front) return ms_fail(err, "cancelled");
        have[m] = cost_method_available((cost_method)m, E != NULL);
        if (have[m] && early && cost_methods[m].needs == COST_NEEDS_EVALSET) { // the data's: in floats
            if (block_ready(g, err)) return -1;
            early = 0, in.A = g->A, in.B = g->B, in.sa = in.sb = NULL;
        }
        for (int i = 0; i < n; i++) order[m][i] = i;
        total[m] = NAN;
        if (!have[m]) continue;
        char what[32];
        snprintf(what, sizeof what, "%s cost", cost_method_name((cost_method)m));
        front_phase(g, what);
        if (m == COST_EXPERT && g->cost_expert) // the weights' own: the same for every request
            memcpy(g->cost[m], g->cost_expert, sizeof(double) * (size_t)(n * n));
        else if (cost_matrix_in((cost_method)m, &in, g->cost[m], err))
            return -1;
        front_phase(g, "assignment");
        if (align_order(&g->A->cfg, g->cost[m], order[m], &total[m], err)) return ms_prefix(err, "%s cost", cost_method_name((cost_method)m));
    }
    int id[LS_MAX_N], cur[LS_MAX_N];
    for (int i = 0; i < n; i++) id[i] = i;
    memcpy(cur, q->order_stage ? order[q->method] : id, sizeof cur);
    pthread_mutex_lock(&g->mu);
    memcpy(g->pub.cost, g->cost[q->method], sizeof(double) * (size_t)(n * n));
    memcpy(g->pub.cost_order, order[q->method], sizeof g->pub.cost_order);
    g->pub.cost_total = total[q->method];
    memcpy(g->pub.method_order, order, sizeof order);
    memcpy(g->pub.method_have, have, sizeof have);
    g->pub.have_methods = 1;
    if (have[COST_EXPERT] && !g->cost_expert) { // the diagnostics' too (weights only: one for every request)
        g->cost_expert = ms_malloc(sizeof(double) * (size_t)(n * n));
        memcpy(g->cost_expert, g->cost[COST_EXPERT], sizeof(double) * (size_t)(n * n));
    }
    memcpy(g->pub.current_order, cur, sizeof cur);
    pub_ranks(g);
    pub_bump(g);
    pthread_cond_signal(&g->cv_diag); // the diagnostics waited for these
    pthread_cond_broadcast(&g->cv_costs);
    pthread_mutex_unlock(&g->mu);
    if (early && block_ready(g, err)) return -1; // the floats, the matrix on the screen
    if (!g->E && !g->obj) return 0; /* data-free (no evaluation set): costs and assignments only */
    if (prep_wait(g, err)) return -1;

    // 2. curves: naive (identity, no WM), skip-order (identity + WM), current, selected
    // (a network's naive and skip-order curves move every MoE block that way: var)
    struct {
        const int *order;
        int wm, var;
        ls_curve *dst;
        int *have;
        const char *name;
    } want[4] = {
        {id, 0, LS_VAR_NAIVE, &g->pub.naive, &g->pub.have_naive, "naive"},
        {id, 1, LS_VAR_SKIP, &g->pub.skip_order, &g->pub.have_skip, "skip-order"},
        {cur, q->wm_stage, LS_VAR_MAIN, &g->pub.current, &g->pub.have_current, "current"},
        {q->selected, q->wm_stage, LS_VAR_MAIN, &g->pub.selected, &g->pub.have_selected, "selected"},
    };
    for (int k = 0; k < 4; k++) {
        if (k == 3 && !q->has_selected) break;
        if (g->cancel_front) return ms_fail(err, "cancelled");
        snprintf(g->front_what, sizeof g->front_what, "curve %s", want[k].name);
        front_status(g, "%s", g->front_what);
        front_phase(g, g->front_what);
        cached_curve *c = curve_get(g, want[k].order, want[k].wm, want[k].var, key_of(q).hidden, T, err);
        if (!c) return ms_prefix(err, "%s curve", want[k].name);
        pthread_mutex_lock(&g->mu);
        if (g->cancel_front) { // superseded as it finished: kept in the cache, not drawn
            pthread_mutex_unlock(&g->mu);
            return ms_fail(err, "cancelled");
        }
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

/* The landscape's orders into the snapshot (once per landscape). mu held. */
static void publish_orders(explore_worker *g, const uint8_t *orders, long norders) {
    explore_snapshot *p = &g->pub;
    if (!orders || (p->orders && p->norders_held == norders && g->orders_run == g->run_serial)) return;
    size_t bytes = (size_t)norders * g->n;
    p->orders = ms_realloc(p->orders, bytes + (size_t)EXPLORE_EXTRA_MAX * g->n + 1); // and the extra rows'
    memcpy(p->orders, orders, bytes);
    p->norders_held = norders;
    p->orders_epoch++;
    g->orders_run = g->run_serial;
}

static void publish_rows(explore_worker *g, const landscape *L, long done, long total) {
    pthread_mutex_lock(&g->mu);
    explore_snapshot *p = &g->pub;
    g->run_done = done;
    g->run_total = total;
    if (g->ls_hidden) {
        snprintf(g->ls_status, sizeof g->ls_status, "finishing the wm %s landscape %.0f%% (w: back to it)",
                 g->run.wm ? "on" : "off", total > 0 ? 100.0 * done / total : 0.0);
        snprintf(p->phase_detail, sizeof p->phase_detail, "%.95s", g->ls_status);
        pub_status(g);
        pub_bump(g);
        pthread_mutex_unlock(&g->mu);
        g->last_pub = now_s();
        return;
    }
    publish_orders(g, L->orders, L->norders);
    if (total + EXPLORE_EXTRA_MAX > p->rows_cap) {
        p->rows_cap = total + EXPLORE_EXTRA_MAX;
        p->rows = ms_realloc(p->rows, (size_t)p->rows_cap * sizeof(ls_row));
    }
    if (done > p->ndone) memcpy(p->rows + p->ndone, L->rows + p->ndone, (size_t)(done - p->ndone) * sizeof(ls_row));
    p->ndone = done;
    p->norders = total;
    pub_extra_rows(g); // after the sample's rows, which moved on
    p->progress = total > 0 ? (double)done / total : 0;
    if (done > 0) p->phase[0] = 0;
    if (p->ranks_early && p->rank[p->req.method] > 0)
        snprintf(g->ls_status, sizeof g->ls_status, "%s order rank %d of %ld; table %ld/%ld",
                 cost_method_name(p->req.method), p->rank[p->req.method], total, done, total);
    else
        snprintf(g->ls_status, sizeof g->ls_status, "computing landscape %ld/%ld", done, total);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    g->last_pub = now_s();
}

static void on_progress(void *ctx, long done, long total) {
    explore_worker *g = ctx;
    /* rows arrive every ~20 ms; publishing 10 times a second is plenty */
    if (done >= total || now_s() - g->last_pub > 0.1) publish_rows(g, g->cur_L, done, total);
}

/* The landscape's steps before its rows (ls_opts.phase, <= every 20 ms):
 * "precomputing experts at points 3/22" under the spinner of the orders pane
 * (pub.phase_detail; pub.phase keeps naming the whole preparation and its
 * elapsed time) and in the status line. */
static void on_phase(void *ctx, const char *what, long done, long total) {
    explore_worker *g = ctx;
    pthread_mutex_lock(&g->mu);
    if (g->ls_hidden) {
        pthread_mutex_unlock(&g->mu);
        return;
    }
    explore_snapshot *p = &g->pub;
    snprintf(p->phase_detail, sizeof p->phase_detail, "%s %ld/%ld", what, done, total);
    snprintf(g->ls_status, sizeof g->ls_status, "computing landscape: %s %ld/%ld", what, done, total);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
}

/* The ranks are final long before the table (landscape.h on_ranks). */
static void on_ranks(void *ctx, const landscape *L) {
    explore_worker *g = ctx;
    pthread_mutex_lock(&g->mu);
    g->have_early = 1;
    g->early = g->run;
    for (int m = 0; m < COST_NMETHODS; m++) {
        memcpy(g->early_order[m], L->methods[m].order, sizeof g->early_order[m]);
        g->early_rank[m] = L->rank[m];
        g->early_tied[m] = L->tied[m];
        g->early_rank_auc[m] = L->rank_auc[m];
        g->early_lhat[m] = L->l_hat[m];
        double pct = 100.0 * (L->rank[m] - 1) / (double)L->norders;
        double e[4] = {pct, L->pct_lo[m], L->pct_hi[m], L->rank_est[m]};
        memcpy(g->early_pct[m], e, sizeof e);
    }
    pub_ranks(g);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
}

/* n!, the sample size, or a group-limited router's group-preserving orders
 * (then pub.groups says so). mu held. */
static long orders_expected(explore_worker *g, const ls_opts *o) {
    int exhaustive, n = g->n;
    explore_snapshot *p = &g->pub;
    long cnt = ls_orders_planned(&g->A->cfg, o, &exhaustive, &p->groups);
    int G = p->groups;
    p->exhaustive = exhaustive;
    p->nsampled = exhaustive ? 0 : cnt;
    p->orders_in_set = G ? ls_wreath_count(G, n / G) : ls_factorial(n);
    p->orders_in_set_log10 = G ? ls_wreath_log10(G, n / G) : ls_factorial_log10(n);
    return cnt;
}

/* Empty the published table (a new landscape, or a cancelled one). mu held. */
static void rows_reset(explore_worker *g, long norders) {
    g->pub.ndone = g->pub.nextra = 0;
    g->pub.norders = norders;
    g->pub.have_landscape = 0;
    g->pub.ci_units = 0;
    g->pub.ci_why = NULL;
    g->pub.progress = 0;
    g->pub.rows_epoch++;
    g->have_early = 0;
    pub_ranks(g);
}

/* Keep a complete table for key k (wm stage). mu held. */
static void ls_save(explore_worker *g, ls_key k, const landscape *L) {
    int wm = ls_slot(k);
    g->saved[wm].rows = ms_realloc(g->saved[wm].rows, (size_t)L->norders * sizeof(ls_row));
    memcpy(g->saved[wm].rows, L->rows, (size_t)L->norders * sizeof(ls_row));
    g->saved[wm].orders = ms_realloc(g->saved[wm].orders, (size_t)L->norders * g->n + 1);
    memcpy(g->saved[wm].orders, L->orders, (size_t)L->norders * g->n);
    g->saved[wm].n = L->norders;
    g->saved[wm].key = k;
    g->saved[wm].exhaustive = L->exhaustive;
    g->saved[wm].ci_units = L->boot_resamples ? L->nseq : 0;
    g->saved[wm].ci_why = L->boot_resamples ? NULL : L->boot_why;
}

/* Publish the kept table of key k if there is one (1), else 0. mu held. */
static int ls_publish_saved(explore_worker *g, ls_key k) {
    int wm = ls_slot(k);
    if (!g->saved[wm].rows || !ls_key_equal(g->saved[wm].key, k)) return 0;
    explore_snapshot *p = &g->pub;
    long cnt = g->saved[wm].n;
    if (cnt + EXPLORE_EXTRA_MAX > p->rows_cap) {
        p->rows_cap = cnt + EXPLORE_EXTRA_MAX;
        p->rows = ms_realloc(p->rows, (size_t)p->rows_cap * sizeof(ls_row));
    }
    memcpy(p->rows, g->saved[wm].rows, (size_t)cnt * sizeof(ls_row));
    g->run_serial++;
    publish_orders(g, g->saved[wm].orders, cnt);
    p->ndone = p->norders = cnt;
    p->rows_epoch++;
    p->have_landscape = 1;
    p->exhaustive = g->saved[wm].exhaustive;
    p->ci_units = g->saved[wm].ci_units;
    p->ci_why = g->saved[wm].ci_why;
    p->progress = 1;
    p->phase[0] = 0;
    p->phase_detail[0] = 0;
    g->rows_key = k;
    g->have_early = 0;
    g->have_ls = 1;
    g->done = k;
    g->ls_failed = 0;
    pub_ranks(g);
    return 1;
}

/* A request for key k while the landscape of g->run computes: a landscape at
 * least half done keeps running, hidden, so that toggling back (w twice)
 * finds it further on instead of starting again; the table shown is emptied
 * for k meanwhile (its landscape starts when the hidden one ends). Toggling
 * back to the running key shows it again. Otherwise it is cancelled. mu held. */
static void ls_redirect(explore_worker *g, ls_key k) {
    if (!g->ls_running || g->cancel_ls) return;
    explore_snapshot *p = &g->pub;
    if (ls_key_equal(g->run, k)) {
        if (!g->ls_hidden) return;
        g->ls_hidden = 0; /* shown again: the next progress call copies every row so far */
        g->run_serial++;  /* and its orders (a kept table's may be published) */
        g->have_ls = 0;
        g->rows_key = k;
        p->have_landscape = 0;
        p->ci_units = 0;
        p->ci_why = NULL;
        p->ndone = p->nextra = 0;
        p->rows_epoch++;
        p->phase_detail[0] = 0;
        p->phase[0] = 0;
        return;
    }
    if (g->ls_hidden) {
        ls_publish_saved(g, k); /* still another key's; k's kept table if any */
        return;
    }
    if (g->run_total > 0 && 2 * g->run_done >= g->run_total) {
        g->ls_hidden = 1;
        if (ls_publish_saved(g, k)) return;
        g->rows_key = k;
        p->ndone = 0;
        p->have_landscape = 0;
        p->ci_units = 0;
        p->ci_why = NULL;
        p->progress = 0;
        p->rows_epoch++;
        snprintf(p->phase, sizeof p->phase, "queued: the wm %s landscape finishes first", g->run.wm ? "on" : "off");
        p->phase_since = now_s();
        pub_ranks(g);
    } else {
        g->cancel_ls = 1;
    }
}

/* A layer's complete table of key k, just published: its error bars as the
 * landscape command's (ls_layer_intervals: from the per-sample losses the
 * kernel kept, else the orders evaluated again, up to LS_BOOT_LAYER_ORDERS),
 * published when done unless another table took its place;
 * kept with the table either way. A newer request cancels it as it cancels a
 * landscape (it runs as one). mu held, released while it computes. */
static void layer_error_bars(explore_worker *g, ls_key k, landscape *L) {
    explore_snapshot *p = &g->pub;
    unsigned long epoch = p->rows_epoch;
    g->ls_running = 1;
    if (L->order_units) snprintf(g->ls_status, sizeof g->ls_status, "error bars: %ld orders resampled", L->norders);
    else snprintf(g->ls_status, sizeof g->ls_status, "error bars: %ld orders again, per sample", L->norders);
    pub_status(g);
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    ms_err err;
    int rc = ls_layer_intervals(g->A, g->B, g->E, k.wm, L, &g->cancel_ls, &err);
    pthread_mutex_lock(&g->mu);
    g->ls_running = 0;
    int hidden = g->ls_hidden;
    g->ls_hidden = 0;
    if (!rc && L->boot_resamples && !g->cancel_ls) {
        if (!hidden && p->rows_epoch == epoch) { // still the table shown: the same rows, with intervals
            memcpy(p->rows, L->rows, (size_t)L->norders * sizeof(ls_row));
            p->ci_units = L->nseq;
            p->ci_why = NULL;
            p->rows_epoch++;
        }
        ls_save(g, k, L);
    } else if (!rc && !g->cancel_ls && L->boot_why) { // none: why, with the table
        if (!hidden && p->rows_epoch == epoch) p->ci_why = L->boot_why;
        ls_save(g, k, L);
    }
    pub_status(g);
    pub_bump(g);
}

static void *ls_worker(void *arg) {
    explore_worker *g = arg;
    progress_listen(ls_listener, g, &g->cancel_ls); /* its named alignments: cancellable */
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->ls_want && !g->stop) pthread_cond_wait(&g->cv_ls, &g->mu);
        if (g->stop) break;
        ls_key k = g->want;
        int wm = k.wm, center = g->want_center;
        g->ls_want = 0;
        if (g->have_ls && ls_key_equal(g->done, k)) {
            pub_status(g);
            pub_bump(g);
            continue;
        }
        if (ls_publish_saved(g, k)) {
            pub_status(g);
            pub_bump(g);
            continue;
        }
        g->cancel_ls = 0;
        g->run_serial++; /* new orders come with this landscape */
        g->ls_running = 1;
        g->ls_hidden = 0;
        g->run_done = g->run_total = 0;
        g->ls_failed = 0;
        g->run = k;
        g->have_ls = 0;
        ls_opts o;
        ls_opts_default(&o);
        o.nsample = LS_SAMPLES; // the commands' default (said in the table's title)
        o.all_error_bars = g->all_error_bars;
        if (g->obj) { // whole network evaluations per (order, t)
            o.objective = g->obj;
            o.exhaustive_max = LS_OBJ_EXHAUSTIVE_MAX;
            o.nsample = EXPLORE_OBJ_SAMPLES;
        }
        g->rows_key = k;
        rows_reset(g, orders_expected(g, &o)); /* the count is known before the first row */
        /* landscape_compute says nothing until rows finish (its last phase):
           the pane shows this phase with a spinner meanwhile */
        snprintf(g->pub.phase, sizeof g->pub.phase, "preparing the %d expert pairs", g->n * g->n);
        g->pub.phase_detail[0] = 0;
        g->pub.phase_since = now_s();
        snprintf(g->ls_status, sizeof g->ls_status, "computing landscape");
        pub_status(g);
        pub_bump(g);
        pthread_mutex_unlock(&g->mu);

        o.T = k.T;
        o.wm = wm;
        o.hidden = k.hidden;
        o.center = center;
        o.cancel = &g->cancel_ls;
        o.keep_units = !g->obj; // a layer's error bars from the sweep itself (layer_error_bars)
        o.stream_units = 1;     // beyond a small table each order's resampled as its row is done
        o.progress = on_progress;
        o.on_ranks = on_ranks;
        o.phase = on_phase;
        o.ctx = g;
        landscape L;
        memset(&L, 0, sizeof L);
        ms_err err;
        err.msg[0] = 0;
        g->cur_L = &L;
        g->last_pub = 0;
        int rc = landscape_compute(g->A, g->B, g->E, &o, &L, &err);
        g->cur_L = NULL;

        pthread_mutex_lock(&g->mu);
        g->ls_running = 0;
        int hidden = g->ls_hidden;
        g->ls_hidden = 0;
        explore_snapshot *p = &g->pub;
        if (!hidden) {
            p->phase[0] = 0;
            p->phase_detail[0] = 0;
        }
        if (rc == 0) { /* its own method curves, for a sample that lacks their rows */
            struct fin_curves *f = &g->fin[ls_slot(k)];
            f->valid = 1;
            f->key = k;
            for (int m = 0; m < COST_NMETHODS; m++) {
                memcpy(f->order[m], L.methods[m].order, sizeof f->order[m]);
                f->bar[m] = L.methods[m].barrier;
                f->auc[m] = L.methods[m].auc;
            }
        }
        if (rc == 0 && hidden) {
            /* finished in the background: kept for when w comes back, with its
               error bars (streamed with its rows, else from the losses the sweep
               kept: a small table's, so this is short; a request waits for it) */
            if (!g->obj && g->E && L.order_units && !L.boot_resamples) {
                pthread_mutex_unlock(&g->mu);
                ms_err eb;
                if (ls_layer_intervals(g->A, g->B, g->E, k.wm, &L, &g->cancel_ls, &eb)) L.boot_resamples = 0;
                pthread_mutex_lock(&g->mu);
            }
            ls_save(g, k, &L);
        } else if (rc == 0) {
            /* the final rows are sorted by barrier: publish them all anew */
            if (L.norders + EXPLORE_EXTRA_MAX > p->rows_cap) {
                p->rows_cap = L.norders + EXPLORE_EXTRA_MAX;
                p->rows = ms_realloc(p->rows, (size_t)p->rows_cap * sizeof(ls_row));
            }
            publish_orders(g, L.orders, L.norders);
            memcpy(p->rows, L.rows, (size_t)L.norders * sizeof(ls_row));
            p->ndone = p->norders = L.norders;
            p->rows_epoch++;
            p->have_landscape = 1;
            p->exhaustive = L.exhaustive;
            p->ci_units = L.boot_resamples ? L.nseq : 0;
            p->ci_why = L.boot_resamples ? NULL : L.boot_why;
            p->progress = 1;
            g->have_ls = 1;
            g->done = k;
            ls_save(g, k, &L);
            pub_ranks(g);
        } else if (hidden) {
            /* cancelled in the background: the shown table is another key's */
        } else if (g->cancel_ls || g->ls_want || g->stop) {
            /* superseded: the rows belonged to the old key */
            rows_reset(g, 0);
        } else {
            g->ls_failed = 1;
            snprintf(g->ls_status, sizeof g->ls_status, "%.255s", err.msg);
        }
        pub_status(g);
        pub_bump(g);
        if (rc == 0 && !hidden && !g->obj && g->E && !L.boot_resamples &&
            (L.order_units || L.norders <= LS_BOOT_LAYER_ORDERS))
            layer_error_bars(g, k, &L);
        landscape_free(&L);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- diagnostics ---- */

/* Publish the kept diagnostics of (m, c). mu held. */
static void diag_publish(explore_worker *g, int m, int c) {
    explore_snapshot *p = &g->pub;
    p->diag_method = (cost_method)m;
    p->diag_center = c;
    dg_list_free(&p->diag);
    p->diag_error[0] = 0;
    if (g->diag_fail[m][c]) {
        p->diag_state = EXPLORE_DIAG_FAILED;
        snprintf(p->diag_error, sizeof p->diag_error, "%s", g->diag_err[m][c]);
    } else {
        const dg_list *r = &g->diag_res[m][c];
        p->diag_state = EXPLORE_DIAG_READY;
        if (r->n > 0) {
            p->diag.items = ms_malloc((size_t)r->n * sizeof(dg_finding));
            memcpy(p->diag.items, r->items, (size_t)r->n * sizeof(dg_finding));
        }
        p->diag.n = p->diag.cap = r->n;
    }
    p->diag_epoch++;
    pub_bump(g);
}

/* B aligned with q's stages, saved under a free name near want (written to
 * path). Never over an input nor any existing file. */
static int export_run(explore_worker *g, const evalset *E, const explore_request *q, const char *want,
                      char *path, size_t cap, ms_err *err) {
    const char *ins[3] = {g->A->path, g->B->path, E ? E->path : NULL};
    int nin = 0;
    for (int i = 0; i < 3; i++)
        if (ins[i]) ins[nin++] = ins[i];
    if (af_free_name(want, path, cap)) return ms_fail(err, "%s: every numbered name is taken", want);
    if (outputs_check_one(path, NULL, ckpt_output_is_dir(g->B->path, path) ? OUT_DIR : OUT_FILE, ins, nin, err))
        return -1;
    align_opts o;
    align_opts_default(&o);
    o.order_stage = q->order_stage;
    o.wm_stage = q->wm_stage;
    o.method = q->method;
    o.center = q->center;
    moe_model out;
    align_result res;
    memset(&res, 0, sizeof res);
    if (align_models(g->A, g->B, &o, &out, &res, err)) return -1;
    int rc = moe_save(&out, path, err);
    moe_free(&out);
    align_result_free(&res);
    return rc;
}

/* Take the asked export and run it, publishing the outcome. mu held. */
static void export_step(explore_worker *g) {
    explore_request q = g->export_req;
    const evalset *E = g->E;
    char want[512], path[512];
    snprintf(want, sizeof want, "%s", g->export_path);
    g->export_want = 0;
    pthread_mutex_unlock(&g->mu);
    ms_err err;
    err.msg[0] = 0;
    path[0] = 0;
    int rc = g->block_state == BLOCK_FAILED ? ms_fail(&err, "%s", g->block_err)
                                            : export_run(g, E, &q, want, path, sizeof path, &err);
    pthread_mutex_lock(&g->mu);
    explore_snapshot *p = &g->pub;
    p->export_state = rc ? EXPLORE_EXPORT_FAILED : EXPLORE_EXPORT_DONE;
    snprintf(p->export_path, sizeof p->export_path, "%s", rc ? want : path);
    snprintf(p->export_error, sizeof p->export_error, "%.255s", rc ? err.msg : "");
    p->export_req = q;
    p->export_epoch++;
    pub_bump(g);
}

/* The diagnostics report no progress; the listener is there for its cancel. */
static void diag_listener(void *ctx, const char *phase, double done, double total) {}

static void *diag_worker(void *arg) {
    explore_worker *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->diag_want && !g->export_want && !g->stop) pthread_cond_wait(&g->cv_diag, &g->mu);
        if (g->stop) break;
        if (g->block_state == BLOCK_PENDING) { // the front reads the block's weights first
            pthread_cond_wait(&g->cv_diag, &g->mu);
            continue;
        }
        if (g->export_want) {
            export_step(g);
            continue;
        }
        if (!g->pub.have_methods && (g->front_busy || g->has_pending)) {
            // the front's cost matrices first (the first screen's; the same products as the
            // findings' on a core of their own)
            pthread_cond_wait(&g->cv_diag, &g->mu);
            continue;
        }
        int m = g->diag_want_m, c = g->diag_want_c;
        g->diag_want = 0;
        if (g->diag_have[m][c]) {
            diag_publish(g, m, c);
            continue;
        }
        if (g->block_state == BLOCK_FAILED) { // no weights to find anything in: the reason
            g->diag_fail[m][c] = g->diag_have[m][c] = 1;
            snprintf(g->diag_err[m][c], sizeof g->diag_err[m][c], "%s", g->block_err);
            diag_publish(g, m, c);
            continue;
        }
        const evalset *E = g->E; // a network's block inputs arrive later (prep thread)
        double *ce = NULL; // the front's expert cost, when it has it
        if (g->cost_expert) {
            ce = ms_malloc(sizeof(double) * (size_t)(g->n * g->n));
            memcpy(ce, g->cost_expert, sizeof(double) * (size_t)(g->n * g->n));
        }
        pthread_mutex_unlock(&g->mu);
        diag_opts o;
        diag_opts_default(&o);
        o.cost_expert = ce;
        o.method = (cost_method)m;
        o.center = c;
        /* the landscape thread computes the landscape; here only when it is instant */
        o.landscape = g->n <= 5 && !g->obj ? 1 : 0; /* a network's: the orders pane ranks on its loss */
        dg_list l;
        memset(&l, 0, sizeof l);
        ms_err err;
        err.msg[0] = 0;
        /* cancellable: at 64 experts the expert distances are thousands of
           weight matchings, and explore_stop (quit, a layer switch) waits */
        progress_listen(diag_listener, g, &g->cancel_diag);
        int rc = diag_findings(g->A, g->B, E, &o, &l, &err);
        progress_listen(NULL, NULL, NULL);
        free(ce);
        pthread_mutex_lock(&g->mu);
        if (E != g->E) { // data-free findings of a set that came in meanwhile: asked again (prep_finish)
            dg_list_free(&l);
            continue;
        }
        dg_list_free(&g->diag_res[m][c]);
        g->diag_res[m][c] = l;
        g->diag_fail[m][c] = rc != 0;
        snprintf(g->diag_err[m][c], sizeof g->diag_err[m][c], "%.255s", rc ? err.msg : "");
        g->diag_have[m][c] = 1;
        /* a newer ask for something else: that one is published instead */
        if (!g->diag_want || (g->diag_want_m == m && g->diag_want_c == c)) {
            g->diag_want = 0;
            diag_publish(g, m, c);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

void explore_export(explore_worker *g, const explore_request *q, const char *path) {
    pthread_mutex_lock(&g->mu);
    g->export_want = 1;
    g->export_req = *q;
    snprintf(g->export_path, sizeof g->export_path, "%s", path);
    g->pub.export_state = EXPLORE_EXPORT_RUNNING;
    snprintf(g->pub.export_path, sizeof g->pub.export_path, "%s", path);
    g->pub.export_error[0] = 0;
    g->pub.export_epoch++;
    pub_bump(g);
    pthread_cond_signal(&g->cv_diag);
    pthread_mutex_unlock(&g->mu);
}

void explore_request_diag(explore_worker *g, cost_method method, int center) {
    int m = method >= 0 && method < COST_NMETHODS ? method : COST_EXPERT, c = center ? 1 : 0;
    pthread_mutex_lock(&g->mu);
    if (g->diag_have[m][c]) {
        g->diag_want = 0;
        diag_publish(g, m, c);
    } else {
        g->diag_want = 1;
        g->diag_want_m = m;
        g->diag_want_c = c;
        explore_snapshot *p = &g->pub;
        p->diag_state = EXPLORE_DIAG_COMPUTING;
        p->diag_method = (cost_method)m;
        p->diag_center = c;
        dg_list_free(&p->diag);
        p->diag_error[0] = 0;
        p->diag_epoch++;
        pub_bump(g);
        pthread_cond_signal(&g->cv_diag);
    }
    pthread_mutex_unlock(&g->mu);
}

/* The preparation's end: the block's inputs become the diagnostics' set
 * (their findings, data-free so far, computed again), the front goes on to
 * its curves. mu held. */
static void prep_finish(explore_worker *g, int rc, evalset *X, const ms_err *err) {
    explore_snapshot *p = &g->pub;
    if (rc) {
        g->prep_state = PREP_FAILED;
        snprintf(g->prep_err, sizeof g->prep_err, "preparing the network: %.200s", err->msg);
    } else {
        g->own_E = *X;
        g->E = &g->own_E;
        g->prep_state = PREP_READY;
        for (int m = 0; m < COST_NMETHODS; m++)
            for (int c = 0; c < 2; c++) {
                dg_list_free(&g->diag_res[m][c]);
                g->diag_have[m][c] = g->diag_fail[m][c] = 0;
            }
        if (p->diag_state != EXPLORE_DIAG_NONE && !g->diag_want) {
            g->diag_want = 1;
            g->diag_want_m = p->diag_method;
            g->diag_want_c = p->diag_center;
            pthread_cond_signal(&g->cv_diag);
        }
    }
    p->prep[0] = 0;
    if (!g->ls_running) p->phase[0] = p->phase_detail[0] = 0;
    pthread_cond_broadcast(&g->cv_front);
    pub_status(g);
    pub_bump(g);
}

/* A network's objective (the frozen prefix, the end points) and the block's
 * own inputs, once, off the other threads: the screen and the data-free parts
 * do not wait for them; only explore_stop cancels them. */
/* A's and B's backbones (the screen came up without their values, tui.c) and
 * their magnitudes on the set; each step cancelled by explore_stop within a
 * tensor or a block. The curves and the routing geometry wait for them. */
static int prep_backbones(explore_worker *g, ms_err *err) {
    net_model *nets[2] = {g->prep_net, g->prep_net_b};
    if (g->prep_same == EXPLORE_SAME_COMPARE) { // two files: equal bytes, or the refusal (subject.h)
        char what[512];
        if (subject_backbones_check(nets[0]->path, nets[1]->path, 0, what, sizeof what, err)) return -1;
        g->prep_same = 1;
    }
    if (net_load_backbone(nets[0], err)) return -1; // its phase: "load seed1 backbone"
    // B's backbone equal to A's (the samples' shared shard): A's values serve both
    if (g->prep_same && !net_has_backbone(nets[1])) net_share_backbone(nets[1], nets[0]);
    if (net_load_backbone(nets[1], err)) return -1; // their magnitudes: net_objective_prepare's first step
    pthread_mutex_lock(&g->mu);
    g->pub.net_values = 1;
    pub_bump(g);
    pthread_mutex_unlock(&g->mu);
    return 0;
}

/* The front's cost matrices first, for at most PREP_HEAD_START seconds: on a
 * loaded machine they share the cores with the backbones' reading, and the first
 * screen's matrix is worth more than a second of a preparation that takes minutes
 * (an expert cost that takes longer, or a request not yet made, still gets its
 * preparation after that). */
#define PREP_HEAD_START 2.0
static void prep_head_start(explore_worker *g) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)PREP_HEAD_START;
    pthread_mutex_lock(&g->mu);
    while (!g->pub.have_methods && !g->front_failed && !g->stop && !g->cancel_prep)
        if (pthread_cond_timedwait(&g->cv_costs, &g->mu, &until)) break;
    pthread_mutex_unlock(&g->mu);
}

/* The shown block read by the front (its first step: the preparation's objective
 * evaluates it), then the other MoE blocks' weights that net_load_lazy left: a shell
 * read in place, a block mapped in one network and not the other (two layouts)
 * decoded in both (aligned in floats); cancelled between blocks. */
static int prep_blocks(explore_worker *g, ms_err *err) {
    pthread_mutex_lock(&g->mu);
    while (g->block_state == BLOCK_PENDING && !g->stop && !g->cancel_prep) pthread_cond_wait(&g->cv_costs, &g->mu);
    int st = g->block_state;
    pthread_mutex_unlock(&g->mu);
    if (st == BLOCK_FAILED) return ms_fail(err, "%s", g->block_err);
    if (st == BLOCK_PENDING) return ms_fail(err, "cancelled");
    net_model *nets[2] = {g->prep_net, g->prep_net_b};
    for (int i = 0; i < nets[0]->cfg.nmoe; i++) {
        if (i == g->prep_block) continue;
        for (int s = 0; s < 2; s++) {
            if (progress_cancelled()) return ms_fail(err, "cancelled");
            if (!net_block_pending(nets[s], i)) continue;
            progress_inner(EXPLORE_PREP_BLOCKS, 0, 0);
            if (net_block_fill(nets[s], i, err)) return -1;
        }
        const moe_model *a = &nets[0]->moe[i], *b = &nets[1]->moe[i];
        if ((moe_is_mapped(a) != moe_is_mapped(b) || moe_shared_mapped(a) != moe_shared_mapped(b)) &&
            (net_block_fill(nets[0], i, err) || net_block_fill(nets[1], i, err)))
            return -1;
    }
    return 0;
}

static void *prep_worker(void *arg) {
    explore_worker *g = arg;
    pthread_mutex_lock(&g->mu); // the shown block first: the front's, then its cost matrices' head start
    while (g->block_state == BLOCK_PENDING && !g->stop && !g->cancel_prep) pthread_cond_wait(&g->cv_costs, &g->mu);
    pthread_mutex_unlock(&g->mu);
    prep_head_start(g);
    progress_listen(prep_listener, g, &g->cancel_prep);
    ms_err err;
    err.msg[0] = 0;
    evalset X;
    memset(&X, 0, sizeof X);
    int rc = prep_blocks(g, &err);
    if (!rc) rc = prep_backbones(g, &err);
    if (!rc) rc = net_objective_prepare(g->prep_no, &err);
    if (!rc) {
        net_par par = {.checked = 1}; // the cancel: this thread's (cancel_prep); prepare checked A
        progress_inner(EXPLORE_PREP_INPUTS, 0, 0);
        rc = net_block_inputs(g->prep_net, g->prep_set, g->prep_block, &par, &X, &err);
    }
    progress_listen(NULL, NULL, NULL);
    pthread_mutex_lock(&g->mu);
    prep_finish(g, rc, &X, &err);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static void *front_worker(void *arg) {
    explore_worker *g = arg;
    progress_listen(front_listener, g, &g->cancel_front); /* cost and matching: cancellable */
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->has_pending && !g->stop) pthread_cond_wait(&g->cv_front, &g->mu);
        if (g->stop) break;
        explore_request q = g->pending;
        g->has_pending = 0;
        g->cancel_front = 0;
        g->front_busy = 1;
        g->front_failed = 0;
        pthread_mutex_unlock(&g->mu);
        ms_err err;
        err.msg[0] = 0;
        int rc = run_cheap(g, &q, &err);
        pthread_mutex_lock(&g->mu);
        g->front_busy = 0;
        g->pub.front_phase[0] = 0;
        pthread_cond_signal(&g->cv_diag); // a failed or cancelled request: the diagnostics go on
        pthread_cond_broadcast(&g->cv_costs);
        if (rc == 0 && (g->E || g->obj) && !g->has_pending) {
            /* the landscape for this request's key, unless it is there or coming; not
               for a request a newer one superseded while it ran (its cheap part can end
               before it sees the cancel: w twice then left the first w's key wanted,
               started once the landscape shown again finished) */
            ls_key k = key_of(&q);
            int done = g->have_ls && ls_key_equal(g->done, k);
            int running = g->ls_running && !g->cancel_ls && ls_key_equal(g->run, k);
            if (!done && !running) {
                if (g->ls_running && !g->ls_hidden) g->cancel_ls = 1;
                g->ls_want = 1;
                g->want = k;
                g->want_center = q.center;
                pthread_cond_signal(&g->cv_ls);
            }
        } else if (!g->cancel_front && !g->has_pending && !g->stop) {
            g->front_failed = 1;
            snprintf(g->front_status, sizeof g->front_status, "%.255s", err.msg);
        }
        pub_status(g);
        pub_bump(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

explore_worker *explore_start(const moe_model *A, const moe_model *B, const evalset *E, ms_err *err) {
    return explore_start_obj(A, B, E, NULL, err);
}

/* The worker's state, no thread started yet; NULL with err. */
static explore_worker *worker_new(const moe_model *A, const moe_model *B, const evalset *E,
                                  const ls_objective *obj, ms_err *err) {
    int n = A->cfg.n;
    if (n < 1 || n > LS_MAX_N) {
        ms_fail(err, "%s: %d experts; the explorer handles 1 to %d", A->path ? A->path : "A", n, LS_MAX_N);
        return NULL;
    }
    if (moe_check_compatible(A, B, err)) return NULL;
    explore_worker *g = ms_calloc(1, sizeof *g);
    g->A = A;
    g->B = B;
    g->E = E;
    g->obj = obj;
    g->n = n;
    g->kind = obj ? obj->kind : E ? ls_kind_of(A, E) : LS_LAYER;
    for (int m = 0; m < COST_NMETHODS; m++) {
        g->cost[m] = ms_malloc(sizeof(double) * (size_t)(n * n));
        g->pub.l_hat[m] = g->pub.method_bar[m] = NAN;
    }
    g->pub.generation = 1;
    g->pub.n = n;
    g->pub.kind = g->kind;
    g->pub.cost = ms_calloc((size_t)(n * n), sizeof(double));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv_front, NULL);
    pthread_cond_init(&g->cv_ls, NULL);
    pthread_cond_init(&g->cv_diag, NULL);
    pthread_cond_init(&g->cv_costs, NULL);
    return g;
}

static explore_worker *worker_run(explore_worker *g, ms_err *err) {
    g->started_front = pthread_create(&g->th_front, NULL, front_worker, g) == 0;
    g->started_ls = g->started_front && pthread_create(&g->th_ls, NULL, ls_worker, g) == 0;
    g->started_diag = g->started_ls && pthread_create(&g->th_diag, NULL, diag_worker, g) == 0;
    int ok = g->started_diag;
    if (ok && g->prep_no) ok = g->started_prep = pthread_create(&g->th_prep, NULL, prep_worker, g) == 0;
    if (!ok) {
        ms_fail(err, "cannot start the worker threads");
        explore_stop(g);
        return NULL;
    }
    return g;
}

explore_worker *explore_start_obj(const moe_model *A, const moe_model *B, const evalset *E,
                                  const ls_objective *obj, ms_err *err) {
    explore_worker *g = worker_new(A, B, E, obj, err);
    return g ? worker_run(g, err) : NULL;
}

explore_worker *explore_start_net(const moe_model *A, const moe_model *B, net_objective *no, net_model *net,
                                  net_model *net_b, int same, const net_evalset *set, int block, ms_err *err) {
    explore_worker *g = worker_new(A, B, NULL, net_objective_view(no), err);
    if (!g) return NULL;
    g->prep_no = no;
    g->prep_net = net;
    g->prep_net_b = net_b;
    g->prep_same = same;
    g->prep_set = set;
    g->prep_block = block;
    g->prep_state = PREP_RUNNING;
    g->block_state = BLOCK_PENDING; // the front's first step
    snprintf(g->pub.prep, sizeof g->pub.prep, "reading MoE block %d's experts", net->cfg.moe_layers[block]);
    snprintf(g->pub.phase, sizeof g->pub.phase, "preparing the network");
    g->pub.phase_since = now_s();
    pub_status(g);
    return worker_run(g, err);
}

void explore_submit(explore_worker *g, const explore_request *r) {
    pthread_mutex_lock(&g->mu);
    g->pending = *r;
    if (g->pending.T < 2) g->pending.T = 25;
    g->has_pending = 1;
    g->cancel_front = 1; /* a newer request cancels the older one */
    /* a running landscape for another key is of no use any more */
    ls_key k = key_of(&g->pending);
    ls_redirect(g, k);
    if (g->ls_want && !ls_key_equal(g->want, k)) g->ls_want = 0;
    pub_status(g);
    pub_bump(g);
    pthread_cond_signal(&g->cv_front);
    pthread_mutex_unlock(&g->mu);
}

static void copy_curve_if(int have, ls_curve *dst, const ls_curve *src) {
    if (have) curve_assign(dst, src);
}

int explore_poll(explore_worker *g, explore_snapshot *v) {
    pthread_mutex_lock(&g->mu);
    const explore_snapshot *p = &g->pub;
    if (v->generation == p->generation) {
        pthread_mutex_unlock(&g->mu);
        return 0;
    }
    /* keep v's buffers, copy the scalars, then the arrays */
    explore_snapshot keep = *v;
    *v = *p;
    v->t = keep.t;
    v->cost = keep.cost;
    v->naive = keep.naive;
    v->skip_order = keep.skip_order;
    v->current = keep.current;
    v->selected = keep.selected;
    v->rows = keep.rows;
    v->rows_cap = keep.rows_cap;
    v->orders = keep.orders;
    if (keep.orders_epoch != p->orders_epoch || (!v->orders && p->orders)) {
        free(v->orders);
        v->orders = NULL;
        if (p->orders) {
            v->orders = ms_malloc((size_t)(p->norders_held + p->nextra) * p->n + 1);
            memcpy(v->orders, p->orders, (size_t)(p->norders_held + p->nextra) * p->n);
        }
    }
    v->diag = keep.diag;
    if (keep.diag_epoch != p->diag_epoch) {
        dg_list_free(&v->diag);
        if (p->diag.n > 0) {
            v->diag.items = ms_malloc((size_t)p->diag.n * sizeof(dg_finding));
            memcpy(v->diag.items, p->diag.items, (size_t)p->diag.n * sizeof(dg_finding));
        }
        v->diag.n = v->diag.cap = p->diag.n;
    }
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
    long need = (p->norders > p->ndone ? p->norders : p->ndone) + EXPLORE_EXTRA_MAX;
    if (need > v->rows_cap) {
        v->rows = ms_realloc(v->rows, (size_t)need * sizeof(ls_row));
        v->rows_cap = need;
    }
    if (p->ndone > from) memcpy(v->rows + from, p->rows + from, (size_t)(p->ndone - from) * sizeof(ls_row));
    if (p->nextra > 0) memcpy(v->rows + p->ndone, p->rows + p->ndone, (size_t)p->nextra * sizeof(ls_row));
    pthread_mutex_unlock(&g->mu);
    return 1;
}

void explore_row_order(const explore_snapshot *v, const ls_row *r, int *p) {
    if (v->orders && r->id >= 0 && r->id < v->norders_held + v->nextra) {
        ls_order_get(v->orders, v->n, r->id, p);
        return;
    }
    for (int i = 0; i < v->n; i++) p[i] = i;
}

int explore_row_is(const explore_snapshot *v, const ls_row *r, const int *p) {
    return v->orders && r->id >= 0 && r->id < v->norders_held + v->nextra && ls_order_is(v->orders, v->n, r->id, p);
}

void explore_snapshot_free(explore_snapshot *v) {
    free(v->t);
    free(v->cost);
    free(v->rows);
    free(v->orders);
    ls_curve_free(&v->naive);
    ls_curve_free(&v->skip_order);
    ls_curve_free(&v->current);
    ls_curve_free(&v->selected);
    dg_list_free(&v->diag);
    memset(v, 0, sizeof *v);
}

void explore_set_all_error_bars(explore_worker *g, int on) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->all_error_bars = on;
    pthread_mutex_unlock(&g->mu);
}

void explore_cancel(explore_worker *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    g->cancel_front = 1;
    g->cancel_ls = 1;
    g->cancel_diag = 1;
    g->cancel_prep = 1;
    pthread_cond_broadcast(&g->cv_front);
    pthread_cond_signal(&g->cv_ls);
    pthread_cond_signal(&g->cv_diag);
    pthread_cond_broadcast(&g->cv_costs);
    pthread_mutex_unlock(&g->mu);
}

void explore_stop(explore_worker *g) {
    if (!g) return;
    explore_cancel(g);
    if (g->started_front) pthread_join(g->th_front, NULL);
    if (g->started_ls) pthread_join(g->th_ls, NULL);
    if (g->started_diag) pthread_join(g->th_diag, NULL);
    if (g->started_prep) pthread_join(g->th_prep, NULL);
    if (g->E == &g->own_E) evalset_free(&g->own_E);
    moe_free(&g->own_a);
    moe_free(&g->own_b);
    views_free(g);
    for (int m = 0; m < COST_NMETHODS; m++)
        for (int c = 0; c < 2; c++) dg_list_free(&g->diag_res[m][c]);
    for (int i = 0; i < CURVE_CACHE; i++)
        if (g->cache[i].used) ls_curve_free(&g->cache[i].c);
    explore_snapshot_free(&g->pub);
    for (int m = 0; m < COST_NMETHODS; m++) free(g->cost[m]);
    free(g->cost_expert);
    for (int i = 0; i < LS_SLOTS; i++) {
        free(g->saved[i].rows);
        free(g->saved[i].orders);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv_front);
    pthread_cond_destroy(&g->cv_ls);
    pthread_cond_destroy(&g->cv_diag);
    pthread_cond_destroy(&g->cv_costs);
    free(g);
}
