/* geo_gpa.c - generalized orthogonal Procrustes by alternation, from two
 * starts, on the cross-products of the layers' states (geo_gpa.h). */
#include "analysis/geo_gpa.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_linalg.h"

const char *geo_gpa_start_name(int start) { return start == GEO_START_SPECTRAL ? "spectral" : "first layer"; }

/* Cross-products: C (L, L, r, r), block (l, k) = Y_l^T Y_k. */
typedef struct {
    int L, r;
    double *C;
    double total; /* sum_l ||Y_l||^2 */
} gpa_grams;

static const double *block(const gpa_grams *G, int l, int k) {
    return G->C + ((size_t)l * G->L + k) * G->r * G->r;
}

/* T (r, r) = sum_k C_lk Q_k: Y_l^T (L M), the Procrustes target of layer l */
static void target(const gpa_grams *G, int l, const double *Q, double *T) {
    int r = G->r;
    memset(T, 0, (size_t)r * r * sizeof(double));
    for (int k = 0; k < G->L; k++)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, block(G, l, k), r,
                    Q + (size_t)k * r * r, r, 1.0, T, r);
}

/* sum_l ||Y_l Q_l - M||^2 = sum_l tr C_ll - (1/L) sum_{l,k} tr(Q_l^T C_lk Q_k) */
static double spread(const gpa_grams *G, const double *Q, double *T) {
    int r = G->r;
    double s = 0.0;
    for (int l = 0; l < G->L; l++) {
        target(G, l, Q, T);
        const double *Ql = Q + (size_t)l * r * r;
        for (size_t q = 0; q < (size_t)r * r; q++) s += Ql[q] * T[q]; // tr(Q_l^T T)
    }
    return G->total - s / G->L;
}

/* T = polar factor: the rotation nearest T (in place, via W scratch) */
static int to_rotation(double *T, int r, double *W, ms_err *err) {
    double *u = W, *vt = W + (size_t)r * r;
    if (la_svd(T, r, r, NULL, u, vt, err)) return -1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, u, r, vt, r, 0.0, T, r);
    return 0;
}

/* the alternation from Q (L, r, r), in place; its rounds and whether it settled */
static int alternate(const gpa_grams *G, double *Q, int max_iter, double tol, int *iters, int *conv,
                     ms_err *err) {
    int L = G->L, r = G->r;
    size_t rr = (size_t)r * r;
    double *Qn = ms_malloc((size_t)L * rr * sizeof(double)), *W = ms_malloc(2 * rr * sizeof(double));
    int rc = 0;
    *iters = *conv = 0;
    while (*iters < max_iter && !rc) {
        for (int l = 0; l < L && !rc; l++) {
            target(G, l, Q, Qn + l * rr);
            rc = to_rotation(Qn + l * rr, r, W, err);
        }
        if (rc) break;
        double step = 0.0; // the largest change of a rotation's entry this round
        for (size_t q = 0; q < (size_t)L * rr; q++) step = fmax(step, fabs(Qn[q] - Q[q]));
        memcpy(Q, Qn, (size_t)L * rr * sizeof(double));
        if (++*iters > 1 && step <= tol) {
            *conv = 1;
            break;
        }
    }
    free(Qn);
    free(W);
    return rc;
}

/* Q (L, r, r): the identity gauge up to signs, each layer's axis a turned to
 * agree with the layer before's (the sign of (Y_l^T Y_{l-1})_aa) */
static void signed_identity(const gpa_grams *G, double *Q) {
    int r = G->r;
    size_t rr = (size_t)r * r;
    memset(Q, 0, (size_t)G->L * rr * sizeof(double));
    for (int a = 0; a < r; a++) Q[(size_t)a * r + a] = 1.0;
    for (int l = 1; l < G->L; l++)
        for (int a = 0; a < r; a++) {
            double prev = Q[(l - 1) * rr + (size_t)a * r + a];
            Q[l * rr + (size_t)a * r + a] = block(G, l, l - 1)[(size_t)a * r + a] < 0 ? -prev : prev;
        }
}

