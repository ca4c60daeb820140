/* model.c - one MoE layer: allocation (one block, pointers carved, llm.c
 * style), compatibility checks, interpolation and metadata. Reading and
 * writing files is io/model_io.c's. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *moe_router_name(moe_router r) { return r == ROUTER_TOPK ? "topk" : "dense"; }

const char *moe_act_name(moe_act a) {
    switch (a) {
    case ACT_GELU: return "gelu";
    case ACT_GELU_TANH: return "gelu_new";
    case ACT_SILU_GLU: return "silu_glu";
    case ACT_GPT_OSS: return "gpt_oss_swiglu";
    default: return "relu";
    }
}

int moe_act_glu(moe_act a) { return a == ACT_SILU_GLU || a == ACT_GPT_OSS; }

moe_config moe_shared_config(const moe_config *c) {
    moe_config s = *c;
    if (s.hs > 0) s.h = s.hs;
    return s;
}

const char *moe_family(const moe_config *c) { return c->family[0] ? c->family : "native"; }

int moe_router_defaulted(const moe_config *c) { return !c->family[0] && c->origin[RP_K] == ORIGIN_DEFAULT; }

const char *moe_origin_name(moe_origin o) {
    switch (o) {
    case ORIGIN_FILE: return "file";
    case ORIGIN_CONFIG: return "config.json";
    case ORIGIN_CLI: return "command line";
    default: return "default";
    }
}

void moe_router_describe(const moe_config *c, char *buf, size_t len) {
    size_t k = 0;
#define OUT(...) k += (size_t)snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__)
    buf[0] = '\0';
    int topk = c->router == ROUTER_TOPK && (c->k < c->n || c->n_group > 1);
    if (c->score == SCORE_SPARSEMIXER) {
        OUT("sparsemixer (PhiMoE, evaluation): the top expert, then the best of the others, each "
            "weighted by its softmax over the logits within 2 x %g (relative) of it", c->jitter_eps);
    } else if (!topk) {
        OUT("%s over all %d experts", c->score == SCORE_SIGMOID ? "sigmoid" : "softmax", c->n);
    } else {
        OUT("%s scores", moe_score_name(c->score));
        if (c->has_corr_bias) OUT(", selected by score + selection bias");
        if (c->n_group > 1 && c->topk_group < c->n_group)
            OUT(", %d groups of %d ranked by their %s, keep %d", c->n_group, c->n / c->n_group,
                c->group_score == GROUP_TOP2_SUM ? "top-2 sum" : "best expert", c->topk_group);
        OUT(", top-%d of %d", c->k, c->n);
        if (c->renorm == RENORM_YES)
            OUT(c->score == SCORE_SOFTMAX && !c->has_corr_bias
                    ? ", renormalised (= softmax over the top-%d logits)"
                    : ", weights renormalised over the %d chosen", c->k);
        else
            OUT(", weights = the %s scores (not renormalised)",
                c->score == SCORE_SIGMOID ? "sigmoid" : "softmax");
        if (c->renorm == RENORM_YES && c->renorm_eps > 0) OUT(" (+%g)", c->renorm_eps);
    }
    if (c->scale != 0.0f && c->scale != 1.0f) OUT(", x %g", c->scale);
    if (c->s > 0)
        OUT("; %d shared expert%s%s", c->s, c->s > 1 ? "s" : "",
            c->shared_gated ? " gated by sigmoid(v.x)" : " (weight 1)");
    if (c->has_out_bias) OUT("; output bias");
#undef OUT
}

const char *moe_score_name(moe_score s) {
    return s == SCORE_SIGMOID ? "sigmoid" : s == SCORE_SPARSEMIXER ? "sparsemixer" : "softmax";
}

size_t moe_expert_size(const moe_config *c) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    size_t sz = h * d + h + d * h + d; // fc1 (h,d)+(h), fc2 (d,h)+(d)
    if (moe_act_glu(c->act)) sz += h * d + h; // fc3 (h,d)+(h)
    return sz;
}

size_t moe_expert_bias_size(const moe_config *c) {
    return (moe_act_glu(c->act) ? 2 : 1) * (size_t)c->h + (size_t)c->d;
}

float *moe_expert_carve_biases(moe_expert *e, const moe_config *c, float *p) {
    memset(e, 0, sizeof *e);
    e->fc1_b = p; p += c->h;
    e->fc2_b = p; p += c->d;
    if (moe_act_glu(c->act)) {
        e->fc3_b = p; p += c->h;
    }
    return p;
}

float *moe_expert_carve(moe_expert *e, const moe_config *c, float *p) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    e->fc1_w = p; p += h * d;
    e->fc1_b = p; p += h;
    e->fc2_w = p; p += d * h;
    e->fc2_b = p; p += d;
    if (moe_act_glu(c->act)) {
        e->fc3_w = p; p += h * d;
        e->fc3_b = p; p += h;
    } else {
        e->fc3_w = NULL;
        e->fc3_b = NULL;
    }
    return p;
}

void moe_expert_copy(moe_expert *dst, const moe_expert *src, const moe_config *c) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    if (!src->fc1_w) { // mapped: the biases, and the same mapping (views, mixes) for the weights
        memcpy(dst->fc1_b, src->fc1_b, h * sizeof(float));
        memcpy(dst->fc2_b, src->fc2_b, d * sizeof(float));
        if (moe_act_glu(c->act)) memcpy(dst->fc3_b, src->fc3_b, h * sizeof(float));
        dst->w1 = src->w1, dst->w2 = src->w2, dst->w3 = src->w3;
        return;
    }
    memcpy(dst->fc1_w, src->fc1_w, h * d * sizeof(float));
    memcpy(dst->fc1_b, src->fc1_b, h * sizeof(float));
    memcpy(dst->fc2_w, src->fc2_w, d * h * sizeof(float));
    memcpy(dst->fc2_b, src->fc2_b, d * sizeof(float));
    if (moe_act_glu(c->act)) {
        memcpy(dst->fc3_w, src->fc3_w, h * d * sizeof(float));
        memcpy(dst->fc3_b, src->fc3_b, h * sizeof(float));
    }
}

void moe_layout_of(const moe_config *c, moe_layout *l) {
    moe_config sc = moe_shared_config(c);
    size_t n = (size_t)c->n, d = (size_t)c->d, C = (size_t)c->C;
    memset(l, 0, sizeof *l);
    l->gate = n * d + n;
    l->corr = c->has_corr_bias ? n : 0;
    l->expert = moe_expert_size(c);
    l->experts = n * l->expert;
    l->shared = (size_t)c->s * moe_expert_size(&sc);
    l->shared_gate = c->shared_gated ? d : 0;
    l->out_bias = c->has_out_bias ? d : 0;
    l->norm = c->has_norm ? 2 * d : 0;
    l->head = c->has_head ? C * d + C : 0;
    l->total = l->gate + l->corr + l->experts + l->shared + l->shared_gate + l->out_bias + l->norm + l->head;
    // an expert's biases: fc1 (h), fc2 (d), [fc3 (h)]
    size_t glu = moe_act_glu(c->act) ? 1 : 0, hb = (size_t)c->h, hs = (size_t)sc.h;
    size_t biases = n * ((1 + glu) * hb + d) + (size_t)c->s * ((1 + glu) * hs + d);
    l->stored = l->total - (c->has_gate_bias ? 0 : n) - (c->has_expert_bias ? 0 : biases);
}

/* how alloc_layer holds the routed experts: floats, none, their biases alone */
enum { ROUTED_ALL, ROUTED_NONE, ROUTED_BIASES };
static void alloc_layer(moe_model *m, const moe_config *cfg, int routed, int shared_mapped);

