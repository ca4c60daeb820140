/* cli_defaults.c - what the commands assume when a newcomer leaves something
 * out, and what they suggest when the arguments look swapped: one rule for
 * the evaluation set (eval.safetensors beside A), and a hint after a failed
 * load when the "checkpoint" is an evaluation set or a data file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"

/* the folder a checkpoint path sits in: "d/seed1.safetensors" -> "d/", "d/seed1"
 * (a folder) -> "d/", "d/seed1/model.safetensors.index.json" -> "d/" (the
 * index names its folder), "seed1.safetensors" -> "" */
static void checkpoint_parent(const char *a, char *out, size_t cap) {
    char p[4096];
    snprintf(p, sizeof p, "%s", a);
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/') p[--l] = 0;
    const char *idx = ".safetensors.index.json";
    size_t il = strlen(idx);
    if (l > il && !strcmp(p + l - il, idx)) { /* the index: its folder is the checkpoint */
        char *s = strrchr(p, '/');
        if (s) *s = 0;
        else snprintf(p, sizeof p, ".");
    }
    const char *s = strrchr(p, '/');
    if (!s) snprintf(out, cap, "%s", !strcmp(p, ".") ? "../" : "");
    else snprintf(out, cap, "%.*s", (int)(s - p) + 1, p);
}

const char *cli_default_eval(const char *a_path, char *buf, size_t cap) {
    char dir[4096];
    checkpoint_parent(a_path, dir, sizeof dir);
    snprintf(buf, cap, "%seval.safetensors", dir);
    struct stat st;
    return stat(buf, &st) == 0 && S_ISREG(st.st_mode) ? buf : NULL;
}

const char *cli_eval_or_default(const char *e_path, const char *a_path, char *buf, size_t cap) {
    if (e_path) return e_path;
    const char *d = cli_default_eval(a_path, buf, cap);
    struct stat st;
    if (!d && !stat(buf, &st) && !S_ISREG(st.st_mode) && cli_reports_here()) { // never opened: a FIFO would block
        char *p = ms_escaped(buf);
        fprintf(stderr, "moescope: note: %s beside %s is %s, not a regular file: not used as the evaluation set\n", p,
                a_path, af_node_kind(st.st_mode));
        free(p);
    }
    if (d && cli_reports_here())
        fprintf(stderr, "moescope: using the evaluation set %s (beside %s; --eval E chooses another)\n", d, a_path);
    return d;
}

/* What a safetensors file at path is, when it is not a checkpoint: "an
 * evaluation set" (inputs, a network's input_ids, a ViT's pixel_values) or "a data set"
 * (labels or pixels without a layer); NULL for anything else. */
static const char *not_a_checkpoint(const char *path) {
    st_file f;
    ms_err e;
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode) || st_open(&f, path, &e)) return NULL;
    const char *what = NULL;
    if (st_find(&f, "inputs") || st_find(&f, "input_ids") || st_find(&f, "pixel_values")) what = "an evaluation set";
    else if (st_find(&f, "labels") || st_find(&f, "pixels")) what = "a data set";
    for (int i = 0; what && i < f.ntensors; i++)
        if (strstr(f.tensors[i].name, "gate") || strstr(f.tensors[i].name, "router")) what = NULL; /* a layer after all */
    st_close(&f);
    return what;
}

void cli_hint_swapped(const char *cmd, const char *a, const char *b, const char *e_path) {
    const char *ck[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const char *what = ck[i] ? not_a_checkpoint(ck[i]) : NULL;
        if (!what) continue;
        if (e_path && !not_a_checkpoint(e_path)) { /* the checkpoint and the set traded places */
            char fix[8192];
            const char *sp = cmd[0] ? " " : ""; /* "": the explorer */
            if (!b) snprintf(fix, sizeof fix, "moescope %s%s%s --eval %s", cmd, sp, e_path, a);
            else snprintf(fix, sizeof fix, "moescope %s%s%s %s --eval %s", cmd, sp, i ? a : e_path, i ? e_path : b, ck[i]);
            fprintf(stderr, "moescope: hint: %s is %s and %s looks like the checkpoint: checkpoints come first, "
                            "the set after --eval (%s)\n", ck[i], what, e_path, fix);
        } else
            fprintf(stderr, "moescope: hint: %s is %s, not a checkpoint: checkpoints come first, an evaluation set "
                            "after --eval (moescope %s%s--help)\n", ck[i], what, cmd, cmd[0] ? " " : "");
        return;
    }
}
