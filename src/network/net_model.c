/* net_model.c - a GPT-2-layout network in and out of memory (net_model.h). */
#include "network/net_model.h"
#include "network/net_unused.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/progress.h"
#include "io/family.h"

/* one backbone tensor: its name, shape and where it goes (dst NULL: it follows
 * the tensor before it in the allocation, as a ViT's key and value weights
 * follow the query's) */
typedef struct {
    char name[96];
    int ndim;
    int64_t shape[4];
    float **dst;
    net_mat *mat; /* a decoder's matrix: the tensor is its next part */
} net_tensor;

typedef struct {
    net_tensor *t;
    int n, cap;
} tensor_list;

static int64_t tl_numel(const net_tensor *t) {
    int64_t s = 1;
    for (int i = 0; i < t->ndim; i++) s *= t->shape[i];
    return s;
}

/* name of shape {a, b, c, e}: its first ndim */
static void tl_add(tensor_list *l, const char *name, int ndim, int64_t a, int64_t b, int64_t c, int64_t e,
                   float **dst) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->t = ms_realloc(l->t, (size_t)l->cap * sizeof(net_tensor));
    }
    net_tensor *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = a, t->shape[1] = b, t->shape[2] = c, t->shape[3] = e;
    t->dst = dst;
    t->mat = NULL;
}

/* which part of its matrix tensor i is */
static int tl_part(const tensor_list *l, int i) {
    int k = 0;
    for (int j = 0; j < i; j++) k += l->t[j].mat == l->t[i].mat;
    return k;
}

/* the tensor added back-th from the end (1: the last) is a part of matrix w */
static void tl_mat(tensor_list *l, int back, net_mat *w) { l->t[l->n - back].mat = w; }

static size_t tl_floats(const tensor_list *l) {
    size_t s = 0;
    for (int i = 0; i < l->n; i++) s += (size_t)tl_numel(&l->t[i]);
    return s;
}

/* a block's tensors: suffix, shape, destination */
typedef struct {
    const char *sfx;
    int ndim;
    int64_t a, b;
    float **dst;
} block_tensor;

static void add_block(tensor_list *l, const char *fmt, int L, const block_tensor *bt, int nt) {
    char nm[96], pre[64];
    snprintf(pre, sizeof pre, fmt, L);
    for (int i = 0; i < nt; i++) {
        snprintf(nm, sizeof nm, "%s%s", pre, bt[i].sfx);
        tl_add(l, nm, bt[i].ndim, bt[i].a, bt[i].b, 0, 0, bt[i].dst);
    }
}

/* Every backbone tensor of a GPT-2 m (shapes from m->cfg), in file order of its
 * state_dict; has_lm_b: lm_head.bias is in the file. */
static void gpt2_tensors(net_model *m, int has_lm_b, tensor_list *l) {
    const net_config *c = &m->cfg;
    int64_t d = c->d, V = c->vocab, ff = c->ff;
    tl_add(l, "transformer.wte.weight", 2, V, d, 0, 0, &m->wte);
    tl_add(l, "transformer.wpe.weight", 2, c->npos, d, 0, 0, &m->wpe);
    for (int L = 0; L < c->nlayer; L++) {
        net_block *b = &m->blocks[L];
        block_tensor bt[] = {
            {"ln_1.weight", 1, d, 0, &b->ln1_w},          {"ln_1.bias", 1, d, 0, &b->ln1_b},
            {"attn.c_attn.weight", 2, d, 3 * d, &b->attn_w}, {"attn.c_attn.bias", 1, 3 * d, 0, &b->attn_b},
            {"attn.c_proj.weight", 2, d, d, &b->proj_w},  {"attn.c_proj.bias", 1, d, 0, &b->proj_b},
            {"ln_2.weight", 1, d, 0, &b->ln2_w},          {"ln_2.bias", 1, d, 0, &b->ln2_b},
            {"mlp.c_fc.weight", 2, d, ff, &b->fc_w},   {"mlp.c_fc.bias", 1, ff, 0, &b->fc_b},
            {"mlp.c_proj.weight", 2, ff, d, &b->fcp_w}, {"mlp.c_proj.bias", 1, d, 0, &b->fcp_b}};
        add_block(l, "transformer.h.%d.", L, bt, c->moe_of[L] >= 0 ? 8 : 12); // an MoE block's MLP is its moe_model
    }
    tl_add(l, "transformer.ln_f.weight", 1, d, 0, 0, 0, &m->lnf_w);
    tl_add(l, "transformer.ln_f.bias", 1, d, 0, 0, 0, &m->lnf_b);
    if (!c->tied) tl_add(l, "lm_head.weight", 2, V, d, 0, 0, &m->lm_w);
    if (has_lm_b) tl_add(l, "lm_head.bias", 1, V, 0, 0, 0, &m->lm_b);
}

/* Every backbone tensor of a ViT m: q, k and v side by side (one (3d, d) weight
 * and one (3d) bias), so the attention's input projection is one product as
 * GPT-2's c_attn. */
static void vit_tensors(net_model *m, tensor_list *l) {
    const net_config *c = &m->cfg;
    int64_t d = c->d, V = c->vocab, ff = c->ff, p = c->patch;
    // the projection first: a wrong patch_size is named by its weight
    tl_add(l, "vit.embeddings.patch_embeddings.projection.weight", 4, d, c->chans, p, p, &m->patch_w);
    tl_add(l, "vit.embeddings.patch_embeddings.projection.bias", 1, d, 0, 0, 0, &m->patch_b);
    tl_add(l, "vit.embeddings.cls_token", 3, 1, 1, d, 0, &m->cls);
    tl_add(l, "vit.embeddings.position_embeddings", 3, 1, c->npos, d, 0, &m->wpe);
    for (int L = 0; L < c->nlayer; L++) {
        net_block *b = &m->blocks[L];
        block_tensor qkv[] = {
            {"attention.attention.query.weight", 2, d, d, &b->attn_w},
            {"attention.attention.key.weight", 2, d, d, NULL},
            {"attention.attention.value.weight", 2, d, d, NULL},
            {"attention.attention.query.bias", 1, d, 0, &b->attn_b},
            {"attention.attention.key.bias", 1, d, 0, NULL},
            {"attention.attention.value.bias", 1, d, 0, NULL}};
        block_tensor bt[] = {
            {"layernorm_before.weight", 1, d, 0, &b->ln1_w},  {"layernorm_before.bias", 1, d, 0, &b->ln1_b},
            {"attention.output.dense.weight", 2, d, d, &b->proj_w},
            {"attention.output.dense.bias", 1, d, 0, &b->proj_b},
            {"layernorm_after.weight", 1, d, 0, &b->ln2_w},   {"layernorm_after.bias", 1, d, 0, &b->ln2_b},
            {"intermediate.dense.weight", 2, ff, d, &b->fc_w}, {"intermediate.dense.bias", 1, ff, 0, &b->fc_b},
            {"output.dense.weight", 2, d, ff, &b->fcp_w},     {"output.dense.bias", 1, d, 0, &b->fcp_b}};
        add_block(l, "vit.encoder.layer.%d.", L, qkv, c->qkv_bias ? 6 : 3);
        add_block(l, "vit.encoder.layer.%d.", L, bt, c->moe_of[L] >= 0 ? 6 : 10);
    }
    tl_add(l, "vit.layernorm.weight", 1, d, 0, 0, 0, &m->lnf_w);
    tl_add(l, "vit.layernorm.bias", 1, d, 0, 0, 0, &m->lnf_b);
    tl_add(l, "classifier.weight", 2, V, d, 0, 0, &m->lm_w);
    tl_add(l, "classifier.bias", 1, V, 0, 0, 0, &m->lm_b);
}

