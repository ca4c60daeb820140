/* evaluator.c - the MoE forward pass and the loss over an
 * evaluation set.
 *
 * Batched: samples go through in chunks of MOE_CHUNK rows so the workspace
 * stays bounded; every product is an OpenBLAS sgemm in float32. For top-k
 * routing each expert only sees the rows routed to it: those rows are gathered
 * into a contiguous batch, pushed through the expert, and scattered back
 * weighted by their gate, which is where top-k saves work. Losses are
 * accumulated in double. GELU is the exact erf form 0.5 x (1 + erf(x/sqrt 2)).
 * Routing covers the real families' routers (see moe_config in model.h):
 * softmax or sigmoid scores, a selection-only bias, group-limited top-k,
 * renormalised or raw top-k weights, a routed scaling factor. */
#include "model/evaluator.h"
#include "core/blas_threads.h"
#include "core/vrows.h"
#include "model/moe_kernels.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOE_CHUNK 256

/* p (n) = softmax(s) over all experts, stable (max subtracted), in double;
 * e (n) scratch, the exponentials computed once. */
static void softmax_all(const float *s, int n, float *p, double *e) {
    float mx = s[0];
    for (int i = 1; i < n; i++) mx = s[i] > mx ? s[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += e[i] = exp((double)(s[i] - mx));
    for (int i = 0; i < n; i++) p[i] = (float)(e[i] / sum);
}

/* Group-limited selection: rank the groups of q (n) by their largest entry
 * or the sum of their two largest, keep topk_group groups, set q = 0 on the
 * rest (0, not -inf, as the reference implementations do). */
static void groups_mask(const moe_config *c, float *q, float *gs, int *gsel) {
    int G = c->n_group, m = c->n / G, top2[2];
    for (int gi = 0; gi < G; gi++) {
        const float *qg = q + (size_t)gi * m;
        if (c->group_score == GROUP_TOP2_SUM && m >= 2) {
            moe_topk(qg, m, 2, top2);
            gs[gi] = qg[top2[0]] + qg[top2[1]];
        } else {
            float mx = qg[0];
            for (int i = 1; i < m; i++) mx = qg[i] > mx ? qg[i] : mx;
            gs[gi] = mx;
        }
    }
    moe_topk(gs, G, c->topk_group, gsel);
    for (int gi = 0; gi < G; gi++) {
        int keep = 0;
        for (int j = 0; j < c->topk_group; j++) keep |= gsel[j] == gi;
        if (!keep)
            for (int i = 0; i < m; i++) q[(size_t)gi * m + i] = 0.0f;
    }
}

/* One sample's gate weights g (n) from its logits s (n); p, q, e (n), gs, gsel
 * (n_group) and sel (k) are scratch. */
static void route_one(const moe_config *c, const float *corr, const float *s, float *g, float *p,
                      float *q, double *e, float *gs, int *gsel, int *sel) {
    int n = c->n, k = c->k;
    float scale = c->scale != 0.0f ? c->scale : 1.0f; // 0: a zero-initialised config
    int grouped = c->n_group > 1 && c->topk_group < c->n_group;
    if (c->score == SCORE_SPARSEMIXER) { // its own two picks, whatever k says
        moe_sparsemixer(s, n, c->jitter_eps, g);
        for (int i = 0; scale != 1.0f && i < n; i++) g[i] *= scale;
        return;
    }
    if (c->router != ROUTER_TOPK || (k >= n && !grouped)) {
        // dense: every expert with its score
        if (c->score == SCORE_SIGMOID)
            for (int i = 0; i < n; i++) g[i] = (float)(1.0 / (1.0 + exp(-(double)s[i])));
        else softmax_all(s, n, g, e);
        if (c->router == ROUTER_TOPK && c->renorm == RENORM_YES && c->score == SCORE_SIGMOID) {
            double sum = c->renorm_eps;
            for (int i = 0; i < n; i++) sum += g[i];
            for (int i = 0; i < n; i++) g[i] = (float)(g[i] / sum);
        }
        if (scale != 1.0f)
            for (int i = 0; i < n; i++) g[i] *= scale;
        return;
    }
    for (int i = 0; i < n; i++) g[i] = 0.0f;
    if (c->score == SCORE_SOFTMAX && !corr && !grouped) {
        // softmax is monotone: select on the logits; renormalised weights are the
        // softmax over the selected logits (the same numbers, computed directly)
        moe_topk(s, n, k, sel);
        float mx = s[sel[0]];
        double sum = 0.0;
        if (c->renorm == RENORM_YES) {
            for (int j = 0; j < k; j++) sum += exp((double)(s[sel[j]] - mx));
            sum += c->renorm_eps;
        } else {
            for (int i = 0; i < n; i++) sum += exp((double)(s[i] - mx));
        }
        for (int j = 0; j < k; j++)
            g[sel[j]] = (float)(exp((double)(s[sel[j]] - mx)) / sum) * scale;
        return;
    }
    // general: scores p, selection scores q = p + e, groups, top-k on q, weights from p
    if (c->score == SCORE_SIGMOID)
        for (int i = 0; i < n; i++) p[i] = (float)(1.0 / (1.0 + exp(-(double)s[i])));
    else softmax_all(s, n, p, e);
    for (int i = 0; i < n; i++) q[i] = corr ? p[i] + corr[i] : p[i];
    if (grouped) groups_mask(c, q, gs, gsel);
    moe_topk(q, n, k, sel);
    double sum = 1.0;
    if (c->renorm == RENORM_YES) {
        sum = c->renorm_eps;
        for (int j = 0; j < k; j++) sum += p[sel[j]];
    }
    for (int j = 0; j < k; j++) g[sel[j]] = (float)(p[sel[j]] / sum) * scale;
}

void moe_route_full(const moe_config *c, const float *corr, const float *scores, int B, float *g) {
    int n = c->n, G = c->n_group > 1 ? c->n_group : 1, k = c->k > 0 ? c->k : 1;
    float *p = ms_malloc((size_t)n * 2 * sizeof(float)), *q = p + n; // (n), (n)
    double *e = ms_malloc((size_t)n * sizeof(double));                // (n)
    float *gs = ms_malloc((size_t)G * sizeof(float));                 // (n_group)
    int *gsel = ms_malloc((size_t)(G + k) * sizeof(int)), *sel = gsel + G;
    for (int b = 0; b < B; b++)
        route_one(c, corr, scores + (size_t)b * n, g + (size_t)b * n, p, q, e, gs, gsel, sel);
    free(p);
    free(e);
    free(gs);
    free(gsel);
}

int moe_route_tie(const moe_config *c, const float *corr, const float *s) {
    int n = c->n, k = c->k, grouped = c->n_group > 1 && c->topk_group < c->n_group;
    if (c->score == SCORE_SPARSEMIXER) // its picks: the first and second largest logits
        return moe_topk_boundary_tie(s, n, 1) || moe_topk_boundary_tie(s, n, 2);
    if (c->router != ROUTER_TOPK || (k >= n && !grouped)) return 0; // dense: no selection
    if (c->score == SCORE_SOFTMAX && !corr && !grouped) return moe_topk_boundary_tie(s, n, k);
    int G = grouped ? c->n_group : 1;
    float *p = ms_malloc((size_t)n * 2 * sizeof(float)), *q = p + n; // (n), (n)
    float *gs = ms_malloc((size_t)G * sizeof(float));                 // (n_group)
    int *gsel = ms_malloc((size_t)G * sizeof(int));
    double *e = ms_malloc((size_t)n * sizeof(double)); // (n)
    if (c->score == SCORE_SIGMOID)
        for (int i = 0; i < n; i++) p[i] = (float)(1.0 / (1.0 + exp(-(double)s[i])));
    else softmax_all(s, n, p, e);
    free(e);
    for (int i = 0; i < n; i++) q[i] = corr ? p[i] + corr[i] : p[i];
    int tie = 0;
    if (grouped) {
        groups_mask(c, q, gs, gsel);
        tie = moe_topk_boundary_tie(gs, G, c->topk_group);
    }
    tie = tie || moe_topk_boundary_tie(q, n, k);
    free(p);
    free(gs);
    free(gsel);
    return tie;
}

void moe_route(const moe_config *c, const float *scores, int B, float *g) {
    moe_route_full(c, NULL, scores, B, g);
}

typedef struct {
    float *Wr; // (n, d) the gate as the routing reads it (moe_gate_routing), once per call
    float *br; // (n)
    float *S;  // (B, n) gate scores
    float *G;  // (B, n) gate weights
    float *H;  // (B, h) hidden
    float *H3; // (B, h) GLU linear branch
    float *Y;  // (B, d) one expert's output
    float *Xg; // (B, d) gathered rows
    float *D;  // (B, d) layer output D(x)
    int *rows; // (B) indices of the gathered rows
} workspace;

static void ws_alloc(workspace *w, const moe_model *m, int B) {
    const moe_config *c = &m->cfg;
    size_t b = (size_t)B, n = (size_t)c->n, d = (size_t)c->d;
    size_t h = (size_t)(c->hs > c->h ? c->hs : c->h); // routed and shared experts share H
    w->Wr = ms_malloc((n * d + n) * sizeof(float));
    w->br = w->Wr + n * d;
    moe_gate_routing(m, w->Wr, w->br);
    w->S = ms_malloc(b * n * sizeof(float));
    w->G = ms_malloc(b * n * sizeof(float));
    w->H = ms_malloc(b * h * sizeof(float));
    w->H3 = moe_act_glu(c->act) ? ms_malloc(b * h * sizeof(float)) : NULL;
    w->Y = ms_malloc(b * d * sizeof(float));
    w->Xg = ms_malloc(b * d * sizeof(float));
    w->D = ms_malloc(b * d * sizeof(float));
    w->rows = ms_malloc(b * sizeof(int));
}

static void ws_free(workspace *w) {
    free(w->Wr);
    free(w->S);
    free(w->G);
    free(w->H);
    free(w->H3);
    free(w->Y);
    free(w->Xg);
    free(w->D);
    free(w->rows);
}

/* sig(v . x) for one sample: the Qwen2-MoE shared expert's gate. */
static float shared_gate(const moe_model *m, const float *x) {
    double a = 0.0;
    for (int j = 0; j < m->cfg.d; j++) a += (double)m->shared_gate_w[j] * x[j];
    return (float)(1.0 / (1.0 + exp(-a)));
}

/* Add the shared experts' (gated) sum to D (B, d) for X (B, d). */
static void shared_chunk(const moe_model *m, const float *X, int B, workspace *w, float *D) {
    const moe_config *c = &m->cfg;
    moe_config sc = moe_shared_config(c);
    int d = c->d;
    for (int j = 0; j < c->s; j++) {
        moe_expert_forward(&m->shared[j], &sc, X, B, w->H, w->H3, w->Y);
        if (c->shared_gated) {
            for (int b = 0; b < B; b++) {
                float gb = shared_gate(m, X + (size_t)b * d);
                float *dr = D + (size_t)b * d, *yr = w->Y + (size_t)b * d;
                for (int q = 0; q < d; q++) dr[q] += gb * yr[q];
            }
        } else {
            for (size_t q = 0; q < (size_t)B * d; q++) D[q] += w->Y[q];
        }
    }
}

/* D (B, d) = [sig(v.x)] sum_j E^sh_j(x) + sum_i g_i(x) E_i(x) [+ o] for X (B, d)
 * into D (B, d); G (B, n) in w->G. stop (NULL: none) set: D is left between
 * two experts, incomplete (moe_forward_until's caller discards it). */
static void layer_chunk_until(const moe_model *m, const float *X, int B, workspace *w, float *D,
                              atomic_int *stop) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d;
    moe_gate_logits_with(w->Wr, w->br, n, d, X, B, w->S); // S (B, n)
    moe_route_full(c, m->corr_b, w->S, B, w->G);
    memset(D, 0, (size_t)B * d * sizeof(float));
    shared_chunk(m, X, B, w, D);
    for (int i = 0; i < n; i++) {
        if (stop && atomic_load_explicit(stop, memory_order_relaxed)) return;
        // rows with g_i > 0; under dense routing that is (nearly) every row
        int cnt = 0;
        for (int b = 0; b < B; b++)
            if (w->G[(size_t)b * n + i] > 0.0f) w->rows[cnt++] = b;
        if (cnt == 0) continue;
        const float *Xi = X;
        if (cnt < B) {
            for (int r = 0; r < cnt; r++)
                memcpy(w->Xg + (size_t)r * d, X + (size_t)w->rows[r] * d, (size_t)d * sizeof(float));
            Xi = w->Xg;
        }
        moe_expert_forward(&m->experts[i], c, Xi, cnt, w->H, w->H3, w->Y);
        for (int r = 0; r < cnt; r++) {
            int b = cnt < B ? w->rows[r] : r;
            float gi = w->G[(size_t)b * n + i];
            moe_row_axpy(D + (size_t)b * d, gi, w->Y + (size_t)r * d, d);
        }
    }
    if (m->out_b)
        for (int b = 0; b < B; b++) moe_row_add(D + (size_t)b * d, m->out_b, d);
}

