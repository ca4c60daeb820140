/* model.h - one MoE layer (plus the optional frozen head).
 *
 * Dimension legend:
 *   n  experts            d  model width         h  expert hidden width
 *   k  top-k              s  shared experts      C  head outputs (classes)
 *   N  evaluation samples
 *
 * All parameters live in one float allocation (model->mem) carved into the
 * pointers below, llm.c style. Absent biases are stored as zeros, so every
 * pointer except fc3_* (gated activations only), the head's and the optional
 * router tensors (corr_b, shared_gate_w, out_b) is always valid; the has_*
 * flags remember what the file held. */
#ifndef MS_MODEL_H
#define MS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/ms_error.h"
#include "core/wpanel.h"

typedef enum { ROUTER_DENSE = 0, ROUTER_TOPK = 1 } moe_router;
/* relu/gelu/gelu_new: E(x) = W2 act(W1 x + b1) + b2 (gelu: the exact erf form
 * 0.5 v (1 + erf(v / sqrt 2)); gelu_new: GPT-2's tanh form 0.5 v (1 + tanh(sqrt(2/pi)
 * (v + 0.044715 v^3)))). The two gated forms read a second
 * projection W3 (fc3): silu_glu  W2 (silu(W1 x + b1) * (W3 x + b3)) + b2;
 * gpt_oss (clamped SwiGLU) with g = min(W1 x + b1, L), u = clamp(W3 x + b3, -L, L):
 * W2 ((u + 1) * g * sigmoid(1.702 g)) + b2, L = act_limit (7). */
typedef enum { ACT_RELU = 0, ACT_GELU = 1, ACT_SILU_GLU = 2, ACT_GPT_OSS = 3, ACT_GELU_TANH = 4 } moe_act;
/* Scores p from the gate logits s = W x + b: softmax over all n experts, or an
 * independent sigmoid per expert (DeepSeek-V3), or PhiMoE's sparsemixer as
 * transformers evaluates it (moe_sparsemixer in moe_kernels.h: two experts, each
 * weighted by its softmax over the logits within jitter_eps of it). */
typedef enum { SCORE_SOFTMAX = 0, SCORE_SIGMOID = 1, SCORE_SPARSEMIXER = 2 } moe_score;
/* Top-k weights: the selected scores renormalised to sum 1 (for softmax this
 * equals top-k of the logits followed by a softmax over them), or the scores
 * as they are (Switch's top-1 scaled by its probability, DeepSeek-V2). */
typedef enum { RENORM_YES = 0, RENORM_NO = 1 } moe_renorm;
/* How a group of experts is ranked in group-limited routing: by its largest
 * selection score (DeepSeek-V2) or by the sum of its two largest (V3). */
typedef enum { GROUP_MAX = 0, GROUP_TOP2_SUM = 1 } moe_group_score;
/* Bounds every source of these values shares (a native file's metadata,
 * config.json, the command line): a routed scale past 1e6 or an activation limit
 * past 1e30 only makes float32 overflow (every barrier inf). */
#define MOE_MAX_ROUTED_SCALE 1e6
#define MOE_MAX_ACT_LIMIT 1e30
/* Where a router value came from (shown by `info`). */
typedef enum { ORIGIN_DEFAULT = 0, ORIGIN_FILE, ORIGIN_CONFIG, ORIGIN_CLI } moe_origin;
/* The router values whose origin is recorded (index into moe_config.origin). */
typedef enum {
    RP_K = 0, RP_SCORE, RP_RENORM, RP_SCALE, RP_GROUPS, RP_TOPK_GROUP, RP_GROUP_SCORE,
    RP_ACT, RP_LIMIT, RP_COUNT
} moe_router_param;

