/* net_range.h - finite values so large that a network's forward would overflow.
 *
 * A backbone of finite values (c_attn 1e19, wte 3e38, a ViT's classifier or its
 * pixel_values 3e38) passes the readers' NaN and Inf check, yet its forward gives
 * loss nan or 0. Before any forward, the magnitudes are bounded from the largest
 * |value| of every tensor the forward reads, block by block, with the bounds the layer
 * path keeps (value_range.h: RANGE_ACT_MAX): the residual stream from the embeddings,
 * after a LayerNorm or RMSNorm at most sqrt(d) |gamma| + |beta|, the attention's q/k/v
 * (after their q/k norms and rotation; DeepSeek's latent projections and norms) and
 * scores (dh |q| |k|, GPT-OSS's sinks beside them), its projection, a dense MLP (ff
 * |hidden| |W|; a GLU's |gate| |up|), an MoE block by its own layer's bounds
 * (range_bounds), the head's logits. Each operation's form comes from the architecture's
 * row (net_config.c), as the forward's does. A bound broken is refused naming the file,
 * the tensor with the largest values so far in the file's own names (net_tensor_at,
 * family_tensor_at) and the block. */
#ifndef MS_NET_RANGE_H
#define MS_NET_RANGE_H

#include "network/net_evalset.h"
#include "network/net_model.h"

/* 0, or -1 naming the tensor (of m, or E's pixel_values) and the block */
int net_range_check(const net_model *m, const net_evalset *E, ms_err *err);

#endif
