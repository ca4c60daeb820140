/* weight_matching.h - Algorithm 1 step 2: align the hidden units of a
 * matched pair of experts (one linear assignment on a similarity matrix). */
#ifndef MS_WEIGHT_MATCHING_H
#define MS_WEIGHT_MATCHING_H

#include "model/model.h"

/* S (h,h) = W1a W1b^T + b1a b1b^T + W2a^T W2b [+ W3a W3b^T + b3a b3b^T]. */
void wm_similarity(const moe_expert *a, const moe_expert *b, const moe_config *c, double *S);
/* Hidden permutation P (h) maximising sum_u S[u][P[u]]: unit u of the aligned
 * expert is unit P[u] of b. Returns the objective in *score if not NULL. */
int wm_match(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
             double *score, ms_err *err);

/* wm_match with a caller-provided workspace S of h*h doubles (align_models
 * reuses one for every slot instead of allocating per pair). */
int wm_match_into(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
                  double *score, double *S, ms_err *err);

#endif
