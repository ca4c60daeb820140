/* family_io.c - a family's layer in and out of moe_model.
 *
 * A layer is a list of bindings: one per tensor in the checkpoint, each saying
 * which model floats its elements are (elem() below, the only place that knows
 * the layouts). Loading decodes a tensor (any float dtype, or MXFP4) and
 * scatters it into the model; saving gathers it back and encodes it in the
 * tensor's own dtype, so names, dtypes, shapes and packing are the input's. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/codec.h"
#include "io/config_json.h"
#include "io/family.h"
#include "family_table.h"
#include "core/progress.h"

enum { P_FC1W, P_FC1B, P_FC2W, P_FC2B, P_FC3W, P_FC3B };
enum {
    K_GATE_W,   /* [n,d] */
    K_GATE_B,   /* [n] */
    K_EXP,      /* expert e's part, its own shape */
    K_SHARED,   /* the one shared expert (width hs): its part */
    K_STACK,    /* [n, part shape] */
    K_STACK_T,  /* [n,h,d] = fc2 [d,h] transposed (x W storage) */
    K_HALVES,   /* [n,2h,d]: rows 0..h-1 fc1 (gate), h..2h-1 fc3 (up) */
    K_IL_T,     /* [n,d,2h]: column 2j -> fc1 row j, 2j+1 -> fc3 row j (x W storage) */
    K_IL_ROWS,  /* [n,2h,d]: row 2j -> fc1 row j, 2j+1 -> fc3 row j */
    K_IL_BIAS,  /* [n,2h]: 2j -> fc1_b[j], 2j+1 -> fc3_b[j] */
    K_CORR,     /* [n]  selection-only bias (DeepSeek-V3) */
    K_SH_GATE,  /* [1,d] sigmoid gate of the shared expert (Qwen2-MoE) */
    K_OUT_BIAS, /* [d]  added to the layer output (JetMoE) */
};

typedef struct {
    char name[600]; /* the tensor (MXFP4: without _blocks / _scales) */
    int kind, part, e;
    int optional, mx;
    int trans;        /* K_EXP / K_SHARED stored transposed (GPT-2's Conv1D, [in, out]):
                         element (r, c) of the logical [a0, a1] is the part's (c, r) */
    int ndim;
    int64_t shape[3]; /* logical (float) shape */
    int64_t numel;
} binding;

typedef struct {
    int n, d, h, hs; /* hs: the shared experts' width, 0 without one */
    int packed;      /* transformers >= 5 layout: experts.gate_up_proj [n,2h,d] (gate
                        rows first), experts.down_proj [n,d,h] instead of per-expert */
    int ns;          /* shared experts (gpt2, vit: shared_experts.0 ..; the others: 1 with hs) */
} dims;

static float *part_ptr(const moe_expert *x, int part) {
    switch (part) {
    case P_FC1W: return x->fc1_w;
    case P_FC1B: return x->fc1_b;
    case P_FC2W: return x->fc2_w;
    case P_FC2B: return x->fc2_b;
    case P_FC3W: return x->fc3_w;
    default: return x->fc3_b;
    }
}

/* i of a transposed binding (logical [a0, a1]) as an offset into its part [a1, a0] */
static int64_t trans_at(const binding *b, int64_t i) {
    return b->trans ? (i % b->shape[1]) * b->shape[0] + i / b->shape[1] : i;
}

/* Where element i (row-major in the binding's logical shape) is in the model: *off
 * floats into the array returned, NULL where the model holds no floats there (a
 * mapped or shell layer's weights): only offsets computed, no address formed. */
static float *elem_base(const binding *b, const moe_model *m, int64_t i, int64_t *off) {
    const int64_t h = m->cfg.h, d = m->cfg.d;
    switch (b->kind) {
    case K_GATE_W: *off = i; return m->gate_w;
    case K_GATE_B: *off = i; return m->gate_b;
    case K_EXP: *off = trans_at(b, i); return part_ptr(&m->experts[b->e], b->part);
    case K_SHARED: *off = trans_at(b, i); return part_ptr(&m->shared[b->e], b->part);
    case K_STACK: {
        int64_t per = b->numel / b->shape[0];
        *off = i % per;
        return part_ptr(&m->experts[i / per], b->part);
    }
    case K_STACK_T: { // [n,h,d] -> fc2 [d,h]
        int64_t e = i / (h * d), j = (i / d) % h, k = i % d;
        *off = k * h + j;
        return m->experts[e].fc2_w;
    }
    case K_HALVES: {
        int64_t e = i / (2 * h * d), r = (i / d) % (2 * h), c = i % d;
        *off = (r < h ? r : r - h) * d + c;
        return r < h ? m->experts[e].fc1_w : m->experts[e].fc3_w;
    }
    case K_IL_T: { // [n,d,2h]
        int64_t e = i / (2 * h * d), r = (i / (2 * h)) % d, c = i % (2 * h);
        *off = (c / 2) * d + r;
        return c & 1 ? m->experts[e].fc3_w : m->experts[e].fc1_w;
    }
    case K_IL_ROWS: {
        int64_t e = i / (2 * h * d), r = (i / d) % (2 * h), c = i % d;
        *off = (r / 2) * d + c;
        return r & 1 ? m->experts[e].fc3_w : m->experts[e].fc1_w;
    }
    case K_IL_BIAS: {
        int64_t e = i / (2 * h), c = i % (2 * h);
        *off = c / 2;
        return c & 1 ? m->experts[e].fc3_b : m->experts[e].fc1_b;
    }
    case K_CORR: *off = i; return m->corr_b;
    case K_SH_GATE: *off = i; return m->shared_gate_w;
    default: *off = i; return m->out_b;
    }
}

/* The model float that element i is (the model holds it: elem_base not NULL). */
static float *elem(const binding *b, const moe_model *m, int64_t i) {
    int64_t off;
    float *base = elem_base(b, m, i, &off);
    return base + off;
}

static const char *base_name(const char *p);

/* ---- the bindings of a layer ---- */

typedef struct {
    binding *b;
    int n, cap;
} blist;

static binding *badd(blist *l, int kind, int part, int e, const char *fmt, const char *prefix,
                     const char *rel) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->b = ms_realloc(l->b, (size_t)l->cap * sizeof(binding));
    }
    binding *b = &l->b[l->n++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->part = part;
    b->e = e;
    if (fmt) snprintf(b->name, sizeof b->name, fmt, prefix, e, rel);
    else snprintf(b->name, sizeof b->name, "%.500s.%s", prefix, rel);
    return b;
}

static binding *bshape(binding *b, int ndim, int64_t a0, int64_t a1, int64_t a2) {
    b->ndim = ndim;
    b->shape[0] = a0;
    b->shape[1] = a1;
    b->shape[2] = a2;
    b->numel = a0 * (ndim > 1 ? a1 : 1) * (ndim > 2 ? a2 : 1);
    return b;
}

/* Per-expert SiLU-GLU tensors named fmt % (prefix, e, name) for gate/up/down. */
static void glu_experts(blist *l, const char *prefix, const dims *z, const char *fmt,
                        const char *g, const char *u, const char *dn) {
    for (int e = 0; e < z->n; e++) {
        bshape(badd(l, K_EXP, P_FC1W, e, fmt, prefix, g), 2, z->h, z->d, 0);
        bshape(badd(l, K_EXP, P_FC3W, e, fmt, prefix, u), 2, z->h, z->d, 0);
        bshape(badd(l, K_EXP, P_FC2W, e, fmt, prefix, dn), 2, z->d, z->h, 0);
    }
}

/* transformers >= 5: every expert in experts.gate_up_proj [n,2h,d] (gate rows,
 * then up rows: the output is chunked in two) and experts.down_proj [n,d,h] */
static void packed_experts(blist *l, const char *prefix, const dims *z) {
    bshape(badd(l, K_HALVES, 0, 0, NULL, prefix, "experts.gate_up_proj"), 3, z->n, 2 * (int64_t)z->h, z->d);
    bshape(badd(l, K_STACK, P_FC2W, 0, NULL, prefix, "experts.down_proj"), 3, z->n, z->d, z->h);
}

static void shared_glu(blist *l, const char *prefix, const dims *z, const char *base) {
    char rel[128];
    int64_t hs = z->hs;
    snprintf(rel, sizeof rel, "%s.gate_proj.weight", base);
    bshape(badd(l, K_SHARED, P_FC1W, 0, NULL, prefix, rel), 2, hs, z->d, 0);
    snprintf(rel, sizeof rel, "%s.up_proj.weight", base);
    bshape(badd(l, K_SHARED, P_FC3W, 0, NULL, prefix, rel), 2, hs, z->d, 0);
    snprintf(rel, sizeof rel, "%s.down_proj.weight", base);
    bshape(badd(l, K_SHARED, P_FC2W, 0, NULL, prefix, rel), 2, z->d, hs, 0);
}

/* A network MLP's four tensors for expert e of kind (K_EXP or K_SHARED), named
 * fmt % (prefix, e, name): GPT-2's c_fc / c_proj, Conv1D weights [in, out] (the
 * transposes of fc1 [h,d] and fc2 [d,h]), or a ViT's fc1 / fc2, torch Linear
 * [out, in]; biases optional (zeros when absent, as everywhere). */
static void net_expert(blist *l, int fam, int kind, const char *prefix, int e, int64_t d, int64_t h,
                       const char *fmt) {
    int conv = fam == FAM_GPT2;
    const char *nm[4] = {"c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"};
    if (!conv) nm[0] = "fc1.weight", nm[1] = "fc1.bias", nm[2] = "fc2.weight", nm[3] = "fc2.bias";
    bshape(badd(l, kind, P_FC1W, e, fmt, prefix, nm[0]), 2, conv ? d : h, conv ? h : d, 0)->trans = conv;
    bshape(badd(l, kind, P_FC1B, e, fmt, prefix, nm[1]), 1, h, 0, 0)->optional = 1;
    bshape(badd(l, kind, P_FC2W, e, fmt, prefix, nm[2]), 2, conv ? h : d, conv ? d : h, 0)->trans = conv;
    bshape(badd(l, kind, P_FC2B, e, fmt, prefix, nm[3]), 1, d, 0, 0)->optional = 1;
}

/* Every tensor of a layer of family fam at prefix with dimensions z; mx: GPT-OSS
 * experts stored as MXFP4. */
