/* train.c - forward, backward and Adam for the small classifier of train.h.
 *
 * Forward (per batch, B samples, llm.c style, everything cached for backward):
 *   S = X Wg^T + bg                  (B,n) gate scores, G = route(S) (B,n)
 *   A1_e = X W1_e^T + b1_e           (B,h) per expert e (routed and shared)
 *   [A3_e = X W3_e^T + b3_e]         (B,h) silu_glu
 *   H_e = act(A1_e) [* A3_e]         (B,h)
 *   Y_e = H_e W2_e^T + b2_e          (B,d)
 *   Z = [X +] sum_sh Y_sh + sum_i G[:,i] Y_i      (B,d)
 *   U = LayerNorm(Z) * gamma + beta  (B,d)
 *   logits = U Hw^T + c              (B,C), loss = mean CE
 * Every expert is computed on the whole batch (the sizes are tiny), so top-k
 * only changes G; unselected experts get G = 0 and hence no gradient.
 * The arithmetic follows src/model/evaluator.c (same formulas, exact erf GELU). */
#include "model/train.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/evaluator.h"
#include "core/rng.h"

#define LN_EPS 1e-5f

void train_set_free(train_set *s) {
    free(s->x);
    free(s->y);
    free(s->t);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ data */

void train_embed(const float *pixels, int N, int P, int d, uint64_t embed_seed, double scale,
                 float *x) {
    // R is (d, P), entries N(0, 9/P): tanh(R p) is a fixed, mildly saturating
    // random map, so the features keep the information but no linear readout
    // of them solves the task as well as the block does
    float *R = ms_malloc((size_t)d * P * sizeof(float));
    rng_t r;
    rng_seed(&r, embed_seed);
    for (int i = 0; i < d * P; i++) R[i] = (float)(rng_normal(&r) * 3.0 / sqrt((double)P));
    // pre (N, d) = pixels (N, P) R^T, then centred so the features have mean ~0
    float *pre = ms_malloc((size_t)N * d * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, d, P, 1.0f, pixels, P, R, P, 0.0f,
                pre, d);
    for (int j = 0; j < d; j++) {
        double mean = 0;
        for (int i = 0; i < N; i++) mean += pre[(size_t)i * d + j];
        mean /= N;
        for (int i = 0; i < N; i++)
            x[(size_t)i * d + j] = (float)(scale * tanh(pre[(size_t)i * d + j] - mean));
    }
    free(pre);
    free(R);
}

void train_split(int N, int d, int C, const float *x, const int32_t *y, const float *T,
                 train_set *train, train_set *test) {
    int Nte = (N + 4) / 5, Ntr = N - Nte;
    train_set *sets[2] = {train, test};
    int sizes[2] = {Ntr, Nte};
    for (int s = 0; s < 2; s++) {
        sets[s]->N = sizes[s];
        sets[s]->d = d;
        sets[s]->C = C;
        sets[s]->x = ms_malloc((size_t)sizes[s] * d * sizeof(float));
        sets[s]->y = y ? ms_malloc((size_t)sizes[s] * sizeof(int32_t)) : NULL;
        sets[s]->t = T ? ms_malloc((size_t)sizes[s] * C * sizeof(float)) : NULL;
    }
    int itr = 0, ite = 0;
    for (int i = 0; i < N; i++) {
        train_set *s = (i % 5 == 0) ? test : train;
        int j = (i % 5 == 0) ? ite++ : itr++;
        memcpy(s->x + (size_t)j * d, x + (size_t)i * d, (size_t)d * sizeof(float));
        if (y) s->y[j] = y[i];
        if (T) memcpy(s->t + (size_t)j * C, T + (size_t)i * C, (size_t)C * sizeof(float));
    }
}

/* ------------------------------------------------------------------ init */

static void fill_normal(rng_t *r, float *p, size_t n, double std) {
    for (size_t i = 0; i < n; i++) p[i] = (float)(rng_normal(r) * std);
}

static void expert_init(rng_t *r, moe_expert *e, const moe_config *c) {
    // fan-in scaling: W1, W3 ~ N(0, 1/d), W2 ~ N(0, 1/h) * 0.5, biases 0
    fill_normal(r, e->fc1_w, (size_t)c->h * c->d, 1.0 / sqrt(c->d));
    memset(e->fc1_b, 0, (size_t)c->h * sizeof(float));
    fill_normal(r, e->fc2_w, (size_t)c->d * c->h, 0.5 / sqrt(c->h));
    memset(e->fc2_b, 0, (size_t)c->d * sizeof(float));
    if (c->act == ACT_SILU_GLU) {
        fill_normal(r, e->fc3_w, (size_t)c->h * c->d, 1.0 / sqrt(c->d));
        memset(e->fc3_b, 0, (size_t)c->h * sizeof(float));
    }
}

void train_init(moe_model *m, uint64_t seed, int with_head) {
    const moe_config *c = &m->cfg;
    rng_t r;
    rng_seed(&r, seed);
    // a small gate so the experts start evenly loaded
    fill_normal(&r, m->gate_w, (size_t)c->n * c->d, 0.1 / sqrt(c->d));
    memset(m->gate_b, 0, (size_t)c->n * sizeof(float));
    for (int i = 0; i < c->n; i++) expert_init(&r, &m->experts[i], c);
    for (int j = 0; j < c->s; j++) expert_init(&r, &m->shared[j], c);
    if (with_head && c->has_head) {
        if (c->has_norm) {
            for (int j = 0; j < c->d; j++) m->norm_w[j] = 1.0f, m->norm_b[j] = 0.0f;
        }
        fill_normal(&r, m->head_w, (size_t)c->C * c->d, 1.0 / sqrt(c->d));
        memset(m->head_b, 0, (size_t)c->C * sizeof(float));
    }
}

void train_init_teacher(moe_model *m, const teacher_opts *o) {
    const moe_config *c = &m->cfg;
    train_init(m, o->seed, 1);
    // a sharp gate: rows ~ N(0, 1/d) * gate_scale, so that x ~ N(0, I) gives
    // scores of spread gate_scale and each sample has clear favourite experts
    rng_t r;
    rng_seed(&r, o->seed ^ 0x7eac4e7ULL);
    fill_normal(&r, m->gate_w, (size_t)c->n * c->d, o->gate_scale / sqrt(c->d));
    for (int i = 0; i < c->n; i++) {
        float *w2 = m->experts[i].fc2_w;
        for (size_t j = 0; j < (size_t)c->d * c->h; j++) w2[j] *= (float)o->out_scale;
    }
}

void train_teacher_data(const moe_model *teacher, int N, uint64_t data_seed, train_set *train,
                        train_set *test) {
    const moe_config *c = &teacher->cfg;
    int d = c->d, C = c->C;
    float *X = ms_malloc((size_t)N * d * sizeof(float));
    float *T = ms_malloc((size_t)N * C * sizeof(float));
    rng_t r;
    rng_seed(&r, data_seed);
    for (size_t i = 0; i < (size_t)N * d; i++) X[i] = (float)rng_normal(&r);
    // targets = the teacher's head outputs, in batches through the training
    // forward (same arithmetic as the students')
    int Bmax = 256;
    train_ws *w = train_ws_new(c, Bmax);
    for (int b0 = 0; b0 < N; b0 += Bmax) {
        int B = N - b0 < Bmax ? N - b0 : Bmax;
        train_batch bt = {X + (size_t)b0 * d, NULL, T + (size_t)b0 * C, B};
        train_forward(teacher, &bt, w, T + (size_t)b0 * C);
    }
    train_ws_free(w);
    train_split(N, d, C, X, NULL, T, train, test);
    free(T);
    free(X);
}

/* ------------------------------------------------------------- workspace */

struct train_ws {
    int Bmax, ne; /* ne = n + s experts cached */
    double aux;               /* load-balancing coefficient */
    double aux_loss;          /* its term in the last forward */
    float *S, *G, *dS, *dG;   // (B,n) each
    float *P;                 // (B,n) full softmax of S (load balancing)
    float *f;                 // (n) selection fractions (load balancing)
    float *A1, *A3, *Hh;      // (ne, B, h) each (A3 only for silu_glu)
    float *Y;                 // (n, B, d) routed experts' outputs
    float *Z, *zhat, *U;      // (B,d)
    float *rstd;              // (B)
    float *logits, *dlogits;  // (B,C)
    float *dU, *dZ, *dY;      // (B,d)
    float *dH, *dA1, *dA3;    // (B,h)
};

train_ws *train_ws_new(const moe_config *c, int Bmax) {
    train_ws *w = ms_calloc(1, sizeof *w);
    w->Bmax = Bmax;
    w->ne = c->n + c->s;
    size_t B = (size_t)Bmax, n = (size_t)c->n, d = (size_t)c->d, h = (size_t)c->h;
    size_t C = (size_t)(c->C > 0 ? c->C : 1);
    w->S = ms_calloc(B * n, sizeof(float));
    w->G = ms_calloc(B * n, sizeof(float));
    w->dS = ms_calloc(B * n, sizeof(float));
    w->dG = ms_calloc(B * n, sizeof(float));
    w->P = ms_calloc(B * n, sizeof(float));
    w->f = ms_calloc(n, sizeof(float));
    w->A1 = ms_calloc((size_t)w->ne * B * h, sizeof(float));
    w->A3 = c->act == ACT_SILU_GLU ? ms_calloc((size_t)w->ne * B * h, sizeof(float)) : NULL;
    w->Hh = ms_calloc((size_t)w->ne * B * h, sizeof(float));
    w->Y = ms_calloc(n * B * d, sizeof(float));
    w->Z = ms_calloc(B * d, sizeof(float));
    w->zhat = ms_calloc(B * d, sizeof(float));
    w->U = ms_calloc(B * d, sizeof(float));
    w->rstd = ms_calloc(B, sizeof(float));
    w->logits = ms_calloc(B * C, sizeof(float));
    w->dlogits = ms_calloc(B * C, sizeof(float));
    w->dU = ms_calloc(B * d, sizeof(float));
    w->dZ = ms_calloc(B * d, sizeof(float));
    w->dY = ms_calloc(B * d, sizeof(float));
    w->dH = ms_calloc(B * h, sizeof(float));
    w->dA1 = ms_calloc(B * h, sizeof(float));
    w->dA3 = ms_calloc(B * h, sizeof(float));
    return w;
}

void train_ws_set_aux(train_ws *w, double a) { w->aux = a; }

void train_ws_free(train_ws *w) {
    if (!w) return;
    float *ps[] = {w->S,  w->G,    w->dS,     w->dG,      w->P,  w->f,
                   w->A1, w->A3, w->Hh, w->Y,
                   w->Z,  w->zhat, w->U,      w->rstd,    w->logits, w->dlogits,
                   w->dU, w->dZ,   w->dY,     w->dH,      w->dA1, w->dA3};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) free(ps[i]);
    free(w);
}

