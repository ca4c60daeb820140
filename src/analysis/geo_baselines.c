/* geo_baselines.c - random gauge, residual PCA and the CCA chain
 * (geo_baselines.h). */
#include "analysis/geo_baselines.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_linalg.h"

int geo_random_gauge(const double *const *Y, int L, int N, int r, rng_t *g, double *const *Z, double *R,
                     ms_err *err) {
    int rc = 0;
    for (int l = 0; l < L && !rc; l++) {
        double *Rl = R + (size_t)l * r * r;
        rc = la_random_orthogonal(g, r, Rl, err);
        if (!rc)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, r, r, 1.0, Y[l], r, Rl, r, 0.0, Z[l], r);
    }
    return rc;
}

void geo_align_signs(double *const *Y, int L, int N, int ntrain, int r) {
    for (int l = 1; l < L; l++)
        for (int a = 0; a < r; a++) {
            double c = 0.0;
            for (int t = 0; t < ntrain; t++) c += Y[l][(size_t)t * r + a] * Y[l - 1][(size_t)t * r + a];
            if (c < 0)
                for (int t = 0; t < N; t++) Y[l][(size_t)t * r + a] = -Y[l][(size_t)t * r + a];
        }
}

#define COV_ROWS 512 /* rows per rank-k update */

void geo_input_covariance(const float *X, int N, int ntrain, int d, double *mu, double *S) {
    (void)N;
    memset(mu, 0, (size_t)d * sizeof(double));
    for (int t = 0; t < ntrain; t++)
        for (int j = 0; j < d; j++) mu[j] += X[(size_t)t * d + j];
    for (int j = 0; j < d; j++) mu[j] /= ntrain;
    memset(S, 0, (size_t)d * d * sizeof(double));
    double *x = ms_malloc((size_t)COV_ROWS * d * sizeof(double)); // (COV_ROWS, d) centred rows
    for (int t0 = 0; t0 < ntrain; t0 += COV_ROWS) {
        int m = ntrain - t0 < COV_ROWS ? ntrain - t0 : COV_ROWS;
        for (int t = 0; t < m; t++)
            for (int j = 0; j < d; j++) x[(size_t)t * d + j] = X[(size_t)(t0 + t) * d + j] - mu[j];
        // S (upper) += x^T x
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, m, 1.0, x, d, 1.0, S, d);
    }
    free(x);
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            S[(size_t)i * d + j] /= ntrain;
            S[(size_t)j * d + i] = S[(size_t)i * d + j];
        }
}

int geo_pca_directions(double *S, int d, int q, double *V, double *share, ms_err *err) {
    double *w = ms_malloc((size_t)d * sizeof(double));
    double trace = 0.0;
    for (int j = 0; j < d; j++) trace += S[(size_t)j * d + j];
    int rc = la_eigh(S, d, w, err); // ascending; row i of S the eigenvector of w[i]
    double top = 0.0;
    for (int a = 0; !rc && a < q; a++) {
        int i = d - 1 - a;
        top += w[i];
        for (int j = 0; j < d; j++) V[(size_t)j * q + a] = S[(size_t)i * d + j];
    }
    if (!rc) la_fix_signs(V, d, q, q);
    *share = trace > 0 ? top / trace : NAN;
    free(w);
    return rc ? ms_prefix(err, "the inputs' principal directions") : 0;
}

/* W (r, r) = S^-1/2 of the training covariance S of Y (N, r); directions of
 * (numerically) zero variance are left out (their weight 0) */
static int whitener(const double *Y, int ntrain, int r, double *W, ms_err *err) {
    double *S = ms_malloc((size_t)r * r * sizeof(double)), *w = ms_malloc((size_t)r * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, ntrain, 1.0 / ntrain, Y, r, Y, r, 0.0, S, r);
    int rc = la_eigh(S, r, w, err);
    if (!rc) {
        double floor = w[r - 1] * 1e-12;
        memset(W, 0, (size_t)r * r * sizeof(double));
        for (int i = 0; i < r; i++) {
            if (w[i] <= floor) continue;
            double f = 1.0 / sqrt(w[i]);
            for (int a = 0; a < r; a++)
                for (int b = 0; b < r; b++) W[(size_t)a * r + b] += f * S[(size_t)i * r + a] * S[(size_t)i * r + b];
        }
    }
    free(S);
    free(w);
    return rc;
}

int geo_cca_chain(const double *const *Y, int L, int N, int ntrain, int r, double *const *Z, ms_err *err) {
    size_t rr = (size_t)r * r, nr = (size_t)N * r;
    double *W = ms_malloc(rr * sizeof(double)), *R = ms_malloc(rr * sizeof(double));
    double *w = ms_malloc(nr * sizeof(double)); // (N, r) one layer whitened
    int rc = 0;
    for (int l = 0; l < L && !rc; l++) {
        rc = whitener(Y[l], ntrain, r, W, err);
        if (rc) break;
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, r, r, 1.0, Y[l], r, W, r, 0.0, w, r);
        if (l == 0) {
            memcpy(Z[0], w, nr * sizeof(double));
            continue;
        }
        rc = la_procrustes(w, Z[l - 1], ntrain, r, R, err); // onto the previous layer's frame
        if (!rc) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, r, r, 1.0, w, r, R, r, 0.0, Z[l], r);
    }
    free(W);
    free(R);
    free(w);
    return rc ? ms_prefix(err, "the CCA baseline") : 0;
}
