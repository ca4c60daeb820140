/* digits.c - the UCI digits file the samples are trained on (digits.h). */
#include "io/digits.h"

#include <stdlib.h>

#include "io/safetensors.h"

int digits_load(const char *path, int d, uint64_t embed_seed, double embed_scale,
                train_set *train, train_set *test, ms_err *err) {
    st_file f;
    if (st_open(&f, path, err)) return -1;
    const st_tensor *tp = st_find(&f, "pixels"), *tl = st_find(&f, "labels");
    if (!tp || tp->ndim != 2)
        return st_close(&f), ms_fail(err, "%s: tensor 'pixels' missing or not 2-D", path);
    if (!tl || tl->ndim != 1 || tl->shape[0] != tp->shape[0])
        return st_close(&f), ms_fail(err, "%s: tensor 'labels' missing or not [N] with N = %lld",
                                     path, (long long)tp->shape[0]);
    int N = (int)tp->shape[0], P = (int)tp->shape[1];
    float *pix = ms_malloc((size_t)N * P * sizeof(float));
    int64_t *lab = ms_malloc((size_t)N * sizeof(int64_t));
    if (st_read_f32(&f, tp, pix, err) || st_read_i64(&f, tl, lab, err)) {
        free(pix);
        free(lab);
        st_close(&f);
        return -1;
    }
    st_close(&f);
    int C = 0;
    for (int i = 0; i < N; i++) {
        if (lab[i] < 0 || lab[i] > 1000) {
            long long bad = (long long)lab[i];
            free(pix);
            free(lab);
            return ms_fail(err, "%s: tensor 'labels': label %lld at %d out of range [0, 1000]",
                           path, bad, i);
        }
        if (lab[i] + 1 > C) C = (int)lab[i] + 1;
    }
    float *x = ms_malloc((size_t)N * d * sizeof(float));
    train_embed(pix, N, P, d, embed_seed, embed_scale, x);
    int32_t *y = ms_malloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) y[i] = (int32_t)lab[i];
    train_split(N, d, C, x, y, NULL, train, test);
    free(y);
    free(x);
    free(pix);
    free(lab);
    return 0;
}
