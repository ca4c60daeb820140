/* geometry.h - routing geometry across depth: the control subspaces of a
 * model's MoE layers, their common gauge and one shared transition.
 *
 * Legend: L MoE layers (in depth order), N tokens (the first ntrain the
 * training split, the rest held out), d the residual stream's width, n
 * experts, r the common rank (the smallest layer's), k the experts a token is
 * routed to (geo_recall.h).
 *
 * Per layer l, from its gate and its inputs X_l (N, d) (what the router sees:
 * a GPT-2 block's ln_2 output, a Hugging Face block's captured input):
 *   the centred router, its rank and singular values, a basis U_l of its row
 *   space and the control states c = U_l^T x, with the check that the centred
 *   logits come back from them (geo_control.h); the expert choices and how
 *   well the states and residual PCA of the same width keep them
 *   (geo_recall.h); the share of the inputs' variance in the control subspace
 *   and in the top r principal directions.
 * Across layers:
 *   the principal angles between every pair of control subspaces (geo_angles.h);
 *   GPA rotations Q_l into one canonical gauge (geo_gpa.h), fitted on the
 *   training states of the first r basis directions (centred);
 *   the transitions y_{l+1} ~ y_l A, shared and layer-specific, and their
 *   held-out R^2 (geo_transition.h), in the canonical gauge and in the
 *   baselines' coordinates (geo_baselines.h): raw (each layer's own SVD basis),
 *   a random gauge, residual PCA at rank r and the CCA chain;
 *   the expert choices of layer l + 1 from the states the shared (and the
 *   specific) transition predicts from layer l.
 * Every number is a property of the subspaces, not of the bases chosen for
 * them, except those of the raw and random gauges (which is their point). */
#ifndef MS_GEOMETRY_H
#define MS_GEOMETRY_H

#include <stdint.h>

#include "analysis/geo_control.h"
#include "analysis/geo_gpa.h"
#include "analysis/geo_transition.h"
#include "model/model.h"

/* the coordinates a transition is fitted in */
enum { GEO_CANONICAL = 0, GEO_RAW, GEO_RANDOM, GEO_PCA, GEO_CCA, GEO_NMETHODS };
/* "canonical", "raw", "random", "pca", "cca" */
const char *geo_method_name(int m);
/* in words, for reports: "canonical gauge (GPA)", ... */
const char *geo_method_title(int m);

/* One MoE layer given to the geometry. */
typedef struct {
    const char *name;      /* its prefix ("transformer.h.3.mlp") */
    int block;             /* its block index, -1 if it has none */
    const moe_model *moe;  /* the gate (gate_w, gate_b, corr_b) and the router (cfg) */
} geo_layer_in;

/* Layer l's inputs (N, d), valid until the next call; NULL after setting err. */
typedef const float *(*geo_inputs_fn)(void *ctx, int l, ms_err *err);

typedef struct {
    int N, ntrain;     /* tokens, of which the first ntrain train */
    uint64_t seed;     /* the random gauge's rotations */
    int gpa_max_iter;  /* GEO_GPA_MAX_ITER */
    double gpa_tol;    /* GEO_GPA_TOL */
} geo_opts;

void geo_opts_default(geo_opts *o);

typedef struct {
    char *name;
    int block, n, d, k;
    moe_config cfg;        /* the router (for the expert choices) */
    float *corr;           // (n) the selection bias, NULL without
    geo_control ctl;       /* rank, singular values, basis (all r_l directions) */
    double logit_error;    /* geo_control_logit_error over the N tokens */
    double var_control;    /* the inputs' variance (training rows) inside the control subspace, a share */
    double var_pca;        /* ... inside their top r principal directions */
    double recall_states;  /* held-out recall of the choices from the states */
    double recall_pca;     /* ... from residual PCA at rank r */
    double recall_shared;  /* ... from the states the shared transition predicts (NaN for l = 0) */
    double recall_specific; /* ... the layer-specific one predicts (NaN for l = 0) */
    double *recall_rank;   // (2, r) held-out recall read out of the first q = 1 .. r states (row 0)
                           // and the top q principal directions (row 1): at q = r_l the states'
                           // is 1 by construction, below it the comparison measures something
    double *mu;            // (r) the states' training mean
    double *Y;             // (N, r) the states on the first r directions, centred (the raw gauge)
    double *Z;             // (N, r) in the canonical gauge: Y Q_l
    double *P;             // (N, r) residual PCA coordinates, centred
    double *B;             // (r + 1, n) the logits' readout from Y
    int *choice;           // (N, k) the expert choices
} geo_layer;

typedef struct {
    int L, N, ntrain, r, d;
    int rmax;              /* the largest layer rank (angles' third dimension) */
    uint64_t seed;
    geo_layer *layers;     // (L)
    double *angles;        // (L, L, rmax) radians, ascending; NaN past min(r_a, r_b)
    double *mean_angle;    // (L, L) degrees
    double *overlap;       // (L, L) mean cos^2 of the angles (1: one subspace, ~r/d: unrelated)
    geo_gpa gpa;
    double *rand_R;        // (L, r, r) the random gauge's rotations: z = y R_l
    geo_fit fit[GEO_NMETHODS];
} geometry;

/* Everything above for layers in[0..L) (L >= 2, one width d), their inputs
 * from get. Errors name the layer: one layer only, widths that differ, a
 * router of rank 0, too few tokens for the split. */
int geometry_compute(const geo_layer_in *in, int L, geo_inputs_fn get, void *ctx, const geo_opts *o,
                     geometry *G, ms_err *err);
void geometry_free(geometry *G);

#endif
