/* net_config.c - config.json of a network of any architecture in the table (net_config.h). */
#include "network/net_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/config_json.h"
#include "io/family.h"
#include "network/net_rope.h"

/* The table: one row per architecture. */
#define DECODER_KEYS                                                                                     \
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "rms_norm_eps",   \
        "hidden_act", "max_position_embeddings", "lm_head.weight", NET_NORM_RMS, NET_EMBED_TOKENS,     \
        NET_ATTN_ROPE, NET_MLP_GLU, NET_TARGET_NEXT
#define DECODER_ROW(qkn, sparse, qkv_bias, mult) qkn, sparse, qkv_bias, mult, 0, 1
#define MLA_KEYS                                                                                         \
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "rms_norm_eps",   \
        "hidden_act", "max_position_embeddings", "lm_head.weight", NET_NORM_RMS, NET_EMBED_TOKENS,     \
        NET_ATTN_MLA, NET_MLP_GLU, NET_TARGET_NEXT, NET_QKN_NONE, NET_SPARSE_FIRST_K, 0, 0, 0, 1
static const net_arch_desc ARCHS[NET_ARCH_COUNT] = {
    [NET_GPT2] = {"gpt2", "transformer.wte.weight", "transformer.h.%d.", "mlp", "gate.weight","mlp.c_fc.weight", FAM_GPT2,
                  "n_embd", "n_layer", "n_head", "n_inner", "layer_norm_epsilon", "activation_function",
                  "n_positions", "lm_head.weight", NET_NORM_LAYER, NET_EMBED_LEARNED, NET_ATTN_MHA, NET_MLP_ACT,
                  NET_TARGET_NEXT, NET_QKN_NONE, NET_SPARSE_LISTED, 0, 0, 0, 0},
    [NET_VIT] = {"vit", "vit.embeddings.patch_embeddings.projection.weight", "vit.encoder.layer.%d.", "moe", "gate.weight",
                 "intermediate.dense.weight", FAM_VIT, "hidden_size", "num_hidden_layers",
                 "num_attention_heads", "intermediate_size", "layer_norm_eps", "hidden_act", "image_size",
                 "classifier.weight", NET_NORM_LAYER, NET_EMBED_PATCHES, NET_ATTN_MHA, NET_MLP_ACT,
                 NET_TARGET_CLASS, NET_QKN_NONE, NET_SPARSE_LISTED, 0, 0, 0, 0},
    [NET_MIXTRAL] = {"mixtral", "model.embed_tokens.weight", "model.layers.%d.", "block_sparse_moe",
                     "gate.weight", "mlp.gate_proj.weight", FAM_MIXTRAL, DECODER_KEYS,
                     DECODER_ROW(NET_QKN_NONE, NET_SPARSE_ALL, 0, 0)},
    [NET_QWEN2_MOE] = {"qwen2_moe", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "gate.weight",
                       "mlp.gate_proj.weight", FAM_QWEN2_MOE, DECODER_KEYS,
                       DECODER_ROW(NET_QKN_NONE, NET_SPARSE_STEP, 1, 0)},
    [NET_QWEN3_MOE] = {"qwen3_moe", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "gate.weight",
                       "mlp.gate_proj.weight", FAM_QWEN3_MOE, DECODER_KEYS,
                       DECODER_ROW(NET_QKN_HEAD, NET_SPARSE_STEP, 0, 0)},
    [NET_OLMOE] = {"olmoe", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "gate.weight",
                   "mlp.gate_proj.weight", FAM_OLMOE, DECODER_KEYS, DECODER_ROW(NET_QKN_WHOLE, NET_SPARSE_ALL, 0, 0)},
    [NET_GRANITEMOE] = {"granitemoe", "model.embed_tokens.weight", "model.layers.%d.", "block_sparse_moe",
                        "router.layer.weight", "mlp.gate_proj.weight", FAM_GRANITEMOE, DECODER_KEYS,
                        DECODER_ROW(NET_QKN_NONE, NET_SPARSE_ALL, 0, 1)},
    [NET_DEEPSEEK_V2] = {"deepseek_v2", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "gate.weight",
                         "mlp.gate_proj.weight", FAM_DEEPSEEK_V2, MLA_KEYS},
    [NET_DEEPSEEK_V3] = {"deepseek_v3", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "gate.weight",
                         "mlp.gate_proj.weight", FAM_DEEPSEEK_V3, MLA_KEYS},
    [NET_GPT_OSS] = {"gpt_oss", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "router.weight",
                     "mlp.gate_proj.weight", FAM_GPT_OSS, DECODER_KEYS, NET_QKN_NONE, NET_SPARSE_ALL, 0, 0, 1, 1},
    // Mixtral's layout with LayerNorms (bias, eps rms_norm_eps), longrope, sparsemixer
    [NET_PHIMOE] = {"phimoe", "model.embed_tokens.weight", "model.layers.%d.", "block_sparse_moe", "gate.weight",
                    "mlp.gate_proj.weight", FAM_PHIMOE, "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "rms_norm_eps", "hidden_act", "max_position_embeddings", "lm_head.weight",
                    NET_NORM_LAYER, NET_EMBED_TOKENS, NET_ATTN_ROPE, NET_MLP_GLU, NET_TARGET_NEXT,
                    DECODER_ROW(NET_QKN_NONE, NET_SPARSE_ALL, 0, 0)},
    // its attention a mixture of experts too (self_attention.experts), every block MoE
    [NET_JETMOE] = {"jetmoe", "model.embed_tokens.weight", "model.layers.%d.", "mlp", "router.layer.weight",
                    "mlp.gate_proj.weight", FAM_JETMOE, "hidden_size", "num_hidden_layers",
                    "num_attention_heads", "intermediate_size", "rms_norm_eps", "activation_function",
                    "max_position_embeddings", "lm_head.weight", NET_NORM_RMS, NET_EMBED_TOKENS, NET_ATTN_MOA,
                    NET_MLP_GLU, NET_TARGET_NEXT, DECODER_ROW(NET_QKN_NONE, NET_SPARSE_ALL, 0, 0)},
};