void moe_alloc(moe_model *m, const moe_config *cfg) { alloc_layer(m, cfg, ROUTED_ALL, 0); }
void moe_alloc_shell(moe_model *m, const moe_config *cfg) { alloc_layer(m, cfg, ROUTED_NONE, 0); }
void moe_alloc_mapped(moe_model *m, const moe_config *cfg) { alloc_layer(m, cfg, ROUTED_BIASES, 0); }
void moe_alloc_mapped_shared(moe_model *m, const moe_config *cfg) { alloc_layer(m, cfg, ROUTED_BIASES, 1); }
int moe_is_mapped(const moe_model *m) { return m->cfg.n > 0 && m->experts && !m->experts[0].fc1_w && m->experts[0].w1.p; }
int moe_shared_mapped(const moe_model *m) {
    return m->cfg.s > 0 && m->shared && !m->shared[0].fc1_w && m->shared[0].w1.p;
}

/* the floats of count experts' biases of config c */
static size_t biases_of(const moe_config *c, size_t count) { return count * moe_expert_bias_size(c); }

/* routed: ROUTED_ALL, ROUTED_NONE (experts[e] all NULL), ROUTED_BIASES (their biases);
 * shared_mapped: the shared experts' biases alone (their weights mapped) */
static void alloc_layer(moe_model *m, const moe_config *cfg, int routed, int shared_mapped) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    moe_config *c = &m->cfg;
    if (c->hs <= 0) c->hs = c->h;
    if (c->scale == 0.0f) c->scale = 1.0f; // zero-initialised configs mean "no scaling"
    if (c->act_limit == 0.0f) c->act_limit = 7.0f;
    moe_config sc = moe_shared_config(c);
    size_t n = (size_t)c->n, d = (size_t)c->d, C = (size_t)c->C;
    // layout: gate (n,d)+(n) | [corr (n)] | n experts | s shared | [shared gate (d)]
    //         | [out bias (d)] | norm (d)+(d) | head (C,d)+(C)
    moe_layout l;
    moe_layout_of(c, &l);
    size_t total = l.total - (routed == ROUTED_ALL ? 0 : l.experts) + (routed == ROUTED_BIASES ? biases_of(c, n) : 0);
    if (shared_mapped) total += biases_of(&sc, (size_t)c->s) - l.shared;
    m->nparams = total;
    m->mem = ms_calloc(total ? total : 1, sizeof(float));
    float *p = m->mem;
    m->gate_w = p; p += n * d;
    m->gate_b = p; p += n;
    if (c->has_corr_bias) {
        m->corr_b = p; p += n;
    }
    m->experts = ms_calloc(n ? n : 1, sizeof(moe_expert));
    for (size_t i = 0; i < n && routed == ROUTED_ALL; i++) p = moe_expert_carve(&m->experts[i], c, p);
    for (size_t i = 0; i < n && routed == ROUTED_BIASES; i++) p = moe_expert_carve_biases(&m->experts[i], c, p);
    m->shared = ms_calloc(c->s ? (size_t)c->s : 1, sizeof(moe_expert));
    for (int j = 0; j < c->s; j++)
        p = shared_mapped ? moe_expert_carve_biases(&m->shared[j], &sc, p)
                          : moe_expert_carve(&m->shared[j], &sc, p);
    if (c->shared_gated) {
        m->shared_gate_w = p; p += d;
    }
    if (c->has_out_bias) {
        m->out_b = p; p += d;
    }
    if (c->has_norm) {
        m->norm_w = p; p += d;
        m->norm_b = p; p += d;
    }
    if (c->has_head) {
        m->head_w = p; p += C * d;
        m->head_b = p; p += C;
    }
}

