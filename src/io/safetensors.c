/* safetensors.c - validated mmap reader and deterministic atomic writer.
 *
 * Everything in the header is checked in st_open before a single data byte is
 * touched: after st_open succeeds, every tensor's [begin, end) lies inside the
 * data section and holds exactly numel * elemsize bytes, so the readers below
 * never need bounds checks of their own. Data may sit at any alignment, so it
 * is always read through memcpy. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "io/atomic_file.h"
#include "core/progress.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

/* ---------------------------------------------------------------- dtypes */

static const struct {
    const char *name;
    st_dtype dtype;
    size_t size;
} dtype_table[] = {
    {"F32", ST_F32, 4},       {"F16", ST_F16, 2},       {"BF16", ST_BF16, 2},
    {"F64", ST_F64, 8},       {"I64", ST_I64, 8},       {"I32", ST_I32, 4},
    /* known to safetensors but never read by moescope: accepted, then refused by readers */
    {"I8", ST_OTHER, 1},      {"U8", ST_OTHER, 1},      {"BOOL", ST_OTHER, 1},
    {"I16", ST_OTHER, 2},     {"U16", ST_OTHER, 2},     {"U32", ST_OTHER, 4},
    {"U64", ST_OTHER, 8},     {"F8_E4M3", ST_OTHER, 1}, {"F8_E5M2", ST_OTHER, 1},
    {"F8_E8M0", ST_OTHER, 1},
};
#define NDTYPES (sizeof dtype_table / sizeof dtype_table[0])

const char *st_dtype_name(st_dtype d) {
    switch (d) {
    case ST_F32: return "F32";
    case ST_F16: return "F16";
    case ST_BF16: return "BF16";
    case ST_F64: return "F64";
    case ST_I64: return "I64";
    case ST_I32: return "I32";
    default: return "OTHER";
    }
}

static size_t dtype_size(st_dtype d) {
    switch (d) {
    case ST_F16:
    case ST_BF16: return 2;
    case ST_F32:
    case ST_I32: return 4;
    case ST_F64:
    case ST_I64: return 8;
    default: return 0;
    }
}

/* --------------------------------------------------------------- helpers */

/* "[16, 8]" into buf (always terminated). */
static const char *shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* Flat row-major index -> "[i, j, ...]". */
static const char *index_str(char *buf, size_t cap, const st_tensor *t, int64_t flat) {
    int64_t idx[ST_MAX_DIMS];
    for (int i = t->ndim - 1; i >= 0; i--) {
        int64_t s = t->shape[i] > 0 ? t->shape[i] : 1;
        idx[i] = flat % s;
        flat /= s;
    }
    return shape_str(buf, cap, t->ndim, idx);
}

/* A JSON number that must be a non-negative integer below 2^53 (exact in a double). */
static int json_uint(const cJSON *x, uint64_t *out) {
    if (!cJSON_IsNumber(x)) return -1;
    double d = x->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || d != floor(d)) return -1;
    *out = (uint64_t)d;
    return 0;
}

static int cmp_begin(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Sorting pointers to the entries of f->meta_keys (char **) by the key. */
static int cmp_keyref(const void *a, const void *b) {
    return strcmp(**(char **const *)a, **(char **const *)b);
}

static void maps_remove(st_file *f);

static void free_contents(st_file *f) {
    maps_remove(f); // before its tensors' names go
    free(f->read_marks);
    free(f->by_name);
    free(f->by_key);
    for (int i = 0; i < f->ntensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->meta_keys);
    free(f->meta_vals);
    if (f->map && f->size) munmap((void *)f->map, f->size);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* --------------------------------------------- a mapping that shrinks */

/* A file truncated by another program while it is mapped takes its pages past
 * the new end with it: touching one raises SIGBUS, which would end the process
 * without a word and leave its temporaries. Every read of a mapping runs under
 * a guard: the handler jumps back to the guard of the faulting thread (SIGBUS
 * is delivered to the thread that touched the page), which reports the file and
 * the tensor. A SIGBUS outside any guard is not ours: the default action, as
 * without the handler. */
static __thread sigjmp_buf *bus_jmp;

/* The live mappings, for a SIGBUS outside any guard: a weight used in place by a
 * product (core/wpanel.h) is read by many threads, too often to guard each read.
 * A fault inside one of them ends the command as a guard would report it (named
 * file, status 1, unfinished outputs removed) instead of a bare "Bus error".
 * Chunks of MAP_CHUNK entries, allocated as files open and never moved or freed,
 * so the handler reads them while others are added: a network of thousands of
 * shards, A's and B's, is covered whole (the system's own limit on mappings,
 * vm.max_map_count, comes first). */
enum { MAP_CHUNK = 256, MAP_CHUNKS = 1024, MAP_PATH = 1024 };
typedef struct {
    atomic_int used;
    const st_tensor *tensors; /* the file's, to name the faulting byte's */
    int ntensors;
    const char *data, *base;
    size_t size;
    char path[MAP_PATH];
    char size_text[24];
} map_entry;
static map_entry *_Atomic map_chunks[MAP_CHUNKS];
static atomic_int maps_high; /* entries ever handed out: the handler looks below it */
static pthread_mutex_t maps_mu = PTHREAD_MUTEX_INITIALIZER;
static int *maps_free, maps_nfree, maps_capfree; /* entries handed back, under maps_mu */

static map_entry *map_at(int i) {
    map_entry *c = atomic_load(&map_chunks[i / MAP_CHUNK]);
    return c ? &c[i % MAP_CHUNK] : NULL;
}

/* the name of entry x's tensor holding byte a, "" if none (a linear scan: signal-safe) */
static const char *tensor_at(const map_entry *x, const char *a) {
    for (int i = 0; i < x->ntensors; i++) {
        const st_tensor *t = &x->tensors[i];
        if (a >= x->data + t->begin && a < x->data + t->end) return t->name;
    }
    return "";
}

/* f into the table (f->map_slot); -1 when MAP_CHUNKS * MAP_CHUNK files are mapped */
static int maps_add(st_file *f) {
    pthread_mutex_lock(&maps_mu);
    int i = maps_nfree ? maps_free[--maps_nfree] : atomic_load(&maps_high);
    if (i >= MAP_CHUNKS * MAP_CHUNK) {
        pthread_mutex_unlock(&maps_mu);
        return -1;
    }
    if (!atomic_load(&map_chunks[i / MAP_CHUNK])) atomic_store(&map_chunks[i / MAP_CHUNK], ms_calloc(MAP_CHUNK, sizeof(map_entry)));
    map_entry *x = map_at(i);
    x->tensors = f->tensors, x->ntensors = f->ntensors, x->data = (const char *)f->data;
    x->base = (const char *)f->map, x->size = f->size;
    snprintf(x->path, MAP_PATH, "%s", f->path);
    snprintf(x->size_text, sizeof x->size_text, "%zu", f->size);
    atomic_store(&x->used, 1); // published complete
    if (i == atomic_load(&maps_high)) atomic_store(&maps_high, i + 1);
    pthread_mutex_unlock(&maps_mu);
    f->map_slot = i + 1;
    return 0;
}

static void maps_remove(st_file *f) {
    if (!f->map_slot) return;
    int i = f->map_slot - 1;
    f->map_slot = 0;
    pthread_mutex_lock(&maps_mu);
    map_entry *x = map_at(i);
    if (atomic_load(&x->used) != 1 || x->base != (const char *)f->map) { // a copy of f closed before
        pthread_mutex_unlock(&maps_mu);
        return;
    }
    atomic_store(&x->used, 0);
    if (maps_nfree == maps_capfree) {
        maps_capfree = maps_capfree ? 2 * maps_capfree : 256;
        maps_free = ms_realloc(maps_free, (size_t)maps_capfree * sizeof(int));
    }
    maps_free[maps_nfree++] = i;
    pthread_mutex_unlock(&maps_mu);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (bus_jmp) siglongjmp(*bus_jmp, 1);
    const char *a = si ? (const char *)si->si_addr : NULL;
    int high = atomic_load(&maps_high);
    for (int i = 0; a && i < high; i++) {
        const map_entry *x = map_at(i);
        if (x && atomic_load(&x->used) == 1 && a >= x->base && a < x->base + x->size) {
            const char *t = tensor_at(x, a);
            const char *msg[] = {"moescope: ", x->path, *t ? ": tensor '" : "", t, *t ? "'" : "",
                                 ": the file changed while being read (", x->size_text,
                                 " bytes when opened: truncated or rewritten by another program); "
                                 "unfinished outputs removed\n"};
            cancel_exit_now(msg, 8, 1);
        }
    }
    signal(sig, SIG_DFL); // not ours: the access faults again on return, now fatally
}

static void bus_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

static int shrank(const char *path, size_t size, const char *what, ms_err *err) {
    struct stat sb;
    if (stat(path, &sb) == 0)
        return ms_fail(err, "%s: %s: the file changed while being read (%zu bytes when opened, %lld "
                            "now: truncated or rewritten by another program)",
                       path, what, size, (long long)sb.st_size);
    return ms_fail(err, "%s: %s: the file changed while being read (truncated, rewritten or "
                        "removed by another program)", path, what);
}

int st_guarded(const st_file *f, const char *what, st_guarded_fn fn, void *ctx, ms_err *err) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, bus_install);
    sigjmp_buf jb, *prev = bus_jmp;
    if (sigsetjmp(jb, 1)) { // the mask is restored: SIGBUS is unblocked again
        bus_jmp = prev;
        return shrank(f->path, f->size, what, err);
    }
    bus_jmp = &jb;
    int rc = fn(ctx, err);
    bus_jmp = prev;
    return rc;
}