/* Z (B, d) and optionally G (B, n) for B <= MOE_CHUNK rows, with workspace w:
 * D(x) made in Z, then x added (D + x: the bits of x + D) */
static void layer_chunk(const moe_model *m, const float *X, int B, workspace *w, float *D) {
    layer_chunk_until(m, X, B, w, D, NULL);
}

static void forward_chunk(const moe_model *m, const float *X, int B, float *Z, float *G,
                          workspace *w, atomic_int *stop) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d;
    layer_chunk_until(m, X, B, w, Z, stop);
    if (c->residual) vr_add(Z, X, B * d);
    if (G) memcpy(G, w->G, (size_t)B * n * sizeof(float));
}

void moe_forward_until(const moe_model *m, const float *X, int B, float *Z, float *G, atomic_int *stop) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d;
    workspace w;
    ws_alloc(&w, m, B < MOE_CHUNK ? (B > 0 ? B : 1) : MOE_CHUNK);
    for (int b0 = 0; b0 < B; b0 += MOE_CHUNK) {
        int bs = B - b0 < MOE_CHUNK ? B - b0 : MOE_CHUNK;
        forward_chunk(m, X + (size_t)b0 * d, bs, Z + (size_t)b0 * d, G ? G + (size_t)b0 * n : NULL,
                      &w, stop);
    }
    ws_free(&w);
}