static void layer_bindings(blist *l, int fam, const char *prefix, const dims *z, int mx) {
    const char *qfmt = "%.500s.experts.%d.%s";
    int64_t n = z->n, d = z->d, h = z->h;
    switch (fam) {
    case FAM_MIXTRAL:
    case FAM_PHIMOE:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "gate.weight"), 2, n, d, 0);
        if (z->packed) packed_experts(l, prefix, z);
        else glu_experts(l, prefix, z, qfmt, "w1.weight", "w3.weight", "w2.weight");
        break;
    case FAM_QWEN2_MOE:
    case FAM_QWEN3_MOE:
    case FAM_OLMOE:
    case FAM_DEEPSEEK_V2:
    case FAM_DEEPSEEK_V3:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "gate.weight"), 2, n, d, 0);
        if (fam == FAM_DEEPSEEK_V3)
            bshape(badd(l, K_CORR, 0, 0, NULL, prefix, "gate.e_score_correction_bias"), 1, n, 0, 0);
        if (z->packed) packed_experts(l, prefix, z);
        else glu_experts(l, prefix, z, qfmt, "gate_proj.weight", "up_proj.weight", "down_proj.weight");
        if (fam == FAM_QWEN2_MOE && z->hs) {
            shared_glu(l, prefix, z, "shared_expert");
            bshape(badd(l, K_SH_GATE, 0, 0, NULL, prefix, "shared_expert_gate.weight"), 2, 1, d, 0);
        }
        if ((fam == FAM_DEEPSEEK_V2 || fam == FAM_DEEPSEEK_V3) && z->hs)
            shared_glu(l, prefix, z, "shared_experts");
        break;
    case FAM_SWITCH:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "router.classifier.weight"), 2, n, d, 0);
        bshape(badd(l, K_GATE_B, 0, 0, NULL, prefix, "router.classifier.bias"), 1, n, 0, 0)->optional = 1;
        for (int e = 0; e < z->n; e++) {
            bshape(badd(l, K_EXP, P_FC1W, e, "%.500s.experts.expert_%d.%s", prefix, "wi.weight"), 2, h, d, 0);
            bshape(badd(l, K_EXP, P_FC2W, e, "%.500s.experts.expert_%d.%s", prefix, "wo.weight"), 2, d, h, 0);
        }
        break;
    case FAM_GRANITEMOE:
    case FAM_JETMOE:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "router.layer.weight"), 2, n, d, 0);
        bshape(badd(l, K_HALVES, 0, 0, NULL, prefix, "input_linear.weight"), 3, n, 2 * h, d);
        bshape(badd(l, K_STACK, P_FC2W, 0, NULL, prefix, "output_linear.weight"), 3, n, d, h);
        if (fam == FAM_JETMOE) bshape(badd(l, K_OUT_BIAS, 0, 0, NULL, prefix, "bias"), 1, d, 0, 0);
        break;
    case FAM_GPT_OSS:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "router.weight"), 2, n, d, 0);
        bshape(badd(l, K_GATE_B, 0, 0, NULL, prefix, "router.bias"), 1, n, 0, 0);
        if (mx) {
            binding *b = badd(l, K_IL_ROWS, 0, 0, NULL, prefix, "experts.gate_up_proj");
            bshape(b, 3, n, 2 * h, d);
            b->mx = 1;
            b = badd(l, K_STACK, P_FC2W, 0, NULL, prefix, "experts.down_proj");
            bshape(b, 3, n, d, h);
            b->mx = 1;
        } else {
            bshape(badd(l, K_IL_T, 0, 0, NULL, prefix, "experts.gate_up_proj"), 3, n, d, 2 * h);
            bshape(badd(l, K_STACK_T, 0, 0, NULL, prefix, "experts.down_proj"), 3, n, h, d);
        }
        bshape(badd(l, K_IL_BIAS, 0, 0, NULL, prefix, "experts.gate_up_proj_bias"), 2, n, 2 * h, 0);
        bshape(badd(l, K_STACK, P_FC2B, 0, NULL, prefix, "experts.down_proj_bias"), 2, n, d, 0);
        break;
    case FAM_GPT2:
    case FAM_VIT:
        bshape(badd(l, K_GATE_W, 0, 0, NULL, prefix, "gate.weight"), 2, n, d, 0);
        bshape(badd(l, K_GATE_B, 0, 0, NULL, prefix, "gate.bias"), 1, n, 0, 0)->optional = 1;
        for (int e = 0; e < z->n; e++) net_expert(l, fam, K_EXP, prefix, e, d, h, qfmt);
        for (int j = 0; j < z->ns; j++)
            net_expert(l, fam, K_SHARED, prefix, j, d, z->hs, "%.500s.shared_experts.%d.%s");
        break;
    default: break;
    }
}

/* ---- dimensions and router settings ---- */

static int shape_of(ckpt *c, const char *name, const st_tensor **t, ms_err *err) {
    const st_file *f;
    return ckpt_tensor(c, name, &f, t, err);
}

static int want_ndim(const ckpt *c, const st_tensor *t, int ndim, ms_err *err) {
    if (t->ndim == ndim) return 0;
    return ms_fail(err, "%s: tensor '%s' has %d dimensions, expected %d", c->arg, t->name, t->ndim,
                   ndim);
}

/* A network MoE block's shared experts shared_experts.0, 1, ... (as many as
 * there are), hs from the first one's c_fc [d, hs] (GPT-2) or fc1 [hs, d] (ViT). */
static int net_shared_dims(ckpt *c, int fam, const char *prefix, dims *z, ms_err *err) {
    char name[700];
    const st_tensor *t;
    const char *w1 = fam == FAM_GPT2 ? "c_fc" : "fc1";
    int conv = fam == FAM_GPT2;
    for (;;) {
        snprintf(name, sizeof name, "%s.shared_experts.%d.%s.weight", prefix, z->ns, w1);
        if (ckpt_find(c, name) < 0) break;
        if (z->ns >= 64)
            return ms_fail(err, "%s: '%s': more than 64 shared experts", c->arg, prefix);
        z->ns++;
    }
    if (!z->ns) return 0;
    snprintf(name, sizeof name, "%s.shared_experts.0.%s.weight", prefix, w1);
    if (shape_of(c, name, &t, err) || want_ndim(c, t, 2, err)) return -1;
    int64_t hs = t->shape[conv], din = t->shape[!conv];
    if (din != z->d || hs < 1 || hs > (1 << 22))
        return ms_fail(err, "%s: tensor '%s' has an unusable shape (expected %s)", c->arg, name,
                       conv ? "[d, hs]" : "[hs, d]");
    z->hs = (int)hs;
    return 0;
}

/* A GPT-OSS layer's experts are either dense (experts.gate_up_proj, down_proj) or
 * MXFP4 (their _blocks and _scales): a file holding both forms of a tensor, or
 * one of each, is refused - which values are the layer's would be a guess (and
 * the saved file would be written in the other form). *mx: MXFP4. */
static int gpt_oss_form(const ckpt *c, const char *prefix, int *mx, ms_err *err) {
    static const char *const parts[2] = {"gate_up_proj", "down_proj"};
    int dense[2], blocks[2];
    char name[700];
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s.experts.%s", prefix, parts[i]);
        dense[i] = ckpt_find(c, name) >= 0;
        snprintf(name, sizeof name, "%s.experts.%s_blocks", prefix, parts[i]);
        blocks[i] = ckpt_find(c, name) >= 0;
        if (dense[i] && blocks[i])
            return ms_fail(err, "%s: '%s.experts.%s' is there both dense and as MXFP4 (%s_blocks): "
                                "which is the layer is ambiguous; keep one", c->arg, prefix, parts[i],
                           parts[i]);
    }
    if ((dense[0] && blocks[1]) || (blocks[0] && dense[1]))
        return ms_fail(err, "%s: '%s.experts': gate_up_proj is %s but down_proj is %s; moescope reads "
                            "a layer's experts in one form", c->arg, prefix,
                       dense[0] ? "dense" : "MXFP4", dense[1] ? "dense" : "MXFP4");
    *mx = blocks[0];
    return 0;
}

/* n, d from the gate; h (and hs) from the first expert or the packed tensors. */
static int layer_dims(ckpt *c, int fam, const char *prefix, dims *z, int *mx, ms_err *err) {
    char name[700];
    const st_tensor *t;
    memset(z, 0, sizeof *z);
    *mx = 0;
    snprintf(name, sizeof name, "%s.%s", prefix, family_table[fam].gate);
    if (shape_of(c, name, &t, err) || want_ndim(c, t, 2, err)) return -1;
    z->n = (int)t->shape[0];
    z->d = (int)t->shape[1];
    if (t->shape[0] < 1 || t->shape[0] > 4096 || t->shape[1] < 1 || t->shape[1] > (1 << 20))
        return ms_fail(err, "%s: tensor '%s' has an unusable shape", c->arg, name);
    int64_t h = 0;
    const char *rel = fam == FAM_MIXTRAL || fam == FAM_PHIMOE ? "experts.0.w1.weight"
                      : fam == FAM_GPT2 ? "experts.0.c_fc.weight"
                      : fam == FAM_VIT ? "experts.0.fc1.weight"
                      : fam == FAM_SWITCH ? "experts.expert_0.wi.weight"
                      : fam == FAM_GRANITEMOE || fam == FAM_JETMOE ? "input_linear.weight"
                      : fam == FAM_GPT_OSS ? "experts.gate_up_proj"
                                            : "experts.0.gate_proj.weight";
    snprintf(name, sizeof name, "%s.%s", prefix, rel);
    if (fam != FAM_GPT_OSS && fam != FAM_GRANITEMOE && fam != FAM_JETMOE && fam != FAM_GPT2 && fam != FAM_VIT &&
        ckpt_find(c, name) < 0) {
        snprintf(name, sizeof name, "%s.experts.gate_up_proj", prefix); // transformers >= 5
        z->packed = ckpt_find(c, name) >= 0;
        if (!z->packed) snprintf(name, sizeof name, "%s.%s", prefix, rel); // the error names it
    }
    if (fam == FAM_GPT_OSS) {
        if (gpt_oss_form(c, prefix, mx, err)) return -1;
        if (*mx) snprintf(name, sizeof name, "%s.experts.gate_up_proj_blocks", prefix);
    }
    if (shape_of(c, name, &t, err)) return -1;
    if (fam == FAM_GRANITEMOE || fam == FAM_JETMOE || z->packed || (fam == FAM_GPT_OSS && *mx)) {
        if (want_ndim(c, t, *mx ? 4 : 3, err)) return -1;
        h = t->shape[1] / 2;
    } else if (fam == FAM_GPT_OSS) {
        if (want_ndim(c, t, 3, err)) return -1;
        h = t->shape[2] / 2;
    } else if (fam == FAM_GPT2) { // Conv1D [d, h]
        if (want_ndim(c, t, 2, err)) return -1;
        h = t->shape[1];
    } else {
        if (want_ndim(c, t, 2, err)) return -1;
        h = t->shape[0];
    }
    if (h < 1 || h > (1 << 20)) return ms_fail(err, "%s: tensor '%s' has an unusable shape", c->arg, name);
    z->h = (int)h;
    const char *sh = fam == FAM_QWEN2_MOE ? "shared_expert" : "shared_experts";
    snprintf(name, sizeof name, "%s.%s.gate_proj.weight", prefix, sh);
    if ((fam == FAM_QWEN2_MOE || fam == FAM_DEEPSEEK_V2 || fam == FAM_DEEPSEEK_V3) &&
        ckpt_find(c, name) >= 0) {
        if (shape_of(c, name, &t, err) || want_ndim(c, t, 2, err)) return -1;
        if (t->shape[0] < 1 || t->shape[0] > (1 << 22))
            return ms_fail(err, "%s: tensor '%s' has an unusable shape", c->arg, name);
        z->hs = (int)t->shape[0];
    }
    z->ns = z->hs ? 1 : 0;
    return fam == FAM_GPT2 || fam == FAM_VIT ? net_shared_dims(c, fam, prefix, z, err) : 0;
}

/* A network MoE block's (gpt2, vit) router and expert function: config.json's
 * "moe" object (router "topk" | "dense", top_k, expert_activation "relu" | "gelu"
 * | "gelu_new", default the network's own: GPT-2's activation_function, a ViT's
 * hidden_act), checked against the tensors: num_experts, num_shared_experts and
 * expert_intermediate_size, when given, must be what the block holds. --top-k
 * overrides top_k. */
