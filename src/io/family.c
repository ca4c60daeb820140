/* family.c - the family table: names, how a layer of each family is recognised
 * from its tensor names, router defaults and config.json keys, and the
 * command-line overrides. Loading and saving are in family_io.c. */
#include "io/family.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family_table.h"

const family_desc family_table[FAM_COUNT] = {
    // name          model_types                     gate (rel. to prefix)        probe (rel.)                      k  norm scale  n_key
    [FAM_NATIVE] = {"native", "", "gate.weight", "experts.0.fc1.weight", 2, 1, 1.0, NULL},
    [FAM_MIXTRAL] = {"mixtral", "mixtral", "gate.weight", "experts.0.w1.weight", 2, 1, 1.0, "num_local_experts"},
    [FAM_QWEN2_MOE] = {"qwen2_moe", "qwen2_moe", "gate.weight", "experts.0.gate_proj.weight", 4, 0,
                       1.0, "num_experts"},
    [FAM_QWEN3_MOE] = {"qwen3_moe", "qwen3_moe", "gate.weight", "experts.0.gate_proj.weight", 8, 0,
                       1.0, "num_experts"},
    [FAM_OLMOE] = {"olmoe", "olmoe", "gate.weight", "experts.0.gate_proj.weight", 8, 0, 1.0, "num_experts"},
    [FAM_DEEPSEEK_V2] = {"deepseek_v2", "deepseek_v2", "gate.weight", "experts.0.gate_proj.weight",
                         6, 0, 1.0, "n_routed_experts"},
    [FAM_DEEPSEEK_V3] = {"deepseek_v3", "deepseek_v3", "gate.weight", "experts.0.gate_proj.weight",
                         8, 1, 2.5, "n_routed_experts"},
    [FAM_SWITCH] = {"switch", "switch_transformers", "router.classifier.weight",
                    "experts.expert_0.wi.weight", 1, 0, 1.0, "num_experts"},
    [FAM_GRANITEMOE] = {"granitemoe", "granitemoe", "router.layer.weight", "input_linear.weight", 2,
                        0, 1.0, "num_local_experts"},
    [FAM_JETMOE] = {"jetmoe", "jetmoe", "router.layer.weight", "input_linear.weight", 2, 0, 1.0, "num_local_experts"},
    [FAM_GPT_OSS] = {"gpt_oss", "gpt_oss", "router.weight", NULL, 4, 0, 1.0, "num_local_experts"},
    [FAM_GPT2] = {"gpt2", "gpt2", "gate.weight", "experts.0.c_fc.weight", 2, 1, 1.0, NULL},
    [FAM_VIT] = {"vit", "vit", "gate.weight", "experts.0.fc1.weight", 2, 1, 1.0, NULL},
    [FAM_PHIMOE] = {"phimoe", "phimoe", "gate.weight", "experts.0.w1.weight", 2, 1, 1.0, "num_local_experts"},
};

const char *family_name(int fam) {
    return fam >= 0 && fam < FAM_COUNT ? family_table[fam].name : "?";
}

int family_from_name(const char *name) {
    for (int f = 0; f < FAM_COUNT; f++)
        if (!strcmp(name, family_table[f].name)) return f;
    if (!strcmp(name, "switch_transformers")) return FAM_SWITCH;
    return -1;
}

const char *family_names_list(void) {
    return "native, mixtral, qwen2_moe, qwen3_moe, olmoe, deepseek_v2, deepseek_v3, switch, "
           "granitemoe, jetmoe, gpt_oss, gpt2, vit, phimoe";
}

/* ---- recognising layers ---- */

static int has(const ckpt *c, const char *prefix, const char *rel) {
    char name[1024];
    snprintf(name, sizeof name, "%s.%s", prefix, rel);
    return ckpt_find(c, name) >= 0;
}

/* The families whose layers share names with qwen3_moe: told apart by the tensors
 * they add, then by config.json's model_type (OLMoE's and Qwen3-MoE's MoE tensors
 * are named alike). */
static int qwen_like(const ckpt *c, const char *prefix) {
    if (has(c, prefix, "gate.e_score_correction_bias")) return FAM_DEEPSEEK_V3;
    if (has(c, prefix, "shared_expert_gate.weight")) return FAM_QWEN2_MOE;
    const char *mt = ckpt_config_str(c, "model_type");
    if (has(c, prefix, "shared_experts.gate_proj.weight"))
        return mt && !strcmp(mt, "deepseek_v3") ? FAM_DEEPSEEK_V3 : FAM_DEEPSEEK_V2;
    if (mt && !strcmp(mt, "olmoe")) return FAM_OLMOE;
    return FAM_QWEN3_MOE;
}

