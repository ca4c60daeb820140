/* geo_baselines.h - the coordinates the canonical gauge is compared with
 * (geometry.h): what a shared transition predicts in them says how much of
 * its R^2 is owed to the gauge.
 *
 * Legend: N tokens (the first ntrain the training split), d width, r the
 * states' width, L layers.
 *
 *   random gauge  each layer's centred states turned by its own random
 *                 rotation R_l (Haar on O(r), from a seed): as good a basis of
 *                 each control subspace as any, but no common frame;
 *   residual PCA  each layer's inputs projected on their own top r principal
 *                 directions (of the training rows' covariance): the same width,
 *                 but the directions of most variance rather than those the
 *                 router reads; each direction's sign taken so that its
 *                 coordinate correlates positively with the layer before's
 *                 (geo_align_signs), since a shared transition would otherwise
 *                 see whatever signs the eigensolver's convention gave;
 *   CCA           each layer's centred states whitened (w_l = y_l S_l^-1/2, S_l
 *                 their training covariance), then rotated onto the previous
 *                 layer's frame (the Procrustes rotation of whitened states is
 *                 the canonical-correlation pairing of the two layers), chained
 *                 from the first layer: consecutive layers as correlated as a
 *                 linear change of basis can make them. */
#ifndef MS_GEO_BASELINES_H
#define MS_GEO_BASELINES_H

#include "core/ms_error.h"
#include "core/rng.h"

/* Z_l (N, r) = Y_l R_l for every layer, R_l = la_random_orthogonal(g), the
 * rotations into R (L, r, r). */
int geo_random_gauge(const double *const *Y, int L, int N, int r, rng_t *g, double *const *Z, double *R,
                     ms_err *err);

/* The inputs' training mean mu (d) and covariance S (d, d) (over ntrain). */
void geo_input_covariance(const float *X, int N, int ntrain, int d, double *mu, double *S);
/* V (d, q): the top q principal directions of S (d, d) (destroyed), as
 * columns, largest variance first; *share = their variance over S's trace. */
int geo_pca_directions(double *S, int d, int q, double *V, double *share, ms_err *err);

/* Negate column a of Y_l (N, r), l = 1 .. L-1 in turn, where its training rows'
 * product with column a of Y_{l-1} is negative: a sign flip of any layer's
 * columns then changes nothing, a flip of the first layer's flips every
 * layer's (a common change no transition fit sees). */
void geo_align_signs(double *const *Y, int L, int N, int ntrain, int r);

/* Z_l (N, r) the CCA chain of the centred states Y_l (above). */
int geo_cca_chain(const double *const *Y, int L, int N, int ntrain, int r, double *const *Z, ms_err *err);

#endif