typedef struct {
    void *dst;
    const void *src;
    size_t n;
} copy_job;

static int copy_run(void *ctx, ms_err *err) {
    (void)err;
    copy_job *j = ctx;
    memcpy(j->dst, j->src, j->n);
    return 0;
}

/* t was read (a tensor of f's own; the marks are the file's, not the tensor's) */
static void mark_read(const st_file *f, const st_tensor *t) {
    if (f->read_marks && t >= f->tensors && t < f->tensors + f->ntensors) f->read_marks[t - f->tensors] = 1;
}

void st_mark_read(const st_file *f, const st_tensor *t) { mark_read(f, t); }

int st_was_read(const st_file *f, const st_tensor *t) {
    return f->read_marks && t >= f->tensors && t < f->tensors + f->ntensors && f->read_marks[t - f->tensors];
}

int st_copy_out(const st_file *f, const st_tensor *t, size_t off, size_t n, void *dst, ms_err *err) {
    mark_read(f, t);
    char what[260];
    snprintf(what, sizeof what, "tensor '%.200s'", t->name);
    copy_job j = {dst, f->data + t->begin + off, n};
    return st_guarded(f, what, copy_run, &j, err);
}

/* ------------------------------------------------------------ validation */

static int parse_tensor(st_file *f, const cJSON *item, st_tensor *t, ms_err *err) {
    const char *p = f->path, *nm = item->string;
    if (!cJSON_IsObject(item))
        return ms_fail(err, "%s: tensor '%.200s': entry is not a JSON object", p, nm);

    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!jd) return ms_fail(err, "%s: tensor '%.200s': no dtype", p, nm);
    if (!js) return ms_fail(err, "%s: tensor '%.200s': no shape", p, nm);
    if (!jo) return ms_fail(err, "%s: tensor '%.200s': no data_offsets", p, nm);

    // dtype
    if (!cJSON_IsString(jd))
        return ms_fail(err, "%s: tensor '%.200s': dtype is not a string", p, nm);
    size_t esize = 0;
    int known = 0;
    for (size_t i = 0; i < NDTYPES; i++)
        if (!strcmp(jd->valuestring, dtype_table[i].name)) {
            t->dtype = dtype_table[i].dtype;
            esize = dtype_table[i].size;
            snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dtype_table[i].name);
            known = 1;
            break;
        }
    if (!known)
        return ms_fail(err, "%s: tensor '%.200s': unknown dtype '%.40s'", p, nm, jd->valuestring);

    // shape: non-negative integers, numel without overflow
    if (!cJSON_IsArray(js))
        return ms_fail(err, "%s: tensor '%.200s': shape is not an array", p, nm);
    int nd = cJSON_GetArraySize(js);
    if (nd > ST_MAX_DIMS)
        return ms_fail(err, "%s: tensor '%.200s': shape has %d dimensions, at most %d supported",
                       p, nm, nd, ST_MAX_DIMS);
    t->ndim = nd;
    int64_t numel = 1;
    int overflow = 0;
    int k = 0;
    for (const cJSON *d = js->child; d; d = d->next, k++) {
        uint64_t v;
        if (json_uint(d, &v)) {
            if (cJSON_IsNumber(d) && d->valuedouble < 0)
                return ms_fail(err, "%s: tensor '%.200s': negative dimension %g in shape", p, nm,
                               d->valuedouble);
            if (cJSON_IsNumber(d) && d->valuedouble == floor(d->valuedouble))
                return ms_fail(err, "%s: tensor '%.200s': dimension %g in shape is too large "
                                    "(overflow)", p, nm, d->valuedouble);
            return ms_fail(err, "%s: tensor '%.200s': shape entry %d is not a non-negative integer",
                           p, nm, k);
        }
        t->shape[k] = (int64_t)v;
        if (v != 0 && numel > INT64_MAX / (int64_t)v) overflow = 1;
        else numel *= (int64_t)v;
    }
    char sb[200];
    // a zero dimension makes numel 0 even if the others overflowed
    for (int i = 0; i < nd; i++)
        if (t->shape[i] == 0) overflow = 0, numel = 0;
    if (overflow || (uint64_t)numel > SIZE_MAX / esize)
        return ms_fail(err, "%s: tensor '%.200s': shape %s has too many elements (overflow)", p,
                       nm, shape_str(sb, sizeof sb, nd, t->shape));
    t->numel = numel;

    // data_offsets [begin, end] inside the data section, matching the byte count
    uint64_t b, e;
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 || json_uint(jo->child, &b) ||
        json_uint(jo->child->next, &e))
        return ms_fail(err, "%s: tensor '%.200s': data_offsets must be [begin, end] of non-negative "
                            "integers", p, nm);
    if (b > e)
        return ms_fail(err, "%s: tensor '%.200s': data_offsets [%llu, %llu] end before they begin",
                       p, nm, (unsigned long long)b, (unsigned long long)e);
    if (b > f->data_size)
        return ms_fail(err, "%s: tensor '%.200s': data_offsets [%llu, %llu] start outside the data "
                            "section (%zu bytes)", p, nm, (unsigned long long)b,
                       (unsigned long long)e, f->data_size);
    if (e > f->data_size)
        return ms_fail(err, "%s: truncated: data section is %zu bytes, tensor '%.200s' ends at %llu",
                       p, f->data_size, nm, (unsigned long long)e);
    uint64_t need = (uint64_t)numel * esize;
    if (e - b != need)
        return ms_fail(err, "%s: tensor '%.200s': data_offsets [%llu, %llu] but shape %s of %s "
                            "needs %llu bytes", p, nm, (unsigned long long)b,
                       (unsigned long long)e, shape_str(sb, sizeof sb, nd, t->shape),
                       t->dtype_name, (unsigned long long)need);
    t->begin = (size_t)b;
    t->end = (size_t)e;
    return 0;
}

