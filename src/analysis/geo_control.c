/* geo_control.c - the centred router, its rank, basis and control states
 * (geo_control.h). */
#include "analysis/geo_control.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_linalg.h"

/* the first pair of rows of Wc (n, d) that are equal, into *i, *j (else -1) */
static void find_duplicate_rows(const double *Wc, int n, int d, int *di, int *dj) {
    *di = *dj = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (!memcmp(Wc + (size_t)i * d, Wc + (size_t)j * d, (size_t)d * sizeof(double))) {
                *di = i, *dj = j;
                return;
            }
}

int geo_control_init(geo_control *c, const float *W, int n, int d, ms_err *err) {
    memset(c, 0, sizeof *c);
    if (n < 2 || d < 1) return ms_fail(err, "a router needs at least 2 experts and width 1 (has n = %d, d = %d)", n, d);
    c->n = n, c->d = d;
    c->rmax = n - 1 < d ? n - 1 : d;
    int k = n < d ? n : d;
    // W~ = W - 1 w^T: the mean row in double, subtracted
    c->Wc = ms_malloc((size_t)n * d * sizeof(double));
    for (int j = 0; j < d; j++) {
        double m = 0.0;
        for (int i = 0; i < n; i++) m += W[(size_t)i * d + j];
        m /= n;
        for (int i = 0; i < n; i++) c->Wc[(size_t)i * d + j] = (double)W[(size_t)i * d + j] - m;
    }
    find_duplicate_rows(c->Wc, n, d, &c->dup_i, &c->dup_j);
    c->sv = ms_malloc((size_t)k * sizeof(double));
    double *VT = ms_malloc((size_t)k * d * sizeof(double)); // (k, d) the right singular vectors
    if (la_svd(c->Wc, n, d, c->sv, NULL, VT, err)) {
        free(VT);
        geo_control_free(c);
        return ms_prefix(err, "the centred router (%d x %d)", n, d);
    }
    c->tol = c->sv[0] * (n > d ? n : d) * FLT_EPSILON;
    while (c->r < k && c->sv[c->r] > c->tol) c->r++;
    int r = c->r;
    c->U = ms_malloc((size_t)d * (r ? r : 1) * sizeof(double));
    for (int a = 0; a < r; a++)
        for (int j = 0; j < d; j++) c->U[(size_t)j * r + a] = VT[(size_t)a * d + j];
    free(VT);
    la_fix_signs(c->U, d, r, r);
    c->WU = ms_malloc((size_t)n * (r ? r : 1) * sizeof(double));
    if (r)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, r, d, 1.0, c->Wc, d, c->U, r, 0.0, c->WU,
                    r);
    return 0;
}

void geo_control_free(geo_control *c) {
    free(c->Wc);
    free(c->sv);
    free(c->U);
    free(c->WU);
    memset(c, 0, sizeof *c);
}

/* rows t0 .. t0 + m of X (N, d) as doubles into x (m, d) */
static void rows_double(const float *X, int d, int t0, int m, double *x) {
    for (size_t q = 0; q < (size_t)m * d; q++) x[q] = X[(size_t)t0 * d + q];
}

#define GEO_ROWS 1024 /* tokens per product */

void geo_project(const float *X, int N, int d, const double *B, int ldb, int q, double *out) {
    double *x = ms_malloc((size_t)GEO_ROWS * d * sizeof(double)); // (GEO_ROWS, d)
    for (int t0 = 0; t0 < N && q > 0; t0 += GEO_ROWS) {
        int m = N - t0 < GEO_ROWS ? N - t0 : GEO_ROWS;
        rows_double(X, d, t0, m, x);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, q, d, 1.0, x, d, B, ldb, 0.0,
                    out + (size_t)t0 * q, q);
    }
    free(x);
}

void geo_control_states(const geo_control *c, const float *X, int N, int q, double *C) {
    geo_project(X, N, c->d, c->U, c->r, q, C);
}

double geo_control_logit_error(const geo_control *c, const float *X, const double *C, int N) {
    int n = c->n, d = c->d, r = c->r;
    double worst = 0.0, scale = 0.0;
    double *x = ms_malloc((size_t)GEO_ROWS * d * sizeof(double));  // (GEO_ROWS, d)
    double *direct = ms_malloc((size_t)GEO_ROWS * n * sizeof(double)); // (GEO_ROWS, n) W~ x
    double *via = ms_calloc((size_t)GEO_ROWS * n, sizeof(double));    // (GEO_ROWS, n) WU c
    for (int t0 = 0; t0 < N; t0 += GEO_ROWS) {
        int m = N - t0 < GEO_ROWS ? N - t0 : GEO_ROWS;
        rows_double(X, d, t0, m, x);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, d, 1.0, x, d, c->Wc, d, 0.0, direct, n);
        if (r)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, r, 1.0, C + (size_t)t0 * r, r, c->WU, r,
                        0.0, via, n);
        for (size_t q = 0; q < (size_t)m * n; q++) {
            worst = fmax(worst, fabs(direct[q] - via[q]));
            scale = fmax(scale, fabs(direct[q]));
        }
    }
    free(x);
    free(direct);
    free(via);
    return scale > 0.0 ? worst / scale : 0.0;
}