void moe_free(moe_model *m) {
    if (!m) return;
    free(m->mem);
    free(m->experts);
    free(m->shared);
    free(m->path);
    free(m->layer);
    for (int i = 0; i < m->nmeta; i++) {
        free(m->meta[i].key);
        free(m->meta[i].value);
    }
    free(m->meta);
    memset(m, 0, sizeof *m);
}

void moe_clone(moe_model *dst, const moe_model *src) {
    int mapped = moe_is_mapped(src), sh = moe_shared_mapped(src);
    alloc_layer(dst, &src->cfg, mapped ? ROUTED_BIASES : ROUTED_ALL, sh);
    memcpy(dst->mem, src->mem, src->nparams * sizeof(float));
    for (int e = 0; mapped && e < src->cfg.n; e++) { // the same mapping (its owner outlives both)
        dst->experts[e].w1 = src->experts[e].w1;
        dst->experts[e].w2 = src->experts[e].w2;
        dst->experts[e].w3 = src->experts[e].w3;
    }
    for (int j = 0; sh && j < src->cfg.s; j++) {
        dst->shared[j].w1 = src->shared[j].w1;
        dst->shared[j].w2 = src->shared[j].w2;
        dst->shared[j].w3 = src->shared[j].w3;
    }
    dst->path = src->path ? ms_strdup(src->path) : NULL;
    dst->layer = src->layer ? ms_strdup(src->layer) : NULL;
    moe_meta_copy(dst, src);
}

