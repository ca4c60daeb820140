/* net_model.h - a GPT-2- or ViT-layout network whose feed-forward block(s) are
 * MoE layers: the frozen backbone and the MoE blocks.
 *
 * Dimension legend (beside model.h's n, d, h, k, s):
 *   V  the head's outputs: the vocabulary (GPT-2), the classes (ViT)
 *   P  positions (GPT-2); a ViT's patches, P = (image / p)^2, with T = P + 1 tokens
 *   NL blocks           nh attention heads      dh = d / nh, the head width
 *   N  sequences (a ViT's images)   T tokens per sequence   M tokens of a batch (whole sequences)
 *   C  image channels   H, W image height and width   p patch side   K = C p p
 *
 * GPT-2 tensors (Hugging Face's names; Conv1D weights are [in, out]: y = x W + b):
 *   transformer.wte.weight [V,d], transformer.wpe.weight [P,d]
 *   transformer.h.L.ln_1.{weight,bias} [d], attn.c_attn.{weight [d,3d], bias [3d]} (q|k|v),
 *     attn.c_proj.{weight [d,d], bias [d]}, ln_2.{weight,bias} [d]
 *   a dense block: mlp.c_fc.{weight [d,ff], bias [ff]}, mlp.c_proj.{weight [ff,d], bias [d]}
 *     (ff = n_inner, 4d by default)
 *   an MoE block: mlp.gate.*, mlp.experts.E.*, mlp.shared_experts.S.* (the gpt2 family)
 *   transformer.ln_f.{weight,bias} [d]; lm_head.weight [V,d] unless tied, lm_head.bias [V]
 *
 * ViT tensors (Hugging Face's ViTForImageClassification; torch Linear weights are
 * [out, in]: y = x W^T + b):
 *   vit.embeddings.cls_token [1,1,d], vit.embeddings.position_embeddings [1,P+1,d],
 *   vit.embeddings.patch_embeddings.projection.{weight [d,C,p,p], bias [d]}
 *   vit.encoder.layer.L.layernorm_before.{weight,bias} [d],
 *     attention.attention.{query,key,value}.{weight [d,d], bias [d]} (carved side by
 *     side: one [3d,d] weight, q|k|v rows, and one [3d] bias),
 *     attention.output.dense.{weight [d,d], bias [d]}, layernorm_after.{weight,bias} [d]
 *   a dense block: intermediate.dense.{weight [ff,d], bias [ff]}, output.dense.{weight
 *     [d,ff], bias [d]}
 *   an MoE block: moe.gate.*, moe.experts.E.*, moe.shared_experts.S.* (the vit family)
 *   vit.layernorm.{weight,bias} [d]; classifier.{weight [V,d], bias [V]} on the CLS token
 *
 * Decoder tensors (Hugging Face's <Family>ForCausalLM; torch Linear [out, in]):
 *   model.embed_tokens.weight [V,d]
 *   model.layers.L.input_layernorm.weight [d] (RMSNorm),
 *     self_attn.{q_proj [nh hd, d], k_proj [nkv hd, d], v_proj [nkv hd, d]}.weight (carved
 *     side by side: one [(nh + 2 nkv) hd, d] weight, q|k|v rows; Qwen2-MoE's and an
 *     attention_bias' .bias likewise), self_attn.o_proj.weight [d, nh hd] (+ .bias),
 *     Qwen3-MoE's self_attn.{q_norm,k_norm}.weight [hd], OLMoE's [nh hd] and [nkv hd],
 *     post_attention_layernorm.weight [d]
 *   a dense block: mlp.{gate_proj [ff,d], up_proj [ff,d]} (carved as one [2ff, d], gate
 *     rows first), mlp.down_proj [d,ff] .weight
 *   an MoE block: the family's layer at model.layers.L.<block_sparse_moe | mlp>
 *   GPT-OSS's self_attn.sinks [nh]
 *   model.norm.weight [d]; lm_head.weight [V,d] unless tied
 *   JetMoE's attention instead (hq = nkv hd, na its num_local_experts):
 *     self_attention.kv_proj.weight [2 hq, d] (k | v rows),
 *     self_attention.experts.router.layer.weight [na, d], experts.input_linear.weight
 *     [na, hq, d] (each expert's queries), experts.output_linear.weight [na, d, hq],
 *     experts.bias [d]
 *   DeepSeek's attention instead: self_attn.q_proj [nh hd, d] or q_a_proj [q_lora, d],
 *     q_a_layernorm [q_lora], q_b_proj [nh hd, q_lora]; kv_a_proj_with_mqa
 *     [kv_lora + rope, d], kv_a_layernorm [kv_lora], kv_b_proj [nh (nope + vd), kv_lora],
 *     o_proj [d, nh vd] (.weight); hd = nope + rope
 *
 * The block's pointers are the same for all (ln_1 = layernorm_before =
 * input_layernorm, ln_2 = ...; an RMSNorm has no bias: NULL); cfg.arch says
 * which layout the weights have.
 * The backbone lives in one float allocation (mem) carved into the pointers
 * below, llm.c style; the MoE blocks are moe_models, moe[i] being block
 * cfg.moe_layers[i]. */