/* a DeepSeek block's attention: multi-head latent */
static void mla_block_tensors(const net_config *c, net_block *b, int L, tensor_list *l) {
    const char *fmt = net_arch_of(c->arch)->block;
    int64_t d = c->d, nh = c->nhead, hd = c->hd, ql = c->q_lora, kvl = c->kv_lora;
    block_tensor q_lora[] = {{"self_attn.q_a_proj.weight", 2, ql, d, &b->qa_w},
                             {"self_attn.q_a_layernorm.weight", 1, ql, 0, &b->qa_n},
                             {"self_attn.q_b_proj.weight", 2, nh * hd, ql, &b->attn_w}};
    block_tensor q_plain[] = {{"self_attn.q_proj.weight", 2, nh * hd, d, &b->attn_w}};
    block_tensor kv[] = {{"self_attn.kv_a_proj_with_mqa.weight", 2, kvl + c->rot, d, &b->kva_w},
                         {"self_attn.kv_a_layernorm.weight", 1, kvl, 0, &b->kva_n},
                         {"self_attn.kv_b_proj.weight", 2, nh * (c->nope + c->vd), kvl, &b->kvb_w},
                         {"self_attn.o_proj.weight", 2, d, nh * c->vd, &b->proj_w}};
    if (ql) {
        add_block(l, fmt, L, q_lora, 3);
        tl_mat(l, 3, &b->wqa);
        tl_mat(l, 1, &b->wqkv);
    } else {
        add_block(l, fmt, L, q_plain, 1);
        tl_mat(l, 1, &b->wqkv);
    }
    add_block(l, fmt, L, kv, 4);
    tl_mat(l, 4, &b->wkva);
    tl_mat(l, 2, &b->wkvb);
    tl_mat(l, 1, &b->wo);
}

/* a JetMoE block's attention: k|v, and the attention experts' router, queries and
 * output projections (each a matrix of the experts' rows one under another) */
static void moa_block_tensors(const net_config *c, net_block *b, int L, tensor_list *l) {
    const char *fmt = net_arch_of(c->arch)->block;
    int64_t d = c->d, na = c->moa_n, hq = (int64_t)c->nkv * c->hd;
    block_tensor t[] = {{"self_attention.kv_proj.weight", 2, 2 * hq, d, &b->attn_w},
                        {"self_attention.experts.router.layer.weight", 2, na, d, &b->mr_w}};
    block_tensor bias[] = {{"self_attention.experts.bias", 1, d, 0, &b->proj_b}};
    char pre[64], nm[128];
    snprintf(pre, sizeof pre, fmt, L);
    add_block(l, fmt, L, t, 2);
    snprintf(nm, sizeof nm, "%sself_attention.experts.input_linear.weight", pre);
    tl_add(l, nm, 3, na, hq, d, 0, &b->mq_w);
    snprintf(nm, sizeof nm, "%sself_attention.experts.output_linear.weight", pre);
    tl_add(l, nm, 3, na, d, hq, 0, &b->proj_w);
    add_block(l, fmt, L, bias, 1);
    tl_mat(l, 5, &b->wqkv);
    tl_mat(l, 4, &b->wmr);
    tl_mat(l, 3, &b->wmq);
    tl_mat(l, 2, &b->wo);
}

/* Every backbone tensor of a decoder m: q, k and v side by side (one Linear
 * weight of (nh + 2 nkv) hd rows), a dense MLP's gate and up likewise. */
static void decoder_tensors(net_model *m, tensor_list *l) {
    const net_config *c = &m->cfg;
    const net_arch_desc *A = net_arch_of(c->arch);
    int64_t d = c->d, V = c->vocab, ff = c->ff, q = (int64_t)c->nhead * c->hd, kv = (int64_t)c->nkv * c->hd;
    int head = A->qk_norm == NET_QKN_HEAD;
    tl_add(l, "model.embed_tokens.weight", 2, V, d, 0, 0, &m->wte);
    tl_mat(l, 1, &m->wemb);
    for (int L = 0; L < c->nlayer; L++) {
        net_block *b = &m->blocks[L];
        block_tensor qkv[] = {
            {"self_attn.q_proj.weight", 2, q, d, &b->attn_w}, {"self_attn.k_proj.weight", 2, kv, d, NULL},
            {"self_attn.v_proj.weight", 2, kv, d, NULL},      {"self_attn.q_proj.bias", 1, q, 0, &b->attn_b},
            {"self_attn.k_proj.bias", 1, kv, 0, NULL},         {"self_attn.v_proj.bias", 1, kv, 0, NULL}};
        block_tensor bt[] = {
            {"input_layernorm.weight", 1, d, 0, &b->ln1_w},
            {"post_attention_layernorm.weight", 1, d, 0, &b->ln2_w},
            {"self_attn.o_proj.weight", 2, d, q, &b->proj_w},
            {"self_attn.o_proj.bias", 1, d, 0, &b->proj_b}};
        block_tensor qk[] = {{"self_attn.q_norm.weight", 1, head ? c->hd : q, 0, &b->qn_w},
                             {"self_attn.k_norm.weight", 1, head ? c->hd : kv, 0, &b->kn_w}};
        block_tensor lnb[] = {{"input_layernorm.bias", 1, d, 0, &b->ln1_b},
                              {"post_attention_layernorm.bias", 1, d, 0, &b->ln2_b}};
        block_tensor mlp[] = {{"mlp.gate_proj.weight", 2, ff, d, &b->fc_w},
                              {"mlp.up_proj.weight", 2, ff, d, NULL},
                              {"mlp.down_proj.weight", 2, d, ff, &b->fcp_w}};
        const char *fmt = A->block;
        if (A->attn == NET_ATTN_MLA) {
            mla_block_tensors(c, b, L, l);
            add_block(l, fmt, L, bt, 2); // the norms
        } else if (A->attn == NET_ATTN_MOA) {
            moa_block_tensors(c, b, L, l);
            add_block(l, fmt, L, bt, 2); // the norms
        } else {
            int nq = c->qkv_bias ? 6 : 3, no = c->o_bias ? 4 : 3;
            add_block(l, fmt, L, qkv, nq);
            for (int k = 0; k < 3; k++) tl_mat(l, nq - k, &b->wqkv); // q, k, v
            add_block(l, fmt, L, bt, no);
            tl_mat(l, no - 2, &b->wo);
        }
        if (A->norm == NET_NORM_LAYER) add_block(l, fmt, L, lnb, 2); // PhiMoE's LayerNorms
        if (A->qk_norm != NET_QKN_NONE) add_block(l, fmt, L, qk, 2);
        block_tensor sk[] = {{"self_attn.sinks", 1, c->nhead, 0, &b->sinks}};
        if (A->sinks) add_block(l, fmt, L, sk, 1);
        if (c->moe_of[L] < 0) {
            add_block(l, fmt, L, mlp, 3);
            tl_mat(l, 3, &b->wfc); // gate, up
            tl_mat(l, 2, &b->wfc);
            tl_mat(l, 1, &b->wfcp);
        }
    }
    tl_add(l, "model.norm.weight", 1, d, 0, 0, 0, &m->lnf_w);
    if (A->norm == NET_NORM_LAYER) tl_add(l, "model.norm.bias", 1, d, 0, 0, 0, &m->lnf_b);
    if (!c->tied) {
        tl_add(l, "lm_head.weight", 2, V, d, 0, 0, &m->lm_w);
        tl_mat(l, 1, &m->whead);
    }
    if (c->lm_bias) tl_add(l, "lm_head.bias", 1, V, 0, 0, 0, &m->lm_b);
}

