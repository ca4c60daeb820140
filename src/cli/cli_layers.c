/* cli_layers.c - `--layer all` of align and scramble: every MoE layer of a
 * checkpoint (a network's MoE blocks), each on its own. The writers rewrite
 * one layer at a time, so the layers are chained: layer 1 is written from the
 * input into a directory of this run's own beside OUT (mkdtemp: .OUT.layers-XXXXXX),
 * layer 2 from that into the next, ..., and the last becomes OUT; the steps between
 * and their directory are removed (nothing else is: a fixed name there deleted what
 * a symlink or another run had put under it), by a cancel (Ctrl-C) too. A shard no layer touches
 * stays one file throughout (each step hard-links it). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/progress.h"
#include "io/family.h"
#include "io/model_io.h"

int cli_layer_is_all(const char *layer) { return layer && !strcmp(layer, "all"); }

/* a step's output: a file, or a folder of shards (its files, then itself) */
static void remove_output(const char *p) {
    DIR *d = opendir(p);
    if (!d) {
        unlink(p);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            char *q = ckpt_path_join(p, de->d_name);
            unlink(q);
            free(q);
        }
    closedir(d);
    rmdir(p);
}

/* every MoE layer prefix of path (the family's, else moescope's own names) */
static int layer_list(const char *path, char ***out, int *n, ms_err *err) {
    family_layer *ls = NULL;
    int nl = 0;
    *out = NULL, *n = 0;
    if (moe_find_layers(path, cli_overrides()->family, &ls, &nl, err)) return -1;
    if (nl > MOE_MAX_LAYERS_EACH) {
        family_layers_free(ls, nl);
        return ms_fail(err, "%s holds %d MoE layers: --layer all takes at most %d (each is written in turn); "
                            "name one with --layer",
                       path, nl, MOE_MAX_LAYERS_EACH);
    }
    *out = ms_malloc((size_t)(nl ? nl : 1) * sizeof(char *));
    for (int i = 0; i < nl; i++) (*out)[i] = ms_strdup(ls[i].prefix);
    *n = nl;
    family_layers_free(ls, nl);
    return 0;
}

/* A directory of this run's own for the steps between: beside OUT (same file system,
 * so a shard is hard-linked, not copied), under a unique name (mkdtemp), so nothing
 * there is anyone else's; NULL with err set when it cannot be made. */
static char *steps_dir(const char *out, ms_err *err) {
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    int dl = slash ? (int)(slash - out) + 1 : 0;
    size_t cap = strlen(out) + 32;
    char *t = ms_malloc(cap);
    snprintf(t, cap, "%.*s.%s.layers-XXXXXX", dl, out, base);
    if (!mkdtemp(t)) {
        ms_fail(err, "%s: cannot make a directory for the steps between the layers beside it (%s)", out,
                strerror(errno));
        free(t);
        return NULL;
    }
    return t;
}

int cli_each_layer(const char *layers_of, const char *src0, const char *out, cli_layer_step step, void *ctx) {
    char **layers = NULL;
    int n = 0, rc = 0;
    ms_err err;
    if (layer_list(layers_of, &layers, &n, &err)) return cli_error("%s", err.msg);
    if (!n) rc = cli_error("%s: no MoE layer", layers_of);
    char *tmp = n > 1 && !rc ? steps_dir(out, &err) : NULL;
    if (n > 1 && !rc && !tmp) rc = cli_error("%s", err.msg);
    // Ctrl-C removes the directory with the steps in it: this run made it and all it holds
    int slot = tmp ? cancel_register(tmp, 1) : -1;
    size_t ol = (tmp ? strlen(tmp) : 0) + strlen(out) + 32;
    char *prev = NULL;
    for (int i = 0; i < n && !rc; i++) {
        char *dst = ms_malloc(ol);
        if (i == n - 1) snprintf(dst, ol, "%s", out);
        else snprintf(dst, ol, "%s/layer-%d", tmp, i); // only this run's steps are ever removed
        char where[48]; // the line says which layer the phases are of
        snprintf(where, sizeof where, "layer %d/%d", i + 1, n);
        progress_context(n > 1 ? where : NULL);
        rc = step(ctx, i, layers[i], prev ? prev : src0, dst);
        if (prev) remove_output(prev);
        free(prev);
        prev = dst;
        if (rc && i < n - 1) remove_output(dst);
    }
    progress_context(NULL);
    free(prev);
    if (slot >= 0) cancel_unregister(slot);
    if (tmp) rmdir(tmp);
    free(tmp);
    for (int i = 0; i < n; i++) free(layers[i]);
    free(layers);
    return rc;
}