void moe_meta_copy(moe_model *dst, const moe_model *src) {
    for (int i = 0; i < dst->nmeta; i++) {
        free(dst->meta[i].key);
        free(dst->meta[i].value);
    }
    free(dst->meta);
    // src's keys are distinct: one pass (moe_meta_set per key would search, O(n^2))
    dst->meta = ms_calloc(src->nmeta ? (size_t)src->nmeta : 1, sizeof(moe_meta));
    for (int i = 0; i < src->nmeta; i++) {
        dst->meta[i].key = ms_strdup(src->meta[i].key);
        dst->meta[i].value = ms_strdup(src->meta[i].value);
    }
    dst->nmeta = src->nmeta;
}

const char *moe_meta_get(const moe_model *m, const char *key) {
    for (int i = 0; i < m->nmeta; i++)
        if (!strcmp(m->meta[i].key, key)) return m->meta[i].value;
    return NULL;
}

void moe_meta_set(moe_model *m, const char *key, const char *value) {
    for (int i = 0; i < m->nmeta; i++)
        if (!strcmp(m->meta[i].key, key)) {
            free(m->meta[i].value);
            m->meta[i].value = ms_strdup(value);
            return;
        }
    m->meta = ms_realloc(m->meta, (size_t)(m->nmeta + 1) * sizeof(moe_meta));
    m->meta[m->nmeta].key = ms_strdup(key);
    m->meta[m->nmeta].value = ms_strdup(value);
    m->nmeta++;
}

/* ---- comparing and interpolating ---- */

/* -1 with the message when one integer field of A's and B's configs differs */
static int field_differs(ms_err *err, const char *pa, const char *pb, const char *label, int x, int y) {
    if (x == y) return 0;
    return ms_fail(err, "%s and %s differ: %s = %d vs %d", pa, pb, label, x, y);
}

/* what a family's layer is part of, for the message of a mix-up */
static const char *family_kind(const moe_config *c) {
    const char *f = moe_family(c);
    return !strcmp(f, "native") ? "a single MoE layer file"
           : !strcmp(f, "gpt2") ? "a GPT-2 network's MoE block"
           : !strcmp(f, "vit")  ? "a ViT's MoE block"
                                : "a decoder's MoE layer";
}

