/* net_rope.c - the rotary embedding's frequencies (net_rope.h). */
#include "network/net_rope.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void rope_default(net_config *nc) {
    for (int i = 0; i < nc->rot / 2; i++) nc->inv_freq[i] = pow(nc->theta, -2.0 * i / nc->rot);
}

/* yarn's mscale: 0.1 m ln(s) + 1 beyond s = 1 */
static double yarn_mscale(double s, double m) { return s <= 1.0 ? 1.0 : 0.1 * m * log(s) + 1.0; }

/* the dim whose wavelength turns rotations times over orig positions */
static double yarn_dim(double rotations, int dim, double base, double orig) {
    return dim * log(orig / (rotations * 2.0 * M_PI)) / (2.0 * log(base));
}

static int yarn_read(const cfg_obj *o, net_config *nc, ms_err *err) {
    double f, fast, slow, orig, af, ms, msa;
    int trunc, has_af, has_ms, has_msa;
    if (cfg_pos(o, "factor", 1e6, 1.0, &f, err) < 0 || cfg_pos(o, "beta_fast", 1e6, 32.0, &fast, err) < 0 ||
        cfg_pos(o, "beta_slow", 1e6, 1.0, &slow, err) < 0 ||
        cfg_pos(o, "original_max_position_embeddings", 1e12, nc->npos, &orig, err) < 0 ||
        cfg_bool(o, "truncate", 1, &trunc, err) < 0 || (has_af = cfg_pos(o, "attention_factor", 1e6, 1.0, &af, err)) < 0 ||
        (has_ms = cfg_num(o, "mscale", 0.0, 1e6, 0.0, &ms, err)) < 0 ||
        (has_msa = cfg_num(o, "mscale_all_dim", 0.0, 1e6, 0.0, &msa, err)) < 0)
        return -1;
    if (!has_af) af = ms > 0 && msa > 0 ? yarn_mscale(f, ms) / yarn_mscale(f, msa) : yarn_mscale(f, 1.0);
    int dim = nc->rot;
    double lo = yarn_dim(fast, dim, nc->theta, orig), hi = yarn_dim(slow, dim, nc->theta, orig);
    if (trunc) lo = floor(lo), hi = ceil(hi);
    lo = lo > 0 ? lo : 0, hi = hi < dim - 1 ? hi : dim - 1;
    if (lo == hi) hi += 0.001; // as transformers: no singular ramp
    for (int i = 0; i < dim / 2; i++) {
        double ext = pow(nc->theta, -2.0 * i / dim), ramp = (i - lo) / (hi - lo);
        double keep = 1.0 - (ramp < 0 ? 0 : ramp > 1 ? 1 : ramp); // the extrapolation's share
        nc->inv_freq[i] = ext / f * (1.0 - keep) + ext * keep;
    }
    nc->rope_af = af;
    nc->rope_factor = f, nc->rope_mscale_all = msa;
    return 0;
}

static int llama3_read(const cfg_obj *o, net_config *nc, ms_err *err) {
    double f, lo_f, hi_f, orig;
    if (cfg_pos(o, "factor", 1e6, 8.0, &f, err) < 0 || cfg_pos(o, "low_freq_factor", 1e6, 1.0, &lo_f, err) < 0 ||
        cfg_pos(o, "high_freq_factor", 1e6, 4.0, &hi_f, err) < 0 ||
        cfg_pos(o, "original_max_position_embeddings", 1e12, 8192, &orig, err) < 0)
        return -1;
    if (hi_f == lo_f)
        return ms_fail(err, "%s: key '%shigh_freq_factor' equals low_freq_factor", o->file, o->scope);
    rope_default(nc);
    for (int i = 0; i < nc->rot / 2; i++) {
        double fr = nc->inv_freq[i], wl = 2.0 * M_PI / fr, smooth = (orig / wl - lo_f) / (hi_f - lo_f);
        if (wl > orig / lo_f) nc->inv_freq[i] = fr / f; // low frequencies
        else if (wl >= orig / hi_f) nc->inv_freq[i] = (1.0 - smooth) * fr / f + smooth * fr;
    }
    return 0;
}

/* key's list of rot/2 positive factors f: out_i = theta^(-2i/rot) / f_i */
static int longrope_factors(const cfg_obj *o, const char *key, const net_config *nc, double *out, ms_err *err) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o->obj, key);
    int half = nc->rot / 2;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != half)
        return ms_fail(err, "%s: key '%s%s' should list %d factors (one per rotated pair of a head's %d dims)",
                       o->file, o->scope, key, half, nc->rot);
    for (int i = 0; i < half; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1e30)
            return ms_fail(err, "%s: key '%s%s[%d]' is not a positive number", o->file, o->scope, key, i);
        out[i] = pow(nc->theta, -2.0 * i / nc->rot) / v->valuedouble;
    }
    return 0;
}

/* original_max_position_embeddings: the rope object's, else the top level's
 * (required: the length beyond which the long set turns) */
static int rope_orig_read(const cfg_obj *top, const cfg_obj *o, double *orig, ms_err *err) {
    int r = cfg_pos(o, "original_max_position_embeddings", 1e12, 0.0, orig, err);
    if (r < 0 || (!r && (r = cfg_pos(top, "original_max_position_embeddings", 1e12, 0.0, orig, err)) < 0)) return -1;
    if (!r)
        return ms_fail(err, "%s: key 'original_max_position_embeddings' is missing (the length beyond which "
                            "the rotary embedding's long set applies)", top->file);
    return 0;
}

