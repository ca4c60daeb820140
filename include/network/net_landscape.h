/* net_landscape.h - beside a network's landscape (landscape_compute on the
 * network objective, net_objective.h), the layer-only proxy measured: how far
 * the layer-only barrier (the only one possible on a real Hugging Face layer,
 * where the rest of the network is not at hand) can be trusted.
 *
 * The proxy of an order is its layer-only barrier - the distance of the
 * interpolated layer's output from the chord of the two layers' outputs
 * (landscape.c's layer mode) - at the block's own inputs: ln_2 of the hidden
 * states network A computes in front of that block (for the first MoE block
 * they are every seed's, the backbone before it being frozen). Reported: every
 * order's proxy barrier, Spearman's rho of (proxy, network barrier) over the
 * orders, and the network rank of the proxy's best order. */
#ifndef MS_NET_LANDSCAPE_H
#define MS_NET_LANDSCAPE_H

#include "io/evalset.h"
#include "landscape/landscape.h"
#include "network/net_eval.h"

/* MoE block `block`'s own inputs under network A as a layer-only evaluation set:
 * inputs (N T, d), no labels (free with evalset_free). */
int net_block_inputs(const net_model *A, const net_evalset *E, int block, const net_par *par,
                     evalset *out, ms_err *err);
/* The layer-only landscape of A's and B's block on those inputs, over L's orders
 * (the same options o, without an objective), into L's proxy fields. */
int net_landscape_proxy(const moe_model *A, const moe_model *B, const evalset *inputs,
                        const ls_opts *o, landscape *L, ms_err *err);

#endif
