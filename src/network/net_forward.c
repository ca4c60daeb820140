/* net_forward.c - the network's forward pass and its plain reference
 * (net_forward.h). */
#include "network/net_forward.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/test_hooks.h"
#include "core/vrows.h"
#include "model/evaluator.h"
#include "model/moe_kernels.h"
#include "network/net_rope.h"
#include "network/transformer.h"

int net_head_rows(int V) {
    int r = NET_HEAD_FLOATS / (V > 0 ? V : 1);
    return r < 64 ? 64 : r > 512 ? 512 : r;
}

static const net_arch_desc *arch(const net_model *m) { return net_arch_of(m->cfg.arch); }

/* the weights' layout of m's blocks: GPT-2's Conv1D, everyone else's Linear */
static tf_layout layout_of(const net_model *m) {
    return arch(m)->embed == NET_EMBED_LEARNED ? TF_CONV1D : TF_LINEAR;
}

/* net_tokens' and net_logit_rows' values (net_evalset.h), spelled out: net_evalset.c
 * checks a set against the memory limit, which counts this file's workspace */
static int is_class(const net_model *m) { return arch(m)->target == NET_TARGET_CLASS; }
static int tokens_of(const net_model *m, const net_evalset *E) { return is_class(m) ? m->cfg.npos : E->T; }
static int rows_per_seq(const net_model *m, int T) { return is_class(m) ? 1 : T; }

static int patch_values(const net_config *c) { return c->chans * c->patch * c->patch; }

/* the widths of q|k|v and of the heads' outputs */
static int q_width(const net_config *c) { return c->nhead * c->hd; }
static int qkv_width(const net_config *c) { return q_width(c) + c->nkv * (c->hd + c->vd); }
static int heads_width(const net_config *c) { return c->nhead * c->vd; }
/* DeepSeek's latent attention's intermediates per row: q_a, the latent, k_nope | v, q */
static size_t mla_width(const net_config *c) {
    return (size_t)c->q_lora + c->kv_lora + c->rot + (size_t)c->nhead * (c->nope + c->vd) + (size_t)q_width(c);
}

/* JetMoE's attention experts' per-row workspace: the router's logits (na), the
 * row's top-k gates and experts (k each), then two rows of max(d, hq) (an expert's
 * gathered inputs and outputs) */
static int moa_wide(const net_config *c) { return c->d > c->nkv * c->hd ? c->d : c->nkv * c->hd; }
static size_t moa_width(const net_config *c) { return (size_t)c->moa_n + 2 * c->moa_k + 2 * (size_t)moa_wide(c); }

size_t net_ws_y_width(const net_config *c) {
    return (size_t)c->ff * (net_arch_of(c->arch)->mlp == NET_MLP_GLU ? 2 : 1);
}

/* the floats of each of a workspace's buffers (net_ws), decided once: net_ws_alloc
 * allocates them, net_ws_floats counts them for the memory limit */
typedef struct {
    size_t x, qkv, o, y, pt, mla, moa, cs, lg, rows; /* rows: the head's rows (rl, rh) */
} ws_sizes;

static void ws_sizes_of(const net_config *c, int cap, int T, ws_sizes *z) {
    const net_arch_desc *A = net_arch_of(c->arch);
    size_t d = (size_t)c->d, M = (size_t)(cap > 0 ? cap : 1), ow = (size_t)heads_width(c);
    z->x = M * d;
    z->qkv = M * (size_t)qkv_width(c);
    z->o = M * (ow > d ? ow : d);
    z->y = M * net_ws_y_width(c);
    z->pt = A->embed == NET_EMBED_PATCHES ? (size_t)c->npatch * patch_values(c) : 0;
    z->mla = A->attn == NET_ATTN_MLA ? M * mla_width(c) : 0;
    z->moa = A->attn == NET_ATTN_MOA ? M * moa_width(c) : 0;
    z->cs = A->attn != NET_ATTN_MHA && c->rot > 0 ? (size_t)T * c->rot : 0;
    z->rows = (size_t)net_head_rows(c->vocab);
    z->lg = z->rows * c->vocab;
}

double net_ws_floats(const net_config *c, int cap, int T) {
    ws_sizes z;
    ws_sizes_of(c, cap, T, &z);
    return (double)z.x + z.qkv + z.o + z.y + z.pt + z.mla + z.moa + z.cs + z.lg + 2.25 * z.rows; // rl, rh
}

static float *buf_or_null(size_t n) { return n ? ms_malloc(n * sizeof(float)) : NULL; }

void net_ws_alloc(net_ws *w, const net_config *c, int cap, int T) {
    ws_sizes z;
    ws_sizes_of(c, cap, T, &z);
    w->cap = cap;
    w->T = T;
    w->stop = NULL;
    w->x = buf_or_null(z.x);
    w->qkv = buf_or_null(z.qkv);
    w->o = buf_or_null(z.o);
    w->y = buf_or_null(z.y);
    w->pt = buf_or_null(z.pt);
    w->mla = buf_or_null(z.mla);
    w->moa = buf_or_null(z.moa);
    w->cs = buf_or_null(z.cs);
    if (w->cs) {
        const double *inv;
        double af;
        net_rope_at(c, T, &inv, &af); // longrope: the set of T tokens
        tf_rope_table(T, c->rot, inv, af, w->cs);
    }
    w->head_rows = net_head_rows(c->vocab);
    w->lg = buf_or_null(z.lg);
    w->rl = ms_malloc((size_t)w->head_rows * sizeof(double));
    w->rh = ms_malloc((size_t)w->head_rows);
}

void net_ws_free(net_ws *w) {
    free(w->x);
    free(w->qkv);
    free(w->o);
    free(w->y);
    free(w->pt);
    free(w->cs);
    free(w->mla);
    free(w->moa);
    free(w->lg);
    free(w->rl);
    free(w->rh);
}

/* Y (M, d) = the architecture's norm of X (M, d): LayerNorm (w, b) or RMSNorm (w),
 * with eps (a block's block_eps, the final norm's eps) */
static void norm_forward(const net_model *m, const float *X, int M, const float *w, const float *b, double eps,
                         float *Y) {
    int d = m->cfg.d;
    switch (arch(m)->norm) {
    case NET_NORM_LAYER: tf_layernorm_forward(X, M, d, w, b, eps, Y); break;
    case NET_NORM_RMS: tf_rmsnorm_forward(X, M, d, d, w, eps, Y); break;
    }
}

/* h (M, d) += mult Y (M, d): a branch's output into the residual stream (Granite's
 * residual_multiplier; 1 adds as moe_row_add) */
