/* model_io.c - a layer loaded from and saved to checkpoint files (model_io.h):
 * moescope's own names read here, a family's layout by family_io.c. */
#include "io/model_io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "io/checkpoint.h"
#include "io/family.h"
#include "io/safetensors.h"
#include "model/value_range.h"

/* ---- loading ---- */

/* Every prefix P in f with a tensor "P.gate.weight", as one ", "-separated
 * string (caller frees; the first 8, then how many more), or NULL when there is
 * none. */
static char *layers_joined(const st_file *f) {
    const char *suffix = ".gate.weight";
    size_t sl = strlen(suffix), len = 0;
    char *out = NULL;
    int shown = 0, more = 0;
    for (int i = 0; i < f->ntensors; i++) {
        const char *name = f->tensors[i].name;
        size_t nl = strlen(name);
        if (nl <= sl || strcmp(name + nl - sl, suffix)) continue;
        if (shown == 8) {
            more++;
            continue;
        }
        size_t pl = nl - sl;
        out = ms_realloc(out, len + pl + 3);
        if (len) {
            memcpy(out + len, ", ", 2);
            len += 2;
        }
        memcpy(out + len, name, pl);
        len += pl;
        out[len] = '\0';
        shown++;
    }
    if (more) {
        out = ms_realloc(out, len + 32);
        snprintf(out + len, 32, " and %d more", more);
    }
    return out;
}

int moe_list_layers(const char *path, char ***layers, int *nlayers, ms_err *err) {
    st_file f;
    if (st_open(&f, path, err)) return -1;
    const char *suffix = ".gate.weight";
    size_t sl = strlen(suffix);
    *layers = NULL;
    *nlayers = 0;
    for (int i = 0; i < f.ntensors; i++) {
        const char *name = f.tensors[i].name;
        size_t nl = strlen(name);
        if (nl <= sl || strcmp(name + nl - sl, suffix)) continue;
        *layers = ms_realloc(*layers, (size_t)(*nlayers + 1) * sizeof(char *));
        char *p = ms_malloc(nl - sl + 1);
        memcpy(p, name, nl - sl);
        p[nl - sl] = '\0';
        (*layers)[(*nlayers)++] = p;
    }
    st_close(&f);
    return 0;
}

int moe_find_layers(const char *path, int force, family_layer **out, int *n, ms_err *err) {
    ckpt c;
    *out = NULL, *n = 0;
    if (ckpt_open(&c, path, err)) return -1;
    int rc = family_find_layers(&c, force, out, n, err);
    ckpt_close(&c);
    if (rc || !*n || (*out)[0].family != FAM_NATIVE) return rc;
    family_layers_free(*out, *n); // moescope's own names: every L.gate.weight
    *out = NULL, *n = 0;
    char **names = NULL;
    int nn = 0;
    if (moe_list_layers(path, &names, &nn, err)) return -1;
    *out = ms_calloc((size_t)(nn ? nn : 1), sizeof(family_layer));
    for (int i = 0; i < nn; i++) (*out)[i] = (family_layer){.family = FAM_NATIVE, .prefix = names[i], .block = -1};
    free(names);
    *n = nn;
    return 0;
}

