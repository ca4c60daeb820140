/* align.h - Algorithm 1 applied to a model: the expert order by
 * linear assignment on a cost matrix (cost_matrix.h), weight matching inside
 * matched pairs (weight_matching.h), and B re-expressed in A's basis with
 * both (same function as B). */
#ifndef MS_ALIGN_H
#define MS_ALIGN_H

#include "align/cost_matrix.h"
#include "model/model.h"

/* Expert order from an (n,n) cost C: one linear assignment, or for a
 * group-limited router (moe_groups_active(c) = G > 1, m = n/G) the two-level
 * assignment over the wreath product S_m wr S_G: for every pair of groups
 * (a of A, b of B) an inner m x m assignment on C's block, whose totals form
 * the G x G cost of the outer assignment of groups; slot a*m+i then holds
 * B's expert outer[a]*m + inner[a][outer[a]][i]. total: the sum of C over
 * the chosen cells. */
int align_order(const moe_config *c, const double *C, int *order, double *total, ms_err *err);
int align_order_grouped(const double *C, int n, int G, int *order, double *total, ms_err *err);
/* The best order other than best (align_order's), among the orders align_order
 * chooses from: for a group-limited router the group-preserving ones (the
 * second-best group map with optimal inner assignments, or best with one pair
 * of groups' inner assignment replaced by its second best, whichever costs
 * less), else all of S_n (lap_second_best). Its total goes to *total; -1 when
 * there is no other order. */
int align_second_best(const moe_config *c, const double *C, const int *best, int *second,
                      double *total, ms_err *err);

typedef struct {
    int order_stage;    /* 1: expert order by assignment; 0: identity */
    int wm_stage;       /* 1: weight matching; 0: none */
    cost_method method; /* cost for the order stage */
    int center;         /* gate centring (gate method) */
    const int *order;   /* if not NULL, use this order (n) instead of solving */
    int any_order;      /* accept an order that splits a group-limited router's groups
                           (the result then computes another function; curve --order) */
    const float *X;     /* (N, d) an evaluation set's inputs at the layer, NULL: none; the */
    int N, d;           /* data-driven methods read them (cost_data.h) */
} align_opts;

void align_opts_default(align_opts *o); /* order on, wm on, expert, centred */

/* The hidden permutation P (h) of b onto a as method m matches hidden units:
 * its own matching where it has one and X (N, d) is there (activation: the
 * units' activations correlated on X, Git Re-Basin), else weight matching. The
 * one rule for align, curve, merge and the landscape's pairs. S: an (h, h)
 * workspace of doubles, or NULL (allocated here). */
int align_match_hidden(const moe_expert *a, const moe_expert *b, const moe_config *c, cost_method m,
                       const float *X, int N, int *P, double *S, ms_err *err);
/* Does method m read the evaluation set's inputs (its cost, or its hidden matching)? */
int align_method_reads_set(cost_method m);

typedef struct {
    int *order;         /* (n) chosen expert order pi */
    double cost_total;  /* assignment total (0 when order given/identity) */
    int *hidden_perm;   /* (n*h) P for each slot, identity when wm off */
    int *shared_order;  /* (s) */
    int *shared_perm;   /* (s*hs), hs the shared experts' width */
    /* with weight matching: the largest |A - aligned B| over the routed and shared
     * experts' parameters, and the largest |A| among them (NaN without it) - the
     * same numbers whether the layers are held or streamed */
    double expert_diff, expert_scale;
} align_result;

/* out = B re-expressed in A's basis (out is allocated here; free with moe_free). */
int align_models(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                 align_result *res, ms_err *err);
/* The same, written over B (no second copy of the layer: experts are swapped
 * into their slots and permuted where they lie); the result equals
 * align_models' bit for bit. On failure B is left partly aligned: free it. */
int align_models_inplace(const moe_model *A, moe_model *B, const align_opts *o,
                         align_result *res, ms_err *err);
void align_result_free(align_result *r);
/* align_models_inplace for layers whose routed experts are read one at a time
 * (moe_load_stream: sa, sb; a source without read means the model's own
 * experts): the order (costs from the sources), B's gate rows and shared experts
 * aligned in B, and each slot's hidden permutation into res, matched with one
 * expert of A and one of B in memory. B's routed experts are left where they
 * are: align_stream_slot gives slot e of the aligned B, bit for bit what
 * align_models_inplace leaves there. */
int align_models_stream(const moe_model *A, const expert_source *sa, moe_model *B,
                        const expert_source *sb, const align_opts *o, align_result *res,
                        ms_err *err);
int align_stream_slot(const moe_config *c, const expert_source *sb, const align_result *res,
                      int e, moe_expert *dst, ms_err *err);
/* align_models for mapped layers (moe_is_mapped: A's and B's routed weights where
 * their checkpoints keep them): the costs and weight matching read one expert at a
 * time (align_models_stream), and out's routed experts are views of B's mapped
 * weights (slot i: expert order[i], hidden units in res's permutation; wp_view),
 * no copy of them: B and res must outlive out's use. The same function, the same
 * values a panel at a time, as align_models' out. */
int align_models_mapped(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                        align_result *res, ms_err *err);
/* Only B's shared experts, aligned as align_models aligns them under o (ordered by
 * the expert cost when the order stage runs, weight-matched when wm_stage), into
 * out (c->s experts the caller carved with moe_shared_config): bit for bit
 * align_models' out->shared, without copying the routed experts. B's shared experts
 * mapped (at most one, or no order stage): out carved for their biases alone
 * (moe_expert_carve_biases), each a view of B's file in the hidden order kept in
 * views (s, hs); B and views must outlive out's use (NULL views: B's in floats). */
int align_shared(const moe_model *A, const moe_model *B, const align_opts *o, moe_expert *out, int *views,
                 ms_err *err);

#endif