static void residual_add(float *h, const float *Y, int M, int d, double mult) {
    for (int r = 0; r < M; r++) {
        if (mult == 1.0) moe_row_add(h + (size_t)r * d, Y + (size_t)r * d, d);
        else moe_row_axpy(h + (size_t)r * d, (float)mult, Y + (size_t)r * d, d);
    }
}

/* w's evaluation cancelled: a product stops between two slices of its rows (or
 * the head's columns), a dense MLP between its two products; what it leaves half
 * done is discarded with the evaluation */
static int stopped(const net_ws *w) { return w->stop && atomic_load(w->stop); }

/* The rows (or columns) of a slice between two cancel checks: about NET_SLICE_FLOPS
 * of work (a few milliseconds), a multiple of 16; all n at once when nothing cancels. */
#define NET_SLICE_FLOPS 5e8
static int slice_of(const net_ws *w, int n, double flops_each) {
    if (!w->stop) return n > 0 ? n : 1;
    const char *hook = test_hook_get(HOOK_SLICE_FLOPS);
    double budget = hook ? atof(hook) : NET_SLICE_FLOPS;
    double k = budget / (flops_each > 1 ? flops_each : 1);
    return k >= n ? (n > 0 ? n : 1) : k < 32 ? 16 : 16 * (int)(k / 16);
}

/* A product C (M, N; rows ldc apart) = A (M, K) op(B) (op(B) = B^T for tb: B (N, K);
 * else B (K, N)) in slices of R rows (cols: of R columns) */
typedef struct {
    int M, N, K, tb, R, cols;
} split_shape;

static void gemm_split(const split_shape *z, const float *A, const float *B, float *C, int ldc, int from, int to) {
    int step = z->cols ? z->N : z->M;
    for (int s = from; s < to && s < step; s += z->R) {
        int k = step - s < z->R ? step - s : z->R;
        if (z->cols)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, z->M, k, z->K, 1.0f, A, z->K, B + (size_t)s * z->K,
                        z->K, 0.0f, C + s, ldc);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, z->tb ? CblasTrans : CblasNoTrans, k, z->N, z->K, 1.0f,
                        A + (size_t)s * z->K, z->K, B, z->tb ? z->K : z->N, 0.0f, C + (size_t)s * ldc, ldc);
    }
}

/* Does this BLAS give a product of shape z the same bits in slices as whole? Most
 * kernels do (a slice changes which outputs are computed together, not their sums);
 * some do not (OpenBLAS's Haswell ones round a product split by rows otherwise, at
 * these sizes): each shape is tried once, on its first call's own operands, and
 * sliced only where the bits agree, so a cancellable evaluation is the plain one's
 * bit for bit on every kernel. */
#define SPLIT_SHAPES 64
static split_shape split_seen[SPLIT_SHAPES];
static int split_ok[SPLIT_SHAPES], split_n;
static pthread_mutex_t split_mu = PTHREAD_MUTEX_INITIALIZER;

static int split_same(const split_shape *z, const float *A, const float *B) {
    pthread_mutex_lock(&split_mu);
    for (int i = 0; i < split_n; i++)
        if (!memcmp(&split_seen[i], z, sizeof *z)) {
            int ok = split_ok[i];
            pthread_mutex_unlock(&split_mu);
            return ok;
        }
    pthread_mutex_unlock(&split_mu);
    size_t n = (size_t)z->M * z->N;
    float *whole = ms_malloc(n * sizeof(float)), *parts = ms_malloc(n * sizeof(float));
    split_shape one = *z;
    one.R = z->cols ? z->N : z->M;
    gemm_split(&one, A, B, whole, z->N, 0, one.R);
    gemm_split(z, A, B, parts, z->N, 0, one.R);
    int ok = !memcmp(whole, parts, n * sizeof(float));
    free(whole);
    free(parts);
    pthread_mutex_lock(&split_mu);
    if (split_n < SPLIT_SHAPES) split_seen[split_n] = *z, split_ok[split_n++] = ok;
    pthread_mutex_unlock(&split_mu);
    return ok;
}

/* tf_dense_forward of X (M, in) into Y (M, out) in slices of rows where that gives
 * the same bits, the cancel checked between them. 1: stopped (Y incomplete). */
static int dense_slices(const float *X, int M, int in, int out, const float *W, tf_layout lay, const float *bias,
                        int accumulate, float *Y, const net_ws *w) {
    split_shape z = {M, out, in, lay == TF_LINEAR, slice_of(w, M, 2.0 * in * out), 0};
    if (z.R < M && !split_same(&z, X, W)) z.R = M;
    for (int r = 0; r < M; r += z.R) {
        if (r && stopped(w)) return 1;
        tf_dense_forward(X + (size_t)r * in, M - r < z.R ? M - r : z.R, in, out, W, lay, bias, accumulate,
                         Y + (size_t)r * out);
    }
    return stopped(w);
}

/* Y (M, n) += bias (n) per row; NULL: none */
static void add_bias(float *Y, int M, int n, const float *bias) {
    for (int r = 0; bias && r < M; r++) moe_row_add(Y + (size_t)r * n, bias, n);
}

/* Y (M, out) (+)= X (M, in) W^T + bias: a decoder's matrix (mapped or in floats), or
 * GPT-2's and a ViT's floats as their layout keeps them (dense_slices). 1: stopped. */
static int proj_forward(const net_model *m, const float *X, int M, int in, int out, const net_mat *W,
                        const float *Wf, const float *bias, int accumulate, float *Y, const net_ws *w) {
    if (arch(m)->embed != NET_EMBED_TOKENS) return dense_slices(X, M, in, out, Wf, layout_of(m), bias, accumulate, Y, w);
    net_mat_gemm(W, M, in, X, in, accumulate ? 1.0f : 0.0f, Y, out);
    add_bias(Y, M, out, bias);
    return stopped(w);
}

/* pt (P, K) = image img (C, H, H)'s patches, row-major over the image, each
 * [C, p, p] as the projection's weight is */
static void vit_patches(const net_config *c, const float *img, float *pt) {
    int p = c->patch, H = c->image, side = H / p, K = patch_values(c);
    for (int q = 0; q < c->npatch; q++) {
        int y0 = (q / side) * p, x0 = (q % side) * p;
        float *r = pt + (size_t)q * K;
        for (int ch = 0; ch < c->chans; ch++)
            for (int i = 0; i < p; i++)
                memcpy(r + (ch * p + i) * p, img + ((size_t)ch * H + y0 + i) * H + x0, (size_t)p * sizeof(float));
    }
}

