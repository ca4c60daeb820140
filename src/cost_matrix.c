/* cost_matrix.c - the data-free expert costs of Algorithm 1 step 1.
 *
 * gate:   C_ij = sqrt(|Wbar^A_i - Wbar^B_j|^2 + (bbar^A_i - bbar^B_j)^2
 *                   [+ (e^A_i - e^B_j)^2]), the gate rows centred over the
 *         experts (a gate translation cancels) for softmax routers only; e is a
 *         selection-only bias (DeepSeek-V3), part of the row, never centred.
 * expert: C_ij = sqrt(|G1^A_i - G1^B_j|_F^2 + |G2^A_i - G2^B_j|_F^2) with
 *         G1 = At^T At, At = [W1 | b1 (| W3 | b3)]  (h, D1), D1 = d+1 or 2d+2
 *         G2 = Bt Bt^T,  Bt = [W2 | b2]             (d, h+1)
 *         Both Grams are invariant to hidden-unit permutations.
 *
 * The Grams are computed once per expert with cblas_ssyrk (upper triangle
 * only), then the n*n Frobenius distances are accumulated in double. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_matrix.h"
#include "symmetry.h"

const char *cost_method_name(cost_method m) {
    return m == COST_GATE ? "gate" : "expert";
}

double cost_of_order(const double *C, const int *order, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += C[(size_t)i * n + order[i]];
    return s;
}

int cost_method_parse(const char *s, cost_method *m) {
    if (!s) return -1;
    if (!strcmp(s, "gate")) {
        *m = COST_GATE;
        return 0;
    }
    if (!strcmp(s, "expert")) {
        *m = COST_EXPERT;
        return 0;
    }
    return -1;
}

static const char *path_or(const moe_model *m, const char *dflt) {
    return m->path ? m->path : dflt;
}

/* Shapes the costs need; moe_check_compatible checks the rest (head, router). */
static int check_shapes(const moe_model *A, const moe_model *B, ms_err *err) {
    const moe_config *a = &A->cfg, *b = &B->cfg;
    if (a->n != b->n || a->d != b->d || a->h != b->h || a->s != b->s || a->act != b->act)
        return ms_fail(err,
                       "%s (n=%d d=%d h=%d s=%d %s) and %s (n=%d d=%d h=%d s=%d %s): "
                       "different architectures, cannot compare experts",
                       path_or(A, "A"), a->n, a->d, a->h, a->s, moe_act_name(a->act),
                       path_or(B, "B"), b->n, b->d, b->h, b->s, moe_act_name(b->act));
    return 0;
}

/* ---- gate cost ---- */

// mean (d) and mean bias of the n gate rows, in double
static void gate_mean(const moe_model *m, double *mw, double *mb) {
    int n = m->cfg.n, d = m->cfg.d;
    for (int k = 0; k < d; k++) mw[k] = 0.0;
    *mb = 0.0;
    for (int i = 0; i < n; i++) {
        const float *w = m->gate_w + (size_t)i * d; // (d)
        for (int k = 0; k < d; k++) mw[k] += w[k];
        *mb += m->gate_b[i];
    }
    for (int k = 0; k < d; k++) mw[k] /= n;
    *mb /= n;
}

static void gate_cost(const moe_model *A, const moe_model *B, int center, double *C) {
    int n = A->cfg.n, d = A->cfg.d;
    double *ma = ms_calloc((size_t)d, sizeof(double)); // (d)
    double *mb = ms_calloc((size_t)d, sizeof(double)); // (d)
    double mba = 0.0, mbb = 0.0;
    if (center) {
        gate_mean(A, ma, &mba);
        gate_mean(B, mb, &mbb);
    }
    // shift (d) = mean_A - mean_B, so Wbar^A_i - Wbar^B_j = W^A_i - W^B_j - shift
    for (int k = 0; k < d; k++) ma[k] -= mb[k];
    double shift_b = mba - mbb;
    for (int i = 0; i < n; i++) {
        const float *wa = A->gate_w + (size_t)i * d; // (d)
        for (int j = 0; j < n; j++) {
            const float *wb = B->gate_w + (size_t)j * d; // (d)
            double acc = 0.0;
            for (int k = 0; k < d; k++) {
                double t = (double)wa[k] - (double)wb[k] - ma[k];
                acc += t * t;
            }
            double tb = (double)A->gate_b[i] - (double)B->gate_b[j] - shift_b;
            // a selection-only bias belongs to the gate row (never centred)
            double tc = A->corr_b && B->corr_b ? (double)A->corr_b[i] - (double)B->corr_b[j] : 0.0;
            C[(size_t)i * n + j] = sqrt(acc + tb * tb + tc * tc);
        }
    }
    free(ma);
    free(mb);
}

/* ---- expert cost ---- */