static int parse_metadata(st_file *f, const cJSON *meta, ms_err *err) {
    if (!cJSON_IsObject(meta))
        return ms_fail(err, "%s: __metadata__ is not a JSON object", f->path);
    int n = cJSON_GetArraySize(meta);
    if (n > ST_MAX_METADATA)
        return ms_fail(err, "%s: __metadata__ has %d entries, at most %d supported", f->path, n,
                       ST_MAX_METADATA);
    f->meta_keys = ms_calloc((size_t)n, sizeof(char *));
    f->meta_vals = ms_calloc((size_t)n, sizeof(char *));
    for (const cJSON *m = meta->child; m; m = m->next) {
        if (!cJSON_IsString(m))
            return ms_fail(err, "%s: __metadata__ key '%.200s' has a non-string value", f->path,
                           m->string);
        f->meta_keys[f->nmeta] = ms_strdup(m->string);
        f->meta_vals[f->nmeta] = ms_strdup(m->valuestring);
        f->nmeta++;
    }
    // the key index for st_meta; duplicate keys (cJSON keeps them) are neighbours in it
    f->by_key = ms_malloc((size_t)(f->nmeta ? f->nmeta : 1) * sizeof(int));
    char ***ref = ms_malloc((size_t)(f->nmeta ? f->nmeta : 1) * sizeof(char **));
    for (int i = 0; i < f->nmeta; i++) ref[i] = &f->meta_keys[i];
    qsort(ref, (size_t)f->nmeta, sizeof *ref, cmp_keyref);
    int rc = 0;
    for (int i = 0; i < f->nmeta; i++) {
        f->by_key[i] = (int)(ref[i] - f->meta_keys);
        if (i && rc == 0 && !strcmp(*ref[i], *ref[i - 1]))
            rc = ms_fail(err, "%s: __metadata__ key '%.200s' appears twice", f->path, *ref[i]);
    }
    free(ref);
    return rc;
}

/* A NUL byte in the header, raw or as the escape \u0000, would silently cut a
 * tensor name or metadata key at that point ("moescope.activation" read as
 * "m"): refuse it. Backslashes only occur inside JSON strings, so scanning the
 * escapes everywhere is exact for valid JSON. len is the JSON value's extent. */
static int check_no_nul(const st_file *f, const char *text, size_t len, ms_err *err) {
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\0')
            return ms_fail(err, "%s: header contains a NUL byte (at byte %zu of the JSON): not "
                                "valid JSON for safetensors", f->path, i);
        if (text[i] == '\\' && i + 1 < len) {
            if (text[i + 1] == 'u' && i + 5 < len && !strncmp(text + i + 2, "0000", 4))
                return ms_fail(err, "%s: header contains the escape \\u0000 (a NUL character, at "
                                    "byte %zu of the JSON): refused, names and keys cannot hold it",
                               f->path, i);
            i++; // skip the escaped character (so "\\\\u0000" is not an escape of u)
        }
    }
    return 0;
}