void net_embed(const net_model *m, const net_evalset *E, int s0, int ns, float *h, net_ws *w) {
    const net_config *c = &m->cfg;
    int d = c->d, T = tokens_of(m, E);
    for (int s = 0; s < ns; s++) {
        float *hs = h + (size_t)s * T * d; // (T, d)
        if (arch(m)->embed == NET_EMBED_PATCHES) {
            vit_patches(c, E->pixels + (size_t)(s0 + s) * c->chans * c->image * c->image, w->pt);
            // rows 1..P (P, d) = patches (P, K) W_patch^T + b, W_patch (d, K)
            tf_dense_forward(w->pt, c->npatch, patch_values(c), d, m->patch_w, TF_LINEAR, m->patch_b, 0, hs + d);
            memcpy(hs, m->cls, (size_t)d * sizeof(float));
        } else {
            const int32_t *ids = E->ids + (size_t)(s0 + s) * T;
            for (int p = 0; p < T; p++) // a decoder's rows converted as they are looked up
                if (arch(m)->embed == NET_EMBED_TOKENS) net_mat_row(&m->wemb, ids[p], d, hs + (size_t)p * d);
                else memcpy(hs + (size_t)p * d, m->wte + (size_t)ids[p] * d, (size_t)d * sizeof(float));
        }
        if (arch(m)->embed == NET_EMBED_TOKENS) { // no learned positions: the rotary embedding's
            if (c->emb_mult != 1.0)
                for (size_t q = 0; q < (size_t)T * d; q++) hs[q] *= (float)c->emb_mult;
            continue;
        }
        for (int p = 0; p < T; p++) moe_row_add(hs + (size_t)p * d, m->wpe + (size_t)p * d, d);
    }
}


/* a decoder's q and k after the projection: the q/k norms, OLMoE's clip, the rotation */
static void qk_prepare(const net_model *m, const net_block *b, float *qkv, int M, int T) {
    const net_config *c = &m->cfg;
    int hd = c->hd, q = q_width(c), kv = c->nkv * hd, ld = qkv_width(c);
    switch (arch(m)->qk_norm) {
    case NET_QKN_NONE: break;
    case NET_QKN_WHOLE: // over the whole projection, before the heads are split
        tf_rmsnorm_forward(qkv, M, q, ld, b->qn_w, c->eps, qkv);
        tf_rmsnorm_forward(qkv + q, M, kv, ld, b->kn_w, c->eps, qkv + q);
        break;
    case NET_QKN_HEAD: // per head over hd
        for (int r = 0; r < M; r++) {
            float *row = qkv + (size_t)r * ld;
            tf_rmsnorm_forward(row, c->nhead, hd, hd, b->qn_w, c->eps, row);
            tf_rmsnorm_forward(row + q, c->nkv, hd, hd, b->kn_w, c->eps, row + q);
        }
        break;
    }
    if (c->clip_qkv > 0) {
        float lim = (float)c->clip_qkv;
        for (size_t i = 0; i < (size_t)M * ld; i++) qkv[i] = qkv[i] < -lim ? -lim : qkv[i] > lim ? lim : qkv[i];
    }
}

/* DeepSeek's multi-head latent attention's q | k | v rows (M, nh hd + nh hd + nh
 * vd) into qkv from x (M, d): q = q_b(norm(q_a x)) (or q_proj x), the latent
 * [c | k_rope] = kv_a x, [k_nope | v] per head = kv_b(norm c); each head's k is
 * [k_nope | k_rope], the one k_rope shared; q's and k's rope parts rotated (row
 * r at position (p0 + r) % T); mla (M, mla width) the intermediates */
static void mla_qkv(const net_model *m, const net_block *b, const float *x, int M, int p0, int T, float *mla,
                    const float *cs, float *qkv) {
    const net_config *c = &m->cfg;
    int d = c->d, nh = c->nhead, hd = c->hd, ql = c->q_lora, kl = c->kv_lora, la = kl + c->rot;
    int kvw = nh * (c->nope + c->vd), qw = q_width(c), ld = qkv_width(c);
    float *ta = mla, *lat = ta + (size_t)M * ql, *kv = lat + (size_t)M * la, *q = kv + (size_t)M * kvw;
    if (ql) {
        net_mat_gemm(&b->wqa, M, d, x, d, 0.0f, ta, ql);
        tf_rmsnorm_forward(ta, M, ql, ql, b->qa_n, 1e-6, ta);
        net_mat_gemm(&b->wqkv, M, ql, ta, ql, 0.0f, q, qw);
    } else {
        net_mat_gemm(&b->wqkv, M, d, x, d, 0.0f, q, qw);
    }
    net_mat_gemm(&b->wkva, M, d, x, d, 0.0f, lat, la);
    tf_rmsnorm_forward(lat, M, kl, la, b->kva_n, 1e-6, lat);
    // kv (M, nh (nope + vd)) = c (M, kv_lora; rows la apart) kv_b^T
    net_mat_gemm(&b->wkvb, M, kl, lat, la, 0.0f, kv, kvw);
    tf_rope_forward(q + c->nope, M, p0, qw, T, nh, hd, c->rot, cs, c->interleave);
    tf_rope_forward(lat + kl, M, p0, la, T, 1, c->rot, c->rot, cs, c->interleave);
    size_t fl = sizeof(float);
    for (int r = 0; r < M; r++) {
        float *row = qkv + (size_t)r * ld, *kr = kv + (size_t)r * kvw;
        memcpy(row, q + (size_t)r * qw, (size_t)qw * fl);
        for (int j = 0; j < nh; j++) {
            float *k = row + qw + (size_t)j * hd, *v = row + 2 * qw + (size_t)j * c->vd;
            memcpy(k, kr + (size_t)j * (c->nope + c->vd), (size_t)c->nope * fl);
            memcpy(k + c->nope, lat + (size_t)r * la + kl, (size_t)c->rot * fl);
            memcpy(v, kr + (size_t)j * (c->nope + c->vd) + c->nope, (size_t)c->vd * fl);
        }
    }
}

/* part 0 of W from row r0 on, rows of it, as a matrix of its own (an expert's rows
 * of JetMoE's packed attention experts; *bs: a mix's second source, kept by the caller) */
static net_mat mat_rows(const net_mat *W, int r0, int rows, wref *bs) {
    net_mat E = {.n = 1};
    E.part[0] = net_mat_slice(W, r0, bs);
    E.rows[0] = rows;
    return E;
}

