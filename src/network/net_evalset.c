/* net_evalset.c - a network's evaluation set (net_evalset.h). */
#include "network/net_evalset.h"

#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"
#include "io/evalset.h"
#include "io/safetensors.h"
#include "network/net_budget.h"
#include "network/net_range.h"

/* an I32 / I64 tensor of cnt values as non-negative int32 into out (row > 1:
 * token ids in rows of row, else classes) */
static int read_ids(const st_file *f, const st_tensor *t, size_t cnt, size_t row, int32_t *out, ms_err *err) {
    int64_t *tmp = ms_malloc((cnt ? cnt : 1) * sizeof(int64_t));
    int rc = st_read_i64(f, t, tmp, err);
    for (size_t q = 0; q < cnt && !rc; q++) {
        if (tmp[q] >= 0 && tmp[q] <= INT32_MAX) {
            out[q] = (int32_t)tmp[q];
            continue;
        }
        if (row > 1)
            rc = ms_fail(err, "%s: tensor '%s': id %lld at [%zu, %zu] is not a token id", f->path, t->name,
                         (long long)tmp[q], q / row, q % row);
        else
            rc = ms_fail(err, "%s: tensor '%s': %lld at [%zu] is not a class", f->path, t->name,
                         (long long)tmp[q], q);
    }
    free(tmp);
    return rc;
}

static int load_ids(net_evalset *e, const st_file *f, const st_tensor *t, ms_err *err) {
    if (t->ndim != 2)
        return ms_fail(err, "%s: tensor 'input_ids' should be [N, T] with N >= 1 sequences of T >= 2 "
                            "tokens, has %d dimension(s)",
                       f->path, t->ndim);
    if (t->shape[0] < 1 || t->shape[1] < 2 || t->shape[0] > (1 << 24) || t->shape[1] > (1 << 20) ||
        t->shape[0] * t->shape[1] > (1LL << 31) - 1)
        return ms_fail(err, "%s: tensor 'input_ids' has shape [%lld, %lld]: it needs N >= 1 sequences of "
                            "T >= 2 tokens (at most 2^24 sequences, 2^31 tokens in all)",
                       f->path, (long long)t->shape[0], (long long)t->shape[1]);
    if (t->dtype != ST_I32 && t->dtype != ST_I64)
        return ms_fail(err, "%s: tensor 'input_ids' must be I32 or I64, is %s", f->path, t->dtype_name);
    e->N = (int)t->shape[0];
    e->T = (int)t->shape[1];
    size_t cnt = (size_t)e->N * e->T;
    e->ids = ms_malloc(cnt * sizeof(int32_t));
    return read_ids(f, t, cnt, (size_t)e->T, e->ids, err);
}

/* pixel_values [N, C, H, W] and labels [N] */
static int load_images(net_evalset *e, const st_file *f, const st_tensor *t, ms_err *err) {
    if (t->ndim != 4 || t->shape[0] < 1 || t->shape[0] > (1 << 24) || t->shape[1] < 1 || t->shape[2] < 1 ||
        t->shape[3] < 1 || t->shape[1] > (1 << 12) || t->shape[2] > (1 << 14) || t->shape[3] > (1 << 14) ||
        t->numel > (1LL << 31) - 1)
        return ms_fail(err, "%s: tensor 'pixel_values' should be [N, C, H, W] (images, channels, height, "
                            "width), has %d dimension(s)%s",
                       f->path, t->ndim, t->ndim == 4 ? " of an unusable size" : "");
    const st_tensor *lt = st_find(f, "labels");
    if (!lt)
        return ms_fail(err, "%s: missing tensor 'labels' (a ViT's evaluation set: the class of each of "
                            "pixel_values' %lld images, [N])",
                       f->path, (long long)t->shape[0]);
    if (lt->ndim != 1 || lt->shape[0] != t->shape[0])
        return ms_fail(err, "%s: tensor 'labels' should be [%lld], one class per image of pixel_values", f->path,
                       (long long)t->shape[0]);
    if (lt->dtype != ST_I32 && lt->dtype != ST_I64)
        return ms_fail(err, "%s: tensor 'labels' must be I32 or I64, is %s", f->path, lt->dtype_name);
    e->N = (int)t->shape[0];
    e->C = (int)t->shape[1], e->H = (int)t->shape[2], e->W = (int)t->shape[3];
    e->pixels = ms_malloc((size_t)t->numel * sizeof(float));
    e->labels = ms_malloc((size_t)e->N * sizeof(int32_t));
    if (st_read_f32(f, t, e->pixels, err)) return -1;
    return read_ids(f, lt, (size_t)e->N, 1, e->labels, err);
}

int net_evalset_load(net_evalset *e, const char *path, ms_err *err) {
    st_file f;
    memset(e, 0, sizeof *e);
    if (st_open(&f, path, err)) return -1;
    int rc = net_evalset_load_file(e, &f, err);
    st_close(&f);
    return rc;
}

int net_evalset_load_file(net_evalset *e, const st_file *f, ms_err *err) {
    memset(e, 0, sizeof *e);
    const char *path = f->path;
    const st_tensor *t = st_find(f, "input_ids"), *px = st_find(f, "pixel_values");
    int rc;
    if (t && px)
        rc = ms_fail(err, "%s: holds both input_ids (a GPT-2's evaluation set) and pixel_values (a ViT's)", path);
    else if (t)
        rc = load_ids(e, f, t, err);
    else if (px)
        rc = load_images(e, f, px, err);
    else
        rc = ms_fail(err, "%s: missing tensor 'input_ids' (a network's evaluation set: token ids [N, T]) or "
                          "'pixel_values' (images [N, C, H, W], with their 'labels' [N])",
                     path);
    e->path = ms_strdup(path);
    if (rc) net_evalset_free(e);
    return rc;
}

