/* net_budget.h - a network's evaluation against the memory limit (mem_budget.h).
 *
 * What one evaluation of m on E holds besides the parameters - the frozen prefix's
 * output (N T, d), each worker's activations, attention scores and a panel of
 * logits - estimated from the shapes and checked before any is made, where a network
 * meets its set (net_evalset_check): a small file with a large vocabulary or long
 * sequences is refused with the sizes, not ended by the allocator (exit 3). */
#ifndef MS_NET_BUDGET_H
#define MS_NET_BUDGET_H

#include "network/net_evalset.h"
#include "network/net_model.h"

/* the bytes one evaluation of m on E holds besides the parameters */
double net_eval_bytes(const net_model *m, const net_evalset *E);
/* 0, or -1 naming the checkpoint, the set and the bytes over the limit */
int net_mem_check(const net_model *m, const net_evalset *E, ms_err *err);
/* The same for MoE block `block`'s inputs on E (net_block_inputs) and the layer's own
 * evaluation on them (the layer-only proxy, diagnose, the explorer's views) */
int net_inputs_mem_check(const net_model *m, const net_evalset *E, int block, ms_err *err);

#endif
