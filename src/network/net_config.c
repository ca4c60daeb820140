/* net_config.c - config.json of a GPT-2-layout network (net_config.h). */
#include "network/net_config.h"

#include <stdlib.h>
#include <string.h>

#include "io/config_json.h"

int net_is_network(const ckpt *c) {
    const char *mt = ckpt_config_str(c, "model_type");
    return mt && !strcmp(mt, "gpt2") && ckpt_find(c, "transformer.wte.weight") >= 0;
}

int net_path_is_network(const char *path) {
    ckpt c;
    if (!path || ckpt_open(&c, path, NULL)) return 0;
    int yes = net_is_network(&c);
    ckpt_close(&c);
    return yes;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int net_config_read(const ckpt *c, net_config *nc, ms_err *err) {
    memset(nc, 0, sizeof *nc);
    if (!c->config)
        return ms_fail(err, "%s: a network checkpoint needs its config.json (model_type \"gpt2\")",
                       c->arg);
    cfg_obj top = {c->config_path, "", c->config}, moe;
    static const char *const acts[] = {"gelu_new", "gelu"};
    long v[5];
    // n_embd, n_layer, n_head, n_positions, vocab_size: required
    static const char *const keys[5] = {"n_embd", "n_layer", "n_head", "n_positions", "vocab_size"};
    static const long hi[5] = {1 << 16, NET_MAX_LAYERS, 1 << 12, 1 << 20, 1 << 24};
    for (int i = 0; i < 5; i++) {
        int r = cfg_int(&top, keys[i], 1, hi[i], 0, &v[i], err);
        if (r < 0) return -1;
        if (!r) return ms_fail(err, "%s: key '%s' is missing", c->config_path, keys[i]);
    }
    nc->d = (int)v[0], nc->nlayer = (int)v[1], nc->nhead = (int)v[2];
    nc->npos = (int)v[3], nc->vocab = (int)v[4];
    if (nc->d % nc->nhead)
        return ms_fail(err, "%s: n_embd = %d is not a multiple of n_head = %d", c->config_path, nc->d,
                       nc->nhead);
    int act;
    if (cfg_num(&top, "layer_norm_epsilon", 1e-30, 1.0, 1e-5, &nc->eps, err) < 0 ||
        cfg_choice(&top, "activation_function", acts, 2, 0, &act, err) < 0 ||
        cfg_bool(&top, "tie_word_embeddings", 1, &nc->tied, err) < 0 ||
        cfg_sub(&top, "moe", "moe.", &moe, err) < 0)
        return -1;
    nc->act = act ? ACT_GELU : ACT_GELU_TANH;
    long ff;
    if (cfg_int(&top, "n_inner", 1, 1 << 20, 4L * nc->d, &ff, err) < 0) return -1;
    nc->ff = (int)ff;
    if (cfg_int_list(&moe, "layers", 0, nc->nlayer - 1, NET_MAX_LAYERS, nc->moe_layers, &nc->nmoe,
                     err) < 0)
        return -1;
    qsort(nc->moe_layers, (size_t)nc->nmoe, sizeof(int), cmp_int);
    for (int L = 0; L < nc->nlayer; L++) nc->moe_of[L] = -1;
    for (int i = 0; i < nc->nmoe; i++) nc->moe_of[nc->moe_layers[i]] = i;
    return 0;
}