int moe_check_compatible(const moe_model *a, const moe_model *b, ms_err *err) {
    const moe_config *x = &a->cfg, *y = &b->cfg;
    const char *pa = a->path ? a->path : "(A)", *pb = b->path ? b->path : "(B)";
    // two kinds of model (a layer file against a network, a ViT against a GPT-2): said
    // first, with both kinds, rather than the first width that differs
    if (strcmp(moe_family(x), moe_family(y)))
        return ms_fail(err, "%s and %s are different kinds of model: family %s (%s) vs %s (%s); compare two "
                            "checkpoints of one model trained from different seeds",
                       pa, pb, moe_family(x), family_kind(x), moe_family(y), family_kind(y));
    if (field_differs(err, pa, pb, "n", x->n, y->n) || field_differs(err, pa, pb, "d", x->d, y->d) ||
        field_differs(err, pa, pb, "h", x->h, y->h) || field_differs(err, pa, pb, "s (shared experts)", x->s, y->s))
        return -1;
    if (x->router != y->router)
        return ms_fail(err, "%s and %s differ: router = %s vs %s", pa, pb,
                       moe_router_name(x->router), moe_router_name(y->router));
    if (x->router == ROUTER_TOPK && field_differs(err, pa, pb, "top_k", x->k, y->k)) return -1;
    if (x->act != y->act)
        return ms_fail(err, "%s and %s differ: activation = %s vs %s", pa, pb, moe_act_name(x->act),
                       moe_act_name(y->act));
    if (field_differs(err, pa, pb, "residual", x->residual, y->residual)) return -1;
    if (field_differs(err, pa, pb, "shared expert width", x->hs, y->hs)) return -1;
    if (x->score != y->score)
        return ms_fail(err, "%s and %s differ: router scores = %s vs %s", pa, pb,
                       moe_score_name(x->score), moe_score_name(y->score));
    if (x->jitter_eps != y->jitter_eps)
        return ms_fail(err, "%s and %s differ: router_jitter_noise = %g vs %g", pa, pb, x->jitter_eps,
                       y->jitter_eps);
    if (field_differs(err, pa, pb, "renormalise (0 yes, 1 no)", x->renorm, y->renorm) ||
        field_differs(err, pa, pb, "n_group", x->n_group, y->n_group))
        return -1;
    if (x->n_group > 1 &&
        (field_differs(err, pa, pb, "topk_group", x->topk_group, y->topk_group) ||
         field_differs(err, pa, pb, "group score (0 max, 1 top-2 sum)", x->group_score, y->group_score)))
        return -1;
    if (field_differs(err, pa, pb, "selection bias present", x->has_corr_bias, y->has_corr_bias) ||
        field_differs(err, pa, pb, "sigmoid-gated shared expert", x->shared_gated, y->shared_gated) ||
        field_differs(err, pa, pb, "output bias present", x->has_out_bias, y->has_out_bias))
        return -1;
    if (x->scale != y->scale || x->renorm_eps != y->renorm_eps || x->act_limit != y->act_limit)
        return ms_fail(err, "%s and %s differ: routed scaling %g vs %g, renormalising epsilon %g "
                            "vs %g, activation limit %g vs %g",
                       pa, pb, x->scale, y->scale, x->renorm_eps, y->renorm_eps, x->act_limit,
                       y->act_limit);
    if (field_differs(err, pa, pb, "head present", x->has_head, y->has_head)) return -1;
    if (x->has_head && (field_differs(err, pa, pb, "C (head outputs)", x->C, y->C) ||
                        field_differs(err, pa, pb, "head LayerNorm present", x->has_norm, y->has_norm)))
        return -1;
    return 0;
}

int moe_heads_equal(const moe_model *a, const moe_model *b) {
    const moe_config *x = &a->cfg, *y = &b->cfg;
    if (x->has_head != y->has_head || x->has_norm != y->has_norm) return 0;
    if (!x->has_head) return 1;
    if (x->C != y->C || x->d != y->d) return 0;
    size_t Cd = (size_t)x->C * (size_t)x->d;
    if (memcmp(a->head_w, b->head_w, Cd * sizeof(float)) ||
        memcmp(a->head_b, b->head_b, (size_t)x->C * sizeof(float)))
        return 0;
    if (x->has_norm && (memcmp(a->norm_w, b->norm_w, (size_t)x->d * sizeof(float)) ||
                        memcmp(a->norm_b, b->norm_b, (size_t)x->d * sizeof(float))))
        return 0;
    return 1;
}

