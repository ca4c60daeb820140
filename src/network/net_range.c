/* net_range.c - a network's magnitudes bounded before its forward (net_range.h). */
#include "network/net_range.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "io/family.h"
#include "model/value_range.h"

/* where the float to blame is: the backbone, an MoE block, the set's pixel_values */
/* AT_MAPPED: a mapped expert's weight; AT_MAT: a decoder's matrix where its file keeps it */
typedef enum { AT_BACKBONE, AT_MOE, AT_MAPPED, AT_MAT, AT_PIXELS } nr_source;

/* The walk: the largest |value| met so far (the one to blame) and where it is. */
typedef struct {
    const net_model *m;
    const net_evalset *E;
    double top;
    const float *at;      /* the float holding it */
    nr_source src;
    const moe_model *moe; /* AT_MOE, AT_MAPPED: its block */
    range_max mapped;     /* AT_MAPPED: the expert, part and element (value_range.h) */
    const net_mat *mat;   /* AT_MAT: the matrix and its part */
    int part;
} nr_walk;

/* max |p[0..k)| (p NULL: 0), its float blamed when it is the largest yet */
static double take_in(nr_walk *w, const float *p, size_t k, nr_source src, const moe_model *moe) {
    double v = 0;
    size_t at = 0;
    for (size_t q = 0; p && q < k; q++)
        if (fabs(p[q]) > v) v = fabs(p[q]), at = q;
    if (v > w->top) w->top = v, w->at = p + at, w->src = src, w->moe = moe;
    return v;
}

static double take(nr_walk *w, const float *p, size_t k) { return take_in(w, p, k, AT_BACKBONE, NULL); }

/* max |W| of a decoder's matrix W (cols wide): a part in the backbone's floats as
 * take, a mapped one converted a row at a time (blamed by its tensor) */
static double take_mat(nr_walk *w, const net_mat *W, size_t cols) {
    double v = 0;
    float *row = NULL;
    for (int i = 0; i < W->n; i++) {
        const wref *P = &W->part[i];
        size_t rows = (size_t)W->rows[i];
        if (wp_is_plain_f32(*P) && P->ld == cols && net_in_mem(w->m, P->p)) {
            v = fmax(v, take(w, P->p, rows * cols));
            continue;
        }
        if (!row) row = ms_malloc((cols ? cols : 1) * sizeof(float));
        for (size_t r = 0; r < rows; r++) {
            wp_rows_f32(*P, cols, r, 1, row);
            for (size_t c = 0; c < cols; c++)
                if (fabs(row[c]) > v) {
                    v = fabs(row[c]);
                    if (v > w->top) w->top = v, w->src = AT_MAT, w->mat = W, w->part = i;
                }
        }
    }
    free(row);
    return v;
}

/* a matrix of the network: a decoder's W, else the floats p (k of them) */
static double take_w(nr_walk *w, const net_mat *W, const float *p, size_t k, size_t cols) {
    return W->n ? take_mat(w, W, cols) : take(w, p, k);
}

/* the file of a checkpoint argument holding tensor name (path itself if none) */
static void shard_of(const char *path, const char *name, char *file, size_t cap) {
    ckpt c;
    const st_file *f;
    const st_tensor *t;
    snprintf(file, cap, "%s", path);
    if (ckpt_open(&c, path, NULL)) return;
    if (!ckpt_tensor(&c, name, &f, &t, NULL)) snprintf(file, cap, "%s", f->path);
    ckpt_close(&c);
}

