/* weight_matching.c - Algorithm 1 step 2: align the hidden units of
 * a matched pair of experts (Git Re-Basin weight matching; one assignment is
 * exact for a one-hidden-layer expert).
 *
 *   S (h,h) = W1a W1b^T + b1a b1b^T + W2a^T W2b [+ W3a W3b^T + b3a b3b^T]
 *   P = argmax_P sum_u S[u][P[u]]
 *
 * The GEMMs run in float; the solver gets doubles. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "align/weight_matching.h"
#include "align/lap.h"
#include "core/progress.h"

/* Widen h*h floats stored at the start of S into h*h doubles in place,
 * back to front, one block at a time through a small buffer. Block [i0, i0+B)
 * is read (bytes [4 i0, 4 i0 + 4B)) before it is written (bytes [8 i0, ...)),
 * and the writes never reach the floats still unread (bytes < 4 i0). memcpy
 * keeps the float/double access free of aliasing assumptions. */
static void widen_in_place(double *S, size_t count) {
    enum { BLK = 1024 };
    float tmp[BLK];
    unsigned char *bytes = (unsigned char *)S;
    size_t end = count;
    while (end > 0) {
        size_t i0 = end > BLK ? end - BLK : 0, nb = end - i0;
        memcpy(tmp, bytes + i0 * sizeof(float), nb * sizeof(float));
        for (size_t k = 0; k < nb; k++) S[i0 + k] = (double)tmp[k];
        end = i0;
    }
}

void wm_similarity(const moe_expert *a, const moe_expert *b, const moe_config *c, double *S) {
    int d = c->d, h = c->h;
    // Sf (h,h) floats in the first half of S's h*h doubles: no second buffer
    float *Sf = (float *)(void *)S;
    // Sf = W1a (h,d) W1b^T (d,h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, h, d, 1.0f, a->fc1_w, d, b->fc1_w, d,
                0.0f, Sf, h);
    // Sf += W2a^T (h,d) W2b (d,h); W2 is (d,h)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, h, d, 1.0f, a->fc2_w, h, b->fc2_w, h,
                1.0f, Sf, h);
    // Sf += b1a b1b^T
    cblas_sger(CblasRowMajor, h, h, 1.0f, a->fc1_b, 1, b->fc1_b, 1, Sf, h);
    if (moe_act_glu(c->act)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, h, d, 1.0f, a->fc3_w, d,
                    b->fc3_w, d, 1.0f, Sf, h);
        cblas_sger(CblasRowMajor, h, h, 1.0f, a->fc3_b, 1, b->fc3_b, 1, Sf, h);
    }
    widen_in_place(S, (size_t)h * h);
}

/* wm_match with a caller-provided S (h*h doubles), so align_models reuses one. */
int wm_match_into(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
                  double *score, double *S, ms_err *err) {
    int h = c->h;
    double t0 = timing_now();
    wm_similarity(a, b, c, S);
    double t1 = timing_now(), total = 0.0;
    timing_add("wm similarity", t1 - t0);
    int rc = lap_solve(S, h, h, 1, P, &total, err);
    timing_add("wm assignment", timing_now() - t1);
    if (rc) return ms_prefix(err, "weight matching");
    if (score) *score = total;
    return 0;
}

int wm_match(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
             double *score, ms_err *err) {
    double *S = ms_malloc((size_t)c->h * c->h * sizeof(double)); // (h,h)
    int rc = wm_match_into(a, b, c, P, score, S, err);
    free(S);
    return rc;
}
