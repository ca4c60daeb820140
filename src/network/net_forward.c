/* net_forward.c - the network's forward pass and its plain reference
 * (net_forward.h). */
#include "network/net_forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vrows.h"
#include "model/evaluator.h"
#include "model/moe_kernels.h"
#include "network/transformer.h"

int net_head_rows(int V) {
    int r = NET_HEAD_FLOATS / (V > 0 ? V : 1);
    return r < 64 ? 64 : r > 512 ? 512 : r;
}

/* the weights' layout of m's blocks */
static tf_layout layout_of(const net_model *m) { return m->cfg.arch == NET_VIT ? TF_LINEAR : TF_CONV1D; }

static int patch_values(const net_config *c) { return c->chans * c->patch * c->patch; }

void net_ws_alloc(net_ws *w, const net_config *c, int cap, int T) {
    size_t d = (size_t)c->d, M = (size_t)(cap > 0 ? cap : 1);
    w->cap = cap;
    w->T = T;
    w->x = ms_malloc(M * d * sizeof(float));
    w->qkv = ms_malloc(M * 3 * d * sizeof(float));
    w->o = ms_malloc(M * d * sizeof(float));
    w->y = ms_malloc(M * (size_t)c->ff * sizeof(float));
    w->S = ms_malloc((size_t)T * T * sizeof(float));
    w->pt = c->arch == NET_VIT ? ms_malloc((size_t)c->npatch * patch_values(c) * sizeof(float)) : NULL;
    w->head_rows = net_head_rows(c->vocab);
    w->lg = ms_malloc((size_t)w->head_rows * c->vocab * sizeof(float));
}

void net_ws_free(net_ws *w) {
    free(w->x);
    free(w->qkv);
    free(w->o);
    free(w->y);
    free(w->S);
    free(w->pt);
    free(w->lg);
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
    int d = c->d, T = net_tokens(m, E);
    for (int s = 0; s < ns; s++) {
        float *hs = h + (size_t)s * T * d; // (T, d)
        if (c->arch == NET_VIT) {
            vit_patches(c, E->pixels + (size_t)(s0 + s) * c->chans * c->image * c->image, w->pt);
            // rows 1..P (P, d) = patches (P, K) W_patch^T + b, W_patch (d, K)
            tf_dense_forward(w->pt, c->npatch, patch_values(c), d, m->patch_w, TF_LINEAR, m->patch_b, 0, hs + d);
            memcpy(hs, m->cls, (size_t)d * sizeof(float));
        } else {
            const int32_t *ids = E->ids + (size_t)(s0 + s) * T;
            for (int p = 0; p < T; p++) memcpy(hs + (size_t)p * d, m->wte + (size_t)ids[p] * d, (size_t)d * sizeof(float));
        }
        for (int p = 0; p < T; p++) moe_row_add(hs + (size_t)p * d, m->wpe + (size_t)p * d, d);
    }
}

void net_attn_forward(const net_model *m, int L, float *h, int ns, int T, net_ws *w) {
    const net_block *b = &m->blocks[L];
    int d = m->cfg.d, M = ns * T, causal = m->cfg.arch == NET_GPT2;
    tf_layout lay = layout_of(m);
    tf_layernorm_forward(h, M, d, b->ln1_w, b->ln1_b, m->cfg.eps, w->x);
    tf_dense_forward(w->x, M, d, 3 * d, b->attn_w, lay, b->attn_b, 0, w->qkv); // (M, 3d)
    for (int s = 0; s < ns; s++)
        tf_attention_forward(w->qkv + (size_t)s * T * 3 * d, T, d, m->cfg.nhead, causal, w->S,
                             w->o + (size_t)s * T * d);
    // h += o c_proj: the projection's product added straight into the stream
    tf_dense_forward(w->o, M, d, d, b->proj_w, lay, b->proj_b, 1, h);
}

void net_mlp_input(const net_model *m, int L, const float *h, int M, net_ws *w) {
    const net_block *b = &m->blocks[L];
    tf_layernorm_forward(h, M, m->cfg.d, b->ln2_w, b->ln2_b, m->cfg.eps, w->x);
}

void net_mlp_apply(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w, float *G) {
    const net_block *b = &m->blocks[L];
    int d = m->cfg.d;
    if (moe) {
        moe_forward(moe, w->x, M, w->o, G); // D(x): the family's block has no residual
        for (int r = 0; r < M; r++) moe_row_add(h + (size_t)r * d, w->o + (size_t)r * d, d);
        return;
    }
    int ff = m->cfg.ff;
    tf_layout lay = layout_of(m);
    tf_dense_forward(w->x, M, d, ff, b->fc_w, lay, b->fc_b, 0, w->y); // (M, ff)
    tf_act_forward(w->y, (size_t)M * ff, m->cfg.act);
    tf_dense_forward(w->y, M, ff, d, b->fcp_w, lay, b->fcp_b, 1, h);
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
    if (m->cfg.arch == NET_VIT) return E->labels[s0 + r];
    return r % T == T - 1 ? -1 : E->ids[(size_t)s0 * T + r + 1];
}

