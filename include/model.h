/* model.h - one MoE layer (plus the optional frozen head) and an evaluation set.
 *
 * Dimension legend (SPEC §2):
 *   n  experts            d  model width         h  expert hidden width
 *   k  top-k              s  shared experts      C  head outputs (classes)
 *   N  evaluation samples
 *
 * All parameters live in one float allocation (model->mem) carved into the
 * pointers below, llm.c style. Absent biases are stored as zeros, so every
 * pointer except fc3_* (silu_glu only) and the head's is always valid; the
 * has_* flags remember what the file held. */
#ifndef MS_MODEL_H
#define MS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ms_error.h"

typedef enum { ROUTER_DENSE = 0, ROUTER_TOPK = 1 } moe_router;
typedef enum { ACT_RELU = 0, ACT_GELU = 1, ACT_SILU_GLU = 2 } moe_act;

typedef struct {
    int n, d, h, k, s, C; /* C = 0: no head (layer-only mode) */
    moe_router router;     /* k is meaningful only for ROUTER_TOPK */
    moe_act act;
    int residual;          /* z = x + D(x) when 1 */
    int has_gate_bias, has_expert_bias, has_norm, has_head;
} moe_config;

typedef struct {
    float *fc1_w; // (h, d)
    float *fc1_b; // (h)
    float *fc2_w; // (d, h)
    float *fc2_b; // (d)
    float *fc3_w; // (h, d), silu_glu only, else NULL
    float *fc3_b; // (h),    silu_glu only, else NULL
} moe_expert;

typedef struct {
    char *key, *value;
} moe_meta;

typedef struct {
    moe_config cfg;
    char *path;        /* the file it came from (for messages), may be NULL */
    char *layer;       /* prefix, e.g. "moe" */
    float *gate_w;     // (n, d)
    float *gate_b;     // (n)
    moe_expert *experts; // n of them
    moe_expert *shared;  // s of them
    float *norm_w;     // (d) LayerNorm gamma, NULL without LayerNorm
    float *norm_b;     // (d)
    float *head_w;     // (C, d), NULL without head
    float *head_b;     // (C)
    float *mem;        /* the one allocation */
    size_t nparams;    /* floats in mem */
    moe_meta *meta;    /* __metadata__ other than the moescope.* keys we parse */
    int nmeta;
} moe_model;

/* floats one expert takes: fc1 (h,d)+(h), fc2 (d,h)+(d), [fc3 (h,d)+(h)] */
size_t moe_expert_size(const moe_config *c);
/* Point e's tensors into p (moe_expert_size(c) floats, in the order above);
 * fc3_* are NULL unless silu_glu. Returns the pointer just past the expert. */
float *moe_expert_carve(moe_expert *e, const moe_config *c, float *p);
/* Copy expert src into dst (both carved for the same config). */
void moe_expert_copy(moe_expert *dst, const moe_expert *src, const moe_config *c);

/* Allocate a zeroed model for cfg (pointers carved, meta empty). */
void moe_alloc(moe_model *m, const moe_config *cfg);
void moe_free(moe_model *m);
/* Deep copy (parameters, metadata, path, layer). */
void moe_clone(moe_model *dst, const moe_model *src);

/* Load layer `layer` (NULL means "moe") from a safetensors file. Validates
 * shapes against each other and values for finiteness (SPEC §6). */
int moe_load(moe_model *m, const char *path, const char *layer, ms_err *err);
/* Write as F32 safetensors, atomically, with the moescope.* metadata and the
 * rest of m->meta. */
int moe_save(const moe_model *m, const char *path, ms_err *err);
/* moe_save, plus every other tensor of src_path (the file m's layer came from):
 * other MoE layers, embeddings, ... copied through unchanged (dtype and bytes).
 * Tensors of the layer's own namespace ("<L>.gate.*", "<L>.experts.*",
 * "<L>.shared.*") and the head come from m; those of the namespace moescope does
 * not write are dropped and counted in *ndropped (may be NULL). src_path NULL:
 * moe_save. Atomic; the metadata is m's (the source's, as loaded). */
int moe_save_with(const moe_model *m, const char *src_path, const char *path, int *ndropped,
                  ms_err *err);

/* Do A and B have the same architecture (n, d, h, s, router, k, act, residual,
 * head presence and size)? -1 with a message naming both files otherwise. */
int moe_check_compatible(const moe_model *a, const moe_model *b, ms_err *err);
/* Are the heads (norm + linear) of A and B identical? 1 yes, 0 no. */
int moe_heads_equal(const moe_model *a, const moe_model *b);

/* out = (1-t) a + t b on every parameter (out must be allocated like a). */
void moe_interpolate(moe_model *out, const moe_model *a, const moe_model *b, double t);

const char *moe_router_name(moe_router r);
const char *moe_act_name(moe_act a);
const char *moe_meta_get(const moe_model *m, const char *key); /* NULL if absent */
void moe_meta_set(moe_model *m, const char *key, const char *value);

/* Every layer prefix L in the file (a tensor "L.gate.weight" exists), in file
 * order; the caller frees each string and the array. */
int moe_list_layers(const char *path, char ***layers, int *nlayers, ms_err *err);

/* ---- evaluation set ---- */
typedef struct {
    char *path;
    int N, d, C;       /* C: number of classes (labels) or target width */
    float *inputs;     // (N, d)
    int32_t *labels;   // (N), classification; NULL for regression
    float *targets;    // (N, C), regression; NULL for classification
} evalset;

int evalset_load(evalset *e, const char *path, ms_err *err);
void evalset_free(evalset *e);
/* Check e fits m (width d, label range / target width vs the head). */
int evalset_check(const evalset *e, const moe_model *m, ms_err *err);

#endif