static int net_moe_config(const ckpt *c, int fam, const char *prefix, const dims *z,
                          const family_overrides *o, moe_config *cfg, ms_err *err) {
    static const char *const routers[] = {"topk", "dense"};
    static const char *const acts[] = {"relu", "gelu", "gelu_new"};
    static const moe_act act_of[] = {ACT_RELU, ACT_GELU, ACT_GELU_TANH};
    cfg_obj top = {c->config_path ? c->config_path : c->arg, "", c->config}, m;
    unsigned char *org = cfg->origin;
    int router, act, net_act, r, vit = fam == FAM_VIT, off = !vit; // GPT-2's: gelu or gelu_new
    long k, v;
    if (cfg_sub(&top, "moe", "moe.", &m, err) < 0 ||
        cfg_choice(&top, vit ? "hidden_act" : "activation_function", acts + off, 3 - off, 1, &net_act,
                   err) < 0 ||
        cfg_choice(&m, "router", routers, 2, 0, &router, err) < 0)
        return -1;
    if ((r = cfg_int(&m, "top_k", 1, z->n, z->n < 2 ? z->n : 2, &k, err)) < 0) return -1;
    org[RP_K] = r ? ORIGIN_CONFIG : ORIGIN_DEFAULT;
    if (o->k > 0) {
        if (o->k > z->n)
            return ms_fail(err, "%s: --top-k %d is more than the %d experts of '%s'", c->arg,
                           o->k, z->n, prefix);
        k = o->k;
        org[RP_K] = ORIGIN_CLI;
    }
    if ((r = cfg_choice(&m, "expert_activation", acts, 3, net_act + off, &act, err)) < 0) return -1;
    org[RP_ACT] = r ? ORIGIN_CONFIG : ORIGIN_DEFAULT;
    // what the file holds, said as it is ("gate.weight has 2 rows", not "only 2")
    const char *fc1 = vit ? "fc1" : "c_fc";
    struct { const char *key; long have; const char *fmt; } chk[3] = {
        {"num_experts", z->n, "gate.weight has %ld rows"},
        {"num_shared_experts", z->ns, "%ld shared_experts.S.%s.weight tensors are there"},
        {"expert_intermediate_size", z->h, "experts.0.%2$s.weight is %1$ld wide"}};
    for (int i = 0; i < 3; i++) {
        if ((r = cfg_int(&m, chk[i].key, 0, 1L << 30, chk[i].have, &v, err)) < 0) return -1;
        if (r && v != chk[i].have) {
            char what[128];
            snprintf(what, sizeof what, chk[i].fmt, chk[i].have, fc1);
            return ms_fail(err, "%s: key 'moe.%s' = %ld, but in %s %s (under '%s.')", top.file, chk[i].key, v,
                           c->arg, what, prefix);
        }
    }
    cfg->router = router ? ROUTER_DENSE : ROUTER_TOPK;
    cfg->k = (int)k;
    cfg->act = act_of[act];
    return 0;
}

/* o NULL: nothing overridden */
static const family_overrides *overrides_or_none(const family_overrides *o) {
    static const family_overrides none = FAMILY_OVERRIDES_NONE;
    return o ? o : &none;
}

/* config.json's top level, for the validated readers (config_json.h): every value
 * is held to the rules the native metadata follows, refused with the file, the
 * key and the value, never cast, clamped or dropped. */
static cfg_obj config_top(const ckpt *c) {
    cfg_obj top = {c->config_path ? c->config_path : c->arg, "", c->config};
    return top;
}

/* top-k: --top-k, else num_experts_per_tok (an integer in 1..n), else the
 * family's default (at most n). */
static int config_k(const ckpt *c, int fam, const char *prefix, const family_overrides *o,
                    moe_config *cfg, ms_err *err) {
    cfg_obj top = config_top(c);
    unsigned char *org = cfg->origin;
    long k;
    int r;
    if (fam == FAM_SWITCH) { // Switch routes every token to its top expert, scaled by its probability
        cfg->k = 1;
        org[RP_K] = ORIGIN_DEFAULT;
        return 0;
    }
    if (fam == FAM_PHIMOE && o->k > 0 && o->k != 2) // sparsemixer: a max, then a max without it
        return ms_fail(err, "%s: --top-k %d: PhiMoE's sparsemixer router ('%s') picks exactly two experts per "
                            "token by construction (--top-k 2, or leave it out)",
                       c->arg, o->k, prefix);
    if (o->k > 0) {
        if (o->k > cfg->n)
            return ms_fail(err, "%s: --top-k %d is more than the %d experts of '%s'", c->arg,
                           o->k, cfg->n, prefix);
        cfg->k = o->k;
        org[RP_K] = ORIGIN_CLI;
        return 0;
    }
    int def = family_table[fam].k < cfg->n ? family_table[fam].k : cfg->n;
    if ((r = cfg_int(&top, "num_experts_per_tok", 1, cfg->n, def, &k, err)) < 0) return -1;
    cfg->k = (int)k;
    org[RP_K] = r ? ORIGIN_CONFIG : ORIGIN_DEFAULT;
    return 0;
}

/* DeepSeek's group-limited routing: n_group groups of n / n_group experts, the
 * top topk_group groups kept. Given (command line, config.json) they must be a
 * grouping of these n experts that leaves k experts to choose; the family's
 * defaults that do not fit a layer (DeepSeek-V3's 8 groups of a 4-expert test
 * layer, or keeping fewer than k experts) leave it ungrouped. */
static int config_groups(const ckpt *c, int fam, const char *prefix, const family_overrides *o,
                         moe_config *cfg, ms_err *err) {
    static const char *const methods[] = {"greedy", "group_limited_greedy", "noaux_tc"};
    cfg_obj top = config_top(c);
    unsigned char *org = cfg->origin;
    int method, r;
    if (cfg_choice(&top, "topk_method", methods, 3, -1, &method, err) < 0) return -1;
    int grouped = fam == FAM_DEEPSEEK_V3 || (fam == FAM_DEEPSEEK_V2 && method == 1) || o->n_group > 0;
    if (!grouped || (fam != FAM_DEEPSEEK_V2 && fam != FAM_DEEPSEEK_V3)) return 0;
    long G = fam == FAM_DEEPSEEK_V3 ? 8 : 1, T = fam == FAM_DEEPSEEK_V3 ? 4 : 1;
    org[RP_GROUPS] = org[RP_TOPK_GROUP] = ORIGIN_DEFAULT;
    if (o->n_group > 0) G = o->n_group, org[RP_GROUPS] = ORIGIN_CLI;
    else if ((r = cfg_int(&top, "n_group", 1, cfg->n, G, &G, err)) < 0) return -1;
    else if (r) org[RP_GROUPS] = ORIGIN_CONFIG;
    if (o->topk_group > 0) T = o->topk_group, org[RP_TOPK_GROUP] = ORIGIN_CLI;
    else if ((r = cfg_int(&top, "topk_group", 1, cfg->n, T, &T, err)) < 0) return -1;
    else if (r) org[RP_TOPK_GROUP] = ORIGIN_CONFIG;
    int given = org[RP_GROUPS] != ORIGIN_DEFAULT || org[RP_TOPK_GROUP] != ORIGIN_DEFAULT;
    int fits = G >= 1 && G <= cfg->n && cfg->n % G == 0 && T >= 1 && T <= G;
    if (!fits && given)
        return ms_fail(err, "%s: n_group = %ld (%s) and topk_group = %ld (%s) are not a grouping of "
                            "the %d experts of '%s' (n_group must divide n, topk_group be in "
                            "1..n_group)", top.file, G, moe_origin_name(org[RP_GROUPS]), T,
                       moe_origin_name(org[RP_TOPK_GROUP]), cfg->n, prefix);
    if (!fits || G <= 1) return 0; // one group (or defaults that do not fit): not grouped
    if (cfg->k > T * (cfg->n / G) && !given) return 0;
    if (cfg->k > T * (cfg->n / G))
        return ms_fail(err, "%s: top_k = %d is more than the %ld experts of the topk_group = %ld "
                            "kept groups (n_group = %ld of '%s')", top.file, cfg->k,
                       T * (cfg->n / G), T, G, prefix);
    cfg->n_group = (int)G;
    cfg->topk_group = (int)T;
    cfg->group_score = fam == FAM_DEEPSEEK_V3 ? GROUP_TOP2_SUM : GROUP_MAX;
    return 0;
}

/* renormalisation, the routed scale and GPT-OSS's activation limit */
static int config_scales(const ckpt *c, int fam, const family_overrides *o, moe_config *cfg,
                         ms_err *err) {
    cfg_obj top = config_top(c);
    unsigned char *org = cfg->origin;
    int norm = 1, r;
    double x;
    org[RP_RENORM] = ORIGIN_DEFAULT;
    if (fam == FAM_QWEN2_MOE || fam == FAM_QWEN3_MOE || fam == FAM_OLMOE || fam == FAM_DEEPSEEK_V3) {
        if (o->norm_topk_prob >= 0) norm = o->norm_topk_prob, org[RP_RENORM] = ORIGIN_CLI;
        else if ((r = cfg_bool(&top, "norm_topk_prob", family_table[fam].norm_topk_prob, &norm, err)) < 0)
            return -1;
        else if (r) org[RP_RENORM] = ORIGIN_CONFIG;
    } else if (fam == FAM_SWITCH || fam == FAM_DEEPSEEK_V2) {
        norm = 0; // the modelling code never renormalises these
    }
    cfg->renorm = norm ? RENORM_YES : RENORM_NO;
    cfg->scale = 1.0f;
    org[RP_SCALE] = ORIGIN_DEFAULT;
    if (fam == FAM_DEEPSEEK_V2 || fam == FAM_DEEPSEEK_V3) {
        // at most the command line's bound: a scale of 1e30 makes every barrier inf
        if (o->scaling > 0) x = o->scaling, org[RP_SCALE] = ORIGIN_CLI;
        else if ((r = cfg_pos(&top, "routed_scaling_factor", MOE_MAX_ROUTED_SCALE,
                              family_table[fam].scaling, &x, err)) < 0)
            return -1;
        else if (r) org[RP_SCALE] = ORIGIN_CONFIG;
        cfg->scale = (float)x;
    }
    if (fam == FAM_GPT_OSS) {
        if ((r = cfg_pos(&top, "swiglu_limit", MOE_MAX_ACT_LIMIT, 7.0, &x, err)) < 0) return -1;
        cfg->act_limit = (float)x;
        org[RP_LIMIT] = r ? ORIGIN_CONFIG : ORIGIN_DEFAULT;
    }
    return 0;
}

/* PhiMoE's sparsemixer: router_jitter_noise (PhimoeConfig's default 0.01); it
 * always picks two experts, whatever num_experts_per_tok says */
static int config_sparsemixer(const ckpt *c, const char *prefix, moe_config *cfg, ms_err *err) {
    cfg_obj top = config_top(c);
    double eps;
    if (cfg_num(&top, "router_jitter_noise", 0.0, 1e6, 0.01, &eps, err) < 0) return -1;
    if (cfg->n < 2)
        return ms_fail(err, "%s: '%s' has %d expert: PhiMoE's sparsemixer picks two", c->arg, prefix, cfg->n);
    cfg->jitter_eps = (float)eps;
    cfg->k = 2;
    return 0;
}

/* The router and expert function of family fam, as its modelling code has
 * them, unless o overrides them. */
/* config.json's count of routed experts, when it says one, is what the gate holds: a
 * different count is another model (transformers refuses the shapes), not one to
 * compute silently with the file's */
static int config_count(const ckpt *c, int fam, const char *prefix, const dims *z, ms_err *err) {
    const char *key = family_table[fam].n_key;
    cfg_obj top = config_top(c);
    long n;
    int r = key && c->config ? cfg_int(&top, key, 1, 1L << 30, z->n, &n, err) : 0;
    if (r < 0) return -1;
    if (r && n != z->n)
        return ms_fail(err, "%s: key '%s' = %ld, but in %s the router of '%s' has %d rows (experts)", top.file, key,
                       n, c->arg, prefix, z->n);
    return 0;
}

