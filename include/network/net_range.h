/* net_range.h - finite values so large that a network's forward would overflow.
 *
 * A backbone of finite values (c_attn 1e19, wte 3e38, a ViT's classifier or its
 * pixel_values 3e38) passes the readers' NaN and Inf check, yet its forward gives
 * loss nan or 0. Before any forward, the magnitudes are bounded from the largest
 * |value| of each tensor, block by block, with the bounds the layer path keeps
 * (value_range.h: RANGE_ACT_MAX): the residual stream from the embeddings, after a
 * LayerNorm at most sqrt(d) |gamma| + |beta|, the attention's q/k/v and scores
 * (dh |q| |k|), its projection, a dense MLP (ff |hidden| |W|), an MoE block by its
 * own layer's bounds (range_bounds), the head's logits. A bound broken is refused
 * naming the file, the tensor with the largest values so far and the block. */
#ifndef MS_NET_RANGE_H
#define MS_NET_RANGE_H

#include "network/net_evalset.h"
#include "network/net_model.h"

/* 0, or -1 naming the tensor (of m, or E's pixel_values) and the block */
int net_range_check(const net_model *m, const net_evalset *E, ms_err *err);

#endif