#ifndef MS_NET_MODEL_H
#define MS_NET_MODEL_H

#include <stddef.h>

#include "core/wpanel.h"
#include "io/family.h"
#include "network/net_config.h"

/* A decoder's weight matrix (rows, cols) as its products read it: the stored
 * tensors one under another (q | k | v, gate | up), each a wref of its rows in
 * the file's pages (its dtype, a mapped network) or in the backbone's floats,
 * or a mix of two networks' (net_backbone_interpolate). */
#define NET_MAT_PARTS 3
typedef struct {
    wref part[NET_MAT_PARTS];
    int rows[NET_MAT_PARTS];
    int n; /* parts; 0: none */
} net_mat;

typedef struct {
    float *ln1_w, *ln1_b; // (d) each
    float *attn_w;        // (d, 3d) GPT-2; (3d, d) ViT; ((nh + 2 nkv) hd, d) a decoder; DeepSeek's
                          // q_proj (nh hd, d) or q_b_proj (nh hd, q_lora)
    float *attn_b;        // (3d), NULL for a ViT without qkv_bias
    float *proj_w;        // (d, d); a decoder's (d, nh hd)
    float *proj_b;        // (d)
    float *ln2_w, *ln2_b; // (d) each
    float *qn_w, *kn_w;   // decoders' q/k norms: (hd) each per head, or (nh hd), (nkv hd); NULL: none
    float *qa_w, *qa_n;   // DeepSeek: q_a_proj (q_lora, d), q_a_layernorm (q_lora); NULL: q_proj
    float *kva_w, *kva_n; // kv_a_proj_with_mqa (kv_lora + rope, d), kv_a_layernorm (kv_lora)
    float *kvb_w;         // kv_b_proj (nh (nope + vd), kv_lora)
    float *sinks;         // (nh) GPT-OSS's sink logits; NULL otherwise
    float *mr_w, *mq_w;   // JetMoE: the attention experts' router (na, d) and queries (na hq, d);
                          // its kv_proj is attn_w (2 hq, d), output_linear proj_w (na d, hq),
                          // experts.bias proj_b
    float *fc_w;          // (d, ff) GPT-2, (ff, d) ViT, (2ff, d) a decoder's gate|up: a dense
                          // block's MLP; NULL for an MoE block
    float *fc_b;          // (ff)
    float *fcp_w;         // (ff, d) GPT-2, (d, ff) ViT
    float *fcp_b;         // (d)
    /* a decoder's matrices as its forward reads them (mapped or in floats):
       q|k|v (DeepSeek: q_proj or q_b_proj; JetMoE: k|v), o (JetMoE: the experts' output
       projections one under another), gate|up, down, q_a, kv_a, kv_b, JetMoE's router and
       experts' queries */
    net_mat wqkv, wo, wfc, wfcp, wqa, wkva, wkvb, wmr, wmq;
} net_block;

