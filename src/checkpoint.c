/* checkpoint.c - a checkpoint argument (file, sharded index, directory) and
 * its config.json; shards mapped on demand. See checkpoint.h. */
#define _GNU_SOURCE /* qsort_r */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CKPT_MAX_JSON (64u << 20) /* an index of a 1000-shard model is a few MiB */

char *ckpt_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = ms_malloc(a + b + 2);
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return ms_strdup(".");
    if (slash == path) return ms_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = ms_malloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Read a whole (regular, bounded) file as a NUL-terminated string. */
static char *read_text(const char *path, ms_err *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        ms_fail(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > CKPT_MAX_JSON) {
        fclose(fp);
        ms_fail(err, "%s: not a regular file of at most %u bytes", path, CKPT_MAX_JSON);
        return NULL;
    }
    size_t n = (size_t)sb.st_size;
    char *buf = ms_malloc(n + 1);
    size_t got = fread(buf, 1, n, fp);
    fclose(fp);
    if (got != n) {
        free(buf);
        ms_fail(err, "%s: short read", path);
        return NULL;
    }
    buf[n] = 0;
    if (memchr(buf, 0, n)) {
        free(buf);
        ms_fail(err, "%s: not JSON (contains a NUL byte)", path);
        return NULL;
    }
    return buf;
}

static cJSON *read_json(const char *path, const char *what, ms_err *err) {
    char *text = read_text(path, err);
    if (!text) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) {
        ms_fail(err, "%s: malformed %s (not valid JSON)", path, what);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        ms_fail(err, "%s: malformed %s (expected a JSON object)", path, what);
        return NULL;
    }
    return j;
}

/* A shard name from weight_map must be a plain file name beside the index:
 * a checkpoint must not make us read (or, on output, link) files elsewhere. */
static int bad_shard_name(const char *s) {
    return !*s || strchr(s, '/') || strchr(s, '\\') || !strcmp(s, ".") || !strcmp(s, "..");
}

static int cmp_by_name(const void *a, const void *b, void *names) {
    char **nm = names;
    return strcmp(nm[*(const int *)a], nm[*(const int *)b]);
}

static int shard_number(ckpt *c, const char *name) {
    for (int s = 0; s < c->nshards; s++)
        if (!strcmp(c->shard_names[s], name)) return s;
    c->shard_names = ms_realloc(c->shard_names, (size_t)(c->nshards + 1) * sizeof(char *));
    c->shard_names[c->nshards] = ms_strdup(name);
    return c->nshards++;
}

static int parse_index(ckpt *c, ms_err *err) {
    cJSON *j = read_json(c->index_path, "index", err);
    if (!j) return -1;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(j);
        return ms_fail(err, "%s: malformed index: no \"weight_map\" object", c->index_path);
    }
    int n = cJSON_GetArraySize(wm);
    c->names = ms_calloc(n ? (size_t)n : 1, sizeof(char *));
    c->shard_of = ms_calloc(n ? (size_t)n : 1, sizeof(int));
    const cJSON *it;
    cJSON_ArrayForEach(it, wm) {
        if (!cJSON_IsString(it) || !it->string) {
            ms_fail(err, "%s: malformed index: weight_map['%s'] is not a file name", c->index_path,
                    it->string ? it->string : "?");
            cJSON_Delete(j);
            return -1;
        }
        if (bad_shard_name(it->valuestring)) {
            ms_fail(err, "%s: weight_map['%s'] = '%s' points outside the checkpoint's directory "
                         "(shards must be plain file names beside the index)",
                    c->index_path, it->string, it->valuestring);
            cJSON_Delete(j);
            return -1;
        }
        c->shard_of[c->ntensors] = shard_number(c, it->valuestring);
        c->names[c->ntensors++] = ms_strdup(it->string);
    }
    cJSON_Delete(j);
    if (c->ntensors == 0) return ms_fail(err, "%s: the index's weight_map is empty", c->index_path);
    return 0;
}

/* Decide what a directory argument holds: an index, else one safetensors file. */
static int resolve_dir(ckpt *c, const char *dir, char **file, ms_err *err) {
    static const char *const index_names[] = {"model.safetensors.index.json"};
    char *p = ckpt_path_join(dir, index_names[0]);
    struct stat sb;
    if (!stat(p, &sb)) {
        *file = p;
        return 0;
    }
    free(p);
    DIR *d = opendir(dir);
    if (!d) return ms_fail(err, "%s: cannot read the directory: %s", dir, strerror(errno));
    char *idx = NULL, *st = NULL;
    int nidx = 0, nst = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (ends_with(e->d_name, ".safetensors.index.json")) {
            if (!nidx++) idx = ms_strdup(e->d_name);
        } else if (ends_with(e->d_name, ".safetensors")) {
            if (!strcmp(e->d_name, "model.safetensors") || !nst) {
                free(st);
                st = ms_strdup(e->d_name);
            }
            nst++;
        }
    }
    closedir(d);
    (void)c;
    int rc = 0;
    if (nidx == 1) *file = ckpt_path_join(dir, idx);
    else if (nidx > 1) rc = ms_fail(err, "%s: holds %d *.safetensors.index.json files; name one", dir, nidx);
    else if (nst == 1 || (st && !strcmp(st, "model.safetensors"))) *file = ckpt_path_join(dir, st);
    else if (nst > 1)
        rc = ms_fail(err, "%s: holds %d .safetensors files and no index; name the file", dir, nst);
    else rc = ms_fail(err, "%s: no .safetensors file and no model.safetensors.index.json in it", dir);
    free(idx);
    free(st);
    return rc;
}