/* the backbone's tensors of m's architecture (has_lm_b: GPT-2's lm_head.bias is there) */
static void arch_tensors(net_model *m, int has_lm_b, tensor_list *l) {
    switch (net_arch_of(m->cfg.arch)->embed) {
    case NET_EMBED_LEARNED: gpt2_tensors(m, has_lm_b, l); break;
    case NET_EMBED_PATCHES: vit_tensors(m, l); break;
    case NET_EMBED_TOKENS: decoder_tensors(m, l); break;
    }
}

/* "a, b, c" of the first ndim of shape */
static void shape_str(int ndim, const int64_t *shape, char *out, size_t cap) {
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < ndim && k + 24 < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
}

/* nt's tensor in c with its shape checked, nothing read: every shape is checked
 * before the backbone is allocated, so a config.json that declares more than the
 * files hold (n_embd 65536, vocab_size 2^24: 4 TiB) is refused, not allocated */
static int find_tensor(ckpt *c, const net_tensor *nt, const st_file **fp, const st_tensor **tp,
                       ms_err *err) {
    if (ckpt_find(c, nt->name) < 0)
        return ms_fail(err, "%s: tensor '%s' is missing", c->arg, nt->name);
    if (ckpt_tensor(c, nt->name, fp, tp, err)) return -1;
    const st_file *f = *fp;
    const st_tensor *t = *tp;
    int ok = t->ndim == nt->ndim;
    for (int i = 0; ok && i < nt->ndim; i++) ok = t->shape[i] == nt->shape[i];
    if (!ok) {
        char have[96], want[96];
        shape_str(t->ndim, t->shape, have, sizeof have);
        shape_str(nt->ndim, nt->shape, want, sizeof want);
        return ms_fail(err, "%s: tensor '%s' has shape [%s], expected [%s] (from config.json)%s",
                       f->path, nt->name, have, want,
                       t->ndim == nt->ndim ? family_conv1d_hint(nt->name, t->ndim, t->shape, nt->shape) : "");
    }
    return 0;
}

/* A tensor's values in pieces of READ_PIECE floats, the calling thread's cancel
 * (progress.h) polled between them: GPT-2's wte alone is 150 MiB, the explorer's q
 * should not wait for it. */
#define READ_PIECE ((int64_t)1 << 20)
static int read_tensor(ckpt *c, const net_tensor *nt, float *dst, ms_err *err) {
    const st_file *f;
    const st_tensor *t;
    if (find_tensor(c, nt, &f, &t, err)) return -1;
    for (int64_t i = 0; i < t->numel || i == 0; i += READ_PIECE) {
        if (i && progress_cancelled()) return ms_fail(err, "cancelled");
        int64_t k = t->numel - i < READ_PIECE ? t->numel - i : READ_PIECE;
        if (st_read_f32_range(f, t, i, k, dst + i, err)) return -1;
    }
    return 0;
}

/* A ViT's classes when config.json does not say them: classifier.weight's rows. */
static int vit_classes_from_head(ckpt *c, net_config *nc, ms_err *err) {
    const st_file *f;
    const st_tensor *t;
    if (net_arch_of(nc->arch)->target != NET_TARGET_CLASS || nc->vocab) return 0;
    if (ckpt_find(c, "classifier.weight") < 0)
        return ms_fail(err, "%s: tensor 'classifier.weight' is missing (the ViT's classification head)", c->arg);
    if (ckpt_tensor(c, "classifier.weight", &f, &t, err)) return -1;
    if (t->ndim != 2 || t->shape[0] < 1 || t->shape[0] > (1 << 24))
        return ms_fail(err, "%s: tensor 'classifier.weight' should be [classes, %d]", f->path, nc->d);
    nc->vocab = (int)t->shape[0];
    return 0;
}

/* does c hold any tensor under prefix pre ("model.layers.3.") */
static int has_prefix(const ckpt *c, const char *pre) {
    size_t k = strlen(pre);
    for (int i = 0; i < c->ntensors; i++)
        if (!strncmp(c->names[i], pre, k)) return 1;
    return 0;
}

/* every block's MLP is what config.json says: an MoE block holds its gate, a
 * dense one its c_fc (and not the other's); a block config.json counts but the
 * file lacks whole is said as that */
static int check_blocks(const ckpt *c, const net_config *nc, ms_err *err) {
    const net_arch_desc *A = net_arch_of(nc->arch);
    char g[96], f[96], pre[64];
    for (int L = 0; L < nc->nlayer; L++) {
        snprintf(pre, sizeof pre, A->block, L);
        snprintf(g, sizeof g, "%s%s.%s", pre, A->moe, A->gate);
        snprintf(f, sizeof f, "%s%s", pre, A->dense);
        int moe = nc->moe_of[L] >= 0, has_g = ckpt_find(c, g) >= 0, has_f = ckpt_find(c, f) >= 0;
        if (!has_g && !has_f && !has_prefix(c, pre))
            return ms_fail(err, "%s: config.json's %s = %d, but the checkpoint has no block %d (no tensor "
                                "'%s...')",
                           c->arg, A->k_layers, nc->nlayer, L, pre);
        if (moe && !has_g)
            return ms_fail(err, "%s: block %d is an MoE block by %s, but the checkpoint has no tensor "
                                "'%s'%s%s%s",
                           c->arg, L, net_arch_sparse_rule(A), g, has_f ? " (block is a dense MLP: " : "",
                           has_f ? A->dense : "", has_f ? " is there)" : "");
        if (!moe && !has_f)
            return ms_fail(err, "%s: block %d is dense by %s, so it needs a dense MLP, but tensor '%s' is "
                                "missing%s",
                           c->arg, L, net_arch_sparse_rule(A), f,
                           has_g ? " (it holds an MoE layer: make it an MoE block there)" : "");
    }
    return 0;
}

/* how load_moe_blocks holds the routed weights: in floats, mapped (else floats),
 * mapped (else a shell, read by net_block_fill) */
enum { NET_BLOCKS_FLOATS, NET_BLOCKS_MAPPED, NET_BLOCKS_LATER };

