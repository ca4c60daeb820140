/* net_config.h - a network checkpoint's hyper-parameters: config.json of a
 * Hugging Face transformer whose feed-forward block(s) became MoE layers,
 * named by its "moe" object, or a Hugging Face MoE decoder. The architectures:
 *
 * GPT-2 (model_type "gpt2", a causal language model):
 *   n_embd d, n_layer NL, n_head nh (d % nh == 0), n_positions P, vocab_size V,
 *   n_inner (the dense MLPs' width, null or absent: 4d),
 *   layer_norm_epsilon (1e-5), activation_function of the dense MLPs
 *   ("gelu_new": the tanh form, the default; "gelu": the erf form),
 *   tie_word_embeddings (true: the LM head is wte)
 * ViT (model_type "vit", an image classifier as ViTForImageClassification):
 *   hidden_size d, num_hidden_layers NL, num_attention_heads nh,
 *   intermediate_size (the dense MLPs' width, 4d when absent), image_size
 *   (square images), patch_size p (image_size % p == 0), num_channels C (3),
 *   layer_norm_eps (1e-12, as Hugging Face's), hidden_act ("gelu", the erf
 *   form, the default; "gelu_new"; "relu"), qkv_bias (true), the classes from
 *   num_labels or id2label (else classifier.weight's rows)
 * both:
 *   "moe": {"layers": [..], "num_experts", "top_k", "router", "num_shared_experts",
 *           "expert_activation", "expert_intermediate_size"}
 *
 * decoders (model_type mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe: a causal
 * language model as Hugging Face's <Family>ForCausalLM):
 *   hidden_size d, num_hidden_layers NL, num_attention_heads nh,
 *   num_key_value_heads (nh; nh % it == 0), head_dim (d / nh), intermediate_size
 *   (the dense MLPs' width), max_position_embeddings P, vocab_size V, rms_norm_eps,
 *   hidden_act ("silu"), rope_theta (or rope_parameters.rope_theta), rope_scaling
 *   (net_rope.h: default, dynamic, linear, llama3, yarn; any other kind refused by name),
 *   partial_rotary_factor (1), attention_bias, sliding_window (Mixtral, PhiMoE: every
 *   block when set; Qwen only with use_sliding_window: Qwen3-MoE every block, Qwen2-MoE
 *   the blocks layer_types names, else the even blocks below max_window_layers (28)),
 *   tie_word_embeddings (false);
 *   OLMoE's clip_qkv; Qwen's mlp_only_layers and decoder_sparse_step; Granite's
 *   embedding_multiplier, residual_multiplier, attention_multiplier, logits_scaling.
 *   deepseek_v2, deepseek_v3: the heads' shape from q_lora_rank (null: q_proj),
 *   kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim (the rotated dims), v_head_dim;
 *   rope_interleave (V3; V2 always pairs adjacent dims); first_k_dense_replace.
 *   gpt_oss: layer_types ("sliding_attention" | "full_attention" per block; default
 *   alternating, sliding first), sliding_window (128), attention_bias (true).
 *   jetmoe: hidden_size, num_hidden_layers, num_key_value_heads nkv (16), kv_channels
 *   (the head width, 128), num_local_experts (8) and num_experts_per_tok k (2) of the
 *   attention experts too, num_attention_heads (nkv k when absent; another value
 *   refused), activation_function ("silu"), rms_norm_eps (1e-6: the final norm's; the
 *   blocks' two norms use RMSNorm's own 1e-6), tie_word_embeddings (true), rope_theta.
 *   The MoE blocks' router keys (num_experts_per_tok, norm_topk_prob, ...) are
 *   read by the family (family_io.c).
 *
 * Every number is validated (an integer in range, named in the error with the
 * file); the MoE layers' own keys are read by the family (family_io.c), which
 * checks them against the tensors. */
#ifndef MS_NET_CONFIG_H
#define MS_NET_CONFIG_H

#include "io/checkpoint.h"
#include "model/model.h"

#define NET_MAX_LAYERS 256
#define NET_MAX_ROT 2048 /* rotated dims per head */

/* The architectures, one row each of net_config.c's table: every difference
 * between them is a field of the row (a name, or which form of an operation it
 * uses), and every operation switches on that field in one place. */
