/* transformer.h - the pieces of a pre-LN transformer block, on a batch of rows
 * in float32 with OpenBLAS: LayerNorm, a Conv1D / Linear, the activation,
 * multi-head self-attention (causal or bidirectional). Shared by the GPT-2
 * network and the ViT's encoder (net_forward.c), which differ in the weights'
 * layout, the attention's mask and the LayerNorm eps. Legend as in net_model.h:
 * M rows, d width, nh heads, dh = d/nh, T tokens of one sequence. Reference
 * loops for each are in net_forward.c's plain forward (net_logits_ref). */
#ifndef MS_TRANSFORMER_H
#define MS_TRANSFORMER_H

#include <stddef.h>

#include "model/model.h"

/* Y (M, d) = (X - mean) / sqrt(var + eps) * w + b per row of X (M, d); biased
 * variance, the statistics in double. Y may be X. */
void tf_layernorm_forward(const float *X, int M, int d, const float *w, const float *b, double eps,
                          float *Y);
/* Y (M, d) = X / sqrt(mean(X^2) + eps) * w per row of X (M, d) (an RMSNorm; the
 * statistic in double); rows ldx floats apart in X and Y. Y may be X. */
void tf_rmsnorm_forward(const float *X, int M, int d, int ldx, const float *w, double eps, float *Y);
/* How a weight is stored: GPT-2's Conv1D [in, out] (y = x W + b), or torch's
 * Linear [out, in] (y = x W^T + b). */
typedef enum { TF_CONV1D, TF_LINEAR } tf_layout;

/* Y (M, out) = X (M, in) W + bias (accumulate: Y +=), W (in, out) as a Conv1D or
 * (out, in) as a Linear; bias (out) may be NULL. */
void tf_dense_forward(const float *X, int M, int in, int out, const float *W, tf_layout lay,
                      const float *bias, int accumulate, float *Y);
/* X (len) <- act(X) elementwise (moe_act_scalar: gelu, gelu_new, relu). */
void tf_act_forward(float *X, size_t len, moe_act act);
/* The shape of a grouped-query attention: nh query heads, nkv key/value heads
 * (kv head g serves query heads g rep .. g rep + rep - 1, rep = nh / nkv; tiled:
 * query head j reads kv head j % nkv, JetMoE's repeat), hd the
 * head width of q and k, vd of v (DeepSeek's v_head_dim; 0: hd); scores scaled by
 * scale; causal: token i sees tokens <= i, and with a window > 0 only those j with
 * i - window < j. A row of QKV holds q (nh hd) | k (nkv hd) | v (nkv vd). */
typedef struct {
    int nh, nkv, hd;
    float scale;
    int causal, window;
    int vd;
    const float *sinks; /* (nh) a sink logit per head joining each row's softmax (GPT-OSS); NULL: none */
    int tiled;
} tf_attn_shape;

/* the kv head query head j of a reads */
int tf_kv_head(const tf_attn_shape *a, int j);

/* O (T, nh vd) = every head's softmax(q k^T scale) v, of one sequence's QKV (T,
 * (nh + nkv) hd + nkv vd). S is a (T, T) workspace. */
void tf_attention_gqa(const float *QKV, int T, const tf_attn_shape *a, float *S, float *O);
/* tf_attention_gqa's head j alone: its vd columns of O (the heads are independent,
 * so any thread may compute any of them with the same result) */
void tf_attention_head(const float *QKV, int T, const tf_attn_shape *a, int j, float *S, float *O);
/* cs (T, rot) = af cos | af sin of position p times inv_freq[i] for i < rot/2:
 * the rotary embedding's table */
void tf_rope_table(int T, int rot, const double *inv_freq, double af, float *cs);
/* Rotate the first nr heads (hd wide) of each of M rows of X (row stride ld), row
 * r at position (p0 + r) % T, by transformers' rotate_half: dimension i < rot/2 pairs
 * with i + rot/2 (interleave: 2i with 2i + 1, DeepSeek's); dimensions from rot on
 * are left alone. */
void tf_rope_forward(float *X, int M, int p0, int ld, int T, int nr, int hd, int rot, const float *cs,
                     int interleave);
/* Self-attention of one sequence: QKV (T, 3d) holds q | k | v per token (head
 * j's slice is columns j dh .. (j+1) dh of each third); O (T, d) = the heads'
 * softmax(q k^T / sqrt(dh)) v side by side. causal: token i sees tokens <= i.
 * S is a (T, T) workspace. */
void tf_attention_forward(const float *QKV, int T, int d, int nh, int causal, float *S, float *O);

#endif
