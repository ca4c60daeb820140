/* evalset.c - evaluation sets: `inputs` (N,d) and either `labels` (N) for
 * classification or `targets` (N,C) for regression, or `inputs` alone: the
 * hidden states captured in front of a real model's MoE block, for layer-only
 * evaluation (no loss against a head, only the block's outputs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"
#include "io/evalset.h"
#include "io/family.h"
#include "io/safetensors.h"

static int load_from(evalset *e, const st_file *f, ms_err *err) {
    const char *path = f->path;
    const st_tensor *ti = st_find(f, "inputs");
    const st_tensor *tl = st_find(f, "labels");
    const st_tensor *tt = st_find(f, "targets");
    if (!ti) return ms_fail(err, "%s: missing tensor 'inputs' (the evaluation inputs, [N, d])", path);
    if (ti->ndim != 2)
        return ms_fail(err, "%s: tensor 'inputs' should be 2-D [N, d], has %d dimensions", path,
                       ti->ndim);
    if (tl && tt)
        return ms_fail(err, "%s: has both 'labels' and 'targets'; an evaluation set holds "
                            "exactly one of them",
                       path);
    int64_t N = ti->shape[0], d = ti->shape[1];
    if (N < 1 || d < 1 || N > (1 << 30) || d > (1 << 20))
        return ms_fail(err, "%s: tensor 'inputs' has an unusable shape [%lld, %lld]", path,
                       (long long)N, (long long)d);
    e->N = (int)N;
    e->d = (int)d;
    e->path = ms_strdup(path);
    e->inputs = ms_malloc((size_t)N * (size_t)d * sizeof(float)); // (N, d)
    if (st_read_f32(f, ti, e->inputs, err)) return -1;
    if (tl) {
        if (tl->ndim != 1 || tl->shape[0] != N)
            return ms_fail(err, "%s: tensor 'labels' should have shape [%lld] (one per input), "
                                "has %d dimension(s)%s",
                           path, (long long)N, tl->ndim,
                           tl->ndim == 1 ? " of another length" : "");
        if (tl->dtype != ST_I64 && tl->dtype != ST_I32)
            return ms_fail(err, "%s: tensor 'labels' must be I64 or I32, is %s", path,
                           tl->dtype_name);
        int64_t *tmp = ms_malloc((size_t)N * sizeof(int64_t));
        if (st_read_i64(f, tl, tmp, err)) {
            free(tmp);
            return -1;
        }
        e->labels = ms_malloc((size_t)N * sizeof(int32_t)); // (N)
        int64_t maxl = -1;
        for (int64_t i = 0; i < N; i++) {
            if (tmp[i] < 0 || tmp[i] > (1 << 24)) {
                int rc = ms_fail(err, "%s: tensor 'labels': label %lld at index %lld is out of "
                                      "range (labels are class indices 0..C-1)",
                                 path, (long long)tmp[i], (long long)i);
                free(tmp);
                return rc;
            }
            e->labels[i] = (int32_t)tmp[i];
            if (tmp[i] > maxl) maxl = tmp[i];
        }
        free(tmp);
        e->C = (int)(maxl + 1);
    } else if (tt) {
        if (tt->ndim != 2 || tt->shape[0] != N || tt->shape[1] < 1)
            return ms_fail(err, "%s: tensor 'targets' should have shape [%lld, C] (one row per "
                                "input)",
                           path, (long long)N);
        e->C = (int)tt->shape[1];
        e->targets = ms_malloc((size_t)N * (size_t)e->C * sizeof(float)); // (N, C)
        if (st_read_f32(f, tt, e->targets, err)) return -1;
    }
    return 0;
}

int evalset_load(evalset *e, const char *path, ms_err *err) {
    memset(e, 0, sizeof *e);
    st_file f;
    if (st_open(&f, path, err)) return -1;
    int rc = load_from(e, &f, err);
    const char *cl = st_meta(&f, "capture.layer");
    if (!rc && cl) e->capture_layer = ms_strdup(cl);
    st_close(&f);
    if (rc) evalset_free(e);
    return rc;
}

void evalset_free(evalset *e) {
    if (!e) return;
    free(e->path);
    free(e->inputs);
    free(e->labels);
    free(e->targets);
    free(e->capture_layer);
    memset(e, 0, sizeof *e);
}

long evalset_pick(long N, long m, long u) { return u * N / m; } // N, m < 2^31: no overflow

static char *dup_or_null(const char *s) { return s ? ms_strdup(s) : NULL; }

void evalset_subset(const evalset *E, int m, evalset *out) {
    *out = *E;
    out->N = m;
    out->path = dup_or_null(E->path);
    out->capture_layer = dup_or_null(E->capture_layer);
    out->inputs = ms_malloc((size_t)m * E->d * sizeof(float));
    out->labels = E->labels ? ms_malloc((size_t)m * sizeof(int32_t)) : NULL;
    out->targets = E->targets ? ms_malloc((size_t)m * E->C * sizeof(float)) : NULL;
    for (int u = 0; u < m; u++) {
        long r = evalset_pick(E->N, m, u);
        memcpy(out->inputs + (size_t)u * E->d, E->inputs + (size_t)r * E->d, (size_t)E->d * sizeof(float));
        if (E->labels) out->labels[u] = E->labels[r];
        if (E->targets)
            memcpy(out->targets + (size_t)u * E->C, E->targets + (size_t)r * E->C, (size_t)E->C * sizeof(float));
    }
}

int evalset_check_layer(const evalset *e, const moe_model *m, ms_err *err) {
    if (!e->capture_layer || !m->layer || !strcmp(e->capture_layer, m->layer)) return 0;
    int b = family_block_index(m->layer);
    char blk[32] = "";
    if (b >= 0) snprintf(blk, sizeof blk, "%d", b);
    if (b >= 0 && !strcmp(blk, e->capture_layer)) return 0;
    return ms_fail(err, "%s: captured at layer %s (its capture.layer metadata), but the layer "
                        "evaluated is '%s'%s%s%s: these are another layer's inputs; pass --layer %s, "
                        "or --ignore-capture-layer to evaluate on them anyway",
                   e->path, e->capture_layer, m->layer, b >= 0 ? " (block " : "", blk,
                   b >= 0 ? ")" : "", e->capture_layer);
}
