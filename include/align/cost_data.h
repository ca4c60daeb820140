/* cost_data.h - the data-driven matching methods: Git Re-Basin's activation
 * matching and MC-SMoE's router-logit similarity, on the evaluation set's
 * inputs at the MoE block (the formulas: cost_data.c). Rows of cost_methods[]. */
#ifndef MS_COST_DATA_H
#define MS_COST_DATA_H

#include "align/cost_method.h"

/* at most this many of the set's rows (tokens) are used, the first ones; for
 * wide experts fewer, down to COST_DATA_ROWS_MIN, so that the activation
 * method's forward passes stay near COST_DATA_FLOPS */
#define COST_DATA_ROWS 4096
#define COST_DATA_ROWS_MIN 256
#define COST_DATA_FLOPS 2e11

/* C (n,n) = 1 - the correlation of A's expert i's and B's expert j's outputs */
int cost_activation(const cost_input *in, double *C, ms_err *err);
/* C (n,n) = 1 - the correlation of A's gate logit i and B's gate logit j */
int cost_router(const cost_input *in, double *C, ms_err *err);
/* Hidden permutation P (h) of b matching a's units by the correlation of their
 * activations on X (N, d): maximises sum_u S[u][P[u]], S (h,h) the workspace. */
int cost_activation_hidden(const moe_expert *a, const moe_expert *b, const moe_config *c, const float *X,
                           int N, int *P, double *S, ms_err *err);
/* R (La, Lb): the Pearson correlation over N rows of each column of Za (N, La)
 * with each column of Zb (N, Lb); 0 where a column is constant */
void cost_column_correlation(const float *Za, int La, const float *Zb, int Lb, int N, double *R);

#endif
