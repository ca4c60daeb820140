/* symmetry.h - the actions of SPEC §3: they change parameters, never the function. */
#ifndef MS_SYMMETRY_H
#define MS_SYMMETRY_H

#include <stdint.h>

#include "model.h"

/* Expert order pi: slot i of the result holds m's expert pi[i] and gate row pi[i]. */
void moe_permute_experts(moe_model *m, const int *pi);
/* Shared experts reordered the same way (their sum is order-free). */
void moe_permute_shared(moe_model *m, const int *pi);
/* Add (cW (d), cb) to every gate row. */
void moe_translate_gate(moe_model *m, const float *cW, float cb);
/* Hidden permutation P of one expert: unit u of the result is unit P[u] of e
 * (rows of fc1/fc3 and their biases, columns of fc2). */
void moe_expert_permute_hidden(moe_expert *e, const moe_config *c, const int *P);

/* A random element of G(n) plus random hidden permutations, from seed.
 * Records what it did in the metadata (moescope.scramble.*): the expert order,
 * and for testing the inverse can be recovered from it. If order_out is not
 * NULL it receives the expert order (n). */
void moe_scramble(moe_model *m, uint64_t seed, int translate, int *order_out);

#endif
