/* safetensors.h - read (mmap, validated) and write (F32, atomic) safetensors files.
 *
 * Format: 8-byte little-endian header length, a JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the raw little-endian data.
 * st_open validates the whole header (offsets inside the data, no overlap,
 * byte counts matching shapes, known dtypes, bounded sizes) before anything
 * is read; every message names the file and, where it applies, the tensor. */
#ifndef MS_SAFETENSORS_H
#define MS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/ms_error.h"

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (100u << 20)  /* 100 MiB of JSON header is already absurd */
#define ST_MAX_TENSORS 100000
#define ST_MAX_METADATA 100000  /* __metadata__ entries, bounded like tensors */

typedef enum { ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_OTHER } st_dtype;

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    int64_t numel;
    size_t begin, end; /* byte offsets into the data section */
    char dtype_name[16]; /* the dtype string as in the file ("U8" for ST_OTHER) */
} st_tensor;

typedef struct {
    char *path;
    const uint8_t *map;   /* whole file, mmap'd read-only */
    size_t size;
    const uint8_t *data;  /* start of the data section */
    size_t data_size;
    st_tensor *tensors;
    int ntensors;
    char **meta_keys, **meta_vals; /* __metadata__, in file order */
    int nmeta;
    /* lookup indexes, sorted by name / key (st_find and st_meta are O(log n):
     * a header of 99,000 expert tensors must not make a lookup per expert linear) */
    int *by_name;  /* ntensors indices into tensors */
    int *by_key;   /* nmeta indices into meta_keys */
    unsigned char *read_marks; /* ntensors: 1 once a reader took the tensor's values */
    int map_slot;  /* its entry in the table of live mappings (safetensors.c), + 1; 0: none */
} st_file;

/* Open and validate. On failure f is left closed (nothing to free). The JSON
 * header must not contain a NUL byte, raw or escaped as \u0000 (C strings would
 * cut a name or key there). */
int st_open(st_file *f, const char *path, ms_err *err);
void st_close(st_file *f);

const st_tensor *st_find(const st_file *f, const char *name);
const char *st_meta(const st_file *f, const char *key); /* NULL if absent */
const char *st_dtype_name(st_dtype d);
/* Has a reader (st_read_*, st_copy_out) taken t's values since st_open? What a
 * model ignores is found by it (net_check_unused). */
int st_was_read(const st_file *f, const st_tensor *t);
/* Count t as read: a reader takes its values later, from a file opened again
 * (a network loaded without its backbone's values, net_load_ckpt_later). */
void st_mark_read(const st_file *f, const st_tensor *t);

/* Read any float dtype as float32 into out (t->numel floats). Fails, naming
 * the file, tensor and element index, if a value is NaN or infinite. */
int st_read_f32(const st_file *f, const st_tensor *t, float *out, ms_err *err);
/* Elements [first, first + count) of t (row-major) as float32 into out. */
int st_read_f32_range(const st_file *f, const st_tensor *t, int64_t first, int64_t count,
                      float *out, ms_err *err);
/* st_read_f32's checks (a float dtype, every value finite; the same messages) on t
 * read where it is mapped, a chunk at a time: a tensor used in place (core/wpanel.h). */
int st_check_finite(const st_file *f, const st_tensor *t, ms_err *err);
/* Reading a mapping whose file another program truncates or rewrites meanwhile:
 * the pages past its new end are gone and touching one raises SIGBUS. Every
 * reader here (and st_open, and the writer's copy of a mapped tensor) runs under
 * a guard that turns that into -1 with err naming the file, what (e.g. "tensor
 * 'w'") and the file's size then and now. st_guarded runs fn(ctx, err) under it:
 * fn must only read the mapping and compute into memory it was given (no locks,
 * nothing allocated that a jump out of it would leak). */
typedef int (*st_guarded_fn)(void *ctx, ms_err *err);
int st_guarded(const st_file *f, const char *what, st_guarded_fn fn, void *ctx, ms_err *err);
/* Bytes [off, off + n) of t's data into dst, under the guard. */
int st_copy_out(const st_file *f, const st_tensor *t, size_t off, size_t n, void *dst, ms_err *err);

/* Drop the mapped pages of data bytes [begin, end) from the process's memory
 * (they are read again from the file if touched): a layer read tensor by
 * tensor then never holds the file's bytes and its float copy at once. */
void st_release(const st_file *f, size_t begin, size_t end);
/* Same, but read as float64 (for cost matrices). */
int st_read_f64(const st_file *f, const st_tensor *t, double *out, ms_err *err);
/* Read an I32 or I64 tensor into int64 (labels). */
int st_read_i64(const st_file *f, const st_tensor *t, int64_t *out, ms_err *err);

/* Look up name, check its shape equals want[0..ndim), read it as float32.
 * Missing tensor or other shape: an error naming both. */
int st_read_f32_shape(const st_file *f, const char *name, int ndim, const int64_t *want,
                      float *out, ms_err *err);

/* Exact conversions used by the readers (exposed for tests): IEEE half, bfloat16. */
float st_half_to_float(uint16_t h);
float st_bf16_to_float(uint16_t h);

/* ---- writer ---- */
typedef struct st_writer st_writer;

st_writer *st_writer_new(void);
void st_writer_free(st_writer *w);
/* The data pointers are borrowed: they must stay valid until st_writer_write. */
void st_writer_add_f32(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const float *data);
void st_writer_add_f64(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const double *data);
void st_writer_add_i64(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const int64_t *data);
void st_writer_add_i32(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const int32_t *data);
/* Any dtype, bytes as they are (e.g. a tensor copied from another file: pass
 * t->dtype_name and f->data + t->begin, t->end - t->begin). dtype_name must be
 * a safetensors dtype and nbytes match the shape; both checked at write time.
 * The bytes are borrowed like the data above. */
void st_writer_add_raw(st_writer *w, const char *name, const char *dtype_name, int ndim,
                       const int64_t *shape, const void *bytes, size_t nbytes);
/* Tensor t of the mapped file f copied through as it is; its pages are
 * released (st_release) once written, so copying a large shard does not keep
 * it in memory. f must stay open until st_writer_write. */
void st_writer_add_mapped(st_writer *w, const st_file *f, const st_tensor *t);
/* A tensor whose nbytes bytes gen(ctx, buf, err) writes into buf when the file
 * is written (0, or -1 with err set, which abandons the file): an encoded layer
 * never has to be held whole. ctx is borrowed like the data above. */
typedef int (*st_gen_fn)(void *ctx, void *buf, ms_err *err);
void st_writer_add_gen(st_writer *w, const char *name, const char *dtype_name, int ndim,
                       const int64_t *shape, size_t nbytes, st_gen_fn gen, void *ctx);
/* An F32 tensor of shape[0] rows made panel_rows rows at a time when the file is
 * written: gen(ctx, row0, nrows, buf, err) fills rows [row0, row0 + nrows) into buf
 * (0, or -1 with err set, which abandons the file). Only one panel is ever held (a
 * network's logits [N, T, V] are gigabytes). */
typedef int (*st_panel_fn)(void *ctx, int64_t row0, int64_t nrows, float *buf, ms_err *err);
void st_writer_add_panels(st_writer *w, const char *name, int ndim, const int64_t *shape, size_t panel_rows,
                          st_panel_fn gen, void *ctx);
void st_writer_meta(st_writer *w, const char *key, const char *value); /* copies; last wins */
/* Tensors are written in the order added; the header is deterministic so the
 * same content gives byte-identical files. Atomic (see atomic_file.h). */
int st_writer_write(st_writer *w, const char *path, ms_err *err);

#endif
