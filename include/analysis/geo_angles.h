/* geo_angles.h - principal angles between two subspaces of R^d (the control
 * subspaces of two layers, geometry.h).
 *
 * For orthonormal bases Ua (d, ra) and Ub (d, rb), k = min(ra, rb), the
 * cosines of the k principal angles are the singular values of Ua^T Ub; near
 * 0 the cosine loses the angle to rounding, so (as scipy.linalg.subspace_angles
 * and Bjorck & Golub, 1973) an angle whose cosine^2 is at least 1/2 comes from
 * its sine instead: the singular values of Ub - Ua (Ua^T Ub) (the part of the
 * smaller basis outside the larger span). 0: the spans share a direction;
 * pi/2: orthogonal. Two random r-dimensional subspaces of R^d have a mean
 * cos^2 of about r / d. */
#ifndef MS_GEO_ANGLES_H
#define MS_GEO_ANGLES_H

#include "core/ms_error.h"

/* theta (min(ra, rb)) ascending, in radians. */
int geo_principal_angles(const double *Ua, int ra, const double *Ub, int rb, int d, double *theta,
                         ms_err *err);

#endif