/* a row's attention experts from its router logits lg (na): the top k (ties to
 * the smaller index), gates the softmax over their logits (JetMoeTopKGating) */
static void moa_route(const float *lg, int na, int k, int *sel, float *gate) {
    moe_topk(lg, na, k, sel);
    double se = 0.0;
    for (int s = 0; s < k; s++) se += exp((double)lg[sel[s]] - lg[sel[0]]);
    for (int s = 0; s < k; s++) gate[s] = (float)(exp((double)lg[sel[s]] - lg[sel[0]]) / se);
}

/* JetMoE's rows gathered per attention expert: the products of expert e see only
 * the rows that chose it. Row r's workspace (moa, mw floats each): logits (na) |
 * gates (k) | experts (k, as floats) | gathered inputs | the expert's outputs. */
#define MOA_GATE(c, row) ((row) + (c)->moa_n)
#define MOA_SEL(c, row) ((row) + (c)->moa_n + (c)->moa_k)
#define MOA_IN(c, row) ((row) + (c)->moa_n + 2 * (c)->moa_k)
#define MOA_OUT(c, row) (MOA_IN(c, row) + moa_wide(c))

/* the (row, slot) pairs of the M rows that chose expert e, in row order, into at
 * (r k + s each); their count */
static int moa_chosen(const net_config *c, const float *moa, int M, int e, int *at) {
    int n = 0;
    size_t mw = moa_width(c);
    for (int r = 0; r < M; r++)
        for (int s = 0; s < c->moa_k; s++)
            if ((int)MOA_SEL(c, moa + r * mw)[s] == e) at[n++] = r * c->moa_k + s;
    return n;
}

/* JetMoE's q | k | v of rows (M of them, x their norm; qkv and moa from their first
 * row): k | v = kv_proj x; each row's top-k attention experts; slot s's queries (nkv
 * heads) = input_linear[expert s] x (JetMoeMoA.map). 1: stopped between experts. */
static int moa_qkv(const net_model *m, const net_block *b, const float *x, int M, float *qkv, float *moa,
                   const net_ws *w) {
    const net_config *c = &m->cfg;
    int d = c->d, k = c->moa_k, hq = c->nkv * c->hd, ld = qkv_width(c);
    size_t mw = moa_width(c);
    net_mat_gemm(&b->wqkv, M, d, x, d, 0.0f, qkv + q_width(c), ld); // k | v (M, 2 hq)
    net_mat_gemm(&b->wmr, M, d, x, d, 0.0f, moa, (int)mw);           // the router's logits (M, na)
    int *at = ms_malloc((size_t)(M * k + k) * sizeof(int)), *sel = at + (size_t)M * k;
    for (int r = 0; r < M; r++) {
        float *row = moa + r * mw;
        moa_route(row, c->moa_n, k, sel, MOA_GATE(c, row));
        for (int s = 0; s < k; s++) MOA_SEL(c, row)[s] = (float)sel[s];
    }
    for (int e = 0; e < c->moa_n && !stopped(w); e++) {
        int n = moa_chosen(c, moa, M, e, at);
        if (!n) continue;
        for (int i = 0; i < n; i++)
            memcpy(MOA_IN(c, moa + i * mw), x + (size_t)(at[i] / k) * d, (size_t)d * sizeof(float));
        wref bs;
        net_mat E = mat_rows(&b->wmq, e * hq, hq, &bs);
        net_mat_gemm(&E, n, d, MOA_IN(c, moa), (int)mw, 0.0f, MOA_OUT(c, moa), (int)mw); // (n, hq)
        for (int i = 0; i < n; i++) // slot s's queries: heads s nkv .. (s + 1) nkv - 1
            memcpy(qkv + (size_t)(at[i] / k) * ld + (size_t)(at[i] % k) * hq, MOA_OUT(c, moa + i * mw),
                   (size_t)hq * sizeof(float));
    }
    free(at);
    return stopped(w);
}

/* JetMoE's attention output of rows (M of them; o, moa from their first row) into y
 * (M, d): each slot's heads through its expert's output_linear, times its gate,
 * summed, plus experts.bias (JetMoeMoA.reduce). 1: stopped between experts. */
static int moa_out(const net_model *m, const net_block *b, const float *o, int M, float *moa, float *y,
                   const net_ws *w) {
    const net_config *c = &m->cfg;
    int d = c->d, k = c->moa_k, hq = c->nkv * c->hd, ow = heads_width(c);
    size_t mw = moa_width(c);
    int *at = ms_malloc((size_t)(M * k + 1) * sizeof(int));
    memset(y, 0, (size_t)M * d * sizeof(float));
    for (int e = 0; e < c->moa_n && !stopped(w); e++) {
        int n = moa_chosen(c, moa, M, e, at);
        if (!n) continue;
        for (int i = 0; i < n; i++)
            memcpy(MOA_IN(c, moa + i * mw), o + (size_t)(at[i] / k) * ow + (size_t)(at[i] % k) * hq,
                   (size_t)hq * sizeof(float));
        wref bs;
        net_mat E = mat_rows(&b->wo, e * d, d, &bs);
        net_mat_gemm(&E, n, hq, MOA_IN(c, moa), (int)mw, 0.0f, MOA_OUT(c, moa), (int)mw); // (n, d)
        for (int i = 0; i < n; i++) {
            int r = at[i] / k;
            moe_row_axpy(y + (size_t)r * d, MOA_GATE(c, moa + r * mw)[at[i] % k], MOA_OUT(c, moa + i * mw), d);
        }
    }
    free(at);
    add_bias(y, M, d, b->proj_b);
    return stopped(w);
}

void net_attn_in(const net_model *m, int L, const float *h, int r0, int M, int T, const net_ws *w) {
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    int d = c->d, ld = qkv_width(c);
    float *x = w->x + (size_t)r0 * d, *qkv = w->qkv + (size_t)r0 * ld;
    norm_forward(m, h + (size_t)r0 * d, M, b->ln1_w, b->ln1_b, c->block_eps, x);
    switch (arch(m)->attn) {
    case NET_ATTN_MLA: mla_qkv(m, b, x, M, r0, T, w->mla + (size_t)r0 * mla_width(c), w->cs, qkv); return;
    case NET_ATTN_ROPE: // grouped-query, rotary
        net_mat_gemm(&b->wqkv, M, d, x, d, 0.0f, qkv, ld); // (M, (nh + 2 nkv) hd)
        add_bias(qkv, M, ld, b->attn_b);
        qk_prepare(m, b, qkv, M, T);
        if (w->cs) tf_rope_forward(qkv, M, r0, ld, T, c->nhead + c->nkv, c->hd, c->rot, w->cs, 0);
        return;
    case NET_ATTN_MOA: // JetMoE: the queries from each row's attention experts
        if (!moa_qkv(m, b, x, M, qkv, w->moa + (size_t)r0 * moa_width(c), w) && w->cs)
            tf_rope_forward(qkv, M, r0, ld, T, c->nhead + c->nkv, c->hd, c->rot, w->cs, 0);
        return;
    case NET_ATTN_MHA: dense_slices(x, M, d, 3 * d, b->attn_w, layout_of(m), b->attn_b, 0, qkv, w); return;
    }
}

