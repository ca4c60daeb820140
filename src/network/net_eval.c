/* net_eval.c - the network's evaluation set and threaded evaluation (net_eval.h). */
#include "network/net_eval.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blas_threads.h"
#include "core/env.h"
#include "core/progress.h"
#include "core/test_hooks.h"
#include "io/safetensors.h"
#include "network/net_forward.h"

/* ---- the threaded driver ---- */

typedef struct {
    const net_model *m;
    const net_evalset *E;
    const net_prefix *p;   /* NULL: computed per item */
    const net_run *r;      /* NULL: the prefix only (into prefix_out) */
    float *prefix_out;     /* (N T, d) the prefix job's output */
    int T;                 /* tokens per sequence (net_tokens) */
    int stop_L;            /* r->inputs_only: the block whose inputs are the last wanted, else -1 */
    int L0, spi, items;    /* first MoE block, sequences per item, items */
    const moe_model *const *moe;
    int nmoe, nmax;
    double *loss;          /* (items) */
    long *ok;              /* (items) */
    double *lmean, *lfrac; /* (items, nmoe, nmax) load sums */
    atomic_int *cancel;
    long next;             /* the next item, atomic */
    int stopped;           /* a worker saw the cancel */
    pthread_t owner;       /* the caller's thread: the one that reports progress */
    long units, nunits;    /* rows x stages done (atomic) and in all; a stage is a
                              block or the head */
    int stages;            /* stages per row */
    /* the pieces of the steps in flight (MLP panels, attention heads, the
       head's column slices), shared with the threads that have no item left
       (one long sequence then uses every core): under pmu */
    pthread_mutex_t pmu;
    pthread_cond_t pcv;    /* a task posted, or the last item taken */
    pthread_cond_t pdone;  /* a piece finished */
    struct panel_task *tasks; /* (threads) one per item owner; NULL while unused */
    int ntasks, owners;    /* slots, threads still running items */
    float **S;             /* (threads) each thread's (T, T) attention workspace, made on first use */
} net_job;

struct panel_task;
typedef void (*panel_fn)(net_job *j, const struct panel_task *t, int p, int slot);

/* one step's pieces: any thread computes any of them (fn, on the owner's
 * buffers: disjoint rows or columns), so the result is the same whoever does
 * which */
typedef struct panel_task {
    int open, next, finished, npanels;
    panel_fn fn;
    int L, M, T, ns, s0, r0, rows;
    const moe_model *moe;
    float *h, *G, *lg;
    const net_ws *w;
} panel_task;

/* Stop at the next check? (marks the job stopped) */
static int job_cancelled(net_job *j) {
    if (!j->cancel || !atomic_load(j->cancel)) return 0;
    __atomic_store_n(&j->stopped, 1, __ATOMIC_RELAXED);
    return 1;
}

/* k more rows x stages done; the caller's thread tells its listener the rows
 * (progress_inner): the explorer shows the evaluation in flight */
static void job_advance(net_job *j, long k) {
    long u = __atomic_add_fetch(&j->units, k, __ATOMIC_RELAXED);
    if (pthread_equal(pthread_self(), j->owner))
        progress_inner(NET_EVAL_ROWS, (double)u / j->stages, (double)j->nunits / j->stages);
}

/* MOESCOPE_TEST_EVAL_GATE (net_eval.h): every item but the first waits for the
 * file, or the cancel */
static int gate_stop(void *j) { return job_cancelled(j); }
static void test_gate(net_job *j, long it) {
    if (it > 0) test_hook_hold(HOOK_EVAL_GATE, gate_stop, j);
}

/* a piece's view of the item's workspace with the job's cancel: its products stop
 * between slices (net_forward.c) */
static net_ws cancellable(const net_job *j, const net_ws *w) {
    net_ws v = *w;
    v.stop = j->cancel;
    return v;
}

/* MLP panel p: h += mlp(w->x) over its rows, w's row buffers viewed from the
 * panel's first row (moe_forward's own chunks are as wide: the same sums) */
static void mlp_piece(net_job *j, const panel_task *t, int p, int slot) {
    (void)slot;
    int d = j->m->cfg.d, n = t->moe ? t->moe->cfg.n : 0;
    int r = p * NET_PANEL_ROWS, rows = t->M - r < NET_PANEL_ROWS ? t->M - r : NET_PANEL_ROWS;
    net_ws v = cancellable(j, t->w); // a cancel stops the panel between two experts or slices
    // each panel its own rows of every buffer: y's are 2 ff wide for a gated MLP
    v.x += (size_t)r * d, v.o += (size_t)r * d, v.y += (size_t)r * net_ws_y_width(&j->m->cfg);
    net_mlp_apply(j->m, t->L, t->moe, t->h + (size_t)r * d, rows, &v, t->G ? t->G + (size_t)r * n : NULL);
}