static int parse_header(st_file *f, const char *text, size_t len, ms_err *err) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        // cJSON sets end to the error position (cJSON_GetErrorPtr is a global: not thread-safe)
        size_t at = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
        return ms_fail(err, "%s: header is not valid JSON (error near byte %zu of %zu)", f->path,
                       at, len);
    }
    // only padding may follow the JSON value
    for (const char *q = end; q && q < text + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != '\0') {
            cJSON_Delete(root);
            return ms_fail(err, "%s: header is not valid JSON (trailing bytes after the object)",
                           f->path);
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ms_fail(err, "%s: header JSON is not an object", f->path);
    }
    if (check_no_nul(f, text, (size_t)(end - text), err)) {
        cJSON_Delete(root);
        return -1;
    }

    int n = 0, nmeta_objs = 0;
    for (const cJSON *it = root->child; it; it = it->next) {
        if (!strcmp(it->string, "__metadata__")) nmeta_objs++;
        else n++;
    }
    if (n > ST_MAX_TENSORS) {
        cJSON_Delete(root);
        return ms_fail(err, "%s: %d tensors, at most %d supported", f->path, n, ST_MAX_TENSORS);
    }
    if (nmeta_objs > 1) {
        cJSON_Delete(root);
        return ms_fail(err, "%s: __metadata__ appears twice", f->path);
    }

    f->tensors = ms_calloc((size_t)n, sizeof(st_tensor));
    int rc = 0;
    for (const cJSON *it = root->child; it && rc == 0; it = it->next) {
        if (!strcmp(it->string, "__metadata__")) {
            rc = parse_metadata(f, it, err);
            continue;
        }
        st_tensor *t = &f->tensors[f->ntensors];
        rc = parse_tensor(f, it, t, err);
        t->name = ms_strdup(it->string); // owned even on failure so free_contents frees it
        f->ntensors++;
    }
    cJSON_Delete(root);
    if (rc) return -1;
    if (n == 0) return 0;

    // duplicate names and overlapping byte ranges, both by sorting pointers; the name
    // order is kept as st_find's index
    st_tensor **ord = ms_malloc((size_t)n * sizeof(st_tensor *));
    for (int i = 0; i < n; i++) ord[i] = &f->tensors[i];
    qsort(ord, (size_t)n, sizeof *ord, cmp_name);
    f->by_name = ms_malloc((size_t)n * sizeof(int));
    f->read_marks = ms_calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) f->by_name[i] = (int)(ord[i] - f->tensors);
    for (int i = 1; i < n && rc == 0; i++)
        if (!strcmp(ord[i]->name, ord[i - 1]->name))
            rc = ms_fail(err, "%s: tensor '%.200s' appears twice", f->path, ord[i]->name);
    if (rc == 0) {
        qsort(ord, (size_t)n, sizeof *ord, cmp_begin);
        const st_tensor *prev = NULL; // the non-empty tensor reaching furthest so far
        for (int i = 0; i < n && rc == 0; i++) {
            const st_tensor *t = ord[i];
            if (t->begin == t->end) continue; // empty tensors overlap nothing
            if (prev && t->begin < prev->end)
                rc = ms_fail(err, "%s: tensors '%.200s' [%zu, %zu] and '%.200s' [%zu, %zu] overlap",
                             f->path, prev->name, prev->begin, prev->end, t->name, t->begin,
                             t->end);
            if (!prev || t->end > prev->end) prev = t;
        }
    }
    free(ord);
    return rc;
}

