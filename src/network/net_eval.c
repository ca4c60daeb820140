/* net_eval.c - the network's evaluation set and threaded evaluation (net_eval.h). */
#include "network/net_eval.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blas_threads.h"
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
    int L0, spi, items;    /* first MoE block, sequences per item, items */
    const moe_model *const *moe;
    int nmoe, nmax;
    double *loss;          /* (items) */
    long *ok;              /* (items) */
    double *lmean, *lfrac; /* (items, nmoe, nmax) load sums */
    atomic_int *cancel;
    long next;             /* the next item, atomic */
    int stopped;           /* a worker saw the cancel */
} net_job;

/* The blocks from the first MoE block L0 on, for one item's rows h (ns
 * sequences): L0's attention is done (the prefix ends after it), so its MLP
 * comes first. An MoE block's input may be edited, then captured, before it
 * computes (prev (M, d): the previous MoE block's input, kept when there is an
 * edit). The MoE blocks' gate weights go through G ((M, nmax)) into the item's
 * load sums when they are asked for. */
static void item_tail(const net_job *j, int it, float *h, int ns, net_ws *w, float *G, float *prev) {
    const net_model *m = j->m;
    const net_run *r = j->r;
    int T = j->T, M = ns * T, d = m->cfg.d, have_prev = 0;
    size_t r0 = (size_t)it * j->spi * T; // the item's first row
    for (int L = j->L0; L < m->cfg.nlayer; L++) {
        if (L > j->L0) net_attn_forward(m, L, h, ns, T, w);
        int mi = m->cfg.moe_of[L];
        const moe_model *moe = mi >= 0 ? j->moe[mi] : NULL;
        float *g = moe && j->lmean ? G : NULL;
        net_mlp_input(m, L, h, M, w);
        if (moe && r->edit) r->edit->fn(r->edit->ctx, mi, w->x, have_prev ? prev : NULL, M, r0);
        if (moe && r->block_inputs && r->block_inputs[mi])
            memcpy(r->block_inputs[mi] + r0 * d, w->x, (size_t)M * d * sizeof(float));
        if (moe && r->edit) {
            memcpy(prev, w->x, (size_t)M * d * sizeof(float));
            have_prev = 1;
        }
        net_mlp_apply(m, L, moe, h, M, w, g);
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
}

/* one item: the prefix (from the embedding, or copied from p), then the tail,
 * the head and the loss */
static void run_item(net_job *j, int it, float *h, net_ws *w, float *G, float *prev) {
    const net_model *m = j->m;
    int T = j->T, d = m->cfg.d, N = j->E->N;
    int s0 = it * j->spi, ns = N - s0 < j->spi ? N - s0 : j->spi;
    size_t r0 = (size_t)s0 * T, M = (size_t)ns * T;
    if (j->p) {
        memcpy(h, j->p->h + r0 * d, M * d * sizeof(float));
    } else {
        net_embed(m, j->E, s0, ns, h, w);
        for (int L = 0; L < j->L0; L++) {
            net_attn_forward(m, L, h, ns, T, w);
            net_mlp_forward(m, L, NULL, h, (int)M, w, NULL, NULL);
        }
        if (j->L0 < m->cfg.nlayer) net_attn_forward(m, j->L0, h, ns, T, w);
    }
    if (!j->r) { // the prefix job
        memcpy(j->prefix_out + r0 * d, h, M * d * sizeof(float));
        return;
    }
    item_tail(j, it, h, ns, w, G, prev);
    j->loss[it] = 0.0;
    j->ok[it] = 0;
    size_t lrow = (size_t)s0 * net_logit_rows(m, T); // the item's first row of logits
    net_head_loss(m, h, j->E, s0, ns, w, &j->loss[it], &j->ok[it],
                  j->r->logits ? j->r->logits + lrow * m->cfg.vocab : NULL);
}

static void *net_worker(void *arg) {
    net_job *j = arg;
    int T = j->T, cap = j->spi * T;
    net_ws w;
    net_ws_alloc(&w, &j->m->cfg, cap, T);
    float *h = ms_malloc((size_t)cap * j->m->cfg.d * sizeof(float));      // (cap, d)
    float *G = ms_malloc((size_t)cap * (j->nmax ? j->nmax : 1) * sizeof(float)); // (cap, nmax)
    float *prev = j->r && j->r->edit ? ms_malloc((size_t)cap * j->m->cfg.d * sizeof(float)) : NULL; // (cap, d)
    for (;;) {
        if (j->cancel && atomic_load(j->cancel)) {
            __atomic_store_n(&j->stopped, 1, __ATOMIC_RELAXED);
            break;
        }
        long it = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (it >= j->items) break;
        run_item(j, (int)it, h, &w, G, prev);
    }
    net_ws_free(&w);
    free(h);
    free(G);
    free(prev);
    return NULL;
}

static int net_run_job(net_job *j, const net_par *par, ms_err *err) {
    j->next = 0;
    long nt = par && par->threads > 0 ? par->threads : sysconf(_SC_NPROCESSORS_ONLN);
    nt = nt < 1 ? 1 : nt > 8 ? 8 : nt;
    nt = nt < j->items ? nt : j->items;
    j->cancel = par ? par->cancel : NULL;
    blas_single_enter();
    pthread_t th[8];
    int started = 0;
    for (long t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, net_worker, j) == 0) started++;
    net_worker(j);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    blas_single_leave();
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
}

int net_prefix_compute(const net_model *m, const net_evalset *E, const net_par *par, net_prefix *p,
                       ms_err *err) {
    memset(p, 0, sizeof *p);
    if (net_evalset_check(E, m, err)) return -1;
    net_job j;
    job_init(&j, m, E);
    p->L0 = j.L0;
    p->h = ms_malloc((size_t)E->N * j.T * m->cfg.d * sizeof(float));
    j.prefix_out = p->h;
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
    if (net_evalset_check(E, m, err)) return -1;
    net_job j;
    job_init(&j, m, E);
    const moe_model **own = ms_malloc((size_t)(m->cfg.nmoe ? m->cfg.nmoe : 1) * sizeof(moe_model *));
    for (int i = 0; i < m->cfg.nmoe; i++) own[i] = r && r->moe ? r->moe[i] : &m->moe[i];
    net_run rr = r ? *r : (net_run){0};
    j.r = &rr;
    j.p = p;
    j.moe = own;
    j.nmoe = m->cfg.nmoe;
    for (int i = 0; i < j.nmoe; i++) j.nmax = own[i]->cfg.n > j.nmax ? own[i]->cfg.n : j.nmax;
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
        out->loss = ls / (double)out->positions;
        out->accuracy = (double)ok / (double)out->positions;
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