/* the rows of panel p of M */
static int panel_rows(int M, int p) { return M - p * NET_PANEL_ROWS < NET_PANEL_ROWS ? M - p * NET_PANEL_ROWS : NET_PANEL_ROWS; }

static void attn_in_piece(net_job *j, const panel_task *t, int p, int slot) {
    (void)slot;
    net_ws v = cancellable(j, t->w);
    net_attn_in(j->m, t->L, t->h, p * NET_PANEL_ROWS, panel_rows(t->M, p), t->T, &v);
}

/* piece p: sequence p / nh's head p % nh, in the running thread's workspace */
static void attn_head_piece(net_job *j, const panel_task *t, int p, int slot) {
    if (!j->S[slot]) j->S[slot] = ms_malloc((size_t)t->T * t->T * sizeof(float));
    int nh = j->m->cfg.nhead;
    net_attn_head(j->m, t->L, p / nh, p % nh, t->T, t->w, j->S[slot]);
}

static void attn_out_piece(net_job *j, const panel_task *t, int p, int slot) {
    (void)slot;
    net_ws v = cancellable(j, t->w);
    net_attn_out(j->m, t->L, t->h, p * NET_PANEL_ROWS, panel_rows(t->M, p), &v);
}

static void head_cols_piece(net_job *j, const panel_task *t, int p, int slot) {
    (void)slot;
    net_ws v = cancellable(j, t->w);
    net_head_cols(j->m, t->rows, p, &v, t->lg);
}

#define LOSS_ROWS 16 /* logit rows per piece of the loss */
static void head_loss_piece(net_job *j, const panel_task *t, int p, int slot) {
    (void)slot;
    int ra = p * LOSS_ROWS, rb = ra + LOSS_ROWS < t->rows ? ra + LOSS_ROWS : t->rows;
    net_head_losses(j->m, j->E, t->s0, t->r0, ra, rb, t->lg, t->w);
}

/* Take and run task t's pieces until none is left (the cancel skips the
 * rest), as the thread of slot `slot`; pmu held, released while a piece runs. */
static void panels_take(net_job *j, panel_task *t, int slot) {
    while (t->next < t->npanels) {
        int p = t->next++;
        int skip = job_cancelled(j);
        pthread_mutex_unlock(&j->pmu);
        if (!skip) t->fn(j, t, p, slot);
        pthread_mutex_lock(&j->pmu);
        if (++t->finished == t->npanels) pthread_cond_broadcast(&j->pdone);
    }
}

/* Run task t's pieces, with a cancel check between them; threads without an
 * item left help (posted as the task of slot `slot`). -1: cancelled. */
static int run_pieces(net_job *j, int slot, panel_task t) {
    t.open = 1;
    if (t.npanels < 2 || !j->tasks) {
        for (int p = 0; p < t.npanels; p++) {
            if (p > 0 && job_cancelled(j)) return -1;
            t.fn(j, &t, p, slot);
        }
        return job_cancelled(j) ? -1 : 0;
    }
    pthread_mutex_lock(&j->pmu);
    j->tasks[slot] = t;
    pthread_cond_broadcast(&j->pcv);
    panels_take(j, &j->tasks[slot], slot);
    while (j->tasks[slot].finished < t.npanels) pthread_cond_wait(&j->pdone, &j->pmu);
    j->tasks[slot].open = 0;
    pthread_mutex_unlock(&j->pmu);
    return job_cancelled(j) ? -1 : 0;
}

static int npanels(int M) { return (M + NET_PANEL_ROWS - 1) / NET_PANEL_ROWS; }

/* h += mlp(w->x) of block L over M rows, in panels of NET_PANEL_ROWS */
static int mlp_panels(net_job *j, int slot, int L, const moe_model *moe, float *h, int M, const net_ws *w,
                      float *G) {
    return run_pieces(j, slot, (panel_task){.fn = mlp_piece, .npanels = npanels(M), .L = L, .moe = moe, .h = h,
                                            .G = G, .w = w, .M = M});
}