typedef struct {
    net_config cfg;
    char *path;          /* the checkpoint argument (messages) */
    float *wte;          // (V, d) GPT-2, a decoder's embed_tokens
    float *wpe;          // (P, d) GPT-2; (T, d) ViT: position_embeddings
    float *patch_w;      // (d, K) ViT: the patch projection, K = C p p as [C, p, p]
    float *patch_b;      // (d) ViT
    float *cls;          // (d) ViT: the CLS token
    net_block *blocks;   // (NL)
    float *lnf_w, *lnf_b; // (d) each: ln_f, vit.layernorm
    float *lm_w;         // (V, d): wte when tied; a ViT's classifier.weight
    float *lm_b;         // (V), NULL without lm_head.bias; a ViT's classifier.bias
    net_mat wemb, whead; /* a decoder's embed_tokens and head (the embedding's when tied) */
    float *mem;          /* the one allocation of the backbone (a mapped decoder's: the
                            norms, biases and sinks, and a matrix that could not be mapped) */
    int shared;          /* the backbone's pointers are another network's values (net_share_backbone):
                            mem NULL, nothing of them to free */
    size_t nparams;      /* the backbone's parameters */
    size_t nmem;         /* floats in mem (nparams unless matrices are mapped) */
    moe_model *moe;      /* (cfg.nmoe) the MoE blocks */
    ckpt *map;           /* net_load_mapped: the open checkpoint whose pages are the MoE
                            blocks' routed weights (NULL: every weight is in floats) */
    family_overrides ov; /* how the MoE blocks were read (net_block_fill reads them again) */
    int mapped_bb;       /* a decoder's matrices are map's pages too (net_mat) */
} net_model;

/* Load a network checkpoint (a folder, its index or a single file with
 * config.json beside it). Every tensor is checked: present, of its shape,
 * finite; a block listed in moe.layers must hold an MoE layer, a block not
 * listed a dense MLP; errors name the file, the tensor and the block. The MoE
 * blocks are read as o (may be NULL) says (family.h: the router overrides). */
int net_load(net_model *m, const char *path, const family_overrides *o, ms_err *err);
/* The same from c, a checkpoint the caller opened (and closes): path names it in
 * messages. */
int net_load_ckpt(net_model *m, ckpt *c, const char *path, const family_overrides *o, ms_err *err);
/* net_load with the MoE blocks' routed expert weights left in the checkpoint's
 * mapping, in their stored dtype (F32, F16, BF16, MXFP4), converted a panel at a time
 * inside the products (core/wpanel.h), and a decoder's backbone matrices (embedding,
 * attention, dense MLPs, head) likewise (net_mat): the resident memory of an
 * evaluation is the file's pages plus the norms' and biases' floats, not a float32
 * copy of the weights.
 * For a network that is only evaluated (its MoE blocks are never changed, copied
 * out or saved). A block whose weights are not stored row by row (GPT-OSS's BF16
 * [in, out] layout) is read into floats as net_load reads it. */
int net_load_mapped(net_model *m, const char *path, const family_overrides *o, ms_err *err);
/* The same without the backbone's values (net_load_backbone, or net_share_backbone
 * with a network whose backbone is equal: one copy of it, never two at once). */
int net_load_mapped_later(net_model *m, const char *path, const family_overrides *o, ms_err *err);
/* net_load_mapped_later without reading any MoE block either: a block whose routed
 * weights cannot stay mapped (GPT-2's Conv1D [in, out] layout) is a shell, its
 * configuration, router and biases read, its routed weights not (net_block_pending):
 * a caller that shows a screen first (the explorer) reads them off its thread
 * (net_block_fill). Nothing read checks the values: net_block_fill's caller does. */
int net_load_lazy(net_model *m, const char *path, const family_overrides *o, ms_err *err);
/* Are MoE block i's routed weights not read yet (a shell of net_load_lazy)? */
int net_block_pending(const net_model *m, int i);
/* MoE block i's routed weights into floats in place: a shell's read from m's file as
 * net_load reads them, a mapped block's decoded; a block in floats is left as it is.
 * Its config, path and layer (what another thread may read meanwhile: the explorer's
 * screen) stay; the rest of the block is replaced. 0, or -1 with err (the block as
 * it was). */
int net_block_fill(net_model *m, int i, ms_err *err);
/* Shell block i's routed weights where m's open checkpoint keeps them, into view
 * (family_load_view: either layout, read by nothing but products that take both,
 * the expert cost's; moe_free it, m's mapping outlives it), its values checked
 * finite, not ranged: 0; 1 when there is no such view (not a shell, a dtype or
 * layout that is not mapped); -1 with err. The block stays a shell. */