void moe_forward(const moe_model *m, const float *X, int B, float *Z, float *G) {
    moe_forward_until(m, X, B, Z, G, NULL);
}

/* e(x) for one sample with plain loops, accumulating dot products in double;
 * c carries the expert's hidden width. */
static void expert_ref(const moe_expert *e, const moe_config *c, const float *x, float *hbuf,
                       float *y) {
    int d = c->d, h = c->h;
    for (int u = 0; u < h; u++) {
        double a = e->fc1_b[u];
        for (int j = 0; j < d; j++) a += (double)e->fc1_w[(size_t)u * d + j] * x[j];
        if (moe_act_glu(c->act)) {
            double l = e->fc3_b[u];
            for (int j = 0; j < d; j++) l += (double)e->fc3_w[(size_t)u * d + j] * x[j];
            if (c->act == ACT_GPT_OSS) {
                double L = c->act_limit > 0.0f ? c->act_limit : 7.0, gg = a < L ? a : L, uu = l < -L ? -L : l > L ? L : l;
                hbuf[u] = (float)((uu + 1.0) * gg / (1.0 + exp(-1.702 * gg)));
            } else {
                hbuf[u] = (float)(a / (1.0 + exp(-a)) * l);
            }
        } else if (c->act == ACT_GELU) {
            hbuf[u] = (float)(0.5 * a * (1.0 + erf(a / sqrt(2.0))));
        } else if (c->act == ACT_GELU_TANH) {
            hbuf[u] = (float)(0.5 * a * (1.0 + tanh(0.79788456080286536 * (a + 0.044715 * a * a * a))));
        } else {
            hbuf[u] = (float)(a > 0 ? a : 0);
        }
    }
    for (int j = 0; j < d; j++) {
        double a = e->fc2_b[j];
        for (int u = 0; u < h; u++) a += (double)e->fc2_w[(size_t)j * h + u] * hbuf[u];
        y[j] = (float)a;
    }
}