void net_attn_head(const net_model *m, int L, int s, int j, int T, const net_ws *w, float *S) {
    const net_config *c = &m->cfg;
    int causal = arch(m)->target == NET_TARGET_NEXT;
    tf_attn_shape a = {c->nhead, c->nkv, c->hd, (float)c->attn_scale, causal, c->layer_window[L], c->vd,
                       m->blocks[L].sinks, c->kv_tiled};
    tf_attention_head(w->qkv + (size_t)s * T * qkv_width(c), T, &a, j, S, w->o + (size_t)s * T * heads_width(c));
}

void net_attn_out(const net_model *m, int L, float *h, int r0, int M, const net_ws *w) {
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    int d = c->d, q = heads_width(c);
    float *o = w->o + (size_t)r0 * q, *hr = h + (size_t)r0 * d, *x = w->x + (size_t)r0 * d;
    if (arch(m)->attn == NET_ATTN_MOA) { // JetMoE: through each slot's expert
        if (!moa_out(m, b, o, M, w->moa + (size_t)r0 * moa_width(c), x, w)) residual_add(hr, x, M, d, c->res_mult);
        return;
    }
    if (c->res_mult == 1.0) { // the projection's product added straight into the stream
        proj_forward(m, o, M, q, d, &b->wo, b->proj_w, b->proj_b, 1, hr, w);
        return;
    }
    // x Granite's residual_multiplier
    if (!proj_forward(m, o, M, q, d, &b->wo, b->proj_w, b->proj_b, 0, x, w)) residual_add(hr, x, M, d, c->res_mult);
}

void net_mlp_input(const net_model *m, int L, const float *h, int M, net_ws *w) {
    const net_block *b = &m->blocks[L];
    norm_forward(m, h, M, b->ln2_w, b->ln2_b, m->cfg.block_eps, w->x);
}


/* h += down(silu(gate x) up x) of a decoder's dense block, x = w->x (M, d) */
static void glu_forward(const net_model *m, const net_block *b, float *h, int M, net_ws *w) {
    int d = m->cfg.d, ff = m->cfg.ff;
    net_mat_gemm(&b->wfc, M, d, w->x, d, 0.0f, w->y, 2 * ff); // (M, 2ff): gate | up
    if (stopped(w)) return;
    for (int r = 0; r < M; r++) { // row r's silu(gate) up into (M, ff), packed in place
        const float *g = w->y + (size_t)r * 2 * ff, *u = g + ff;
        float *out = w->y + (size_t)r * ff;
        for (int j = 0; j < ff; j++) out[j] = moe_act_scalar(ACT_SILU_GLU, g[j]) * u[j];
    }
    if (m->cfg.res_mult == 1.0) {
        net_mat_gemm(&b->wfcp, M, ff, w->y, ff, 1.0f, h, d);
        return;
    }
    net_mat_gemm(&b->wfcp, M, ff, w->y, ff, 0.0f, w->o, d);
    if (!stopped(w)) residual_add(h, w->o, M, d, m->cfg.res_mult);
}

void net_mlp_apply(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w, float *G) {
    const net_block *b = &m->blocks[L];
    int d = m->cfg.d;
    if (moe) {
        moe_forward_until(moe, w->x, M, w->o, G, w->stop); // D(x): the family's block has no residual
        residual_add(h, w->o, M, d, m->cfg.res_mult);
        return;
    }
    if (arch(m)->mlp == NET_MLP_GLU) {
        glu_forward(m, b, h, M, w);
        return;
    }
    int ff = m->cfg.ff;
    tf_layout lay = layout_of(m);
    if (dense_slices(w->x, M, d, ff, b->fc_w, lay, b->fc_b, 0, w->y, w)) return; // (M, ff)
    tf_act_forward(w->y, (size_t)M * ff, m->cfg.act);
    dense_slices(w->y, M, ff, d, b->fcp_w, lay, b->fcp_b, 1, h, w);
}

void net_mlp_forward(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w,
                     float *G, float *X) {
    net_mlp_input(m, L, h, M, w);
    if (X) memcpy(X, w->x, (size_t)M * m->cfg.d * sizeof(float));
    net_mlp_apply(m, L, moe, h, M, w, G);
}

/* -log softmax(lr)[y] by log-sum-exp (core/vrows.h: the exponentials about
 * 1 float ulp, summed in double), and the argmax (ties to the smaller id) */
static double token_loss(const float *lr, int V, int y, int *am_out) {
    return vr_logsumexp(lr, V, am_out) - (double)lr[y];
}

/* the target of head row r of the sequences from s0 (T tokens each): the next
 * token (-1 at a sequence's last), or a ViT's label */
static int head_target(const net_model *m, const net_evalset *E, int s0, int T, int r) {
    if (arch(m)->target == NET_TARGET_CLASS) return E->labels[s0 + r];
    return r % T == T - 1 ? -1 : E->ids[(size_t)s0 * T + r + 1];
}

void net_head_norm(const net_model *m, const float *h, int T, int r0, int rows, const net_ws *w) {
    int d = m->cfg.d, step = T / rows_per_seq(m, T); // a ViT's rows: every T-th, the CLS
    for (int r = 0; r < rows; r++)
        norm_forward(m, h + (size_t)(r0 + r) * step * d, 1, m->lnf_w, m->lnf_b, m->cfg.eps, w->x + (size_t)r * d);
}

int net_head_slices(int V) { return (V + NET_HEAD_COLS - 1) / NET_HEAD_COLS; }