/* Mixtral's names: PhiMoE's too, told apart by config.json's model_type */
static int mixtral_like(const ckpt *c) {
    const char *mt = ckpt_config_str(c, "model_type");
    return mt && !strcmp(mt, "phimoe") ? FAM_PHIMOE : FAM_MIXTRAL;
}

/* Which family (if any) has a MoE layer at prefix, given that the tensor
 * "<prefix>.<gate>" exists for gate one of the families' gate names. */
static int family_at(const ckpt *c, const char *prefix, const char *gate_rel) {
    if (!strcmp(gate_rel, "gate.weight")) {
        if (has(c, prefix, "experts.0.fc1.weight")) { // moescope's names, or a ViT's MoE block
            const char *mt = ckpt_config_str(c, "model_type");
            return mt && !strcmp(mt, "vit") ? FAM_VIT : FAM_NATIVE;
        }
        if (has(c, prefix, "experts.0.w1.weight")) return mixtral_like(c);
        if (has(c, prefix, "experts.0.c_fc.weight")) return FAM_GPT2;
        if (has(c, prefix, "experts.0.gate_proj.weight")) return qwen_like(c, prefix);
        if (has(c, prefix, "experts.gate_up_proj") && has(c, prefix, "experts.down_proj")) {
            // transformers >= 5 packs every expert into two tensors and names
            // Mixtral's block "mlp" too: only config.json tells Mixtral apart
            const char *mt = ckpt_config_str(c, "model_type");
            return mt && (!strcmp(mt, "mixtral") || !strcmp(mt, "phimoe")) ? mixtral_like(c) : qwen_like(c, prefix);
        }
        return -1;
    }
    if (!strcmp(gate_rel, "router.classifier.weight"))
        return has(c, prefix, "experts.expert_0.wi.weight") ? FAM_SWITCH : -1;
    if (!strcmp(gate_rel, "router.layer.weight")) {
        // JetMoE's attention experts (self_attention.experts) are not an MoE MLP
        if (!has(c, prefix, "input_linear.weight") || strstr(prefix, "self_attention")) return -1;
        size_t n = strlen(prefix), k = strlen("block_sparse_moe");
        return n >= k && !strcmp(prefix + n - k, "block_sparse_moe") ? FAM_GRANITEMOE : FAM_JETMOE;
    }
    if (!strcmp(gate_rel, "router.weight"))
        return has(c, prefix, "experts.gate_up_proj") || has(c, prefix, "experts.gate_up_proj_blocks")
                   ? FAM_GPT_OSS
                   : -1;
    return -1;
}

int family_block_index(const char *prefix) {
    static const char *const keys[] = {"layers.", "block.", "blocks.", "h.", "layer."};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *p = strstr(prefix, keys[i]);
        if (p && (p == prefix || p[-1] == '.') && isdigit((unsigned char)p[strlen(keys[i])])) {
            errno = 0;
            long b = strtol(p + strlen(keys[i]), NULL, 10); // a block number from a file: bounded
            return errno || b > (1 << 20) ? -1 : (int)b;
        }
    }
    return -1;
}

/* Families an explicitly forced family may stand for: the forced one wins over
 * the name-based guess within its naming group (e.g. olmoe vs qwen3_moe). */
static int same_names(int forced, int found) {
    if (forced == found) return 1;
    int qa = forced >= FAM_QWEN2_MOE && forced <= FAM_DEEPSEEK_V3;
    int qb = found >= FAM_QWEN2_MOE && found <= FAM_DEEPSEEK_V3;
    if ((forced == FAM_NATIVE || forced == FAM_VIT) && (found == FAM_NATIVE || found == FAM_VIT)) return 1;
    int ga = forced == FAM_GRANITEMOE || forced == FAM_JETMOE;
    int gb = found == FAM_GRANITEMOE || found == FAM_JETMOE;
    int ma = forced == FAM_MIXTRAL || forced == FAM_PHIMOE, mb = found == FAM_MIXTRAL || found == FAM_PHIMOE;
    return (qa && qb) || (ga && gb) || (ma && mb);
}

/* ", "-joined prefixes of tensors containing ".experts." (at most 8), for the
 * message when no known layer is found. */
