/* cost_data.c - the data-driven matching methods (cost_method.h), measured on
 * the evaluation set's inputs X (N, d) at the MoE block:
 *
 * activation (Git Re-Basin's activation matching): expert i of A and expert j
 *   of B are compared by their outputs on every token, whatever the router
 *   sends them: Y_i = E_i(X) (N, d), each output column centred over the
 *   tokens, r_ij = <Ya_i, Yb_j>_F / (|Ya_i|_F |Yb_j|_F), C_ij = 1 - r_ij.
 *   Within a matched pair the hidden units are matched the same way: the
 *   hidden activations H = act(X W1^T + b1) (N, h) (the gated form for GLU),
 *   each column centred, S_uv = their Pearson correlation, the permutation
 *   maximising sum_u S[u][P[u]].
 * router (MC-SMoE's router-logit similarity): the gate logits S = X Wg^T + b
 *   (N, n), centred over the experts for softmax routers when centring is on
 *   (a common translation of the gate rows changes no routing), then
 *   C_ij = 1 - Pearson(S^A[:, i], S^B[:, j]) over the tokens.
 *
 * Sums in double; the first rows of X are used (data_rows: at most COST_DATA_ROWS). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/cost_data.h"
#include "align/cost_matrix.h"
#include "align/lap.h"
#include "core/progress.h"
#include "model/moe_kernels.h"
#include "model/symmetry.h"

/* the rows used: at most COST_DATA_ROWS, and for wide experts fewer (at least
 * COST_DATA_ROWS_MIN), so that the experts' forward passes stay near
 * COST_DATA_FLOPS (a Mixtral-sized layer: 256 rows) */
static int data_rows(const moe_config *c, int N) {
    double per_row = 2.0 * 2 * c->n * (moe_act_glu(c->act) ? 3 : 2) * (double)c->d * c->h;
    double cap = COST_DATA_FLOPS / per_row;
    int rows = cap < COST_DATA_ROWS_MIN ? COST_DATA_ROWS_MIN : cap > COST_DATA_ROWS ? COST_DATA_ROWS : (int)cap;
    return N < rows ? N : rows;
}

static int need_rows(const cost_input *in, const char *name, ms_err *err) {
    if (in->X && in->N > 0) return 0;
    return ms_fail(err, "the %s method matches experts on an evaluation set's inputs: give one "
                        "(--eval E)", name);
}

/* Z (N, L) in place: each column minus its mean over the N rows */
static void centre_columns(float *Z, int N, int L) {
    for (int k = 0; k < L; k++) {
        double s = 0;
        for (int r = 0; r < N; r++) s += Z[(size_t)r * L + k];
        float m = (float)(s / N);
        for (int r = 0; r < N; r++) Z[(size_t)r * L + k] -= m;
    }
}

/* R (na, nb): the cosine of the rows of P (na, L) and Q (nb, L), in double;
 * 0 where a row is all zeros */
static void row_cosines(const float *P, int na, const float *Q, int nb, size_t L, double *R) {
    double *np_ = ms_malloc((size_t)(na + nb) * sizeof(double)), *nq = np_ + na;
    for (int i = 0; i < na + nb; i++) {
        const float *x = i < na ? P + (size_t)i * L : Q + (size_t)(i - na) * L;
        double s = 0;
        for (size_t k = 0; k < L; k++) s += (double)x[k] * x[k];
        np_[i] = sqrt(s);
    }
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            const float *x = P + (size_t)i * L, *y = Q + (size_t)j * L;
            double s = 0;
            for (size_t k = 0; k < L; k++) s += (double)x[k] * y[k];
            double den = np_[i] * nq[j];
            R[(size_t)i * nb + j] = den > 0 ? s / den : 0.0;
        }
    free(np_);
}

/* Zt (L, N) = Z (N, L) transposed: one column per row */
static float *transpose(const float *Z, int N, int L) {
    float *Zt = ms_malloc((size_t)N * L * sizeof(float));
    for (int r = 0; r < N; r++)
        for (int k = 0; k < L; k++) Zt[(size_t)k * N + r] = Z[(size_t)r * L + k];
    return Zt;
}

/* R (La, Lb): Pearson correlation over the N rows of each column of Za (N, La)
 * with each column of Zb (N, Lb) */
void cost_column_correlation(const float *Za, int La, const float *Zb, int Lb, int N, double *R) {
    float *a = transpose(Za, N, La), *b = transpose(Zb, N, Lb); // (La, N), (Lb, N)
    for (int k = 0; k < La; k++) centre_columns(a + (size_t)k * N, N, 1); // a row: N rows of one value
    for (int k = 0; k < Lb; k++) centre_columns(b + (size_t)k * N, N, 1);
    row_cosines(a, La, b, Lb, (size_t)N, R);
    free(a);
    free(b);
}

/* expert e of a layer: the model's own, or read from src into buf */
static const moe_expert *expert_at(const moe_model *m, const expert_source *src, int e, moe_expert *buf,
                                   ms_err *err) {
    if (!src || !src->read) return &m->experts[e];
    if (src->read(src->ctx, e, EXPERT_ALL, buf, err)) return NULL;
    return buf;
}