/* Every field is meaningful at zero: a zero-initialised config is the native
 * model (softmax scores, renormalised top-k, no groups, scale 1, shared experts
 * of width h, no extra tensors); moe_alloc turns scale 0 into 1, hs 0 into h and
 * act_limit 0 into 7. Routing of one sample (moe_route):
 *   p = score(s)                      s = W x + b, softmax or sigmoid
 *   q = p + e                         e: selection-only correction bias (V3)
 *   groups (n_group > 1): rank each of the n_group groups of n/n_group experts
 *     by group_score(q), keep topk_group of them, set q = 0 on the others
 *   S = the k largest q (ties to the smaller index)
 *   g_i = p_i / (sum_S p + renorm_eps) if renormalised, else p_i; times scale
 * Dense routing is g = p over all experts. The layer output is then
 *   D(x) = sig(v.x) * sum_j E^sh_j(x) + sum_i g_i E_i(x) + o
 * (sig(v.x) only with shared_gated, o only with has_out_bias). */
typedef struct {
    int n, d, h, k, s, C; /* C = 0: no head (layer-only mode) */
    int hs;                /* shared experts' hidden width (0: h) */
    moe_router router;     /* k is meaningful only for ROUTER_TOPK */
    moe_score score;
    moe_renorm renorm;
    float renorm_eps;      /* added to the renormalising sum (DeepSeek-V3: 1e-20) */
    float jitter_eps;      /* sparsemixer's router_jitter_noise (PhiMoE: 0.01) */
    float scale;           /* routed_scaling_factor on the routed experts (0: 1) */
    int n_group, topk_group; /* group-limited top-k when n_group > 1 */
    moe_group_score group_score;
    int has_corr_bias;     /* selection-only bias e (n), permutes with the gate row */
    int shared_gated;      /* shared experts scaled by sigmoid(v . x), v (d) */
    moe_act act;
    float act_limit;       /* gpt_oss clamp L (0: 7) */
    int has_out_bias;      /* o (d) added to the layer output (JetMoE) */
    int residual;          /* z = x + D(x) when 1; real families: 0 (the module's output) */
    int has_gate_bias, has_expert_bias, has_norm, has_head;
    char family[24];       /* "native", "mixtral", ...; "" means native */
    unsigned char origin[RP_COUNT]; /* moe_origin of each router value */
} moe_config;

typedef struct {
    float *fc1_w; // (h, d)
    float *fc1_b; // (h)
    float *fc2_w; // (d, h)
    float *fc2_b; // (d)
    float *fc3_w; // (h, d), gated activations only, else NULL
    float *fc3_b; // (h),    gated activations only, else NULL
    /* a mapped layer's (moe_alloc_mapped) weights where the checkpoint stores them, in
     * its dtype, the fc*_w above NULL: W1 (h, d), W2 (d, h), W3 (h, d) (core/wpanel.h) */
    wref w1, w2, w3;
} moe_expert;

typedef struct {
    char *key, *value;
} moe_meta;

typedef struct {
    moe_config cfg;
    char *path;        /* the file it came from (for messages), may be NULL */
    char *layer;       /* prefix, e.g. "moe" */
    float *gate_w;     // (n, d)
    float *gate_b;     // (n)
    float *corr_b;     // (n) selection-only bias, NULL without has_corr_bias
    moe_expert *experts; // n of them
    moe_expert *shared;  // s of them, hidden width hs
    float *shared_gate_w; // (d) v of sig(v . x), NULL unless shared_gated
    float *out_b;      // (d) added to D(x), NULL without has_out_bias
    float *norm_w;     // (d) LayerNorm gamma, NULL without LayerNorm
    float *norm_b;     // (d)
    float *head_w;     // (C, d), NULL without head
    float *head_b;     // (C)
    float *mem;        /* the one allocation */
    size_t nparams;    /* floats in mem */
    moe_meta *meta;    /* __metadata__ other than the moescope.* keys we parse */
    int nmeta;
} moe_model;

/* Does the activation read fc3 (silu_glu, gpt_oss)? */
int moe_act_glu(moe_act a);
/* The config shared experts are carved and computed with: c with h = hs. */
moe_config moe_shared_config(const moe_config *c);
/* The family name ("native" for ""). */
const char *moe_family(const moe_config *c);
/* moescope's own layer read without routing metadata (moescope.router) nor
 * --top-k: evaluated as the default, a dense softmax over every expert with a
 * residual, which a top-k model is not: the commands say so. */