/* the first round of the "first" start: each layer onto Y_0 */
static int start_first(const gpa_grams *G, double *Q, ms_err *err) {
    int r = G->r;
    size_t rr = (size_t)r * r;
    double *W = ms_malloc(2 * rr * sizeof(double));
    int rc = 0;
    for (int l = 0; l < G->L && !rc; l++) {
        memcpy(Q + l * rr, block(G, l, 0), rr * sizeof(double));
        rc = to_rotation(Q + l * rr, r, W, err);
    }
    free(W);
    return rc;
}

/* the synchronisation start: the top r eigenvectors of [C_lk], block by block */
static int start_spectral(const gpa_grams *G, double *Q, ms_err *err) {
    int L = G->L, r = G->r, n = L * r;
    size_t rr = (size_t)r * r;
    double *B = ms_malloc((size_t)n * n * sizeof(double)), *w = ms_malloc((size_t)n * sizeof(double));
    for (int l = 0; l < L; l++)
        for (int k = 0; k < L; k++)
            for (int a = 0; a < r; a++)
                memcpy(B + ((size_t)l * r + a) * n + (size_t)k * r, block(G, l, k) + (size_t)a * r,
                       (size_t)r * sizeof(double));
    int rc = la_eigh(B, n, w, err); // row i of B: the eigenvector of w[i], ascending
    double *W = ms_malloc(2 * rr * sizeof(double));
    for (int l = 0; l < L && !rc; l++) {
        double *Ql = Q + l * rr; // V_l (r, r): rows of layer l, columns the top r eigenvectors
        for (int a = 0; a < r; a++)
            for (int b = 0; b < r; b++) Ql[(size_t)a * r + b] = B[(size_t)(n - 1 - b) * n + (size_t)l * r + a];
        rc = to_rotation(Ql, r, W, err);
    }
    free(B);
    free(w);
    free(W);
    return rc;
}

int geo_gpa_fit(const double *const *Y, int L, int m, int r, int max_iter, double tol, geo_gpa *g,
                ms_err *err) {
    memset(g, 0, sizeof *g);
    g->L = L, g->r = r;
    size_t rr = (size_t)r * r;
    gpa_grams G = {.L = L, .r = r, .C = ms_malloc((size_t)L * L * rr * sizeof(double))};
    for (int l = 0; l < L; l++)
        for (int k = 0; k < L; k++)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, m, 1.0, Y[l], r, Y[k], r, 0.0,
                        G.C + ((size_t)l * L + k) * rr, r);
    for (int l = 0; l < L; l++)
        for (int a = 0; a < r; a++) G.total += block(&G, l, l)[(size_t)a * r + a];
    double *Q[2], *T = ms_malloc(rr * sizeof(double)), res[2];
    int it[2], cv[2], rc = 0;
    for (int s = 0; s < 2; s++) {
        Q[s] = ms_calloc((size_t)L * rr, sizeof(double));
        if (s == 0) { // the (signed) identity gauge's spread first
            signed_identity(&G, Q[0]);
            g->residual0 = G.total > 0 ? spread(&G, Q[0], T) / G.total : 0.0;
        }
        if (!rc) rc = s == GEO_START_FIRST ? start_first(&G, Q[s], err) : start_spectral(&G, Q[s], err);
        if (!rc) rc = alternate(&G, Q[s], max_iter, tol, &it[s], &cv[s], err);
        if (!rc) res[s] = G.total > 0 ? fmax(spread(&G, Q[s], T), 0.0) / G.total : 0.0;
    }
    if (!rc) {
        int b = res[GEO_START_SPECTRAL] < res[GEO_START_FIRST] * (1 - 1e-9) ? GEO_START_SPECTRAL : GEO_START_FIRST;
        g->start = b, g->iterations = it[b], g->converged = cv[b];
        g->residual = res[b], g->residual_other = res[1 - b];
        g->Q = Q[b];
        Q[b] = NULL;
    }
    free(Q[0]);
    free(Q[1]);
    free(T);
    free(G.C);
    return rc ? ms_prefix(err, "generalized Procrustes") : 0;
}

void geo_gpa_free(geo_gpa *g) {
    free(g->Q);
    memset(g, 0, sizeof *g);
}