/* --------------------------------------------------------------- forward */

static inline float gelu_f(float a) { return 0.5f * a * (1.0f + erff(a * (float)M_SQRT1_2)); }
static inline float gelu_grad(float a) {
    return 0.5f * (1.0f + erff(a * (float)M_SQRT1_2)) +
           a * expf(-0.5f * a * a) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);
}
static inline float sigmoid_f(float a) { return 1.0f / (1.0f + expf(-a)); }

/* One expert on the batch: fills A1 [, A3], H (B,h); Y (B,d) = H W2^T + b2. */
static void expert_forward(const moe_expert *e, const moe_config *c, const float *X, int B,
                           float *A1, float *A3, float *H, float *Y) {
    int d = c->d, h = c->h;
    // A1 (B,h) = X (B,d) W1^T (d,h) + b1
    for (int b = 0; b < B; b++) memcpy(A1 + (size_t)b * h, e->fc1_b, (size_t)h * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, h, d, 1.0f, X, d, e->fc1_w, d, 1.0f,
                A1, h);
    if (c->act == ACT_SILU_GLU) {
        for (int b = 0; b < B; b++)
            memcpy(A3 + (size_t)b * h, e->fc3_b, (size_t)h * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, h, d, 1.0f, X, d, e->fc3_w, d,
                    1.0f, A3, h);
    }
    size_t Bh = (size_t)B * h;
    for (size_t i = 0; i < Bh; i++) {
        float a = A1[i];
        switch (c->act) {
        case ACT_RELU: H[i] = a > 0 ? a : 0; break;
        case ACT_GELU: H[i] = gelu_f(a); break;
        case ACT_SILU_GLU: H[i] = a * sigmoid_f(a) * A3[i]; break;
        case ACT_GPT_OSS:
        case ACT_GELU_TANH: break; // train builds only relu, gelu and silu_glu models
        }
    }
    // Y (B,d) = H (B,h) W2^T (h,d) + b2
    for (int b = 0; b < B; b++) memcpy(Y + (size_t)b * d, e->fc2_b, (size_t)d * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, d, h, 1.0f, H, h, e->fc2_w, h, 1.0f,
                Y, d);
}