/* h += attention of block L over ns sequences: q | k | v by row panels, the
 * heads one piece each, the output projection by row panels */
static int attn_pieces(net_job *j, int slot, int L, float *h, int ns, const net_ws *w) {
    int M = ns * j->T;
    panel_task t = {.fn = attn_in_piece, .npanels = npanels(M), .L = L, .M = M, .T = j->T, .h = h, .w = w};
    if (run_pieces(j, slot, t)) return -1;
    t.fn = attn_head_piece, t.npanels = ns * j->m->cfg.nhead;
    if (run_pieces(j, slot, t)) return -1;
    t.fn = attn_out_piece, t.npanels = npanels(M);
    return run_pieces(j, slot, t);
}

/* The head and the loss of the item's ns sequences from s0 (h (ns T, d)) into
 * *loss and *ok (and each sequence's own sum into seq (ns) when not NULL):
 * slices of w->head_rows logit rows, each normed, then its column slices and
 * its rows' losses as pieces, summed in row order. -1: cancelled. */
static int head_pieces(net_job *j, int slot, const float *h, int s0, int ns, const net_ws *w, float *logits,
                       double *loss, long *ok, double *seq) {
    const net_model *m = j->m;
    int V = m->cfg.vocab, per = net_logit_rows(m, j->T), R = ns * per;
    for (int r0 = 0; r0 < R; r0 += w->head_rows) {
        if (r0 > 0 && job_cancelled(j)) return -1;
        int rows = R - r0 < w->head_rows ? R - r0 : w->head_rows;
        net_head_norm(m, h, j->T, r0, rows, w);
        panel_task t = {.fn = head_cols_piece, .npanels = net_head_slices(V), .rows = rows, .r0 = r0, .s0 = s0,
                        .lg = logits ? logits + (size_t)r0 * V : w->lg, .w = w};
        if (run_pieces(j, slot, t)) return -1;
        t.fn = head_loss_piece, t.npanels = (rows + LOSS_ROWS - 1) / LOSS_ROWS;
        if (run_pieces(j, slot, t)) return -1;
        for (int r = 0; r < rows; r++) *loss += w->rl[r], *ok += w->rh[r];
        for (int r = 0; seq && r < rows; r++) seq[(r0 + r) / per] += w->rl[r];
    }
    return 0;
}

/* A thread with no item left: the other items' panels until every item is
 * done. */
static void panels_help(net_job *j, int slot) {
    pthread_mutex_lock(&j->pmu);
    j->owners--;
    pthread_cond_broadcast(&j->pcv);
    for (;;) {
        panel_task *t = NULL;
        for (int i = 0; i < j->ntasks && !t; i++)
            if (j->tasks[i].open && j->tasks[i].next < j->tasks[i].npanels) t = &j->tasks[i];
        if (t) {
            panels_take(j, t, slot);
            continue;
        }
        if (j->owners == 0) break;
        pthread_cond_wait(&j->pcv, &j->pmu);
    }
    pthread_mutex_unlock(&j->pmu);
}

/* The blocks from the first MoE block L0 on, for one item's rows h (ns
 * sequences): L0's attention is done (the prefix ends after it), so its MLP
 * comes first. An MoE block's input may be edited, then captured, before it
 * computes (prev (M, d): the previous MoE block's input, kept when there is an
 * edit). The MoE blocks' gate weights go through G ((M, nmax)) into the item's
 * load sums when they are asked for. -1: cancelled between blocks or panels. */