/* "<file>: tensor '<name>'" of the float blamed, in the file's own names */
static void blame(const nr_walk *w, char *out, size_t cap) {
    char name[200], file[600];
    size_t at;
    long long el;
    if (w->src == AT_PIXELS) snprintf(out, cap, "%s: tensor 'pixel_values'", w->E->path);
    else if (w->src == AT_MOE && !family_tensor_at(w->moe, w->at, out, cap, &el)) return;
    else if (w->src == AT_MAPPED && !family_value_name(w->moe, w->mapped.shared, w->mapped.e, w->mapped.part,
                                                       w->mapped.at, out, cap, &el))
        return;
    else if ((w->src == AT_BACKBONE && !net_tensor_at(w->m, w->at, name, sizeof name, &at)) ||
             (w->src == AT_MAT && !net_mat_name(w->m, w->mat, w->part, name, sizeof name))) {
        shard_of(w->m->path, name, file, sizeof file);
        snprintf(out, cap, "%s: tensor '%s'", file, name);
    }
    else snprintf(out, cap, "%s: MoE block '%s'", w->m->path, w->moe ? w->moe->layer : "?");
}

/* mag over limit: refused naming the float blamed, what reaches it and the block L */
static int over_limit(const nr_walk *w, double mag, double limit, const char *what, int L, ms_err *err) {
    if (mag <= limit) return 0;
    char where[48] = "", held[900];
    if (L >= 0) snprintf(where, sizeof where, " in block %d", L);
    blame(w, held, sizeof held);
    return ms_fail(err, "%s holds values up to %.3g: the network's %s%s would reach %.3g, "
                        "over the %.0e moescope computes within (float32 overflows at 3.4e38)",
                   held, w->top, what, where, mag, limit);
}

static int over(const nr_walk *w, double mag, const char *what, int L, ms_err *err) {
    return over_limit(w, mag, RANGE_ACT_MAX, what, L, err);
}

/* a norm's outputs: a LayerNorm's at most sqrt(d) |gamma| + |beta|, an RMSNorm's
 * sqrt(d) |gamma| (b NULL), over d features */
static double norm_bound(nr_walk *w, const float *g, const float *b, size_t d) {
    return sqrt((double)d) * take(w, g, d) + take(w, b, d);
}

/* the residual stream's bound after the embeddings */
static int embeddings(nr_walk *w, double *x, ms_err *err) {
    const net_model *m = w->m;
    const net_config *c = &m->cfg;
    const net_evalset *E = w->E;
    size_t d = (size_t)c->d;
    switch (net_arch_of(c->arch)->embed) {
    case NET_EMBED_LEARNED: *x = take(w, m->wte, (size_t)c->vocab * d) + take(w, m->wpe, (size_t)c->npos * d); break;
    case NET_EMBED_TOKENS: *x = fabs(c->emb_mult) * take_mat(w, &m->wemb, d); break;
    case NET_EMBED_PATCHES: {
        size_t K = (size_t)c->chans * c->patch * c->patch;
        double px = E && E->pixels ? take_in(w, E->pixels, (size_t)E->N * E->C * E->H * E->W, AT_PIXELS, NULL) : 1.0;
        double patch = (double)K * px * take(w, m->patch_w, d * K) + take(w, m->patch_b, d);
        *x = fmax(patch, take(w, m->cls, d)) + take(w, m->wpe, (size_t)c->npos * d);
    }
    }
    return over(w, *x, c->patch ? "patch embeddings" : "embeddings", -1, err);
}

/* q or k after its norm (Qwen3's per head, OLMoE's over the whole projection) and
 * the rotation (a pair turned, times the attention factor) */
static double qk_after(nr_walk *w, const float *n, size_t width, double raw) {
    const net_config *c = &w->m->cfg;
    double v = n ? sqrt((double)width) * take(w, n, width) : raw;
    return c->rot ? v * sqrt(2.0) * fmax(c->rope_af, 1.0) : v;
}

/* the scores' bound dh |q| |k| scale, GPT-OSS's sink logits beside them */
static int scores(nr_walk *w, const net_block *b, int L, double q, double k, ms_err *err) {
    const net_config *c = &w->m->cfg;
    double s = (double)c->hd * q * k * fmax(c->attn_scale, 1.0);
    s = fmax(s, take(w, b->sinks, b->sinks ? (size_t)c->nhead : 0));
    return over(w, s, "attention scores", L, err);
}

/* multi-head attention and grouped-query attention with rotary embeddings: q|k|v
 * from the norm's outputs z (OLMoE's clipped), the scores, *v the values */
