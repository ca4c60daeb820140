/* curve.h - loss curves and their barriers, computed the plain way
 * (curve.c: the whole model interpolated and evaluated at each t).
 *
 * Legend: T interpolation points, t_m = m/(T-1). Curves go from A (t=0) to the
 * aligned B' (t=1). With a head the loss is cross-entropy (classification) or
 * MSE (regression); without one it is the layer-output loss (mean squared
 * distance from the chord of the two layers' outputs). */
#ifndef MS_CURVE_H
#define MS_CURVE_H

#include <stdatomic.h>

#include "io/evalset.h"
#include "model/model.h"

/* experts the landscape, the curves and the TUI handle (a DeepSeek-V3 layer has 256);
 * an expert id fits a byte, which the landscape's stored orders use */
#define LS_MAX_N 256
#define LS_EXHAUSTIVE_MAX 9 /* n <= 9: every order; above: sampled */

typedef enum { LS_CLASSIFY = 0, LS_REGRESS = 1, LS_LAYER = 2 } ls_kind;

typedef struct {
    int n, T;
    int order[LS_MAX_N];
    double *loss;  // (T)
    double *acc;   // (T), NULL unless classification
    double barrier, acc_barrier, auc; /* acc_barrier NaN unless classification */
    /* the evaluation set's units (a network's sequences or images, a layer's
     * samples): nseq of them, their losses at each point (loss[m] is their mean),
     * and the barrier's bootstrap interval (bootstrap.h); nseq 0: not kept */
    int nseq;
    double *seq;   // (T, nseq)
    double bar_lo, bar_hi;
} ls_curve;

void ls_curve_free(ls_curve *c);
void ls_curve_copy(ls_curve *dst, const ls_curve *src);
/* Fill barrier, acc_barrier and auc from loss/acc (the formulas in the header above). */
void ls_curve_stats(ls_curve *c);
/* a curve's per-unit losses are kept up to this many values (T * units); past it no interval */
#define LS_SEQ_MAX_VALUES (64L << 20)

/* bar_lo, bar_hi from seq (bootstrap.h), widened to hold the barrier itself (a
 * maximum's resamples lean one way); NaN without seq */
void ls_curve_interval(ls_curve *c);
double ls_t(int m, int T); /* m/(T-1) */

/* What the loss means for this model and evaluation set. */
ls_kind ls_kind_of(const moe_model *m, const evalset *E);
/* Sum of per-sample losses of logits (N,C) against samples [r0, r0+N) of E
 * (cross-entropy; squared error summed over C for regression) into *loss_sum,
 * and the number of correct argmaxes (ties to the smaller index) into
 * *correct for classification. The mean loss is loss_sum/N (classification)
 * or loss_sum/(N*C) (regression), as in moe_eval. */
void ls_loss_logits(const evalset *E, int r0, const float *logits, int N, int C,
                    double *loss_sum, long *correct);

/* An objective: what the loss of an interpolated layer is measured on when it
 * is not the layer's own head (or chord) - the network the layer is a block of
 * (src/network/net_objective.c). eval(ctx, layer, t, variant, &loss, &acc, err)
 * gives the loss and accuracy of the model whose chosen MoE layer is `layer` (the
 * interpolation (1-t) A + t B' for some alignment B' of B) with its other MoE
 * layers at the same t, aligned as the variant says: LS_VAR_MAIN their chosen
 * alignment, LS_VAR_NAIVE / LS_VAR_SKIP naive / skip-order (those curves move
 * every layer together). The end points do not depend on the variant (every
 * alignment computes B's function). */
enum { LS_VAR_MAIN = 0, LS_VAR_NAIVE = 1, LS_VAR_SKIP = 2 };
typedef struct ls_objective {
    /* seq (nseq), when not NULL: each unit's own mean loss (loss is their mean) */
    int (*eval)(void *ctx, const moe_model *layer, double t, int variant, double *loss, double *acc,
                double *seq, ms_err *err);
    void *ctx;
    ls_kind kind;          /* LS_CLASSIFY: a network's next-token loss and accuracy */
    double loss_a, loss_b, acc_a, acc_b;
    int nseq;              /* the evaluation set's sequences (or images) */
    const char *unit;      /* what they are: "sequences", "images" */
    const double *seq_a, *seq_b; /* (nseq) the end points' per-unit losses */
    const char *what;      /* what the loss is, e.g. "network loss, MoE block 0" */
    /* the layer's inputs on the evaluation set, (ninputs, d) (A's, at the block):
     * what the data-driven matching methods (cost_data.h) read; NULL: none */
    const float *inputs;
    int ninputs;
    /* NULL: loss_a .. seq_b above are set. Else the end points are still to be
     * evaluated (NaN, seq_a and seq_b NULL): end(ctx, 0 or 1, ...) evaluates A's or
     * B's as above, so that a landscape split over processes gives them to two of
     * its processes instead of every process evaluating both (net_obj_opts.ends_later) */
    int (*end)(void *ctx, int b, double *loss, double *acc, double *seq, ms_err *err);
} ls_objective;

/* The progress phase a command begins to show its curves' points (one per inner
 * point: both functions below add to it when it is the line's phase). */
#define CURVE_PHASE "curves"

/* The curve from A to Bp, where Bp is B already aligned (any order/WM). */
int curve_compute(const moe_model *A, const moe_model *Bp, const evalset *E, int T,
                  ls_curve *out, ms_err *err);
/* ... its per-sample losses without the barrier's interval (bar_lo, bar_hi
 * NaN-free zeros): for callers that resample many curves together */
int curve_compute_units(const moe_model *A, const moe_model *Bp, const evalset *E, int T,
                        ls_curve *out, ms_err *err);
/* The same on an objective: L(t) = obj->eval of (1-t) A + t Bp under variant;
 * the end points are the objective's. cancel (may be NULL) is polled between
 * the evaluations: non-zero stops with "cancelled". */
int curve_compute_obj(const moe_model *A, const moe_model *Bp, const ls_objective *obj, int variant,
                      int T, atomic_int *cancel, ls_curve *out, ms_err *err);

/* Fewer evaluations for the same barrier (a network's point is whole
 * evaluations): golden-section search for the maximum of the gap L(t) -
 * chord(t) inside the bracket [t_{m-1}, t_{m+1}] of c's best grid point m
 * (c: curve_compute_obj's grid of A to Bp under variant), until the bracket is
 * narrower than tol (in t). Assumes the gap has one peak in that bracket. */
typedef struct {
    double barrier;   /* the largest gap seen (>= the grid's barrier) */
    double t;         /* where */
    int points;       /* evaluations made beyond the grid */
    double tol;       /* the t bracket reached (<= the tol asked) */
    double spread;    /* the gap's range over the points in that bracket: how far
                         the barrier may still be from the peak's */
} ls_refined;
int curve_refine_obj(const moe_model *A, const moe_model *Bp, const ls_objective *obj, int variant,
                     const ls_curve *c, double tol, ls_refined *out, ms_err *err);

#endif
