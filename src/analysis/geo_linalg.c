/* geo_linalg.c - SVD, eigen-decomposition, least squares and Procrustes on
 * row-major doubles, through OpenBLAS's LAPACK (geo_linalg.h).
 *
 * OpenBLAS exports LAPACK's Fortran routines (dgesvd_, ...), 32-bit integers
 * (Debian's libopenblas0 is LP64); gfortran passes each CHARACTER argument's
 * length as a trailing size_t, declared below. */
#include "analysis/geo_linalg.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info, size_t ljobu, size_t ljobvt);
void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info, size_t ljobz, size_t luplo);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
             const int *ldb, double *s, const double *rcond, int *rank, double *work,
             const int *lwork, int *iwork, int *info);

static int lapack_fail(ms_err *err, const char *routine, int info, int m, int n) {
    if (info < 0) return ms_fail(err, "%s on a %d x %d matrix: argument %d is invalid", routine, m, n, -info);
    return ms_fail(err, "%s on a %d x %d matrix did not converge (info %d): the matrix holds "
                        "values too large or not finite",
                   routine, m, n, info);
}

int la_svd(const double *A, int m, int n, double *s, double *U, double *VT, ms_err *err) {
    int k = m < n ? m : n;
    if (k < 1) return ms_fail(err, "SVD of an empty %d x %d matrix", m, n);
    // LAPACK sees the column-major (n, m) matrix A^T = V S U^T: its "U" (n, k)
    // column-major is our VT (k, n) row-major, its "VT" (k, m) our U (m, k)
    double *a = ms_malloc((size_t)m * n * sizeof(double));
    memcpy(a, A, (size_t)m * n * sizeof(double));
    double *sv = s ? s : ms_malloc((size_t)k * sizeof(double));
    char ju = VT ? 'S' : 'N', jv = U ? 'S' : 'N';
    int lm = n, ln = m, lda = n, ldu = n, ldvt = k, lwork = -1, info = 0;
    double wq, one = 0;
    double *u = VT ? VT : &one, *vt = U ? U : &one;
    if (!VT) ldu = 1;
    if (!U) ldvt = 1;
    dgesvd_(&ju, &jv, &lm, &ln, a, &lda, sv, u, &ldu, vt, &ldvt, &wq, &lwork, &info, 1, 1);
    if (!info) {
        lwork = (int)wq;
        double *work = ms_malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof(double));
        dgesvd_(&ju, &jv, &lm, &ln, a, &lda, sv, u, &ldu, vt, &ldvt, work, &lwork, &info, 1, 1);
        free(work);
    }
    free(a);
    if (!s) free(sv);
    return info ? lapack_fail(err, "dgesvd", info, m, n) : 0;
}

int la_eigh(double *A, int n, double *w, ms_err *err) {
    // symmetric: row-major is column-major; LAPACK's eigenvector columns are our rows
    char jz = 'V', up = 'U';
    int lda = n, lwork = -1, info = 0;
    double wq;
    dsyev_(&jz, &up, &n, A, &lda, w, &wq, &lwork, &info, 1, 1);
    if (!info) {
        lwork = (int)wq;
        double *work = ms_malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof(double));
        dsyev_(&jz, &up, &n, A, &lda, w, work, &lwork, &info, 1, 1);
        free(work);
    }
    return info ? lapack_fail(err, "dsyev", info, n, n) : 0;
}

int la_lstsq(const double *X, int m, int n, const double *Y, int p, double *B, ms_err *err) {
    if (m < 1 || n < 1 || p < 1) return ms_fail(err, "least squares of an empty system (%d x %d)", m, n);
    int ldb = m > n ? m : n;
    // column-major copies: a (m, n), b (ldb, p) holding Y, then the solution's n rows
    double *a = ms_malloc((size_t)m * n * sizeof(double));
    double *b = ms_calloc((size_t)ldb * p, sizeof(double));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) a[(size_t)j * m + i] = X[(size_t)i * n + j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < p; j++) b[(size_t)j * ldb + i] = Y[(size_t)i * p + j];
    int k = m < n ? m : n, rank = 0, lwork = -1, info = 0, iwq = 0;
    double *s = ms_malloc((size_t)k * sizeof(double)), rcond = 1e-12, wq;
    dgelsd_(&m, &n, &p, a, &m, b, &ldb, s, &rcond, &rank, &wq, &lwork, &iwq, &info);
    if (!info) {
        lwork = (int)wq;
        double *work = ms_malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof(double));
        int *iwork = ms_malloc((size_t)(iwq > 1 ? iwq : 1) * sizeof(int));
        dgelsd_(&m, &n, &p, a, &m, b, &ldb, s, &rcond, &rank, work, &lwork, iwork, &info);
        free(work);
        free(iwork);
    }
    if (!info)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < p; j++) B[(size_t)i * p + j] = b[(size_t)j * ldb + i];
    free(a);
    free(b);
    free(s);
    return info ? lapack_fail(err, "dgelsd", info, m, n) : 0;
}

/* Q (r, r) = U V^T of M (r, r) = U S V^T */
static int polar_factor(const double *M, int r, double *Q, ms_err *err) {
    double *u = ms_malloc((size_t)r * r * sizeof(double)), *vt = ms_malloc((size_t)r * r * sizeof(double));
    int rc = la_svd(M, r, r, NULL, u, vt, err);
    if (!rc) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, u, r, vt, r, 0.0, Q, r);
    free(u);
    free(vt);
    return rc;
}

int la_procrustes(const double *A, const double *B, int m, int r, double *Q, ms_err *err) {
    double *M = ms_malloc((size_t)r * r * sizeof(double)); // A^T B (r, r)
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, m, 1.0, A, r, B, r, 0.0, M, r);
    int rc = polar_factor(M, r, Q, err);
    free(M);
    return rc;
}

int la_random_orthogonal(rng_t *g, int r, double *Q, ms_err *err) {
    double *G = ms_malloc((size_t)r * r * sizeof(double));
    for (size_t q = 0; q < (size_t)r * r; q++) G[q] = rng_normal(g);
    int rc = polar_factor(G, r, Q, err);
    free(G);
    return rc;
}

void la_fix_signs(double *V, int rows, int q, int ld) {
    for (int a = 0; a < q; a++) {
        int best = 0;
        for (int i = 1; i < rows; i++)
            if (fabs(V[(size_t)i * ld + a]) > fabs(V[(size_t)best * ld + a])) best = i;
        if (V[(size_t)best * ld + a] < 0)
            for (int i = 0; i < rows; i++) V[(size_t)i * ld + a] = -V[(size_t)i * ld + a];
    }
}
