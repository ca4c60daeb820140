/* curve.c - the plain, obviously-correct curve: for each t the
 * whole model is interpolated and evaluated. It is the reference the fast
 * landscape (landscape.c) is checked against, and what `moescope curve` and
 * the TUI's selected-order curve use. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"
#include "landscape/bootstrap.h"
#include "landscape/curve.h"
#include "model/evaluator.h"
#include "model/moe_kernels.h"


double ls_t(int m, int T) { return T > 1 ? (double)m / (double)(T - 1) : 0.0; }

void ls_curve_free(ls_curve *c) {
    if (!c) return;
    free(c->loss);
    free(c->acc);
    free(c->seq);
    c->loss = c->acc = c->seq = NULL;
}

void ls_curve_copy(ls_curve *dst, const ls_curve *src) {
    *dst = *src;
    dst->loss = NULL;
    dst->acc = NULL;
    dst->seq = NULL;
    if (src->seq) {
        size_t sz = (size_t)src->T * src->nseq * sizeof(double);
        dst->seq = ms_malloc(sz);
        memcpy(dst->seq, src->seq, sz);
    }
    if (src->loss) {
        dst->loss = ms_malloc((size_t)src->T * sizeof(double));
        memcpy(dst->loss, src->loss, (size_t)src->T * sizeof(double));
    }
    if (src->acc) {
        dst->acc = ms_malloc((size_t)src->T * sizeof(double));
        memcpy(dst->acc, src->acc, (size_t)src->T * sizeof(double));
    }
}

/* barrier = max_m [L(t_m) - chord(t_m)], acc barrier the same on the
 * accuracy the other way round, AUC the trapezoid mean of L - chord. A NaN
 * anywhere makes the statistic NaN (never silently skipped). */
void ls_curve_stats(ls_curve *c) {
    int T = c->T;
    c->barrier = c->acc_barrier = c->auc = c->bar_lo = c->bar_hi = NAN;
    if (!c->loss || T < 1) return;
    double l0 = c->loss[0], l1 = c->loss[T - 1];
    double bar = -INFINITY, auc = 0.0;
    int bad = 0;
    for (int m = 0; m < T; m++) {
        double t = ls_t(m, T);
        double e = c->loss[m] - ((1.0 - t) * l0 + t * l1);
        if (isnan(e)) bad = 1;
        else if (e > bar) bar = e;
        if (T > 1) auc += (m == 0 || m == T - 1 ? 0.5 : 1.0) * e / (double)(T - 1);
    }
    c->barrier = bad ? NAN : bar;
    c->auc = T > 1 ? auc : 0.0;
    if (c->acc) {
        double a0 = c->acc[0], a1 = c->acc[T - 1], ab = -INFINITY;
        int abad = 0;
        for (int m = 0; m < T; m++) {
            double t = ls_t(m, T);
            double e = (1.0 - t) * a0 + t * a1 - c->acc[m];
            if (isnan(e)) abad = 1;
            else if (e > ab) ab = e;
        }
        c->acc_barrier = abad ? NAN : ab;
    }
}

void ls_curve_interval(ls_curve *c) {
    c->bar_lo = c->bar_hi = NAN;
    if (!c->seq || c->nseq < 1 || isnan(c->barrier)) return;
    ls_boot b;
    ls_boot_init(&b, c->nseq, LS_BOOT_RESAMPLES, LS_BOOT_SEED);
    ls_boot_curve(&b, c->seq, c->T, &c->bar_lo, &c->bar_hi);
    ls_boot_free(&b);
    if (!isnan(c->bar_lo)) c->bar_lo = fmin(c->bar_lo, c->barrier), c->bar_hi = fmax(c->bar_hi, c->barrier);
}

ls_kind ls_kind_of(const moe_model *m, const evalset *E) {
    if (!m->cfg.has_head) return LS_LAYER;
    return E->labels ? LS_CLASSIFY : LS_REGRESS;
}

void ls_loss_logits(const evalset *E, int r0, const float *logits, int N, int C,
                    double *loss_sum, long *correct) {
    moe_loss_rows(logits, N, C, E->labels ? E->labels + r0 : NULL,
                  E->targets ? E->targets + (size_t)r0 * C : NULL, loss_sum, correct);
}

int curve_compute(const moe_model *A, const moe_model *Bp, const evalset *E, int T,
                  ls_curve *out, ms_err *err) {
    if (curve_compute_units(A, Bp, E, T, out, err)) return -1;
    ls_curve_interval(out);
    return 0;
}

