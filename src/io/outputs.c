/* outputs.c - every output path checked before the computation (see outputs.h). */
#include "io/outputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"

/* "--json out.json" or "out.json", for messages */
static const char *who(const out_spec *o, char *buf, size_t cap) {
    if (o->label && *o->label) snprintf(buf, cap, "%s %s", o->label, o->path);
    else snprintf(buf, cap, "%s", o->path);
    return buf;
}

/* The directory path's entry is created in (trailing slashes ignored), malloc'd. */
static char *parent_dir(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    while (n > 0 && path[n - 1] != '/') n--;
    if (n == 0) return ms_strdup(".");
    while (n > 1 && path[n - 1] == '/') n--;
    char *d = ms_malloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

static int dir_is_empty(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    return empty;
}

/* The output itself: its kind, its directory. */
static int check_node(const out_spec *o, const char *w, ms_err *err) {
    struct stat st;
    int exists = stat(o->path, &st) == 0;
    size_t n = strlen(o->path);
    if (o->kind == OUT_FILE) {
        if ((exists && S_ISDIR(st.st_mode)) || o->path[n - 1] == '/')
            return ms_fail(err, "%s: is a directory; a file name is needed here (such as %s%sNAME)", w,
                           o->path, o->path[n - 1] == '/' ? "" : "/");
        if (af_writes_in_place(o->path)) return 0; // a device, a FIFO, our own descriptor
        if (exists && !S_ISREG(st.st_mode))
            return ms_fail(err, "%s: is %s; refusing to write into it (outputs are regular files, "
                                "character devices such as /dev/null, or FIFOs)",
                           w, af_node_kind(st.st_mode));
    } else if (exists) {
        if (!S_ISDIR(st.st_mode))
            return ms_fail(err, "%s: exists and is not a directory (a sharded checkpoint is written as "
                                "a directory)", w);
        if (!dir_is_empty(o->path))
            return ms_fail(err, "%s: exists and is not empty; remove it or choose another output", w);
    }
    char *dir = parent_dir(o->path);
    struct stat ds;
    int rc = 0;
    if (stat(dir, &ds) != 0)
        rc = ms_fail(err, "%s: the directory '%s' does not exist", w, dir);
    else if (!S_ISDIR(ds.st_mode))
        rc = ms_fail(err, "%s: '%s' is not a directory", w, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = ms_fail(err, "%s: cannot create files in '%s': %s", w, dir, strerror(errno));
    free(dir);
    return rc;
}

/* The checkpoint folder an input argument stands for: a directory argument, the
 * folder of an index (shards, config.json beside it), else NULL (a single file,
 * whose neighbours are the user's other files). malloc'd realpath. */
static char *input_folder(const char *in, const struct stat *st) {
    size_t n = strlen(in);
    if (S_ISDIR(st->st_mode)) return realpath(in, NULL);
    if (n > 5 && !strcmp(in + n - 5, ".json")) {
        char *d = parent_dir(in), *r = realpath(d, NULL);
        free(d);
        return r;
    }
    return NULL;
}

/* dest (an absolute path) is folder or lies inside it */
static int is_inside(const char *dest, const char *folder) {
    size_t k = strlen(folder);
    if (!strcmp(folder, "/")) return 1;
    return !strncmp(dest, folder, k) && (dest[k] == '\0' || dest[k] == '/');
}

static int same_node(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* an existing output that is one of the files in folder (by any name: a symlink
 * into a Hugging Face cache's blobs, a hard link): that file's name, else 0 */
static int folder_holds(const char *folder, const struct stat *so, char *name, size_t cap) {
    DIR *d = opendir(folder);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        // stat follows the entry's symlink; it never opens (a FIFO does not block it)
        if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode) && same_node(&st, so)) {
            snprintf(name, cap, "%s", e->d_name);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

/* The output against one input argument. */
static int check_input(const out_spec *o, const char *w, const char *in, ms_err *err) {
    struct stat si, so;
    if (!in || stat(in, &si) != 0) return 0;
    int exists = stat(o->path, &so) == 0;
    if (exists && same_node(&si, &so) && !S_ISCHR(so.st_mode))
        return ms_fail(err, "%s: refusing to overwrite the input %s", w, in);
    char *folder = input_folder(in, &si);
    int rc = 0;
    if (!folder) { // a single file: it (above) and the config.json read beside it
        char *d = parent_dir(in), *cfg = ms_malloc(strlen(d) + 16);
        sprintf(cfg, "%s/config.json", d);
        struct stat sc;
        if (exists && stat(cfg, &sc) == 0 && same_node(&sc, &so))
            rc = ms_fail(err, "%s: refusing to overwrite %s, read with the input %s", w, cfg, in);
        free(d);
        free(cfg);
        return rc;
    }
    char *dest = af_destination(o->path), name[256];
    if (is_inside(dest, folder))
        rc = ms_fail(err, "%s: is inside the folder of the input checkpoint %s; writing there could "
                          "replace its files or change what it loads as: choose another directory",
                     w, in);
    else if (exists && !S_ISCHR(so.st_mode) && folder_holds(folder, &so, name, sizeof name))
        rc = ms_fail(err, "%s: is the file '%s' of the input checkpoint %s (another name for it); "
                          "refusing to overwrite it", w, name, in);
    free(dest);
    free(folder);
    return rc;
}

/* path made absolute through its deepest existing ancestor, the rest (not yet
 * made) appended with its "." and ".." taken as mkdir -p takes them (a made
 * directory is no symlink), then resolved again; malloc'd: where a directory
 * made with its parents would be */
static char *resolve_loose(const char *path) {
    char *real = realpath(path, NULL); // there already (a symlink to it resolved)
    if (real) return real;
    size_t n = strlen(path), k = n;
    char *p = ms_strdup(path);
    while (!real) {
        while (k > 0 && p[k - 1] == '/') k--; // the component before the trailing slashes
        while (k > 0 && p[k - 1] != '/') k--;
        char save = p[k];
        p[k] = 0;
        real = realpath(k ? p : ".", NULL);
        p[k] = save;
        if (!real && k == 0) { // nothing of it exists, not even "." (a removed cwd)
            free(p);
            return ms_strdup(path);
        }
    }
    size_t cap = strlen(real) + (n - k) + 2, len = strlen(real);
    char *out = ms_malloc(cap);
    memcpy(out, real, len + 1);
    free(real);
    int dotdot = 0;
    char *tok = NULL;
    for (char *c = strtok_r(p + k, "/", &tok); c; c = strtok_r(NULL, "/", &tok)) {
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) { // up from a directory mkdir made: its parent, as written
            dotdot = 1;
            while (len > 1 && out[len - 1] != '/') len--;
            if (len > 1) len--;
            out[len] = 0;
            continue;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len > 1 ? "/" : "", c);
    }
    free(p);
    if (!dotdot) return out;
    char *again = resolve_loose(out); // back in existing directories: their symlinks count
    free(out);
    return again;
}

int outputs_check_dir(const char *dir, const char *label, const char *const *inputs, int nin, ms_err *err) {
    char *dest = resolve_loose(dir);
    int rc = 0;
    for (int i = 0; i < nin && !rc; i++) {
        struct stat si;
        if (!inputs[i] || stat(inputs[i], &si)) continue;
        char *folder = input_folder(inputs[i], &si);
        if (folder && is_inside(dest, folder))
            rc = ms_fail(err, "%s%s%s: is inside the folder of the input checkpoint %s; writing there could "
                              "replace its files or change what it loads as: choose another directory",
                         label ? label : "", label ? " " : "", dir, inputs[i]);
        free(folder);
    }
    free(dest);
    return rc;
}

int outputs_check(const out_spec *outs, int nout, const char *const *inputs, int nin, ms_err *err) {
    const char **paths = ms_calloc((size_t)(nout > 0 ? nout : 1), sizeof(char *));
    const char **labels = ms_calloc((size_t)(nout > 0 ? nout : 1), sizeof(char *));
    int rc = 0;
    for (int i = 0; i < nout && !rc; i++) {
        const out_spec *o = &outs[i];
        if (!o->path) continue;
        char w[600];
        who(o, w, sizeof w);
        if (!*o->path) rc = ms_fail(err, "%s: empty output file name", o->label ? o->label : "output");
        for (int k = 0; k < nin && !rc; k++) rc = check_input(o, w, inputs[k], err);
        if (!rc) rc = check_node(o, w, err);
        paths[i] = o->path;
        labels[i] = o->label ? o->label : "output";
    }
    if (!rc && af_check_distinct(paths, labels, nout, err)) rc = -2;
    free(paths);
    free(labels);
    return rc;
}

int outputs_check_one(const char *path, const char *label, out_kind kind, const char *const *inputs,
                      int nin, ms_err *err) {
    out_spec o = {path, label, kind};
    return outputs_check(&o, 1, inputs, nin, err);
}

int outputs_check_not_input(const char *path, const char *label, const char *const *inputs, int nin, ms_err *err) {
    out_spec o = {path, label, OUT_FILE};
    char w[600];
    who(&o, w, sizeof w);
    for (int k = 0; k < nin; k++)
        if (check_input(&o, w, inputs[k], err)) return -1;
    return 0;
}