static char *moe_looking(const ckpt *c) {
    char *out = ms_calloc(1, 1);
    size_t len = 0;
    int shown = 0;
    for (int i = 0; i < c->ntensors && shown < 8; i++) {
        const char *p = strstr(c->names[i], ".experts.");
        if (!p) p = strstr(c->names[i], ".experts_");
        if (!p) continue;
        size_t pl = (size_t)(p - c->names[i]);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(pl < 500 ? pl : 500), c->names[i]);
        if (strstr(out, buf)) continue;
        out = ms_realloc(out, len + strlen(buf) + 3);
        len += (size_t)sprintf(out + len, "%s%s", shown ? ", " : "", buf);
        shown++;
    }
    return out;
}

int family_find_layers(const ckpt *c, int force, family_layer **out, int *nout, ms_err *err) {
    static const char *const gates[] = {"gate.weight", "router.classifier.weight",
                                        "router.layer.weight", "router.weight"};
    *out = NULL;
    *nout = 0;
    for (int i = 0; i < c->ntensors; i++) {
        const char *name = c->names[i];
        size_t nl = strlen(name);
        for (size_t g = 0; g < sizeof gates / sizeof gates[0]; g++) {
            size_t gl = strlen(gates[g]);
            if (nl <= gl + 1 || strcmp(name + nl - gl, gates[g]) || name[nl - gl - 1] != '.') continue;
            char prefix[1024];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(nl - gl - 1), name);
            int fam = family_at(c, prefix, gates[g]);
            if (fam < 0) continue;
            if (force >= 0) {
                // packed (transformers >= 5) Mixtral and Qwen-like layers look alike
                int packed = has(c, prefix, "experts.gate_up_proj") && fam != FAM_GPT_OSS;
                int mixq = packed && (same_names(FAM_MIXTRAL, force) || same_names(FAM_QWEN3_MOE, force)) &&
                           (same_names(FAM_MIXTRAL, fam) || same_names(FAM_QWEN3_MOE, fam));
                if (!same_names(force, fam) && !mixq) continue;
                fam = force;
            }
            *out = ms_realloc(*out, (size_t)(*nout + 1) * sizeof(family_layer));
            (*out)[*nout].family = fam;
            (*out)[*nout].prefix = ms_strdup(prefix);
            (*out)[*nout].block = family_block_index(prefix);
            (*nout)++;
        }
    }
    if (*nout) return 0;
    char *seen = moe_looking(c);
    const char *mt = ckpt_config_str(c, "model_type");
    char fam[64] = "";
    if (force >= 0) snprintf(fam, sizeof fam, " of family %s", family_name(force));
    ms_fail(err, "%s: no MoE layer%s that moescope knows (families: %s)%s%s%s%s%s", c->arg, fam,
            family_names_list(), mt ? "; config.json model_type = " : "", mt ? mt : "",
            *seen ? "; MoE-looking prefixes: " : "; no tensor named '*.experts.*'", seen,
            *seen ? " (force a family to read them as its layout)" : "");
    free(seen);
    return -1;
}

void family_layers_free(family_layer *l, int n) {
    for (int i = 0; i < n; i++) free(l[i].prefix);
    free(l);
}

int family_pick(const ckpt *c, const family_layer *l, int n, const char *arg, int *which,
                ms_err *err) {
    if (!arg) {
        *which = 0;
        return 0;
    }
    char *end;
    errno = 0;
    long b = strtol(arg, &end, 10);
    if (*arg && !*end && !errno) {
        int hit = -1, count = 0;
        for (int i = 0; i < n; i++)
            if (l[i].block == b) {
                if (hit < 0) hit = i;
                count++;
            }
        if (count == 1) {
            *which = hit;
            return 0;
        }
        if (count > 1)
            return ms_fail(err, "%s: block %ld has %d MoE layers (e.g. '%s'); give the full prefix",
                           c->arg, b, count, l[hit].prefix);
    }
    size_t al = strlen(arg);
    for (int i = 0; i < n; i++) {
        size_t pl = strlen(l[i].prefix);
        if (!strcmp(arg, l[i].prefix) || (al == pl + 1 && arg[pl] == '.' && !strncmp(arg, l[i].prefix, pl))) {
            *which = i;
            return 0;
        }
    }
    char list[600] = "";
    size_t k = 0;
    for (int i = 0; i < n && k < sizeof list - 80; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", l[i].prefix);
    return ms_fail(err, "%s: no MoE layer '%s'; layers: %s%s", c->arg, arg, list,
                   k >= sizeof list - 80 ? ", ..." : "");
}