/* max(x) and sum_i exp(x_i - max) in double: the stable softmax's two
 * reductions, shared by the router's softmax and the cross-entropy. */
static float max_sumexp(const float *x, int n, double *sum) {
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)(x[i] - mx));
    *sum = s;
    return mx;
}

/* The load-balancing term of the batch (train_ws_set_aux): fills P (full
 * softmax of S) and f (selection fractions) for the backward pass. */
static double aux_forward(const moe_config *c, int B, train_ws *w) {
    int n = c->n, k = c->router == ROUTER_TOPK ? c->k : 1;
    memset(w->f, 0, (size_t)n * sizeof(float));
    double Pmean[64] = {0}; /* n <= 64 (train's --n bound) */
    for (int b = 0; b < B; b++) {
        const float *S = w->S + (size_t)b * n;
        float *P = w->P + (size_t)b * n;
        double sum;
        float mx = max_sumexp(S, n, &sum);
        for (int i = 0; i < n; i++) {
            P[i] = (float)(exp((double)(S[i] - mx)) / sum);
            Pmean[i] += P[i];
        }
        // the selected experts: G > 0 for top-k; the largest score for dense
        if (c->router == ROUTER_TOPK) {
            for (int i = 0; i < n; i++)
                if (w->G[(size_t)b * n + i] > 0) w->f[i] += 1.0f;
        } else {
            int best = 0;
            for (int i = 1; i < n; i++)
                if (S[i] > S[best]) best = i;
            w->f[best] += 1.0f;
        }
    }
    double l = 0;
    for (int i = 0; i < n; i++) {
        w->f[i] /= (float)B * k;
        l += w->f[i] * Pmean[i] / B;
    }
    return w->aux * n * l;
}

