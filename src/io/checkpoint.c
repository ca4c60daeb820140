/* checkpoint.c - a checkpoint argument (file, sharded index, directory) and
 * its config.json; shards mapped on demand. See checkpoint.h. */
#define _GNU_SOURCE /* qsort_r */
#include "io/checkpoint.h"
#include "io/config_json.h"
#include "io/files_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *ckpt_path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = ms_malloc(a + b + 2);
    memcpy(p, dir, a);
    if (a == 0 || dir[a - 1] != '/') p[a++] = '/'; /* "dir/" + "x": one slash */
    memcpy(p + a, name, b + 1);
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

static const char *node_kind(mode_t m) {
    return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
           : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

char *ckpt_read_file(const char *path, size_t cap, size_t *len, ms_err *err) {
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer; the kind is
    // checked on the descriptor (fstat), so a name swapped after a stat cannot block
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        ms_fail(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    int bad = fstat(fd, &sb) ? errno : 0;
    if (bad || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > cap) {
        close(fd);
        if (bad) ms_fail(err, "%s: cannot stat: %s", path, strerror(bad));
        else if (!S_ISREG(sb.st_mode))
            ms_fail(err, "%s: is %s; refusing to read it (a regular file is needed)", path,
                    node_kind(sb.st_mode));
        else
            ms_fail(err, "%s: %lld bytes, over the %zu-byte limit for this file", path,
                    (long long)sb.st_size, cap);
        return NULL;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    char *buf = ms_malloc(n + 1);
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            ms_fail(err, "%s: %s while reading", path, r < 0 ? strerror(errno) : "the file shrank");
            close(fd);
            free(buf);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Read a whole (regular, bounded) JSON file as a NUL-terminated string. */
static char *read_text(const char *path, ms_err *err) {
    size_t n;
    char *buf = ckpt_read_file(path, CKPT_MAX_JSON, &n, err);
    if (buf && memchr(buf, 0, n)) {
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
    if (cfg_unique_keys(j, path, err)) {
        cJSON_Delete(j);
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

/* By shard name, then by tensor number (so a run's first entry is where the
 * name first appears). */
static int cmp_by_shard(const void *a, const void *b, void *vals) {
    const char **v = vals;
    int x = *(const int *)a, y = *(const int *)b, r = strcmp(v[x], v[y]);
    return r ? r : (x > y) - (x < y);
}

/* c->shard_of and c->shard_names from the shard name of each tensor (vals,
 * n of them): shards numbered in the order they first appear, from one sort of
 * the tensors by shard name, O(n log n) (a search per tensor was quadratic:
 * 80,000 shard names took half a minute). */
static int number_shards(ckpt *c, const char **vals, int n, ms_err *err) {
    int *idx = ms_malloc((size_t)n * sizeof(int)), *group = ms_malloc((size_t)n * sizeof(int));
    unsigned char *first = ms_calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) idx[i] = i;
    qsort_r(idx, (size_t)n, sizeof(int), cmp_by_shard, vals);
    int ngroups = 0;
    for (int k = 0; k < n; k++) {
        if (!k || strcmp(vals[idx[k]], vals[idx[k - 1]])) first[idx[k]] = 1, ngroups++;
        group[idx[k]] = ngroups - 1;
    }
    int rc = 0;
    if (ngroups > CKPT_MAX_SHARDS) {
        rc = ms_fail(err, "%s: the index names %d shard files, at most %d supported", c->index_path,
                     ngroups, CKPT_MAX_SHARDS);
    } else {
        int *id = ms_malloc((size_t)(ngroups ? ngroups : 1) * sizeof(int));
        c->shard_names = ms_calloc((size_t)(ngroups ? ngroups : 1), sizeof(char *));
        for (int i = 0; i < n; i++) {
            if (first[i]) {
                id[group[i]] = c->nshards;
                c->shard_names[c->nshards++] = ms_strdup(vals[i]);
            }
            c->shard_of[i] = id[group[i]];
        }
        free(id);
    }
    free(idx);
    free(group);
    free(first);
    return rc;
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
    if (n > CKPT_MAX_INDEX_TENSORS) {
        cJSON_Delete(j);
        return ms_fail(err, "%s: the index lists %d tensors, at most %d supported", c->index_path,
                       n, CKPT_MAX_INDEX_TENSORS);
    }
    c->names = ms_calloc(n ? (size_t)n : 1, sizeof(char *));
    c->shard_of = ms_calloc(n ? (size_t)n : 1, sizeof(int));
    const char **vals = ms_calloc(n ? (size_t)n : 1, sizeof(char *)); // borrowed from j
    const cJSON *it;
    int rc = 0;
    cJSON_ArrayForEach(it, wm) {
        if (!cJSON_IsString(it) || !it->string) {
            rc = ms_fail(err, "%s: malformed index: weight_map['%s'] is not a file name",
                         c->index_path, it->string ? it->string : "?");
            break;
        }
        if (bad_shard_name(it->valuestring)) {
            rc = ms_fail(err, "%s: weight_map['%s'] = '%s' points outside the checkpoint's "
                              "directory (shards must be plain file names beside the index)",
                         c->index_path, it->string, it->valuestring);
            break;
        }
        vals[c->ntensors] = it->valuestring;
        c->names[c->ntensors++] = ms_strdup(it->string);
    }
    if (!rc) rc = number_shards(c, vals, c->ntensors, err);
    free(vals);
    cJSON_Delete(j);
    if (!rc && c->ntensors == 0) return ms_fail(err, "%s: the index's weight_map is empty", c->index_path);
    return rc;
}

/* What a .safetensors file is when a directory is searched: a checkpoint
 * (an MoE layer: a gate or router of two or more experts), an evaluation set
 * (it holds "inputs", a network's "input_ids" or a ViT's "pixel_values"), or something else (a data set, a dense model, a cost
 * matrix): only checkpoints are candidates. Unreadable: a candidate, with its
 * own error later. */
enum { SF_CHECKPOINT, SF_EVALSET, SF_OTHER };
static int file_kind(const char *path) {
    st_file f;
    ms_err e;
    if (st_open(&f, path, &e)) return SF_CHECKPOINT;
    int kind = st_find(&f, "inputs") || st_find(&f, "input_ids") || st_find(&f, "pixel_values") ? SF_EVALSET : SF_OTHER;
    for (int i = 0; kind == SF_OTHER && i < f.ntensors; i++) {
        const st_tensor *t = &f.tensors[i];
        if ((ends_with(t->name, "gate.weight") || strstr(t->name, "router")) && t->ndim == 2 && t->shape[0] >= 2)
            kind = SF_CHECKPOINT;
    }
    st_close(&f);
    return kind;
}

/* What the sub-directory dir/name holds, in words for a list of candidates
 * (NULL: no checkpoint): "sharded" (an index: one checkpoint), the one
 * checkpoint file it holds ("model.safetensors"), "4 checkpoints" or "2
 * checkpoint folders" (a folder of seeds, not itself one checkpoint). *one:
 * it is one checkpoint; example: a path inside it that is one (or "" when it
 * is one itself), for the suggestion. */
static const char *subdir_checkpoint(const char *dir, const char *name, char *words, size_t cap, int *one,
                                     char *example, size_t ecap) {
    char *sub = ckpt_path_join(dir, name);
    struct stat sb;
    int nfile = 0, nfold = 0, idx = 0;
    char first_file[256] = "", first_fold[256] = "";
    DIR *d = !stat(sub, &sb) && S_ISDIR(sb.st_mode) ? opendir(sub) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *nm = e->d_name;
        if (nm[0] == '.') continue;
        if (ends_with(nm, ".safetensors.index.json")) {
            idx = 1;
        } else if (ends_with(nm, ".safetensors")) {
            char *p = ckpt_path_join(sub, nm);
            if (file_kind(p) == SF_CHECKPOINT && (!nfile++ || strcmp(nm, first_file) < 0))
                snprintf(first_file, sizeof first_file, "%s", nm);
            free(p);
        } else {
            char *p = ckpt_path_join(sub, nm), *q = ckpt_path_join(p, "model.safetensors.index.json"),
                 *r = ckpt_path_join(p, "model.safetensors");
            struct stat s2;
            if ((!stat(q, &s2) || !stat(r, &s2)) && (!nfold++ || strcmp(nm, first_fold) < 0))
                snprintf(first_fold, sizeof first_fold, "%s", nm);
            free(p);
            free(q);
            free(r);
        }
    }
    if (d) closedir(d);
    free(sub);
    *one = idx || nfile == 1;
    example[0] = 0;
    if (idx) return snprintf(words, cap, "sharded"), words;
    if (nfile == 1) return snprintf(words, cap, "%s", first_file), words;
    if (nfile > 1) {
        snprintf(example, ecap, "%s", first_file);
        return snprintf(words, cap, "%d checkpoints", nfile), words;
    }
    if (nfold) {
        snprintf(example, ecap, "%s", first_fold);
        return snprintf(words, cap, "%d checkpoint folder%s", nfold, nfold > 1 ? "s" : ""), words;
    }
    return NULL;
}

/* What a directory holds: indexes, checkpoint files (model.safetensors
 * preferred as the file), evaluation sets, other files, and sub-directories
 * holding checkpoints; every candidate named (sorted, "seed1/ (sharded)",
 * "dense4/ (4 checkpoints)") with a path inside the directory that is one
 * checkpoint, for the suggestion. */
typedef struct {
    char *label, *example;
} scan_cand;

typedef struct {
    int nidx, nst, nev, nsub, ncand, nother, npool;
    int hf_other; /* model.safetensors is there, but holds no MoE layer of two or more experts */
    char *idx, *st;
    scan_cand *cand;
    char other[256]; /* the files passed over (neither checkpoints nor evaluation sets) */
} dir_scan;

static void scan_add(dir_scan *s, const char *name, const char *kind, const char *example) {
    char buf[600];
    if (kind) snprintf(buf, sizeof buf, "%.500s/ (%s)", name, kind);
    else snprintf(buf, sizeof buf, "%.500s", name);
    s->cand = ms_realloc(s->cand, (size_t)(s->ncand + 1) * sizeof(scan_cand));
    s->cand[s->ncand].label = ms_strdup(buf);
    s->cand[s->ncand++].example = example[0] ? ckpt_path_join(name, example) : ms_strdup(name);
}

static int cmp_cand(const void *a, const void *b) {
    return strcmp(((const scan_cand *)a)->label, ((const scan_cand *)b)->label);
}

static void scan_file(const char *dir, const char *nm, dir_scan *s) {
    char *p = ckpt_path_join(dir, nm);
    int kind = file_kind(p);
    free(p);
    if (kind == SF_EVALSET) {
        s->nev++;
    } else if (kind == SF_OTHER) {
        s->hf_other |= !strcmp(nm, "model.safetensors");
        size_t l = strlen(s->other), k = strlen(nm);
        if (l + k + 8 < sizeof s->other) { /* "a, b", then "..." once full */
            if (l) memcpy(s->other + l, ", ", 2), l += 2;
            memcpy(s->other + l, nm, k + 1);
        } else if (!strstr(s->other, "...") && l + 6 < sizeof s->other) {
            memcpy(s->other + l, ", ...", 6);
        }
        s->nother++;
    } else {
        if (!strcmp(nm, "model.safetensors") || !s->nst) {
            free(s->st);
            s->st = ms_strdup(nm);
        }
        s->nst++;
        scan_add(s, nm, NULL, "");
    }
}

static int scan_dir(const char *dir, dir_scan *s, ms_err *err) {
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d) return ms_fail(err, "%s: cannot read the directory: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        char words[300], example[300];
        int one;
        if (nm[0] == '.') continue;
        if (ends_with(nm, ".safetensors.index.json")) {
            if (!s->nidx++) s->idx = ms_strdup(nm);
            scan_add(s, nm, NULL, "");
        } else if (ends_with(nm, ".safetensors")) {
            scan_file(dir, nm, s);
        } else if (subdir_checkpoint(dir, nm, words, sizeof words, &one, example, sizeof example)) {
            s->nsub++;
            s->npool += !one;
            scan_add(s, nm, words, example);
        }
    }
    closedir(d);
    if (s->ncand > 1) qsort(s->cand, (size_t)s->ncand, sizeof(scan_cand), cmp_cand);
    return 0;
}

static void scan_free(dir_scan *s) {
    for (int i = 0; i < s->ncand; i++) {
        free(s->cand[i].label);
        free(s->cand[i].example);
    }
    free(s->cand);
    free(s->idx);
    free(s->st);
}

/* "a, b, c" of the candidates (at most 12, then "...") */
static void join_candidates(const dir_scan *s, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->ncand && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", i < 12 ? s->cand[i].label : "...");
}

/* Several candidates: each listed with what it is, a path that names one
 * checkpoint suggested, the files passed over named. */
static int ambiguous_dir(const char *dir, const dir_scan *s, ms_err *err) {
    char list[1024], *ex = ckpt_path_join(dir, s->cand[0].example), other[400] = "";
    join_candidates(s, list, sizeof list);
    if (s->nother)
        snprintf(other, sizeof other, "; passed over (no MoE layer of two or more experts): %s", s->other);
    int rc;
    if (s->npool == s->ncand) /* only folders of seeds */
        rc = ms_fail(err, "%s: a folder of checkpoint folders, not one checkpoint: %s; name one checkpoint (e.g. %s)%s",
                     dir, list, ex, other);
    else
        rc = ms_fail(err, "%s: holds %d candidate checkpoint%s: %s; name one (e.g. %s)%s", dir, s->ncand,
                     s->ncand > 1 ? "s" : "", list, ex, other);
    free(ex);
    return rc;
}

/* Decide what a directory argument holds: model.safetensors.index.json, else
 * the one index, model.safetensors, or the one checkpoint file in it.
 * Evaluation sets and files without an MoE layer are passed over; several
 * candidates (files, indexes, sub-directories holding checkpoints) are listed
 * in the error, to name one. */
static int resolve_dir(const char *dir, char **file, ms_err *err) {
    char *p = ckpt_path_join(dir, "model.safetensors.index.json");
    struct stat sb;
    if (!stat(p, &sb)) {
        *file = p;
        return 0;
    }
    free(p);
    dir_scan s;
    if (scan_dir(dir, &s, err)) return -1;
    int rc = 0, hf = s.st && !strcmp(s.st, "model.safetensors");
    if (s.ncand == 1 && s.nidx == 1) {
        *file = ckpt_path_join(dir, s.idx);
    } else if (s.ncand == 1 && s.nst == 1) {
        *file = ckpt_path_join(dir, s.st);
    } else if (hf && !s.nidx) { // the Hugging Face name wins over other files
        *file = ckpt_path_join(dir, s.st);
    } else if (s.ncand > 0) {
        rc = ambiguous_dir(dir, &s, err);
    } else if (s.hf_other) { // the Hugging Face name: what it lacks is for its loader to say
        *file = ckpt_path_join(dir, "model.safetensors");
    } else {
        rc = ms_fail(err, "%s: no checkpoint in it (no model .safetensors file, no "
                          "*.safetensors.index.json, no sub-directory holding one)%s%s%s",
                     dir, s.nev ? "; its .safetensors files are evaluation sets" : "",
                     s.nother ? "; passed over (no MoE layer of two or more experts): " : "", s.other);
    }
    scan_free(&s);
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
    files_read_note(path); // reports hash the files that were read
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
        if (resolve_dir(arg, &file, err)) {
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

int ckpt_output_is_dir(const char *src, const char *out) {
    size_t n = strlen(out);
    struct stat sb;
    if (n && out[n - 1] == '/') return 1;
    if (!stat(out, &sb) && S_ISDIR(sb.st_mode)) return 1;
    // a folder (config.json and weights) written to a name without the file
    // suffix is a folder again: "scramble A_dir -o B_dir"
    int suffixed = n >= 12 && !strcmp(out + n - 12, ".safetensors");
    if (!suffixed && !stat(src, &sb) && S_ISDIR(sb.st_mode)) return 1;
    ckpt c;
    if (ckpt_open(&c, src, NULL)) return 0;
    int sharded = ckpt_sharded(&c);
    ckpt_close(&c);
    return sharded;
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
        files_read_note(c->shard_paths[s]); // reports hash the files that were read
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
const st_file *ckpt_layer_shard(ckpt *c, const char *layer) {
    size_t l = strlen(layer);
    for (int k = 0; k < c->ntensors; k++) {
        const char *nm = c->names[k];
        const st_file *f;
        const st_tensor *te;
        if (strncmp(nm, layer, l) || nm[l] != '.' || !strstr(nm + l, "gate")) continue;
        return ckpt_tensor(c, nm, &f, &te, NULL) ? NULL : f;
    }
    return NULL;
}

const char *ckpt_unmapped_under(const ckpt *c, const char *prefix) {
    size_t len = strlen(prefix);
    // the names under prefix are one run of the sorted names: find its start
    int lo = 0, hi = c->ntensors;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(c->names[c->sorted[mid]], prefix) < 0) lo = mid + 1;
        else hi = mid;
    }
    for (int k = lo; k < c->ntensors && !strncmp(c->names[c->sorted[k]], prefix, len); k++) {
        int s = c->shard_of[c->sorted[k]];
        if (!c->shard_open[s]) return c->shard_names[s];
    }
    return NULL;
}
