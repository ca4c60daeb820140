/* evaluator.h - the MoE forward pass and the loss over an evaluation set.
 *
 * Batched over samples with OpenBLAS sgemm, float32 compute, double
 * accumulation of losses. moe_forward_ref is the plain loop version kept beside
 * it as the reference in tests. */
#ifndef MS_EVALUATOR_H
#define MS_EVALUATOR_H

#include <stdatomic.h>
#include <stdint.h>

#include "model/model.h"

/* The samples a layer is evaluated on (read by io/evalset.c). */
typedef struct {
    char *path;
    int N, d, C;       /* C: number of classes (labels) or target width */
    float *inputs;     // (N, d)
    int32_t *labels;   // (N), classification; NULL for regression
    float *targets;    // (N, C), regression; NULL for classification
    char *capture_layer; /* its capture.layer metadata: the block (or layer prefix) whose
                            inputs it holds (sample-checkpoints/capture_inputs.py); NULL if none */
    const char *row_unit; /* what a row is, for messages: NULL "samples", "tokens" (a network
                             block's inputs, net_block_inputs) */
} evalset;

/* Does e fit m (width d, label range / target width vs the head)? -1 with a
 * message naming both files otherwise. */
int moe_eval_check(const moe_model *m, const evalset *e, ms_err *err);

/* Gate weights for a batch: logits (B,n) -> g (B,n) by the config's router
 * (see moe_config); corr (n) is the selection-only bias, NULL when absent. */
void moe_route_full(const moe_config *c, const float *corr, const float *scores, int B, float *g);
/* Does the routing of one sample with logits s (n) depend on the experts'
 * indices: the k-th and (k+1)-th selection scores equal (after the group
 * mask), or the group scores equal at the topk_group-th? Then a reordering of
 * the experts routes it differently (the tie rule prefers the smaller index).
 * corr: the selection bias or NULL. */
int moe_route_tie(const moe_config *c, const float *corr, const float *s);
/* moe_route_full without a selection bias (native models). */
void moe_route(const moe_config *c, const float *scores, int B, float *g);

/* Block output z = [x +] D(x) for X (B,d) into Z (B,d); if G is not NULL the
 * gate weights (B,n) are stored there too. Uses an internal workspace. */
void moe_forward(const moe_model *m, const float *X, int B, float *Z, float *G);
/* The same, stopping between two experts once *stop (NULL: never) is set: Z is
 * then incomplete and the caller discards it (a network evaluation cancelled
 * mid-panel, net_eval.c). Not stopped, the same bits as moe_forward. */
void moe_forward_until(const moe_model *m, const float *X, int B, float *Z, float *G, atomic_int *stop);
/* The same computed one sample at a time with plain loops (reference). */
void moe_forward_ref(const moe_model *m, const float *X, int B, float *Z, float *G);

/* Head: logits (B,C) = H LayerNorm(z) + c (LayerNorm only if present). */
void moe_head(const moe_model *m, const float *Z, int B, float *logits);

/* The loss terms of N rows of logits (N, C) added to *loss_sum: with labels
 * (N), each row's cross-entropy by log-sum-exp in double and, to *correct
 * (may be NULL), the rows whose argmax (ties to the smaller class) is the
 * label; else the squared errors against targets (N, C), in double. The
 * evaluator's loss and the landscape's end points and curves both. */
void moe_loss_rows(const float *logits, int N, int C, const int32_t *labels, const float *targets,
                   double *loss_sum, long *correct);

typedef struct {
    double loss;       /* cross-entropy (classification) or MSE (regression) */
    double accuracy;   /* in [0,1]; -1 when not classification */
    double *load_mean; /* (n) mean gate weight of each expert */
    double *load_frac; /* (n) fraction of samples that route to it (g > 0 / in top-k) */
} moe_eval_result;

/* Loss, accuracy and routing load of m on e (m must have a head). Runs on
 * one worker thread per CPU; the results are the same, bit for bit, for any
 * thread count (moe_eval_par). */
int moe_eval(const moe_model *m, const evalset *e, moe_eval_result *r, ms_err *err);
/* How the evaluation runs: worker threads (0: one per CPU, at most 8). The
 * rows go in fixed items of 1024 to whichever worker is free; BLAS is
 * single-threaded while the evaluation runs (one parallel layer). */
typedef struct {
    int threads;
} moe_par;
/* moe_eval / moe_eval_layer with an explicit split (p may be NULL: defaults). */
int moe_eval_par(const moe_model *m, const evalset *e, const moe_par *p, moe_eval_result *r,
                 ms_err *err);
void moe_eval_result_free(moe_eval_result *r);

/* Layer-only statistics (any model, head or not): r->loss is the mean over
 * N*d of D(x)^2 (the squared layer output, without the residual), accuracy is
 * -1, and the routing load as in moe_eval. Used by `eval` on headless layers. */
int moe_eval_layer(const moe_model *m, const evalset *e, moe_eval_result *r, ms_err *err);
int moe_eval_layer_par(const moe_model *m, const evalset *e, const moe_par *p,
                       moe_eval_result *r, ms_err *err);

#endif
