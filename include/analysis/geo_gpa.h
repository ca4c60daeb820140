/* geo_gpa.h - generalized orthogonal Procrustes analysis (GPA): one rotation
 * per layer that brings every layer's control states into one canonical gauge
 * (geometry.h).
 *
 * Legend: L layers, m tokens (the training split), r the states' width.
 *
 * Each layer's basis U_l is defined only up to a rotation, so its states Y_l
 * (m, r) are too. GPA looks for Q_l in O(r) minimising
 *     sum_l || Y_l Q_l - M ||_F^2,     M = (1/L) sum_l Y_l Q_l  (the consensus)
 * by alternation (Gower, 1975): each Q_l = the Procrustes rotation of Y_l onto
 * M (the polar factor of Y_l^T M, geo_linalg.h), then M = the mean of the
 * rotated states, until a round moves no entry of any Q_l by more than tol
 * (or after max_iter rounds; the sum itself settles long before the rotations
 * do). The sum never grows, but the alternation can stop in a local minimum,
 * so it runs from two starts and keeps the lower:
 *   first     every layer rotated onto the first layer's states;
 *   spectral  the synchronisation start: the top r eigenvectors V (L r, r) of
 *             the block matrix [Y_l^T Y_k], each layer's block V_l turned into
 *             a rotation by its polar factor.
 * Both are equivariant: rotating one layer's basis (Y_l -> Y_l R) only
 * changes its Q_l (-> R^T Q_l), so the canonical states Y_l Q_l are the same
 * (up to one rotation common to all layers, which changes no R^2).
 * Everything is computed from the cross-products Y_l^T Y_k (r, r), formed once.
 * The residual reported is the sum over sum_l ||Y_l||^2: 0 when the layers'
 * states are rotations of each other; beside it that of the identity gauge
 * (every Q_l = I). */
#ifndef MS_GEO_GPA_H
#define MS_GEO_GPA_H

#include "core/ms_error.h"

enum { GEO_START_FIRST = 0, GEO_START_SPECTRAL = 1 };

typedef struct {
    int L, r;
    double *Q;          // (L, r, r) into the canonical gauge: z = y Q (row vectors)
    int start;          /* GEO_START_* the kept run began from */
    int iterations;     /* its rounds */
    int converged;      /* its last round moved no rotation's entry by more than tol */
    double residual;    /* its relative residual */
    double residual_other; /* the other start's */
    double residual0;   /* the same with every Q_l = I but for signs: each layer's
                           axis a signed like the layer before's (the sign of
                           its training product with it), so that no sign
                           convention of the bases moves it */
} geo_gpa;

#define GEO_GPA_MAX_ITER 1000
#define GEO_GPA_TOL 1e-10

/* Y: L pointers to (m, r) row-major states, centred. */
int geo_gpa_fit(const double *const *Y, int L, int m, int r, int max_iter, double tol, geo_gpa *g,
                ms_err *err);
void geo_gpa_free(geo_gpa *g);
const char *geo_gpa_start_name(int start); /* "first layer", "spectral" */

#endif
