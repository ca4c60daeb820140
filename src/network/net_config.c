/* net_config.c - config.json of a GPT-2- or ViT-layout network (net_config.h). */
#include "network/net_config.h"

#include <stdlib.h>
#include <string.h>

#include "io/config_json.h"
#include "io/family.h"

static const net_arch_desc ARCHS[] = {
    [NET_GPT2] = {"gpt2", "transformer.wte.weight", "transformer.h.%d.", "mlp", "mlp.c_fc.weight", FAM_GPT2,
                  "n_embd", "n_layer", "n_head", "n_inner", "layer_norm_epsilon", "activation_function",
                  "lm_head.weight"},
    [NET_VIT] = {"vit", "vit.embeddings.patch_embeddings.projection.weight", "vit.encoder.layer.%d.", "moe",
                 "intermediate.dense.weight", FAM_VIT, "hidden_size", "num_hidden_layers",
                 "num_attention_heads", "intermediate_size", "layer_norm_eps", "hidden_act",
                 "classifier.weight"},
};

const net_arch_desc *net_arch_of(net_arch a) { return &ARCHS[a]; }

/* the architecture config.json names (and whose probe tensor c has), -1 if none */
static int arch_of_ckpt(const ckpt *c) {
    const char *mt = ckpt_config_str(c, "model_type");
    for (int a = 0; mt && a < 2; a++)
        if (!strcmp(mt, ARCHS[a].model_type)) return ckpt_find(c, ARCHS[a].probe) >= 0 ? a : -1;
    return -1;
}

int net_is_network(const ckpt *c) { return arch_of_ckpt(c) >= 0; }

int net_path_is_network(const char *path) {
    ckpt c;
    if (!path || ckpt_open(&c, path, NULL)) return 0;
    int yes = net_is_network(&c);
    ckpt_close(&c);
    return yes;
}

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

int net_config_read(const ckpt *c, net_config *nc, ms_err *err) {
    memset(nc, 0, sizeof *nc);
    if (!c->config)
        return ms_fail(err, "%s: a network checkpoint needs its config.json (model_type \"gpt2\" or \"vit\")",
                       c->arg);
    cfg_obj top = {c->config_path, "", c->config}, moe;
    const char *mt = ckpt_config_str(c, "model_type");
    nc->arch = mt && !strcmp(mt, "vit") ? NET_VIT : NET_GPT2;
    const net_arch_desc *A = net_arch_of(nc->arch);
    if ((nc->arch == NET_VIT ? vit_read(&top, nc, err) : gpt2_read(&top, nc, err)) < 0) return -1;
    if (nc->d % nc->nhead)
        return ms_fail(err, "%s: %s = %d is not a multiple of %s = %d", c->config_path, A->k_d, nc->d,
                       A->k_heads, nc->nhead);
    long ff;
    if (cfg_int(&top, A->k_ff, 1, 1 << 20, 4L * nc->d, &ff, err) < 0 || cfg_sub(&top, "moe", "moe.", &moe, err) < 0)
        return -1;
    nc->ff = (int)ff;
    if (cfg_int_list(&moe, "layers", 0, nc->nlayer - 1, NET_MAX_LAYERS, nc->moe_layers, &nc->nmoe,
                     err) < 0)
        return -1;
    qsort(nc->moe_layers, (size_t)nc->nmoe, sizeof(int), cmp_int);
    for (int L = 0; L < nc->nlayer; L++) nc->moe_of[L] = -1;
    for (int i = 0; i < nc->nmoe; i++) nc->moe_of[nc->moe_layers[i]] = i;
    return 0;
}