int moe_router_defaulted(const moe_config *c);
const char *moe_origin_name(moe_origin o);
const char *moe_score_name(moe_score s);
/* The routing in words, e.g. "softmax scores, top-2 of 8, renormalised (=
 * softmax over the top-2 logits)", into buf (len bytes). */
void moe_router_describe(const moe_config *c, char *buf, size_t len);

/* floats one expert takes: fc1 (h,d)+(h), fc2 (d,h)+(d), [fc3 (h,d)+(h)] */
size_t moe_expert_size(const moe_config *c);
/* The floats of each part of a layer, in the order of its one allocation
 * (moe_alloc): what info counts and what the allocation carves. */
typedef struct {
    size_t gate;        /* router (n, d) + bias (n), zeros when the file has none */
    size_t corr;        /* the router's selection (correction) bias (n), or 0 */
    size_t expert;      /* one routed expert (moe_expert_size) */
    size_t experts;     /* the n routed experts */
    size_t shared;      /* the s shared experts (their width hs) */
    size_t shared_gate; /* the shared experts' sigmoid gate (d), or 0 */
    size_t out_bias;    /* the output bias (d), or 0 */
    size_t norm;        /* the head's LayerNorm (d) + (d), or 0 */
    size_t head;        /* the head (C, d) + (C), or 0 */
    size_t total;       /* the floats moescope holds */
    size_t stored;      /* of them, what the layer's tensors hold: total without the zero
                         * biases moescope keeps where the layout has none (gate, experts) */
} moe_layout;
void moe_layout_of(const moe_config *c, moe_layout *l);
/* Point e's tensors into p (moe_expert_size(c) floats, in the order above);
 * fc3_* are NULL unless silu_glu. Returns the pointer just past the expert. */
float *moe_expert_carve(moe_expert *e, const moe_config *c, float *p);
/* floats of one expert's biases alone: fc1 (h), fc2 (d), [fc3 (h)] */
size_t moe_expert_bias_size(const moe_config *c);
/* Point e's biases into p (moe_expert_bias_size(c) floats), its weights NULL: a mapped
 * expert, its w1, w2, w3 set by the caller. Returns the pointer just past them. */
float *moe_expert_carve_biases(moe_expert *e, const moe_config *c, float *p);
/* Copy expert src into dst (both carved for the same config); a mapped src into dst
 * carved for its biases (moe_expert_carve_biases): they, and its w1, w2, w3 (the same
 * mapping, views or mixes). */
void moe_expert_copy(moe_expert *dst, const moe_expert *src, const moe_config *c);

/* Allocate a zeroed model for cfg (pointers carved, meta empty). */
void moe_alloc(moe_model *m, const moe_config *cfg);
/* moe_alloc without the routed experts' floats (experts[e] all NULL): a layer
 * whose experts are read one at a time through an expert_source. */
void moe_alloc_shell(moe_model *m, const moe_config *cfg);

/* moe_alloc_shell with the routed experts' biases (zeroed) in the allocation: a layer
 * whose routed weights stay in the checkpoint's mapping (moe_expert's w1, w2, w3), only
 * evaluated (moe_forward), never changed, copied or saved. */
void moe_alloc_mapped(moe_model *m, const moe_config *cfg);
/* moe_alloc_mapped with the shared experts' weights mapped too (only their biases in
 * the allocation; moe_expert's w1, w2, w3): a network's MoE block, only evaluated,
 * aligned as views and mixed (moe_interpolate); moe_shared_to_floats before anything
 * that reads or changes the shared experts' floats. */
void moe_alloc_mapped_shared(moe_model *m, const moe_config *cfg);
/* Are m's routed experts' weights mapped? */
int moe_is_mapped(const moe_model *m);
/* Are m's shared experts' weights mapped (moe_alloc_mapped_shared)? */
int moe_shared_mapped(const moe_model *m);