void net_head_loss(const net_model *m, const float *h, const net_evalset *E, int s0, int ns, net_ws *w,
                   double *loss, long *correct, float *logits) {
    int d = m->cfg.d, V = m->cfg.vocab, T = net_tokens(m, E);
    int per = net_logit_rows(m, T), R = ns * per, step = T / per; // a ViT's rows: every T-th, the CLS
    double ls = 0.0;
    long ok = 0;
    for (int r0 = 0; r0 < R; r0 += w->head_rows) {
        int rows = R - r0 < w->head_rows ? R - r0 : w->head_rows;
        float *x = w->x + (size_t)r0 * d;
        for (int r = 0; r < rows; r++)
            tf_layernorm_forward(h + (size_t)(r0 + r) * step * d, 1, d, m->lnf_w, m->lnf_b, m->cfg.eps,
                                 x + (size_t)r * d);
        float *lg = logits ? logits + (size_t)r0 * V : w->lg; // (rows, V)
        // logits (rows, V) = x (rows, d) lm_head^T, lm_head (V, d)
        tf_dense_forward(x, rows, d, V, m->lm_w, TF_LINEAR, m->lm_b, 0, lg);
        for (int r = 0; r < rows; r++) {
            int y = head_target(m, E, s0, T, r0 + r), am;
            if (y < 0) continue; // the last token predicts nothing
            ls += token_loss(lg + (size_t)r * V, V, y, &am);
            ok += am == y;
        }
    }
    *loss += ls;
    *correct += ok;
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

/* h (T, d) of one sequence += attention of block b (causal: token p sees 0..p) */
static void attn_ref(const net_model *m, const net_block *b, float *h, int T, float *x, float *qkv,
                     float *o) {
    int d = m->cfg.d, nh = m->cfg.nhead, dh = d / nh, causal = m->cfg.arch == NET_GPT2;
    tf_layout lay = layout_of(m);
    for (int p = 0; p < T; p++) {
        ln_ref(h + (size_t)p * d, d, b->ln1_w, b->ln1_b, m->cfg.eps, x);
        dense_ref(x, d, 3 * d, b->attn_w, lay, b->attn_b, qkv + (size_t)p * 3 * d);
    }
    double *wt = ms_malloc((size_t)T * sizeof(double));
    for (int p = 0; p < T; p++)
        for (int j = 0; j < nh; j++) {
            const float *q = qkv + (size_t)p * 3 * d + j * dh;
            int last = causal ? p : T - 1;
            double mx = -INFINITY, se = 0.0;
            for (int c = 0; c <= last; c++) {
                const float *k = qkv + (size_t)c * 3 * d + d + j * dh;
                double s = 0.0;
                for (int u = 0; u < dh; u++) s += (double)q[u] * k[u];
                wt[c] = s / sqrt((double)dh);
                mx = wt[c] > mx ? wt[c] : mx;
            }
            for (int c = 0; c <= last; c++) se += (wt[c] = exp(wt[c] - mx));
            for (int u = 0; u < dh; u++) {
                double a = 0.0;
                for (int c = 0; c <= last; c++) a += wt[c] / se * qkv[(size_t)c * 3 * d + 2 * d + j * dh + u];
                o[(size_t)p * d + j * dh + u] = (float)a;
            }
        }
    free(wt);
    for (int p = 0; p < T; p++) {
        dense_ref(o + (size_t)p * d, d, d, b->proj_w, lay, b->proj_b, x);
        for (int j = 0; j < d; j++) h[(size_t)p * d + j] += x[j];
    }
}

/* h (T, d) of one sequence += mlp(ln_2 h) of block L, token by token */
static void mlp_ref(const net_model *m, const moe_model *const *moe, int L, float *h, int T, float *x,
                    float *y, float *u) {
    const net_config *c = &m->cfg;
    const net_block *b = &m->blocks[L];
    int d = c->d, mi = c->moe_of[L];
    tf_layout lay = layout_of(m);
    for (int p = 0; p < T; p++) {
        float *hr = h + (size_t)p * d;
        ln_ref(hr, d, b->ln2_w, b->ln2_b, c->eps, x);
        if (mi >= 0) {
            moe_forward_ref(moe ? moe[mi] : &m->moe[mi], x, 1, y, NULL);
        } else {
            dense_ref(x, d, c->ff, b->fc_w, lay, b->fc_b, u);
            for (int q = 0; q < c->ff; q++) u[q] = moe_act_scalar(c->act, u[q]);
            dense_ref(u, c->ff, d, b->fcp_w, lay, b->fcp_b, y);
        }
        for (int j = 0; j < d; j++) hr[j] += y[j];
    }
}

void net_logits_ref(const net_model *m, const moe_model *const *moe, const net_evalset *E, float *logits) {
    const net_config *c = &m->cfg;
    int d = c->d, V = c->vocab, T = net_tokens(m, E), per = net_logit_rows(m, T);
    float *h = ms_malloc((size_t)T * d * sizeof(float));
    float *x = ms_malloc((size_t)d * sizeof(float)), *y = ms_malloc((size_t)d * sizeof(float));
    float *qkv = ms_malloc((size_t)T * 3 * d * sizeof(float)), *o = ms_malloc((size_t)T * d * sizeof(float));
    float *u = ms_malloc((size_t)c->ff * sizeof(float));
    for (int s = 0; s < E->N; s++) {
        if (c->arch == NET_VIT)
            vit_embed_ref(m, E->pixels + (size_t)s * c->chans * c->image * c->image, h);
        else
            for (int p = 0; p < T; p++)
                for (int j = 0; j < d; j++)
                    h[(size_t)p * d + j] = m->wte[(size_t)E->ids[(size_t)s * T + p] * d + j] + m->wpe[(size_t)p * d + j];
        for (int L = 0; L < c->nlayer; L++) {
            attn_ref(m, &m->blocks[L], h, T, x, qkv, o);
            mlp_ref(m, moe, L, h, T, x, y, u);
        }
        for (int p = 0; p < per; p++) { // every position, or a ViT's CLS token
            ln_ref(h + (size_t)p * d, d, m->lnf_w, m->lnf_b, c->eps, x);
            dense_ref(x, d, V, m->lm_w, TF_LINEAR, m->lm_b, logits + ((size_t)s * per + p) * V);
        }
    }
    free(h);
    free(x);
    free(y);
    free(qkv);
    free(o);
    free(u);
}