void moe_forward_ref(const moe_model *m, const float *X, int B, float *Z, float *G) {
    const moe_config *c = &m->cfg;
    moe_config sc = moe_shared_config(c);
    int n = c->n, d = c->d;
    float *s = ms_malloc((size_t)n * sizeof(float));
    float *g = ms_malloc((size_t)n * sizeof(float));
    float *hbuf = ms_malloc((size_t)(c->hs > c->h ? c->hs : c->h) * sizeof(float));
    float *y = ms_malloc((size_t)d * sizeof(float));
    double *acc = ms_malloc((size_t)d * sizeof(double));
    float *Wr = ms_malloc(((size_t)n * d + n) * sizeof(float)), *br = Wr + (size_t)n * d; // (n, d), (n)
    moe_gate_routing(m, Wr, br); // the gate the fast path routes by
    for (int b = 0; b < B; b++) {
        const float *x = X + (size_t)b * d;
        for (int i = 0; i < n; i++) {
            double a = br[i];
            for (int j = 0; j < d; j++) a += (double)Wr[(size_t)i * d + j] * x[j];
            s[i] = (float)a;
        }
        moe_route_full(c, m->corr_b, s, 1, g);
        for (int j = 0; j < d; j++) acc[j] = m->out_b ? m->out_b[j] : 0.0;
        double sg = c->shared_gated ? shared_gate(m, x) : 1.0;
        for (int q = 0; q < c->s; q++) {
            expert_ref(&m->shared[q], &sc, x, hbuf, y);
            for (int j = 0; j < d; j++) acc[j] += sg * y[j];
        }
        for (int i = 0; i < n; i++) {
            if (g[i] == 0.0f) continue;
            expert_ref(&m->experts[i], c, x, hbuf, y);
            for (int j = 0; j < d; j++) acc[j] += (double)g[i] * y[j];
        }
        for (int j = 0; j < d; j++)
            Z[(size_t)b * d + j] = (float)(c->residual ? x[j] + acc[j] : acc[j]);
        if (G) memcpy(G + (size_t)b * n, g, (size_t)n * sizeof(float));
    }
    free(s);
    free(g);
    free(hbuf);
    free(y);
    free(acc);
    free(Wr);
}