typedef enum {
    NET_GPT2,
    NET_VIT,
    NET_MIXTRAL,
    NET_QWEN2_MOE,
    NET_QWEN3_MOE,
    NET_OLMOE,
    NET_GRANITEMOE,
    NET_DEEPSEEK_V2,
    NET_DEEPSEEK_V3,
    NET_GPT_OSS,
    NET_PHIMOE,
    NET_JETMOE,
    NET_ARCH_COUNT
} net_arch;

/* the forms of the operations (net_forward.c switches on them) */
typedef enum { NET_NORM_LAYER, NET_NORM_RMS } net_norm;             /* LayerNorm with bias; RMSNorm */
typedef enum { NET_EMBED_LEARNED, NET_EMBED_PATCHES, NET_EMBED_TOKENS } net_embed_kind;
/* learned positions added to wte (GPT-2); a ViT's patches and CLS; token embeddings
 * alone (decoders: the positions enter as rotary embeddings) */
typedef enum { NET_ATTN_MHA, NET_ATTN_ROPE, NET_ATTN_MLA, NET_ATTN_MOA } net_attn_kind;
/* MHA: q|k|v of d each, learned positions; ROPE: grouped-query q|k|v with rotary
 * embeddings and the row's q/k norms; MLA: DeepSeek's multi-head latent attention;
 * MOA: JetMoE's mixture of attention experts (each token's queries and output
 * projection are its top-k experts', k, v one kv_proj shared by all) */
typedef enum { NET_MLP_ACT, NET_MLP_GLU } net_mlp_kind;   /* c_proj(act(c_fc x)); down(silu(gate x) up x) */
typedef enum { NET_TARGET_NEXT, NET_TARGET_CLASS } net_target; /* next token; the CLS token's class */
typedef enum { NET_QKN_NONE, NET_QKN_HEAD, NET_QKN_WHOLE } net_qk_norm; /* per head; the whole projection */
typedef enum { NET_SPARSE_LISTED, NET_SPARSE_ALL, NET_SPARSE_STEP, NET_SPARSE_FIRST_K } net_sparse;
/* which blocks are MoE: config.json's "moe.layers" (moescope's GPT-2 / ViT); every
 * block; Qwen's mlp_only_layers and decoder_sparse_step; DeepSeek's blocks from
 * first_k_dense_replace on */

/* One architecture: its names (tensors, config.json keys) and its operations. */
typedef struct {
    const char *model_type; /* config.json's */
    const char *probe;      /* a tensor every such network has */
    const char *block;      /* block L's tensor prefix, a printf format with %d */
    const char *moe;        /* an MoE block's layer prefix, relative to the block: "mlp" */
    const char *gate;       /* its router's weight, relative to the layer prefix */
    const char *dense;      /* a dense block's first MLP weight, relative to the block */
    int family;             /* the family of its MoE blocks (FAM_GPT2, FAM_MIXTRAL, ...) */
    /* config.json's names of d, NL, nh, the dense width, the norms' eps, activation */
    const char *k_d, *k_layers, *k_heads, *k_ff, *k_eps, *k_act;
    const char *k_pos;      /* of the positions: "n_positions", "max_position_embeddings" */
    const char *head;       /* the head's weight: "lm_head.weight", "classifier.weight" */
    net_norm norm;
    net_embed_kind embed;
    net_attn_kind attn;
    net_mlp_kind mlp;
    net_target target;
    net_qk_norm qk_norm;
    net_sparse sparse;
    int qkv_bias;           /* q, k, v projections carry biases (Qwen2-MoE) */
    int multipliers;        /* Granite's embedding / residual / attention multipliers, logits scaling */
    int sinks;              /* GPT-OSS: per-head sink logits (self_attn.sinks), per-layer windows
                               (layer_types), attention_bias true by default */
    int eval_only;          /* a network only beside a network's evaluation set (input_ids): a real
                               Hugging Face checkpoint, without one, opens one MoE layer at a time */
} net_arch_desc;