static int family_config(const ckpt *c, int fam, const char *prefix, const dims *z,
                         const family_overrides *o, moe_config *cfg, ms_err *err) {
    o = overrides_or_none(o);
    if (config_count(c, fam, prefix, z, err)) return -1;
    unsigned char *org = cfg->origin;
    cfg->n = z->n;
    cfg->d = z->d;
    cfg->h = z->h;
    cfg->s = z->ns;
    cfg->hs = z->hs;
    cfg->router = ROUTER_TOPK;
    cfg->residual = 0; // a real MoE block returns D(x); the residual is the decoder layer's
    snprintf(cfg->family, sizeof cfg->family, "%s", family_table[fam].name);
    cfg->act = fam == FAM_SWITCH ? ACT_RELU : fam == FAM_GPT_OSS ? ACT_GPT_OSS : ACT_SILU_GLU;
    org[RP_ACT] = ORIGIN_DEFAULT;
    if ((fam != FAM_GPT2 && config_k(c, fam, prefix, o, cfg, err)) || config_scales(c, fam, o, cfg, err))
        return -1;
    cfg->score = fam == FAM_DEEPSEEK_V3 ? SCORE_SIGMOID : fam == FAM_PHIMOE ? SCORE_SPARSEMIXER : SCORE_SOFTMAX;
    org[RP_SCORE] = ORIGIN_DEFAULT;
    if (fam == FAM_PHIMOE && config_sparsemixer(c, prefix, cfg, err)) return -1;
    if (fam == FAM_DEEPSEEK_V3) cfg->renorm_eps = 1e-20f;
    if (config_groups(c, fam, prefix, o, cfg, err)) return -1;
    cfg->has_corr_bias = fam == FAM_DEEPSEEK_V3;
    cfg->shared_gated = fam == FAM_QWEN2_MOE && z->hs;
    cfg->has_out_bias = fam == FAM_JETMOE;
    cfg->has_gate_bias = fam == FAM_GPT_OSS;
    cfg->has_expert_bias = fam == FAM_GPT_OSS;
    return fam == FAM_GPT2 || fam == FAM_VIT ? net_moe_config(c, fam, prefix, z, o, cfg, err) : 0;
}

/* ---- loading ---- */

static int shape_is(const st_tensor *t, int ndim, const int64_t *want) {
    if (t->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != want[i]) return 0;
    return 1;
}

const char *family_conv1d_hint(const char *name, int ndim, const int64_t *have, const int64_t *want) {
    int swapped = ndim == 2 && have[0] == want[1] && have[1] == want[0] && have[0] != have[1];
    if (!swapped || !(strstr(name, ".c_fc.") || strstr(name, ".c_proj.") || strstr(name, ".c_attn.")))
        return "";
    return " - the transpose: GPT-2's Conv1D stores its weight as [in, out], torch Linear's is [out, in] "
           "(write weight.t() for a Linear)";
}