int net_block_view(const net_model *m, int i, moe_model *view, ms_err *err);
/* The same without the backbone's values (mem and the backbone's pointers
 * NULL, nparams counted; every shape, the MoE blocks and the unused tensors
 * checked): a caller that shows something first (the explorer) reads them later,
 * off its screen's thread, with net_load_backbone. */
int net_load_ckpt_later(net_model *m, ckpt *c, const char *path, const family_overrides *o, ms_err *err);
/* The backbone's values of a network loaded without them (a no-op when they are
 * in), its checkpoint opened again at m->path and every shape checked again;
 * cancelled between tensors by the calling thread's cancel (progress.h), its
 * progress told to the thread's listener as NET_BACKBONE_MIB. 0, or -1 with err
 * (m as it was). */
int net_load_backbone(net_model *m, ms_err *err);
#define NET_BACKBONE_MIB "backbone MiB"
/* MoE block i (an index into moe_layers) of a mapped network read into floats (its
 * routed weights decoded from the mapping): a block a command changes or copies. */
void net_block_floats(net_model *m, int i);
/* Are m's backbone values in (read, or shared)? */
int net_has_backbone(const net_model *m);
/* b's backbone pointers into a's values (b loaded without them, a with them, both of
 * one config; their backbones equal, net_backbone_diff): one copy of a GPT-2's
 * backbone instead of two. a must outlive b's use of them; b's mem stays NULL. */
void net_share_backbone(net_model *b, const net_model *a);
void net_free(net_model *m);
/* The backbone tensor (its name in the file) holding the float p of m's allocation, and
 * p's element in it; -1 when p is not in the backbone. */
int net_tensor_at(const net_model *m, const float *p, char *name, size_t cap, size_t *at);
/* Rows of W (its parts' together). */
int net_mat_rows(const net_mat *W);
/* Row r of W, its first K values, into dst (K) as float32. */
void net_mat_row(const net_mat *W, int r, int K, float *dst);
/* Y (M, rows of W; rows ldy apart) = X (M, K; rows ldx apart) W^T (+ beta Y): a
 * product per part, whether in floats or mapped (the same calls on the same values). */
void net_mat_gemm(const net_mat *W, int M, int K, const float *X, int ldx, float beta, float *Y, int ldy);
/* Rows r0 .. of part 0 of W as a wref (a mix: both sources moved; *bstore holds the
 * second's and must live as long as the result). */
wref net_mat_slice(const net_mat *W, int r0, wref *bstore);
/* The tensor (its name in the file) holding part `part` of m's matrix W; -1: none. */
int net_mat_name(const net_model *m, const net_mat *W, int part, char *name, size_t cap);
/* Is p in m's backbone floats? */
int net_in_mem(const net_model *m, const void *p);
/* Parameter counts: the backbone's, and every MoE block's (gate, experts, shared). */
size_t net_backbone_params(const net_model *m);
size_t net_moe_params(const moe_model *b);

/* out = (1-t) a + t b on the backbone (out loaded like a, e.g. net_clone): a decoder's
 * matrices as mixes of a's and b's (formed a panel at a time inside the products;
 * a and b must outlive out's use of them), every other value in floats. */
void net_backbone_interpolate(net_model *out, const net_model *a, const net_model *b, double t);
/* Deep copy of the backbone and the MoE blocks. */
void net_clone(net_model *dst, const net_model *src);

/* The MoE block arg names: NULL the first, a block index L (one of moe.layers),
 * or a prefix "transformer.h.L.mlp" / "vit.encoder.layer.L.moe" (a trailing dot
 * allowed); into *which (an index into moe_layers). The error lists the MoE blocks. */
int net_pick_block(const net_model *m, const char *arg, int *which, ms_err *err);
/* Do A and B have the same architecture (config, and each MoE block's n, d, h,
 * router, ...)? -1 with a message naming both otherwise. */
int net_check_compatible(const net_model *a, const net_model *b, ms_err *err);

/* Is every tensor outside the MoE blocks of checkpoint pa equal (name, dtype,
 * shape, bytes) to pb's? 0 when equal; 1 when not, with the first that differs
 * (in name order) and why in what (cap bytes); -1 on an error. */
int net_backbone_diff(const char *pa, const char *pb, char *what, size_t cap, ms_err *err);

#endif