int curve_compute_units(const moe_model *A, const moe_model *Bp, const evalset *E, int T,
                        ls_curve *out, ms_err *err) {
    memset(out, 0, sizeof *out);
    if (T < 2) return ms_fail(err, "curve: need at least 2 interpolation points, got %d", T);
    if (moe_check_compatible(A, Bp, err)) return -1;
    if (A->cfg.has_head) {
        if (moe_eval_check(A, E, err)) return -1;
    } else if (E->d != A->cfg.d) {
        return ms_fail(err, "%s: inputs have width %d but the layer has d = %d",
                       E->path ? E->path : "evaluation set", E->d, A->cfg.d);
    }
    const moe_config *c = &A->cfg;
    ls_kind kind = ls_kind_of(A, E);
    int N = E->N, d = c->d, C = c->C;
    out->n = c->n;
    out->T = T;
    for (int i = 0; i < c->n && i < LS_MAX_N; i++) out->order[i] = i;
    out->loss = ms_malloc((size_t)T * sizeof(double));
    out->acc = kind == LS_CLASSIFY ? ms_malloc((size_t)T * sizeof(double)) : NULL;
    if ((long)T * N <= LS_SEQ_MAX_VALUES) {
        out->nseq = N;
        out->seq = ms_malloc((size_t)T * N * sizeof(double));
    }

    moe_model M;
    moe_alloc(&M, c);
    float *Z = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
    float *ZA = NULL, *ZB = NULL, *logits = NULL;
    if (kind == LS_LAYER) {
        // the chord of the two layers' outputs: (1-t) z_A + t z_B' (the residual cancels)
        ZA = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
        ZB = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
        moe_forward(A, E->inputs, N, ZA, NULL);
        moe_forward(Bp, E->inputs, N, ZB, NULL);
    } else {
        logits = ms_malloc((size_t)N * C * sizeof(float)); // (N, C)
    }
    for (int m = 0; m < T; m++) {
        double t = ls_t(m, T);
        moe_interpolate_routed(&M, A, Bp, t);
        moe_forward(&M, E->inputs, N, Z, NULL);
        if (kind == LS_LAYER) {
            double ss = 0.0;
            for (int i = 0; i < N; i++) {
                double si = 0.0;
                for (size_t q = (size_t)i * d; q < (size_t)(i + 1) * d; q++) {
                    double df = (double)Z[q] - ((1.0 - t) * ZA[q] + t * ZB[q]);
                    si += df * df;
                }
                ss += si;
                if (out->seq) out->seq[(size_t)m * N + i] = si / d;
            }
            out->loss[m] = ss / ((double)N * d);
        } else {
            moe_head(&M, Z, N, logits);
            double ls = 0.0;
            long ok = 0;
            ls_loss_logits(E, 0, logits, N, C, &ls, &ok);
            out->loss[m] = kind == LS_CLASSIFY ? ls / N : ls / ((double)N * C);
            if (out->acc) out->acc[m] = (double)ok / N;
            for (int i = 0; out->seq && i < N; i++) { // each sample's own loss
                double li = 0.0;
                long oki = 0;
                ls_loss_logits(E, i, logits + (size_t)i * C, 1, C, &li, &oki);
                out->seq[(size_t)m * N + i] = kind == LS_CLASSIFY ? li : li / C;
            }
        }
        if (m > 0 && m < T - 1 && progress_is(CURVE_PHASE)) progress_add(1);
    }
    ls_curve_stats(out);
    free(Z);
    free(ZA);
    free(ZB);
    free(logits);
    moe_free(&M);
    return 0;
}