/* A 2-D tensor's shape, or an error naming it. */
static int shape2(const st_file *f, const char *name, int64_t *r, int64_t *c, ms_err *err) {
    const st_tensor *t = st_find(f, name);
    if (!t) return ms_fail(err, "%s: missing required tensor '%s'", f->path, name);
    if (t->ndim != 2)
        return ms_fail(err, "%s: tensor '%s' should be 2-D, has %d dimensions", f->path, name,
                       t->ndim);
    *r = t->shape[0];
    *c = t->shape[1];
    return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Read one optional tensor of shape want into out (left as zeros if absent).
 * Returns 1 if present, 0 if absent, -1 on error. */
static int read_opt(const st_file *f, const char *name, int ndim, const int64_t *want,
                    float *out, ms_err *err) {
    if (!st_find(f, name)) return 0;
    return st_read_f32_shape(f, name, ndim, want, out, err) ? -1 : 1;
}

/* Read expert tensors "<base>.fc1.weight" etc. into e. */
static int read_expert(const st_file *f, const char *base, moe_expert *e, const moe_config *c,
                       int *any_bias, ms_err *err) {
    char name[512];
    int64_t hd[2] = {c->h, c->d}, dh[2] = {c->d, c->h}, hh[1] = {c->h}, dd[1] = {c->d};
    int r;
    snprintf(name, sizeof name, "%s.fc1.weight", base);
    if (st_read_f32_shape(f, name, 2, hd, e->fc1_w, err)) return -1;
    snprintf(name, sizeof name, "%s.fc2.weight", base);
    if (st_read_f32_shape(f, name, 2, dh, e->fc2_w, err)) return -1;
    snprintf(name, sizeof name, "%s.fc1.bias", base);
    if ((r = read_opt(f, name, 1, hh, e->fc1_b, err)) < 0) return -1;
    *any_bias |= r;
    snprintf(name, sizeof name, "%s.fc2.bias", base);
    if ((r = read_opt(f, name, 1, dd, e->fc2_b, err)) < 0) return -1;
    *any_bias |= r;
    if (moe_act_glu(c->act)) {
        snprintf(name, sizeof name, "%s.fc3.weight", base);
        if (!st_find(f, name))
            return ms_fail(err, "%s: missing required tensor '%s' (activation silu_glu needs fc3)",
                           f->path, name);
        if (st_read_f32_shape(f, name, 2, hd, e->fc3_w, err)) return -1;
        snprintf(name, sizeof name, "%s.fc3.bias", base);
        if ((r = read_opt(f, name, 1, hh, e->fc3_b, err)) < 0) return -1;
        *any_bias |= r;
    }
    return 0;
}

/* Check (without reading) that tensor `name`, if present, has shape want;
 * a missing one is an error only when required. */
static int check_shape(const st_file *f, const char *name, int ndim, const int64_t *want,
                       int required, ms_err *err) {
    const st_tensor *t = st_find(f, name);
    if (!t) return required ? ms_fail(err, "%s: missing required tensor '%s'", f->path, name) : 0;
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == want[i];
    if (same) return 0;
    char hb[160], wb[160];
    int k = 0;
    hb[0] = wb[0] = 0;
    for (int i = 0; i < t->ndim && k < (int)sizeof hb; i++)
        k += snprintf(hb + k, sizeof hb - (size_t)k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    k = 0;
    for (int i = 0; i < ndim && k < (int)sizeof wb; i++)
        k += snprintf(wb + k, sizeof wb - (size_t)k, "%s%lld", i ? ", " : "", (long long)want[i]);
    return ms_fail(err, "%s: tensor '%s' has shape [%s], expected [%s]", f->path, name, hb, wb);
}

/* Every expert's (and shared expert's) tensor shapes, before anything is
 * allocated: the allocation is then bounded by what the file really holds
 * (each weight has its own, non-overlapping bytes, checked by st_open), so a
 * small hostile file cannot declare n = 4096 experts of which only the first
 * exists and make moe_alloc reserve gigabytes. */
static int check_expert_shapes(const st_file *f, const char *base, const moe_config *c,
                               ms_err *err) {
    char name[512];
    int64_t hd[2] = {c->h, c->d}, dh[2] = {c->d, c->h}, hh[1] = {c->h}, dd[1] = {c->d};
    const struct {
        const char *suffix;
        int ndim;
        const int64_t *want;
        int required;
    } t[6] = {{"fc1.weight", 2, hd, 1}, {"fc2.weight", 2, dh, 1}, {"fc1.bias", 1, hh, 0},
              {"fc2.bias", 1, dd, 0},   {"fc3.weight", 2, hd, 1}, {"fc3.bias", 1, hh, 0}};
    int nt = moe_act_glu(c->act) ? 6 : 4;
    for (int i = 0; i < nt; i++) {
        snprintf(name, sizeof name, "%.400s.%s", base, t[i].suffix);
        if (i == 4 && !st_find(f, name))
            return ms_fail(err, "%s: missing required tensor '%s' (activation silu_glu needs fc3)",
                           f->path, name);
        if (check_shape(f, name, t[i].ndim, t[i].want, t[i].required, err)) return -1;
    }
    return 0;
}

/* Count "<L>.<kind>.<i>.fc1.weight" for i = 0, 1, ... until one is missing. */
static int count_experts(const st_file *f, const char *layer, const char *kind) {
    char name[512];
    int i = 0;
    for (;; i++) {
        snprintf(name, sizeof name, "%s.%s.%d.fc1.weight", layer, kind, i);
        if (!st_find(f, name)) break;
    }
    return i;
}

static const char *const ROUTER_KEYS[] = {
    "moescope.score",     "moescope.renormalize", "moescope.renorm_eps", "moescope.routed_scale",
    "moescope.act_limit", "moescope.n_group",     "moescope.topk_group", "moescope.group_score",
    "moescope.shared_hidden", "moescope.jitter_eps"};

static int is_router_key(const char *k) {
    for (size_t i = 0; i < sizeof ROUTER_KEYS / sizeof *ROUTER_KEYS; i++)
        if (!strcmp(k, ROUTER_KEYS[i])) return 1;
    return 0;
}

static int parse_float(const char *s, float *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v == v) || v > 1e30 || v < -1e30) return -1;
    *out = (float)v;
    return 0;
}

/* The router beyond dense/top-k, from the moescope.* metadata of a native file
 * (every key optional; absent keys keep the zero defaults). */
