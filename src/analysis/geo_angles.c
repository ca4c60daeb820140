/* geo_angles.c - principal angles from the cosines and the sines (geo_angles.h). */
#include "analysis/geo_angles.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "analysis/geo_linalg.h"

static double clamp1(double v) { return v < -1.0 ? -1.0 : v > 1.0 ? 1.0 : v; }

int geo_principal_angles(const double *Ua, int ra, const double *Ub, int rb, int d, double *theta,
                         ms_err *err) {
    if (ra < rb) { // the larger basis first: the sines are then of the smaller one's rb columns
        const double *t = Ua;
        Ua = Ub, Ub = t;
        int s = ra;
        ra = rb, rb = s;
    }
    int k = rb;
    if (k < 1) return 0;
    double *M = ms_malloc((size_t)ra * rb * sizeof(double)); // (ra, rb) Ua^T Ub
    double *B = ms_malloc((size_t)d * rb * sizeof(double));  // (d, rb) Ub - Ua M
    double *cs = ms_malloc((size_t)k * sizeof(double)), *sn = ms_malloc((size_t)k * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ra, rb, d, 1.0, Ua, ra, Ub, rb, 0.0, M, rb);
    for (size_t q = 0; q < (size_t)d * rb; q++) B[q] = Ub[q];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, rb, ra, -1.0, Ua, ra, M, rb, 1.0, B, rb);
    int rc = la_svd(M, ra, rb, cs, NULL, NULL, err);
    if (!rc) rc = la_svd(B, d, rb, sn, NULL, NULL, err);
    // cosines descending = angles ascending; sines descending = angles descending
    for (int i = 0; !rc && i < k; i++) {
        double c = clamp1(cs[i]), s = clamp1(sn[k - 1 - i]);
        theta[i] = c * c >= 0.5 ? asin(s) : acos(c);
    }
    free(M);
    free(B);
    free(cs);
    free(sn);
    return rc ? ms_prefix(err, "principal angles") : 0;
}