int curve_compute_obj(const moe_model *A, const moe_model *Bp, const ls_objective *obj, int variant,
                      int T, atomic_int *cancel, ls_curve *out, ms_err *err) {
    memset(out, 0, sizeof *out);
    if (T < 2) return ms_fail(err, "curve: need at least 2 interpolation points, got %d", T);
    if (moe_check_compatible(A, Bp, err)) return -1;
    out->n = A->cfg.n;
    out->T = T;
    for (int i = 0; i < A->cfg.n && i < LS_MAX_N; i++) out->order[i] = i;
    out->loss = ms_malloc((size_t)T * sizeof(double));
    out->acc = obj->kind == LS_CLASSIFY ? ms_malloc((size_t)T * sizeof(double)) : NULL;
    out->loss[0] = obj->loss_a, out->loss[T - 1] = obj->loss_b;
    if (out->acc) out->acc[0] = obj->acc_a, out->acc[T - 1] = obj->acc_b;
    int S = obj->nseq;
    if (S > 0 && obj->seq_a && (long)T * S <= LS_SEQ_MAX_VALUES) {
        out->nseq = S;
        out->seq = ms_malloc((size_t)T * S * sizeof(double));
        memcpy(out->seq, obj->seq_a, (size_t)S * sizeof(double));
        memcpy(out->seq + (size_t)(T - 1) * S, obj->seq_b, (size_t)S * sizeof(double));
    }
    // a cancel that came during B's alignment: not a copy of the block (tens of ms) first
    if (cancel && atomic_load(cancel)) {
        ls_curve_free(out);
        return ms_fail(err, "cancelled");
    }
    moe_model M;
    moe_clone(&M, A);
    int rc = 0;
    for (int m = 1; m < T - 1 && !rc; m++) {
        double t = ls_t(m, T), acc = NAN;
        if (cancel && atomic_load(cancel)) {
            rc = ms_fail(err, "cancelled");
            break;
        }
        moe_interpolate_routed(&M, A, Bp, t);
        rc = obj->eval(obj->ctx, &M, t, variant, &out->loss[m], &acc,
                       out->seq ? out->seq + (size_t)m * S : NULL, err);
        if (out->acc) out->acc[m] = acc;
        if (progress_is(CURVE_PHASE)) progress_add(1); // the command line's line, when it shows it
    }
    moe_free(&M);
    if (rc) {
        ls_curve_free(out);
        return -1;
    }
    ls_curve_stats(out);
    ls_curve_interval(out);
    return 0;
}

/* the gap L(t) - chord(t) of the curve c's interpolation at t (M: scratch) */
static int gap_at(const moe_model *A, const moe_model *Bp, const ls_objective *obj, int variant,
                  const ls_curve *c, double t, moe_model *M, double *gap, ms_err *err) {
    double loss, acc;
    moe_interpolate_routed(M, A, Bp, t);
    if (obj->eval(obj->ctx, M, t, variant, &loss, &acc, NULL, err)) return -1;
    *gap = loss - ((1.0 - t) * c->loss[0] + t * c->loss[c->T - 1]);
    return 0;
}

int curve_refine_obj(const moe_model *A, const moe_model *Bp, const ls_objective *obj, int variant,
                     const ls_curve *c, double tol, ls_refined *out, ms_err *err) {
    int T = c->T, best = 0;
    double g[2], x[2], l0 = c->loss[0], l1 = c->loss[T - 1];
    for (int m = 1; m < T; m++)
        if (c->loss[m] - ((1.0 - ls_t(m, T)) * l0 + ls_t(m, T) * l1) >
            c->loss[best] - ((1.0 - ls_t(best, T)) * l0 + ls_t(best, T) * l1))
            best = m;
    *out = (ls_refined){.barrier = c->barrier, .t = ls_t(best, T), .tol = 1.0 / (T - 1), .spread = 0};
    if (best == 0 || best == T - 1) return 0; // no peak inside: the barrier is an end's 0
    const double phi = 0.6180339887498949;
    double a = ls_t(best - 1, T), b = ls_t(best + 1, T), lo = c->barrier, hi = c->barrier;
    moe_model M;
    moe_clone(&M, A);
    x[0] = b - phi * (b - a), x[1] = a + phi * (b - a);
    int rc = gap_at(A, Bp, obj, variant, c, x[0], &M, &g[0], err) || gap_at(A, Bp, obj, variant, c, x[1], &M, &g[1], err);
    out->points = 2;
    while (!rc && b - a > tol) {
        int k = g[0] > g[1] ? 0 : 1; // keep the side of the higher probe
        if (k == 0) b = x[1], x[1] = x[0], g[1] = g[0], x[0] = b - phi * (b - a);
        else a = x[0], x[0] = x[1], g[0] = g[1], x[1] = a + phi * (b - a);
        rc = gap_at(A, Bp, obj, variant, c, x[k], &M, &g[k], err);
        out->points++;
    }
    moe_free(&M);
    if (rc) return -1;
    for (int k = 0; k < 2; k++) {
        if (g[k] > out->barrier) out->barrier = g[k], out->t = x[k];
        lo = g[k] < lo ? g[k] : lo;
        hi = g[k] > hi ? g[k] : hi;
    }
    out->tol = b - a;
    out->spread = (hi > out->barrier ? hi : out->barrier) - lo;
    return 0;
}