const net_arch_desc *net_arch_of(net_arch a) { return &ARCHS[a]; }

const char *net_arch_sparse_rule(const net_arch_desc *A) {
    switch (A->sparse) {
    case NET_SPARSE_LISTED: return "config.json's moe.layers";
    case NET_SPARSE_STEP: return "config.json's mlp_only_layers and decoder_sparse_step";
    case NET_SPARSE_FIRST_K: return "config.json's first_k_dense_replace";
    case NET_SPARSE_ALL: break;
    }
    return "its architecture, whose blocks are all MoE";
}

int net_arch_find(const char *model_type) {
    for (int a = 0; model_type && a < NET_ARCH_COUNT; a++)
        if (!strcmp(model_type, ARCHS[a].model_type)) return a;
    return -1;
}

const char *net_arch_names(void) {
    static char buf[256];
    if (!buf[0])
        for (int a = 0; a < NET_ARCH_COUNT; a++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", a ? ", " : "", ARCHS[a].model_type);
    return buf;
}

/* The families whose MoE layers open one at a time but whose forward is not computed */
static const struct {
    const char *model_type, *why;
} LAYER_ONLY[] = {
    {"switch_transformers", "Switch Transformers is an encoder-decoder, not a causal language model"},
};

const char *net_arch_layer_only_why(const char *model_type) {
    for (size_t i = 0; model_type && i < sizeof LAYER_ONLY / sizeof LAYER_ONLY[0]; i++)
        if (!strcmp(model_type, LAYER_ONLY[i].model_type)) return LAYER_ONLY[i].why;
    return "";
}

/* the architecture config.json names (and whose probe tensor c has), -1 if none */
int net_ckpt_arch(const ckpt *c) {
    int a = net_arch_find(ckpt_config_str(c, "model_type"));
    return a >= 0 && ckpt_find(c, ARCHS[a].probe) >= 0 ? a : -1;
}

int net_is_network(const ckpt *c) { return net_ckpt_arch(c) >= 0; }

int net_path_arch(const char *path) {
    ckpt c;
    if (!path || ckpt_open(&c, path, NULL)) return -1;
    int a = net_ckpt_arch(&c);
    ckpt_close(&c);
    return a;
}

int net_path_is_network(const char *path) { return net_path_arch(path) >= 0; }

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* required integer keys[i] in 1..hi[i] into out[i] */
static int required_ints(const cfg_obj *top, const char *const *keys, const long *hi, int n, long *out,
                         ms_err *err) {
    for (int i = 0; i < n; i++) {
        int r = cfg_int(top, keys[i], 1, hi[i], 0, &out[i], err);
        if (r < 0) return -1;
        if (!r) return ms_fail(err, "%s: key '%s' is missing", top->file, keys[i]);
    }
    return 0;
}

static int gpt2_read(const cfg_obj *top, net_config *nc, ms_err *err) {
    static const char *const acts[] = {"gelu_new", "gelu"};
    static const char *const keys[5] = {"n_embd", "n_layer", "n_head", "n_positions", "vocab_size"};
    static const long hi[5] = {1 << 16, NET_MAX_LAYERS, 1 << 12, 1 << 20, 1 << 24};
    long v[5];
    int act;
    if (required_ints(top, keys, hi, 5, v, err)) return -1;
    nc->d = (int)v[0], nc->nlayer = (int)v[1], nc->nhead = (int)v[2];
    nc->npos = (int)v[3], nc->vocab = (int)v[4];
    if (cfg_num(top, "layer_norm_epsilon", 1e-30, 1.0, 1e-5, &nc->eps, err) < 0 ||
        cfg_choice(top, "activation_function", acts, 2, 0, &act, err) < 0 ||
        cfg_bool(top, "tie_word_embeddings", 1, &nc->tied, err) < 0)
        return -1;
    nc->act = act ? ACT_GELU : ACT_GELU_TANH;
    return 0;
}

/* the classes config.json names: num_labels, else id2label's entries (0: neither) */
static int vit_classes(const cfg_obj *top, int *classes, ms_err *err) {
    long n;
    int r = cfg_int(top, "num_labels", 1, 1 << 24, 0, &n, err);
    if (r < 0) return -1;
    const cJSON *map = top->obj ? cJSON_GetObjectItemCaseSensitive(top->obj, "id2label") : NULL;
    int nmap = cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 0;
    if (r && nmap && nmap != n)
        return ms_fail(err, "%s: key 'num_labels' = %ld, but 'id2label' names %d classes", top->file, n, nmap);
    *classes = r ? (int)n : nmap;
    return 0;
}

static int vit_read(const cfg_obj *top, net_config *nc, ms_err *err) {
    static const char *const acts[] = {"gelu", "gelu_new", "relu"};
    static const moe_act act_of[] = {ACT_GELU, ACT_GELU_TANH, ACT_RELU};
    static const char *const keys[5] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "image_size", "patch_size"};
    static const long hi[5] = {1 << 16, NET_MAX_LAYERS, 1 << 12, 1 << 14, 1 << 14};
    long v[5], ch;
    int act;
    if (required_ints(top, keys, hi, 5, v, err)) return -1;
    nc->d = (int)v[0], nc->nlayer = (int)v[1], nc->nhead = (int)v[2];
    nc->image = (int)v[3], nc->patch = (int)v[4];
    if (nc->image % nc->patch)
        return ms_fail(err, "%s: image_size = %d is not a multiple of patch_size = %d", top->file, nc->image,
                       nc->patch);
    long side = nc->image / nc->patch;
    if (side * side + 1 > (1 << 20))
        return ms_fail(err, "%s: image_size / patch_size = %ld patches a side: too many", top->file, side);
    nc->npatch = (int)(side * side);
    nc->npos = nc->npatch + 1; // the patches and the CLS token
    if (cfg_int(top, "num_channels", 1, 1 << 12, 3, &ch, err) < 0 ||
        cfg_num(top, "layer_norm_eps", 1e-30, 1.0, 1e-12, &nc->eps, err) < 0 ||
        cfg_choice(top, "hidden_act", acts, 3, 0, &act, err) < 0 ||
        cfg_bool(top, "qkv_bias", 1, &nc->qkv_bias, err) < 0 || vit_classes(top, &nc->vocab, err))
        return -1;
    nc->chans = (int)ch;
    nc->act = act_of[act];
    return 0;
}

