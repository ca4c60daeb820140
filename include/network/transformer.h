/* transformer.h - the pieces of a pre-LN transformer block, on a batch of rows
 * in float32 with OpenBLAS: LayerNorm, a Conv1D / Linear, the activation, causal
 * multi-head self-attention. Shared by the GPT-2 network (net_forward.c) and
 * meant for the ViT's encoder too (which differs only in non-causal attention
 * and its own eps). Legend as in net_model.h: M rows, d width, nh heads, dh = d/nh,
 * T tokens of one sequence. Reference loops for each are in net_forward.c's
 * plain forward (net_logits_ref). */
#ifndef MS_TRANSFORMER_H
#define MS_TRANSFORMER_H

#include <stddef.h>

#include "model/model.h"

/* Y (M, d) = (X - mean) / sqrt(var + eps) * w + b per row of X (M, d); biased
 * variance, the statistics in double. Y may be X. */
void tf_layernorm_forward(const float *X, int M, int d, const float *w, const float *b, double eps,
                          float *Y);
/* Y (M, out) = X (M, in) W + bias, W (in, out): GPT-2's Conv1D (x W + b). */
void tf_conv1d_forward(const float *X, int M, int in, int out, const float *W, const float *bias,
                       float *Y);
/* X (len) <- act(X) elementwise (moe_act_scalar: gelu, gelu_new, relu). */
void tf_act_forward(float *X, size_t len, moe_act act);
/* Self-attention of one sequence: QKV (T, 3d) holds q | k | v per token (head
 * j's slice is columns j dh .. (j+1) dh of each third); O (T, d) = the heads'
 * softmax(q k^T / sqrt(dh)) v side by side. causal: token i sees tokens <= i.
 * S is a (T, T) workspace. */
void tf_attention_forward(const float *QKV, int T, int d, int nh, int causal, float *S, float *O);

#endif