static int item_tail(net_job *j, int slot, int it, float *h, int ns, net_ws *w, float *G, float *prev) {
    const net_model *m = j->m;
    const net_run *r = j->r;
    int T = j->T, M = ns * T, d = m->cfg.d, have_prev = 0;
    size_t r0 = (size_t)it * j->spi * T; // the item's first row
    for (int L = j->L0; L < m->cfg.nlayer; L++) {
        if (L > j->L0 && job_cancelled(j)) return -1;
        if (L > j->L0 && attn_pieces(j, slot, L, h, ns, w)) return -1;
        int mi = m->cfg.moe_of[L];
        const moe_model *moe = mi >= 0 ? j->moe[mi] : NULL;
        float *g = moe && j->lmean ? G : NULL;
        net_mlp_input(m, L, h, M, w);
        if (moe && r->edit) r->edit->fn(r->edit->ctx, mi, w->x, have_prev ? prev : NULL, M, r0);
        if (moe && r->block_inputs && r->block_inputs[mi]) {
            long keep = r->block_rows > 0 ? r->block_rows - (long)r0 : M; // rows wanted from r0 on
            if (keep > 0) memcpy(r->block_inputs[mi] + r0 * d, w->x, (size_t)(keep < M ? keep : M) * d * sizeof(float));
        }
        if (L == j->stop_L) return 0; // inputs_only: the last inputs wanted are in
        if (moe && r->edit) {
            memcpy(prev, w->x, (size_t)M * d * sizeof(float));
            have_prev = 1;
        }
        if (mlp_panels(j, slot, L, moe, h, M, w, g)) return -1;
        job_advance(j, M);
        if (!g) continue;
        int n = moe->cfg.n;
        double *lm = j->lmean + ((size_t)it * j->nmoe + mi) * j->nmax;
        double *lf = j->lfrac + ((size_t)it * j->nmoe + mi) * j->nmax;
        for (int row = 0; row < M; row++)
            for (int i = 0; i < n; i++) {
                float gv = g[(size_t)row * n + i];
                lm[i] += gv;
                lf[i] += gv > 0.0f;
            }
    }
    return 0;
}

/* one item: the prefix (from the embedding, or copied from p), then the tail,
 * the head and the loss */
static void run_item(net_job *j, int slot, int it, float *h, net_ws *w, float *G, float *prev) {
    const net_model *m = j->m;
    int T = j->T, d = m->cfg.d, N = j->E->N;
    int s0 = it * j->spi, ns = N - s0 < j->spi ? N - s0 : j->spi;
    size_t r0 = (size_t)s0 * T, M = (size_t)ns * T;
    if (j->stop_L >= 0 && j->r->block_rows > 0 && (long)r0 >= j->r->block_rows) { // inputs_only: no row wanted
        job_advance(j, (long)M * j->stages);
        return;
    }
    if (j->p) {
        memcpy(h, j->p->h + r0 * d, M * d * sizeof(float));
    } else {
        net_embed(m, j->E, s0, ns, h, w);
        for (int L = 0; L < j->L0; L++) {
            if (job_cancelled(j)) return;
            if (attn_pieces(j, slot, L, h, ns, w)) return;
            net_mlp_input(m, L, h, (int)M, w);
            int mi = m->cfg.moe_of[L]; // a prefix past MoE blocks runs m's own (net_prefix_compute_to)
            if (mlp_panels(j, slot, L, mi >= 0 ? &m->moe[mi] : NULL, h, (int)M, w, NULL)) return;
            job_advance(j, (long)M);
        }
        if (j->L0 < m->cfg.nlayer && attn_pieces(j, slot, j->L0, h, ns, w)) return;
    }
    if (!j->r) { // the prefix job
        memcpy(j->prefix_out + r0 * d, h, M * d * sizeof(float));
        job_advance(j, (long)M);
        return;
    }
    if (item_tail(j, slot, it, h, ns, w, G, prev) || job_cancelled(j)) return;
    if (j->stop_L >= 0) { // inputs_only: no head
        job_advance(j, (long)M);
        return;
    }
    j->loss[it] = 0.0;
    j->ok[it] = 0;
    size_t lrow = (size_t)s0 * net_logit_rows(m, T); // the item's first row of logits
    double *seq = j->r->seq_loss ? j->r->seq_loss + s0 : NULL;
    if (seq) memset(seq, 0, (size_t)ns * sizeof(double));
    if (head_pieces(j, slot, h, s0, ns, w, j->r->logits ? j->r->logits + lrow * m->cfg.vocab : NULL, &j->loss[it],
                    &j->ok[it], seq))
        return;
    job_advance(j, (long)M);
}

typedef struct {
    net_job *j;
    int slot; /* the thread's panel task slot */
} net_thread;

static void *net_worker(void *arg) {
    const net_thread *me = arg;
    net_job *j = me->j;
    int T = j->T, cap = j->spi * T, have = 0;
    net_ws w;
    float *h = NULL, *G = NULL, *prev = NULL;
    for (;;) {
        if (job_cancelled(j)) break;
        long it = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (it >= j->items) break;
        if (!have) { // a thread that only helps with panels needs none of this
            net_ws_alloc(&w, &j->m->cfg, cap, T);
            h = ms_malloc((size_t)cap * j->m->cfg.d * sizeof(float));                // (cap, d)
            G = ms_malloc((size_t)cap * (j->nmax ? j->nmax : 1) * sizeof(float));     // (cap, nmax)
            if (j->r && j->r->edit) prev = ms_malloc((size_t)cap * j->m->cfg.d * sizeof(float)); // (cap, d)
            have = 1;
        }
        test_gate(j, it);
        if (job_cancelled(j)) break;
        run_item(j, me->slot, (int)it, h, &w, G, prev);
    }
    if (j->tasks) panels_help(j, me->slot);
    if (have) net_ws_free(&w);
    free(h);
    free(G);
    free(prev);
    return NULL;
}

