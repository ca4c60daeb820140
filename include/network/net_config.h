/* net_config.h - a network checkpoint's hyper-parameters: config.json of a
 * Hugging Face GPT-2 (model_type "gpt2") whose feed-forward block(s) became MoE
 * layers, named by its "moe" object:
 *
 *   n_embd d, n_layer NL, n_head nh (d % nh == 0), n_positions P, vocab_size V,
 *   n_inner (the dense MLPs' width, null or absent: 4d),
 *   layer_norm_epsilon (1e-5), activation_function of the dense MLPs
 *   ("gelu_new": the tanh form, the default; "gelu": the erf form),
 *   tie_word_embeddings (true: the LM head is wte),
 *   "moe": {"layers": [..], "num_experts", "top_k", "router", "num_shared_experts",
 *           "expert_activation", "expert_intermediate_size"}
 *
 * Every number is validated (an integer in range, named in the error with the
 * file); the MoE layers' own keys are read by the gpt2 family (family_io.c),
 * which checks them against the tensors. */
#ifndef MS_NET_CONFIG_H
#define MS_NET_CONFIG_H

#include "io/checkpoint.h"
#include "model/model.h"

#define NET_MAX_LAYERS 256

typedef struct {
    int d, nlayer, nhead, npos, vocab;
    int ff;              /* the dense MLPs' width: n_inner, default 4d */
    double eps;          /* layer_norm_epsilon */
    moe_act act;         /* the dense MLPs' activation: ACT_GELU_TANH or ACT_GELU */
    int tied;            /* tie_word_embeddings */
    int nmoe;            /* MoE blocks, ascending in moe_layers */
    int moe_layers[NET_MAX_LAYERS];
    int moe_of[NET_MAX_LAYERS]; /* block L -> its index in moe_layers, -1 for a dense block */
} net_config;

/* Is c a network checkpoint: config.json with model_type "gpt2" and the tensor
 * transformer.wte.weight? (A bare MoE layer file is not.) */
int net_is_network(const ckpt *c);
/* The same for a checkpoint argument (opens and closes it; 0 when it cannot be opened). */
int net_path_is_network(const char *path);
/* config.json of c into nc, validated. */
int net_config_read(const ckpt *c, net_config *nc, ms_err *err);

#endif
