/* geo_recall.h - do a layer's coordinates keep its expert choices? (geometry.h)
 *
 * Legend: N tokens (the first ntrain the training split), n experts, q the
 * coordinates' width, k the experts a token is routed to.
 *
 * The expert choice of a token is the set its router selects: the top-k of a
 * top-k router (k < n), the top-1 (the largest weight) of a dense one. From
 * coordinates y (the control states, residual PCA, transported states) the
 * logits are read out linearly, s ~ [y, 1] B with B ((q + 1), n) the least
 * squares fit on the training tokens, routed by the layer's own router, and
 * the held-out recall is the mean over tokens of |chosen from y ^ chosen| / k.
 * For the control states the readout is exact (s = W~ U c + the common part +
 * b: the common part changes no softmax choice), so their recall is 1 up to
 * ties; residual PCA at the same width keeps what its directions happen to
 * share with the router's. geo_recall_by_rank reads the choices out of the
 * first q columns only (q = 1 .. r: the states' leading directions, PCA's
 * top ones), which compares the two at a matched, reduced rank. */
#ifndef MS_GEO_RECALL_H
#define MS_GEO_RECALL_H

#include "core/ms_error.h"
#include "model/model.h"

/* k of the expert choice: the router's top-k, 1 for a dense router */
int geo_choice_k(const moe_config *c);
/* choice (m, k) of the logits S (m, n) under router c (corr: the selection
 * bias or NULL), each row's experts by weight, largest first */
void geo_choices(const moe_config *c, const float *corr, const float *S, int m, int k, int *choice);
/* B (q + 1, n): the readout of the logits S (>= ntrain rows, n) from [Y, 1] on the first ntrain rows */
int geo_readout_fit(const double *Y, int ntrain, int q, const float *S, int n, double *B, ms_err *err);
/* The recall of choice (rows t0 .. t1) from Y (rows t0 .. t1 of (., q)) through B. */
double geo_recall(const moe_config *c, const float *corr, const double *Y, int t0, int t1, int q,
                  const double *B, const int *choice, int k);

/* R (r): the recall of choice (held-out rows ntrain .. N) from the first q =
 * 1 .. r columns of Y (N, r), each through its own readout of S (N, n) fitted
 * on the training rows. */
int geo_recall_by_rank(const moe_config *c, const float *corr, const double *Y, int N, int ntrain, int r,
                       const float *S, const int *choice, int k, double *R, ms_err *err);

#endif