/* the attention's shape: key/value heads, head width, rotated dims, biases */
static int decoder_attn_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    long nkv, hd;
    double prf, mult;
    int bias;
    if (cfg_int(top, "num_key_value_heads", 1, nc->nhead, nc->nhead, &nkv, err) < 0) return -1;
    if (nc->nhead % nkv)
        return ms_fail(err, "%s: key 'num_key_value_heads' = %ld does not divide num_attention_heads = %d",
                       top->file, nkv, nc->nhead);
    int has_hd = cfg_int(top, "head_dim", 1, 1 << 12, 0, &hd, err);
    if (has_hd < 0) return -1;
    if (!has_hd && nc->d % nc->nhead)
        return ms_fail(err, "%s: key 'hidden_size' = %d is not a multiple of num_attention_heads = %d",
                       top->file, nc->d, nc->nhead);
    nc->nkv = (int)nkv;
    nc->hd = has_hd ? (int)hd : nc->d / nc->nhead;
    if (cfg_num(top, "partial_rotary_factor", 1e-6, 1.0, 1.0, &prf, err) < 0 ||
        cfg_bool(top, "attention_bias", A->sinks, &bias, err) < 0 ||
        cfg_num(top, "clip_qkv", 0.0, 1e30, 0.0, &nc->clip_qkv, err) < 0)
        return -1;
    nc->rot = ((int)(nc->hd * prf)) & ~1;
    nc->qkv_bias = A->qkv_bias || bias;
    nc->o_bias = bias && !A->qkv_bias; // Qwen2-MoE: q, k, v only
    nc->attn_scale = 1.0 / sqrt((double)nc->hd);
    nc->emb_mult = nc->res_mult = nc->logit_div = 1.0;
    if (!A->multipliers) return net_rope_read(top, nc, err);
    if (cfg_num(top, "embedding_multiplier", -1e30, 1e30, 1.0, &nc->emb_mult, err) < 0 ||
        cfg_num(top, "residual_multiplier", -1e30, 1e30, 1.0, &nc->res_mult, err) < 0 ||
        cfg_pos(top, "logits_scaling", 1e30, 1.0, &nc->logit_div, err) < 0)
        return -1;
    int r = cfg_pos(top, "attention_multiplier", 1e30, 1.0, &mult, err);
    if (r < 0) return -1;
    if (r) nc->attn_scale = mult;
    return net_rope_read(top, nc, err);
}

