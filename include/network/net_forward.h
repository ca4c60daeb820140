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
 * config says; JetMoE's queries and output projection each token's top-k attention
 * experts', its kv heads tiled), its dense MLP down(silu(gate x) up x), both branches x Granite's
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
    float *moa; // (cap, moa width) JetMoE's attention experts: each row's routing, gathered rows; NULL otherwise
    float *pt;  // (P, K) a ViT's image as patches; NULL for GPT-2
    int head_rows; /* net_head_rows(V) */
    float *lg;  // (head_rows, V)
    double *rl; // (head_rows) each logit row's loss
    char *rh;   // (head_rows) each logit row's top-1 hit
    atomic_int *stop; /* an evaluation's cancel (net_eval.c): an MoE block stops between its
                         experts, the other products (q | k | v, the output projection, a
                         dense MLP's two, the head's columns) between slices of a few
                         milliseconds, the same bits as whole; their output then discarded;
                         NULL: never, nothing sliced */
} net_ws;

void net_ws_alloc(net_ws *w, const net_config *c, int cap, int T);
/* the floats per row of w->y: ff, or 2 ff (gate | up) for a gated MLP; a panel
 * of rows from r on owns y's rows from r on at this width */
size_t net_ws_y_width(const net_config *c);
/* the floats net_ws_alloc allocates for cap rows of T tokens (the memory limit's count) */
double net_ws_floats(const net_config *c, int cap, int T);
void net_ws_free(net_ws *w);

/* h (ns T, d) = the embedding of E's sequences s0 .. s0 + ns: wte[ids] + wpe[0..T),
 * or a ViT's CLS and patches plus the position embeddings */
void net_embed(const net_model *m, const net_evalset *E, int s0, int ns, float *h, net_ws *w);
/* h += c_proj(attn(ln_1 h)) of block L over ns sequences of T tokens (h (ns T,
 * d)), in three steps whose pieces are independent, so that any thread may
 * compute any piece with the same bits (net_eval.c spreads them):
 *   net_attn_in   rows r0 .. r0 + M: w->qkv = the heads' q | k | v of ln_1 h
 *                 (a decoder's rotated for positions (r0 + r) % T)
 *   net_attn_head sequence s's head j: its columns of w->o; S a (T, T) workspace
 *   net_attn_out  rows r0 .. r0 + M: h += o_proj(w->o) */
void net_attn_in(const net_model *m, int L, const float *h, int r0, int M, int T, const net_ws *w);
void net_attn_head(const net_model *m, int L, int s, int j, int T, const net_ws *w, float *S);
void net_attn_out(const net_model *m, int L, float *h, int r0, int M, const net_ws *w);
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
 * ln_f, LM head and next-token cross-entropy of their ns (T - 1) positions, a
 * ViT's layernorm, classifier and class cross-entropy of the CLS tokens; the
 * top-1 hits (argmax, ties to the smaller index). Its logit rows (ns T, a ViT's
 * ns) go in slices of at most w->head_rows rows r0 .. r0 + rows, each in steps
 * whose pieces are independent (any thread, the same bits):
 *   net_head_norm   w->x (rows, d) = the final norm of the slice's rows
 *   net_head_cols   column slice sl (NET_HEAD_COLS wide, net_head_slices(V) of
 *                   them) of lg (rows, V) = x lm_head^T (+ bias, / logits_scaling)
 *   net_head_losses rows ra .. rb of the slice: w->rl[r] = row r's loss (0 at a
 *                   sequence's last token), w->rh[r] its hit
 * The caller sums w->rl in row order. */
#define NET_HEAD_COLS 4096
int net_head_slices(int V);
void net_head_norm(const net_model *m, const float *h, int T, int r0, int rows, const net_ws *w);
void net_head_cols(const net_model *m, int rows, int sl, const net_ws *w, float *lg);
void net_head_losses(const net_model *m, const net_evalset *E, int s0, int r0, int ra, int rb, const float *lg,
                     const net_ws *w);

/* Reference: logits (N T, V), a ViT's (N, V), of the whole network on E, one
 * token at a time in plain loops with double sums; moe[i] replaces MoE block i
 * (NULL: m->moe). */
void net_logits_ref(const net_model *m, const moe_model *const *moe, const net_evalset *E, float *logits);

#endif