typedef struct {
    net_arch arch;
    int d, nlayer, nhead;
    int npos;            /* tokens per sequence: GPT-2's n_positions (at most), a ViT's P + 1 (exactly) */
    int vocab;           /* the head's outputs: GPT-2's vocab_size V, a ViT's classes */
    int ff;              /* the dense MLPs' width: n_inner / intermediate_size, default 4d */
    double eps;          /* layer_norm_epsilon / layer_norm_eps / rms_norm_eps */
    double block_eps;    /* the blocks' norms' eps: eps, JetMoE's 1e-6 (its blocks' RMSNorms
                            take no eps from config.json) */
    moe_act act;         /* the dense MLPs' activation */
    int tied;            /* tie_word_embeddings */
    int image, patch, chans; /* ViT: image_size, patch_size, num_channels */
    int npatch;          /* ViT: (image_size / patch_size)^2 */
    int qkv_bias;        /* ViT: query/key/value have biases; decoders: q, k, v do */
    /* decoders (NET_ATTN_ROPE): */
    int nkv, hd;         /* key/value heads (nhead % nkv == 0), the head width (of q and k) */
    int kv_tiled;        /* query head j reads kv head j % nkv (JetMoE's repeat), not j / (nh / nkv) */
    int moa_n, moa_k;    /* JetMoE: attention experts and each token's top-k of them (nh = nkv moa_k) */
    int vd;              /* the width of a head's v (DeepSeek's v_head_dim; hd otherwise) */
    int q_lora, kv_lora, nope; /* DeepSeek's q_lora_rank (0: q_proj), kv_lora_rank, qk_nope_head_dim */
    int interleave;      /* rotary pairs 2i, 2i + 1 (DeepSeek) instead of i, i + rot/2 */
    int o_bias;          /* o_proj carries a bias (attention_bias) */
    int rot;             /* the rotated dims of a head (even, <= hd) */
    double theta;        /* rope_theta */
    char rope_kind[16];  /* rope_scaling's kind: "default", "linear", "yarn", ... (net_rope.h) */
    double inv_freq[NET_MAX_ROT / 2]; /* pair i turns by p inv_freq[i] at position p */
    double rope_af;      /* the attention factor multiplying cos and sin (yarn's; 1 otherwise) */
    /* longrope: sequences longer than rope_orig tokens turn by inv_freq_long and
     * rope_af_long instead (rope_orig 0: one set for every length; net_rope_at) */
    int rope_orig;
    double inv_freq_long[NET_MAX_ROT / 2], rope_af_long;
    int lm_bias;         /* decoders: lm_head carries a bias (PhiMoE's lm_head_bias) */
    double rope_factor, rope_mscale_all; /* yarn's factor and mscale_all_dim (DeepSeek's scale) */
    double clip_qkv;     /* OLMoE: q, k, v clamped to +-clip_qkv (0: not) */
    int window;          /* sliding window: query i sees keys i - window < j <= i (0: none) */
    int layer_window[NET_MAX_LAYERS]; /* block L's window: window or 0 (GPT-OSS's full layers) */
    double emb_mult, res_mult, logit_div; /* Granite's multipliers (1 otherwise) */
    double attn_scale;   /* the attention's scale: 1/sqrt(hd), Granite's attention_multiplier */
    int nmoe;            /* MoE blocks, ascending in moe_layers */
    int moe_layers[NET_MAX_LAYERS];
    int moe_of[NET_MAX_LAYERS]; /* block L -> its index in moe_layers, -1 for a dense block */
} net_config;

const net_arch_desc *net_arch_of(net_arch a);
/* the rule that makes a block of A's networks MoE or dense, as a message names it */
const char *net_arch_sparse_rule(const net_arch_desc *A);

/* The row of a model_type ("gpt2", "mixtral", ...), -1 if none. */
int net_arch_find(const char *model_type);
/* "gpt2, vit, mixtral, ..." for messages */
const char *net_arch_names(void);
/* Why a MoE family moescope opens layer by layer is no network here ("" if none said). */
const char *net_arch_layer_only_why(const char *model_type);
/* Is c a network checkpoint: config.json whose model_type is a row of the table,
 * with the row's probe tensor (transformer.wte.weight, model.embed_tokens.weight,
 * ...)? (A bare MoE layer file is not.) */
int net_is_network(const ckpt *c);
/* Its architecture (a net_arch), -1 if it is none. */
int net_ckpt_arch(const ckpt *c);
/* The same for a checkpoint argument (opens and closes it; 0 when it cannot be opened). */
int net_path_is_network(const char *path);
/* The architecture of a network checkpoint argument, -1 if it is none. */
int net_path_arch(const char *path);
/* config.json of c into nc, validated (a ViT's classes 0 when config.json does
 * not say them: net_load takes them from the classifier). */
int net_config_read(const ckpt *c, net_config *nc, ms_err *err);

#endif