static int native_router_meta(const st_file *f, moe_config *c, ms_err *err) {
    const char *v, *path = f->path;
    long x;
    if ((v = st_meta(f, "moescope.score"))) {
        if (!strcmp(v, "softmax")) c->score = SCORE_SOFTMAX;
        else if (!strcmp(v, "sigmoid")) c->score = SCORE_SIGMOID;
        else if (!strcmp(v, "sparsemixer")) c->score = SCORE_SPARSEMIXER;
        else return ms_fail(err, "%s: metadata moescope.score = '%s' (expected softmax, sigmoid or sparsemixer)",
                            path, v);
        c->origin[RP_SCORE] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.renormalize"))) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return ms_fail(err, "%s: metadata moescope.renormalize = '%s' must be 1 or 0", path, v);
        c->renorm = v[0] == '1' ? RENORM_YES : RENORM_NO;
        c->origin[RP_RENORM] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.renorm_eps")) && (parse_float(v, &c->renorm_eps) || c->renorm_eps < 0))
        return ms_fail(err, "%s: metadata moescope.renorm_eps = '%s' is not a number in 0..1e30", path, v);
    if ((v = st_meta(f, "moescope.jitter_eps")) && (parse_float(v, &c->jitter_eps) || c->jitter_eps < 0))
        return ms_fail(err, "%s: metadata moescope.jitter_eps = '%s' is not a number in 0..1e30", path, v);
    if ((v = st_meta(f, "moescope.routed_scale"))) {
        if (parse_float(v, &c->scale) || !(c->scale > 0) || c->scale > MOE_MAX_ROUTED_SCALE)
            return ms_fail(err, "%s: metadata moescope.routed_scale = '%s' is not a positive number "
                                "of at most %g", path, v, MOE_MAX_ROUTED_SCALE);
        c->origin[RP_SCALE] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.act_limit"))) {
        if (parse_float(v, &c->act_limit) || !(c->act_limit > 0))
            return ms_fail(err, "%s: metadata moescope.act_limit = '%s' is not a positive number "
                                "of at most %g", path, v, MOE_MAX_ACT_LIMIT);
        c->origin[RP_LIMIT] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.n_group"))) {
        if (parse_int(v, 1, c->n, &x) || c->n % x)
            return ms_fail(err, "%s: metadata moescope.n_group = '%s' must divide n = %d", path, v, c->n);
        c->n_group = (int)x;
        c->topk_group = (int)x;
        c->origin[RP_GROUPS] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.topk_group"))) {
        int G = c->n_group > 1 ? c->n_group : 1;
        if (parse_int(v, 1, G, &x))
            return ms_fail(err, "%s: metadata moescope.topk_group = '%s' must be in 1..n_group = %d", path, v, G);
        c->topk_group = (int)x;
        c->origin[RP_TOPK_GROUP] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.group_score"))) {
        if (!strcmp(v, "max")) c->group_score = GROUP_MAX;
        else if (!strcmp(v, "top2_sum")) c->group_score = GROUP_TOP2_SUM;
        else return ms_fail(err, "%s: metadata moescope.group_score = '%s' (expected max or top2_sum)", path, v);
        c->origin[RP_GROUP_SCORE] = ORIGIN_FILE;
    }
    if ((v = st_meta(f, "moescope.shared_hidden"))) {
        // shared experts of their own width (Qwen2-MoE, DeepSeek); without the key
        // they have the routed experts' width h
        if (parse_int(v, 1, 1 << 20, &x))
            return ms_fail(err, "%s: metadata moescope.shared_hidden = '%s' is not a positive integer", path, v);
        c->hs = (int)x;
    }
    if (c->n_group > 1 && c->router == ROUTER_TOPK && c->k > c->topk_group * (c->n / c->n_group))
        return ms_fail(err, "%s: top_k = %d is more than the %d experts of the topk_group = %d kept "
                            "groups", path, c->k, c->topk_group * (c->n / c->n_group), c->topk_group);
    return 0;
}

/* The optional router tensors of a native layer L: "L.gate.correction_bias"
 * (n), "L.shared.gate.weight" (d) and "L.output.bias" (d); sets the flags. */
static int native_router_tensors(const st_file *f, const char *layer, moe_config *c, ms_err *err) {
    char name[512];
    int64_t nn[1] = {c->n}, dd[1] = {c->d};
    snprintf(name, sizeof name, "%.400s.gate.correction_bias", layer);
    if (check_shape(f, name, 1, nn, 0, err)) return -1;
    c->has_corr_bias = st_find(f, name) != NULL;
    snprintf(name, sizeof name, "%.400s.shared.gate.weight", layer);
    if (check_shape(f, name, 1, dd, 0, err)) return -1;
    c->shared_gated = st_find(f, name) != NULL;
    if (c->shared_gated && c->s == 0)
        return ms_fail(err, "%s: '%s' gates shared experts, but the layer has none", f->path, name);
    snprintf(name, sizeof name, "%.400s.output.bias", layer);
    if (check_shape(f, name, 1, dd, 0, err)) return -1;
    c->has_out_bias = st_find(f, name) != NULL;
    return 0;
}

/* Read the tensors native_router_tensors found into m. */
static int native_router_read(const st_file *f, const char *layer, moe_model *m, ms_err *err) {
    char name[512];
    int64_t nn[1] = {m->cfg.n}, dd[1] = {m->cfg.d};
    snprintf(name, sizeof name, "%.400s.gate.correction_bias", layer);
    if (m->corr_b && st_read_f32_shape(f, name, 1, nn, m->corr_b, err)) return -1;
    snprintf(name, sizeof name, "%.400s.shared.gate.weight", layer);
    if (m->shared_gate_w && st_read_f32_shape(f, name, 1, dd, m->shared_gate_w, err)) return -1;
    snprintf(name, sizeof name, "%.400s.output.bias", layer);
    if (m->out_b && st_read_f32_shape(f, name, 1, dd, m->out_b, err)) return -1;
    return 0;
}

/* The moescope.* metadata of a native file: router, top_k, activation,
 * residual (defaults: dense, 2, relu, 1). */
static int native_base_meta(const st_file *f, moe_config *c, ms_err *err) {
    const char *path = f->path;
    c->router = ROUTER_DENSE;
    c->k = 2;
    c->act = ACT_RELU;
    c->residual = 1;
    const char *v;
    if ((v = st_meta(f, "moescope.router"))) {
        c->origin[RP_K] = ORIGIN_FILE; // the router's kind and k (moe_router_defaulted)
        if (!strcmp(v, "dense")) c->router = ROUTER_DENSE;
        else if (!strcmp(v, "topk")) c->router = ROUTER_TOPK;
        else
            return ms_fail(err, "%s: unknown router '%s' in metadata moescope.router (expected "
                                "dense or topk)",
                           path, v);
    }
    if ((v = st_meta(f, "moescope.top_k"))) {
        long k;
        if (parse_int(v, 1, 1 << 20, &k))
            return ms_fail(err, "%s: metadata moescope.top_k = '%s' is not a positive integer",
                           path, v);
        c->k = (int)k;
    }
    if (c->router == ROUTER_TOPK && (c->k < 1 || c->k > c->n))
        return ms_fail(err, "%s: metadata moescope.top_k = %d must be in 1..n = %d", path, c->k,
                       c->n);
    if (c->router == ROUTER_DENSE && c->k > c->n) c->k = c->n; /* meaningless for dense; keep it sane */
    if ((v = st_meta(f, "moescope.activation"))) {
        if (!strcmp(v, "relu")) c->act = ACT_RELU;
        else if (!strcmp(v, "gelu")) c->act = ACT_GELU;
        else if (!strcmp(v, "gelu_new")) c->act = ACT_GELU_TANH;
        else if (!strcmp(v, "silu_glu")) c->act = ACT_SILU_GLU;
        else if (!strcmp(v, "gpt_oss_swiglu")) c->act = ACT_GPT_OSS;
        else
            return ms_fail(err, "%s: unknown activation '%s' in metadata moescope.activation "
                                "(expected relu, gelu, gelu_new, silu_glu or gpt_oss_swiglu)",
                           path, v);
    }
    if ((v = st_meta(f, "moescope.residual"))) {
        if (!strcmp(v, "1")) c->residual = 1;
        else if (!strcmp(v, "0")) c->residual = 0;
        else
            return ms_fail(err, "%s: metadata moescope.residual = '%s' must be 1 or 0", path, v);
    }

    return 0;
}

/* The optional head: C and whether LayerNorm is there (shapes checked). */
static int native_head_shape(const st_file *f, moe_config *c, ms_err *err) {
    const char *path = f->path;
    const st_tensor *ho = st_find(f, "head.out.weight");
    if (ho) {
        int64_t C, dh;
        if (shape2(f, "head.out.weight", &C, &dh, err)) return -1;
        if (dh != c->d)
            return ms_fail(err, "%s: tensor 'head.out.weight' has shape [%lld, %lld] but the layer "
                                "has d = %d",
                           path, (long long)C, (long long)dh, c->d);
        if (C < 1 || C > (1 << 20))
            return ms_fail(err, "%s: tensor 'head.out.weight' has an unusable shape [%lld, %lld]",
                           path, (long long)C, (long long)dh);
        c->C = (int)C;
        c->has_head = 1;
        c->has_norm = st_find(f, "head.norm.weight") != NULL;
    } else if (st_find(f, "head.norm.weight") || st_find(f, "head.out.bias")) {
        return ms_fail(err, "%s: the file has head tensors but no 'head.out.weight'", path);
    }

    return 0;
}

static int load_from(moe_model *m, const st_file *f, const char *layer, ms_err *err) {
    const char *path = f->path;
    char name[512];
    moe_config c;
    memset(&c, 0, sizeof c);

    // the gate fixes n and d
    snprintf(name, sizeof name, "%s.gate.weight", layer);
    if (!st_find(f, name)) {
        char *have = layers_joined(f);
        int rc = have ? ms_fail(err, "%s: no MoE layer '%s' (no tensor '%s'); layers in the file: %s "
                                     "(open one with --layer %.*s)",
                                path, layer, name, have, (int)strcspn(have, ", "), have)
                      : ms_fail(err, "%s: no MoE layer '%s' (no tensor '%s'), and no tensor "
                                     "named '*.gate.weight' at all",
                                path, layer, name);
        free(have);
        return rc;
    }
    int64_t n64, d64, h64, d2;
    if (shape2(f, name, &n64, &d64, err)) return -1;
    if (n64 < 1 || d64 < 1 || n64 > 4096 || d64 > (1 << 20))
        return ms_fail(err, "%s: tensor '%s' has an unusable shape [%lld, %lld]", path, name,
                       (long long)n64, (long long)d64);
    snprintf(name, sizeof name, "%s.experts.0.fc1.weight", layer);
    if (shape2(f, name, &h64, &d2, err)) return -1;
    if (h64 < 1 || h64 > (1 << 20))
        return ms_fail(err, "%s: tensor '%s' has an unusable shape [%lld, %lld]", path, name,
                       (long long)h64, (long long)d2);
    if (d2 != d64)
        return ms_fail(err, "%s: tensor '%s' has shape [%lld, %lld] but the gate has d = %lld "
                            "(expected [%lld, %lld])",
                       path, name, (long long)h64, (long long)d2, (long long)d64, (long long)h64,
                       (long long)d64);
    c.n = (int)n64;
    c.d = (int)d64;
    c.h = (int)h64;
    int found = count_experts(f, layer, "experts");
    if (found > c.n)
        return ms_fail(err, "%s: '%s.gate.weight' has %d rows (experts) but the file holds %d "
                            "experts ('%s.experts.%d.fc1.weight' exists)",
                       path, layer, c.n, found, layer, c.n);
    if (found != c.n)
        return ms_fail(err, "%s: '%s.gate.weight' has %d rows (experts) but the file holds %d "
                            "expert(s) '%s.experts.0..%d' (the next, '%s.experts.%d.fc1.weight', "
                            "is missing)",
                       path, layer, c.n, found, layer, found - 1, layer, found);
    c.s = count_experts(f, layer, "shared");

    if (native_base_meta(f, &c, err)) return -1;
    if (native_router_meta(f, &c, err) || native_router_tensors(f, layer, &c, err)) return -1;

    if (native_head_shape(f, &c, err)) return -1;

    // all shapes first, so the allocation below is no larger than the file's data
    moe_config sc = moe_shared_config(&c);
    for (int i = 0; i < c.n + c.s; i++) {
        if (i < c.n) snprintf(name, sizeof name, "%s.experts.%d", layer, i);
        else snprintf(name, sizeof name, "%s.shared.%d", layer, i - c.n);
        if (check_expert_shapes(f, name, i < c.n ? &c : &sc, err)) return -1;
    }
    moe_alloc(m, &c);
    m->path = ms_strdup(path);
    m->layer = ms_strdup(layer);
    int64_t nd[2] = {c.n, c.d}, nn[1] = {c.n};
    snprintf(name, sizeof name, "%s.gate.weight", layer);
    if (st_read_f32_shape(f, name, 2, nd, m->gate_w, err)) goto fail;
    snprintf(name, sizeof name, "%s.gate.bias", layer);
    int r = read_opt(f, name, 1, nn, m->gate_b, err);
    if (r < 0) goto fail;
    m->cfg.has_gate_bias = r;
    int any_bias = 0;
    const char *slash = strrchr(path, '/');
    snprintf(name, sizeof name, "load %.80s", slash ? slash + 1 : path);
    progress_begin(name, c.n + c.s, "experts");
    for (int i = 0; i < c.n; i++) {
        snprintf(name, sizeof name, "%s.experts.%d", layer, i);
        if (progress_cancelled()) { // a listener's cancel (progress.h): the explorer's layer switch
            ms_fail(err, "%s: cancelled", path);
            goto fail;
        }
        if (read_expert(f, name, &m->experts[i], &m->cfg, &any_bias, err)) goto fail;
        progress_add(1);
    }
    sc = moe_shared_config(&m->cfg);
    for (int j = 0; j < c.s; j++) {
        snprintf(name, sizeof name, "%s.shared.%d", layer, j);
        if (read_expert(f, name, &m->shared[j], &sc, &any_bias, err)) goto fail;
        progress_add(1);
    }
    progress_end();
    if (native_router_read(f, layer, m, err)) goto fail;
    m->cfg.has_expert_bias = any_bias;
    if (c.has_head) {
        int64_t Cd[2] = {c.C, c.d}, CC[1] = {c.C}, dd[1] = {c.d};
        if (st_read_f32_shape(f, "head.out.weight", 2, Cd, m->head_w, err)) goto fail;
        if (read_opt(f, "head.out.bias", 1, CC, m->head_b, err) < 0) goto fail;
        if (c.has_norm) {
            if (st_read_f32_shape(f, "head.norm.weight", 1, dd, m->norm_w, err)) goto fail;
            if (!st_find(f, "head.norm.bias")) {
                // a LayerNorm without its bias: beta = 0
            } else if (st_read_f32_shape(f, "head.norm.bias", 1, dd, m->norm_b, err)) {
                goto fail;
            }
        }
    }

    // keep every other metadata entry (seed, data set, ...); st_open refused repeated
    // keys, so they are appended without a search (linear in a file of 100000 keys)
    m->meta = ms_calloc(f->nmeta ? (size_t)f->nmeta : 1, sizeof(moe_meta));
    for (int i = 0; i < f->nmeta; i++) {
        const char *k = f->meta_keys[i];
        if (!strcmp(k, "moescope.router") || !strcmp(k, "moescope.top_k") ||
            !strcmp(k, "moescope.activation") || !strcmp(k, "moescope.residual") ||
            is_router_key(k))
            continue;
        m->meta[m->nmeta].key = ms_strdup(k);
        m->meta[m->nmeta].value = ms_strdup(f->meta_vals[i]);
        m->nmeta++;
    }
    return 0;
fail:
    progress_end();
    moe_free(m);
    return -1;
}

/* Does the file look like moescope's own names (a ".fc1."/".fc2." tensor, or no
 * ".experts" at all)? Then a layer that is not recognised gets the native
 * loader's precise message; otherwise the family error listing what was found. */
static int looks_native(const ckpt *c) {
    int experts = 0;
    for (int i = 0; i < c->ntensors; i++) {
        if (strstr(c->names[i], ".fc1.") || strstr(c->names[i], ".fc2.")) return 1;
        experts |= strstr(c->names[i], ".experts") != NULL;
    }
    return !experts;
}

static int load_layer_of(moe_model *m, const char *path, const char *layer,
                         const family_overrides *o, expert_source *src, ms_err *err);

int moe_load(moe_model *m, const char *path, const char *layer, const family_overrides *o,
             ms_err *err) {
    return load_layer_of(m, path, layer, o, NULL, err);
}

static int stream_read(void *ctx, int e, unsigned parts, moe_expert *dst, ms_err *err) {
    return family_stream_read(ctx, e, parts, dst, err);
}

int moe_load_stream(moe_model *m, const char *path, const char *layer, const family_overrides *o,
                    expert_source *src, ms_err *err) {
    memset(src, 0, sizeof *src);
    return load_layer_of(m, path, layer, o, src, err);
}

void moe_source_close(expert_source *src) {
    if (src && src->ctx) family_stream_close(src->ctx);
    if (src) memset(src, 0, sizeof *src);
}

/* --top-k K on moescope's own layer: a top-k router keeping K (a file without
 * routing metadata is otherwise read as dense) */
static int native_top_k(moe_model *m, const family_overrides *o, ms_err *err) {
    if (!o || o->k <= 0) return 0;
    if (o->k > m->cfg.n)
        return ms_fail(err, "--top-k %d: the layer %s of %s has %d experts", o->k, m->layer, m->path, m->cfg.n);
    m->cfg.router = ROUTER_TOPK;
    m->cfg.k = o->k;
    m->cfg.origin[RP_K] = ORIGIN_CLI;
    return 0;
}

/* moe_load; with src, a family layer (not MXFP4) is opened expert by expert:
 * src->read set, the checkpoint kept open by the stream */
static int load_layer_of(moe_model *m, const char *path, const char *layer,
                         const family_overrides *o, expert_source *src, ms_err *err) {
    memset(m, 0, sizeof *m);
    ckpt c;
    if (ckpt_open(&c, path, err)) return -1;
    int force = o ? o->family : -1, single = !ckpt_sharded(&c), rc = -1, nl = 0, which = 0;
    family_layer *ls = NULL;
    ms_err ferr;
    if (family_find_layers(&c, force, &ls, &nl, &ferr)) {
        if (single && (force < 0 || force == FAM_NATIVE) && looks_native(&c))
            rc = load_from(m, &c.shards[0], layer ? layer : "moe", err); // its own messages
        if (!rc && (rc = native_top_k(m, o, err))) moe_free(m);
        else if (err)
            *err = ferr;
        goto done;
    }
    int any_native = 0;
    for (int i = 0; i < nl; i++) any_native |= ls[i].family == FAM_NATIVE;
    if (any_native && single) {
        // moescope's own names keep their loader, its messages and "moe" as the default;
        // a block index names the layer's prefix
        int picked = layer && !family_pick(&c, ls, nl, layer, &which, NULL);
        if (!picked || ls[which].family == FAM_NATIVE) {
            rc = load_from(m, &c.shards[0], picked ? ls[which].prefix : layer ? layer : "moe", err);
            if (!rc && (rc = native_top_k(m, o, err))) moe_free(m);
            goto done;
        }
    } else if (family_pick(&c, ls, nl, layer, &which, err)) {
        goto done;
    }
    if (ls[which].family == FAM_NATIVE) {
        ms_fail(err, "%s: moescope's own layer names are read from single files", path);
        goto done;
    }
    if (src) {
        family_stream *fs = NULL;
        rc = family_load_stream(m, &c, &ls[which], o, &fs, err);
        if (!rc) {
            src->read = stream_read;
            src->ctx = fs;
            family_layers_free(ls, nl);
            return 0; // the stream owns c now
        }
        if (rc < 0) goto done;
    }
    rc = family_load(m, &c, &ls[which], o, err); // MXFP4 experts are read whole
done:
    family_layers_free(ls, nl);
    ckpt_close(&c);
    return rc;
}

/* moe_load_mapped, the shared experts mapped too when shared (family_load_mapped_shared) */
static int load_mapped(moe_model *m, const char *path, const char *layer, const family_overrides *o, ckpt **map,
                       int shared, ms_err *err) {
    memset(m, 0, sizeof *m);
    *map = NULL;
    ckpt *c = ms_calloc(1, sizeof *c);
    if (ckpt_open(c, path, err)) {
        free(c);
        return -1;
    }
    int force = o ? o->family : -1, nl = 0, which = 0, rc = 1;
    family_layer *ls = NULL;
    ms_err ferr;
    // moescope's own names and anything the family loader does not read: moe_load's
    if (!family_find_layers(c, force, &ls, &nl, &ferr)) {
        int any_native = 0;
        for (int i = 0; i < nl; i++) any_native |= ls[i].family == FAM_NATIVE;
        if (!any_native && !family_pick(c, ls, nl, layer, &which, &ferr))
            rc = (shared ? family_load_mapped_shared : family_load_mapped)(m, c, &ls[which], o, err);
        family_layers_free(ls, nl);
    }
    if (rc) {
        ckpt_close(c);
        free(c);
        return rc < 0 ? -1 : 1;
    }
    *map = c; // the routed weights are its pages
    return 0;
}

int moe_load_mapped(moe_model *m, const char *path, const char *layer, const family_overrides *o, ckpt **map,
                    ms_err *err) {
    return load_mapped(m, path, layer, o, map, 0, err);
}

int moe_load_mapped_shared(moe_model *m, const char *path, const char *layer, const family_overrides *o,
                           ckpt **map, ms_err *err) {
    return load_mapped(m, path, layer, o, map, 1, err);
}

void moe_map_close(ckpt *map) {
    if (!map) return;
    ckpt_close(map);
    free(map);
}

/* ---- saving ---- */

typedef struct {
    char **names;
    int count;
} name_pool;

static const char *pool_name(name_pool *p, const char *fmt, const char *a, int i,
                             const char *b) {
    char buf[512];
    if (i >= 0) snprintf(buf, sizeof buf, fmt, a, i, b);
    else snprintf(buf, sizeof buf, fmt, a, b);
    p->names = ms_realloc(p->names, (size_t)(p->count + 1) * sizeof(char *));
    p->names[p->count] = ms_strdup(buf);
    return p->names[p->count++];
}

static void add_expert(st_writer *w, name_pool *p, const char *layer, const char *kind, int i,
                       const moe_expert *e, const moe_config *c) {
    int64_t hd[2] = {c->h, c->d}, dh[2] = {c->d, c->h}, hh[1] = {c->h}, dd[1] = {c->d};
    char base[400];
    snprintf(base, sizeof base, "%s.%s", layer, kind);
    st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc1.weight"), 2, hd, e->fc1_w);
    st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc1.bias"), 1, hh, e->fc1_b);
    st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc2.weight"), 2, dh, e->fc2_w);
    st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc2.bias"), 1, dd, e->fc2_b);
    if (moe_act_glu(c->act)) {
        st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc3.weight"), 2, hd, e->fc3_w);
        st_writer_add_f32(w, pool_name(p, "%s.%d.%s", base, i, "fc3.bias"), 1, hh, e->fc3_b);
    }
}

/* The moescope.* router keys that differ from the native defaults (so a
 * native model's file is unchanged). */
static void router_meta_write(st_writer *w, const moe_config *c) {
    char b[64];
    if (c->score != SCORE_SOFTMAX) st_writer_meta(w, "moescope.score", moe_score_name(c->score));
    if (c->renorm != RENORM_YES) st_writer_meta(w, "moescope.renormalize", "0");
    if (c->renorm_eps != 0.0f) {
        snprintf(b, sizeof b, "%.9g", c->renorm_eps);
        st_writer_meta(w, "moescope.renorm_eps", b);
    }
    if (c->score == SCORE_SPARSEMIXER) {
        snprintf(b, sizeof b, "%.9g", c->jitter_eps);
        st_writer_meta(w, "moescope.jitter_eps", b);
    }
    if (c->scale != 1.0f && c->scale != 0.0f) {
        snprintf(b, sizeof b, "%.9g", c->scale);
        st_writer_meta(w, "moescope.routed_scale", b);
    }
    if (c->act == ACT_GPT_OSS && c->act_limit != 7.0f && c->act_limit != 0.0f) {
        snprintf(b, sizeof b, "%.9g", c->act_limit);
        st_writer_meta(w, "moescope.act_limit", b);
    }
    if (c->s > 0 && c->hs > 0 && c->hs != c->h) {
        snprintf(b, sizeof b, "%d", c->hs);
        st_writer_meta(w, "moescope.shared_hidden", b);
    }
    if (c->n_group > 1) {
        snprintf(b, sizeof b, "%d", c->n_group);
        st_writer_meta(w, "moescope.n_group", b);
        snprintf(b, sizeof b, "%d", c->topk_group);
        st_writer_meta(w, "moescope.topk_group", b);
        st_writer_meta(w, "moescope.group_score", c->group_score == GROUP_TOP2_SUM ? "top2_sum" : "max");
    }
}

/* Add the layer (gate, experts, shared experts, every bias) and the head to w,
 * with the moescope.* metadata and the rest of m->meta. The names live in p. */
static void writer_fill(st_writer *w, name_pool *p, const moe_model *m) {
    const moe_config *c = &m->cfg;
    const char *layer = m->layer ? m->layer : "moe";
    int64_t nd[2] = {c->n, c->d}, nn[1] = {c->n};
    st_writer_add_f32(w, pool_name(p, "%s.%s", layer, -1, "gate.weight"), 2, nd, m->gate_w);
    st_writer_add_f32(w, pool_name(p, "%s.%s", layer, -1, "gate.bias"), 1, nn, m->gate_b);
    for (int i = 0; i < c->n; i++) add_expert(w, p, layer, "experts", i, &m->experts[i], c);
    moe_config sc = moe_shared_config(c);
    for (int j = 0; j < c->s; j++) add_expert(w, p, layer, "shared", j, &m->shared[j], &sc);
    int64_t dd1[1] = {c->d};
    if (m->corr_b)
        st_writer_add_f32(w, pool_name(p, "%s.%s", layer, -1, "gate.correction_bias"), 1, nn,
                          m->corr_b);
    if (m->shared_gate_w)
        st_writer_add_f32(w, pool_name(p, "%s.%s", layer, -1, "shared.gate.weight"), 1, dd1,
                          m->shared_gate_w);
    if (m->out_b)
        st_writer_add_f32(w, pool_name(p, "%s.%s", layer, -1, "output.bias"), 1, dd1, m->out_b);
    if (c->has_head) {
        int64_t Cd[2] = {c->C, c->d}, CC[1] = {c->C}, dd[1] = {c->d};
        if (c->has_norm) {
            st_writer_add_f32(w, "head.norm.weight", 1, dd, m->norm_w);
            st_writer_add_f32(w, "head.norm.bias", 1, dd, m->norm_b);
        }
        st_writer_add_f32(w, "head.out.weight", 2, Cd, m->head_w);
        st_writer_add_f32(w, "head.out.bias", 1, CC, m->head_b);
    }
    char kbuf[32];
    st_writer_meta(w, "moescope.router", moe_router_name(c->router));
    snprintf(kbuf, sizeof kbuf, "%d", c->k);
    st_writer_meta(w, "moescope.top_k", kbuf);
    st_writer_meta(w, "moescope.activation", moe_act_name(c->act));
    st_writer_meta(w, "moescope.residual", c->residual ? "1" : "0");
    router_meta_write(w, c);
    for (int i = 0; i < m->nmeta; i++) st_writer_meta(w, m->meta[i].key, m->meta[i].value);
}

static void pool_free(name_pool *p) {
    for (int i = 0; i < p->count; i++) free(p->names[i]);
    free(p->names);
}

int moe_save(const moe_model *m, const char *path, ms_err *err) {
    // a real family's layer goes back into the layout of the checkpoint it came from
    if (strcmp(moe_family(&m->cfg), "native") && m->path) return family_save(m, m->path, path, NULL, err);
    st_writer *w = st_writer_new();
    name_pool p = {NULL, 0};
    writer_fill(w, &p, m);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    pool_free(&p);
    return rc;
}

/* Is name inside the layer's own namespace: "<L>.gate.*", "<L>.experts.*",
 * "<L>.shared.*" or "<L>.output.*"? Those tensors are rewritten from m (or, if moescope does not
 * know them, dropped: they would no longer match the permuted experts). */
static int in_layer(const char *name, const char *layer) {
    size_t k = strlen(layer);
    if (strncmp(name, layer, k) || name[k] != '.') return 0;
    const char *rest = name + k + 1;
    return !strncmp(rest, "gate.", 5) || !strncmp(rest, "experts.", 8) ||
           !strncmp(rest, "shared.", 7) || !strncmp(rest, "output.", 7);
}

/* Does writer_fill write this head tensor (so the source's copy must not be added)? */
static int head_written(const char *name, const moe_config *c) {
    if (!c->has_head) return 0;
    if (!strcmp(name, "head.out.weight") || !strcmp(name, "head.out.bias")) return 1;
    return c->has_norm && (!strcmp(name, "head.norm.weight") || !strcmp(name, "head.norm.bias"));
}

static int cmp_cstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int moe_save_with(const moe_model *m, const char *src_path, const char *path, int *ndropped,
                  ms_err *err) {
    if (ndropped) *ndropped = 0;
    if (!src_path) return moe_save(m, path, err);
    if (strcmp(moe_family(&m->cfg), "native")) return family_save(m, src_path, path, NULL, err);
    st_file f;
    if (st_open(&f, src_path, err)) return -1;
    const char *layer = m->layer ? m->layer : "moe";
    st_writer *w = st_writer_new();
    name_pool p = {NULL, 0};
    writer_fill(w, &p, m);
    // the layer's names just written, sorted, to tell rewritten tensors from dropped ones
    char **sorted = ms_malloc((size_t)p.count * sizeof(char *));
    memcpy(sorted, p.names, (size_t)p.count * sizeof(char *));
    qsort(sorted, (size_t)p.count, sizeof(char *), cmp_cstr);
    int dropped = 0;
    // every other tensor of the source, in file order, as its original bytes; the
    // mapping stays open until the write, since the writer borrows the bytes
    for (int i = 0; i < f.ntensors; i++) {
        const st_tensor *t = &f.tensors[i];
        if (in_layer(t->name, layer)) {
            const char *key = t->name;
            if (!bsearch(&key, sorted, (size_t)p.count, sizeof(char *), cmp_cstr)) dropped++;
            continue;
        }
        if (head_written(t->name, &m->cfg)) continue;
        st_writer_add_mapped(w, &f, t); // copied out under the mapping's guard
    }
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    pool_free(&p);
    free(sorted);
    st_close(&f);
    if (ndropped) *ndropped = dropped;
    return rc;
}

int moe_range_check(const moe_model *m, const evalset *E, ms_err *err) {
    value_range r;
    range_finding f;
    range_held(&r, m, E);
    return range_judge(&r, m, &f) ? family_range_fail(m, &f, err) : 0;
}
