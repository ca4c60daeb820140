/* net_unused.c - the tensors of a network's checkpoint that nothing reads (net_unused.h). */
#include "network/net_unused.h"

#include <stdio.h>
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

/* why a tensor of this name is likely left over, for the message */
static const char *guess(const char *name, const net_config *nc) {
    if (nc->arch == NET_VIT && !nc->qkv_bias &&
        (ends_with(name, "query.bias") || ends_with(name, "key.bias") || ends_with(name, "value.bias")))
        return " (config.json's qkv_bias is false: say true, or drop the biases)";
    if (strstr(name, ".experts.") || strstr(name, ".gate.") || strstr(name, ".shared_experts."))
        return " (an expert past the gate's rows, or a block's MoE tensors when config.json's "
               "moe.layers does not list the block)";
    if (nc->arch == NET_GPT2 && nc->tied && !strcmp(name, "lm_head.weight"))
        return " (tie_word_embeddings is true, so the head is transformer.wte.weight: say false, or "
               "drop it)";
    return "";
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
    char also[64] = "";
    if (more) snprintf(also, sizeof also, " (and %d more)", more);
    return ms_fail(err, "%s: tensor '%s'%s is not part of the network config.json describes: nothing "
                        "reads it%s",
                   c->arg, c->names[first], also, guess(c->names[first], nc));
}