/* Threads: one per item up to par->threads; when items are fewer, the other
 * threads help with the pieces of their steps. */
static int net_run_job(net_job *j, const net_par *par, ms_err *err) {
    j->next = 0;
    long want = par && par->threads > 0 ? par->threads : sysconf(_SC_NPROCESSORS_ONLN);
    want = want < 1 ? 1 : want > 8 ? 8 : want;
    long nt = want < j->items ? want : j->items;
    if (nt < want) nt = want; // the extra threads take pieces of the items' steps
    // the caller's own cancel (progress_listen's) when none is given: the explorer's threads
    j->cancel = par && par->cancel ? par->cancel : progress_cancel_flag();
    j->owner = pthread_self();
    j->units = 0;
    progress_inner(NET_EVAL_ROWS, 0, (double)j->nunits / j->stages);
    if (nt > 1) {
        pthread_mutex_init(&j->pmu, NULL);
        pthread_cond_init(&j->pcv, NULL);
        pthread_cond_init(&j->pdone, NULL);
        j->tasks = ms_calloc((size_t)nt, sizeof(panel_task));
        j->ntasks = (int)nt;
        j->owners = (int)nt;
    }
    j->S = ms_calloc((size_t)nt, sizeof(float *));
    blas_single_enter();
    pthread_t th[8];
    net_thread me[8];
    int started = 0;
    for (long t = 0; t < nt; t++) me[t] = (net_thread){j, (int)t};
    for (long t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, net_worker, &me[t]) == 0) started++;
        else if (j->tasks) { // never started: it runs no item and helps with no panel
            pthread_mutex_lock(&j->pmu);
            j->owners--;
            pthread_mutex_unlock(&j->pmu);
        }
    net_worker(&me[0]);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    blas_single_leave();
    for (long t = 0; t < nt; t++) free(j->S[t]);
    free(j->S);
    if (j->tasks) {
        free(j->tasks);
        j->tasks = NULL;
        pthread_mutex_destroy(&j->pmu);
        pthread_cond_destroy(&j->pcv);
        pthread_cond_destroy(&j->pdone);
    }
    return j->stopped ? ms_fail(err, "cancelled") : 0;
}

static void job_init(net_job *j, const net_model *m, const net_evalset *E) {
    memset(j, 0, sizeof *j);
    j->m = m;
    j->E = E;
    j->L0 = m->cfg.nmoe ? m->cfg.moe_layers[0] : m->cfg.nlayer;
    j->T = net_tokens(m, E);
    j->spi = NET_ITEM_TOKENS / j->T > 1 ? NET_ITEM_TOKENS / j->T : 1;
    j->items = (E->N + j->spi - 1) / j->spi;
    j->stop_L = -1;
}

/* the stages each row goes through: the blocks to run (and the head), or the prefix's */
static void job_stages(net_job *j, int prefix_only, int from_prefix) {
    int nl = j->stop_L >= 0 ? j->stop_L : j->m->cfg.nlayer; // inputs_only: up to that block, no head
    j->stages = prefix_only ? j->L0 + 1 : (from_prefix ? 0 : j->L0) + (nl - j->L0) + 1;
    j->nunits = (long)j->E->N * j->T * j->stages;
}

/* E for m: whole (net_evalset_check), or its shapes when the caller bounded the magnitudes */
static int evalset_checked(const net_evalset *E, const net_model *m, const net_par *par, ms_err *err) {
    return par && par->checked ? net_evalset_check_shape(E, m, err) : net_evalset_check(E, m, err);
}

int net_prefix_compute(const net_model *m, const net_evalset *E, const net_par *par, net_prefix *p,
                       ms_err *err) {
    return net_prefix_compute_to(m, E, par, m->cfg.nmoe ? m->cfg.moe_layers[0] : m->cfg.nlayer, p, err);
}