/* o's mapped weights the mixes ta x + tb y (y outlives o's use) */
static void mix_expert(moe_expert *o, const moe_expert *x, const moe_expert *y, float ta, float tb) {
    o->w1 = wp_mix(x->w1, &y->w1, ta, tb);
    o->w2 = wp_mix(x->w2, &y->w2, ta, tb);
    o->w3 = x->w3.p ? wp_mix(x->w3, &y->w3, ta, tb) : x->w3;
}

void moe_interpolate(moe_model *out, const moe_model *a, const moe_model *b, double t) {
    // the three share one layout, so interpolation is one pass over mem
    float ta = (float)(1.0 - t), tb = (float)t;
    size_t np = a->nparams;
    for (size_t i = 0; i < np; i++) out->mem[i] = ta * a->mem[i] + tb * b->mem[i];
    // mapped routed weights: mixed a panel at a time inside the products (wpanel.h),
    // the same values as the floats' pass above, never a copy of the layer
    for (int e = 0; moe_is_mapped(a) && e < a->cfg.n; e++) mix_expert(&out->experts[e], &a->experts[e], &b->experts[e], ta, tb);
    for (int j = 0; moe_shared_mapped(a) && j < a->cfg.s; j++)
        mix_expert(&out->shared[j], &a->shared[j], &b->shared[j], ta, tb);
}

/* Do x and y, mapped experts of config c, hold the same stored bytes? */
static int same_expert(const moe_expert *x, const moe_expert *y, const moe_config *c) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    return wp_same(x->w1, y->w1, h, d) && wp_same(x->w2, y->w2, d, h) && (!x->w3.p || wp_same(x->w3, y->w3, h, d));
}

int moe_same(const moe_model *a, const moe_model *b) {
    if (moe_check_compatible(a, b, NULL) || a->nparams != b->nparams || moe_is_mapped(a) != moe_is_mapped(b) ||
        moe_shared_mapped(a) != moe_shared_mapped(b) || memcmp(a->mem, b->mem, a->nparams * sizeof(float)))
        return 0;
    moe_config sc = moe_shared_config(&a->cfg);
    for (int e = 0; moe_is_mapped(a) && e < a->cfg.n; e++)
        if (!same_expert(&a->experts[e], &b->experts[e], &a->cfg)) return 0;
    for (int j = 0; moe_shared_mapped(a) && j < a->cfg.s; j++)
        if (!same_expert(&a->shared[j], &b->shared[j], &sc)) return 0;
    return 1;
}

/* mapped expert x of config c (its weights decoded, its biases copied) into dst's parts */
static void expert_decode(const moe_expert *x, const moe_config *c, unsigned parts, moe_expert *dst) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    if (parts & EXPERT_W1) {
        wp_rows_f32(x->w1, d, 0, h, dst->fc1_w);
        memcpy(dst->fc1_b, x->fc1_b, h * sizeof(float));
    }
    if (parts & EXPERT_W2) {
        wp_rows_f32(x->w2, h, 0, d, dst->fc2_w);
        memcpy(dst->fc2_b, x->fc2_b, d * sizeof(float));
    }
    if ((parts & EXPERT_W3) && moe_act_glu(c->act)) {
        wp_rows_f32(x->w3, d, 0, h, dst->fc3_w);
        memcpy(dst->fc3_b, x->fc3_b, h * sizeof(float));
    }
}

int moe_mapped_read(void *ctx, int e, unsigned parts, moe_expert *dst, ms_err *err) {
    (void)err;
    const moe_model *m = ctx;
    expert_decode(&m->experts[e], &m->cfg, parts, dst);
    return 0;
}

expert_source moe_mapped_source(const moe_model *m) {
    return moe_is_mapped(m) ? (expert_source){moe_mapped_read, (void *)m} : (expert_source){NULL, NULL};
}

const moe_expert *moe_expert_floats(const moe_model *m, int e, moe_expert *tmp, float *buf) {
    if (!moe_is_mapped(m)) return &m->experts[e];
    moe_expert_carve(tmp, &m->cfg, buf);
    moe_mapped_read((void *)m, e, EXPERT_ALL, tmp, NULL);
    return tmp;
}