int st_open(st_file *f, const char *path, ms_err *err) {
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); // a FIFO must not block us
    if (fd < 0) return ms_fail(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ms_fail(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return ms_fail(err, "%s: is a directory, not a safetensors file", path);
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return ms_fail(err, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    if (size == 0) {
        close(fd);
        return ms_fail(err, "%s: empty file (not a safetensors file)", path);
    }
    if (size < 8) {
        close(fd);
        return ms_fail(err, "%s: truncated: file is %zu bytes, too short for the 8-byte header "
                            "length", path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED && e == ENOMEM) // most often the system's count of mappings
        return ms_fail(err, "%s: cannot mmap: %s (with %d files mapped: the system's limit on mappings, "
                            "vm.max_map_count, may be reached)", path, strerror(e), atomic_load(&maps_high));
    if (map == MAP_FAILED) return ms_fail(err, "%s: cannot mmap: %s", path, strerror(e));
    f->path = ms_strdup(path);
    f->map = map;
    f->size = size;
    // the first page is read now: a file cut to nothing meanwhile is reported, not a crash
    unsigned char head8[8];
    copy_job j8 = {head8, f->map, 8};
    if (st_guarded(f, "its header", copy_run, &j8, err)) {
        free_contents(f);
        return -1;
    }

    uint64_t hlen;
    memcpy(&hlen, head8, 8); // little-endian u64
    int is_text = 1; // a text file's first 8 bytes make an absurd length: say what it is
    for (int i = 0; i < 8; i++) {
        unsigned char ch = head8[i];
        is_text &= (ch >= 0x20 && ch < 0x7f) || ch == '\n' || ch == '\r' || ch == '\t';
    }
    if (hlen > size - 8 && is_text) {
        char head[9];
        for (int i = 0; i < 8; i++) {
            char ch = (char)head8[i];
            head[i] = ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch;
        }
        head[8] = 0;
        ms_fail(err, "%s: not a safetensors file: it begins with text (\"%s\"), where a "
                "safetensors file begins with the 8-byte length of its JSON header", path, head);
        free_contents(f);
        return -1;
    }
    // torch.save: a zip archive, or (the legacy format) a pickle
    int zip = !memcmp(head8, "PK\x03\x04", 4), pickle = head8[0] == 0x80 && head8[1] >= 2 && head8[1] <= 5;
    if (hlen > size - 8 && (zip || pickle)) {
        ms_fail(err, "%s: a PyTorch checkpoint (torch.save, %s), not safetensors: convert it with "
                "python3 sample-checkpoints/torch_to_safetensors.py %s -o model.safetensors "
                "(the manual: Bringing your own checkpoint)", path, zip ? "zip" : "legacy pickle", path);
        free_contents(f);
        return -1;
    }
    if (hlen > size - 8) {
        ms_fail(err, "%s: header length %llu runs past the end of the file (%zu bytes)", path,
                (unsigned long long)hlen, size);
        free_contents(f);
        return -1;
    }
    if (hlen > ST_MAX_HEADER) {
        ms_fail(err, "%s: header length %llu is over the %u-byte limit", path,
                (unsigned long long)hlen, ST_MAX_HEADER);
        free_contents(f);
        return -1;
    }
    f->data = f->map + 8 + hlen;
    f->data_size = size - 8 - (size_t)hlen;

    // cJSON wants a terminated string: copy the header out of the mapping
    char *text = ms_malloc((size_t)hlen + 1);
    copy_job jh = {text, f->map + 8, (size_t)hlen};
    if (st_guarded(f, "its header", copy_run, &jh, err)) {
        free(text);
        free_contents(f);
        return -1;
    }
    text[hlen] = 0;
    int rc = parse_header(f, text, (size_t)hlen, err);
    free(text);
    if (rc) {
        free_contents(f);
        return -1;
    }
    if (maps_add(f)) {
        ms_fail(err, "%s: more than %d files mapped at once, moescope's limit", path, MAP_CHUNKS * MAP_CHUNK);
        free_contents(f);
        return -1;
    }
    return 0;
}

void st_close(st_file *f) {
    if (f) free_contents(f);
}

/* Binary search for want in idx[0..n), sorted by the string of each entry; the
 * string of entry i is the char * at base + i * stride (a field of an array of
 * structs, or an array of strings). Returns the entry or -1. */
static int find_sorted(const int *idx, int n, const void *base, size_t stride, const char *want) {
    int lo = 0, hi = idx ? n : 0;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const char *s = *(char *const *)((const char *)base + (size_t)idx[mid] * stride);
        int c = strcmp(s, want);
        if (c == 0) return idx[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

const st_tensor *st_find(const st_file *f, const char *name) {
    int i = f->ntensors ? find_sorted(f->by_name, f->ntensors, &f->tensors[0].name,
                                      sizeof(st_tensor), name)
                        : -1;
    return i < 0 ? NULL : &f->tensors[i];
}

const char *st_meta(const st_file *f, const char *key) {
    int i = find_sorted(f->by_key, f->nmeta, f->meta_keys, sizeof(char *), key);
    return i < 0 ? NULL : f->meta_vals[i];
}

/* ---------------------------------------------------------------- readers */

/* IEEE binary16 -> binary32, exact (every half is representable as a float). */
float st_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); // inf, nan (payload kept)
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13); // rebias 15 -> 127
    } else if (man == 0) {
        bits = sign; // +-0
    } else {
        // subnormal: value = man * 2^-24, normalise the mantissa
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

/* bfloat16 is the top half of a float32. */
float st_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

static int not_float(const st_file *f, const st_tensor *t, const char *want, ms_err *err) {
    if (t->dtype == ST_OTHER && !strncmp(t->dtype_name, "F8_", 3)) // DeepSeek-V3's FP8 release
        return ms_fail(err, "%s: tensor '%.200s' is %s: FP8-quantized weights (their block scales in "
                            "'%.200s_scale_inv'), which moescope does not dequantize (it reads %s); convert the "
                            "checkpoint to BF16 first (DeepSeek's inference/fp8_cast_bf16.py)",
                       f->path, t->name, t->dtype_name, t->name, want);
    if (t->dtype == ST_OTHER)
        return ms_fail(err, "%s: tensor '%.200s': unsupported dtype %s (moescope reads %s)",
                       f->path, t->name, t->dtype_name, want);
    return ms_fail(err, "%s: tensor '%.200s' has dtype %s, expected %s", f->path, t->name,
                   st_dtype_name(t->dtype), want);
}

static int bad_value(const st_file *f, const st_tensor *t, int64_t i, double v, const char *why,
                     ms_err *err) {
    char ib[200];
    return ms_fail(err, "%s: tensor '%.200s': %s value %g at element %lld %s", f->path, t->name,
                   why, v, (long long)i, index_str(ib, sizeof ib, t, i));
}

/* Element i of an F16 or BF16 tensor's data src (exact in float). */
static float half_at(const st_tensor *t, const uint8_t *src, int64_t i) {
    uint16_t h;
    memcpy(&h, src + 2 * i, 2);
    return t->dtype == ST_F16 ? st_half_to_float(h) : st_bf16_to_float(h);
}

/* Are x[0..k) all finite? One pass the compiler vectorizes (an exponent of all
 * ones is inf or NaN); the caller looks for the first bad one only when not. */
static int floats_finite(const float *x, int64_t k) {
    uint32_t bad = 0;
    for (int64_t i = 0; i < k; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

static int read_f32_range(const st_file *f, const st_tensor *t, int64_t first, int64_t count,
                          float *out, ms_err *err) {
    const uint8_t *src = f->data + t->begin;
    int64_t end = first + count;
    switch (t->dtype) {
    case ST_F32:
        memcpy(out, src + 4 * first, (size_t)count * 4);
        break;
    case ST_F16:
        for (int64_t i = first; i < end; i++) out[i - first] = half_at(t, src, i);
        break;
    case ST_BF16: // the top half of a float32 (st_bf16_to_float), in a loop the compiler vectorizes
        for (int64_t i = first; i < end; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&out[i - first], &bits, 4);
        }
        break;
    case ST_F64:
        for (int64_t i = first; i < end; i++) {
            double d;
            memcpy(&d, src + 8 * i, 8);
            out[i - first] = (float)d;
            if (isfinite(d) && !isfinite(out[i - first]))
                return bad_value(f, t, i, d, "float32-overflowing", err);
        }
        break;
    default:
        return not_float(f, t, "F32, F16, BF16 or F64", err);
    }
    if (!floats_finite(out, count))
        for (int64_t i = 0; i < count; i++)
            if (!isfinite(out[i])) return bad_value(f, t, first + i, out[i], "non-finite", err);
    return 0;
}

/* The readers run under the mapping's guard (st_guarded): one job each. */
typedef enum { READ_F32, READ_F64, READ_I64 } read_kind;
typedef struct {
    const st_file *f;
    const st_tensor *t;
    int64_t first, count;
    void *out;
    read_kind kind;
} read_job;

static int read_f64(const st_file *f, const st_tensor *t, double *out, ms_err *err);
static int read_i64(const st_file *f, const st_tensor *t, int64_t *out, ms_err *err);

static int read_run(void *ctx, ms_err *err) {
    const read_job *j = ctx;
    switch (j->kind) {
    case READ_F32: return read_f32_range(j->f, j->t, j->first, j->count, j->out, err);
    case READ_F64: return read_f64(j->f, j->t, j->out, err);
    default: return read_i64(j->f, j->t, j->out, err);
    }
}

static int read_guarded(const st_file *f, const st_tensor *t, read_kind kind, int64_t first,
                        int64_t count, void *out, ms_err *err) {
    if (!t) return ms_fail(err, "%s: missing tensor", f->path);
    mark_read(f, t);
    read_job j = {f, t, first, count, out, kind};
    char what[260];
    snprintf(what, sizeof what, "tensor '%.200s'", t->name);
    return st_guarded(f, what, read_run, &j, err);
}

int st_read_f32_range(const st_file *f, const st_tensor *t, int64_t first, int64_t count,
                      float *out, ms_err *err) {
    return read_guarded(f, t, READ_F32, first, count, out, err);
}

int st_read_f32(const st_file *f, const st_tensor *t, float *out, ms_err *err) {
    return st_read_f32_range(f, t, 0, t ? t->numel : 0, out, err);
}

/* an aligned F32 tensor's values where they lie, under the mapping's guard */
static int finite_run(void *ctx, ms_err *err) {
    const read_job *j = ctx;
    return floats_finite((const float *)(j->f->data + j->t->begin), j->t->numel) ? 0 : 1;
}

int st_check_finite(const st_file *f, const st_tensor *t, ms_err *err) {
    enum { CHUNK = 16384 };
    float buf[CHUNK];
    if (t && t->dtype == ST_F32 && (uintptr_t)(f->data + t->begin) % 4 == 0) { // in place; a bad one found by a read
        read_job j = {f, t, 0, t->numel, NULL, READ_F32};
        char what[260];
        snprintf(what, sizeof what, "tensor '%.200s'", t->name);
        int rc = st_guarded(f, what, finite_run, &j, err);
        if (rc <= 0) {
            if (!rc) mark_read(f, t);
            return rc;
        }
    }
    for (int64_t i = 0; t && i < t->numel; i += CHUNK)
        if (read_guarded(f, t, READ_F32, i, t->numel - i < CHUNK ? t->numel - i : CHUNK, buf, err)) return -1;
    return t ? 0 : read_guarded(f, t, READ_F32, 0, 0, buf, err);
}

void st_release(const st_file *f, size_t begin, size_t end) {
    // whole pages inside [begin, end) of the data section; their neighbours may still be read
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)(f->data + begin), b = (uintptr_t)(f->data + end);
    a = (a + pg - 1) / pg * pg;
    b = b / pg * pg;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

int st_read_f64(const st_file *f, const st_tensor *t, double *out, ms_err *err) {
    return read_guarded(f, t, READ_F64, 0, t ? t->numel : 0, out, err);
}

int st_read_i64(const st_file *f, const st_tensor *t, int64_t *out, ms_err *err) {
    return read_guarded(f, t, READ_I64, 0, t ? t->numel : 0, out, err);
}

static int read_f64(const st_file *f, const st_tensor *t, double *out, ms_err *err) {
    const uint8_t *src = f->data + t->begin;
    int64_t n = t->numel;
    switch (t->dtype) {
    case ST_F64:
        memcpy(out, src, (size_t)n * 8);
        break;
    case ST_F32:
        for (int64_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = x;
        }
        break;
    case ST_F16:
    case ST_BF16:
        for (int64_t i = 0; i < n; i++) out[i] = half_at(t, src, i);
        break;
    default:
        return not_float(f, t, "F32, F16, BF16 or F64", err);
    }
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(out[i])) return bad_value(f, t, i, out[i], "non-finite", err);
    return 0;
}

static int read_i64(const st_file *f, const st_tensor *t, int64_t *out, ms_err *err) {
    const uint8_t *src = f->data + t->begin;
    int64_t n = t->numel;
    switch (t->dtype) {
    case ST_I64:
        memcpy(out, src, (size_t)n * 8);
        return 0;
    case ST_I32:
        for (int64_t i = 0; i < n; i++) {
            int32_t x;
            memcpy(&x, src + 4 * i, 4);
            out[i] = x;
        }
        return 0;
    default:
        return not_float(f, t, "I32 or I64", err);
    }
}

int st_read_f32_shape(const st_file *f, const char *name, int ndim, const int64_t *want,
                      float *out, ms_err *err) {
    const st_tensor *t = st_find(f, name);
    if (!t) return ms_fail(err, "%s: missing tensor '%.200s'", f->path, name);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == want[i];
    if (!same) {
        char hb[200], wb[200];
        return ms_fail(err, "%s: tensor '%.200s' has shape %s, expected %s", f->path, name,
                       shape_str(hb, sizeof hb, t->ndim, t->shape),
                       shape_str(wb, sizeof wb, ndim, want));
    }
    return st_read_f32(f, t, out, err);
}

/* ----------------------------------------------------------------- writer */

typedef struct {
    char *name;
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data; // borrowed
    int bad_ndim;     // ndim outside [0, ST_MAX_DIMS]: reported at write time
    int raw;          // st_writer_add_raw/_gen: bytes as they are, dtype by name
    char dtype_name[16];
    size_t raw_bytes;
    st_gen_fn gen;    // st_writer_add_gen: the bytes are made at write time
    void *gen_ctx;
    st_panel_fn panel; // st_writer_add_panels: made panel_rows rows at a time
    size_t panel_rows, row_bytes;
    const st_file *src; // st_writer_add_mapped: pages released once written
    size_t src_begin;
} st_wtensor;

struct st_writer {
    st_wtensor *t;
    int n, cap;
    char **keys, **vals;
    int nmeta, capmeta;
};

st_writer *st_writer_new(void) { return ms_calloc(1, sizeof(st_writer)); }

void st_writer_free(st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->t[i].name);
    free(w->t);
    for (int i = 0; i < w->nmeta; i++) {
        free(w->keys[i]);
        free(w->vals[i]);
    }
    free(w->keys);
    free(w->vals);
    free(w);
}

static void writer_add(st_writer *w, const char *name, st_dtype dt, int ndim,
                       const int64_t *shape, const void *data) {
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->t = ms_realloc(w->t, (size_t)w->cap * sizeof(st_wtensor));
    }
    st_wtensor *t = &w->t[w->n++];
    memset(t, 0, sizeof *t);
    t->name = ms_strdup(name);
    t->dtype = dt;
    t->data = data;
    if (ndim < 0 || ndim > ST_MAX_DIMS) {
        t->bad_ndim = 1;
        t->ndim = ndim;
        return;
    }
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
}

void st_writer_add_f32(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const float *data) {
    writer_add(w, name, ST_F32, ndim, shape, data);
}
void st_writer_add_f64(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const double *data) {
    writer_add(w, name, ST_F64, ndim, shape, data);
}
void st_writer_add_i64(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const int64_t *data) {
    writer_add(w, name, ST_I64, ndim, shape, data);
}
void st_writer_add_i32(st_writer *w, const char *name, int ndim, const int64_t *shape,
                       const int32_t *data) {
    writer_add(w, name, ST_I32, ndim, shape, data);
}

void st_writer_add_raw(st_writer *w, const char *name, const char *dtype_name, int ndim,
                       const int64_t *shape, const void *bytes, size_t nbytes) {
    writer_add(w, name, ST_OTHER, ndim, shape, bytes);
    st_wtensor *t = &w->t[w->n - 1];
    t->raw = 1;
    // an over-long name cannot be a known dtype: keep a marker that fails the lookup
    if (snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dtype_name) >= (int)sizeof t->dtype_name)
        snprintf(t->dtype_name, sizeof t->dtype_name, "?");
    t->raw_bytes = nbytes;
}