/* DeepSeek's multi-head latent attention: the heads' widths, the rotation */
static int mla_attn_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    static const char *const keys[4] = {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
    static const long hi[4] = {1 << 16, 1 << 12, 1 << 12, 1 << 12};
    long v[4], ql;
    int bias;
    if (required_ints(top, keys, hi, 4, v, err) || cfg_int(top, "q_lora_rank", 1, 1 << 16, 0, &ql, err) < 0 ||
        cfg_bool(top, "attention_bias", 0, &bias, err) < 0 ||
        cfg_bool(top, "rope_interleave", 1, &nc->interleave, err) < 0)
        return -1;
    if (bias)
        return ms_fail(err, "%s: key 'attention_bias' = true: DeepSeek's attention biases are not implemented",
                       top->file);
    if (v[2] % 2)
        return ms_fail(err, "%s: key 'qk_rope_head_dim' = %ld is odd: the rotation turns pairs", top->file, v[2]);
    nc->kv_lora = (int)v[0], nc->nope = (int)v[1], nc->rot = (int)v[2], nc->vd = (int)v[3];
    nc->q_lora = (int)ql;
    nc->nkv = nc->nhead; // each head its own k: num_key_value_heads plays no part
    nc->hd = nc->nope + nc->rot;
    if (A->family == FAM_DEEPSEEK_V2) nc->interleave = 1; // V2's complex rotation: adjacent pairs
    nc->attn_scale = 1.0 / sqrt((double)nc->hd);
    if (net_rope_read(top, nc, err)) return -1;
    if (A->family == FAM_DEEPSEEK_V3 && nc->rope_mscale_all > 0 && nc->rope_factor > 1.0) {
        double s = 0.1 * nc->rope_mscale_all * log(nc->rope_factor) + 1.0; // yarn's mscale, squared
        nc->attn_scale *= s * s;
    }
    return 0;
}

/* config.json's layer_types, if it lists them: blocks "sliding_attention" get window
 * (sliding[L] = 1), "full_attention" none. Returns 1 if listed, 0 if not, -1 on error. */
static int layer_types_list(const cfg_obj *top, net_config *nc, int *sliding, ms_err *err) {
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(top->obj, "layer_types");
    if (!lt || cJSON_IsNull(lt)) return 0;
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != nc->nlayer)
        return ms_fail(err, "%s: key 'layer_types' should list the %d blocks' attention", top->file, nc->nlayer);
    for (int L = 0; L < nc->nlayer; L++) {
        const char *kind = cJSON_GetStringValue(cJSON_GetArrayItem(lt, L));
        if (!kind || (strcmp(kind, "sliding_attention") && strcmp(kind, "full_attention")))
            return ms_fail(err, "%s: key 'layer_types[%d]' is not \"sliding_attention\" or \"full_attention\"",
                           top->file, L);
        sliding[L] = !strcmp(kind, "sliding_attention");
    }
    return 1;
}

