/* geo_transition.c - shared, layer-specific and identity transitions and their
 * held-out R^2 (geo_transition.h). */
#include "analysis/geo_transition.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_linalg.h"

void geo_center(double *Y, int N, int ntrain, int r, double *mu) {
    for (int a = 0; a < r; a++) {
        double s = 0.0;
        for (int t = 0; t < ntrain; t++) s += Y[(size_t)t * r + a];
        mu[a] = ntrain ? s / ntrain : 0.0;
    }
    for (int t = 0; t < N; t++)
        for (int a = 0; a < r; a++) Y[(size_t)t * r + a] -= mu[a];
}

double geo_r2(const double *P, const double *T, int m, int r, double *sse, double *sst) {
    double e = 0.0, s = 0.0;
    for (size_t q = 0; q < (size_t)m * r; q++) {
        double d = T[q] - P[q];
        e += d * d;
        s += T[q] * T[q];
    }
    if (sse) *sse += e;
    if (sst) *sst += s;
    return s > 0.0 ? 1.0 - e / s : NAN;
}

/* P (m, r) = X (m, r) A (r, r) */
static void apply(const double *X, int m, int r, const double *A, double *P) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, r, r, 1.0, X, r, A, r, 0.0, P, r);
}

/* the shared A from the training rows of every step stacked */
static int fit_shared(const double *const *Y, int L, int ntrain, int r, double *A, ms_err *err) {
    size_t rows = (size_t)(L - 1) * ntrain, blk = (size_t)ntrain * r;
    double *X = ms_malloc(rows * r * sizeof(double)), *T = ms_malloc(rows * r * sizeof(double));
    for (int l = 0; l + 1 < L; l++) {
        memcpy(X + l * blk, Y[l], blk * sizeof(double));
        memcpy(T + l * blk, Y[l + 1], blk * sizeof(double));
    }
    int rc = la_lstsq(X, (int)rows, r, T, r, A, err);
    free(X);
    free(T);
    return rc;
}

int geo_fit_transitions(const double *const *Y, int L, int N, int ntrain, int r, geo_fit *f,
                        ms_err *err) {
    memset(f, 0, sizeof *f);
    if (L < 2) return ms_fail(err, "a transition needs two layers, has %d", L);
    if (ntrain <= r || ntrain >= N)
        return ms_fail(err, "%d tokens split %d / %d: fitting a %d x %d transition needs more than %d "
                            "training tokens and at least one held out",
                       N, ntrain, N - ntrain, r, r, r);
    f->L = L, f->r = r;
    int S = L - 1, m = N - ntrain;
    size_t rr = (size_t)r * r;
    f->A = ms_malloc(rr * sizeof(double));
    f->Al = ms_malloc((size_t)S * rr * sizeof(double));
    f->r2_shared = ms_malloc((size_t)S * sizeof(double));
    f->r2_specific = ms_malloc((size_t)S * sizeof(double));
    f->r2_identity = ms_malloc((size_t)S * sizeof(double));
    int rc = fit_shared(Y, L, ntrain, r, f->A, err);
    for (int l = 0; l < S && !rc; l++) rc = la_lstsq(Y[l], ntrain, r, Y[l + 1], r, f->Al + l * rr, err);
    if (rc) {
        geo_fit_free(f);
        return ms_prefix(err, "fitting the transitions");
    }
    double *P = ms_malloc((size_t)m * r * sizeof(double));
    double e[3] = {0}, s[3] = {0};
    for (int l = 0; l < S; l++) {
        const double *X = Y[l] + (size_t)ntrain * r, *T = Y[l + 1] + (size_t)ntrain * r;
        apply(X, m, r, f->A, P);
        f->r2_shared[l] = geo_r2(P, T, m, r, &e[0], &s[0]);
        apply(X, m, r, f->Al + l * rr, P);
        f->r2_specific[l] = geo_r2(P, T, m, r, &e[1], &s[1]);
        f->r2_identity[l] = geo_r2(X, T, m, r, &e[2], &s[2]);
    }
    free(P);
    f->shared = s[0] > 0 ? 1.0 - e[0] / s[0] : NAN;
    f->specific = s[1] > 0 ? 1.0 - e[1] / s[1] : NAN;
    f->identity = s[2] > 0 ? 1.0 - e[2] / s[2] : NAN;
    f->eta = f->specific > 0 ? f->shared / f->specific : NAN;
    return 0;
}

void geo_fit_free(geo_fit *f) {
    free(f->A);
    free(f->Al);
    free(f->r2_shared);
    free(f->r2_specific);
    free(f->r2_identity);
    memset(f, 0, sizeof *f);
}
