/* geo_control.h - a router's control subspace (the first step of the routing
 * geometry, geometry.h).
 *
 * Legend: n experts, d width, r the rank of the centred router, N tokens.
 *
 * Adding one vector to every gate row changes no softmax routing, so only the
 * centred router
 *     W~ = W - 1 w^T,   w = (1/n) sum_i W_i          W, W~ (n, d)
 * reaches the expert choice. Its rows sum to zero, so its rank r <= min(n - 1, d);
 * a smaller rank means dependent rows (two gate rows equal after centring, ...).
 * Its row space is the control subspace: the r directions of the residual
 * stream the router reads. With the thin SVD W~ = P S V^T, the basis is
 *     U = V[:, :r]  (d, r)      (orthonormal; any U Q, Q in O(r), is as good;
 *                                each column's largest entry made positive)
 * and the control state of a token x is c = U^T x (r): the centred logits are
 * recovered from it exactly, W~ x = (W~ U) c, since W~ U U^T = W~.
 *
 * Rank: the singular values above tol = sigma_1 max(n, d) eps32 (the weights
 * are float32, so a smaller one is rounding, not a direction). */
#ifndef MS_GEO_CONTROL_H
#define MS_GEO_CONTROL_H

#include "core/ms_error.h"

typedef struct {
    int n, d, r;
    int rmax;      /* min(n - 1, d): a generic router's rank */
    double tol;    /* the rank's threshold on the singular values */
    double *Wc;    // (n, d) the centred router W~
    double *sv;    // (min(n, d)) W~'s singular values, descending
    double *U;     // (d, r) an orthonormal basis of its row space, the columns
    double *WU;    // (n, r) W~ U: the centred logits of a state c are WU c
    int dup_i, dup_j; /* two gate rows equal after centring (the first such pair), else -1 */
} geo_control;

/* The centred router of the gate W (n, d), its singular values, rank and
 * basis. W must be finite (the loaders check it). */
int geo_control_init(geo_control *c, const float *W, int n, int d, ms_err *err);
void geo_control_free(geo_control *c);

/* C (N, q) = X U[:, :q] for X (N, d): the states on the first q <= r basis
 * directions (the largest singular values first). */
void geo_control_states(const geo_control *c, const float *X, int N, int q, double *C);
/* out (N, q) = X (N, d) B[:, :q] for B (d, ldb) row-major: a projection of
 * float32 rows, in double (blocks of rows through dgemm). */
void geo_project(const float *X, int N, int d, const double *B, int ldb, int q, double *out);

/* How exactly the states give the centred logits: max over the rows of X
 * (N, d) and the experts of |W~ x - WU c|, relative to the largest |W~ x|
 * (0 when every centred logit is 0). C (N, r) are the states on all r
 * directions. */
double geo_control_logit_error(const geo_control *c, const float *X, const double *C, int N);

#endif