void st_writer_add_gen(st_writer *w, const char *name, const char *dtype_name, int ndim,
                       const int64_t *shape, size_t nbytes, st_gen_fn gen, void *ctx) {
    st_writer_add_raw(w, name, dtype_name, ndim, shape, ctx, nbytes);
    w->t[w->n - 1].gen = gen;
    w->t[w->n - 1].gen_ctx = ctx;
}

void st_writer_add_panels(st_writer *w, const char *name, int ndim, const int64_t *shape, size_t panel_rows,
                          st_panel_fn gen, void *ctx) {
    size_t rows = ndim > 0 && shape[0] > 0 ? (size_t)shape[0] : 0, row = 4;
    for (int i = 1; i < ndim; i++) row *= (size_t)(shape[i] > 0 ? shape[i] : 0);
    st_writer_add_raw(w, name, "F32", ndim, shape, ctx, rows * row);
    st_wtensor *t = &w->t[w->n - 1];
    t->panel = gen, t->gen_ctx = ctx, t->row_bytes = row;
    t->panel_rows = panel_rows ? panel_rows : 1;
}

/* Tensor t made and written panel by panel: one panel's buffer at a time. */
static int write_panels(const st_wtensor *t, size_t nbytes, FILE *fp, ms_err *err) {
    size_t rows = t->row_bytes ? nbytes / t->row_bytes : 0, per = t->panel_rows < rows ? t->panel_rows : rows;
    float *buf = ms_malloc(per * t->row_bytes + 1);
    int rc = 0;
    for (size_t r0 = 0; r0 < rows && !rc; r0 += per) {
        size_t n = rows - r0 < per ? rows - r0 : per;
        rc = t->panel(t->gen_ctx, (int64_t)r0, (int64_t)n, buf, err);
        if (!rc && fwrite(buf, t->row_bytes, n, fp) != n) break; // af_commit reports the stream's error
    }
    free(buf);
    return rc;
}

