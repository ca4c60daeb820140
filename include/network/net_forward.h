/* net_forward.h - the network's forward pass on a batch of whole sequences,
 * one thread (legend in net_model.h):
 *
 *   GPT-2: h = wte[ids] + wpe[0..T)                          (M, d), M = ns T
 *   ViT:   h = [cls; patches W_patch^T + b_patch] + position_embeddings
 *          (an image's P patches of K = C p p values each, row-major over the
 *          image, each as [C, p, p]: the stride-p convolution)    T = P + 1
 *   per block L:  h += c_proj(attn(ln_1 h))   softmax(q k^T / sqrt(dh)) v, causal
 *                                             for GPT-2, bidirectional for a ViT
 *                 h += mlp(ln_2 h)            dense: c_proj(act(c_fc x)); MoE: D(x)
 * A decoder (net_model.h) embeds h = embed_tokens[ids] (x Granite's
 * embedding_multiplier); its blocks' norms are RMSNorms, its attention the
 * grouped-query one with rotary embeddings (q/k norms, biases, a window as its
 * config says), its dense MLP down(silu(gate x) up x), both branches x Granite's
 * residual_multiplier; logits = norm(h) lm_head^T (/ Granite's logits_scaling),
 * the loss GPT-2's.
 *   GPT-2: logits = ln_f(h) lm_head^T (+ lm_head.bias)            (M, V)
 *          loss   = sum over each sequence's positions p < T-1 of -log softmax(logits_p)[ids_{p+1}]
 *   ViT:   logits = layernorm(h_CLS) classifier^T + bias          (ns, V)
 *          loss   = sum over the images of -log softmax(logits)[label]
 *
 * LayerNorm statistics and the loss in double, everything else float32 with
 * OpenBLAS. net_logits_ref is the same network in plain loops, one token at a
 * time, the reference the tests hold the fast path to. */
#ifndef MS_NET_FORWARD_H
#define MS_NET_FORWARD_H

#include <stdatomic.h>
#include <stdint.h>

#include "network/net_evalset.h"

/* rows of logits the head computes at once: as many as fit NET_HEAD_FLOATS
 * (16 MB: the LM head's weights are packed once per slice, so slices as large
 * as memory allows), between 64 and 512 */
#define NET_HEAD_FLOATS (4 << 20)
int net_head_rows(int V);

/* One thread's workspace for batches of up to cap rows of sequences of T tokens. */
typedef struct {
    int cap, T;
    float *x;   // (cap, d) a norm's output
    float *qkv; // (cap, 3d); a decoder's (cap, (nh + 2 nkv) hd)
    float *o;   // (cap, max(d, nh hd)) the heads' outputs side by side
    float *y;   // (cap, ff) the dense MLP's hidden units; (cap, 2ff) a gated MLP's
    float *cs;  // (T, rot) a decoder's rotary table (tf_rope_table); NULL otherwise
    float *mla; // (cap, mla width) DeepSeek's latent attention's intermediates; NULL otherwise
    float *S;   // (T, T) one head's attention weights
    float *pt;  // (P, K) a ViT's image as patches; NULL for GPT-2
    int head_rows; /* net_head_rows(V) */
    float *lg;  // (head_rows, V)
    atomic_int *cancel; /* not NULL: net_head_loss stops between row slices once it is set
                           (its sums are then partial: the caller discards them) */
} net_ws;

void net_ws_alloc(net_ws *w, const net_config *c, int cap, int T);
void net_ws_free(net_ws *w);

/* h (ns T, d) = the embedding of E's sequences s0 .. s0 + ns: wte[ids] + wpe[0..T),
 * or a ViT's CLS and patches plus the position embeddings */
void net_embed(const net_model *m, const net_evalset *E, int s0, int ns, float *h, net_ws *w);
/* h += c_proj(attn(ln_1 h)) of block L, for ns sequences of T tokens */
void net_attn_forward(const net_model *m, int L, float *h, int ns, int T, net_ws *w);
/* h += mlp(ln_2 h) of block L over M rows: the dense MLP, or the MoE layer moe
 * (an MoE block's). G (M, n): its gate weights, when not NULL; X (M, d): the
 * MLP's input ln_2 h, when not NULL (the block's own inputs, for the layer-only
 * proxy). */
void net_mlp_forward(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w,
                     float *G, float *X);
/* net_mlp_forward in two steps, for a caller that looks at (or changes) the
 * MLP's input between them: w->x (M, d) = ln_2 h of block L, then h += mlp(w->x). */
void net_mlp_input(const net_model *m, int L, const float *h, int M, net_ws *w);
void net_mlp_apply(const net_model *m, int L, const moe_model *moe, float *h, int M, net_ws *w, float *G);
/* The head and the loss of E's sequences s0 .. s0 + ns (h (ns T, d)): GPT-2's
 * ln_f, LM head and next-token cross-entropy summed over their ns (T - 1)
 * positions, a ViT's layernorm, classifier and class cross-entropy of the CLS
 * tokens, into *loss; the correct top-1 predictions (argmax, ties to the
 * smaller index) into *correct. logits (ns T, V), a ViT's (ns, V), when not NULL. */
void net_head_loss(const net_model *m, const float *h, const net_evalset *E, int s0, int ns, net_ws *w,
                   double *loss, long *correct, float *logits);

/* Reference: logits (N T, V), a ViT's (N, V), of the whole network on E, one
 * token at a time in plain loops with double sums; moe[i] replaces MoE block i
 * (NULL: m->moe). */
void net_logits_ref(const net_model *m, const moe_model *const *moe, const net_evalset *E, float *logits);

#endif