/* GPT-OSS's windows: layer_types' "sliding_attention" blocks get sliding_window
 * (unlisted: alternating, sliding first) */
static int gpt_oss_windows(const cfg_obj *top, net_config *nc, ms_err *err) {
    long w;
    int sliding[NET_MAX_LAYERS];
    if (cfg_int(top, "sliding_window", 1, 1L << 30, 128, &w, err) < 0) return -1;
    nc->window = (int)w;
    int listed = layer_types_list(top, nc, sliding, err);
    if (listed < 0) return -1;
    for (int L = 0; L < nc->nlayer; L++) nc->layer_window[L] = (listed ? sliding[L] : L % 2 == 0) ? nc->window : 0;
    return 0;
}

/* Qwen's windows, only with use_sliding_window (as transformers' configs set them):
 * Qwen3-MoE windows every block (Mixtral's mask); Qwen2-MoE the blocks layer_types
 * names, or when it is absent block L iff L is even and L < max_window_layers */
static int qwen_windows(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    long w, maxw;
    int use, sliding[NET_MAX_LAYERS];
    if (cfg_bool(top, "use_sliding_window", 0, &use, err) < 0) return -1;
    int listed = A->family == FAM_QWEN2_MOE ? layer_types_list(top, nc, sliding, err) : 0;
    if (listed < 0) return -1;
    if (!use) {
        for (int L = 0; listed && L < nc->nlayer; L++)
            if (sliding[L])
                return ms_fail(err, "%s: key 'layer_types[%d]' is \"sliding_attention\" but 'use_sliding_window' is "
                                    "false (transformers then sets the window to 0: no key visible)",
                               top->file, L);
        return 0;
    }
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(top->obj, "sliding_window");
    if (sw && cJSON_IsNull(sw)) {
        if (A->family == FAM_QWEN3_MOE) return 0; // no window: Mixtral's causal mask
        return ms_fail(err, "%s: key 'sliding_window' is null but 'use_sliding_window' is true", top->file);
    }
    if (cfg_int(top, "sliding_window", 1, 1L << 30, 4096, &w, err) < 0 ||
        cfg_int(top, "max_window_layers", 0, 1L << 30, 28, &maxw, err) < 0)
        return -1;
    nc->window = (int)w;
    for (int L = 0; L < nc->nlayer; L++) {
        int on = A->family == FAM_QWEN3_MOE ? 1 : listed ? sliding[L] : (L + 1) % 2 && L < maxw;
        nc->layer_window[L] = on ? nc->window : 0;
    }
    return 0;
}

/* the sliding window: Mixtral's and PhiMoE's sliding_window when set; GPT-OSS's and
 * Qwen's per block */
static int decoder_window_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    long w;
    if (A->sinks) return gpt_oss_windows(top, nc, err);
    if (A->sparse == NET_SPARSE_STEP) return qwen_windows(top, A, nc, err);
    if (A->family != FAM_MIXTRAL && A->family != FAM_PHIMOE) return 0;
    if (cfg_int(top, "sliding_window", 1, 1L << 30, 0, &w, err) < 0) return -1;
    nc->window = (int)w;
    for (int L = 0; L < nc->nlayer; L++) nc->layer_window[L] = nc->window;
    return 0;
}

/* quantization_config: GPT-OSS's MXFP4 experts are decoded (family_io.c); any other
 * method (DeepSeek-V3's fp8 with weight_scale_inv blocks, GPTQ, AWQ, ...) is refused */
static int quant_read(const cfg_obj *top, const net_arch_desc *A, ms_err *err) {
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(top->obj, "quantization_config");
    if (!q || cJSON_IsNull(q)) return 0;
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "quant_method"));
    if (m && A->sinks && !strcmp(m, "mxfp4")) return 0;
    return ms_fail(err, "%s: key 'quantization_config' (quant_method \"%.40s\"): moescope reads weights stored as "
                        "F32, F16 or BF16 (and GPT-OSS's MXFP4 experts); it does not dequantize %s weights - "
                        "convert the checkpoint to BF16 first%s",
                   top->file, m ? m : "(absent)", m ? m : "these",
                   m && !strcmp(m, "fp8") ? " (DeepSeek's inference/fp8_cast_bf16.py applies the "
                                            "weight_scale_inv blocks)"
                                          : "");
}