void st_writer_add_mapped(st_writer *w, const st_file *f, const st_tensor *t) {
    st_writer_add_raw(w, t->name, t->dtype_name, t->ndim, t->shape, f->data + t->begin,
                      t->end - t->begin);
    w->t[w->n - 1].src = f;
    w->t[w->n - 1].src_begin = t->begin;
}

/* A tensor of a mapped input, copied out chunk by chunk under the mapping's guard
 * into a buffer that is then written: write(2) never reads the mapping (a page
 * gone there fails it with EFAULT, "Bad address", as if the output were to blame),
 * and an input cut short while it is copied is named with the tensor. */
#define ST_COPY_CHUNK ((size_t)8 << 20)
static int write_mapped(const st_wtensor *t, size_t nbytes, FILE *fp, ms_err *err) {
    const st_file *f = t->src;
    size_t cap = nbytes < ST_COPY_CHUNK ? nbytes : ST_COPY_CHUNK;
    char *buf = ms_malloc(cap), what[260];
    snprintf(what, sizeof what, "tensor '%.200s'", t->name);
    int rc = 0;
    for (size_t at = 0; at < nbytes && !rc; at += cap) {
        size_t n = nbytes - at < cap ? nbytes - at : cap;
        copy_job j = {buf, f->data + t->src_begin + at, n};
        rc = st_guarded(f, what, copy_run, &j, err);
        if (!rc && fwrite(buf, 1, n, fp) != n) break; // the stream's error is af_commit's to report
        st_release(f, t->src_begin + at, t->src_begin + at + n);
    }
    free(buf);
    return rc;
}

/* Tensor i's bytes to fp: as given, or made by its generator into a buffer
 * that lives only while it is written (a layer is encoded tensor by tensor). */
static int write_tensor(const st_wtensor *t, size_t nbytes, FILE *fp, ms_err *err) {
    if (t->panel) return write_panels(t, nbytes, fp, err);
    if (!t->gen && t->src) return write_mapped(t, nbytes, fp, err);
    if (!t->gen) {
        fwrite(t->data, 1, nbytes, fp);
        return 0;
    }
    void *buf = ms_malloc(nbytes);
    int rc = t->gen(t->gen_ctx, buf, err);
    if (!rc) fwrite(buf, 1, nbytes, fp);
    free(buf);
    return rc;
}

static int cmp_wname(const void *a, const void *b) {
    const st_wtensor *x = *(const st_wtensor *const *)a, *y = *(const st_wtensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Appended without a search (a checkpoint may carry many thousands of keys);
 * st_writer_write sorts them and keeps the last value of a repeated key. */
void st_writer_meta(st_writer *w, const char *key, const char *value) {
    if (w->nmeta == w->capmeta) {
        w->capmeta = w->capmeta ? 2 * w->capmeta : 8;
        w->keys = ms_realloc(w->keys, (size_t)w->capmeta * sizeof(char *));
        w->vals = ms_realloc(w->vals, (size_t)w->capmeta * sizeof(char *));
    }
    w->keys[w->nmeta] = ms_strdup(key);
    w->vals[w->nmeta] = ms_strdup(value);
    w->nmeta++;
}

/* By key, then by insertion (pointers into w->keys are in insertion order). */
static int cmp_wkey(const void *a, const void *b) {
    char *const *x = *(char *const *const *)a, *const *y = *(char *const *const *)b;
    int c = strcmp(*x, *y);
    return c ? c : (x > y) - (x < y);
}

/* A growable string for the header. */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
        b->s = ms_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_fmt(sbuf *b, const char *fmt, long long v) {
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, fmt, v);
    sb_put(b, tmp, (size_t)k);
}

/* JSON string literal; UTF-8 passes through, control characters are escaped. */
static void sb_json(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            sb_put(b, e, 2);
        } else if (*p < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", *p);
            sb_put(b, e, 6);
        } else {
            sb_put(b, (const char *)p, 1);
        }
    }
    sb_put(b, "\"", 1);
}