/* dS += d L_aux / dS: dL/dP_bi = a n f_i / B through each row's softmax. */
static void aux_backward(const moe_config *c, int B, train_ws *w) {
    int n = c->n;
    float scale = (float)(w->aux * n / B);
    for (int b = 0; b < B; b++) {
        const float *P = w->P + (size_t)b * n;
        float dot = 0;
        for (int i = 0; i < n; i++) dot += P[i] * w->f[i];
        for (int i = 0; i < n; i++) w->dS[(size_t)b * n + i] += scale * P[i] * (w->f[i] - dot);
    }
}

/* Fills the whole cache of w; returns the mean loss without the load-balancing
 * term (double accumulation), which goes to w->aux_loss. */
static double forward_cached(const moe_model *m, const train_batch *bt, train_ws *w) {
    const moe_config *c = &m->cfg;
    const float *X = bt->X;
    const int32_t *y = bt->y;
    int B = bt->B;
    int n = c->n, d = c->d, h = c->h, C = c->C;
    size_t Bh = (size_t)B * h, Bd = (size_t)B * d;
    // gate scores S (B,n) = X Wg^T + bg, then the router
    for (int b = 0; b < B; b++) memcpy(w->S + (size_t)b * n, m->gate_b, (size_t)n * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, d, 1.0f, X, d, m->gate_w, d, 1.0f,
                w->S, n);
    moe_route(c, w->S, B, w->G);
    w->aux_loss = w->aux > 0 ? aux_forward(c, B, w) : 0.0;
    // Z (B,d) = [X] + shared + routed
    if (c->residual) memcpy(w->Z, X, Bd * sizeof(float));
    else memset(w->Z, 0, Bd * sizeof(float));
    for (int j = 0; j < c->s; j++) {
        int e = n + j;
        float *A3 = w->A3 ? w->A3 + e * Bh : NULL;
        expert_forward(&m->shared[j], c, X, B, w->A1 + e * Bh, A3, w->Hh + e * Bh, w->dY);
        for (size_t i = 0; i < Bd; i++) w->Z[i] += w->dY[i];
    }
    for (int e = 0; e < n; e++) {
        float *A3 = w->A3 ? w->A3 + e * Bh : NULL;
        float *Y = w->Y + e * Bd;
        expert_forward(&m->experts[e], c, X, B, w->A1 + e * Bh, A3, w->Hh + e * Bh, Y);
        for (int b = 0; b < B; b++) {
            float g = w->G[(size_t)b * n + e];
            if (g == 0.0f) continue;
            for (int j = 0; j < d; j++) w->Z[(size_t)b * d + j] += g * Y[(size_t)b * d + j];
        }
    }
    // LayerNorm over d (two-pass, float accumulation like a GPU kernel would)
    const float *U = w->Z;
    if (c->has_norm) {
        for (int b = 0; b < B; b++) {
            const float *z = w->Z + (size_t)b * d;
            float mean = 0, var = 0;
            for (int j = 0; j < d; j++) mean += z[j];
            mean /= d;
            for (int j = 0; j < d; j++) var += (z[j] - mean) * (z[j] - mean);
            var /= d;
            float rstd = 1.0f / sqrtf(var + LN_EPS);
            w->rstd[b] = rstd;
            for (int j = 0; j < d; j++) {
                float zh = (z[j] - mean) * rstd;
                w->zhat[(size_t)b * d + j] = zh;
                w->U[(size_t)b * d + j] = zh * m->norm_w[j] + m->norm_b[j];
            }
        }
        U = w->U;
    }
    // logits (B,C) = U Hw^T + c
    for (int b = 0; b < B; b++)
        memcpy(w->logits + (size_t)b * C, m->head_b, (size_t)C * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, C, d, 1.0f, U, d, m->head_w, d, 1.0f,
                w->logits, C);
    double loss = 0;
    if (!y) { // squared error averaged over B*C; dlogits = 2 (logits - T) / (B C)
        for (size_t i = 0; i < (size_t)B * C; i++) {
            double e = (double)w->logits[i] - bt->T[i];
            loss += e * e;
            w->dlogits[i] = (float)(2.0 * e / ((double)B * C));
        }
        return loss / ((double)B * C);
    }
    // cross-entropy; dlogits = (softmax - onehot) / B
    for (int b = 0; b < B; b++) {
        const float *lg = w->logits + (size_t)b * C;
        float *dl = w->dlogits + (size_t)b * C;
        double sum;
        float mx = max_sumexp(lg, C, &sum);
        loss += log(sum) - (double)(lg[y[b]] - mx);
        for (int k = 0; k < C; k++)
            dl[k] = (float)(exp((double)(lg[k] - mx)) / sum / B) - (k == y[b] ? 1.0f / B : 0.0f);
    }
    return loss / B;
}