static int open_config(ckpt *c, ms_err *err) {
    char *p = ckpt_path_join(c->dir, "config.json");
    struct stat sb;
    if (stat(p, &sb)) {
        free(p);
        return 0;
    }
    c->config_path = p;
    c->config = read_json(p, "config.json", err);
    return c->config ? 0 : -1;
}

static int open_single(ckpt *c, const char *path, ms_err *err) {
    c->nshards = 1;
    c->shard_names = ms_calloc(1, sizeof(char *));
    c->shard_names[0] = ms_strdup(path);
    c->shard_paths = ms_calloc(1, sizeof(char *));
    c->shard_paths[0] = ms_strdup(path);
    c->shards = ms_calloc(1, sizeof(st_file));
    c->shard_open = ms_calloc(1, 1);
    if (st_open(&c->shards[0], path, err)) return -1;
    c->shard_open[0] = 1;
    const st_file *f = &c->shards[0];
    c->ntensors = f->ntensors;
    c->names = ms_calloc(f->ntensors ? (size_t)f->ntensors : 1, sizeof(char *));
    c->shard_of = ms_calloc(f->ntensors ? (size_t)f->ntensors : 1, sizeof(int));
    for (int i = 0; i < f->ntensors; i++) c->names[i] = ms_strdup(f->tensors[i].name);
    return 0;
}

static int open_index(ckpt *c, ms_err *err) {
    if (parse_index(c, err)) return -1;
    c->shard_paths = ms_calloc((size_t)c->nshards, sizeof(char *));
    for (int s = 0; s < c->nshards; s++) c->shard_paths[s] = ckpt_path_join(c->dir, c->shard_names[s]);
    c->shards = ms_calloc((size_t)c->nshards, sizeof(st_file));
    c->shard_open = ms_calloc((size_t)c->nshards, 1);
    return 0;
}

int ckpt_open(ckpt *c, const char *arg, ms_err *err) {
    memset(c, 0, sizeof *c);
    c->arg = ms_strdup(arg);
    struct stat sb;
    if (stat(arg, &sb)) {
        ms_fail(err, "%s: cannot open: %s", arg, strerror(errno));
        ckpt_close(c);
        return -1;
    }
    char *file = NULL;
    if (S_ISDIR(sb.st_mode)) {
        if (resolve_dir(c, arg, &file, err)) {
            ckpt_close(c);
            return -1;
        }
    } else {
        file = ms_strdup(arg);
    }
    c->dir = dir_of(file);
    int rc;
    if (ends_with(file, ".json")) {
        c->index_path = file;
        rc = open_index(c, err);
    } else {
        rc = open_single(c, file, err);
        free(file);
    }
    if (!rc) rc = open_config(c, err);
    if (!rc) {
        c->sorted = ms_malloc((size_t)(c->ntensors ? c->ntensors : 1) * sizeof(int));
        for (int i = 0; i < c->ntensors; i++) c->sorted[i] = i;
        qsort_r(c->sorted, (size_t)c->ntensors, sizeof(int), cmp_by_name, c->names);
        for (int i = 1; i < c->ntensors && !rc; i++)
            if (!strcmp(c->names[c->sorted[i]], c->names[c->sorted[i - 1]]))
                rc = ms_fail(err, "%s: tensor '%s' is listed twice",
                             c->index_path ? c->index_path : c->arg, c->names[c->sorted[i]]);
    }
    if (rc) ckpt_close(c);
    return rc;
}

void ckpt_close(ckpt *c) {
    if (!c) return;
    for (int s = 0; s < c->nshards; s++) {
        if (c->shard_open && c->shard_open[s]) st_close(&c->shards[s]);
        if (c->shard_names) free(c->shard_names[s]);
        if (c->shard_paths) free(c->shard_paths[s]);
    }
    for (int i = 0; i < c->ntensors; i++) free(c->names[i]);
    free(c->names);
    free(c->shard_of);
    free(c->sorted);
    free(c->shard_names);
    free(c->shard_paths);
    free(c->shards);
    free(c->shard_open);
    cJSON_Delete(c->config);
    free(c->arg);
    free(c->dir);
    free(c->index_path);
    free(c->config_path);
    memset(c, 0, sizeof *c);
}

int ckpt_find(const ckpt *c, const char *name) {
    int lo = 0, hi = c->ntensors - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int r = strcmp(c->names[c->sorted[mid]], name);
        if (!r) return c->sorted[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int ckpt_shard(ckpt *c, int s, const st_file **f, ms_err *err) {
    if (!c->shard_open[s]) {
        struct stat sb;
        if (stat(c->shard_paths[s], &sb) && errno == ENOENT)
            return ms_fail(err, "%s: shard '%s' named in the index is missing", c->index_path,
                           c->shard_paths[s]);
        if (st_open(&c->shards[s], c->shard_paths[s], err)) return -1;
        c->shard_open[s] = 1;
    }
    *f = &c->shards[s];
    return 0;
}

int ckpt_tensor(ckpt *c, const char *name, const st_file **f, const st_tensor **t, ms_err *err) {
    int i = ckpt_find(c, name);
    if (i < 0) return ms_fail(err, "%s: missing required tensor '%s'", c->arg, name);
    if (ckpt_shard(c, c->shard_of[i], f, err)) return -1;
    *t = st_find(*f, name);
    if (!*t)
        return ms_fail(err, "%s: the index puts tensor '%s' in shard '%s', which does not hold it",
                       c->index_path ? c->index_path : c->arg, name, c->shard_paths[c->shard_of[i]]);
    return 0;
}

int ckpt_config_num(const ckpt *c, const char *key, double *out) {
    if (!c->config) return 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->config, key);
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1 : 0;
        return 1;
    }
    return 0;
}

const char *ckpt_config_str(const ckpt *c, const char *key) {
    if (!c->config) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->config, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