void moe_head(const moe_model *m, const float *Z, int B, float *logits) {
    const moe_config *c = &m->cfg;
    int d = c->d, C = c->C;
    const float *in = Z;
    float *Y = NULL;
    if (c->has_norm) {
        // LayerNorm over d, biased variance, eps 1e-5; statistics in double
        Y = ms_malloc((size_t)B * d * sizeof(float)); // (B, d)
        for (int b = 0; b < B; b++) // core/vrows.h, in the vector form that runs
            vr_layernorm(Z + (size_t)b * d, d, m->norm_w, m->norm_b, 1e-5, Y + (size_t)b * d);
        in = Y;
    }
    // logits (B, C) = Y (B, d) H^T + c, H is (C, d)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, C, d, 1.0f, in, d, m->head_w, d, 0.0f,
                logits, C);
    for (int b = 0; b < B; b++)
        for (int q = 0; q < C; q++) logits[(size_t)b * C + q] += m->head_b[q];
    free(Y);
}

void moe_loss_rows(const float *logits, int N, int C, const int32_t *labels, const float *targets,
                   double *loss_sum, long *correct) {
    double loss = 0.0;
    long ok = 0;
    for (int b = 0; b < N; b++) {
        const float *lr = logits + (size_t)b * C; // (C)
        if (labels) {
            // cross-entropy by log-sum-exp in double; argmax ties to the smaller index
            // (a row at a time: core/vrows.h's log-sum-exp, its lanes along a row, is
            // no faster at these C)
            int y = labels[b], am = 0;
            for (int q = 1; q < C; q++)
                if (lr[q] > lr[am]) am = q;
            double mx = lr[am], se = 0.0;
            for (int q = 0; q < C; q++) se += exp((double)lr[q] - mx);
            loss += mx + log(se) - (double)lr[y];
            ok += am == y;
        } else {
            const float *t = targets + (size_t)b * C; // (C)
            for (int q = 0; q < C; q++) {
                double df = (double)lr[q] - t[q];
                loss += df * df;
            }
        }
    }
    *loss_sum += loss;
    if (correct) *correct += ok;
}

static void result_init(moe_eval_result *r, int n) {
    r->loss = 0.0;
    r->accuracy = -1.0;
    r->load_mean = ms_calloc((size_t)n, sizeof(double));
    r->load_frac = ms_calloc((size_t)n, sizeof(double));
}