double train_forward(const moe_model *m, const train_batch *bt, train_ws *w, float *logits) {
    double loss = forward_cached(m, bt, w);
    if (logits) memcpy(logits, w->logits, (size_t)bt->B * m->cfg.C * sizeof(float));
    return loss + w->aux_loss;
}

/* -------------------------------------------------------------- backward */

/* Given dY (B,d) of one expert (cached A1/A3/H), accumulate its gradients. */
static void expert_backward(const moe_expert *e, moe_expert *ge, const moe_config *c,
                            const float *X, int B, const float *A1, const float *A3,
                            const float *H, const float *dY, train_ws *w) {
    int d = c->d, h = c->h;
    // dW2 (d,h) = dY^T (d,B) H (B,h); db2 = sum_b dY
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, h, B, 1.0f, dY, d, H, h, 1.0f,
                ge->fc2_w, h);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < d; j++) ge->fc2_b[j] += dY[(size_t)b * d + j];
    // dH (B,h) = dY (B,d) W2 (d,h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, h, d, 1.0f, dY, d, e->fc2_w, h,
                0.0f, w->dH, h);
    size_t Bh = (size_t)B * h;
    for (size_t i = 0; i < Bh; i++) {
        float a = A1[i], dh = w->dH[i];
        switch (c->act) {
        case ACT_RELU: w->dA1[i] = a > 0 ? dh : 0; break;
        case ACT_GELU: w->dA1[i] = dh * gelu_grad(a); break;
        case ACT_SILU_GLU: {
            float s = sigmoid_f(a);
            w->dA1[i] = dh * A3[i] * s * (1.0f + a * (1.0f - s));
            w->dA3[i] = dh * a * s;
            break;
        }
        case ACT_GPT_OSS:
        case ACT_GELU_TANH: break; // not trained (see above)
        }
    }
    // dW1 (h,d) = dA1^T (h,B) X (B,d); db1 = sum_b dA1
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, d, B, 1.0f, w->dA1, h, X, d, 1.0f,
                ge->fc1_w, d);
    for (int b = 0; b < B; b++)
        for (int u = 0; u < h; u++) ge->fc1_b[u] += w->dA1[(size_t)b * h + u];
    if (c->act == ACT_SILU_GLU) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, d, B, 1.0f, w->dA3, h, X, d,
                    1.0f, ge->fc3_w, d);
        for (int b = 0; b < B; b++)
            for (int u = 0; u < h; u++) ge->fc3_b[u] += w->dA3[(size_t)b * h + u];
    }
}