/* Routed experts read on demand: read(ctx, e, parts, dst) fills the parts of dst
 * (carved by the caller with moe_expert_carve) that parts names (EXPERT_W1: fc1
 * weight and bias, EXPERT_W2: fc2's, EXPERT_W3: fc3's) with expert e's floats;
 * the other parts may hold anything after (a family stream's first read scans
 * every expert through dst). read NULL: none (the model holds its experts). */
enum { EXPERT_W1 = 1, EXPERT_W2 = 2, EXPERT_W3 = 4, EXPERT_ALL = 7 };
typedef struct {
    int (*read)(void *ctx, int e, unsigned parts, moe_expert *dst, ms_err *err);
    void *ctx;
} expert_source;
/* A mapped layer's routed expert e (its weights decoded, views and mixes formed, its
 * biases copied) into dst, carved by moe_expert_carve; an expert_source's read. */
int moe_mapped_read(void *ctx, int e, unsigned parts, moe_expert *dst, ms_err *err);
/* m's experts read one at a time when m is mapped ({moe_mapped_read, m}), else
 * {NULL, NULL}: the layer's own floats */
expert_source moe_mapped_source(const moe_model *m);
/* Routed expert e of m as floats: m's own when in floats, else decoded into buf
 * (moe_expert_size floats, carved into *tmp): what code that reads fc*_w takes */
const moe_expert *moe_expert_floats(const moe_model *m, int e, moe_expert *tmp, float *buf);
/* Shared expert j of m as floats: m's own, or decoded into buf (moe_expert_size of
 * moe_shared_config floats, carved into *tmp) when mapped */
const moe_expert *moe_shared_floats(const moe_model *m, int j, moe_expert *tmp, float *buf);
void moe_free(moe_model *m);
/* Deep copy (parameters, metadata, path, layer). */
void moe_clone(moe_model *dst, const moe_model *src);

/* Do A and B have the same architecture (n, d, h, s, router, k, act, residual,
 * head presence and size)? -1 with a message naming both files otherwise. */
int moe_check_compatible(const moe_model *a, const moe_model *b, ms_err *err);
/* Are the heads (norm + linear) of A and B identical? 1 yes, 0 no. */
int moe_heads_equal(const moe_model *a, const moe_model *b);

/* out = (1-t) a + t b on every parameter (out must be allocated like a). Mapped
 * layers (a and b both, out a clone of a): the floats interpolated, the routed
 * (and mapped shared) weights made mixes of a's and b's (wp_mix: formed per panel inside the
 * products, the same values), b kept alive and unchanged while out is used. */
void moe_interpolate(moe_model *out, const moe_model *a, const moe_model *b, double t);
/* Do a and b hold the same values, bit for bit (their floats, and a mapped layer's
 * routed and shared weights' stored bytes)? 1 yes. */
int moe_same(const moe_model *a, const moe_model *b);
/* A deep copy with every weight in floats (a mapped layer's routed and shared weights decoded,
 * its views and mixes formed): what moe_clone gives a layer already in floats. */
void moe_clone_floats(moe_model *dst, const moe_model *src);
/* A deep copy with the shared experts in floats (decoded when mapped), the routed ones
 * as src holds them (the same mapping) */
void moe_clone_shared_floats(moe_model *dst, const moe_model *src);
/* m's mapped shared experts decoded into floats in place (one layer's worth): what
 * code that reads or changes their fc*_w takes */
void moe_shared_to_floats(moe_model *m);
/* m's shared experts' mapped weights (views, mixes: moe_interpolate's) decoded into buf
 * (s experts of moe_shared_config, moe_expert_size floats each) and read from there by
 * the products, as a float layer's whole (their w1, w2, w3 kept: m is mixed again the
 * same way, then decoded again; m's allocation keeps their biases) */
void moe_shared_decode(moe_model *m, float *buf);

const char *moe_router_name(moe_router r);
const char *moe_act_name(moe_act a);
const char *moe_meta_get(const moe_model *m, const char *key); /* NULL if absent */
void moe_meta_set(moe_model *m, const char *key, const char *value);
/* Replace dst's metadata by a copy of src's, in one pass (linear in the keys). */
void moe_meta_copy(moe_model *dst, const moe_model *src);

#endif