static int decoder_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    static const char *const acts[] = {"silu"};
    static const char *const keys[5] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "max_position_embeddings", "vocab_size"};
    static const long hi[5] = {1 << 16, NET_MAX_LAYERS, 1 << 12, 1 << 24, 1 << 24};
    long v[5];
    int act;
    if (quant_read(top, A, err) || required_ints(top, keys, hi, 5, v, err)) return -1;
    nc->d = (int)v[0], nc->nlayer = (int)v[1], nc->nhead = (int)v[2];
    nc->npos = (int)v[3], nc->vocab = (int)v[4];
    if (cfg_num(top, "rms_norm_eps", 1e-30, 1.0, 1e-6, &nc->eps, err) < 0 ||
        cfg_choice(top, "hidden_act", acts, 1, 0, &act, err) < 0 ||
        cfg_bool(top, "tie_word_embeddings", 0, &nc->tied, err) < 0 ||
        (A->family == FAM_PHIMOE && cfg_bool(top, "lm_head_bias", 0, &nc->lm_bias, err) < 0))
        return -1;
    nc->act = ACT_SILU_GLU;
    if (A->attn == NET_ATTN_MLA) return mla_attn_read(top, A, nc, err);
    if (decoder_attn_read(top, A, nc, err) || decoder_window_read(top, A, nc, err)) return -1;
    nc->vd = nc->hd;
    return 0;
}

/* JetMoE (configuration_jetmoe.py): its attention experts are num_local_experts
 * too, each token's top num_experts_per_tok of them; their queries are the heads,
 * num_key_value_heads per expert, kv_channels wide: num_attention_heads is derived */
static int jetmoe_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    static const char *const acts[] = {"silu"};
    static const char *const keys[4] = {"hidden_size", "num_hidden_layers", "max_position_embeddings",
                                        "vocab_size"};
    static const long hi[4] = {1 << 16, NET_MAX_LAYERS, 1 << 24, 1 << 24};
    long v[4], nkv, hd, n, k, nh;
    int act;
    if (quant_read(top, A, err) || required_ints(top, keys, hi, 4, v, err)) return -1;
    nc->d = (int)v[0], nc->nlayer = (int)v[1], nc->npos = (int)v[2], nc->vocab = (int)v[3];
    if (cfg_int(top, "num_key_value_heads", 1, 1 << 12, 16, &nkv, err) < 0 ||
        cfg_int(top, "kv_channels", 1, 1 << 12, 128, &hd, err) < 0 ||
        cfg_int(top, "num_local_experts", 1, 1 << 16, 8, &n, err) < 0 ||
        cfg_int(top, "num_experts_per_tok", 1, n, 2, &k, err) < 0 ||
        cfg_num(top, "rms_norm_eps", 1e-30, 1.0, 1e-6, &nc->eps, err) < 0 ||
        cfg_choice(top, "activation_function", acts, 1, 0, &act, err) < 0 ||
        cfg_bool(top, "tie_word_embeddings", 1, &nc->tied, err) < 0)
        return -1;
    if (nkv * k > 1 << 12)
        return ms_fail(err, "%s: keys 'num_key_value_heads' x 'num_experts_per_tok' = %ld x %ld heads: too many",
                       top->file, nkv, k);
    if (cfg_int(top, "num_attention_heads", 1, 1 << 12, nkv * k, &nh, err) < 0) return -1;
    if (nh != nkv * k)
        return ms_fail(err, "%s: key 'num_attention_heads' = %ld is not num_key_value_heads x num_experts_per_tok "
                            "= %ld x %ld (JetMoE's heads are each token's top-k attention experts' queries)",
                       top->file, nh, nkv, k);
    if (hd % 2)
        return ms_fail(err, "%s: key 'kv_channels' = %ld is odd: the rotation turns pairs", top->file, hd);
    nc->nhead = (int)nh, nc->nkv = (int)nkv, nc->hd = nc->vd = nc->rot = (int)hd;
    nc->moa_n = (int)n, nc->moa_k = (int)k;
    nc->kv_tiled = 1;     // key_states.repeat(1, top_k, 1, 1): slot s's head j reads kv head j
    nc->block_eps = 1e-6; // JetMoeRMSNorm(hidden_size): the default eps, not config's
    nc->act = ACT_SILU_GLU;
    nc->attn_scale = 1.0 / sqrt((double)hd);
    return net_rope_read(top, nc, err);
}