static int attn_qkv(nr_walk *w, const net_block *b, int L, double z, double *v, ms_err *err) {
    const net_config *c = &w->m->cfg;
    size_t d = (size_t)c->d, rows = (size_t)(c->nhead + 2 * c->nkv) * c->hd;
    const net_arch_desc *A = net_arch_of(c->arch);
    int head = A->qk_norm == NET_QKN_HEAD;
    double qkv = (double)d * z * take_w(w, &b->wqkv, b->attn_w, rows * d, d) +
                 take(w, b->attn_b, b->attn_b ? rows : 0);
    if (c->clip_qkv > 0) qkv = fmin(qkv, c->clip_qkv);
    if (over(w, qkv, "attention's queries, keys and values", L, err)) return -1;
    size_t qw = head ? (size_t)c->hd : (size_t)c->nhead * c->hd, kw = head ? (size_t)c->hd : (size_t)c->nkv * c->hd;
    double q = qk_after(w, b->qn_w, qw, qkv), k = qk_after(w, b->kn_w, kw, qkv);
    *v = qkv;
    return scores(w, b, L, q, k, err);
}

/* DeepSeek's latent attention: q (through q_lora and its norm, or q_proj), the
 * compressed kv and its norm, kv_b's keys and values, the rotated key */
static int attn_mla(nr_walk *w, const net_block *b, int L, double z, double *v, ms_err *err) {
    const net_config *c = &w->m->cfg;
    size_t d = (size_t)c->d, ql = (size_t)c->q_lora, kvl = (size_t)c->kv_lora;
    double qin = z, qd = (double)d;
    if (ql) {
        double a = qd * z * take_mat(w, &b->wqa, d);
        if (over(w, a, "attention's compressed queries", L, err)) return -1;
        qin = norm_bound(w, b->qa_n, NULL, ql), qd = (double)ql;
    }
    double q = qd * qin * take_mat(w, &b->wqkv, ql ? ql : d);
    double ckv = (double)d * z * take_mat(w, &b->wkva, d);
    if (over(w, fmax(q, ckv), "attention's queries and compressed keys and values", L, err)) return -1;
    double kv = (double)kvl * norm_bound(w, b->kva_n, NULL, kvl) * take_mat(w, &b->wkvb, kvl);
    if (over(w, kv, "attention's keys and values", L, err)) return -1;
    double rot = sqrt(2.0) * fmax(c->rope_af, 1.0);
    *v = kv;
    return scores(w, b, L, q * rot, fmax(kv, ckv * rot), err);
}

/* JetMoE's attention: the experts' router logits, k | v, each expert's queries */
static int attn_moa(nr_walk *w, const net_block *b, int L, double z, double *v, ms_err *err) {
    const net_config *c = &w->m->cfg;
    double d = (double)c->d, kv = d * z * take_mat(w, &b->wqkv, (size_t)c->d);
    double q = d * z * take_mat(w, &b->wmq, (size_t)c->d), lg = d * z * take_mat(w, &b->wmr, (size_t)c->d);
    if (over(w, lg, "attention experts' router logits", L, err) ||
        over(w, fmax(q, kv), "attention's queries, keys and values", L, err))
        return -1;
    double rot = sqrt(2.0) * fmax(c->rope_af, 1.0);
    *v = kv;
    return scores(w, b, L, q * rot, kv * rot, err);
}

/* attention from the first norm, its output projection added to the stream *x
 * (JetMoE's: each slot's expert's, gated, the gates summing to 1: one hq wide) */