/* the MoE blocks through the gpt2 or vit family, each checked against config.json */
static int load_moe_blocks(net_model *m, ckpt *c, const family_overrides *o, int mapped, ms_err *err) {
    const net_arch_desc *A = net_arch_of(m->cfg.arch);
    family_layer *ls = NULL;
    int nl = 0;
    // none found: the first block's message below says which block lacks its experts
    if (m->cfg.nmoe && family_find_layers(c, A->family, &ls, &nl, NULL)) ls = NULL, nl = 0;
    m->moe = ms_calloc((size_t)(m->cfg.nmoe ? m->cfg.nmoe : 1), sizeof(moe_model));
    int rc = 0;
    for (int i = 0; i < m->cfg.nmoe && !rc; i++) {
        char pre[64], blk[48];
        snprintf(blk, sizeof blk, A->block, m->cfg.moe_layers[i]);
        snprintf(pre, sizeof pre, "%s%s", blk, A->moe);
        int which = -1, L = m->cfg.moe_layers[i];
        for (int j = 0; j < nl; j++) // the table's prefix, or the family's own at block L
            if (!strcmp(ls[j].prefix, pre) || (which < 0 && ls[j].block == L)) which = j;
        if (which < 0 && A->embed == NET_EMBED_TOKENS) {
            rc = ms_fail(err, "%s: block %d should hold an MoE layer of the %s family at '%s' (tensor '%s.%s'), "
                              "but its MoE tensors are incomplete",
                         c->arg, L, family_name(A->family), pre, pre, A->gate);
            break;
        }
        if (which < 0) {
            rc = ms_fail(err, "%s: block %d is in moe.layers but its MoE tensors are incomplete (no "
                              "'%s.experts.0.%s.weight')",
                         c->arg, L, pre, m->cfg.arch == NET_VIT ? "fc1" : "c_fc");
            break;
        }
        rc = mapped ? family_load_mapped_shared(&m->moe[i], c, &ls[which], o, err) : 1; // 1: not mappable
        if (rc == 1 && mapped == NET_BLOCKS_LATER) rc = family_load_shell(&m->moe[i], c, &ls[which], o, err);
        if (rc == 1) rc = family_load(&m->moe[i], c, &ls[which], o, err);
        if (!rc && m->moe[i].cfg.d != m->cfg.d)
            rc = ms_fail(err, "%s: tensor '%s.gate.weight' has width %d, but %s = %d", c->arg, pre,
                         m->moe[i].cfg.d, A->k_d, m->cfg.d);
    }
    family_layers_free(ls, nl);
    return rc;
}

int net_load(net_model *m, const char *path, const family_overrides *o, ms_err *err) {
    ckpt c;
    memset(m, 0, sizeof *m);
    if (ckpt_open(&c, path, err)) return -1;
    int rc = net_load_ckpt(m, &c, path, o, err);
    ckpt_close(&c);
    return rc;
}

/* t's dtype as a matrix read where the file keeps it, -1 if it cannot be (another
 * dtype, or not aligned to its element) */
static int mat_dtype(const st_file *f, const st_tensor *t) {
    int dt = t->dtype == ST_F32 ? WP_F32 : t->dtype == ST_F16 ? WP_F16 : t->dtype == ST_BF16 ? WP_BF16 : -1;
    return dt >= 0 && (uintptr_t)(f->data + t->begin) % wp_dtype_size((wp_dtype)dt) == 0 ? dt : -1;
}

/* the next part of W: rows of a matrix cols wide at p */
static void mat_add(net_mat *W, wref p, int rows) {
    W->part[W->n] = p;
    W->rows[W->n++] = rows;
}

/* every pointer and matrix the list l sets, cleared */
static void tl_clear(tensor_list *l) {
    for (int i = 0; i < l->n; i++) {
        if (l->t[i].dst) *l->t[i].dst = NULL;
        if (l->t[i].mat) memset(l->t[i].mat, 0, sizeof(net_mat));
    }
}

/* The backbone's values from c into one allocation carved into m's pointers,
 * every shape checked again (the file may have changed since its header was
 * read); a mapped decoder's matrices (m->mapped_bb) left where c keeps them, in
 * their dtype, checked finite; the cancel of the calling thread (progress.h) is
 * polled between tensors. On failure m's backbone pointers are NULL again. */
static int read_backbone(net_model *m, ckpt *c, ms_err *err) {
    tensor_list l = {0};
    arch_tensors(m, ckpt_find(c, "lm_head.bias") >= 0, &l);
    int rc = 0;
    char *mapped = ms_calloc((size_t)(l.n ? l.n : 1), 1); // the list's tensors left in c's pages
    size_t nmem = 0;
    for (int i = 0; i < l.n && !rc; i++) {
        const st_file *f;
        const st_tensor *t;
        rc = find_tensor(c, &l.t[i], &f, &t, err);
        if (!rc) mapped[i] = m->mapped_bb && l.t[i].mat && mat_dtype(f, t) >= 0;
        if (!rc && !mapped[i]) nmem += (size_t)tl_numel(&l.t[i]);
    }
    if (!rc && tl_floats(&l) != m->nparams) rc = ms_fail(err, "%s: its tensors changed while it was read", c->arg);
    float *mem = rc ? NULL : ms_malloc((nmem ? nmem : 1) * sizeof(float)), *p = mem;
    double mib = (double)m->nparams * 4 / 1048576.0, done = 0;
    char phase[96]; // a large network's backbone is gigabytes: its own phase on the line
    const char *slash = strrchr(m->path, '/');
    snprintf(phase, sizeof phase, "load %.60s backbone", slash && slash[1] ? slash + 1 : m->path);
    if (!rc) progress_begin(phase, mib, "MiB");
    if (!rc) tl_clear(&l);
    for (int i = 0; i < l.n && !rc; i++) {
        net_tensor *nt = &l.t[i];
        // a matrix's rows: every dimension but its last (JetMoE's experts one under another)
        int64_t cols = nt->shape[nt->ndim - 1];
        int rows = (int)(tl_numel(nt) / (cols ? cols : 1));
        if (progress_cancelled()) rc = ms_fail(err, "cancelled");
        else if (mapped[i]) { // a matrix read a panel at a time inside the products
            const st_file *f;
            const st_tensor *t;
            rc = find_tensor(c, nt, &f, &t, err) || st_check_finite(f, t, err) ? -1 : 0;
            if (!rc) {
                st_mark_read(f, t);
                mat_add(nt->mat, (wref){.p = f->data + t->begin, .dt = (wp_dtype)mat_dtype(f, t),
                                        .ld = (size_t)cols}, rows);
            }
        } else {
            if (nt->dst) *nt->dst = p;
            rc = read_tensor(c, nt, p, err);
            if (nt->mat) mat_add(nt->mat, (wref){.p = p, .dt = WP_F32, .ld = (size_t)cols}, rows);
            p += tl_numel(nt);
        }
        done += (double)tl_numel(nt) * sizeof(float) / 1048576.0;
        progress_add((double)tl_numel(nt) * sizeof(float) / 1048576.0);
        progress_inner(NET_BACKBONE_MIB, done, mib); // a listener's (the explorer's) count
    }
    if (mem) progress_end();
    if (rc) { // the pointers the list set: none stays pointing into the freed values
        tl_clear(&l);
        free(mem);
        mem = NULL;
        nmem = 0;
    }
    m->mem = mem;
    m->nmem = nmem;
    if (m->cfg.tied && m->wte) m->lm_w = m->wte;
    if (m->cfg.tied) m->whead = m->wemb;
    free(mapped);
    free(l.t);
    return rc;
}

/* Everything of the network at c: the MoE blocks' experts left mapped (mapped,
 * where they can be), the backbone's values read or not (values 0: later). */