double train_loss_grad(const moe_model *m, const train_batch *bt, moe_model *g, int with_head,
                       train_ws *w, float *logits) {
    const moe_config *c = &m->cfg;
    const float *X = bt->X;
    int B = bt->B, n = c->n, d = c->d, h = c->h, C = c->C;
    size_t Bh = (size_t)B * h, Bd = (size_t)B * d;
    double loss = forward_cached(m, bt, w) + w->aux_loss;
    if (logits) memcpy(logits, w->logits, (size_t)B * C * sizeof(float));
    memset(g->mem, 0, g->nparams * sizeof(float));
    const float *U = c->has_norm ? w->U : w->Z;
    if (with_head) {
        // dHw (C,d) = dlogits^T (C,B) U (B,d); dc = sum_b dlogits
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, d, B, 1.0f, w->dlogits, C, U, d,
                    0.0f, g->head_w, d);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < C; k++) g->head_b[k] += w->dlogits[(size_t)b * C + k];
    }
    // dU (B,d) = dlogits (B,C) Hw (C,d)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, d, C, 1.0f, w->dlogits, C,
                m->head_w, d, 0.0f, w->dU, d);
    if (c->has_norm) {
        for (int b = 0; b < B; b++) {
            const float *zh = w->zhat + (size_t)b * d, *du = w->dU + (size_t)b * d;
            float *dz = w->dZ + (size_t)b * d;
            // dzhat = dU * gamma; dz = rstd (dzhat - mean(dzhat) - zhat mean(dzhat zhat))
            float m1 = 0, m2 = 0;
            for (int j = 0; j < d; j++) {
                float dzh = du[j] * m->norm_w[j];
                m1 += dzh;
                m2 += dzh * zh[j];
                if (with_head) {
                    g->norm_w[j] += du[j] * zh[j];
                    g->norm_b[j] += du[j];
                }
            }
            m1 /= d;
            m2 /= d;
            for (int j = 0; j < d; j++)
                dz[j] = w->rstd[b] * (du[j] * m->norm_w[j] - m1 - zh[j] * m2);
        }
    } else {
        memcpy(w->dZ, w->dU, Bd * sizeof(float));
    }
    // shared experts: weight 1, dY = dZ
    for (int j = 0; j < c->s; j++) {
        int e = n + j;
        expert_backward(&m->shared[j], &g->shared[j], c, X, B, w->A1 + e * Bh,
                        w->A3 ? w->A3 + e * Bh : NULL, w->Hh + e * Bh, w->dZ, w);
    }
    // routed experts: dY_e = G[:,e] dZ, dG[:,e] = <dZ, Y_e>
    for (int e = 0; e < n; e++) {
        const float *Y = w->Y + e * Bd;
        for (int b = 0; b < B; b++) {
            float gbe = w->G[(size_t)b * n + e];
            double dot = 0;
            for (int j = 0; j < d; j++) {
                w->dY[(size_t)b * d + j] = gbe * w->dZ[(size_t)b * d + j];
                dot += (double)w->dZ[(size_t)b * d + j] * Y[(size_t)b * d + j];
            }
            w->dG[(size_t)b * n + e] = (float)dot;
        }
        expert_backward(&m->experts[e], &g->experts[e], c, X, B, w->A1 + e * Bh,
                        w->A3 ? w->A3 + e * Bh : NULL, w->Hh + e * Bh, w->dY, w);
    }
    // softmax (over all, or over the selected top-k) backward:
    // dS_i = G_i (dG_i - sum_j G_j dG_j); unselected experts have G_i = 0
    for (int b = 0; b < B; b++) {
        const float *G = w->G + (size_t)b * n, *dG = w->dG + (size_t)b * n;
        float dot = 0;
        for (int i = 0; i < n; i++) dot += G[i] * dG[i];
        for (int i = 0; i < n; i++) w->dS[(size_t)b * n + i] = G[i] * (dG[i] - dot);
    }
    if (w->aux > 0) aux_backward(c, B, w);
    // dWg (n,d) = dS^T (n,B) X (B,d); dbg = sum_b dS
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, d, B, 1.0f, w->dS, n, X, d, 0.0f,
                g->gate_w, d);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < n; i++) g->gate_b[i] += w->dS[(size_t)b * n + i];
    return loss;
}