void net_head_cols(const net_model *m, int rows, int sl, const net_ws *w, float *lg) {
    int d = m->cfg.d, V = m->cfg.vocab, c0 = sl * NET_HEAD_COLS, nc = V - c0 < NET_HEAD_COLS ? V - c0 : NET_HEAD_COLS;
    // lg[:, c0..c0 + nc) (rows, nc; rows V apart) = x (rows, d) lm_head[c0..c0 + nc)^T, lm_head (V, d)
    if (arch(m)->embed == NET_EMBED_TOKENS) { // a decoder's head: mapped, or a mix, panel by panel
        wref bs, W = net_mat_slice(&m->whead, c0, &bs);
        wp_gemm_nt(rows, nc, d, w->x, d, W, 0.0f, lg + c0, V);
    } else { // in slices of columns with the cancel checked between them
        split_shape z = {rows, nc, d, 1, slice_of(w, nc, 2.0 * rows * d), 1};
        if (z.R < nc && !split_same(&z, w->x, m->lm_w + (size_t)c0 * d)) z.R = nc;
        for (int k = 0; k < nc; k += z.R) {
            if (k && stopped(w)) return;
            gemm_split(&z, w->x, m->lm_w + (size_t)c0 * d, lg + c0, V, k, k + 1);
        }
    }
    if (stopped(w)) return;
    for (int r = 0; r < rows; r++) {
        float *row = lg + (size_t)r * V + c0;
        if (m->lm_b) moe_row_add(row, m->lm_b + c0, nc);
        if (m->cfg.logit_div != 1.0) // Granite's logits_scaling
            for (int q = 0; q < nc; q++) row[q] = (float)(row[q] / m->cfg.logit_div);
    }
}

void net_head_losses(const net_model *m, const net_evalset *E, int s0, int r0, int ra, int rb, const float *lg,
                     const net_ws *w) {
    int V = m->cfg.vocab, T = tokens_of(m, E);
    for (int r = ra; r < rb; r++) {
        int y = head_target(m, E, s0, T, r0 + r), am;
        w->rl[r] = 0.0, w->rh[r] = 0;
        if (y < 0) continue; // the last token predicts nothing
        w->rl[r] = token_loss(lg + (size_t)r * V, V, y, &am);
        w->rh[r] = am == y;
    }
}

/* ---- the reference: one token at a time, plain loops ---- */

static void ln_ref(const float *x, int d, const float *w, const float *b, double eps, float *y) {
    double mu = 0.0, var = 0.0;
    for (int j = 0; j < d; j++) mu += x[j];
    mu /= d;
    for (int j = 0; j < d; j++) var += (x[j] - mu) * (x[j] - mu);
    var /= d;
    for (int j = 0; j < d; j++) y[j] = (float)((x[j] - mu) / sqrt(var + eps) * w[j] + b[j]);
}

/* y (out) = x (in) W + b, W (in, out) or, as a Linear, (out, in); in double */
static void dense_ref(const float *x, int in, int out, const float *W, tf_layout lay, const float *b, float *y) {
    for (int c = 0; c < out; c++) {
        double a = b ? b[c] : 0.0;
        for (int r = 0; r < in; r++)
            a += (double)x[r] * (lay == TF_LINEAR ? W[(size_t)c * in + r] : W[(size_t)r * out + c]);
        y[c] = (float)a;
    }
}

/* y (out) = x (in) W^T + b of a decoder's matrix W (out, in), in double */
static void mat_ref(const float *x, int in, int out, const net_mat *W, const float *b, float *y) {
    float *row = ms_malloc((size_t)(in > 0 ? in : 1) * sizeof(float));
    for (int c = 0; c < out; c++) {
        net_mat_row(W, c, in, row);
        double a = b ? b[c] : 0.0;
        for (int r = 0; r < in; r++) a += (double)x[r] * row[r];
        y[c] = (float)a;
    }
    free(row);
}

/* h (T, d) of one image: the CLS token, then each patch (py, px) projected
 * straight from the image's pixels, plus the positions */
static void vit_embed_ref(const net_model *m, const float *img, float *h) {
    const net_config *c = &m->cfg;
    int d = c->d, p = c->patch, H = c->image, side = H / p;
    for (int j = 0; j < d; j++) h[j] = m->cls[j] + m->wpe[j];
    for (int q = 0; q < c->npatch; q++) {
        int py = q / side, px = q % side;
        for (int j = 0; j < d; j++) {
            double a = m->patch_b[j];
            for (int ch = 0; ch < c->chans; ch++)
                for (int u = 0; u < p; u++)
                    for (int v = 0; v < p; v++)
                        a += (double)m->patch_w[(((size_t)j * c->chans + ch) * p + u) * p + v] *
                             img[((size_t)ch * H + py * p + u) * H + px * p + v];
            h[(size_t)(q + 1) * d + j] = (float)a + m->wpe[(size_t)(q + 1) * d + j];
        }
    }
}

/* y (n) = w x / sqrt(mean(x^2) + eps), in double */
static void rms_ref(const float *x, int n, const float *w, double eps, float *y) {
    double ss = 0.0;
    for (int j = 0; j < n; j++) ss += (double)x[j] * x[j];
    for (int j = 0; j < n; j++) y[j] = (float)(w[j] * (x[j] / sqrt(ss / n + eps)));
}

/* y (d) = the architecture's norm of x (d) with eps, in double */
static void norm_ref(const net_model *m, const float *x, int d, const float *w, const float *b, double eps, float *y) {
    if (arch(m)->norm == NET_NORM_LAYER) ln_ref(x, d, w, b, eps, y);
    else rms_ref(x, d, w, eps, y);
}

/* x (rot) turned for position p: pair i is (i, i + rot/2), or (2i, 2i + 1) interleaved */
static void rotate_ref(const net_config *c, float *x, int p) {
    int half = c->rot / 2;
    for (int i = 0; i < half; i++) {
        int u = c->interleave ? 2 * i : i, v = c->interleave ? 2 * i + 1 : i + half;
        double ang = p * c->inv_freq[i], a = x[u], b = x[v], f = c->rope_af;
        x[u] = (float)(f * (a * cos(ang) - b * sin(ang)));
        x[v] = (float)(f * (b * cos(ang) + a * sin(ang)));
    }
}

/* one token's q|k (row) of a decoder: q/k norms, clip, rotation at position p */
static void qk_ref(const net_model *m, const net_block *b, float *row, int p) {
    const net_config *c = &m->cfg;
    int hd = c->hd, q = q_width(c), kv = c->nkv * hd, nq = arch(m)->qk_norm;
    if (nq == NET_QKN_WHOLE) {
        norm_ref(m, row, q, b->qn_w, NULL, c->eps, row);
        norm_ref(m, row + q, kv, b->kn_w, NULL, c->eps, row + q);
    }
    for (int j = 0; nq == NET_QKN_HEAD && j < c->nhead + c->nkv; j++)
        norm_ref(m, row + (size_t)j * hd, hd, j < c->nhead ? b->qn_w : b->kn_w, NULL, c->eps, row + (size_t)j * hd);
    for (int i = 0; c->clip_qkv > 0 && i < qkv_width(c); i++)
        row[i] = (float)fmin(fmax(row[i], -c->clip_qkv), c->clip_qkv);
    for (int j = 0; j < c->nhead + c->nkv; j++) rotate_ref(c, row + (size_t)j * hd, p);
}