static int load_ckpt(net_model *m, ckpt *c, const char *path, const family_overrides *o, int mapped, int values,
                     ms_err *err) {
    memset(m, 0, sizeof *m);
    int rc = net_config_read(c, &m->cfg, err);
    // a decoder's matrices as the file keeps them (GPT-2's Conv1D and a ViT stay in floats)
    m->mapped_bb = !rc && mapped && net_arch_of(m->cfg.arch)->embed == NET_EMBED_TOKENS;
    if (!rc) rc = check_blocks(c, &m->cfg, err);
    if (!rc) rc = vit_classes_from_head(c, &m->cfg, err);
    if (rc) return -1;
    m->path = ms_strdup(path);
    m->blocks = ms_calloc((size_t)m->cfg.nlayer, sizeof(net_block));
    tensor_list l = {0}; // every shape checked before anything is allocated or read
    arch_tensors(m, ckpt_find(c, "lm_head.bias") >= 0, &l);
    for (int i = 0; i < l.n && !rc; i++) {
        const st_file *f;
        const st_tensor *t;
        rc = find_tensor(c, &l.t[i], &f, &t, err);
        if (!rc && !values) st_mark_read(f, t); // read later (net_load_backbone): not unused
    }
    m->nparams = tl_floats(&l);
    free(l.t);
    family_overrides none = FAMILY_OVERRIDES_NONE;
    m->ov = o ? *o : none;
    if (!rc && values) rc = read_backbone(m, c, err);
    if (!rc) rc = load_moe_blocks(m, c, o, mapped, err);
    if (!rc) rc = net_check_unused(c, &m->cfg, err);
    if (rc) net_free(m);
    return rc;
}

int net_load_ckpt(net_model *m, ckpt *c, const char *path, const family_overrides *o, ms_err *err) {
    return load_ckpt(m, c, path, o, 0, 1, err);
}

int net_load_ckpt_later(net_model *m, ckpt *c, const char *path, const family_overrides *o, ms_err *err) {
    return load_ckpt(m, c, path, o, 0, 0, err);
}

/* net_load_mapped, the backbone's values read (values) or left for later (0; -1: the
 * blocks that cannot be mapped left too, NET_BLOCKS_LATER) */
static int load_mapped(net_model *m, const char *path, const family_overrides *o, int values, ms_err *err) {
    ckpt *c = ms_calloc(1, sizeof *c);
    memset(m, 0, sizeof *m);
    int blocks = values < 0 ? NET_BLOCKS_LATER : NET_BLOCKS_MAPPED;
    if (ckpt_open(c, path, err) || load_ckpt(m, c, path, o, blocks, values > 0, err)) {
        if (c->arg) ckpt_close(c);
        free(c);
        return -1;
    }
    m->map = c; // the MoE blocks' weights are its pages
    return 0;
}

int net_load_mapped(net_model *m, const char *path, const family_overrides *o, ms_err *err) {
    return load_mapped(m, path, o, 1, err);
}

int net_load_mapped_later(net_model *m, const char *path, const family_overrides *o, ms_err *err) {
    return load_mapped(m, path, o, 0, err);
}

int net_load_lazy(net_model *m, const char *path, const family_overrides *o, ms_err *err) {
    return load_mapped(m, path, o, -1, err);
}

int net_block_pending(const net_model *m, int i) {
    const moe_model *b = &m->moe[i];
    return b->cfg.n > 0 && b->experts && !b->experts[0].fc1_w && !b->experts[0].w1.p;
}

/* src's storage (its floats, experts, views) into dst, dst's own config, path, layer
 * and metadata kept; src's strings freed, src emptied */
static void block_take(moe_model *dst, moe_model *src) {
    free(dst->mem);
    free(dst->experts);
    free(dst->shared);
    dst->gate_w = src->gate_w, dst->gate_b = src->gate_b, dst->corr_b = src->corr_b;
    dst->experts = src->experts, dst->shared = src->shared, dst->shared_gate_w = src->shared_gate_w;
    dst->out_b = src->out_b, dst->norm_w = src->norm_w, dst->norm_b = src->norm_b;
    dst->head_w = src->head_w, dst->head_b = src->head_b;
    dst->mem = src->mem, dst->nparams = src->nparams;
    src->mem = NULL, src->experts = src->shared = NULL;
    moe_free(src);
}

/* the shell block i's layer read from m's files as net_load reads it, into f */
static int block_read(const net_model *m, int i, moe_model *f, ms_err *err) {
    const moe_model *b = &m->moe[i];
    ckpt c;
    if (ckpt_open(&c, m->path, err)) return -1;
    family_layer *ls = NULL;
    int nl = 0, which = -1, rc;
    rc = family_find_layers(&c, net_arch_of(m->cfg.arch)->family, &ls, &nl, err);
    for (int j = 0; !rc && j < nl; j++)
        if (!strcmp(ls[j].prefix, b->layer)) which = j;
    if (!rc && which < 0) rc = ms_fail(err, "%s: its MoE layer '%s' is gone", m->path, b->layer);
    if (!rc) rc = family_load(f, &c, &ls[which], &m->ov, err);
    // the file may have changed since its header was read: the shape the screen shows
    if (!rc && (f->cfg.n != b->cfg.n || f->cfg.d != b->cfg.d || f->cfg.h != b->cfg.h || f->cfg.s != b->cfg.s ||
                f->cfg.act != b->cfg.act)) {
        moe_free(f);
        rc = ms_fail(err, "%s: MoE layer '%s' changed while it was read", m->path, b->layer);
    }
    family_layers_free(ls, nl);
    ckpt_close(&c);
    return rc;
}

int net_block_view(const net_model *m, int i, moe_model *view, ms_err *err) {
    const moe_model *b = &m->moe[i];
    if (!m->map || !net_block_pending(m, i)) return 1;
    family_layer *ls = NULL;
    int nl = 0, which = -1;
    if (family_find_layers(m->map, net_arch_of(m->cfg.arch)->family, &ls, &nl, err)) return -1;
    for (int j = 0; j < nl; j++)
        if (!strcmp(ls[j].prefix, b->layer)) which = j;
    int rc = which < 0 ? 1 : family_load_view(view, m->map, &ls[which], &m->ov, err);
    if (!rc && (view->cfg.n != b->cfg.n || view->cfg.d != b->cfg.d || view->cfg.h != b->cfg.h ||
                view->cfg.s != b->cfg.s || view->cfg.act != b->cfg.act)) { // not the block the screen shows
        moe_free(view);
        rc = 1;
    }
    family_layers_free(ls, nl);
    return rc;
}

int net_block_fill(net_model *m, int i, ms_err *err) {
    moe_model *b = &m->moe[i], f;
    if (net_block_pending(m, i)) {
        if (block_read(m, i, &f, err)) return -1;
    } else if (moe_is_mapped(b)) {
        moe_clone_floats(&f, b);
    } else {
        return 0;
    }
    block_take(b, &f);
    return 0;
}

int net_has_backbone(const net_model *m) { return m->mem || m->shared; }

void net_block_floats(net_model *m, int i) {
    if (!moe_is_mapped(&m->moe[i])) return;
    moe_model f;
    moe_clone_floats(&f, &m->moe[i]);
    moe_free(&m->moe[i]);
    m->moe[i] = f;
}

