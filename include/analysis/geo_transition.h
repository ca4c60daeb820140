/* geo_transition.h - linear transitions between consecutive layers' states
 * and their held-out R^2 (geometry.h).
 *
 * Legend: L layers, N tokens, the first ntrain the training split, the rest
 * held out; r the coordinates' width. Y_l (N, r) are layer l's coordinates
 * (control states in some gauge, or a baseline's), each centred on its
 * training rows' mean (so a transition is the dynamics, not the offset).
 *
 *   shared      one A (r, r) for every step:  y_{l+1} ~ y_l A  (row vectors),
 *               least squares over the training rows of all L - 1 steps at once
 *   specific    one A_l per step, least squares over that step's training rows
 *   identity    A = I (the states carried over unchanged)
 *
 * R^2 of step l on the held-out rows: 1 - SSE / SST, SSE = sum ||y_{l+1} -
 * yhat||^2, SST = sum ||y_{l+1}||^2 (the target's training mean is 0); the
 * pooled R^2 sums SSE and SST over the steps first. eta_share = pooled shared
 * / pooled specific: how much of what the layer-specific transitions predict
 * one transition for all layers predicts too. The specific fit does not
 * depend on the gauge (any per-layer rotation is absorbed by A_l); the shared
 * one does, which is why the gauge matters. */
#ifndef MS_GEO_TRANSITION_H
#define MS_GEO_TRANSITION_H

#include "core/ms_error.h"

typedef struct {
    int L, r;
    double *A;           // (r, r) the shared transition
    double *Al;          // (L - 1, r, r) the layer-specific ones
    double *r2_shared;   // (L - 1) held-out R^2 of each step l -> l + 1
    double *r2_specific; // (L - 1)
    double *r2_identity; // (L - 1)
    double shared, specific, identity; /* pooled over the steps */
    double eta;          /* shared / specific (NaN when specific <= 0) */
} geo_fit;

/* Subtract from Y (N, r) the mean of its first ntrain rows, into mu (r). */
void geo_center(double *Y, int N, int ntrain, int r, double *mu);
/* Fit and score the transitions between Y[0..L) (each (N, r), centred). */
int geo_fit_transitions(const double *const *Y, int L, int N, int ntrain, int r, geo_fit *f,
                        ms_err *err);
void geo_fit_free(geo_fit *f);
/* R^2 of the prediction P (m, r) of T (m, r): 1 - SSE / SST (SST about 0),
 * with SSE and SST added into *sse and *sst when not NULL. */
double geo_r2(const double *P, const double *T, int m, int r, double *sse, double *sst);

#endif
