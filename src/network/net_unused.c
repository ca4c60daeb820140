/* net_unused.c - the tensors of a network's checkpoint that nothing reads (net_unused.h). */
#include "network/net_unused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Buffers a framework saves beside the weights that hold no parameter: GPT-2's
 * causal masks (attn.bias [1, 1, P, P], attn.masked_bias), rotary frequencies. */
static int is_buffer(const char *name) {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
           ends_with(name, ".rotary_emb.inv_freq");
}

/* the block L of name (the row's "<block>L." prefix), -1 if none; *rest after "L." */
static int block_of(const net_arch_desc *A, const char *name, const char **rest) {
    const char *pc = strstr(A->block, "%d");
    size_t np = (size_t)(pc - A->block);
    if (strncmp(name, A->block, np)) return -1;
    char *end;
    long L = strtol(name + np, &end, 10);
    if (end == name + np || *end != '.' || L < 0 || L >= NET_MAX_LAYERS) return -1;
    *rest = end + 1;
    return (int)L;
}

/* why a tensor of this name is likely left over, for the message (buf: its room) */
static const char *guess(const char *name, const net_config *nc, char *buf, size_t cap) {
    const net_arch_desc *A = net_arch_of(nc->arch);
    const char *rest = "";
    int L = block_of(A, name, &rest), in = L >= 0 && L < nc->nlayer;
    size_t k = strlen(A->moe), stem = strcspn(A->dense, ".") + 1;
    int in_moe = in && !strncmp(rest, A->moe, k) && rest[k] == '.';
    if (nc->arch == NET_VIT && !nc->qkv_bias &&
        (ends_with(name, "query.bias") || ends_with(name, "key.bias") || ends_with(name, "value.bias")))
        return " (config.json's qkv_bias is false: say true, or drop the biases)";
    if (in && A->embed == NET_EMBED_TOKENS && !strncmp(rest, "self_attn.", 10) && ends_with(name, "_proj.bias"))
        return " (config.json's attention_bias is false or absent, so the attention has no biases)";
    if (in && nc->moe_of[L] < 0 && in_moe)
        snprintf(buf, cap, " (block %d is dense by %s, so nothing reads MoE tensors there)", L, net_arch_sparse_rule(A));
    else if (in && nc->moe_of[L] >= 0 && !in_moe && !strncmp(rest, A->dense, stem))
        snprintf(buf, cap, " (block %d is an MoE block by %s, so nothing reads a dense MLP there)", L,
                 net_arch_sparse_rule(A));
    else if (L >= nc->nlayer) // before the experts: a whole block past the count, not an expert
        snprintf(buf, cap, " (a block past config.json's %s = %d)", A->k_layers, nc->nlayer);
    else if (in_moe || strstr(name, ".experts.") || strstr(name, ".shared_experts."))
        return " (an expert past the gate's rows, or a part the block's MoE layer does not have)";
    else if (nc->arch == NET_GPT2 && nc->tied && !strcmp(name, "lm_head.weight"))
        return " (tie_word_embeddings is true, so the head is transformer.wte.weight: say false, or "
               "drop it)";
    else
        return "";
    return buf;
}

int net_check_unused(ckpt *c, const net_config *nc, ms_err *err) {
    int first = -1, more = 0;
    for (int k = 0; k < c->ntensors; k++) {
        const st_file *f;
        const st_tensor *t;
        if (is_buffer(c->names[k]) || ckpt_tensor(c, c->names[k], &f, &t, NULL) || st_was_read(f, t)) continue;
        if (first < 0) first = k;
        else more++;
    }
    if (first < 0) return 0;
    char also[64] = "", why[400];
    if (more) snprintf(also, sizeof also, " (and %d more)", more);
    return ms_fail(err, "%s: tensor '%s'%s is not part of the network config.json describes: nothing "
                        "reads it%s",
                   c->arg, c->names[first], also, guess(c->names[first], nc, why, sizeof why));
}
