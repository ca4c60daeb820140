/* net_forward.c - the GPT-2 network's forward pass and its plain reference
 * (net_forward.h). */
#include "network/net_forward.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vexp.h"
#include "model/evaluator.h"
#include "model/moe_kernels.h"
#include "network/transformer.h"

int net_head_rows(int V) {
    int r = NET_HEAD_FLOATS / (V > 0 ? V : 1);
    return r < 64 ? 64 : r > 512 ? 512 : r;
}

void net_ws_alloc(net_ws *w, const net_config *c, int cap, int T) {
    size_t d = (size_t)c->d, M = (size_t)(cap > 0 ? cap : 1);
    w->cap = cap;
    w->T = T;
    w->x = ms_malloc(M * d * sizeof(float));
    w->qkv = ms_malloc(M * 3 * d * sizeof(float));
    w->o = ms_malloc(M * d * sizeof(float));
    w->y = ms_malloc(M * (size_t)c->ff * sizeof(float));
    w->S = ms_malloc((size_t)T * T * sizeof(float));
    w->head_rows = net_head_rows(c->vocab);
    w->lg = ms_malloc((size_t)w->head_rows * c->vocab * sizeof(float));
}

void net_ws_free(net_ws *w) {
    free(w->x);
    free(w->qkv);
    free(w->o);
    free(w->y);
    free(w->S);
    free(w->lg);
}

void net_embed(const net_model *m, const int32_t *ids, int ns, int T, float *h) {
    int d = m->cfg.d;
    for (int s = 0; s < ns; s++)
        for (int p = 0; p < T; p++) {
            const float *e = m->wte + (size_t)ids[(size_t)s * T + p] * d, *q = m->wpe + (size_t)p * d;
            float *hr = h + ((size_t)s * T + p) * d;
            for (int j = 0; j < d; j++) hr[j] = e[j] + q[j];
        }
}

void net_attn_forward(const net_model *m, int L, float *h, int ns, int T, net_ws *w) {
    const net_block *b = &m->blocks[L];
    int d = m->cfg.d, M = ns * T;
    tf_layernorm_forward(h, M, d, b->ln1_w, b->ln1_b, m->cfg.eps, w->x);
    tf_conv1d_forward(w->x, M, d, 3 * d, b->attn_w, b->attn_b, w->qkv); // (M, 3d)
    for (int s = 0; s < ns; s++)
        tf_attention_forward(w->qkv + (size_t)s * T * 3 * d, T, d, m->cfg.nhead, 1, w->S,
                             w->o + (size_t)s * T * d);
    // h += o c_proj: the projection's product added straight into the stream
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, d, d, 1.0f, w->o, d, b->proj_w, d, 1.0f,
                h, d);
    for (int r = 0; r < M; r++) moe_row_add(h + (size_t)r * d, b->proj_b, d);
}

void net_mlp_forward(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w,
                     float *G, float *X) {
    const net_block *b = &m->blocks[L];
    int d = m->cfg.d;
    tf_layernorm_forward(h, M, d, b->ln2_w, b->ln2_b, m->cfg.eps, w->x);
    if (X) memcpy(X, w->x, (size_t)M * d * sizeof(float));
    if (moe) {
        moe_forward(moe, w->x, M, w->o, G); // D(x): the family's block has no residual
        for (int r = 0; r < M; r++) moe_row_add(h + (size_t)r * d, w->o + (size_t)r * d, d);
        return;
    }
    int ff = m->cfg.ff;
    tf_conv1d_forward(w->x, M, d, ff, b->fc_w, b->fc_b, w->y); // (M, ff)
    tf_act_forward(w->y, (size_t)M * ff, m->cfg.act);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, d, ff, 1.0f, w->y, ff, b->fcp_w, d, 1.0f, h, d);
    for (int r = 0; r < M; r++) moe_row_add(h + (size_t)r * d, b->fcp_b, d);
}

/* -log softmax(lr)[y] by log-sum-exp (the exponentials by vexp4, within 3 float
 * ulp, summed in double), and the argmax (ties to the smaller id) */
static double token_loss(const float *lr, int V, int y, int *am_out) {
    int am = 0;
    for (int q = 1; q < V; q++)
        if (lr[q] > lr[am]) am = q;
    float mx = lr[am];
    double se = 0.0;
    vexp_f4 m4 = vexp_splat(mx);
    int q = 0;
    for (; q + 4 <= V; q += 4) {
        vexp_f4 e = vexp4(*(const vexp_f4 *)(lr + q) - m4);
        se += (double)e[0] + (double)e[1] + (double)e[2] + (double)e[3];
    }
    for (; q < V; q++) se += vexp1(lr[q] - mx);
    *am_out = am;
    return (double)mx + log(se) - (double)lr[y];
}

