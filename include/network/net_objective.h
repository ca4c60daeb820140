/* net_objective.h - a network's held-out loss as the objective of the
 * landscape and the curves (ls_objective, curve.h): the barrier of the network,
 * not of one layer.
 *
 * Two networks A and B share their frozen backbone (every tensor outside the MoE
 * blocks; net_backbone_diff) and differ in their MoE blocks. One block is
 * chosen: the landscape ranks its orders, and eval() is given its interpolated
 * layer. Every other MoE block is interpolated at the same t, each aligned on its
 * own (the symmetry group of the network is the product of the blocks'):
 *   LS_VAR_MAIN  by the alignment the caller chose (align_opts: --method, ...)
 *   LS_VAR_NAIVE identity order, no weight matching   (the naive curve)
 *   LS_VAR_SKIP  identity order, weight matching      (the skip-order curve)
 * so naive, skip-order and the full alignment move every MoE block together.
 * Blocks whose routed weights stay mapped in A's and B's files (net_load_mapped):
 * B's aligned as views of its file (align_models_mapped), the interpolation a mix
 * formed a panel at a time inside each product (moe_interpolate, wpanel.h), so
 * the other blocks cost their shells' floats, not float32 copies of the layers.
 *
 * The blocks before the first MoE block that differs between A and B (or the
 * chosen one, if it comes first) are computed once (net_prefix_compute_to). With
 * interp_backbone the backbones may differ and are interpolated too, θ(t) =
 * (1-t) θ_A + t θ_B on every tensor: the prefix is then recomputed whenever t
 * changes (the landscape keeps t fixed over blocks of orders), and every report
 * says so. */
#ifndef MS_NET_OBJECTIVE_H
#define MS_NET_OBJECTIVE_H

#include "align/align.h"
#include "landscape/curve.h"
#include "network/net_eval.h"

typedef struct net_objective net_objective;

typedef struct {
    int chosen;            /* the MoE block (index into moe_layers) */
    align_opts other;      /* how the other MoE blocks are aligned for LS_VAR_MAIN */
    int interp_backbone;   /* interpolate the backbones too (else they must be equal) */
    net_par par;           /* threads, cancel */
    int values_later;      /* A's and B's backbones are read after create (net_load_backbone) and
                              checked then by the caller (net_evalset_check): create checks
                              their shapes alone; prepare needs them in */
    int ends_later;        /* prepare leaves A's and B's evaluations to the landscape (the view's
                              end hook: a landscape split over processes evaluates each on one of
                              them); it runs A only as far as the MoE blocks' inputs it needs (the
                              chosen block's, the other blocks' for a data-driven method), the
                              same numbers as A's evaluation keeps */
} net_obj_opts;

/* A, B and E are borrowed and must outlive the objective. Computes the prefix,
 * the other blocks' alignments and both end points: net_objective_create,
 * then net_objective_prepare. */
int net_objective_new(const net_model *A, const net_model *B, const net_evalset *E,
                      const net_obj_opts *o, net_objective **out, ms_err *err);
/* The two steps apart, for a caller that shows a screen first (the explorer):
 * create checks and allocates (no evaluation; the view's end points NaN),
 * prepare does the work (seconds to minutes on a large network), naming each
 * step (NET_PREP_*) to the thread's progress listener (progress_inner);
 * cancelled by o->par.cancel or the calling thread's (progress.h). eval() fails until prepare succeeded; a failed or
 * cancelled prepare may be called again. */
int net_objective_create(const net_model *A, const net_model *B, const net_evalset *E,
                         const net_obj_opts *o, net_objective **out, ms_err *err);
int net_objective_prepare(net_objective *no, ms_err *err);
#define NET_PREP_CHECK "checking the magnitudes"
#define NET_PREP_ALIGN "aligning the other MoE blocks"
#define NET_PREP_PREFIX "frozen prefix" /* followed by " up to block L" and why it ends there */
#define NET_PREP_A "end point A"
#define NET_PREP_B "end point B"
#define NET_PREP_INPUTS "MoE blocks' inputs under A" /* ends_later */
const ls_objective *net_objective_view(const net_objective *no);
void net_objective_free(net_objective *no);
/* seconds spent building it, for the time split: the other blocks' alignments,
 * the frozen prefix, the two end points */
void net_objective_times(const net_objective *no, double *align_s, double *prefix_s, double *ends_s);
/* eval() may be called from several threads at once (OBJ_SLOTS evaluate in
 * parallel, more wait their turn). */

#endif