void net_share_backbone(net_model *b, const net_model *a) {
    net_model va = *a; // the list notes where a's pointers are: they are read, never written
    tensor_list la = {0}, lb = {0};
    arch_tensors(&va, a->lm_b != NULL, &la);
    arch_tensors(b, a->lm_b != NULL, &lb);
    for (int i = 0; i < la.n && i < lb.n; i++) {
        if (lb.t[i].dst) *lb.t[i].dst = *la.t[i].dst;
        if (lb.t[i].mat) *lb.t[i].mat = *la.t[i].mat;
    }
    if (b->cfg.tied && b->wte) b->lm_w = b->wte;
    b->whead = a->whead;
    b->shared = 1;
    free(la.t);
    free(lb.t);
}

int net_load_backbone(net_model *m, ms_err *err) {
    if (net_has_backbone(m)) return 0;
    if (m->mapped_bb && m->map) return read_backbone(m, m->map, err); // its pages are the matrices
    ckpt c;
    if (ckpt_open(&c, m->path, err)) return -1;
    int rc = read_backbone(m, &c, err);
    ckpt_close(&c);
    return rc;
}

int net_tensor_at(const net_model *m, const float *p, char *name, size_t cap, size_t *at) {
    if (!m->mem || p < m->mem || p >= m->mem + m->nmem) return -1;
    net_model v = *m; // the list only notes where each tensor would go: nothing is written
    tensor_list l = {0};
    arch_tensors(&v, m->lm_b != NULL, &l);
    size_t off = (size_t)(p - m->mem), start = 0;
    int rc = -1;
    for (int i = 0; i < l.n && rc; i++) { // the list is the allocation's order
        size_t k = (size_t)tl_numel(&l.t[i]);
        if (l.t[i].mat && !net_in_mem(m, l.t[i].mat->part[tl_part(&l, i)].p)) continue; // mapped: no floats
        if (off < start + k) {
            snprintf(name, cap, "%s", l.t[i].name);
            *at = off - start;
            rc = 0;
        }
        start += k;
    }
    free(l.t);
    return rc;
}

void net_free(net_model *m) {
    if (!m) return;
    for (int i = 0; m->moe && i < m->cfg.nmoe; i++) moe_free(&m->moe[i]);
    free(m->moe);
    free(m->blocks);
    free(m->mem);
    free(m->path);
    if (m->map) ckpt_close(m->map);
    free(m->map);
    memset(m, 0, sizeof *m);
}

size_t net_backbone_params(const net_model *m) { return m->nparams; }

size_t net_moe_params(const moe_model *b) {
    moe_layout l;
    moe_layout_of(&b->cfg, &l);
    return l.total - l.norm - l.head; // a block has no head of its own
}

/* the pointer of dst's allocation at the offset p has in src's */
static float *rebase(const net_model *src, const net_model *dst, const float *p) {
    return p ? dst->mem + (p - src->mem) : NULL;
}

/* W's parts in src's floats moved to dst's (a mapped part stays where it is) */
static void mat_rebase(const net_model *src, const net_model *dst, net_mat *W) {
    for (int i = 0; i < W->n; i++)
        if (net_in_mem(src, W->part[i].p)) W->part[i].p = rebase(src, dst, W->part[i].p);
}

void net_clone(net_model *dst, const net_model *src) {
    *dst = *src;
    dst->path = src->path ? ms_strdup(src->path) : NULL;
    dst->mem = ms_malloc((src->nmem ? src->nmem : 1) * sizeof(float));
    memcpy(dst->mem, src->mem, src->nmem * sizeof(float));
    dst->wte = rebase(src, dst, src->wte);
    dst->wpe = rebase(src, dst, src->wpe);
    dst->patch_w = rebase(src, dst, src->patch_w);
    dst->patch_b = rebase(src, dst, src->patch_b);
    dst->cls = rebase(src, dst, src->cls);
    dst->lnf_w = rebase(src, dst, src->lnf_w);
    dst->lnf_b = rebase(src, dst, src->lnf_b);
    dst->lm_w = rebase(src, dst, src->lm_w);
    dst->lm_b = rebase(src, dst, src->lm_b);
    // the blocks as src's (a decoder's matrices too: their mapped parts stay), then
    // every pointer into src's floats moved to dst's
    dst->blocks = ms_malloc((size_t)src->cfg.nlayer * sizeof(net_block));
    memcpy(dst->blocks, src->blocks, (size_t)src->cfg.nlayer * sizeof(net_block));
    for (int L = 0; L < src->cfg.nlayer; L++) {
        const net_block *s = &src->blocks[L];
        net_block *b = &dst->blocks[L];
        float *const *sp[] = {&s->ln1_w, &s->ln1_b, &s->attn_w, &s->attn_b, &s->proj_w, &s->proj_b,
                              &s->ln2_w, &s->ln2_b, &s->fc_w,   &s->fc_b,   &s->fcp_w,  &s->fcp_b,
                              &s->qn_w,  &s->kn_w,   &s->qa_w,   &s->qa_n,   &s->kva_w, &s->kva_n,
                              &s->kvb_w, &s->sinks, &s->mr_w, &s->mq_w};
        float **dp[] = {&b->ln1_w, &b->ln1_b, &b->attn_w, &b->attn_b, &b->proj_w, &b->proj_b,
                        &b->ln2_w, &b->ln2_b, &b->fc_w,   &b->fc_b,   &b->fcp_w,  &b->fcp_b,
                        &b->qn_w,  &b->kn_w,   &b->qa_w,   &b->qa_n,   &b->kva_w, &b->kva_n,
                        &b->kvb_w, &b->sinks, &b->mr_w, &b->mq_w};
        for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) *dp[i] = rebase(src, dst, *sp[i]);
        net_mat *mats[] = {&b->wqkv, &b->wo, &b->wfc, &b->wfcp, &b->wqa, &b->wkva, &b->wkvb, &b->wmr, &b->wmq};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) mat_rebase(src, dst, mats[i]);
    }
    mat_rebase(src, dst, &dst->wemb);
    mat_rebase(src, dst, &dst->whead);
    dst->moe = ms_calloc((size_t)(src->cfg.nmoe ? src->cfg.nmoe : 1), sizeof(moe_model));
    for (int i = 0; i < src->cfg.nmoe; i++) moe_clone(&dst->moe[i], &src->moe[i]);
    dst->map = NULL; // src's mapping, which src owns: the clone must not outlive it
}

/* the floats of the list's tensors that are not a decoder's matrices: where each is
 * (at[i]; NULL for a matrix), a tensor without dst following the one before */
static void tl_floats_at(const tensor_list *l, float **at) {
    for (int i = 0; i < l->n; i++)
        at[i] = l->t[i].mat ? NULL
                : l->t[i].dst ? *l->t[i].dst
                : i > 0 && at[i - 1] ? at[i - 1] + tl_numel(&l->t[i - 1])
                                     : NULL;
}

