/* family.h - the model families moescope opens: where each keeps its MoE
 * layers, what their tensors are called and how they are laid out, and the
 * router each uses. One table (family.c) maps them all into moe_model and back.
 *
 * Tensor names are those of the Hugging Face checkpoints (what the files hold;
 * weights [out, in] as torch.nn.Linear stores them), for a layer prefix P:
 *   native       P.gate.weight, P.experts.e.fc1/fc2/fc3.weight (+ .bias)
 *   mixtral      model.layers.L.block_sparse_moe: gate.weight [n,d],
 *                experts.e.w1 (gate) [h,d], w3 (up) [h,d], w2 (down) [d,h] .weight
 *   qwen2_moe    model.layers.L.mlp: gate.weight, experts.e.gate_proj/up_proj/down_proj.weight,
 *                shared_expert.*_proj.weight, shared_expert_gate.weight [1,d]
 *   qwen3_moe, olmoe   as qwen2_moe without the shared expert
 *   deepseek_v2  model.layers.L.mlp: as qwen3_moe, shared_experts.*_proj.weight
 *   deepseek_v3  as deepseek_v2, plus gate.e_score_correction_bias [n]
 *   switch       {encoder,decoder}.block.L.layer.J.mlp: router.classifier.weight (+ .bias),
 *                experts.expert_e.wi.weight [h,d], wo.weight [d,h]
 *   granitemoe   model.layers.L.block_sparse_moe: router.layer.weight [n,d],
 *                input_linear.weight [n,2h,d] (gate rows first), output_linear.weight [n,d,h]
 *   jetmoe       model.layers.L.mlp: as granitemoe, plus bias [d] added to the output
 *   gpt_oss      model.layers.L.mlp: router.weight [n,d], router.bias [n],
 *                experts.gate_up_proj [n,d,2h] (x W; gate = even columns, up = odd),
 *                gate_up_proj_bias [n,2h], down_proj [n,h,d], down_proj_bias [n,d];
 *                or MXFP4: experts.gate_up_proj_blocks/_scales (rows = the 2h outputs,
 *                interleaved the same way), down_proj_blocks/_scales (rows = the d outputs)
 *   gpt2         transformer.h.L.mlp (a GPT-2 block whose MLP became an MoE): gate.weight
 *                [n,d] (+ gate.bias [n]), experts.e.c_fc.weight [d,h] (Conv1D: [in, out],
 *                so W1 is its transpose) + c_fc.bias [h], experts.e.c_proj.weight [h,d]
 *                + c_proj.bias [d]; shared_experts.s.* alike (s of them, each of width hs);
 *                router, top-k, activation from config.json's "moe" object
 *   vit          vit.encoder.layer.L.moe (a ViT block whose MLP became an MoE): gate.weight
 *                [n,d] (+ gate.bias [n]), experts.e.fc1.weight [h,d] + fc1.bias [h],
 *                experts.e.fc2.weight [d,h] + fc2.bias [d] (torch Linear, [out, in]);
 *                shared_experts.s.* alike; router, top-k, activation as gpt2's (the
 *                expert activation defaulting to hidden_act); told from a native layer,
 *                whose names are the same, by config.json's model_type "vit"
 * A family's shared expert is one MLP of its own width hs (DeepSeek's n_shared_experts
 * of width h are stored, and held here, as one of width n_shared * h). */
#ifndef MS_FAMILY_H
#define MS_FAMILY_H

#include "io/checkpoint.h"
#include "model/model.h"
#include "model/value_range.h"

typedef enum {
    FAM_NATIVE,
    FAM_MIXTRAL,
    FAM_QWEN2_MOE,
    FAM_QWEN3_MOE,
    FAM_OLMOE,
    FAM_DEEPSEEK_V2,
    FAM_DEEPSEEK_V3,
    FAM_SWITCH,
    FAM_GRANITEMOE,
    FAM_JETMOE,
    FAM_GPT_OSS,
    FAM_GPT2,
    FAM_VIT,
    FAM_PHIMOE, /* Mixtral's tensor names, routed by sparsemixer */
    FAM_COUNT
} family_id;

const char *family_name(int fam);
/* FAM_* for a name ("mixtral"), or -1. */
int family_from_name(const char *name);
/* "native, mixtral, ..." for messages and --help. */
const char *family_names_list(void);

/* One MoE layer found in a checkpoint. */
typedef struct {
    int family;
    char *prefix;  /* without the trailing dot: "model.layers.3.block_sparse_moe" */
    int block;     /* the block index L in the prefix, -1 if none */
} family_layer;

/* Every MoE layer of c (family forced unless force < 0), in checkpoint order.
 * No layer: an error naming the MoE-looking prefixes found. */
int family_find_layers(const ckpt *c, int force, family_layer **out, int *nout, ms_err *err);
void family_layers_free(family_layer *l, int n);
/* The block index L of a layer prefix ("model.layers.3.mlp": 3; after "layers.",
 * "block.", "blocks." or "h."), -1 if none. */
int family_block_index(const char *prefix);
/* Pick one: arg NULL = the first; a number = the block index; else the prefix
 * (with or without a trailing dot). */
int family_pick(const ckpt *c, const family_layer *l, int n, const char *arg, int *which,
                ms_err *err);

/* How a checkpoint is to be read beyond what it says: its family forced and
 * router values overridden (the command line's --family, --top-k, ...;
 * negative / 0 = not given). The caller fills one (FAMILY_OVERRIDES_NONE, then
 * its own options) and passes it to every load (moe_load, family_load, ...);
 * NULL there means none: the family recognised, the router from config.json or
 * the family's defaults. */