static int shape_error(const ckpt *c, const st_tensor *t, int ndim, const int64_t *want,
                       ms_err *err) {
    char hb[160] = "", wb[160] = "";
    size_t k = 0;
    for (int i = 0; i < t->ndim && k < sizeof hb - 24; i++)
        k += (size_t)snprintf(hb + k, sizeof hb - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    k = 0;
    for (int i = 0; i < ndim && k < sizeof wb - 24; i++)
        k += (size_t)snprintf(wb + k, sizeof wb - k, "%s%lld", i ? ", " : "", (long long)want[i]);
    return ms_fail(err, "%s: tensor '%s' has shape [%s], expected [%s]%s", c->arg, t->name, hb, wb,
                   t->ndim == ndim ? family_conv1d_hint(t->name, ndim, t->shape, want) : "");
}

/* The MXFP4 pair of a binding: blocks [.., out, in/32, 16] and scales [.., out, in/32]. */
static int mx_pair(ckpt *c, const binding *b, const st_file **fb, const st_tensor **tb,
                   const st_file **fs, const st_tensor **ts, ms_err *err) {
    char name[700];
    int64_t in = b->shape[b->ndim - 1];
    if (in % MX_BLOCK)
        return ms_fail(err, "%s: '%s': the input width %lld is not a multiple of 32", c->arg,
                       b->name, (long long)in);
    int64_t wb[4] = {b->shape[0], b->shape[1], in / MX_BLOCK, 16};
    snprintf(name, sizeof name, "%s_blocks", b->name);
    if (ckpt_tensor(c, name, fb, tb, err)) return -1;
    if (strcmp((*tb)->dtype_name, "U8"))
        return ms_fail(err, "%s: tensor '%s' has dtype %s, expected U8 (MXFP4 blocks)", c->arg, name,
                       (*tb)->dtype_name);
    if (!shape_is(*tb, 4, wb)) return shape_error(c, *tb, 4, wb, err);
    snprintf(name, sizeof name, "%s_scales", b->name);
    if (ckpt_tensor(c, name, fs, ts, err)) return -1;
    if (strcmp((*ts)->dtype_name, "U8"))
        return ms_fail(err, "%s: tensor '%s' has dtype %s, expected U8 (MXFP4 scales)", c->arg, name,
                       (*ts)->dtype_name);
    if (!shape_is(*ts, 3, wb)) return shape_error(c, *ts, 3, wb, err);
    return 0;
}

/* The binding's MXFP4 blocks (16 bytes each) and scales copied out of their
 * mappings (under the guard that reports a file cut short meanwhile), malloc'd. */
static int mx_copy(ckpt *c, const binding *b, uint8_t **blocks, uint8_t **scales, ms_err *err) {
    const st_file *fb, *fs;
    const st_tensor *tb, *ts;
    *blocks = *scales = NULL;
    if (mx_pair(c, b, &fb, &tb, &fs, &ts, err)) return -1;
    size_t nblocks = (size_t)(b->numel / MX_BLOCK);
    *blocks = ms_malloc(nblocks * 16);
    *scales = ms_malloc(nblocks ? nblocks : 1);
    if (st_copy_out(fb, tb, 0, nblocks * 16, *blocks, err) ||
        st_copy_out(fs, ts, 0, nblocks, *scales, err)) {
        free(*blocks);
        free(*scales);
        *blocks = *scales = NULL;
        return -1;
    }
    return 0;
}

/* The binding's values as floats (numel of them, row-major in its logical shape). */
static int read_values(ckpt *c, const binding *b, float *out, ms_err *err) {
    if (b->mx) {
        uint8_t *blocks, *scales;
        if (mx_copy(c, b, &blocks, &scales, err)) return -1;
        int bad = mxfp4_decode(blocks, scales, (size_t)(b->numel / MX_BLOCK), out);
        free(blocks);
        free(scales);
        if (bad)
            return ms_fail(err, "%s: tensor '%s_scales': a scale makes values overflow float32", c->arg,
                           b->name);
        return 0;
    }
    const st_file *f;
    const st_tensor *t;
    if (ckpt_tensor(c, b->name, &f, &t, err)) return -1;
    if (!shape_is(t, b->ndim, b->shape)) return shape_error(c, t, b->ndim, b->shape, err);
    return st_read_f32(f, t, out, err);
}

/* Per-expert families: exactly n experts, no expert n. */
static int check_expert_count(const ckpt *c, int fam, const char *prefix, int n, ms_err *err) {
    const char *fmt = fam == FAM_SWITCH ? "%s.experts.expert_%d.wi.weight"
                      : fam == FAM_MIXTRAL || fam == FAM_PHIMOE ? "%s.experts.%d.w1.weight"
                      : fam == FAM_GPT2 ? "%s.experts.%d.c_fc.weight"
                      : fam == FAM_VIT ? "%s.experts.%d.fc1.weight"
                                           : "%s.experts.%d.gate_proj.weight";
    if (fam == FAM_GRANITEMOE || fam == FAM_JETMOE || fam == FAM_GPT_OSS) return 0;
    char name[700];
    snprintf(name, sizeof name, "%s.experts.gate_up_proj", prefix);
    if (ckpt_find(c, name) >= 0) return 0; // packed: the shapes say n
    snprintf(name, sizeof name, fmt, prefix, n);
    if (ckpt_find(c, name) >= 0)
        return ms_fail(err, "%s: the gate of '%s' has %d rows (experts) but '%s' exists", c->arg,
                       prefix, n, name);
    return 0;
}

/* Is the binding's destination one run of model floats (elem(b, m, i) = elem(b, m, 0) + i)? */
static int contiguous(const binding *b) {
    return !b->trans && (b->kind == K_GATE_W || b->kind == K_GATE_B || b->kind == K_EXP || b->kind == K_SHARED ||
           b->kind == K_CORR || b->kind == K_SH_GATE || b->kind == K_OUT_BIAS);
}

/* Read one binding into m, expert by expert: a per-expert or contiguous tensor
 * is decoded straight into the model's floats, a stacked one slice by slice
 * (one expert's floats of scratch, never the whole stack), and the file's
 * pages are released once read, so loading holds no copy of the layer beside
 * the model. MXFP4 tensors are decoded whole (their blocks pack two experts'
 * rows only at the ends). */
/* A transposed part (GPT-2's Conv1D [in, out] into the model's [out, in]) in
 * blocks of TR rows of the file: each block read once, then each of the part's
 * rows written TR floats at a time (elem's index arithmetic per float made a
 * GPT-2-small expert's load seconds long). */
static int load_transposed(ckpt *c, const st_file *f, const st_tensor *t, const binding *b, moe_model *m,
                           ms_err *err) {
    enum { TR = 32 };
    int64_t a0 = b->shape[0], a1 = b->shape[1];
    size_t es = (size_t)(t->end - t->begin) / (size_t)(t->numel ? t->numel : 1);
    float *part = elem(b, m, 0), *buf = ms_malloc((size_t)(TR * a1) * sizeof(float)); // part (a1, a0)
    int rc = 0;
    for (int64_t r0 = 0; r0 < a0 && !rc; r0 += TR) {
        if (progress_cancelled()) {
            rc = ms_fail(err, "%s: cancelled", c->arg);
            break;
        }
        int64_t nr = a0 - r0 < TR ? a0 - r0 : TR;
        rc = st_read_f32_range(f, t, r0 * a1, nr * a1, buf, err);
        for (int64_t j = 0; j < a1 && !rc; j++)
            for (int64_t r = 0; r < nr; r++) part[j * a0 + r0 + r] = buf[r * a1 + j];
        st_release(f, t->begin + (size_t)(r0 * a1) * es, t->begin + (size_t)((r0 + nr) * a1) * es);
        progress_add(4.0 * (double)(nr * a1) / 1048576.0);
    }
    free(buf);
    return rc;
}

static int load_binding(ckpt *c, const binding *b, moe_model *m, ms_err *err) {
    if (b->mx) {
        float *buf = ms_malloc((size_t)b->numel * sizeof(float));
        int rc = read_values(c, b, buf, err);
        for (int64_t j = 0; j < b->numel && !rc; j++) *elem(b, m, j) = buf[j];
        free(buf);
        progress_add(4.0 * (double)b->numel / 1048576.0);
        return rc;
    }
    const st_file *f;
    const st_tensor *t;
    if (ckpt_tensor(c, b->name, &f, &t, err)) return -1;
    if (!shape_is(t, b->ndim, b->shape)) return shape_error(c, t, b->ndim, b->shape, err);
    if (b->trans && b->ndim == 2 && (b->kind == K_EXP || b->kind == K_SHARED))
        return load_transposed(c, f, t, b, m, err);
    int64_t nchunk = contiguous(b) ? 1 : b->shape[0], per = b->numel / nchunk;
    size_t es = (size_t)(t->end - t->begin) / (size_t)(t->numel ? t->numel : 1);
    float *buf = contiguous(b) || b->kind == K_STACK ? NULL : ms_malloc((size_t)per * sizeof(float));
    int rc = 0;
    for (int64_t e = 0; e < nchunk && !rc; e++) {
        if (progress_cancelled()) { // a listener's cancel (progress.h): the explorer's layer switch
            rc = ms_fail(err, "%s: cancelled", c->arg);
            break;
        }
        float *dst = buf ? buf : elem(b, m, e * per); // K_STACK: expert e's part is one run
        rc = st_read_f32_range(f, t, e * per, per, dst, err);
        for (int64_t j = 0; buf && j < per && !rc; j++) *elem(b, m, e * per + j) = buf[j];
        st_release(f, t->begin + (size_t)(e * per) * es, t->begin + (size_t)((e + 1) * per) * es);
        progress_add(4.0 * (double)per / 1048576.0);
    }
    free(buf);
    return rc;
}

/* Is b one of the routed experts' tensors (per expert or stacked)? */
static int routed(const binding *b) {
    return b->kind == K_EXP || b->kind == K_STACK || b->kind == K_STACK_T || b->kind == K_HALVES ||
           b->kind == K_IL_T || b->kind == K_IL_ROWS || b->kind == K_IL_BIAS;
}

/* the P_* part of a native tensor suffix ("fc1.weight"), -1 if none */
static int part_of_suffix(const char *sfx) {
    static const char *names[] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
    for (int p = 0; p < 6; p++)
        if (!strcmp(sfx, names[p])) return p;
    return -1;
}

/* The tensor of the file, and its element, that binding b puts at target (one
 * expert's part, every expert of view aliasing it): a search over b's elements
 * for expert e, found by address, so every layout (stacked, transposed,
 * interleaved) inverts the way elem maps it. */
static int64_t binding_find(const binding *b, const moe_model *view, int e, const float *target) {
    int64_t lo = 0, hi = b->numel;
    if (b->kind != K_EXP && b->kind != K_SHARED) { // stacked: expert e's slice
        lo = e * (b->numel / b->shape[0]);
        hi = lo + b->numel / b->shape[0];
    }
    for (int64_t i = lo; i < hi; i++)
        if (elem(b, view, i) == target) return i;
    return -1;
}

int family_value_name(const moe_model *m, int shared, int e, const char *sfx, size_t at, char *out,
                      size_t cap, long long *where) {
    int fam = family_from_name(m->cfg.family), part = part_of_suffix(sfx), rc = -1;
    if (fam < 0 || fam == FAM_NATIVE || part < 0 || !m->path || !m->layer) return -1;
    ckpt c;
    if (ckpt_open(&c, m->path, NULL)) return -1;
    family_layer *ls = NULL;
    int nl = 0;
    dims z;
    int mx = 0;
    blist l = {NULL, 0, 0};
    float *mem = NULL;
    if (family_find_layers(&c, fam, &ls, &nl, NULL)) goto done;
    int which = -1;
    for (int i = 0; i < nl; i++)
        if (!strcmp(ls[i].prefix, m->layer)) which = i;
    if (which < 0 || layer_dims(&c, fam, m->layer, &z, &mx, NULL)) goto done;
    layer_bindings(&l, fam, m->layer, &z, mx);
    // a view whose experts all alias one expert's floats: only addresses are compared
    moe_config xc = shared ? moe_shared_config(&m->cfg) : m->cfg;
    mem = ms_malloc(moe_expert_size(&xc) * sizeof(float));
    moe_model v = {.cfg = m->cfg};
    moe_expert x, *all = ms_malloc((size_t)m->cfg.n * sizeof(moe_expert));
    moe_expert_carve(&x, &xc, mem);
    for (int i = 0; i < m->cfg.n; i++) all[i] = x;
    v.experts = all, v.shared = &x;
    const float *target = part_ptr(&x, part) + at;
    for (int i = 0; i < l.n && rc; i++) {
        const binding *b = &l.b[i];
        // packed tensors hold two parts: the address search tells whether b holds this one
        if ((shared ? b->kind != K_SHARED : !routed(b)) ||
            ((b->kind == K_EXP || b->kind == K_SHARED) && b->e != e))
            continue;
        int64_t k = binding_find(b, &v, e, target);
        // MXFP4: the file holds b's values as blocks and scales; k counts the decoded values
        char tn[720];
        snprintf(tn, sizeof tn, "%s%s", b->name, b->mx ? "_blocks" : "");
        int t = k >= 0 ? ckpt_find(&c, tn) : -1;
        if (t >= 0) {
            snprintf(out, cap, "%s: tensor '%s'%s", c.shard_paths[c.shard_of[t]], tn,
                     b->mx ? " (MXFP4, decoded with its _scales)" : "");
            *where = (long long)k;
            rc = 0;
        }
    }
    free(all);
done:
    free(mem);
    free(l.b);
    family_layers_free(ls, nl);
    ckpt_close(&c);
    return rc;
}

int family_tensor_at(const moe_model *m, const float *p, char *out, size_t cap, long long *where) {
    int fam = family_from_name(m->cfg.family), rc = -1;
    if (fam < 0 || fam == FAM_NATIVE || !m->path || !m->layer || !m->experts || p < m->mem ||
        p >= m->mem + m->nparams)
        return -1;
    ckpt c;
    if (ckpt_open(&c, m->path, NULL)) return -1;
    dims z;
    int mx = 0;
    blist l = {NULL, 0, 0};
    if (!layer_dims(&c, fam, m->layer, &z, &mx, NULL)) layer_bindings(&l, fam, m->layer, &z, mx);
    for (int i = 0; i < l.n && rc; i++) { // by address: every layout inverts as elem maps it
        const binding *b = &l.b[i];
        char tn[720];
        snprintf(tn, sizeof tn, "%s%s", b->name, b->mx ? "_blocks" : "");
        int t = ckpt_find(&c, tn);
        // a mapped weight (base NULL) holds none of m's floats: no address formed for it
        for (int64_t k = 0, off; t >= 0 && k < b->numel && rc; k++) {
            const float *base = elem_base(b, m, k, &off);
            if (base && base + off == p) {
                snprintf(out, cap, "%s: tensor '%s'%s", c.shard_paths[c.shard_of[t]], tn,
                         b->mx ? " (MXFP4, decoded with its _scales)" : "");
                *where = (long long)k;
                rc = 0;
            }
        }
    }
    free(l.b);
    ckpt_close(&c);
    return rc;
}

int family_range_fail(const moe_model *m, const range_finding *f, ms_err *err) {
    const range_max *x = &f->culprit;
    char where[400];
    long long at;
    if (x->expert && !family_value_name(m, x->shared, x->e, x->part, x->at, where, sizeof where, &at))
        return range_fail(f, m, where, at, err);
    return range_fail(f, m, NULL, 0, err);
}

/* family_load, or with shell the layer without its routed experts (moe_alloc_shell)
 * and the bindings kept in *keep (NULL: freed) for reading them later. */
/* Is b a routed expert's weight matrix (not a bias)? */
static int routed_weight(const binding *b) {
    return routed(b) && b->kind != K_IL_BIAS && b->part != P_FC1B && b->part != P_FC2B && b->part != P_FC3B;
}

/* Is b a shared expert's weight matrix (not a bias)? */
static int shared_weight(const binding *b) {
    return b->kind == K_SHARED && b->part != P_FC1B && b->part != P_FC2B && b->part != P_FC3B;
}

/* t's dtype as a mapped weight's, -1 if it has none */
static int wp_dtype_of(const st_tensor *t) {
    return t->dtype == ST_F32 ? WP_F32 : t->dtype == ST_F16 ? WP_F16 : t->dtype == ST_BF16 ? WP_BF16 : -1;
}

/* Can a mapped layer use b where the file keeps it: a routed weight stored as rows
 * (per expert, stacked, gate | up halves or interleaved rows) or as GPT-OSS's [in,
 * out] (stacked, gate | up interleaved columns: read transposed), in F32, F16 or
 * BF16, aligned to its element, or MXFP4's blocks and scales? (A Conv1D expert's
 * [in, out]: only in F32 for a view, tr: read by products that take either layout.) */
static int mappable(ckpt *c, const binding *b, int tr) {
    const st_file *f;
    const st_tensor *t;
    ms_err e;
    if (b->mx) return b->kind == K_IL_ROWS || b->kind == K_STACK; // blocks of 32 along the rows
    if ((b->trans && !tr) || ckpt_tensor(c, b->name, &f, &t, &e)) return 0;
    int dt = wp_dtype_of(t);
    if (b->trans && dt != WP_F32) return 0; // a view's other dtypes would be decoded a column at a time
    return dt >= 0 && (uintptr_t)(f->data + t->begin) % wp_dtype_size((wp_dtype)dt) == 0;
}

/* The part of expert x that binding part `part` names (P_FC1W ...) */
static wref *wpart(moe_expert *x, int part) { return part == P_FC1W ? &x->w1 : part == P_FC2W ? &x->w2 : &x->w3; }

/* b's rows, where the file keeps them, as the routed experts' w1, w2, w3 (its
 * values checked finite as a read checks them) */
static int map_binding(ckpt *c, const binding *b, moe_model *m, ms_err *err) {
    const st_file *f, *fs;
    const st_tensor *t, *ts;
    int64_t h = m->cfg.h, d = m->cfg.d, in = b->shape[b->ndim - 1];
    wref base;
    if (b->mx) { // blocks [.., out, in/32, 16] and scales [.., out, in/32]: element e's nibble, e / 32's scale
        size_t at;
        if (mx_pair(c, b, &f, &t, &fs, &ts, err)) return -1;
        st_mark_read(f, t); // read where they lie, a panel at a time
        st_mark_read(fs, ts);
        base = (wref){.p = f->data + t->begin, .dt = WP_MXFP4, .ld = (size_t)in, .sc = fs->data + ts->begin};
        if (wp_finite(base, (size_t)(b->numel / in), (size_t)in, &at))
            return ms_fail(err, "%s: tensor '%s_scales': a scale makes values overflow float32 (element %zu)",
                           c->arg, b->name, at);
    } else {
        if (ckpt_tensor(c, b->name, &f, &t, err) || st_check_finite(f, t, err)) return -1;
        // a Conv1D expert's [in, out] (a view's): element (r, c) of the logical weight at c in + r
        base = (wref){.p = f->data + t->begin, .dt = (wp_dtype)wp_dtype_of(t), .ld = (size_t)in, .tr = b->trans};
    }
    switch (b->kind) {
    case K_EXP: *wpart(&m->experts[b->e], b->part) = base; break;
    case K_SHARED: *wpart(&m->shared[b->e], b->part) = base; break;
    case K_STACK: // [n, rows, cols]
        for (int e = 0; e < m->cfg.n; e++)
            *wpart(&m->experts[e], b->part) = wp_offset(base, (size_t)(e * (b->numel / b->shape[0])));
        break;
    case K_HALVES: // [n, 2h, d]: gate rows, then up rows
        for (int e = 0; e < m->cfg.n; e++) {
            m->experts[e].w1 = wp_offset(base, (size_t)(e * 2 * h * d));
            m->experts[e].w3 = wp_offset(base, (size_t)(e * 2 * h * d + h * d));
        }
        break;
    case K_STACK_T: // [n, h, d]: expert e's down_proj (d, h) transposed, element (r, c) at c d + r
        for (int e = 0; e < m->cfg.n; e++) {
            m->experts[e].w2 = wp_offset(base, (size_t)(e * h * d));
            m->experts[e].w2.tr = 1;
        }
        break;
    case K_IL_T: // [n, d, 2h]: gate row j is stored column 2j, up row j column 2j + 1
        for (int e = 0; e < m->cfg.n; e++) {
            m->experts[e].w1 = wp_offset(base, (size_t)(e * 2 * h * d));
            m->experts[e].w3 = wp_offset(base, (size_t)(e * 2 * h * d + 1));
            m->experts[e].w1.tr = m->experts[e].w3.tr = 1;
            m->experts[e].w1.rs = m->experts[e].w3.rs = 2;
        }
        break;
    default: // K_IL_ROWS [n, 2h, d]: rows 2j gate, 2j + 1 up: every other row, 2d apart
        for (int e = 0; e < m->cfg.n; e++) {
            m->experts[e].w1 = wp_offset(base, (size_t)(e * 2 * h * d));
            m->experts[e].w3 = wp_offset(base, (size_t)(e * 2 * h * d + d));
            m->experts[e].w1.ld = m->experts[e].w3.ld = (size_t)(2 * d);
        }
        break;
    }
    progress_add(4.0 * (double)b->numel / 1048576.0);
    return 0;
}

/* the ways load_layer holds the routed experts: read into floats; left to a stream
 * (family_stream); their weights mapped where the file keeps them (map_binding); and
 * the shared experts' weights mapped too (when all of them can be); the routed
 * weights mapped in either layout (a view, family_load_view) */
enum { LOAD_ALL, LOAD_SHELL, LOAD_MAPPED, LOAD_MAPPED_SHARED, LOAD_VIEW };

static int load_layer(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o,
                      int mode, blist *keep, dims *zout, ms_err *err) {
    int shell = mode == LOAD_SHELL, view = mode == LOAD_VIEW;
    int mapped = mode == LOAD_MAPPED || mode == LOAD_MAPPED_SHARED || view;
    memset(m, 0, sizeof *m);
    dims z;
    int mx;
    if (layer_dims(c, L->family, L->prefix, &z, &mx, err)) return -1;
    if (check_expert_count(c, L->family, L->prefix, z.n, err)) return -1;
    moe_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (family_config(c, L->family, L->prefix, &z, o, &cfg, err)) return -1;
    blist l = {NULL, 0, 0};
    layer_bindings(&l, L->family, L->prefix, &z, mx);
    // every tensor's shape before the allocation: it is then bounded by the files
    for (int i = 0; i < l.n; i++) {
        const binding *b = &l.b[i];
        const st_file *f, *fs;
        const st_tensor *t, *ts;
        if (b->optional && ckpt_find(c, b->name) < 0) continue;
        int rc = b->mx ? mx_pair(c, b, &f, &t, &fs, &ts, err) : ckpt_tensor(c, b->name, &f, &t, err);
        if (!rc && !b->mx && !shape_is(t, b->ndim, b->shape)) rc = shape_error(c, t, b->ndim, b->shape, err);
        if (rc) {
            free(l.b);
            return -1;
        }
        if (b->kind == K_GATE_B) cfg.has_gate_bias = 1;
        if (b->kind == K_EXP && (b->part == P_FC1B || b->part == P_FC2B)) cfg.has_expert_bias = 1;
        if ((shell && b->mx) || (mapped && routed_weight(b) && !mappable(c, b, view))) {
            free(l.b); // a stream's MXFP4 experts are decoded whole, a mapped transposed layout too: the caller loads the layer
            return 1;
        }
        // one shared expert (the families' only kind) or they stay floats: aligning more
        // orders them by a cost read from floats
        if (mode == LOAD_MAPPED_SHARED && shared_weight(b) && (cfg.s != 1 || !mappable(c, b, 0))) mode = LOAD_MAPPED;
    }
    if (shell) moe_alloc_shell(m, &cfg);
    else if (mode == LOAD_MAPPED_SHARED) moe_alloc_mapped_shared(m, &cfg);
    else if (mode == LOAD_MAPPED || view) moe_alloc_mapped(m, &cfg);
    else moe_alloc(m, &cfg);
    m->path = ms_strdup(c->arg);
    m->layer = ms_strdup(L->prefix);
    double total = 0;
    for (int i = 0; i < l.n; i++)
        if (!shell || !routed(&l.b[i])) total += 4.0 * (double)l.b[i].numel / 1048576.0;
    char phase[96];
    snprintf(phase, sizeof phase, "load %.80s", base_name(c->arg));
    progress_begin(phase, total, "MiB");
    int rc = 0;
    for (int i = 0; i < l.n && !rc; i++) {
        const binding *b = &l.b[i];
        if (b->optional && ckpt_find(c, b->name) < 0) continue;
        if (shell && routed(b)) { // read later (a stream, or the shell's caller): not unused
            const st_file *f;
            const st_tensor *t;
            if (!ckpt_tensor(c, b->name, &f, &t, NULL)) st_mark_read(f, t);
            continue;
        }
        if (progress_cancelled()) { // a listener's cancel (the explorer's q): between tensors
            rc = ms_fail(err, "cancelled");
            break;
        }
        int map = mapped && (routed_weight(b) || (mode == LOAD_MAPPED_SHARED && shared_weight(b)));
        rc = map ? map_binding(c, b, m, err) : load_binding(c, b, m, err);
    }
    progress_end();
    if (keep && !rc) *keep = l;
    else free(l.b);
    if (zout) *zout = z;
    if (rc) moe_free(m);
    return rc;
}

int family_load(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err) {
    return load_layer(m, c, L, o, LOAD_ALL, NULL, NULL, err);
}

int family_load_mapped(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err) {
    return load_layer(m, c, L, o, LOAD_MAPPED, NULL, NULL, err);
}

int family_load_mapped_shared(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o,
                              ms_err *err) {
    return load_layer(m, c, L, o, LOAD_MAPPED_SHARED, NULL, NULL, err);
}

int family_load_view(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err) {
    return load_layer(m, c, L, o, LOAD_VIEW, NULL, NULL, err);
}

int family_load_shell(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err) {
    return load_layer(m, c, L, o, LOAD_SHELL, NULL, NULL, err);
}

/* ---- a layer read expert by expert ---- */

struct family_stream {
    ckpt c;            /* owned */
    blist l;           /* the layer's bindings */
    moe_model view;    /* cfg, path, layer, and experts[e] pointing at the caller's dst
                        * while reading */
    float *tmp;        /* one expert's slice of a stacked tensor */
    size_t tmp_len;
    value_range range; /* the value ranges of the held part, then of every routed expert */
    int checked;       /* 1: every routed expert was scanned, check_err says how it went */
    int check_rc;
    ms_err check_err;
};

int family_load_stream(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o,
                       family_stream **out, ms_err *err) {
    blist l = {NULL, 0, 0};
    dims z;
    int rc = load_layer(m, c, L, o, LOAD_SHELL, &l, &z, err);
    if (rc) return rc;
    family_stream *s = ms_calloc(1, sizeof *s);
    s->c = *c;
    s->l = l;
    s->view.cfg = m->cfg;
    s->view.path = ms_strdup(m->path);
    s->view.layer = ms_strdup(m->layer);
    s->view.experts = ms_calloc((size_t)m->cfg.n, sizeof(moe_expert));
    range_held(&s->range, m, NULL); // the routed experts are scanned at the first read
    *out = s;
    return 0;
}

void family_stream_close(family_stream *s) {
    if (!s) return;
    ckpt_close(&s->c);
    free(s->l.b);
    free(s->view.experts);
    free(s->view.path);
    free(s->view.layer);
    free(s->tmp);
    free(s);
}

/* Routed expert e's floats into dst (carved by the caller): each of its tensors
 * (or its slice of a stacked one) decoded as family_load decodes it, so the
 * values are the same bit for bit; the file's pages are released after. */
/* the parts (EXPERT_W1 ...) a binding's values go to */
static unsigned binding_parts(const binding *b) {
    if (b->kind == K_STACK_T) return EXPERT_W2;
    if (b->kind != K_EXP && b->kind != K_STACK) return EXPERT_W1 | EXPERT_W3; // packed gate/up
    return b->part == P_FC1W || b->part == P_FC1B   ? EXPERT_W1
           : b->part == P_FC2W || b->part == P_FC2B ? EXPERT_W2
                                                    : EXPERT_W3;
}

static int stream_read_raw(family_stream *s, int e, unsigned parts, moe_expert *dst, ms_err *err) {
    int rc = 0;
    double t0 = timing_now();
    const moe_config *c = &s->view.cfg;
    // biases a family does not store are zero, as in a model from moe_alloc
    if (parts & EXPERT_W1) memset(dst->fc1_b, 0, (size_t)c->h * sizeof(float));
    if (parts & EXPERT_W2) memset(dst->fc2_b, 0, (size_t)c->d * sizeof(float));
    if ((parts & EXPERT_W3) && dst->fc3_b) memset(dst->fc3_b, 0, (size_t)c->h * sizeof(float));
    s->view.experts[e] = *dst;
    for (int i = 0; i < s->l.n && !rc; i++) {
        const binding *b = &s->l.b[i];
        if (!routed(b) || (b->kind == K_EXP && b->e != e) || !(binding_parts(b) & parts)) continue;
        const st_file *f;
        const st_tensor *t;
        if ((rc = ckpt_tensor(&s->c, b->name, &f, &t, err))) break;
        int64_t per = b->kind == K_EXP ? b->numel : b->numel / b->shape[0];
        int64_t first = b->kind == K_EXP ? 0 : (int64_t)e * per;
        size_t es = (size_t)(t->end - t->begin) / (size_t)(t->numel ? t->numel : 1);
        float *buf = (b->kind == K_EXP && !b->trans) || b->kind == K_STACK ? elem(b, &s->view, first) : NULL;
        if (!buf) {
            if (s->tmp_len < (size_t)per) {
                free(s->tmp);
                s->tmp = ms_malloc((size_t)per * sizeof(float));
                s->tmp_len = (size_t)per;
            }
            buf = s->tmp;
        }
        rc = st_read_f32_range(f, t, first, per, buf, err);
        for (int64_t j = 0; buf == s->tmp && j < per && !rc; j++) *elem(b, &s->view, first + j) = buf[j];
        st_release(f, t->begin + (size_t)first * es, t->begin + (size_t)(first + per) * es);
    }
    memset(&s->view.experts[e], 0, sizeof(moe_expert));
    timing_add("expert reads", timing_now() - t0); // MOESCOPE_TIMING: what streaming cost
    return rc;
}

/* A layer held whole is refused at load for values that are not finite or so
 * large that the arithmetic would overflow (moe_range_check). A streamed one
 * gets the same checks, with the same message, before any of its routed
 * experts is used: the first read scans them all once (non-finite values are
 * refused by the reader, naming the file and tensor; the magnitudes are judged
 * over the whole layer, as when held). A command that never reads the routed
 * experts (the gate cost) does not pay for the scan. Judged without an
 * evaluation set: the streaming commands (cost, align) have none. */
static int stream_check(family_stream *s, moe_expert *x, ms_err *err) {
    if (s->checked) return s->check_rc ? ms_fail(err, "%s", s->check_err.msg) : 0;
    s->checked = 1;
    const moe_config *c = &s->view.cfg;
    int rc = 0;
    for (int e = 0; e < c->n && !rc; e++) { // x: the caller's whole expert, no other memory
        rc = stream_read_raw(s, e, EXPERT_ALL, x, &s->check_err);
        if (!rc) range_expert(&s->range, &s->view, e, x);
    }
    range_finding f;
    if (!rc && range_judge(&s->range, &s->view, &f)) rc = family_range_fail(&s->view, &f, &s->check_err);
    s->check_rc = rc;
    return rc ? ms_fail(err, "%s", s->check_err.msg) : 0;
}

int family_stream_read(family_stream *s, int e, unsigned parts, moe_expert *dst, ms_err *err) {
    if (stream_check(s, dst, err)) return -1;
    return stream_read_raw(s, e, parts, dst, err);
}

/* ---- saving in the input's format ---- */

/* A tensor of the layer encoded only when its shard is written (st_writer_add_gen):
 * gathered from the model and converted to the source's dtype one tensor at a time. */
/* Values rounded on the way into a narrower dtype (F32 into a BF16 or F16 tensor):
 * counted for the note the writer returns. */
typedef struct {
    size_t rounded, total;
    double sq_err, sq_ref;
} rounding;

typedef struct {
    const moe_model *m;
    const family_experts *ex; /* the routed experts one slot at a time, or NULL: m's */
    binding b;
    st_dtype dtype;
    rounding *rnd;            /* the enc_set's */
} lazy_enc;

typedef struct {
    int tensor;       /* number in the source checkpoint */
    char dtype[16];
    void *data;       /* the encoded bytes, or NULL when lazy */
    lazy_enc *lazy;
    size_t nbytes;
} enc_tensor;

typedef struct {
    enc_tensor *t;
    int n;
    size_t requant, mx_blocks; /* MXFP4 blocks quantised afresh / in all */
    double sq_err, sq_ref;
    rounding *rnd;             /* BF16 / F16 tensors' rounding (heap: the lazy encoders point at it) */
    const moe_model *m;        /* the layer written: its moescope.* metadata (what scramble, align
                                * or merge did) goes into the shards holding it */
} enc_set;

static enc_tensor *enc_add(enc_set *s, int tensor, const char *dtype, void *data, size_t nbytes) {
    s->t = ms_realloc(s->t, (size_t)(s->n + 1) * sizeof(enc_tensor));
    enc_tensor *e = &s->t[s->n++];
    e->tensor = tensor;
    snprintf(e->dtype, sizeof e->dtype, "%s", dtype);
    e->data = data;
    e->lazy = NULL;
    e->nbytes = nbytes;
    return e;
}

static void enc_free(enc_set *s) {
    for (int i = 0; i < s->n; i++) {
        free(s->t[i].data);
        free(s->t[i].lazy);
    }
    free(s->t);
    free(s->rnd);
}

/* st_gen_fn: the binding's model values in the source's dtype (BF16/F16 rounded
 * to nearest even). */
static void encode_run(const binding *b, const moe_model *m, st_dtype dtype, int64_t i0, int64_t i1,
                       void *buf, rounding *r) {
    const float *run = contiguous(b) ? elem(b, m, 0) : NULL;
    for (int64_t i = i0; i < i1; i++) {
        float v = run ? run[i] : *elem(b, m, i), back = v;
        switch (dtype) {
        case ST_BF16:
            ((uint16_t *)buf)[i] = codec_f32_to_bf16(v);
            back = st_bf16_to_float(((uint16_t *)buf)[i]);
            break;
        case ST_F16:
            ((uint16_t *)buf)[i] = codec_f32_to_f16(v);
            back = st_half_to_float(((uint16_t *)buf)[i]);
            break;
        case ST_F64: ((double *)buf)[i] = v; break;
        default: ((float *)buf)[i] = v; break;
        }
        if (back != v) r->rounded++, r->sq_err += ((double)back - v) * ((double)back - v);
        r->sq_ref += (double)v * v;
    }
    r->total += (size_t)(i1 - i0);
}

/* st_gen_fn: the binding's model values in the source's dtype (BF16/F16 rounded
 * to nearest even); a routed expert's tensor from the experts given one slot at
 * a time (z->ex): each slot's slice through a view whose experts[e] is that slot. */
static int gen_encoded(void *ctx, void *buf, ms_err *err) {
    const lazy_enc *z = ctx;
    const binding *b = &z->b;
    if (!z->ex || !routed(b)) {
        encode_run(b, z->m, z->dtype, 0, b->numel, buf, z->rnd);
        return 0;
    }
    moe_model view = *z->m;
    view.experts = ms_calloc((size_t)z->m->cfg.n, sizeof(moe_expert));
    int e0 = b->kind == K_EXP ? b->e : 0, e1 = b->kind == K_EXP ? b->e + 1 : (int)b->shape[0], rc = 0;
    int64_t per = b->kind == K_EXP ? b->numel : b->numel / b->shape[0];
    for (int e = e0; e < e1 && !rc; e++) {
        const moe_expert *x = z->ex->slot(z->ex->ctx, e, err);
        if (!x) {
            rc = -1;
            break;
        }
        view.experts[e] = *x;
        int64_t first = b->kind == K_EXP ? 0 : (int64_t)e * per;
        encode_run(b, &view, z->dtype, first, first + per, buf, z->rnd);
        memset(&view.experts[e], 0, sizeof(moe_expert));
    }
    free(view.experts);
    return rc;
}

/* the binding's model values into vals (numel), as float32: from m, or a routed
 * expert's tensor from the slots ex gives (each slot's slice through a view, as
 * gen_encoded reads them) */
static int gather_values(const binding *b, const moe_model *m, const family_experts *ex, float *vals, ms_err *err) {
    if (!ex || !routed(b)) {
        for (int64_t j = 0; j < b->numel; j++) vals[j] = *elem(b, m, j);
        return 0;
    }
    moe_model view = *m;
    view.experts = ms_calloc((size_t)m->cfg.n, sizeof(moe_expert));
    int e0 = b->kind == K_EXP ? b->e : 0, e1 = b->kind == K_EXP ? b->e + 1 : (int)b->shape[0], rc = 0;
    int64_t per = b->kind == K_EXP ? b->numel : b->numel / b->shape[0];
    for (int e = e0; e < e1 && !rc; e++) {
        const moe_expert *x = ex->slot(ex->ctx, e, err);
        if (!x) {
            rc = -1;
            break;
        }
        view.experts[e] = *x;
        int64_t first = b->kind == K_EXP ? 0 : (int64_t)e * per;
        for (int64_t j = first; j < first + per; j++) vals[j] = *elem(b, &view, j);
        memset(&view.experts[e], 0, sizeof(moe_expert));
    }
    free(view.experts);
    return rc;
}

static int encode_mx(ckpt *c, const binding *b, const float *vals, enc_set *s, ms_err *err) {
    uint8_t *sb, *ss; // the source's blocks and scales, copied out of the mapping
    if (mx_copy(c, b, &sb, &ss, err)) return -1;
    size_t nblocks = (size_t)(b->numel / MX_BLOCK);
    float *dec = ms_malloc(nblocks * MX_BLOCK * sizeof(float));
    if (mxfp4_decode(sb, ss, nblocks, dec)) {
        free(dec);
        free(sb);
        free(ss);
        return ms_fail(err, "%s: tensor '%s_scales': a scale makes values overflow float32", c->arg,
                       b->name);
    }
    mx_reuse *r = mx_reuse_new(sb, ss, dec, nblocks);
    uint8_t *blocks = ms_malloc(nblocks * 16), *scales = ms_malloc(nblocks);
    mx_encode(r, vals, nblocks, blocks, scales, &s->requant, &s->sq_err, &s->sq_ref);
    s->mx_blocks += nblocks;
    mx_reuse_free(r);
    free(dec);
    free(sb);
    free(ss);
    char name[700];
    snprintf(name, sizeof name, "%s_blocks", b->name);
    enc_add(s, ckpt_find(c, name), "U8", blocks, nblocks * 16);
    snprintf(name, sizeof name, "%s_scales", b->name);
    enc_add(s, ckpt_find(c, name), "U8", scales, nblocks);
    return 0;
}

/* Every binding of m's layer, to be gathered from m and encoded like the source
 * as its shard is written (MXFP4 now: its blocks reuse the source's). */
/* The binding in l whose tensor slot b's values came from when the experts were
 * moved (src: slot i holds source expert src[i]; the shared experts by ssrc): the
 * same place in the source expert's run of bindings (layer_bindings adds every
 * expert's alike), or b itself. */
static const binding *source_binding(const blist *l, const binding *b, const int *src,
                                     const int *ssrc) {
    const int *from = b->kind == K_EXP ? src : b->kind == K_SHARED ? ssrc : NULL;
    if (!from || from[b->e] == b->e) return b;
    int p0 = -1, q0 = -1;
    for (int i = 0; i < l->n && (p0 < 0 || q0 < 0); i++) {
        if (l->b[i].kind != b->kind) continue;
        if (p0 < 0 && l->b[i].e == b->e) p0 = i;
        if (q0 < 0 && l->b[i].e == from[b->e]) q0 = i;
    }
    int k = q0 + (int)(b - l->b) - p0;
    if (p0 < 0 || q0 < 0 || k < 0 || k >= l->n) return b;
    const binding *s = &l->b[k];
    return s->kind == b->kind && s->part == b->part && s->e == from[b->e] ? s : b;
}

static int encode_layer(const moe_model *m, const family_experts *ex, const int *src,
                        const int *ssrc, ckpt *c, enc_set *s, ms_err *err) {
    int fam = family_from_name(moe_family(&m->cfg));
    dims z = {m->cfg.n, m->cfg.d, m->cfg.h, m->cfg.s ? m->cfg.hs : 0, 0, m->cfg.s};
    char name[700];
    snprintf(name, sizeof name, "%s.experts.gate_up_proj_blocks", m->layer);
    int mx = fam == FAM_GPT_OSS && ckpt_find(c, name) >= 0;
    snprintf(name, sizeof name, "%s.experts.gate_up_proj", m->layer);
    z.packed = fam != FAM_GPT_OSS && ckpt_find(c, name) >= 0; // transformers >= 5
    blist l = {NULL, 0, 0};
    layer_bindings(&l, fam, m->layer, &z, mx);
    int rc = 0;
    for (int i = 0; i < l.n && !rc; i++) {
        const binding *b = &l.b[i];
        if (b->optional && ckpt_find(c, b->name) < 0) continue;
        if (b->mx) {
            float *vals = ms_malloc((size_t)b->numel * sizeof(float));
            rc = gather_values(b, m, ex, vals, err);
            if (!rc) rc = encode_mx(c, b, vals, s, err);
            free(vals);
            continue;
        }
        const st_file *f;
        const st_tensor *t, *ts;
        if ((rc = ckpt_tensor(c, b->name, &f, &t, err))) break;
        if (!shape_is(t, b->ndim, b->shape)) {
            rc = shape_error(c, t, b->ndim, b->shape, err);
            break;
        }
        // an expert moved to another slot keeps its own dtype: an F32 expert of B put
        // where B held a BF16 one stays F32, so the output computes exactly B's function
        const binding *sb = source_binding(&l, b, src, ssrc);
        if (sb != b && (rc = ckpt_tensor(c, sb->name, &f, &ts, err))) break;
        if (sb != b && shape_is(ts, t->ndim, t->shape)) t = ts;
        if (t->dtype != ST_BF16 && t->dtype != ST_F16 && t->dtype != ST_F64 && t->dtype != ST_F32) {
            rc = ms_fail(err, "%s: tensor '%s' has dtype %s, which moescope cannot write", c->arg,
                         t->name, t->dtype_name);
            break;
        }
        size_t es = t->dtype == ST_F64 ? 8 : t->dtype == ST_F32 ? 4 : 2;
        enc_tensor *e = enc_add(s, ckpt_find(c, b->name), t->dtype_name, NULL, (size_t)b->numel * es);
        e->lazy = ms_malloc(sizeof *e->lazy);
        e->lazy->m = m;
        e->lazy->ex = ex;
        e->lazy->b = *b;
        e->lazy->dtype = t->dtype;
        e->lazy->rnd = s->rnd;
    }
    free(l.b);
    return rc;
}

/* Does shard sh hold one of the encoded (the layer's) tensors? */
static int shard_holds_layer(const ckpt *c, int sh, const int *enc_of) {
    for (int k = 0; k < c->ntensors; k++)
        if (enc_of[k] >= 0 && c->shard_of[k] == sh) return 1;
    return 0;
}

/* Shard sh of c, with the encoded tensors replacing theirs, to path. */
static int write_shard(ckpt *c, int sh, const int *enc_of, const enc_set *s, const char *path,
                       ms_err *err) {
    const st_file *f;
    if (ckpt_shard(c, sh, &f, err)) return -1;
    st_writer *w = st_writer_new();
    for (int i = 0; i < f->ntensors; i++) {
        const st_tensor *t = &f->tensors[i];
        int k = ckpt_find(c, t->name);
        const enc_tensor *e = k >= 0 && enc_of[k] >= 0 ? &s->t[enc_of[k]] : NULL;
        if (e && c->shard_of[k] == sh && e->lazy)
            st_writer_add_gen(w, t->name, e->dtype, t->ndim, t->shape, e->nbytes, gen_encoded, e->lazy);
        else if (e && c->shard_of[k] == sh)
            st_writer_add_raw(w, t->name, e->dtype, t->ndim, t->shape, e->data, e->nbytes);
        else
            st_writer_add_mapped(w, f, t);
    }
    // the shard's metadata, the layer's moescope.* keys (if it holds the layer) replacing its own
    const moe_model *m = s->m && shard_holds_layer(c, sh, enc_of) ? s->m : NULL;
    for (int i = 0; i < f->nmeta; i++)
        if (!m || !moe_meta_get(m, f->meta_keys[i])) st_writer_meta(w, f->meta_keys[i], f->meta_vals[i]);
    for (int i = 0; m && i < m->nmeta; i++)
        if (!strncmp(m->meta[i].key, "moescope.", 9)) st_writer_meta(w, m->meta[i].key, m->meta[i].value);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    return rc;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* dst as a link to the file src names: a hard link to the resolved file (same
 * bytes, no copy; a shard that is a symbolic link - a Hugging Face cache's
 * relative link into its blobs, a seed folder's to ../backbone.safetensors -
 * would dangle or point elsewhere beside dst), else a symbolic link to its
 * absolute path (another file system). Only a regular file is linked: a FIFO
 * or a device in a checkpoint folder is refused. */
static int link_file(const char *src, const char *dst, ms_err *err) {
    char *abs = realpath(src, NULL);
    if (!abs) return ms_fail(err, "%s: cannot resolve: %s", src, strerror(errno));
    struct stat sb;
    if (stat(abs, &sb) || !S_ISREG(sb.st_mode)) {
        free(abs);
        return ms_fail(err, "%s: not a regular file; refusing to link it into the output %s", src, dst);
    }
    int rc = link(abs, dst) ? symlink(abs, dst) : 0;
    int e = errno;
    free(abs);
    return rc ? ms_fail(err, "%s: cannot link to %s: %s", dst, src, strerror(e)) : 0;
}

/* An untouched shard is linked as it is, but only whole: its header's extents
 * checked against its size (st_open), so a cut shard is named, not passed on. */
static int shard_whole(const char *path, ms_err *err) {
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode)) return 0; // link_file says why
    st_file f;
    if (st_open(&f, path, err)) return -1;
    st_close(&f);
    return 0;
}