/* one token's q|k|v (row) of a DeepSeek block from x (d), at position p */
static void mla_ref(const net_model *m, const net_block *b, const float *x, int p, float *row) {
    const net_config *c = &m->cfg;
    int d = c->d, ql = c->q_lora, kl = c->kv_lora, la = kl + c->rot, qw = q_width(c), kw = c->nope + c->vd;
    float *t = ms_malloc((size_t)(ql + la + c->nhead * kw + 1) * sizeof(float)), *lat = t + ql, *kv = lat + la;
    if (ql) {
        mat_ref(x, d, ql, &b->wqa, NULL, t);
        rms_ref(t, ql, b->qa_n, 1e-6, t);
        mat_ref(t, ql, qw, &b->wqkv, NULL, row);
    } else {
        mat_ref(x, d, qw, &b->wqkv, NULL, row);
    }
    mat_ref(x, d, la, &b->wkva, NULL, lat);
    rms_ref(lat, kl, b->kva_n, 1e-6, lat);
    mat_ref(lat, kl, c->nhead * kw, &b->wkvb, NULL, kv);
    rotate_ref(c, lat + kl, p);
    for (int j = 0; j < c->nhead; j++) {
        float *qh = row + (size_t)j * c->hd, *k = row + qw + (size_t)j * c->hd;
        rotate_ref(c, qh + c->nope, p);
        memcpy(k, kv + (size_t)j * kw, (size_t)c->nope * sizeof(float));
        memcpy(k + c->nope, lat + kl, (size_t)c->rot * sizeof(float));
        memcpy(row + 2 * qw + (size_t)j * c->vd, kv + (size_t)j * kw + c->nope, (size_t)c->vd * sizeof(float));
    }
    free(t);
}

/* o (vd) = head j's attention of query token p over qkv (T, ld) */
static void head_ref(const net_model *m, int L, const float *qkv, int T, int p, int j, double *wt, float *o) {
    const net_config *c = &m->cfg;
    const float *sink = m->blocks[L].sinks;
    int window = c->layer_window[L];
    tf_attn_shape sh = {c->nhead, c->nkv, c->hd, 0, 0, 0, 0, NULL, c->kv_tiled};
    int hd = c->hd, ld = qkv_width(c), q = q_width(c), g = tf_kv_head(&sh, j);
    int causal = arch(m)->target == NET_TARGET_NEXT, last = causal ? p : T - 1;
    int first = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    const float *qr = qkv + (size_t)p * ld + (size_t)j * hd;
    double mx = -INFINITY, se = 0.0;
    for (int t = first; t <= last; t++) {
        const float *k = qkv + (size_t)t * ld + q + (size_t)g * hd;
        double s = 0.0;
        for (int u = 0; u < hd; u++) s += (double)qr[u] * k[u];
        wt[t] = s * c->attn_scale;
        mx = wt[t] > mx ? wt[t] : mx;
    }
    if (sink) mx = fmax(mx, sink[j]);
    if (sink) se = exp(sink[j] - mx); // the sink joins the denominator only
    for (int t = first; t <= last; t++) se += (wt[t] = exp(wt[t] - mx));
    for (int u = 0; u < c->vd; u++) {
        double a = 0.0;
        for (int t = first; t <= last; t++)
            a += wt[t] / se * qkv[(size_t)t * ld + q + (size_t)c->nkv * hd + (size_t)g * c->vd + u];
        o[u] = (float)a;
    }
}

/* one token's q|k|v (row) of a JetMoE block from x (d): k | v, its top-k attention
 * experts (sel, gate: k each) and their queries, unrotated */
static void moa_ref(const net_model *m, const net_block *b, const float *x, float *row, int *sel, float *gate) {
    const net_config *c = &m->cfg;
    int d = c->d, hq = c->nkv * c->hd;
    float *lg = ms_malloc((size_t)c->moa_n * sizeof(float));
    mat_ref(x, d, 2 * hq, &b->wqkv, NULL, row + q_width(c));
    mat_ref(x, d, c->moa_n, &b->wmr, NULL, lg);
    moa_route(lg, c->moa_n, c->moa_k, sel, gate);
    for (int s = 0; s < c->moa_k; s++) {
        wref bs;
        net_mat E = mat_rows(&b->wmq, sel[s] * hq, hq, &bs);
        mat_ref(x, d, hq, &E, NULL, row + (size_t)s * hq);
    }
    free(lg);
}

/* y (d) = one token's JetMoE attention output from its heads' o (k hq): slot s
 * through its expert's output_linear times its gate, summed in the experts' order,
 * plus experts.bias */
static void moa_out_ref(const net_model *m, const net_block *b, const float *o, const int *sel, const float *gate,
                        float *y) {
    const net_config *c = &m->cfg;
    int d = c->d, k = c->moa_k, hq = c->nkv * c->hd;
    double *acc = ms_calloc((size_t)d, sizeof(double));
    float *t = ms_malloc((size_t)d * sizeof(float));
    for (int e = 0; e < c->moa_n; e++)
        for (int s = 0; s < k; s++) {
            if (sel[s] != e) continue;
            wref bs;
            net_mat E = mat_rows(&b->wo, e * d, d, &bs);
            mat_ref(o + (size_t)s * hq, hq, d, &E, NULL, t);
            for (int j = 0; j < d; j++) acc[j] += (double)gate[s] * t[j];
        }
    for (int j = 0; j < d; j++) y[j] = (float)(acc[j] + b->proj_b[j]);
    free(acc);
    free(t);
}