typedef struct {
    int family;          /* -1: recognise */
    int k;               /* --top-k */
    int norm_topk_prob;  /* --norm-topk-prob 0|1, -1 not given */
    double scaling;      /* --routed-scaling, 0 not given */
    int n_group, topk_group;
} family_overrides;

/* The hint for a 2-D weight whose shape is the transpose of the one expected,
 * when its name is a GPT-2 Conv1D's (c_fc, c_proj, c_attn); "" otherwise. */
const char *family_conv1d_hint(const char *name, int ndim, const int64_t *have, const int64_t *want);

/* Nothing overridden. */
#define FAMILY_OVERRIDES_NONE {.family = -1, .norm_topk_prob = -1}

/* Load layer L of c into m: m->layer = L's prefix, m->cfg.family its family, the
 * router from o (may be NULL) / config.json / defaults with cfg.origin saying which. */
int family_load(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err);
/* family_load with the routed experts' weights left where c maps them, in their
 * dtype, MXFP4's blocks and scales too (moe_alloc_mapped: c must stay open while m
 * is used): an evaluation's layer, never changed. 1, nothing loaded, when a
 * weight's layout is not kept row by row (GPT-OSS's BF16 [in, out]): family_load then. */
int family_load_mapped(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err);
/* family_load_mapped with the shared experts' weights mapped too (moe_alloc_mapped_shared)
 * when the file keeps them row by row (else in floats, as family_load_mapped): a
 * network's MoE block. */
int family_load_mapped_shared(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o,
                              ms_err *err);
/* family_load_mapped with a Conv1D expert's [in, out] F32 weights mapped too (wref.tr):
 * a view for products that read either layout (the expert cost's Grams), nothing
 * else; 1 as family_load_mapped otherwise. */
int family_load_view(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err);
/* family_load without the routed experts' weights (moe_alloc_shell, their biases
 * not read either): what a later family_load of L fills. 1, nothing loaded, for
 * MXFP4 experts (family_load then). */
int family_load_shell(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o, ms_err *err);
/* L's configuration (dimensions from the tensor headers, router as family_load
 * would set it) without reading any data; a native layer gives only its family. */
int family_describe(ckpt *c, const family_layer *L, const family_overrides *o, moe_config *cfg,
                    ms_err *err);
/* Write m in the format of the checkpoint src it came from: same names, dtypes,
 * layout; one file for a single-file source, else a directory of shards (those
 * holding the layer rewritten, the others hard-linked or symlinked), with the
 * index and config.json copied. Notes (requantisation error) go to *note
 * (caller frees, may be NULL). */
int family_save(const moe_model *m, const char *src, const char *out, char **note, ms_err *err);

/* Where a value of a family layer's expert lives in its files: expert e's (the
 * shared expert's when shared) native part sfx ("fc1.weight", "fc2.bias", ...),
 * element at of it, as "<shard>: tensor '<name>'" into out and the tensor's own
 * element number into *where (of an MXFP4 pair, the '_blocks' tensor and the
 * element of its decoded values); -1 when m is not a family layer (moescope's own
 * names are the file's). Reopens m->path: for error messages. */
int family_value_name(const moe_model *m, int shared, int e, const char *sfx, size_t at, char *out,
                      size_t cap, long long *where);
/* The same for any float p of m's allocation (its router, experts, shared expert,
 * biases): "<shard>: tensor '<name>'" and p's element of it; -1 when p is none of the
 * file's (a bias moescope keeps as zeros) or m is not a family layer. */
int family_tensor_at(const moe_model *m, const float *p, char *out, size_t cap, long long *where);
/* range_fail for f in the terms of m's files: a family layer's expert tensor by
 * its own name, shard and element (family_value_name), else as moescope names
 * it. -1. */
int family_range_fail(const moe_model *m, const range_finding *f, ms_err *err);

/* A layer too large to hold: everything but the routed experts is in the model
 * (moe_alloc_shell), and expert e is decoded on demand, exactly as family_load
 * decodes it. On success the stream owns c (family_stream_close closes it).
 * Returns 1, with nothing loaded, for MXFP4 experts (decoded whole: family_load). */
typedef struct family_stream family_stream;
int family_load_stream(moe_model *m, ckpt *c, const family_layer *L, const family_overrides *o,
                       family_stream **s, ms_err *err);
/* Expert e's floats into dst (moe_expert_carve'd by the caller): the parts named
 * by parts (EXPERT_W1 ...; a tensor that packs two parts is read whole). */
int family_stream_read(family_stream *s, int e, unsigned parts, moe_expert *dst, ms_err *err);
void family_stream_close(family_stream *s);

/* family_save for a model whose routed experts are given one slot at a time:
 * slot(ctx, e) returns slot e's floats (valid until the next call; NULL after
 * setting err), asked for in the order the tensors are written. */
typedef struct {
    const moe_expert *(*slot)(void *ctx, int e, ms_err *err);
    void *ctx;
} family_experts;
int family_save_with(const moe_model *m, const family_experts *ex, const char *src, const char *out,
                     char **note, ms_err *err);
/* family_save_with for experts moved by a permutation (align, scramble): slot i
 * holds the source's routed expert order[i] (the shared experts: shared_order; NULL
 * for either: unmoved). Each slot's tensors are written in the dtype of the source
 * tensors its values came from, so an F32 expert moved into a slot where the file
 * holds BF16 stays F32 and the output is exact. Anything rounded (a merge's BF16
 * averages) is said in *note. */
int family_save_moved(const moe_model *m, const family_experts *ex, const int *order,
                      const int *shared_order, const char *src, const char *out, char **note,
                      ms_err *err);

#endif
