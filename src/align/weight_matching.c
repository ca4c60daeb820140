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
#include "core/blas_threads.h"
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

/* Rows [r0, r0 + m) of Sf (h, h): each row's sums are those of the whole
 * product (the BLAS splits a product by rows and columns, never along d). */
static void similarity_rows(const moe_expert *a, const moe_expert *b, const moe_config *c, int r0, int m,
                            float *Sf) {
    int d = c->d, h = c->h;
    float *R = Sf + (size_t)r0 * h;
    // R = W1a[r0..) (m,d) W1b^T (d,h)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, h, d, 1.0f, a->fc1_w + (size_t)r0 * d, d, b->fc1_w,
                d, 0.0f, R, h);
    // R += W2a^T[r0..) (m,d) W2b (d,h); W2 is (d,h)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, h, d, 1.0f, a->fc2_w + r0, h, b->fc2_w, h, 1.0f, R,
                h);
    // R += b1a[r0..) b1b^T
    cblas_sger(CblasRowMajor, m, h, 1.0f, a->fc1_b + r0, 1, b->fc1_b, 1, R, h);
    if (moe_act_glu(c->act)) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, h, d, 1.0f, a->fc3_w + (size_t)r0 * d, d,
                    b->fc3_w, d, 1.0f, R, h);
        cblas_sger(CblasRowMajor, m, h, 1.0f, a->fc3_b + r0, 1, b->fc3_b, 1, R, h);
    }
}

/* S's panels: WM_PANEL rows, or on a thread that can be cancelled (progress.h:
 * the explorer's q) as few rows as make about WM_PANEL_FLOPS, at least
 * WM_PANEL_MIN: a 512-row panel at h = 3072, d = 768 is 5 GFLOP, a tenth of a
 * second (several on a loaded machine). Rows split the product, never d: S is
 * the same either way. */
#define WM_PANEL 512
#define WM_PANEL_MIN 16
#define WM_PANEL_FLOPS 2.5e8
static int panel_rows(const moe_config *c) {
    if (!progress_cancel_flag()) return WM_PANEL;
    double per_row = 2.0 * (moe_act_glu(c->act) ? 3 : 2) * c->h * (double)c->d;
    int rows = WM_PANEL;
    while (rows > WM_PANEL_MIN && rows * per_row > WM_PANEL_FLOPS) rows /= 2;
    return rows;
}

/* Panels of S for blas_par_for: panel i is rows [i P, i P + P). */
typedef struct {
    const moe_expert *a, *b;
    const moe_config *c;
    int P;
    float *Sf;
} wm_job;

static void similarity_panel(void *ctx, int i, int slot) {
    const wm_job *J = ctx;
    int r0 = i * J->P, h = J->c->h;
    (void)slot;
    similarity_rows(J->a, J->b, J->c, r0, h - r0 < J->P ? h - r0 : J->P, J->Sf);
}

/* S, in panels with a cancel check between them (the calling thread's,
 * progress.h); -1 when cancelled (S then incomplete). The panels run on threads
 * of their own (blas_par_for: each a whole product on one thread, none waiting on
 * BLAS's threads), and they are the same panels on any number of threads: some
 * BLAS kernels (OpenBLAS's Haswell ones) round a product split by rows otherwise
 * than whole, so S's bits depend on the panels but never on the threads. */
static int similarity(const moe_expert *a, const moe_expert *b, const moe_config *c, double *S) {
    int h = c->h, P = panel_rows(c), panels = (h + P - 1) / P;
    // Sf (h,h) floats in the first half of S's h*h doubles: no second buffer
    float *Sf = (float *)(void *)S;
    int nt = blas_par_threads(panels);
    if (nt > 1) {
        wm_job J = {a, b, c, P, Sf};
        blas_par_for(panels, nt, similarity_panel, &J, progress_cancel_flag());
        if (progress_cancelled()) return -1;
    } else {
        for (int r0 = 0; r0 < h; r0 += P) {
            if (r0 && progress_cancelled()) return -1;
            similarity_rows(a, b, c, r0, h - r0 < P ? h - r0 : P, Sf);
        }
    }
    widen_in_place(S, (size_t)h * h);
    return 0;
}

void wm_similarity(const moe_expert *a, const moe_expert *b, const moe_config *c, double *S) {
    // the calling thread's cancel leaves S incomplete: its callers check it (progress.h)
    (void)similarity(a, b, c, S);
}

/* wm_match with a caller-provided S (h*h doubles), so align_models reuses one. */
int wm_match_into(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
                  double *score, double *S, ms_err *err) {
    int h = c->h;
    double t0 = timing_now();
    if (similarity(a, b, c, S)) return ms_fail(err, "cancelled");
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