void net_backbone_interpolate(net_model *out, const net_model *a, const net_model *b, double t) {
    float ta = (float)(1.0 - t), tb = (float)t; // as moe_interpolate rounds
    if (net_arch_of(a->cfg.arch)->embed != NET_EMBED_TOKENS) {
        for (size_t q = 0; q < a->nmem; q++) out->mem[q] = ta * a->mem[q] + tb * b->mem[q];
        return;
    }
    // a decoder: its matrices as mixes of a's and b's parts, formed inside the products;
    // the norms, biases and sinks in floats
    // the lists note where a's and b's values are (their own addresses: b's parts are
    // what the mixes point to): read, never written
    tensor_list lo = {0}, la = {0}, lb = {0};
    arch_tensors(out, a->lm_b != NULL, &lo);
    arch_tensors((net_model *)a, a->lm_b != NULL, &la);
    arch_tensors((net_model *)b, a->lm_b != NULL, &lb);
    float **at = ms_malloc((size_t)(3 * lo.n + 1) * sizeof(float *)), **aa = at + lo.n, **ab = aa + lo.n;
    tl_floats_at(&lo, at);
    tl_floats_at(&la, aa);
    tl_floats_at(&lb, ab);
    for (int i = 0; i < lo.n; i++) {
        if (lo.t[i].mat) {
            int k = tl_part(&lo, i);
            lo.t[i].mat->part[k] = wp_mix(la.t[i].mat->part[k], &lb.t[i].mat->part[k], ta, tb);
            continue;
        }
        for (int64_t q = 0; at[i] && q < tl_numel(&lo.t[i]); q++) at[i][q] = ta * aa[i][q] + tb * ab[i][q];
    }
    if (out->cfg.tied) out->whead = out->wemb;
    free(at);
    free(lo.t);
    free(la.t);
    free(lb.t);
}

int net_in_mem(const net_model *m, const void *p) {
    const float *f = p;
    return m->mem && f >= m->mem && f < m->mem + m->nmem;
}

int net_mat_rows(const net_mat *W) {
    int r = 0;
    for (int i = 0; i < W->n; i++) r += W->rows[i];
    return r;
}

void net_mat_row(const net_mat *W, int r, int K, float *dst) {
    int i = 0;
    for (; i < W->n - 1 && r >= W->rows[i]; i++) r -= W->rows[i];
    wp_rows_f32(W->part[i], (size_t)K, (size_t)r, 1, dst);
}

void net_mat_gemm(const net_mat *W, int M, int K, const float *X, int ldx, float beta, float *Y, int ldy) {
    // a product per part, in floats or mapped alike: the same products of the same values
    for (int i = 0, off = 0; i < W->n; off += W->rows[i++])
        wp_gemm_nt(M, W->rows[i], K, X, ldx, W->part[i], beta, Y + off, ldy);
}

wref net_mat_slice(const net_mat *W, int r0, wref *bstore) {
    wref a = W->part[0];
    const wref *b = a.b;
    a.b = NULL;
    a = wp_offset(a, (size_t)r0 * a.ld);
    if (b) {
        *bstore = wp_offset(*b, (size_t)r0 * b->ld);
        a.b = bstore;
    }
    return a;
}

int net_mat_name(const net_model *m, const net_mat *W, int part, char *name, size_t cap) {
    tensor_list l = {0}; // the list notes m's own addresses: nothing is written
    arch_tensors((net_model *)m, m->lm_b != NULL, &l);
    if (m->cfg.tied && W == &m->whead) W = &m->wemb;
    int rc = -1;
    for (int i = 0; i < l.n && rc; i++)
        if (l.t[i].mat == W && tl_part(&l, i) == part) {
            snprintf(name, cap, "%s", l.t[i].name);
            rc = 0;
        }
    free(l.t);
    return rc;
}

/* L of a name "<block>L..." (block: the layout's "transformer.h.%d." or
 * "vit.encoder.layer.%d."; digits only, at most NET_MAX_LAYERS: no %d that overflows,
 * so "transformer.h.4294967296.mlp" is no block 0), *rest after the digits; -1 if none */
static int block_of(const char *block, const char *name, const char **rest) {
    const char *d = strstr(block, "%d");
    size_t np = (size_t)(d - block);
    if (strncmp(name, block, np)) return -1;
    const char *p = name + np;
    long L = 0;
    int nd = 0;
    for (; *p >= '0' && *p <= '9'; p++, nd++)
        if ((L = L * 10 + (*p - '0')) > NET_MAX_LAYERS) return -1;
    *rest = p;
    return nd ? (int)L : -1;
}

/* Is rest (after a block's number) ".<moe>" - the MoE layer itself, "." after it
 * allowed (tensor: ".<moe>.<name>", a tensor inside it)? */
static int moe_rest(const char *rest, const char *moe, int tensor) {
    size_t k = strlen(moe);
    if (rest[0] != '.' || strncmp(rest + 1, moe, k)) return 0;
    const char *t = rest + 1 + k;
    return tensor ? t[0] == '.' && t[1] : !t[0] || !strcmp(t, ".");
}

