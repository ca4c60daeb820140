/* net_range.c - a network's magnitudes bounded before its forward (net_range.h). */
#include "network/net_range.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/value_range.h"

/* The walk: the largest tensor met so far (the one to blame) and where it is. */
typedef struct {
    const net_model *m;
    double top;         /* its largest |value| */
    char file[400];
    char tensor[200];
} nr_walk;

static const char *arch_name(const nr_walk *w, const char *gpt2, const char *vit) {
    return w->m->cfg.arch == NET_VIT ? vit : gpt2;
}

/* GPT-2 and ViT are walked whole; a decoder's attention and dense MLPs are laid out
 * per family (grouped heads, latent attention): there the embeddings, the MoE blocks
 * and the head are bounded, the rest is the forward's */
static int walked_whole(const net_model *m) { return m->cfg.arch == NET_GPT2 || m->cfg.arch == NET_VIT; }

/* max |p[0..k)|, the tensor named fmt (block L) blamed when it is the largest yet */
static double take(nr_walk *w, const float *p, size_t k, const char *file, const char *fmt, int L) {
    double v = 0;
    for (size_t q = 0; p && q < k; q++) v = fmax(v, fabs(p[q]));
    if (v > w->top) {
        w->top = v;
        snprintf(w->file, sizeof w->file, "%s", file);
        snprintf(w->tensor, sizeof w->tensor, fmt, L);
    }
    return v;
}

static int over(const nr_walk *w, double mag, const char *what, int L, ms_err *err) {
    if (mag <= RANGE_ACT_MAX) return 0;
    char where[48] = "";
    if (L >= 0) snprintf(where, sizeof where, " in block %d", L);
    return ms_fail(err, "%s: tensor '%s' holds values up to %.3g: the network's %s%s would reach %.3g, "
                        "over the %.0e moescope computes within (float32 overflows at 3.4e38)",
                   w->file, w->tensor, w->top, what, where, mag, RANGE_ACT_MAX);
}

/* a LayerNorm's outputs: at most sqrt(d) |gamma| + |beta| */
static double norm_bound(nr_walk *w, const float *g, const float *b, const char *fg, const char *fb, int L) {
    int d = w->m->cfg.d;
    return sqrt((double)d) * take(w, g, (size_t)d, w->m->path, fg, L) + take(w, b, (size_t)d, w->m->path, fb, L);
}

/* the residual stream's bound after the embeddings */
static int embeddings(nr_walk *w, const net_evalset *E, double *x, ms_err *err) {
    const net_model *m = w->m;
    const net_config *c = &m->cfg;
    size_t d = (size_t)c->d;
    if (c->arch == NET_GPT2) {
        *x = take(w, m->wte, (size_t)c->vocab * d, m->path, "transformer.wte.weight%.0d", 0) +
             take(w, m->wpe, (size_t)c->npos * d, m->path, "transformer.wpe.weight%.0d", 0);
        return over(w, *x, "embeddings", -1, err);
    }
    size_t K = (size_t)c->chans * c->patch * c->patch;
    double px = E && E->pixels ? take(w, E->pixels, (size_t)E->N * E->C * E->H * E->W, E->path,
                                      "pixel_values%.0d", 0)
                               : 1.0;
    double patch = (double)K * px * take(w, m->patch_w, d * K, m->path,
                                          "vit.embeddings.patch_embeddings.projection.weight%.0d", 0) +
                   take(w, m->patch_b, d, m->path, "vit.embeddings.patch_embeddings.projection.bias%.0d", 0);
    double cls = take(w, m->cls, d, m->path, "vit.embeddings.cls_token%.0d", 0);
    *x = fmax(patch, cls) + take(w, m->wpe, (size_t)c->npos * d, m->path, "vit.embeddings.position_embeddings%.0d", 0);
    return over(w, *x, "patch embeddings", -1, err);
}