void train_evaluate(const moe_model *m, const train_set *s, train_ws *w, double *loss,
                    double *acc) {
    int C = m->cfg.C, d = s->d;
    double tot = 0;
    long correct = 0;
    for (int b0 = 0; b0 < s->N; b0 += w->Bmax) {
        int B = s->N - b0 < w->Bmax ? s->N - b0 : w->Bmax;
        train_batch bt = {s->x + (size_t)b0 * d, s->y ? s->y + b0 : NULL,
                          s->t ? s->t + (size_t)b0 * C : NULL, B};
        tot += forward_cached(m, &bt, w) * B;
        for (int b = 0; b < B && s->y; b++) {
            const float *lg = w->logits + (size_t)b * C;
            int best = 0;
            for (int k = 1; k < C; k++)
                if (lg[k] > lg[best]) best = k;
            correct += best == s->y[b0 + b];
        }
    }
    *loss = tot / s->N;
    *acc = s->y ? (double)correct / s->N : -1.0;
}

/* ------------------------------------------------------------------ Adam */

void adam_init(adam_state *a, const moe_model *m) {
    a->n = m->nparams;
    a->m1 = ms_calloc(a->n, sizeof(float));
    a->m2 = ms_calloc(a->n, sizeof(float));
    a->t = 0;
}

void adam_free(adam_state *a) {
    free(a->m1);
    free(a->m2);
    memset(a, 0, sizeof *a);
}

/* One segment of parameters p with gradient gp; moments at the same offset
 * from m->mem (the layout of g equals that of m). */
static void adam_segment(adam_state *a, const moe_model *m, float *p, const float *gp, size_t cnt,
                         float lr_t) {
    if (!p || !cnt) return;
    size_t off = (size_t)(p - m->mem);
    float *m1 = a->m1 + off, *m2 = a->m2 + off;
    for (size_t i = 0; i < cnt; i++) {
        m1[i] = 0.9f * m1[i] + 0.1f * gp[i];
        m2[i] = 0.999f * m2[i] + 0.001f * gp[i] * gp[i];
        p[i] -= lr_t * m1[i] / (sqrtf(m2[i]) + 1e-8f);
    }
}

static void adam_expert(adam_state *a, moe_model *m, moe_expert *e, const moe_expert *ge,
                        float lr_t) {
    const moe_config *c = &m->cfg;
    size_t hd = (size_t)c->h * c->d;
    size_t nb = c->has_expert_bias ? 1 : 0; // a bias-free layer keeps its zero biases
    adam_segment(a, m, e->fc1_w, ge->fc1_w, hd, lr_t);
    adam_segment(a, m, e->fc1_b, ge->fc1_b, nb * c->h, lr_t);
    adam_segment(a, m, e->fc2_w, ge->fc2_w, hd, lr_t);
    adam_segment(a, m, e->fc2_b, ge->fc2_b, nb * c->d, lr_t);
    if (c->act == ACT_SILU_GLU) {
        adam_segment(a, m, e->fc3_w, ge->fc3_w, hd, lr_t);
        adam_segment(a, m, e->fc3_b, ge->fc3_b, nb * c->h, lr_t);
    }
}

void adam_step(adam_state *a, moe_model *m, const moe_model *g, double lr, int with_head) {
    const moe_config *c = &m->cfg;
    a->t++;
    // bias correction folded into the step size
    double lr_t = lr * sqrt(1.0 - pow(0.999, (double)a->t)) / (1.0 - pow(0.9, (double)a->t));
    float lt = (float)lr_t;
    adam_segment(a, m, m->gate_w, g->gate_w, (size_t)c->n * c->d, lt);
    adam_segment(a, m, m->gate_b, g->gate_b, c->has_gate_bias ? (size_t)c->n : 0, lt);
    for (int i = 0; i < c->n; i++) adam_expert(a, m, &m->experts[i], &g->experts[i], lt);
    for (int j = 0; j < c->s; j++) adam_expert(a, m, &m->shared[j], &g->shared[j], lt);
    if (with_head) {
        if (c->has_norm) {
            adam_segment(a, m, m->norm_w, g->norm_w, (size_t)c->d, lt);
            adam_segment(a, m, m->norm_b, g->norm_b, (size_t)c->d, lt);
        }
        adam_segment(a, m, m->head_w, g->head_w, (size_t)c->C * c->d, lt);
        adam_segment(a, m, m->head_b, g->head_b, (size_t)c->C, lt);
    }
}

