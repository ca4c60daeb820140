/* moe_kernels.h - the arithmetic of one expert and of top-k selection, shared
 * by every path that computes a layer: the evaluator (eval, curve, align's
 * checks), the landscape's precompute and fused kernel, and diagnose. Internal
 * to the library; the tests include it to pin the rules down.
 *
 * One definition of each rule, so two paths cannot disagree on a number:
 *   - activations in float32: relu, the exact-erf GELU
 *     0.5 v (1 + erf(v / sqrt 2)), GPT-2's tanh GELU (gelu_new), silu for the GLU gate, and the two gated
 *     forms (silu_glu, gpt_oss's clamped SwiGLU);
 *   - the expert forward on a batch, Y (m, d) = E(X), two or three sgemm;
 *   - the top-k tie rule: among equal scores the smaller expert index ranks
 *     first (MOE_RANKS_BEFORE), in the scalar selection below and in the
 *     landscape's lane-parallel selection alike. */
#ifndef MS_MOE_KERNELS_H
#define MS_MOE_KERNELS_H

#include <math.h>
#include <stdatomic.h>

#include "model/model.h"

/* Does expert (si, i) rank before expert (sj, j)? Larger score first; equal
 * scores: the smaller index first. Plain operators only, so the same macro
 * works on ints and floats and on GCC vector types (where it yields a lane
 * mask). */
#define MOE_RANKS_BEFORE(si, i, sj, j) (((si) > (sj)) | (((si) == (sj)) & ((i) < (j))))

/* act(v) for relu, gelu and gelu_new; for the gated activations the gate half silu(v). */
static inline float moe_act_scalar(moe_act a, float v) {
    switch (a) {
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case ACT_GELU_TANH: // GPT-2's gelu_new
        return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    default: return v / (1.0f + expf(-v)); // silu
    }
}

/* A gated activation of the pre-activations a = W1 x + b1 and u = W3 x + b3:
 * silu_glu: silu(a) * u; gpt_oss: with g = min(a, L) and u clamped to
 * [-L, L], (u + 1) * g * sigmoid(1.702 g), L = c->act_limit (0 means 7). */
static inline float moe_act_gated(const moe_config *c, float a, float u) {
    if (c->act == ACT_GPT_OSS) {
        float L = c->act_limit > 0.0f ? c->act_limit : 7.0f;
        float g = a < L ? a : L;
        u = u < -L ? -L : u > L ? L : u;
        return (u + 1.0f) * (g / (1.0f + expf(-1.702f * g)));
    }
    return moe_act_scalar(ACT_SILU_GLU, a) * u;
}

/* y (d) += b, and dr (d) += g * y: vector loops with the scalar loops' values. */
void moe_row_add(float *restrict y, const float *restrict b, int d);
void moe_row_axpy(float *restrict dr, float g, const float *restrict y, int d);

/* H (m, h) <- act(H + b1) in place; for gated activations
 * act(H + b1, H3 + b3) (H3 (m, h) holds X W3^T, NULL otherwise). */
void moe_hidden_act(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m);

/* Y (m, d) = W2 act(H + b1) + b2 (or the gated form) from the first layer's
 * products H = X W1^T and H3 = X W3^T (m, h), which it overwrites: the second
 * half of moe_expert_forward. */
void moe_expert_finish(const moe_expert *e, const moe_config *c, float *H, const float *H3, int m, float *Y);

/* Y (m, d) = E(X) for X (m, d): W2 act(W1 x + b1) + b2 or the gated form.
 * H and H3 are (m, h) workspaces (H3 only for gated activations, else it may
 * be NULL). c->h is the expert's hidden width (moe_shared_config for shared
 * experts). */
void moe_expert_forward(const moe_expert *e, const moe_config *c, const float *X, int m, float *H,
                        float *H3, float *Y);

/* moe_expert_forward in chunks of MOE_EXPERT_ROWS rows, stop (NULL: never) polled
 * between them: the same products whether a caller can stop it or not, so the same
 * bits. H and H3 need only min(m, MOE_EXPERT_ROWS) rows. 1: stopped, Y incomplete.
 * 128 rows: a GPT-2-small expert's chunk is 16 ms of one core (256: 29 ms, which a
 * loaded machine stretched past the explorer's 100 ms for q), 8-15% more CPU than
 * one product of 2048 rows (the weights packed per chunk). */
#define MOE_EXPERT_ROWS 128
int moe_expert_forward_until(const moe_expert *e, const moe_config *c, const float *X, int m, float *H,
                             float *H3, float *Y, const atomic_int *stop);

/* g (n) = PhiMoE's sparsemixer at evaluation (transformers' sparsemixer, not
 * training) for the logits s (n), n >= 2: i1 = argmax s (ties to the smaller
 * index); the logits s_j with (s_i1 - s_j) / max(|s_j|, s_i1) > 2 eps are masked
 * out, and g_i1 = the softmax of the rest at i1; then i2 = the argmax of the
 * others, masked alike from s_i2 (i1 stays out), g_i2 its softmax there. Every
 * other g is 0. Sums in double. */
void moe_sparsemixer(const float *s, int n, float eps, float *g);

/* W (n, d), b (n): m's gate as the routing reads it. Under softmax scores a
 * common translation of every gate row and of the bias changes no logit
 * difference, so neither the top-k choice nor the softmax weights: the routing
 * reads the gate centred over the experts, W_i - mean_m W_m and b_i - mean_m b_m
 * (the means in double), the translation removed before any dot product. A
 * checkpoint carrying a large translation (scramble --translate-scale 20) then
 * routes as the untranslated one up to the rounding of its stored weights,
 * instead of losing in its float32 logits the digits that separate two
 * near-tied experts. Sigmoid scores and sparsemixer (which masks by |s|) have
 * no translation symmetry (moe_gate_centring_valid): the gate as it is. Every
 * path that routes reads its logits from this gate: moe_gate_logits, the
 * evaluator and its plain reference, the landscape's precompute. */
void moe_gate_routing(const moe_model *m, float *W, float *b);

/* moe_interpolate for evaluation: out = (1-t) a + t b, but its gate mixed from
 * a's and b's gates as the routing reads them (moe_gate_routing), so a
 * translation either carries never enters the float32 mix (where it would
 * round away the same digits). The same function at t as moe_interpolate's;
 * the curves and landscapes evaluate this one. Files written (merge) keep
 * moe_interpolate's plain mix. */
void moe_interpolate_routed(moe_model *out, const moe_model *a, const moe_model *b, double t);

/* S (m, n) = X W^T + b for X (m, d), W (n, d), b (n) from moe_gate_routing. */
void moe_gate_logits_with(const float *W, const float *b, int n, int d, const float *X, int B, float *S);

/* S (m, n), the gate logits of X (m, d) under m's gate as the routing reads
 * it (moe_gate_routing, made on each call: callers with many calls on one
 * model make it once and use moe_gate_logits_with). */
void moe_gate_logits(const moe_model *m, const float *X, int B, float *S);

/* sel (k) = the indices of the k largest of s (n), largest first, ties to the
 * smaller index (MOE_RANKS_BEFORE), 1 <= k <= n: the one top-k of moescope
 * (routing, group selection, diagnose's routing shares). */
void moe_topk(const float *s, int n, int k, int *sel);

/* Is the k-th largest score of s (n) equal to the (k+1)-th? Then which
 * experts are selected depends on their indices, so reordering the experts
 * changes the layer's function on this input (0 when k >= n). */
int moe_topk_boundary_tie(const float *s, int n, int k);

#endif
