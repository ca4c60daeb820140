/* checkpoint.h - what a checkpoint argument names: one .safetensors file, a
 * sharded checkpoint's index, or a directory holding either.
 *
 * A sharded checkpoint (as Hugging Face writes it) is a directory with
 *   model.safetensors.index.json   {"metadata": {...}, "weight_map": {tensor: shard}, ...}
 *   model-00001-of-00002.safetensors, ...   the shards, beside the index
 *   config.json                     optional: the model's hyper-parameters
 * ckpt_open reads the index (or the single file's header) and config.json;
 * shards are mapped only when one of their tensors is asked for, so loading
 * one layer of a large model touches only the shards that hold it. */
#ifndef MS_CHECKPOINT_H
#define MS_CHECKPOINT_H

#include <cJSON.h>

#include "core/ms_error.h"
#include "io/safetensors.h"

/* Bounds on what an index may declare (far above any real model's; the shards are
 * numbered by one sort, so even these open in a moment): the index and config.json
 * at most CKPT_MAX_JSON bytes, the weight_map at most CKPT_MAX_INDEX_TENSORS
 * entries naming at most CKPT_MAX_SHARDS distinct shard files. */
#define CKPT_MAX_JSON (64u << 20)
#define CKPT_MAX_INDEX_TENSORS 1000000
#define CKPT_MAX_SHARDS 65536

typedef struct {
    char *arg;          /* the argument as given (for messages) */
    char *dir;          /* the directory of the index / file ("." for a bare name) */
    char *index_path;   /* the index, NULL for a single file */
    char *config_path;  /* config.json beside, NULL if none */
    cJSON *config;      /* parsed config.json, NULL if none */
    int nshards;        /* 1 for a single file */
    char **shard_names; /* file names in dir (a single file: its path as given) */
    char **shard_paths; /* dir/name */
    st_file *shards;    /* mapped lazily: shard_open[i] says which are */
    unsigned char *shard_open;
    int ntensors;
    char **names;       /* every tensor name, in index (or file) order */
    int *shard_of;      /* shard of each tensor */
    int *sorted;        /* tensor numbers sorted by name, for lookups */
} ckpt;

/* Open a checkpoint argument (file, index or directory) and config.json if
 * present. Validates the index: a JSON object with a "weight_map" object of
 * string values naming plain files beside it (no directories, no "..", not
 * absolute). On failure c is left closed. */
int ckpt_open(ckpt *c, const char *arg, ms_err *err);
void ckpt_close(ckpt *c);

/* Is this argument sharded (an index, or a directory holding one)? */
static inline int ckpt_sharded(const ckpt *c) { return c->index_path != NULL; }

/* Tensor number of name, or -1. */
int ckpt_find(const ckpt *c, const char *name);
/* Map the shard holding tensor name and find it there. Errors name the shard
 * and the index: a shard that is missing or invalid, a tensor the index puts
 * in a shard that does not hold it, a name the checkpoint does not have. */
int ckpt_tensor(ckpt *c, const char *name, const st_file **f, const st_tensor **t, ms_err *err);
/* Map shard s (if not yet). */
int ckpt_shard(ckpt *c, int s, const st_file **f, ms_err *err);

/* The shard (mapped) holding the gate of the MoE layer named layer (the first tensor
 * "layer.*gate*"), where a sharded checkpoint's metadata says what the layer is; NULL
 * when there is none or it cannot be read. */
const st_file *ckpt_layer_shard(ckpt *c, const char *layer);

/* The file name of a shard not mapped yet that holds a tensor whose name
 * starts with prefix, or NULL when every such tensor's shard is mapped (what
 * reading that layer would cost beyond the shards already open). */
const char *ckpt_unmapped_under(const ckpt *c, const char *prefix);

/* The whole of path, a regular file of at most cap bytes, NUL-terminated (its
 * length in *len); never blocks on a FIFO or device (opened O_NONBLOCK, its kind
 * checked on the descriptor). NULL with err naming the file and what it is. */
char *ckpt_read_file(const char *path, size_t cap, size_t *len, ms_err *err);
/* Is the checkpoint written from src (align, merge, scramble) to out a directory?
 * A sharded src (an index, or a folder holding one) gives a sharded directory;
 * a src that is one file gives one file at out, unless out is directory-like
 * (ends with '/', is an existing directory, or src is a folder and out does not
 * end in ".safetensors"): then the directory out holding the file under its
 * own name (and config.json). Cheap: reads the index, maps
 * nothing. A src that does not open counts as one file (loading it will say why). */
int ckpt_output_is_dir(const char *src, const char *out);

/* "dir/name", malloc'd. */
char *ckpt_path_join(const char *dir, const char *name);

/* config.json values: a number (1 if found), a string (NULL if absent). */
int ckpt_config_num(const ckpt *c, const char *key, double *out);
const char *ckpt_config_str(const ckpt *c, const char *key);

#endif