int net_evalset_is(const char *path) {
    st_file f;
    if (!path || st_open(&f, path, NULL)) return 0;
    int yes = net_evalset_file_is(&f);
    st_close(&f);
    return yes;
}

int net_evalset_file_is(const st_file *f) {
    return st_find(f, "input_ids") != NULL || st_find(f, "pixel_values") != NULL;
}

static int check_images(const net_evalset *e, const net_model *m, ms_err *err) {
    const net_config *c = &m->cfg;
    if (!e->pixels)
        return ms_fail(err, "%s: holds input_ids (a GPT-2's evaluation set), but %s is a ViT: its evaluation "
                            "set holds pixel_values [N, C, H, W] and labels [N]",
                       e->path, m->path);
    if (e->C != c->chans)
        return ms_fail(err, "%s: tensor 'pixel_values' has %d channel(s) ([N, C, H, W] with C = %d), but "
                            "%s has num_channels = %d",
                       e->path, e->C, e->C, m->path, c->chans);
    if (e->H != c->image || e->W != c->image)
        return ms_fail(err, "%s: tensor 'pixel_values' holds %d x %d images (H x W), but %s has image_size "
                            "= %d (%d x %d patches of %d x %d)",
                       e->path, e->H, e->W, m->path, c->image, c->image / c->patch, c->image / c->patch,
                       c->patch, c->patch);
    for (int q = 0; q < e->N; q++)
        if (e->labels[q] >= c->vocab)
            return ms_fail(err, "%s: tensor 'labels': class %d of image %d is not below the %d classes of %s",
                           e->path, e->labels[q], q, c->vocab, m->path);
    return 0;
}

static int evalset_fits(const net_evalset *e, const net_model *m, ms_err *err) {
    const net_config *c = &m->cfg;
    const net_arch_desc *A = net_arch_of(c->arch);
    if (A->target == NET_TARGET_CLASS) return check_images(e, m, err);
    if (!e->ids)
        return ms_fail(err, "%s: holds pixel_values (a ViT's evaluation set), but %s is a %s language "
                            "model: its evaluation set holds input_ids [N, T]",
                       e->path, m->path, A->model_type);
    if (e->T > c->npos)
        return ms_fail(err, "%s: tensor 'input_ids' has T = %d tokens per sequence, more than the "
                            "%s = %d of %s",
                       e->path, e->T, A->k_pos, c->npos, m->path);
    for (size_t q = 0; q < (size_t)e->N * e->T; q++)
        if (e->ids[q] >= c->vocab)
            return ms_fail(err, "%s: tensor 'input_ids': id %d at [%zu, %zu] is not below the "
                                "vocab_size = %d of %s",
                           e->path, e->ids[q], q / e->T, q % e->T, c->vocab, m->path);
    return 0;
}

/* E's tokens or images for m, the magnitudes m's forward on them reaches, the memory it takes */
int net_evalset_check(const net_evalset *e, const net_model *m, ms_err *err) {
    if (evalset_fits(e, m, err) || net_range_check(m, e, err)) return -1;
    return net_mem_check(m, e, err);
}

int net_evalset_check_shape(const net_evalset *e, const net_model *m, ms_err *err) {
    return evalset_fits(e, m, err) || net_mem_check(m, e, err) ? -1 : 0;
}

void net_evalset_free(net_evalset *e) {
    free(e->path);
    free(e->ids);
    free(e->pixels);
    free(e->labels);
    memset(e, 0, sizeof *e);
}

void net_evalset_subset(const net_evalset *E, int m, net_evalset *out) {
    *out = *E;
    out->N = m;
    out->path = E->path ? ms_strdup(E->path) : NULL;
    size_t img = (size_t)E->C * E->H * E->W;
    out->ids = E->ids ? ms_malloc((size_t)m * E->T * sizeof(int32_t)) : NULL;
    out->pixels = E->pixels ? ms_malloc((size_t)m * img * sizeof(float)) : NULL;
    out->labels = E->labels ? ms_malloc((size_t)m * sizeof(int32_t)) : NULL;
    for (int u = 0; u < m; u++) {
        long r = evalset_pick(E->N, m, u);
        if (E->ids) memcpy(out->ids + (size_t)u * E->T, E->ids + (size_t)r * E->T, (size_t)E->T * sizeof(int32_t));
        if (E->pixels) memcpy(out->pixels + (size_t)u * img, E->pixels + (size_t)r * img, img * sizeof(float));
        if (E->labels) out->labels[u] = E->labels[r];
    }
}

static int is_class(const net_model *m) { return net_arch_of(m->cfg.arch)->target == NET_TARGET_CLASS; }

const char *net_loss_kind(const net_model *m) { return is_class(m) ? "class" : "next-token"; }

int net_logit_rows(const net_model *m, int T) { return is_class(m) ? 1 : T; }

int net_tokens(const net_model *m, const net_evalset *E) { return is_class(m) ? m->cfg.npos : E->T; }

long net_positions(const net_model *m, const net_evalset *E) {
    return is_class(m) ? (long)E->N : (long)E->N * (E->T - 1);
}