static int gram1_dim(const moe_config *c) {
    return moe_act_glu(c->act) ? 2 * c->d + 2 : c->d + 1;
}

/* G1 (D1, D1) upper triangle = At^T At, At = [W1 | b1 (| W3 | b3)] (h, D1).
 * G2 (d, d) upper triangle = Bt Bt^T, Bt = [W2 | b2] (d, h+1).
 * scratch holds max(h*D1, d*(h+1)) floats. */
static void expert_grams(const moe_expert *e, const moe_config *c, float *G1, float *G2,
                         float *scratch) {
    int d = c->d, h = c->h, D1 = gram1_dim(c);
    int glu = moe_act_glu(c->act);
    // At (h, D1)
    for (int u = 0; u < h; u++) {
        float *row = scratch + (size_t)u * D1;
        memcpy(row, e->fc1_w + (size_t)u * d, (size_t)d * sizeof(float));
        row[d] = e->fc1_b[u];
        if (glu) {
            memcpy(row + d + 1, e->fc3_w + (size_t)u * d, (size_t)d * sizeof(float));
            row[2 * d + 1] = e->fc3_b[u];
        }
    }
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, D1, h, 1.0f, scratch, D1, 0.0f, G1, D1);
    // Bt (d, h+1)
    for (int r = 0; r < d; r++) {
        float *row = scratch + (size_t)r * (h + 1);
        memcpy(row, e->fc2_w + (size_t)r * h, (size_t)h * sizeof(float));
        row[h] = e->fc2_b[r];
    }
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, d, h + 1, 1.0f, scratch, h + 1, 0.0f, G2,
                d);
}

// |X - Y|_F^2 of two symmetric (D, D) matrices given by their upper triangles
static double sym_dist2(const float *X, const float *Y, int D) {
    double diag = 0.0, off = 0.0;
    for (int r = 0; r < D; r++) {
        const float *x = X + (size_t)r * D, *y = Y + (size_t)r * D;
        double t = (double)x[r] - (double)y[r];
        diag += t * t;
        double acc = 0.0;
        for (int c = r + 1; c < D; c++) {
            double u = (double)x[c] - (double)y[c];
            acc += u * u;
        }
        off += acc;
    }
    return diag + 2.0 * off;
}

/* C (na, nb) expert cost between the experts ea[0..na) and eb[0..nb). */
static void expert_cost(const moe_expert *ea, int na, const moe_expert *eb, int nb,
                        const moe_config *c, double *C) {
    int d = c->d, h = c->h, D1 = gram1_dim(c);
    size_t g1 = (size_t)D1 * D1, g2 = (size_t)d * d, per = g1 + g2;
    size_t sc = (size_t)h * D1;
    if ((size_t)d * (h + 1) > sc) sc = (size_t)d * (h + 1);
    float *scratch = ms_malloc(sc * sizeof(float));
    // grams: for each expert of A then of B, G1 (D1,D1) followed by G2 (d,d)
    float *grams = ms_malloc((size_t)(na + nb) * per * sizeof(float));
    for (int i = 0; i < na; i++)
        expert_grams(&ea[i], c, grams + (size_t)i * per, grams + (size_t)i * per + g1, scratch);
    for (int j = 0; j < nb; j++) {
        float *g = grams + (size_t)(na + j) * per;
        expert_grams(&eb[j], c, g, g + g1, scratch);
    }
    free(scratch);
    for (int i = 0; i < na; i++) {
        const float *ga = grams + (size_t)i * per;
        for (int j = 0; j < nb; j++) {
            const float *gb = grams + (size_t)(na + j) * per;
            double t = sym_dist2(ga, gb, D1) + sym_dist2(ga + g1, gb + g1, d);
            C[(size_t)i * nb + j] = sqrt(t);
        }
    }
    free(grams);
}

int cost_matrix(const moe_model *A, const moe_model *B, cost_method method, int center,
                double *C, ms_err *err) {
    if (check_shapes(A, B, err)) return -1;
    if (method == COST_GATE)
        // centring removes a common translation: meaningful only where it is a
        // symmetry (softmax scores); a sigmoid router's gate rows are compared as they are
        gate_cost(A, B, center && moe_gate_centring_valid(&A->cfg), C);
    else
        expert_cost(A->experts, A->cfg.n, B->experts, B->cfg.n, &A->cfg, C);
    return 0;
}

int cost_matrix_shared(const moe_model *A, const moe_model *B, double *C, ms_err *err) {
    if (check_shapes(A, B, err)) return -1;
    moe_config sc = moe_shared_config(&A->cfg); // shared experts have their own width
    if (A->cfg.s > 0) expert_cost(A->shared, A->cfg.s, B->shared, B->cfg.s, &sc, C);
    return 0;
}