/* attention: q, k, v from the LayerNorm, the scores dh |q| |k|, the projection */
static int attention(nr_walk *w, const net_block *b, int L, double *x, ms_err *err) {
    const net_config *c = &w->m->cfg;
    size_t d = (size_t)c->d;
    const char *p = w->m->path;
    double z = norm_bound(w, b->ln1_w, b->ln1_b, arch_name(w, "transformer.h.%d.ln_1.weight", "vit.encoder.layer.%d.layernorm_before.weight"),
                          arch_name(w, "transformer.h.%d.ln_1.bias", "vit.encoder.layer.%d.layernorm_before.bias"), L);
    double q = (double)d * z * take(w, b->attn_w, 3 * d * d, p, arch_name(w, "transformer.h.%d.attn.c_attn.weight", "vit.encoder.layer.%d.attention.attention.query/key/value.weight"), L) +
               take(w, b->attn_b, b->attn_b ? 3 * d : 0, p, arch_name(w, "transformer.h.%d.attn.c_attn.bias", "vit.encoder.layer.%d.attention.attention.query/key/value.bias"), L);
    double dh = (double)d / c->nhead;
    if (over(w, q, "attention's queries, keys and values", L, err) || over(w, dh * q * q, "attention scores", L, err)) return -1;
    *x += (double)d * q * take(w, b->proj_w, d * d, p, arch_name(w, "transformer.h.%d.attn.c_proj.weight", "vit.encoder.layer.%d.attention.output.dense.weight"), L) +
          take(w, b->proj_b, d, p, arch_name(w, "transformer.h.%d.attn.c_proj.bias", "vit.encoder.layer.%d.attention.output.dense.bias"), L);
    return over(w, *x, "residual stream after the attention", L, err);
}

/* the block's MLP, dense or MoE (its layer's own bounds, from the LayerNorm's) */
static int mlp(nr_walk *w, int L, double *x, ms_err *err) {
    const net_model *m = w->m;
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    size_t d = (size_t)c->d, ff = (size_t)c->ff;
    const char *p = m->path;
    double z = norm_bound(w, b->ln2_w, b->ln2_b, arch_name(w, "transformer.h.%d.ln_2.weight", "vit.encoder.layer.%d.layernorm_after.weight"),
                          arch_name(w, "transformer.h.%d.ln_2.bias", "vit.encoder.layer.%d.layernorm_after.bias"), L);
    if (c->moe_of[L] >= 0) {
        const moe_model *moe = &m->moe[c->moe_of[L]];
        value_range r;
        range_finding f;
        range_held(&r, moe, NULL);
        r.X.v = fmax(z, 1.0);
        if (range_judge(&r, moe, &f)) return range_fail(&f, moe, NULL, 0, err);
        double mix, gram;
        range_bounds(&r, moe, &mix, &gram);
        *x += mix;
    } else {
        double hid = (double)d * z * take(w, b->fc_w, d * ff, p, arch_name(w, "transformer.h.%d.mlp.c_fc.weight", "vit.encoder.layer.%d.intermediate.dense.weight"), L) +
                     take(w, b->fc_b, ff, p, arch_name(w, "transformer.h.%d.mlp.c_fc.bias", "vit.encoder.layer.%d.intermediate.dense.bias"), L);
        if (over(w, hid, "MLP's hidden units", L, err)) return -1;
        *x += (double)ff * hid * take(w, b->fcp_w, d * ff, p, arch_name(w, "transformer.h.%d.mlp.c_proj.weight", "vit.encoder.layer.%d.output.dense.weight"), L) +
              take(w, b->fcp_b, d, p, arch_name(w, "transformer.h.%d.mlp.c_proj.bias", "vit.encoder.layer.%d.output.dense.bias"), L);
    }
    return over(w, *x, "residual stream after the MLP", L, err);
}

int net_range_check(const net_model *m, const net_evalset *E, ms_err *err) {
    const net_config *c = &m->cfg;
    nr_walk w = {.m = m};
    double x;
    if (embeddings(&w, E, &x, err)) return -1;
    for (int L = 0; L < c->nlayer; L++) {
        if (walked_whole(m) && attention(&w, &m->blocks[L], L, &x, err)) return -1;
        if ((walked_whole(m) || c->moe_of[L] >= 0) && mlp(&w, L, &x, err)) return -1;
    }
    double z = norm_bound(&w, m->lnf_w, m->lnf_b, arch_name(&w, "transformer.ln_f.weight%.0d", "vit.layernorm.weight%.0d"),
                          arch_name(&w, "transformer.ln_f.bias%.0d", "vit.layernorm.bias%.0d"), 0);
    const char *head = c->arch == NET_VIT ? "classifier.weight%.0d" : c->tied ? "transformer.wte.weight%.0d" : "lm_head.weight%.0d";
    double logit = (double)c->d * z * take(&w, m->lm_w, (size_t)c->vocab * c->d, m->path, head, 0) +
                   take(&w, m->lm_b, m->lm_b ? (size_t)c->vocab : 0, m->path,
                        c->arch == NET_VIT ? "classifier.bias%.0d" : "lm_head.bias%.0d", 0);
    return over(&w, logit, "logits", -1, err);
}