const moe_expert *moe_shared_floats(const moe_model *m, int j, moe_expert *tmp, float *buf) {
    if (!moe_shared_mapped(m)) return &m->shared[j];
    moe_config sc = moe_shared_config(&m->cfg);
    moe_expert_carve(tmp, &sc, buf);
    expert_decode(&m->shared[j], &sc, EXPERT_ALL, tmp);
    return tmp;
}

/* dst, allocated with routed experts in floats (or mapped: routed_mapped) and shared
 * experts in floats, from src: its floats copied around the experts, its mapped
 * experts decoded (src's own mapping kept where dst maps too) */
static void copy_decoding(moe_model *dst, const moe_model *src, int routed_mapped) {
    const moe_config *c = &src->cfg;
    moe_config sc = moe_shared_config(c);
    int rm = moe_is_mapped(src), sm = moe_shared_mapped(src);
    moe_layout l;
    moe_layout_of(c, &l);
    size_t head = l.gate + l.corr, tail = l.shared_gate + l.out_bias + l.norm + l.head;
    size_t routed = rm ? biases_of(c, (size_t)c->n) : l.experts;
    memcpy(dst->mem, src->mem, head * sizeof(float));
    if (routed_mapped) { // the same mapping, the biases copied
        memcpy(dst->mem + head, src->mem + head, routed * sizeof(float));
        for (int e = 0; e < c->n; e++) {
            dst->experts[e].w1 = src->experts[e].w1;
            dst->experts[e].w2 = src->experts[e].w2;
            dst->experts[e].w3 = src->experts[e].w3;
        }
    } else if (rm) {
        for (int e = 0; e < c->n; e++) expert_decode(&src->experts[e], c, EXPERT_ALL, &dst->experts[e]);
    } else {
        memcpy(dst->mem + head, src->mem + head, routed * sizeof(float));
    }
    for (int j = 0; j < c->s; j++)
        if (sm) expert_decode(&src->shared[j], &sc, EXPERT_ALL, &dst->shared[j]);
        else moe_expert_copy(&dst->shared[j], &src->shared[j], &sc);
    memcpy(dst->mem + dst->nparams - tail, src->mem + src->nparams - tail, tail * sizeof(float));
    dst->path = src->path ? ms_strdup(src->path) : NULL;
    dst->layer = src->layer ? ms_strdup(src->layer) : NULL;
    moe_meta_copy(dst, src);
}

void moe_clone_floats(moe_model *dst, const moe_model *src) {
    if (!moe_is_mapped(src) && !moe_shared_mapped(src)) {
        moe_clone(dst, src);
        return;
    }
    moe_alloc(dst, &src->cfg);
    copy_decoding(dst, src, 0);
}

void moe_clone_shared_floats(moe_model *dst, const moe_model *src) {
    if (!moe_shared_mapped(src)) {
        moe_clone(dst, src);
        return;
    }
    alloc_layer(dst, &src->cfg, moe_is_mapped(src) ? ROUTED_BIASES : ROUTED_ALL, 0);
    copy_decoding(dst, src, moe_is_mapped(src));
}

void moe_shared_decode(moe_model *m, float *buf) {
    moe_config sc = moe_shared_config(&m->cfg);
    size_t es = moe_expert_size(&sc);
    for (int j = 0; j < m->cfg.s; j++) {
        moe_expert *x = &m->shared[j], f;
        moe_expert_carve(&f, &sc, buf + (size_t)j * es);
        expert_decode(x, &sc, EXPERT_ALL, &f);
        x->fc1_w = f.fc1_w, x->fc2_w = f.fc2_w, x->fc3_w = f.fc3_w;
    }
}

void moe_shared_to_floats(moe_model *m) {
    if (!moe_shared_mapped(m)) return;
    moe_model f;
    moe_clone_shared_floats(&f, m);
    moe_free(m);
    *m = f;
}