/* h (T, d) of one sequence += attention of block L (causal: token p sees 0..p) */
static void attn_ref(const net_model *m, int L, float *h, int T, float *x, float *qkv, float *o) {
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    int d = c->d, ld = qkv_width(c), q = heads_width(c), moa = arch(m)->attn == NET_ATTN_MOA, k = c->moa_k;
    tf_layout lay = layout_of(m);
    int *sel = moa ? ms_malloc((size_t)T * k * sizeof(int)) : NULL;
    float *gate = moa ? ms_malloc((size_t)T * k * sizeof(float)) : NULL;
    for (int p = 0; p < T; p++) {
        norm_ref(m, h + (size_t)p * d, d, b->ln1_w, b->ln1_b, c->block_eps, x);
        if (arch(m)->attn == NET_ATTN_MLA) {
            mla_ref(m, b, x, p, qkv + (size_t)p * ld);
            continue;
        }
        if (moa) {
            moa_ref(m, b, x, qkv + (size_t)p * ld, sel + (size_t)p * k, gate + (size_t)p * k);
            qk_ref(m, b, qkv + (size_t)p * ld, p);
            continue;
        }
        if (arch(m)->attn == NET_ATTN_ROPE) {
            mat_ref(x, d, ld, &b->wqkv, b->attn_b, qkv + (size_t)p * ld);
            qk_ref(m, b, qkv + (size_t)p * ld, p);
        } else {
            dense_ref(x, d, ld, b->attn_w, lay, b->attn_b, qkv + (size_t)p * ld);
        }
    }
    double *wt = ms_malloc((size_t)T * sizeof(double));
    for (int p = 0; p < T; p++)
        for (int j = 0; j < c->nhead; j++) head_ref(m, L, qkv, T, p, j, wt, o + (size_t)p * q + (size_t)j * c->vd);
    free(wt);
    for (int p = 0; p < T; p++) {
        if (moa) moa_out_ref(m, b, o + (size_t)p * q, sel + (size_t)p * k, gate + (size_t)p * k, x);
        else if (arch(m)->embed == NET_EMBED_TOKENS) mat_ref(o + (size_t)p * q, q, d, &b->wo, b->proj_b, x);
        else dense_ref(o + (size_t)p * q, q, d, b->proj_w, lay, b->proj_b, x);
        for (int j = 0; j < d; j++) h[(size_t)p * d + j] += (float)(c->res_mult * x[j]);
    }
    free(sel);
    free(gate);
}

/* y (d) = a dense block's MLP of x (d); u (2ff) a workspace */
static void dense_mlp_ref(const net_model *m, const net_block *b, const float *x, float *u, float *y) {
    const net_config *c = &m->cfg;
    int d = c->d, ff = c->ff;
    tf_layout lay = layout_of(m);
    if (arch(m)->mlp == NET_MLP_GLU) {
        mat_ref(x, d, 2 * ff, &b->wfc, NULL, u);
        for (int q = 0; q < ff; q++) u[q] = moe_act_scalar(ACT_SILU_GLU, u[q]) * u[ff + q];
        mat_ref(u, ff, d, &b->wfcp, NULL, y);
        return;
    }
    dense_ref(x, d, ff, b->fc_w, lay, b->fc_b, u);
    for (int q = 0; q < ff; q++) u[q] = moe_act_scalar(c->act, u[q]);
    dense_ref(u, ff, d, b->fcp_w, lay, b->fcp_b, y);
}

/* h (T, d) of one sequence += mlp(ln_2 h) of block L, token by token */
static void mlp_ref(const net_model *m, const moe_model *const *moe, int L, float *h, int T, float *x,
                    float *y, float *u) {
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    int d = c->d, mi = c->moe_of[L];
    for (int p = 0; p < T; p++) {
        float *hr = h + (size_t)p * d;
        norm_ref(m, hr, d, b->ln2_w, b->ln2_b, c->block_eps, x);
        if (mi >= 0) moe_forward_ref(moe ? moe[mi] : &m->moe[mi], x, 1, y, NULL);
        else dense_mlp_ref(m, b, x, u, y);
        for (int j = 0; j < d; j++) hr[j] += (float)(c->res_mult * y[j]);
    }
}

/* h (T, d) = the embedding of sequence s */
static void embed_ref(const net_model *m, const net_evalset *E, int s, int T, float *h) {
    const net_config *c = &m->cfg;
    int d = c->d;
    if (arch(m)->embed == NET_EMBED_PATCHES) {
        vit_embed_ref(m, E->pixels + (size_t)s * c->chans * c->image * c->image, h);
        return;
    }
    for (int p = 0; p < T; p++) {
        int id = E->ids[(size_t)s * T + p];
        if (arch(m)->embed == NET_EMBED_TOKENS) {
            net_mat_row(&m->wemb, id, d, h + (size_t)p * d);
            for (int j = 0; j < d; j++) h[(size_t)p * d + j] = (float)(h[(size_t)p * d + j] * c->emb_mult);
        } else {
            for (int j = 0; j < d; j++) h[(size_t)p * d + j] = m->wte[(size_t)id * d + j] + m->wpe[(size_t)p * d + j];
        }
    }
}

void net_logits_ref(const net_model *m0, const moe_model *const *moe, const net_evalset *E, float *logits) {
    net_model mt = *m0, *m = &mt; // its rotation that of T tokens (longrope's short or long set)
    const double *inv;
    net_rope_at(&m0->cfg, tokens_of(m0, E), &inv, &mt.cfg.rope_af);
    memmove(mt.cfg.inv_freq, inv, sizeof mt.cfg.inv_freq);
    const net_config *c = &m->cfg;
    int d = c->d, V = c->vocab, T = tokens_of(m, E), per = rows_per_seq(m, T);
    int ow = heads_width(c) > d ? heads_width(c) : d;
    float *h = ms_malloc((size_t)T * d * sizeof(float));
    float *x = ms_malloc((size_t)d * sizeof(float)), *y = ms_malloc((size_t)d * sizeof(float));
    float *qkv = ms_malloc((size_t)T * qkv_width(c) * sizeof(float)), *o = ms_malloc((size_t)T * ow * sizeof(float));
    float *u = ms_malloc((size_t)c->ff * 2 * sizeof(float));
    for (int s = 0; s < E->N; s++) {
        embed_ref(m, E, s, T, h);
        for (int L = 0; L < c->nlayer; L++) {
            attn_ref(m, L, h, T, x, qkv, o);
            mlp_ref(m, moe, L, h, T, x, y, u);
        }
        for (int p = 0; p < per; p++) { // every position, or a ViT's CLS token
            float *lr = logits + ((size_t)s * per + p) * V;
            norm_ref(m, h + (size_t)p * d, d, m->lnf_w, m->lnf_b, c->eps, x);
            if (arch(m)->embed == NET_EMBED_TOKENS) mat_ref(x, d, V, &m->whead, m->lm_b, lr);
            else dense_ref(x, d, V, m->lm_w, TF_LINEAR, m->lm_b, lr);
            for (int v = 0; v < V; v++) lr[v] = (float)(lr[v] / c->logit_div);
        }
    }
    free(h);
    free(x);
    free(y);
    free(qkv);
    free(o);
    free(u);
}