int net_prefix_compute_to(const net_model *m, const net_evalset *E, const net_par *par, int L0, net_prefix *p,
                          ms_err *err) {
    memset(p, 0, sizeof *p);
    if (evalset_checked(E, m, par, err)) return -1;
    net_job j;
    job_init(&j, m, E);
    if (L0 >= j.L0 && L0 <= m->cfg.nlayer) j.L0 = L0;
    p->L0 = j.L0;
    p->h = ms_malloc((size_t)E->N * j.T * m->cfg.d * sizeof(float));
    j.prefix_out = p->h;
    job_stages(&j, 1, 0);
    if (net_run_job(&j, par, err)) {
        net_prefix_free(p);
        return -1;
    }
    return 0;
}

void net_prefix_free(net_prefix *p) {
    free(p->h);
    p->h = NULL;
}

int net_evaluate(const net_model *m, const net_evalset *E, const net_prefix *p, const net_run *r,
                 const net_par *par, net_eval_result *out, ms_err *err) {
    memset(out, 0, sizeof *out);
    if (evalset_checked(E, m, par, err)) return -1;
    net_job j;
    job_init(&j, m, E);
    const moe_model **own = ms_malloc((size_t)(m->cfg.nmoe ? m->cfg.nmoe : 1) * sizeof(moe_model *));
    for (int i = 0; i < m->cfg.nmoe; i++) own[i] = r && r->moe ? r->moe[i] : &m->moe[i];
    net_run rr = r ? *r : (net_run){0};
    j.r = &rr;
    j.p = p;
    if (p) j.L0 = p->L0; // the blocks from where the prefix ends
    j.moe = own;
    j.nmoe = m->cfg.nmoe;
    for (int i = 0; i < j.nmoe; i++) j.nmax = own[i]->cfg.n > j.nmax ? own[i]->cfg.n : j.nmax;
    for (int L = 0; rr.inputs_only && rr.block_inputs && L < m->cfg.nlayer; L++) // the last block wanted
        if (m->cfg.moe_of[L] >= 0 && rr.block_inputs[m->cfg.moe_of[L]] && L >= j.L0) j.stop_L = L;
    if (rr.inputs_only && j.stop_L < 0) {
        free(own);
        return ms_fail(err, "%s: an evaluation for MoE blocks' inputs names none from block %d on", m->path, j.L0);
    }
    job_stages(&j, 0, p != NULL);
    j.loss = ms_calloc((size_t)j.items, sizeof(double));
    j.ok = ms_calloc((size_t)j.items, sizeof(long));
    if (rr.want_load && j.nmoe) {
        j.lmean = ms_calloc((size_t)j.items * j.nmoe * j.nmax, sizeof(double));
        j.lfrac = ms_calloc((size_t)j.items * j.nmoe * j.nmax, sizeof(double));
    }
    int rc = net_run_job(&j, par, err);
    if (!rc) {
        double ls = 0.0;
        long ok = 0;
        for (int it = 0; it < j.items; it++) ls += j.loss[it], ok += j.ok[it];
        out->positions = net_positions(m, E);
        out->loss = j.stop_L >= 0 ? NAN : ls / (double)out->positions;
        out->accuracy = j.stop_L >= 0 ? NAN : (double)ok / (double)out->positions;
        if (j.lmean) {
            double tok = (double)E->N * j.T;
            out->nmoe = j.nmoe, out->n = j.nmax;
            out->load_mean = ms_calloc((size_t)j.nmoe * j.nmax, sizeof(double));
            out->load_frac = ms_calloc((size_t)j.nmoe * j.nmax, sizeof(double));
            for (int it = 0; it < j.items; it++)
                for (size_t q = 0; q < (size_t)j.nmoe * j.nmax; q++) {
                    out->load_mean[q] += j.lmean[(size_t)it * j.nmoe * j.nmax + q];
                    out->load_frac[q] += j.lfrac[(size_t)it * j.nmoe * j.nmax + q];
                }
            for (size_t q = 0; q < (size_t)j.nmoe * j.nmax; q++) {
                out->load_mean[q] /= tok;
                out->load_frac[q] /= tok;
            }
        }
    }
    free(own);
    free(j.loss);
    free(j.ok);
    free(j.lmean);
    free(j.lfrac);
    return rc;
}

void net_eval_result_free(net_eval_result *r) {
    free(r->load_mean);
    free(r->load_frac);
    r->load_mean = r->load_frac = NULL;
}