static int copy_file(const char *src, const char *dst, ms_err *err) {
    FILE *fp = fopen(src, "rb");
    if (!fp) return ms_fail(err, "%s: cannot open: %s", src, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (len + got > cap) {
            cap = 2 * (len + got);
            buf = ms_realloc(buf, cap);
        }
        memcpy(buf + len, chunk, got);
        len += got;
    }
    int bad = ferror(fp);
    fclose(fp);
    int rc = bad ? ms_fail(err, "%s: read error", src) : af_write_all(dst, buf ? buf : "", len, err);
    free(buf);
    return rc;
}

/* Remove the files in a temporary output directory, then the directory. */
static void remove_tree(const char *dir, const ckpt *c) {
    for (int s = 0; s < c->nshards; s++) {
        char *p = ckpt_path_join(dir, base_name(c->shard_names[s]));
        unlink(p);
        free(p);
    }
    const char *extra[2] = {c->index_path ? base_name(c->index_path) : NULL, "config.json"};
    for (int i = 0; i < 2; i++) {
        if (!extra[i]) continue;
        char *p = ckpt_path_join(dir, extra[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

/* Fill the temporary directory tmp: shards (rewritten or linked), index, config. */
static int fill_dir(ckpt *c, const int *enc_of, const enc_set *s, const char *tmp, ms_err *err) {
    for (int sh = 0; sh < c->nshards; sh++) {
        int touched = 0;
        for (int i = 0; i < s->n && !touched; i++) touched = c->shard_of[s->t[i].tensor] == sh;
        struct stat sb;
        if (!touched && stat(c->shard_paths[sh], &sb) && errno == ENOENT)
            return ms_fail(err, "%s: shard '%s' named in the index is missing (it holds none of "
                                "the layer's tensors, but the output links every shard)",
                           c->index_path ? c->index_path : c->arg, c->shard_names[sh]);
        char *dst = ckpt_path_join(tmp, base_name(c->shard_names[sh]));
        int rc = touched ? write_shard(c, sh, enc_of, s, dst, err)
                         : shard_whole(c->shard_paths[sh], err) || link_file(c->shard_paths[sh], dst, err);
        free(dst);
        if (rc) return -1;
    }
    const char *src[2] = {c->index_path, c->config_path};
    for (int i = 0; i < 2; i++) {
        if (!src[i]) continue;
        char *dst = ckpt_path_join(tmp, base_name(src[i]));
        int rc = copy_file(src[i], dst, err);
        free(dst);
        if (rc) return -1;
    }
    return 0;
}

/* Build the output directory beside out, then rename it into place: a reader
 * never sees a half-written checkpoint. An existing out must be an empty directory. */
static int save_dir(ckpt *c, const int *enc_of, const enc_set *s, const char *out, ms_err *err) {
    struct stat sb;
    // a symbolic link is neither removed nor renamed over: the directory would land
    // beside the link, not where it points
    if (!lstat(out, &sb) && S_ISLNK(sb.st_mode))
        return ms_fail(err, "%s: is a symbolic link; name the directory it points to, or a new "
                            "name (a sharded checkpoint is written as a directory)", out);
    if (!stat(out, &sb) && !S_ISDIR(sb.st_mode))
        return ms_fail(err, "%s: exists and is not a directory (a sharded checkpoint is written as "
                            "a directory)", out);
    char *tmp = af_temp_template(out, 0);
    if (!mkdtemp(tmp)) {
        int e = errno;
        free(tmp);
        return ms_fail(err, "%s: cannot create a directory beside it: %s", out, strerror(e));
    }
    int slot = cancel_register(tmp, 1); // Ctrl-C removes the half-built directory
    mode_t um = umask(0); // mkdtemp makes 0700; a checkpoint directory gets the usual mode
    umask(um);
    chmod(tmp, 0777 & ~um);
    int rc = fill_dir(c, enc_of, s, tmp, err);
    if (!rc && !stat(out, &sb) && rmdir(out))
        rc = errno == ENOTEMPTY || errno == EEXIST
                 ? ms_fail(err, "%s: exists and is not empty; remove it or choose another output", out)
                 : ms_fail(err, "%s: cannot replace the existing directory: %s", out, strerror(errno));
    if (!rc && rename(tmp, out)) rc = ms_fail(err, "%s: cannot rename into place: %s", out, strerror(errno));
    if (rc) remove_tree(tmp, c);
    cancel_unregister(slot);
    free(tmp);
    return rc;
}

/* A one-file output loads with the config.json beside it (k, scaling, groups):
 * the input's is copied there when there is none; one already there is kept
 * (*kept set when it differs from the input's). */
static int config_beside(const ckpt *c, const char *out, int *kept, ms_err *err) {
    *kept = 0;
    if (!c->config_path) return 0;
    const char *slash = strrchr(out, '/');
    char *dir = ms_strdup(!slash ? "." : slash == out ? "/" : out);
    if (slash && slash != out) dir[slash - out] = 0;
    char *dst = ckpt_path_join(dir, "config.json");
    free(dir);
    int rc = 0;
    FILE *fp = fopen(dst, "rb");
    if (!fp) {
        rc = copy_file(c->config_path, dst, err);
    } else { // the same bytes as the input's?
        FILE *src = fopen(c->config_path, "rb");
        int a, b;
        do {
            a = getc(fp);
            b = src ? getc(src) : -2;
        } while (a == b && a != EOF);
        *kept = a != b;
        if (src) fclose(src);
        fclose(fp);
    }
    free(dst);
    return rc;
}

/* What the output lost to its dtypes: MXFP4 blocks quantised afresh, values rounded
 * into BF16 / F16 tensors (a merge's averages; never an aligned expert, which keeps
 * its dtype). NULL when nothing was. */
static char *requant_note(const enc_set *s) {
    const rounding *r = s->rnd;
    if (!s->requant && !r->rounded) return NULL;
    char *note = ms_calloc(1, 800);
    size_t k = 0;
    if (s->requant)
        k += (size_t)snprintf(note, 400,
                              "MXFP4: %zu of %zu blocks requantised (a hidden-unit permutation moves "
                              "values across down_proj's 32-wide scale blocks); relative RMS error "
                              "added to those blocks %.3g",
                              s->requant, s->mx_blocks, s->sq_ref > 0 ? sqrt(s->sq_err / s->sq_ref) : 0);
    if (r->rounded)
        snprintf(note + k, 800 - k,
                 "%s%zu of %zu values rounded to the BF16/F16 of the tensors they are written in "
                 "(relative RMS error %.3g)", k ? "; " : "", r->rounded, r->total,
                 r->sq_ref > 0 ? sqrt(r->sq_err / r->sq_ref) : 0);
    return note;
}

int family_save(const moe_model *m, const char *src, const char *out, char **note, ms_err *err) {
    return family_save_with(m, NULL, src, out, note, err);
}

int family_save_with(const moe_model *m, const family_experts *ex, const char *src, const char *out,
                     char **note, ms_err *err) {
    return family_save_moved(m, ex, NULL, NULL, src, out, note, err);
}

int family_save_moved(const moe_model *m, const family_experts *ex, const int *order,
                      const int *shared_order, const char *src, const char *out, char **note,
                      ms_err *err) {
    if (note) *note = NULL;
    moe_model f; // mapped shared experts read from floats here (one layer's worth)
    int sh = moe_shared_mapped(m);
    if (sh) {
        moe_clone_shared_floats(&f, m);
        m = &f;
    }
    ckpt c;
    if (ckpt_open(&c, src, err)) {
        if (sh) moe_free(&f);
        return -1;
    }
    enc_set s;
    memset(&s, 0, sizeof s);
    s.rnd = ms_calloc(1, sizeof(rounding));
    s.m = m;
    int rc = encode_layer(m, ex, order, shared_order, &c, &s, err);
    int *enc_of = ms_malloc((size_t)(c.ntensors ? c.ntensors : 1) * sizeof(int));
    for (int i = 0; i < c.ntensors; i++) enc_of[i] = -1;
    for (int i = 0; i < s.n; i++) enc_of[s.t[i].tensor] = i;
    int as_dir = ckpt_output_is_dir(src, out), kept = 0;
    if (!rc) rc = as_dir ? save_dir(&c, enc_of, &s, out, err) : write_shard(&c, 0, enc_of, &s, out, err);
    if (!rc && !as_dir) rc = config_beside(&c, out, &kept, err);
    if (!rc && note) *note = requant_note(&s);
    if (!rc && note && kept) {
        char *old = *note, *k = ms_malloc(strlen(out) + (old ? strlen(old) : 0) + 160);
        sprintf(k, "%s%sthe config.json beside it is not the input's and was kept (it loads with that one)",
                old ? old : "", old ? "; " : "");
        free(old);
        *note = k;
    }
    free(enc_of);
    enc_free(&s);
    ckpt_close(&c);
    if (sh) moe_free(&f);
    return rc;
}

int family_describe(ckpt *c, const family_layer *L, const family_overrides *o, moe_config *cfg,
                    ms_err *err) {
    memset(cfg, 0, sizeof *cfg);
    if (L->family == FAM_NATIVE) {
        snprintf(cfg->family, sizeof cfg->family, "native");
        return 0;
    }
    dims z;
    int mx;
    if (layer_dims(c, L->family, L->prefix, &z, &mx, err)) return -1;
    if (family_config(c, L->family, L->prefix, &z, o, cfg, err)) return -1;
    return 0;
}