void net_head_loss(const net_model *m, const float *h, const int32_t *ids, int ns, int T, net_ws *w,
                   double *loss, long *correct, float *logits) {
    int d = m->cfg.d, V = m->cfg.vocab, M = ns * T;
    double ls = 0.0;
    long ok = 0;
    for (int r0 = 0; r0 < M; r0 += w->head_rows) {
        int rows = M - r0 < w->head_rows ? M - r0 : w->head_rows;
        float *x = w->x + (size_t)r0 * d;
        tf_layernorm_forward(h + (size_t)r0 * d, rows, d, m->lnf_w, m->lnf_b, m->cfg.eps, x);
        float *lg = logits ? logits + (size_t)r0 * V : w->lg; // (rows, V)
        // logits (rows, V) = x (rows, d) lm_head^T, lm_head (V, d)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, V, d, 1.0f, x, d, m->lm_w, d, 0.0f,
                    lg, V);
        if (m->lm_b)
            for (int r = 0; r < rows; r++) moe_row_add(lg + (size_t)r * V, m->lm_b, V);
        for (int r = 0; r < rows; r++) {
            int row = r0 + r, p = row % T;
            if (p == T - 1) continue; // the last token predicts nothing
            int y = ids[row + 1], am;
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

/* y (out) = x (in) W (in, out) + b, in double */
static void conv_ref(const float *x, int in, int out, const float *W, const float *b, float *y) {
    for (int c = 0; c < out; c++) {
        double a = b ? b[c] : 0.0;
        for (int r = 0; r < in; r++) a += (double)x[r] * W[(size_t)r * out + c];
        y[c] = (float)a;
    }
}

/* h (T, d) of one sequence += attention of block b */
static void attn_ref(const net_model *m, const net_block *b, float *h, int T, float *x, float *qkv,
                     float *o) {
    int d = m->cfg.d, nh = m->cfg.nhead, dh = d / nh;
    for (int p = 0; p < T; p++) {
        ln_ref(h + (size_t)p * d, d, b->ln1_w, b->ln1_b, m->cfg.eps, x);
        conv_ref(x, d, 3 * d, b->attn_w, b->attn_b, qkv + (size_t)p * 3 * d);
    }
    double *wt = ms_malloc((size_t)T * sizeof(double));
    for (int p = 0; p < T; p++)
        for (int j = 0; j < nh; j++) {
            const float *q = qkv + (size_t)p * 3 * d + j * dh;
            double mx = -INFINITY, se = 0.0;
            for (int c = 0; c <= p; c++) {
                const float *k = qkv + (size_t)c * 3 * d + d + j * dh;
                double s = 0.0;
                for (int u = 0; u < dh; u++) s += (double)q[u] * k[u];
                wt[c] = s / sqrt((double)dh);
                mx = wt[c] > mx ? wt[c] : mx;
            }
            for (int c = 0; c <= p; c++) se += (wt[c] = exp(wt[c] - mx));
            for (int u = 0; u < dh; u++) {
                double a = 0.0;
                for (int c = 0; c <= p; c++) a += wt[c] / se * qkv[(size_t)c * 3 * d + 2 * d + j * dh + u];
                o[(size_t)p * d + j * dh + u] = (float)a;
            }
        }
    free(wt);
    for (int p = 0; p < T; p++) {
        conv_ref(o + (size_t)p * d, d, d, b->proj_w, b->proj_b, x);
        for (int j = 0; j < d; j++) h[(size_t)p * d + j] += x[j];
    }
}

void net_logits_ref(const net_model *m, const moe_model *const *moe, const int32_t *ids, int N,
                    int T, float *logits) {
    const net_config *c = &m->cfg;
    int d = c->d, V = c->vocab;
    float *h = ms_malloc((size_t)T * d * sizeof(float));
    float *x = ms_malloc((size_t)d * sizeof(float)), *y = ms_malloc((size_t)d * sizeof(float));
    float *qkv = ms_malloc((size_t)T * 3 * d * sizeof(float)), *o = ms_malloc((size_t)T * d * sizeof(float));
    float *u = ms_malloc((size_t)c->ff * sizeof(float));
    for (int s = 0; s < N; s++) {
        net_embed(m, ids + (size_t)s * T, 1, T, h);
        for (int L = 0; L < c->nlayer; L++) {
            const net_block *b = &m->blocks[L];
            attn_ref(m, b, h, T, x, qkv, o);
            int mi = c->moe_of[L];
            for (int p = 0; p < T; p++) {
                float *hr = h + (size_t)p * d;
                ln_ref(hr, d, b->ln2_w, b->ln2_b, c->eps, x);
                if (mi >= 0) {
                    moe_forward_ref(moe ? moe[mi] : &m->moe[mi], x, 1, y, NULL);
                } else {
                    conv_ref(x, d, c->ff, b->fc_w, b->fc_b, u);
                    for (int q = 0; q < c->ff; q++) u[q] = moe_act_scalar(c->act, u[q]);
                    conv_ref(u, c->ff, d, b->fcp_w, b->fcp_b, y);
                }
                for (int j = 0; j < d; j++) hr[j] += y[j];
            }
        }
        for (int p = 0; p < T; p++) {
            ln_ref(h + (size_t)p * d, d, m->lnf_w, m->lnf_b, c->eps, x);
            float *lr = logits + ((size_t)s * T + p) * V;
            for (int v = 0; v < V; v++) {
                double a = m->lm_b ? m->lm_b[v] : 0.0;
                for (int j = 0; j < d; j++) a += (double)x[j] * m->lm_w[(size_t)v * d + j];
                lr[v] = (float)a;
            }
        }
    }
    free(h);
    free(x);
    free(y);
    free(qkv);
    free(o);
    free(u);
}