static void load_accumulate(moe_eval_result *r, const float *G, int B, int n) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++) {
            float g = G[(size_t)b * n + i];
            r->load_mean[i] += g;
            r->load_frac[i] += g > 0.0f ? 1.0 : 0.0;
        }
}

/* ---- the evaluation driver: items of EV_ITEM rows on worker threads ----
 *
 * Each worker owns a workspace and takes the next item from an atomic
 * counter, so a worker whose core is busy with another program just takes
 * fewer items: nobody waits for a slow thread except at the very end (the
 * old driver gave BLAS both cores per 256-row product, and on a busy machine
 * every tiny product waited for the BLAS thread that had no core: 10x
 * slower). BLAS runs single-threaded inside the workers: one parallel layer.
 *
 * Bit-for-bit the same for any thread count: the items are fixed (EV_ITEM
 * rows from the first; which thread takes which does not matter), every
 * product runs on one BLAS thread (a BLAS split of the rows would move them
 * to other kernels: sgemm's edge tiles round differently from its full
 * ones), each item's logits and gate weights are stored per row, and the loss
 * and load are reduced afterwards in sample order. tests/unit/test_evaluator.c
 * checks it for every router and activation. */
#define EV_ITEM 1024 /* rows per item: products big enough to run at speed, workspace in L2 */

typedef struct {
    const moe_model *m;
    const float *X; /* (N, d) inputs */
    int N;
    float *G;   /* (N, n) gate weights of every row */
    float *L;   /* (N, C) logits of every row, or NULL for layer-only */
    double *ss; /* (N) sum over the row of D(x)^2, layer-only; else NULL */
    long next;  /* first row of the next item, atomic */
} ev_job;

static void *ev_worker(void *arg) {
    ev_job *j = arg;
    const moe_config *c = &j->m->cfg;
    int n = c->n, d = c->d, C = c->C;
    int cap = j->N < EV_ITEM ? (j->N > 0 ? j->N : 1) : EV_ITEM;
    workspace w;
    ws_alloc(&w, j->m, cap);
    float *Z = j->L ? ms_malloc((size_t)cap * d * sizeof(float)) : NULL; /* (cap, d) */
    for (;;) {
        long b0 = __atomic_fetch_add(&j->next, EV_ITEM, __ATOMIC_RELAXED);
        if (b0 >= j->N) break;
        int bs = j->N - b0 < EV_ITEM ? (int)(j->N - b0) : EV_ITEM;
        const float *X = j->X + (size_t)b0 * d;
        if (j->L) {
            forward_chunk(j->m, X, bs, Z, j->G + (size_t)b0 * n, &w, NULL);
            moe_head(j->m, Z, bs, j->L + (size_t)b0 * C);
        } else {
            layer_chunk(j->m, X, bs, &w, w.D);
            memcpy(j->G + (size_t)b0 * n, w.G, (size_t)bs * n * sizeof(float));
            for (int b = 0; b < bs; b++) {
                const float *dr = w.D + (size_t)b * d;
                double ss = 0.0;
                for (int q = 0; q < d; q++) ss += (double)dr[q] * dr[q];
                j->ss[b0 + b] = ss;
            }
        }
    }
    ws_free(&w);
    free(Z);
    return NULL;
}

/* Run job j on p->threads workers (0: one per CPU, at most 8 and at most one
 * per item); the calling thread is one of them. */
static void ev_run(ev_job *j, const moe_par *p) {
    j->next = 0;
    long items = (j->N + EV_ITEM - 1) / EV_ITEM;
    long nt = p && p->threads > 0 ? p->threads : sysconf(_SC_NPROCESSORS_ONLN);
    nt = nt < 1 ? 1 : nt > 8 ? 8 : nt;
    nt = nt < items ? nt : (items > 0 ? items : 1);
    blas_single_enter();
    pthread_t th[8];
    int started = 0;
    for (long t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, ev_worker, j) == 0) started++;
    ev_worker(j); /* fewer threads than asked if creation failed: still complete */
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    blas_single_leave();
}