/* Y (n, N, d): each expert's outputs on X (N, d), each column centred; by chunks
 * of rows, the calling thread's cancel (progress.h: the explorer's quit) polled
 * between them */
static int expert_outputs(const moe_model *m, const expert_source *src, const float *X, int N, float *Y,
                          ms_err *err) {
    const moe_config *c = &m->cfg;
    int d = c->d, h = c->h;
    size_t hr = (size_t)(N < MOE_EXPERT_ROWS ? N : MOE_EXPERT_ROWS) * h;
    float *H = ms_malloc(hr * 2 * sizeof(float)), *H3 = H + hr; // (rows, h) a chunk's
    float *mem = ms_malloc(moe_expert_size(c) * sizeof(float));
    moe_expert buf;
    moe_expert_carve(&buf, c, mem);
    int rc = 0;
    for (int e = 0; e < c->n && !rc; e++) {
        const moe_expert *x = expert_at(m, src, e, &buf, err);
        if (!x) rc = -1;
        else if (moe_expert_forward_until(x, c, X, N, H, moe_act_glu(c->act) ? H3 : NULL, Y + (size_t)e * N * d,
                                          progress_cancel_flag()))
            rc = ms_fail(err, "cancelled");
        if (!rc) centre_columns(Y + (size_t)e * N * d, N, d);
    }
    free(H);
    free(mem);
    return rc;
}

/* 1 - r where r is a correlation in [-1, 1] (rounding kept inside) */
static void one_minus(double *C, size_t len) {
    for (size_t k = 0; k < len; k++) C[k] = fmax(0.0, 1.0 - fmin(1.0, C[k]));
}

int cost_activation(const cost_input *in, double *C, ms_err *err) {
    if (need_rows(in, "activation", err)) return -1;
    const moe_config *c = &in->A->cfg;
    int n = c->n, d = c->d, N = data_rows(c, in->N);
    float *Ya = ms_malloc((size_t)2 * n * N * d * sizeof(float)), *Yb = Ya + (size_t)n * N * d;
    progress_begin("activation cost", 2.0 * n, "experts");
    int rc = expert_outputs(in->A, in->sa, in->X, N, Ya, err);
    if (!rc) rc = expert_outputs(in->B, in->sb, in->X, N, Yb, err);
    progress_end();
    if (!rc) {
        row_cosines(Ya, n, Yb, n, (size_t)N * d, C);
        one_minus(C, (size_t)n * n);
    }
    free(Ya);
    return rc;
}

/* S (N, n): m's gate logits on X, centred over the experts when centre. From
 * the gate as stored (not moe_gate_logits' routing gate, already centred), so
 * --no-center shows what the translation does to the cost. */
static void router_logits(const moe_model *m, const float *X, int N, int centre, float *S) {
    int n = m->cfg.n;
    moe_gate_logits_with(m->gate_w, m->gate_b, n, m->cfg.d, X, N, S);
    for (int r = 0; centre && r < N; r++) {
        float *s = S + (size_t)r * n;
        double mean = 0;
        for (int i = 0; i < n; i++) mean += s[i];
        mean /= n;
        for (int i = 0; i < n; i++) s[i] = (float)(s[i] - mean);
    }
}

int cost_router(const cost_input *in, double *C, ms_err *err) {
    if (need_rows(in, "router", err)) return -1;
    int n = in->A->cfg.n, N = in->N < COST_DATA_ROWS ? in->N : COST_DATA_ROWS;
    int centre = in->center && moe_gate_centring_valid(&in->A->cfg);
    float *Sa = ms_malloc((size_t)2 * N * n * sizeof(float)), *Sb = Sa + (size_t)N * n;
    router_logits(in->A, in->X, N, centre, Sa);
    router_logits(in->B, in->X, N, centre, Sb);
    cost_column_correlation(Sa, n, Sb, n, N, C);
    one_minus(C, (size_t)n * n);
    free(Sa);
    return 0;
}

/* H (N, h): expert e's hidden activations on X (the input of its W2) */
static void hidden_acts(const moe_expert *e, const moe_config *c, const float *X, int N, float *H, float *H3) {
    int d = c->d, h = c->h;
    // H (N, h) = X (N, d) W1^T, W1 is (h, d); H3 likewise with W3 for the gated forms
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, h, d, 1.0f, X, d, e->fc1_w, d, 0.0f, H, h);
    if (moe_act_glu(c->act))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, h, d, 1.0f, X, d, e->fc3_w, d, 0.0f, H3, h);
    moe_hidden_act(e, c, H, moe_act_glu(c->act) ? H3 : NULL, N);
}

int cost_activation_hidden(const moe_expert *a, const moe_expert *b, const moe_config *c, const float *X,
                           int N, int *P, double *S, ms_err *err) {
    int h = c->h;
    N = data_rows(c, N);
    float *Ha = ms_malloc((size_t)N * h * 3 * sizeof(float)), *Hb = Ha + (size_t)N * h, *H3 = Hb + (size_t)N * h;
    hidden_acts(a, c, X, N, Ha, H3);
    hidden_acts(b, c, X, N, Hb, H3);
    cost_column_correlation(Ha, h, Hb, h, N, S);
    free(Ha);
    double total;
    if (lap_solve(S, h, h, 1, P, &total, err)) return ms_prefix(err, "activation matching");
    return 0;
}
