/* geo_capture.c - a checkpoint's MoE gates and a capture file of every
 * layer's inputs (geo_capture.h). */
#include "analysis/geo_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/model_io.h"

/* layer l's tensor in the capture file: inputs.<block>, else inputs.<prefix> */
static const st_tensor *find_tensor(const st_file *f, const family_layer *ly, char **name) {
    size_t cap = strlen(ly->prefix) + 32;
    *name = ms_malloc(cap);
    if (ly->block >= 0) {
        snprintf(*name, cap, "inputs.%d", ly->block);
        const st_tensor *t = st_find(f, *name);
        if (t) return t;
    }
    snprintf(*name, cap, "inputs.%s", ly->prefix);
    return st_find(f, *name);
}

static int capture_kind_error(const st_file *f, const char *ckpt_path, ms_err *err) {
    if (st_find(f, "inputs"))
        return ms_fail(err, "%s holds one layer's inputs (tensor 'inputs'): the routing geometry needs every MoE "
                            "layer's, as tensors inputs.L (sample-checkpoints/capture_inputs.py --layers all)",
                       f->path);
    if (st_find(f, "input_ids"))
        return ms_fail(err, "%s holds token ids (input_ids): a network's evaluation set, but %s is not a network "
                            "checkpoint; give a capture of every MoE layer's inputs (inputs.L) instead",
                       f->path, ckpt_path);
    return ms_fail(err, "%s holds no captured inputs (tensors inputs.L, one per MoE layer: "
                        "sample-checkpoints/capture_inputs.py --layers all)",
                   f->path);
}

/* layer l: its tensor found and checked against the layer and layer 0 */
static int layer_open(geo_capture *c, int l, const family_layer *ly, const char *ckpt_path,
                      const family_overrides *o, ms_err *err) {
    const st_tensor *t = find_tensor(&c->f, ly, &c->names[l]);
    if (!t)
        return ms_fail(err, "%s: no captured inputs for MoE layer %s (tensor '%s'): capture every layer's in "
                            "one pass (sample-checkpoints/capture_inputs.py --layers all)",
                       c->f.path, ly->prefix, c->names[l]);
    expert_source src;
    if (moe_load_stream(&c->moe[l], ckpt_path, ly->prefix, o, &src, err)) return -1;
    moe_source_close(&src);
    int d = c->moe[l].cfg.d;
    if (t->ndim != 2)
        return ms_fail(err, "%s: tensor '%s' should be [N, %d] (one row per token), has %d dimension(s)",
                       c->f.path, c->names[l], d, t->ndim);
    if (t->shape[0] < 1 || t->shape[0] > (1 << 30))
        return ms_fail(err, "%s: tensor '%s' holds %lld tokens: a capture needs 1 to 2^30 of them", c->f.path,
                       c->names[l], (long long)t->shape[0]);
    if (t->shape[1] != d)
        return ms_fail(err, "%s: tensor '%s' has width %lld but MoE layer %s has d = %d", c->f.path, c->names[l],
                       (long long)t->shape[1], ly->prefix, d);
    if (l && t->shape[0] != c->N)
        return ms_fail(err, "%s: mismatched token sets: tensor '%s' holds %lld tokens but '%s' holds %d; every "
                            "layer's inputs must be of the same tokens (captured in one pass)",
                       c->f.path, c->names[l], (long long)t->shape[0], c->names[0], c->N);
    c->N = (int)t->shape[0];
    c->d = d;
    c->t[l] = t;
    c->in[l] = (geo_layer_in){.name = c->moe[l].layer ? c->moe[l].layer : ly->prefix, .block = ly->block,
                              .moe = &c->moe[l]};
    return 0;
}

int geo_capture_open(geo_capture *c, const char *ckpt_path, const char *capture_path, const family_overrides *o,
                     ms_err *err) {
    memset(c, 0, sizeof *c);
    family_layer *ls = NULL;
    int nl = 0;
    if (moe_find_layers(ckpt_path, o ? o->family : -1, &ls, &nl, err)) return -1;
    if (nl > MOE_MAX_LAYERS_EACH) {
        int rc = ms_fail(err, "%s holds %d MoE layers: the routing geometry compares at most %d", ckpt_path, nl,
                         MOE_MAX_LAYERS_EACH);
        family_layers_free(ls, nl);
        return rc;
    }
    if (nl == 1) { // before the capture: nothing to compare whatever it holds
        int rc = ms_fail(err, "%s: %s is the only MoE layer: the routing geometry compares MoE layers across depth, "
                              "so it needs two or more",
                         ckpt_path, ls[0].prefix);
        family_layers_free(ls, nl);
        return rc;
    }
    if (st_open(&c->f, capture_path, err)) {
        family_layers_free(ls, nl);
        return -1;
    }
    c->L = nl;
    c->moe = ms_calloc((size_t)(nl ? nl : 1), sizeof(moe_model));
    c->in = ms_calloc((size_t)(nl ? nl : 1), sizeof(geo_layer_in));
    c->t = ms_calloc((size_t)(nl ? nl : 1), sizeof(st_tensor *));
    c->names = ms_calloc((size_t)(nl ? nl : 1), sizeof(char *));
    int rc = 0, any = 0;
    for (int i = 0; i < c->f.ntensors; i++) any |= !strncmp(c->f.tensors[i].name, "inputs.", 7);
    if (!any) rc = capture_kind_error(&c->f, ckpt_path, err);
    for (int l = 0; l < nl && !rc; l++) rc = layer_open(c, l, &ls[l], ckpt_path, o, err);
    family_layers_free(ls, nl);
    if (!rc) c->buf = ms_malloc((size_t)c->N * c->d * sizeof(float));
    if (rc) geo_capture_close(c);
    return rc;
}

const float *geo_capture_inputs(void *ctx, int l, ms_err *err) {
    geo_capture *c = ctx;
    return st_read_f32(&c->f, c->t[l], c->buf, err) ? NULL : c->buf;
}

void geo_capture_close(geo_capture *c) {
    for (int l = 0; l < c->L; l++) {
        if (c->moe) moe_free(&c->moe[l]);
        if (c->names) free(c->names[l]);
    }
    free(c->moe);
    free(c->in);
    free(c->t);
    free(c->names);
    free(c->buf);
    if (c->f.path) st_close(&c->f);
    memset(c, 0, sizeof *c);
}