static int attention(nr_walk *w, const net_block *b, int L, double *x, ms_err *err) {
    const net_config *c = &w->m->cfg;
    const net_arch_desc *A = net_arch_of(c->arch);
    size_t d = (size_t)c->d, in = A->attn == NET_ATTN_MOA ? (size_t)c->nkv * c->hd : (size_t)c->nhead * c->vd;
    double z = norm_bound(w, b->ln1_w, b->ln1_b, d), v;
    int rc = A->attn == NET_ATTN_MLA   ? attn_mla(w, b, L, z, &v, err)
             : A->attn == NET_ATTN_MOA ? attn_moa(w, b, L, z, &v, err)
                                       : attn_qkv(w, b, L, z, &v, err);
    if (rc) return -1;
    *x += fabs(c->res_mult) * ((double)in * v * take_w(w, &b->wo, b->proj_w, d * in, in) + take(w, b->proj_b, d));
    return over(w, *x, "residual stream after the attention", L, err);
}

/* an MoE block by its layer's own bounds from its input z; every float of its
 * allocation (router, experts, shared experts, biases) may be blamed */
static int moe_block(nr_walk *w, const moe_model *moe, double z, int L, double *mix, ms_err *err) {
    value_range r;
    double gram;
    take_in(w, moe->mem, moe->nparams, AT_MOE, moe);
    range_held(&r, moe, NULL);
    // a mapped layer's routed (and shared) weights are not in its floats: blamed by
    // expert and part
    const range_max *held[4] = {&r.W1, &r.W2, &r.SW1, &r.SW2};
    for (int i = 0; i < 4; i++) {
        int sh = i >= 2;
        if ((sh ? moe_shared_mapped(moe) : moe_is_mapped(moe)) && held[i]->expert && held[i]->shared == sh &&
            held[i]->v > w->top)
            w->top = held[i]->v, w->src = AT_MAPPED, w->moe = moe, w->mapped = *held[i];
    }
    r.X.v = fmax(z, 1.0);
    double act = range_bounds(&r, moe, mix, &gram);
    return over(w, act, "MoE layer's arithmetic", L, err) ||
                   over_limit(w, gram, RANGE_GRAM_MAX, "expert cost's Gram entries", L, err)
               ? -1
               : 0;
}

/* the block's MLP from the second norm: dense (an activation, or a GLU) or MoE */
static int mlp(nr_walk *w, int L, double *x, ms_err *err) {
    const net_model *m = w->m;
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    size_t d = (size_t)c->d, ff = (size_t)c->ff;
    int glu = net_arch_of(c->arch)->mlp == NET_MLP_GLU;
    double z = norm_bound(w, b->ln2_w, b->ln2_b, d), out;
    if (c->moe_of[L] >= 0) {
        if (moe_block(w, &m->moe[c->moe_of[L]], z, L, &out, err)) return -1;
    } else {
        // GLU: gate|up side by side, silu(g) u at most |g| |u|
        double hid = (double)d * z * take_w(w, &b->wfc, b->fc_w, (glu ? 2 : 1) * ff * d, d) +
                     take(w, b->fc_b, b->fc_b ? ff : 0);
        if (glu) hid *= hid;
        if (over(w, hid, "MLP's hidden units", L, err)) return -1;
        out = (double)ff * hid * take_w(w, &b->wfcp, b->fcp_w, d * ff, ff) + take(w, b->fcp_b, b->fcp_b ? d : 0);
    }
    *x += fabs(c->res_mult) * out;
    return over(w, *x, "residual stream after the MLP", L, err);
}

int net_range_check(const net_model *m, const net_evalset *E, ms_err *err) {
    const net_config *c = &m->cfg;
    nr_walk w = {.m = m, .E = E};
    double x = 0;
    if (embeddings(&w, &x, err)) return -1;
    for (int L = 0; L < c->nlayer; L++) {
        if (progress_cancelled()) return ms_fail(err, "cancelled"); // the explorer's q: between blocks
        if (attention(&w, &m->blocks[L], L, &x, err) || mlp(&w, L, &x, err)) return -1;
    }
    double z = norm_bound(&w, m->lnf_w, m->lnf_b, (size_t)c->d);
    double logit = (double)c->d * z * take_w(&w, &m->whead, m->lm_w, (size_t)c->vocab * c->d, (size_t)c->d) +
                   take(&w, m->lm_b, m->lm_b ? (size_t)c->vocab : 0);
    return over(&w, logit / c->logit_div, "logits", -1, err);
}