int net_pick_block(const net_model *m, const char *arg, int *which, ms_err *err) {
    const net_config *c = &m->cfg;
    const net_arch_desc *A = net_arch_of(c->arch);
    *which = 0;
    if (!c->nmoe) return ms_fail(err, "%s: the network has no MoE block (config.json's moe.layers)", m->path);
    if (!arg) return 0;
    int L = -1;
    const char *rest;
    char *end, pre[64];
    snprintf(pre, sizeof pre, A->block, 0);
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (*arg && !*end && !errno && v >= 0 && v < c->nlayer) L = (int)v;
    else if ((L = block_of(A->block, arg, &rest)) >= 0 && !moe_rest(rest, A->moe, 0))
        L = -1;
    if (L >= 0 && L < c->nlayer && c->moe_of[L] >= 0) {
        *which = c->moe_of[L];
        return 0;
    }
    char list[400] = "";
    size_t k = 0;
    for (int i = 0; i < c->nmoe && k < sizeof list - 16; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%d", i ? ", " : "", c->moe_layers[i]);
    pre[strlen(pre) - 2] = 0; // "transformer.h." of "transformer.h.0."
    return ms_fail(err, "%s: no MoE block '%s'; its MoE blocks are %s (give the block index or "
                        "'%sL.%s')",
                   m->path, arg, list, pre, A->moe);
}

int net_check_compatible(const net_model *a, const net_model *b, ms_err *err) {
    const net_config *x = &a->cfg, *y = &b->cfg;
    const net_arch_desc *A = net_arch_of(x->arch);
    int vit = A->target == NET_TARGET_CLASS;
    if (x->arch != y->arch)
        return ms_fail(err, "%s and %s are different networks: config.json's model_type is \"%s\" vs \"%s\"",
                       a->path, b->path, A->model_type, net_arch_of(y->arch)->model_type);
    const char *what = x->d != y->d           ? A->k_d
                       : x->nlayer != y->nlayer ? A->k_layers
                       : x->ff != y->ff         ? A->k_ff
                       : x->nhead != y->nhead   ? A->k_heads
                       : x->image != y->image   ? "image_size"
                       : x->patch != y->patch   ? "patch_size"
                       : x->chans != y->chans   ? "num_channels"
                       : x->npos != y->npos     ? A->k_pos
                       : x->vocab != y->vocab   ? (vit ? "number of classes" : "vocab_size")
                       : x->eps != y->eps       ? A->k_eps
                       : x->act != y->act       ? A->k_act
                       : x->tied != y->tied     ? "tie_word_embeddings"
                       : x->qkv_bias != y->qkv_bias ? "qkv_bias"
                       : x->nkv != y->nkv           ? "num_key_value_heads"
                       : x->moa_n != y->moa_n       ? "num_local_experts (the attention's experts)"
                       : x->hd != y->hd             ? "head_dim"
                       : x->o_bias != y->o_bias     ? "attention_bias"
                       : x->rot != y->rot           ? "partial_rotary_factor"
                       : x->vd != y->vd || x->q_lora != y->q_lora || x->kv_lora != y->kv_lora ||
                               x->nope != y->nope || x->interleave != y->interleave
                           ? "the latent attention's widths"
                       : x->theta != y->theta || x->rope_af != y->rope_af || x->rope_af_long != y->rope_af_long ||
                               x->rope_orig != y->rope_orig || memcmp(x->inv_freq, y->inv_freq, sizeof x->inv_freq) ||
                               memcmp(x->inv_freq_long, y->inv_freq_long, sizeof x->inv_freq_long)
                           ? "rope_theta / rope_scaling"
                       : x->clip_qkv != y->clip_qkv ? "clip_qkv"
                       : x->window != y->window || memcmp(x->layer_window, y->layer_window, sizeof x->layer_window)
                           ? "sliding_window / layer_types"
                       : x->emb_mult != y->emb_mult || x->res_mult != y->res_mult || x->logit_div != y->logit_div ||
                               x->attn_scale != y->attn_scale
                           ? "embedding_multiplier / residual_multiplier / attention_multiplier / logits_scaling"
                       : x->nmoe != y->nmoe || memcmp(x->moe_layers, y->moe_layers, (size_t)x->nmoe * sizeof(int))
                           ? "moe.layers"
                           : NULL;
    if (what) return ms_fail(err, "%s and %s are different networks: config.json's %s differs", a->path, b->path, what);
    if ((a->lm_b != NULL) != (b->lm_b != NULL))
        return ms_fail(err, "%s and %s are different networks: only one has lm_head.bias", a->path, b->path);
    for (int i = 0; i < x->nmoe; i++)
        if (moe_check_compatible(&a->moe[i], &b->moe[i], err))
            return ms_prefix(err, "MoE block %d", x->moe_layers[i]);
    return 0;
}

/* ---- the frozen backbone: A's and B's tensors outside the MoE blocks ---- */

static int in_moe_block(const net_config *nc, const char *name) {
    const net_arch_desc *A = net_arch_of(nc->arch);
    const char *rest;
    int L = block_of(A->block, name, &rest);
    return L >= 0 && L < nc->nlayer && nc->moe_of[L] >= 0 && moe_rest(rest, A->moe, 1);
}

/* the backbone names of c (sorted by name), count into *n */
static const char **backbone_names(const ckpt *c, const net_config *nc, int *n) {
    const char **out = ms_malloc((size_t)(c->ntensors ? c->ntensors : 1) * sizeof(char *));
    *n = 0;
    for (int k = 0; k < c->ntensors; k++) {
        const char *name = c->names[c->sorted[k]];
        if (!in_moe_block(nc, name)) out[(*n)++] = name;
    }
    return out;
}

typedef struct {
    const unsigned char *a, *b;
    size_t n;
    int same;
} cmp_job;

static int cmp_run(void *ctx, ms_err *err) {
    (void)err;
    cmp_job *j = ctx;
    j->same = !memcmp(j->a, j->b, j->n);
    return 0;
}

/* Do ta's bytes in fa equal tb's in fb? 1 yes, 0 no, -1 a file changed while read
 * (tb's bytes are copied out a chunk at a time under fb's guard and compared with
 * ta's under fa's: a truncated mapping is reported, never a SIGBUS). */
static int same_bytes(const st_file *fa, const st_tensor *ta, const st_file *fb, const st_tensor *tb,
                      ms_err *err) {
    enum { CHUNK = 1 << 20 };
    size_t len = ta->end - ta->begin;
    if (len != tb->end - tb->begin) return 0;
    unsigned char *buf = ms_malloc(len < CHUNK ? (len ? len : 1) : CHUNK);
    char what[260];
    snprintf(what, sizeof what, "tensor '%.200s'", ta->name);
    cmp_job j = {.same = 1};
    for (size_t off = 0; off < len && j.same; off += CHUNK) {
        if (progress_cancelled()) { // a listener's cancel: the explorer compares them on its worker
            free(buf);
            return ms_fail(err, "cancelled");
        }
        j.n = len - off < CHUNK ? len - off : CHUNK;
        j.a = fa->data + ta->begin + off;
        j.b = buf;
        if (st_copy_out(fb, tb, off, j.n, buf, err) || st_guarded(fa, what, cmp_run, &j, err)) {
            free(buf);
            return -1;
        }
        progress_add((double)j.n / 1048576.0);
    }
    free(buf);
    return j.same;
}

/* Do the tensors named name in a and b agree? 1 yes; 0 no (why in what); -1 error. */
static int same_tensor(ckpt *a, ckpt *b, const char *name, char *what, size_t cap, ms_err *err) {
    const st_file *fa, *fb;
    const st_tensor *ta, *tb;
    if (ckpt_tensor(a, name, &fa, &ta, err) || ckpt_tensor(b, name, &fb, &tb, err)) return -1;
    if (ta->dtype != tb->dtype || strcmp(ta->dtype_name, tb->dtype_name)) {
        snprintf(what, cap, "tensor '%s' is %s in A, %s in B", name, ta->dtype_name, tb->dtype_name);
        return 0;
    }
    int ok = ta->ndim == tb->ndim;
    for (int i = 0; ok && i < ta->ndim; i++) ok = ta->shape[i] == tb->shape[i];
    if (!ok) {
        snprintf(what, cap, "tensor '%s' has another shape in B", name);
        return 0;
    }
    struct stat sa, sb; // one file behind both (a shared backbone shard): the same bytes
    if (!stat(fa->path, &sa) && !stat(fb->path, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino &&
        ta->begin == tb->begin)
        return 1;
    int same = same_bytes(fa, ta, fb, tb, err);
    if (same < 0) return -1;
    if (!same) snprintf(what, cap, "tensor '%s' holds other values in B", name);
    return same;
}

int net_backbone_diff(const char *pa, const char *pb, char *what, size_t cap, ms_err *err) {
    ckpt a, b;
    if (ckpt_open(&a, pa, err)) return -1;
    if (ckpt_open(&b, pb, err)) {
        ckpt_close(&a);
        return -1;
    }
    net_config nc;
    int rc = net_config_read(&a, &nc, err);
    int na = 0, nb = 0;
    const char **an = rc ? NULL : backbone_names(&a, &nc, &na);
    const char **bn = rc ? NULL : backbone_names(&b, &nc, &nb);
    // a phase of its own: a GPT-2's backbone is hundreds of MiB to read
    double mib = 0;
    for (int i = 0; i < na; i++) {
        const st_file *f;
        const st_tensor *t;
        if (!ckpt_tensor(&a, an[i], &f, &t, NULL)) mib += (double)(t->end - t->begin) / 1048576.0;
    }
    int begun = !rc;
    if (begun) progress_begin("compare backbones", mib, "MiB");
    for (int i = 0, j = 0; !rc && (i < na || j < nb);) {
        int c = i >= na ? 1 : j >= nb ? -1 : strcmp(an[i], bn[j]);
        if (c) {
            snprintf(what, cap, "tensor '%s' is only in %s", c < 0 ? an[i] : bn[j], c < 0 ? "A" : "B");
            rc = 1;
            break;
        }
        int s = same_tensor(&a, &b, an[i], what, cap, err);
        if (s <= 0) {
            rc = s < 0 ? -1 : 1;
            break;
        }
        i++, j++;
    }
    if (begun) progress_end();
    free(an);
    free(bn);
    ckpt_close(&a);
    ckpt_close(&b);
    return rc;
}
