/* model_io.h - a layer read from and written to checkpoint files: moescope's own
 * safetensors names, or a model family's layout (family.h) through family_io.c.
 * The layer itself (moe_model, its one allocation) is model/model.h's. */
#ifndef MS_MODEL_IO_H
#define MS_MODEL_IO_H

#include "io/family.h"
#include "model/evaluator.h"
#include "model/model.h"

/* Load a layer from a checkpoint argument: a safetensors file, a sharded
 * checkpoint's index or a directory (checkpoint.h). moescope's own names: layer
 * is the prefix (NULL means "moe"); a real model family (family.h): the prefix or
 * the block index, NULL the first MoE layer. o (may be NULL: none) forces the
 * family or overrides router values (family.h). Validates shapes against each
 * other and values for finiteness. */
int moe_load(moe_model *m, const char *path, const char *layer, const family_overrides *o,
             ms_err *err);
/* moe_load for a layer too large to hold twice: a family layout's routed experts
 * are left in the file (m from moe_alloc_shell) and src reads each on demand,
 * bit for bit as moe_load would have; moescope's own single files and MXFP4
 * experts load whole (src->read NULL). Close src with moe_source_close before
 * or after moe_free(m). */
int moe_load_stream(moe_model *m, const char *path, const char *layer, const family_overrides *o,
                    expert_source *src, ms_err *err);
void moe_source_close(expert_source *src);
/* moe_load with a family layout's routed weights left where the checkpoint's mapping
 * keeps them, in their dtype (moe_alloc_mapped; core/wpanel.h): 0 and *map the open
 * checkpoint, closed with moe_map_close after moe_free(m); 1 when the layer is not
 * mapped so (moescope's own single files, a layout transposed in its file): nothing
 * loaded, moe_load it; -1 with err. */
int moe_load_mapped(moe_model *m, const char *path, const char *layer, const family_overrides *o, ckpt **map,
                    ms_err *err);
/* moe_load_mapped with the shared experts' weights mapped too where the file keeps
 * them row by row (moe_alloc_mapped_shared), else in floats */
int moe_load_mapped_shared(moe_model *m, const char *path, const char *layer, const family_overrides *o,
                           ckpt **map, ms_err *err);
void moe_map_close(ckpt *map);
/* Write as F32 safetensors, atomically, with the moescope.* metadata and the
 * rest of m->meta. A real family's layer is written in the format of the
 * checkpoint m->path instead (family_save). */
int moe_save(const moe_model *m, const char *path, ms_err *err);
/* moe_save, plus every other tensor of src_path (the file m's layer came from):
 * other MoE layers, embeddings, ... copied through unchanged (dtype and bytes).
 * Tensors of the layer's own namespace ("<L>.gate.*", "<L>.experts.*",
 * "<L>.shared.*") and the head come from m; those of the namespace moescope does
 * not write are dropped and counted in *ndropped (may be NULL). src_path NULL:
 * moe_save. Atomic; the metadata is m's (the source's, as loaded). */
int moe_save_with(const moe_model *m, const char *src_path, const char *path, int *ndropped,
                  ms_err *err);

/* Every layer prefix L in the file (a tensor "L.gate.weight" exists), in file
 * order; the caller frees each string and the array. */
int moe_list_layers(const char *path, char ***layers, int *nlayers, ms_err *err);
/* Every MoE layer of the checkpoint argument path, in checkpoint order: a
 * family's (family_find_layers; the family forced unless force < 0), or for
 * moescope's own names one per prefix L with a tensor L.gate.weight (family
 * FAM_NATIVE, block -1). Free with family_layers_free. */
int moe_find_layers(const char *path, int force, family_layer **out, int *n, ms_err *err);
/* The most MoE layers taken one by one (--layer all, the routing geometry): a
 * real checkpoint has about a hundred at most (as a network's blocks, 256); a
 * file declaring thousands of tiny ones would take hours (each layer of
 * --layer all rewrites the checkpoint, the geometry compares every pair). */
#define MOE_MAX_LAYERS_EACH 256

/* Finite values so large that the arithmetic would overflow (value_range.h), in
 * m and the inputs of E (may be NULL): -1 with a message naming the file and
 * the tensor with the largest values (a family layer's expert by its own
 * tensor, shard and element). ms_limits_check runs it on every model it is given. */
int moe_range_check(const moe_model *m, const evalset *E, ms_err *err);

#endif