/* Phi-3's longrope: short factors up to original_max_position_embeddings tokens,
 * long ones beyond */
static int longrope_read(const cfg_obj *top, const cfg_obj *o, net_config *nc, ms_err *err) {
    double orig, f, af;
    if (rope_orig_read(top, o, &orig, err) || cfg_pos(o, "factor", 1e6, nc->npos / orig, &f, err) < 0 ||
        cfg_pos(o, "attention_factor", 1e6, f <= 1.0 ? 1.0 : sqrt(1.0 + log(f) / log(orig)), &af, err) < 0 ||
        longrope_factors(o, "short_factor", nc, nc->inv_freq, err) ||
        longrope_factors(o, "long_factor", nc, nc->inv_freq_long, err))
        return -1;
    nc->rope_orig = (int)(orig < 1 << 30 ? orig : 1 << 30);
    nc->rope_af = nc->rope_af_long = af;
    return 0;
}

/* PhiMoE's rotary embedding, any kind but "default": cos and sin scaled by
 * short_mscale up to original_max_position_embeddings tokens, long_mscale beyond,
 * in place of the kind's own attention factor (PhimoeRotaryEmbedding) */
static int phimoe_mscale(const cfg_obj *top, const cfg_obj *o, net_config *nc, ms_err *err) {
    static const char *const keys[2] = {"short_mscale", "long_mscale"};
    double *dst[2] = {&nc->rope_af, &nc->rope_af_long}, orig;
    if (rope_orig_read(top, o, &orig, err)) return -1;
    if (!nc->rope_orig) // one set of frequencies for every length
        memcpy(nc->inv_freq_long, nc->inv_freq, sizeof nc->inv_freq);
    nc->rope_orig = (int)(orig < 1 << 30 ? orig : 1 << 30);
    for (int i = 0; i < 2; i++) {
        int r = cfg_pos(o, keys[i], 1e6, 1.0, dst[i], err);
        if (r < 0) return -1;
        if (!r)
            return ms_fail(err, "%s: key '%s%s' is missing (PhiMoE scales cos and sin by it for every rope_type "
                                "but \"default\")",
                           o->file, o->scope, keys[i]);
    }
    return 0;
}

/* the frequencies of rope_scaling's kind */
static int rope_kind_read(const cfg_obj *top, const cfg_obj *o, const char *kind, net_config *nc, ms_err *err) {
    double lin = 1.0;
    if (!strcmp(kind, "default") || !strcmp(kind, "dynamic")) return 0;
    if (!strcmp(kind, "yarn")) return yarn_read(o, nc, err);
    if (!strcmp(kind, "llama3")) return llama3_read(o, nc, err);
    if (!strcmp(kind, "longrope")) return longrope_read(top, o, nc, err);
    if (strcmp(kind, "linear"))
        return ms_fail(err, "%s: key '%srope_type' = \"%s\": this rotary embedding scaling is not implemented "
                            "(moescope computes none, \"default\", \"dynamic\", \"linear\", \"llama3\", "
                            "\"longrope\" and \"yarn\")",
                       top->file, o->scope, kind);
    if (cfg_pos(o, "factor", 1e6, 1.0, &lin, err) < 0) return -1;
    for (int i = 0; i < nc->rot / 2; i++) nc->inv_freq[i] /= lin;
    return 0;
}

void net_rope_at(const net_config *c, int T, const double **inv_freq, double *af) {
    int lng = c->rope_orig > 0 && T > c->rope_orig;
    *inv_freq = lng ? c->inv_freq_long : c->inv_freq;
    *af = lng ? c->rope_af_long : c->rope_af;
}

int net_rope_read(const cfg_obj *top, net_config *nc, ms_err *err) {
    cfg_obj rs, rp;
    nc->rope_af = 1.0;
    snprintf(nc->rope_kind, sizeof nc->rope_kind, "default");
    if (nc->rot / 2 > NET_MAX_ROT / 2)
        return ms_fail(err, "%s: %d rotated dims per head: more than moescope's %d", top->file, nc->rot, NET_MAX_ROT);
    if (cfg_sub(top, "rope_scaling", "rope_scaling.", &rs, err) < 0 ||
        cfg_sub(top, "rope_parameters", "rope_parameters.", &rp, err) < 0 ||
        cfg_pos(&rp, "rope_theta", 1e30, 10000.0, &nc->theta, err) < 0 ||
        cfg_pos(top, "rope_theta", 1e30, nc->theta, &nc->theta, err) < 0)
        return -1;
    rope_default(nc);
    const cfg_obj *o = rs.obj ? &rs : &rp;
    if (!o->obj) return 0;
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o->obj, "rope_type");
    if (!k) k = cJSON_GetObjectItemCaseSensitive(o->obj, "type");
    const char *kind = cJSON_IsString(k) ? k->valuestring : "default";
    snprintf(nc->rope_kind, sizeof nc->rope_kind, "%.15s", kind);
    if (rope_kind_read(top, o, kind, nc, err)) return -1;
    return nc->arch == NET_PHIMOE && strcmp(kind, "default") ? phimoe_mscale(top, o, nc, err) : 0;
}