/* the MoE blocks: moescope's "moe.layers", every block, or Qwen's rule (block L
 * is sparse iff L is not in mlp_only_layers and (L + 1) % decoder_sparse_step == 0) */
static int moe_layers_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    cfg_obj moe;
    nc->nmoe = 0;
    if (A->sparse == NET_SPARSE_LISTED)
        return cfg_sub(top, "moe", "moe.", &moe, err) < 0 ||
                       cfg_int_list(&moe, "layers", 0, nc->nlayer - 1, NET_MAX_LAYERS, nc->moe_layers,
                                    &nc->nmoe, err) < 0
                   ? -1
                   : 0;
    int only[NET_MAX_LAYERS], nonly = 0, dense[NET_MAX_LAYERS] = {0};
    long step = 1, first = 0;
    if (A->sparse == NET_SPARSE_FIRST_K &&
        cfg_int(top, "first_k_dense_replace", 0, nc->nlayer, 0, &first, err) < 0)
        return -1;
    for (int L = 0; L < first; L++) dense[L] = 1;
    if (A->sparse == NET_SPARSE_STEP &&
        (cfg_int_list(top, "mlp_only_layers", 0, nc->nlayer - 1, NET_MAX_LAYERS, only, &nonly, err) < 0 ||
         cfg_int(top, "decoder_sparse_step", 1, NET_MAX_LAYERS, 1, &step, err) < 0))
        return -1;
    for (int i = 0; i < nonly; i++) dense[only[i]] = 1;
    for (int L = 0; L < nc->nlayer; L++)
        if (!dense[L] && (L + 1) % step == 0) nc->moe_layers[nc->nmoe++] = L;
    return 0;
}

/* config.json's dialect: each embedding comes with its architecture's keys */
static int arch_read(const cfg_obj *top, const net_arch_desc *A, net_config *nc, ms_err *err) {
    switch (A->embed) {
    case NET_EMBED_LEARNED: return gpt2_read(top, nc, err);
    case NET_EMBED_PATCHES: return vit_read(top, nc, err);
    case NET_EMBED_TOKENS: // JetMoE's keys are its own (configuration_jetmoe.py)
        return A->attn == NET_ATTN_MOA ? jetmoe_read(top, A, nc, err) : decoder_read(top, A, nc, err);
    }
    return -1;
}

int net_config_read(const ckpt *c, net_config *nc, ms_err *err) {
    memset(nc, 0, sizeof *nc);
    nc->emb_mult = nc->res_mult = nc->logit_div = 1.0;
    if (!c->config)
        return ms_fail(err, "%s: a network checkpoint needs its config.json (model_type one of %s)", c->arg,
                       net_arch_names());
    cfg_obj top = {c->config_path, "", c->config};
    const char *mt = ckpt_config_str(c, "model_type");
    int a = net_arch_find(mt);
    if (a < 0)
        return ms_fail(err, "%s: key 'model_type' = \"%s\" is not a network architecture moescope computes "
                            "(it knows %s)",
                       c->config_path, mt ? mt : "(absent)", net_arch_names());
    nc->arch = (net_arch)a;
    const net_arch_desc *A = net_arch_of(nc->arch);
    if (arch_read(&top, A, nc, err) < 0) return -1;
    if (nc->block_eps == 0) nc->block_eps = nc->eps;
    if (A->attn == NET_ATTN_MHA && nc->d % nc->nhead)
        return ms_fail(err, "%s: %s = %d is not a multiple of %s = %d", c->config_path, A->k_d, nc->d,
                       A->k_heads, nc->nhead);
    if (A->attn == NET_ATTN_MHA)
        nc->nkv = nc->nhead, nc->hd = nc->vd = nc->d / nc->nhead, nc->attn_scale = 1.0 / sqrt((double)nc->hd);
    long ff;
    if (cfg_int(&top, A->k_ff, 1, 1 << 20, 4L * nc->d, &ff, err) < 0 || moe_layers_read(&top, A, nc, err) < 0)
        return -1;
    nc->ff = (int)ff;
    qsort(nc->moe_layers, (size_t)nc->nmoe, sizeof(int), cmp_int);
    for (int L = 0; L < nc->nlayer; L++) nc->moe_of[L] = -1;
    for (int i = 0; i < nc->nmoe; i++) nc->moe_of[nc->moe_layers[i]] = i;
    return 0;
}
