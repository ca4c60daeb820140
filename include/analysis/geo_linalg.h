/* geo_linalg.h - the dense linear algebra the routing geometry needs, on
 * row-major double matrices, through OpenBLAS's bundled LAPACK (dgesvd, dsyev,
 * dgelsd): a thin SVD, a symmetric eigen-decomposition, least squares, the
 * orthogonal Procrustes rotation and a random rotation. No hand-written
 * factorisation: LAPACK's are the ones numpy and scipy call too.
 *
 * Row-major to LAPACK's column-major: a row-major (m, n) buffer is the
 * column-major (n, m) matrix A^T, and A^T = V S U^T, so the SVD of the buffer
 * as LAPACK sees it hands back our V^T where it writes "U" and our U where it
 * writes "V^T" (geo_linalg.c). Errors name the routine and its info code. */
#ifndef MS_GEO_LINALG_H
#define MS_GEO_LINALG_H

#include "core/ms_error.h"
#include "core/rng.h"

/* Thin SVD A (m, n) = U diag(s) VT, k = min(m, n): s (k) descending, U (m, k)
 * and VT (k, n) when not NULL (either may be skipped). A is not changed. */
int la_svd(const double *A, int m, int n, double *s, double *U, double *VT, ms_err *err);
/* Eigen-decomposition of the symmetric A (n, n): w (n) ascending; A's row i
 * becomes the unit eigenvector of w[i]. */
int la_eigh(double *A, int n, double *w, ms_err *err);
/* B (n, p) minimising ||X B - Y||_F for X (m, n), Y (m, p), the minimum-norm
 * solution when X is rank-deficient (dgelsd, singular values below 1e-12 of
 * the largest treated as zero). */
int la_lstsq(const double *X, int m, int n, const double *Y, int p, double *B, ms_err *err);
/* Q (r, r) orthogonal minimising ||A Q - B||_F for A, B (m, r): Q = U V^T from
 * the SVD A^T B = U S V^T (scipy.linalg.orthogonal_procrustes). */
int la_procrustes(const double *A, const double *B, int m, int r, double *Q, ms_err *err);
/* Q (r, r) a uniformly random rotation (Haar on O(r)): the orthogonal polar
 * factor U V^T of a Gaussian matrix G = U S V^T. */
int la_random_orthogonal(rng_t *g, int r, double *Q, ms_err *err);

/* Each of the q columns of V (rows, ld) turned so that its entry of largest
 * magnitude (the first of equals) is positive: an SVD or eigen basis is
 * defined only up to these signs, and this fixes them the same way for any
 * LAPACK routine or kernel (as scikit-learn's svd_flip). */
void la_fix_signs(double *V, int rows, int q, int ld);

#endif