int st_writer_write(st_writer *w, const char *path, ms_err *err) {
    // check everything first, so a bad call never replaces an existing file
    size_t *nbytes = ms_calloc((size_t)w->n + 1, sizeof(size_t));
    int rc = 0;
    for (int i = 0; i < w->n && rc == 0; i++) {
        const st_wtensor *t = &w->t[i];
        if (t->bad_ndim) {
            rc = ms_fail(err, "%s: tensor '%.200s': %d dimensions, expected 0..%d", path, t->name,
                         t->ndim, ST_MAX_DIMS);
            break;
        }
        if (!strcmp(t->name, "__metadata__")) {
            rc = ms_fail(err, "%s: a tensor cannot be named __metadata__", path);
            break;
        }
        size_t es = dtype_size(t->dtype);
        if (t->raw) {
            es = 0;
            for (size_t k = 0; k < NDTYPES; k++)
                if (!strcmp(t->dtype_name, dtype_table[k].name)) es = dtype_table[k].size;
            if (!es) {
                rc = ms_fail(err, "%s: tensor '%.200s': unknown dtype '%s'", path, t->name,
                             t->dtype_name);
                break;
            }
        }
        uint64_t numel = 1;
        for (int d = 0; d < t->ndim && rc == 0; d++) {
            if (t->shape[d] < 0)
                rc = ms_fail(err, "%s: tensor '%.200s': negative dimension %lld", path, t->name,
                             (long long)t->shape[d]);
            else if (t->shape[d] > 0 && numel > (SIZE_MAX / es) / (uint64_t)t->shape[d])
                rc = ms_fail(err, "%s: tensor '%.200s': too many elements", path, t->name);
            else
                numel *= (uint64_t)t->shape[d];
        }
        if (rc) break;
        nbytes[i] = (size_t)numel * es;
        if (t->raw && t->raw_bytes != nbytes[i]) {
            char sb[200];
            rc = ms_fail(err, "%s: tensor '%.200s': %s %s needs %zu bytes, given %zu", path,
                         t->name, t->dtype_name, shape_str(sb, sizeof sb, t->ndim, t->shape),
                         nbytes[i], t->raw_bytes);
            break;
        }
        if (numel && !t->data) {
            rc = ms_fail(err, "%s: tensor '%.200s': no data", path, t->name);
            break;
        }
        // the reader refuses non-finite values: do not write a file it cannot read
        for (uint64_t k = 0; k < numel && (t->dtype == ST_F32 || t->dtype == ST_F64); k++) {
            double v = t->dtype == ST_F32 ? ((const float *)t->data)[k] : ((const double *)t->data)[k];
            if (!isfinite(v)) {
                rc = ms_fail(err, "%s: tensor '%.200s': non-finite value %g at element %llu", path,
                             t->name, v, (unsigned long long)k);
                break;
            }
        }
    }
    if (rc == 0 && w->n > 1) {
        // duplicate names: sort pointers and compare neighbours (a passthrough of a large
        // checkpoint adds many thousands of tensors)
        const st_wtensor **ord = ms_malloc((size_t)w->n * sizeof *ord);
        for (int i = 0; i < w->n; i++) ord[i] = &w->t[i];
        qsort(ord, (size_t)w->n, sizeof *ord, cmp_wname);
        for (int i = 1; i < w->n && rc == 0; i++)
            if (!strcmp(ord[i - 1]->name, ord[i]->name))
                rc = ms_fail(err, "%s: tensor '%.200s' added twice", path, ord[i]->name);
        free(ord);
    }
    if (rc) {
        free(nbytes);
        return -1;
    }

    // header: __metadata__ first with sorted keys, then tensors in insertion order
    sbuf h = {0};
    sb_str(&h, "{");
    int first = 1;
    if (w->nmeta) {
        // sorted by key, O(m log m); of a repeated key the last value set wins
        char **ref_base = w->keys;
        char ***ref = ms_malloc((size_t)w->nmeta * sizeof(char **));
        for (int i = 0; i < w->nmeta; i++) ref[i] = &ref_base[i];
        qsort(ref, (size_t)w->nmeta, sizeof *ref, cmp_wkey);
        sb_str(&h, "\"__metadata__\":{");
        int wrote = 0;
        for (int i = 0; i < w->nmeta; i++) {
            if (i + 1 < w->nmeta && !strcmp(*ref[i], *ref[i + 1])) continue; // a later one wins
            size_t k = (size_t)(ref[i] - ref_base);
            if (wrote++) sb_str(&h, ",");
            sb_json(&h, w->keys[k]);
            sb_str(&h, ":");
            sb_json(&h, w->vals[k]);
        }
        sb_str(&h, "}");
        free(ref);
        first = 0;
    }
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        const st_wtensor *t = &w->t[i];
        if (!first) sb_str(&h, ",");
        first = 0;
        sb_json(&h, t->name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, t->raw ? t->dtype_name : st_dtype_name(t->dtype));
        sb_str(&h, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) sb_fmt(&h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        sb_str(&h, "],\"data_offsets\":[");
        sb_fmt(&h, "%lld", (long long)off);
        sb_fmt(&h, ",%lld", (long long)(off + nbytes[i]));
        sb_str(&h, "]}");
        off += nbytes[i];
    }
    sb_str(&h, "}");
    // pad with spaces so the data section starts 8-byte aligned, as the reference does
    while (h.len % 8) sb_str(&h, " ");

    atomic_file af;
    if (af_open(&af, path, err)) {
        free(h.s);
        free(nbytes);
        return -1;
    }
    uint64_t hlen = h.len;
    fwrite(&hlen, 8, 1, af.fp); // little-endian host (static assert above)
    fwrite(h.s, 1, h.len, af.fp);
    const char *slash = strrchr(path, '/');
    char phase[96];
    snprintf(phase, sizeof phase, "write %.80s", slash ? slash + 1 : path);
    progress_begin(phase, (double)off / 1048576.0, "MiB");
    for (int i = 0; i < w->n && !rc; i++) {
        if (nbytes[i]) rc = write_tensor(&w->t[i], nbytes[i], af.fp, err);
        progress_add((double)nbytes[i] / 1048576.0);
    }
    progress_end();
    free(h.s);
    free(nbytes);
    if (rc) {
        af_abort(&af);
        return -1;
    }
    // af_commit notices any failed fwrite (sticky error flag) and removes the temporary
    return af_commit(&af, err);
}
