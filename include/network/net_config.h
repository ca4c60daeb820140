/* net_config.h - a network checkpoint's hyper-parameters: config.json of a
 * Hugging Face transformer whose feed-forward block(s) became MoE layers,
 * named by its "moe" object. Two architectures:
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
 * Every number is validated (an integer in range, named in the error with the
 * file); the MoE layers' own keys are read by the gpt2 / vit family
 * (family_io.c), which checks them against the tensors. */
#ifndef MS_NET_CONFIG_H
#define MS_NET_CONFIG_H

#include "io/checkpoint.h"
#include "model/model.h"

#define NET_MAX_LAYERS 256

typedef enum { NET_GPT2, NET_VIT } net_arch;

/* What the two architectures name differently: tensors and config.json keys. */
typedef struct {
    const char *model_type; /* config.json's */
    const char *probe;      /* a tensor every such network has */
    const char *block;      /* block L's tensor prefix, a printf format with %d */
    const char *moe;        /* an MoE block's layer prefix, relative to the block: "mlp" */
    const char *dense;      /* a dense block's first MLP weight, relative to the block */
    int family;             /* the family of its MoE blocks (FAM_GPT2, FAM_VIT) */
    /* config.json's names of d, NL, nh, the dense width, LayerNorm eps, activation */
    const char *k_d, *k_layers, *k_heads, *k_ff, *k_eps, *k_act;
    const char *head;       /* the head's weight: "lm_head.weight", "classifier.weight" */
} net_arch_desc;

typedef struct {
    net_arch arch;
    int d, nlayer, nhead;
    int npos;            /* tokens per sequence: GPT-2's n_positions (at most), a ViT's P + 1 (exactly) */
    int vocab;           /* the head's outputs: GPT-2's vocab_size V, a ViT's classes */
    int ff;              /* the dense MLPs' width: n_inner / intermediate_size, default 4d */
    double eps;          /* layer_norm_epsilon / layer_norm_eps */
    moe_act act;         /* the dense MLPs' activation */
    int tied;            /* GPT-2's tie_word_embeddings */
    int image, patch, chans; /* ViT: image_size, patch_size, num_channels */
    int npatch;          /* ViT: (image_size / patch_size)^2 */
    int qkv_bias;        /* ViT: query/key/value have biases */
    int nmoe;            /* MoE blocks, ascending in moe_layers */
    int moe_layers[NET_MAX_LAYERS];
    int moe_of[NET_MAX_LAYERS]; /* block L -> its index in moe_layers, -1 for a dense block */
} net_config;

const net_arch_desc *net_arch_of(net_arch a);

/* Is c a network checkpoint: config.json with model_type "gpt2" (and the tensor
 * transformer.wte.weight) or "vit" (vit.embeddings.patch_embeddings.projection.weight)?
 * (A bare MoE layer file is not.) */
int net_is_network(const ckpt *c);
/* The same for a checkpoint argument (opens and closes it; 0 when it cannot be opened). */
int net_path_is_network(const char *path);
/* config.json of c into nc, validated (a ViT's classes 0 when config.json does
 * not say them: net_load takes them from the classifier). */
int net_config_read(const ckpt *c, net_config *nc, ms_err *err);

#endif