/* ------------------------------------------------------------- training */

int train_run(moe_model *m, const train_set *tr, const train_set *te, const train_opts *o,
              train_result *res, ms_err *err) {
    const moe_config *c = &m->cfg;
    if (tr->d != c->d) return ms_fail(err, "train: data width %d, model width %d", tr->d, c->d);
    if (tr->y ? tr->C > c->C : tr->C != c->C)
        return ms_fail(err, "train: data has %d %s, head has %d outputs", tr->C,
                       tr->y ? "classes" : "targets", c->C);
    if (o->batch < 1 || o->epochs < 0 || !(o->lr > 0))
        return ms_fail(err, "train: need batch >= 1, epochs >= 0 and lr > 0");
    int Bmax = o->batch < tr->N ? o->batch : tr->N, d = c->d;
    train_ws *w = train_ws_new(c, Bmax);
    moe_model g;
    moe_alloc(&g, c);
    adam_state a;
    adam_init(&a, m);
    float *xb = ms_malloc((size_t)Bmax * d * sizeof(float));
    int32_t *yb = ms_malloc((size_t)Bmax * sizeof(int32_t));
    float *tb = tr->t ? ms_malloc((size_t)Bmax * c->C * sizeof(float)) : NULL;
    train_ws_set_aux(w, o->aux);
    long steps = (long)o->epochs * ((tr->N + Bmax - 1) / Bmax), step = 0;
    int *perm = ms_malloc((size_t)tr->N * sizeof(int));
    rng_t r;
    rng_seed(&r, o->seed ^ 0x5eed0da7a0deULL); /* a stream apart from the init's */
    int tty = o->progress && isatty(STDERR_FILENO);
    double epoch_loss = 0, tacc = -1, tloss = 0;
    for (int ep = 0; ep < o->epochs; ep++) {
        rng_permutation(&r, perm, tr->N);
        epoch_loss = 0;
        for (int b0 = 0; b0 < tr->N; b0 += Bmax) {
            int B = tr->N - b0 < Bmax ? tr->N - b0 : Bmax;
            for (int b = 0; b < B; b++) {
                int i = perm[b0 + b];
                memcpy(xb + (size_t)b * d, tr->x + (size_t)i * d, (size_t)d * sizeof(float));
                if (tr->y) yb[b] = tr->y[i];
                else memcpy(tb + (size_t)b * c->C, tr->t + (size_t)i * c->C,
                            (size_t)c->C * sizeof(float));
            }
            train_batch bt = {xb, tr->y ? yb : NULL, tb, B};
            epoch_loss += train_loss_grad(m, &bt, &g, o->with_head, w, NULL) * B;
            double lr = o->lr;
            if (o->cosine) lr *= 0.5 * (1.0 + cos(M_PI * (double)step / (double)steps));
            step++;
            adam_step(&a, m, &g, lr, o->with_head);
        }
        epoch_loss /= tr->N;
        if (tty || (o->progress && ep == o->epochs - 1)) {
            if (te) train_evaluate(m, te, w, &tloss, &tacc);
            fprintf(stderr, "%sepoch %d/%d  train loss %.4f", tty ? "\r" : "", ep + 1, o->epochs,
                    epoch_loss);
            if (te) fprintf(stderr, "  test loss %.4g", tloss);
            if (te && te->y) fprintf(stderr, "  test acc %.4f", tacc);
            fprintf(stderr, "%s", ep == o->epochs - 1 ? "\n" : "");
            fflush(stderr);
        }
    }
    if (te) train_evaluate(m, te, w, &tloss, &tacc);
    if (res) {
        res->train_loss = epoch_loss;
        res->test_loss = te ? tloss : NAN;
        res->test_acc = tacc;
    }
    free(perm);
    free(yb);
    free(tb);
    free(xb);
    adam_free(&a);
    moe_free(&g);
    train_ws_free(w);
    return 0;
}