int moe_eval_check(const moe_model *m, const evalset *e, ms_err *err) {
    const char *ep = e->path ? e->path : "evaluation set";
    const char *mp = m->path ? m->path : "the model";
    if (e->d != m->cfg.d)
        return ms_fail(err, "%s: inputs have width %d but the layer has d = %d (%s)", ep, e->d,
                       m->cfg.d, mp);
    if (!m->cfg.has_head) return 0; /* layer-only mode: labels/targets are not used */
    int C = m->cfg.C;
    if (!e->labels && !e->targets)
        return ms_fail(err, "%s: holds only 'inputs', but %s has a head: its loss needs a tensor "
                            "'labels' [N] (classification) or 'targets' [N, C] (regression)",
                       ep, mp);
    if (e->labels) {
        for (int i = 0; i < e->N; i++)
            if (e->labels[i] < 0 || e->labels[i] >= C)
                return ms_fail(err, "%s: label %d at index %d is out of range: the head of %s has "
                                    "C = %d classes (labels 0..%d)",
                               ep, e->labels[i], i, mp, C, C - 1);
    } else if (e->C != C) {
        return ms_fail(err, "%s: targets have width %d but the head of %s has C = %d outputs", ep,
                       e->C, mp, C);
    }
    return 0;
}

int moe_eval_par(const moe_model *m, const evalset *e, const moe_par *p, moe_eval_result *r,
                 ms_err *err) {
    memset(r, 0, sizeof *r);
    const moe_config *c = &m->cfg;
    if (!c->has_head)
        return ms_fail(err, "%s: the layer has no head (no 'head.out.weight'), so there is no "
                            "loss to evaluate; only layer-only statistics are available",
                       m->path ? m->path : "model");
    if (moe_eval_check(m, e, err)) return -1;
    int n = c->n, C = c->C, N = e->N;
    result_init(r, n);
    ev_job j = {.m = m, .X = e->inputs, .N = N};
    j.G = ms_malloc((size_t)(N ? N : 1) * n * sizeof(float)); // (N, n)
    j.L = ms_malloc((size_t)(N ? N : 1) * C * sizeof(float)); // (N, C)
    ev_run(&j, p);
    load_accumulate(r, j.G, N, n);
    double loss = 0.0;
    long correct = 0;
    moe_loss_rows(j.L, N, C, e->labels, e->targets, &loss, &correct);
    if (e->labels) {
        r->loss = loss / N;
        r->accuracy = (double)correct / N;
    } else {
        r->loss = loss / ((double)N * C);
        r->accuracy = -1.0;
    }
    for (int i = 0; i < n; i++) {
        r->load_mean[i] /= N;
        r->load_frac[i] /= N;
    }
    free(j.G);
    free(j.L);
    return 0;
}

int moe_eval(const moe_model *m, const evalset *e, moe_eval_result *r, ms_err *err) {
    return moe_eval_par(m, e, NULL, r, err);
}

int moe_eval_layer_par(const moe_model *m, const evalset *e, const moe_par *p,
                       moe_eval_result *r, ms_err *err) {
    memset(r, 0, sizeof *r);
    const moe_config *c = &m->cfg;
    if (e->d != c->d)
        return ms_fail(err, "%s: inputs have width %d but the layer has d = %d",
                       e->path ? e->path : "evaluation set", e->d, c->d);
    int n = c->n, d = c->d, N = e->N;
    result_init(r, n);
    ev_job j = {.m = m, .X = e->inputs, .N = N};
    j.G = ms_malloc((size_t)(N ? N : 1) * n * sizeof(float)); // (N, n)
    j.ss = ms_malloc((size_t)(N ? N : 1) * sizeof(double));   // (N)
    ev_run(&j, p);
    load_accumulate(r, j.G, N, n);
    double ss = 0.0;
    for (int b = 0; b < N; b++) ss += j.ss[b];
    free(j.G);
    free(j.ss);
    r->loss = ss / ((double)N * d);
    r->accuracy = -1.0;
    for (int i = 0; i < n; i++) {
        r->load_mean[i] /= N;
        r->load_frac[i] /= N;
    }
    return 0;
}

int moe_eval_layer(const moe_model *m, const evalset *e, moe_eval_result *r, ms_err *err) {
    return moe_eval_layer_par(m, e, NULL, r, err);
}

void moe_eval_result_free(moe_eval_result *r) {
    if (!r) return;
    free(r->load_mean);
    free(r->load_frac);
    r->load_mean = r->load_frac = NULL;
}
