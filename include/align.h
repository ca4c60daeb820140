/* align.h - Algorithm 1 (SPEC §4): expert cost matrices, expert order by
 * linear assignment, weight matching inside matched pairs, and applying it all
 * to B so that B is re-expressed in A's basis (same function as B). */
#ifndef MS_ALIGN_H
#define MS_ALIGN_H

#include "model.h"

typedef enum { COST_GATE = 0, COST_EXPERT = 1 } cost_method;

const char *cost_method_name(cost_method m);
int cost_method_parse(const char *s, cost_method *m); /* "gate" | "expert" */

/* C (n,n): C[i*n+j] = cost of putting B's expert j in A's slot i.
 * gate: sqrt(|Wbar^A_i - Wbar^B_j|^2 + (bbar^A_i - bbar^B_j)^2), centred over
 * experts when center != 0. expert: Gram-matrix distance (permutation
 * invariant). Gram products use OpenBLAS. */
int cost_matrix(const moe_model *A, const moe_model *B, cost_method method, int center,
                double *C, ms_err *err);
/* Same for the shared experts (s,s), expert method. */
int cost_matrix_shared(const moe_model *A, const moe_model *B, double *C, ms_err *err);

/* Expert order from an (n,n) cost C: one linear assignment, or for a
 * group-limited router (moe_groups_active(c) = G > 1, m = n/G) the two-level
 * assignment over the wreath product S_m wr S_G: for every pair of groups
 * (a of A, b of B) an inner m x m assignment on C's block, whose totals form
 * the G x G cost of the outer assignment of groups; slot a*m+i then holds
 * B's expert outer[a]*m + inner[a][outer[a]][i]. total: the sum of C over
 * the chosen cells. */
int align_order(const moe_config *c, const double *C, int *order, double *total, ms_err *err);
int align_order_grouped(const double *C, int n, int G, int *order, double *total, ms_err *err);

/* S (h,h) = W1a W1b^T + b1a b1b^T + W2a^T W2b [+ W3a W3b^T + b3a b3b^T]. */
void wm_similarity(const moe_expert *a, const moe_expert *b, const moe_config *c, double *S);
/* Hidden permutation P (h) maximising sum_u S[u][P[u]]: unit u of the aligned
 * expert is unit P[u] of b. Returns the objective in *score if not NULL. */
int wm_match(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
             double *score, ms_err *err);

/* wm_match with a caller-provided workspace S of h*h doubles (align_models
 * reuses one for every slot instead of allocating per pair). */
int wm_match_into(const moe_expert *a, const moe_expert *b, const moe_config *c, int *P,
                  double *score, double *S, ms_err *err);

typedef struct {
    int order_stage;    /* 1: expert order by assignment; 0: identity */
    int wm_stage;       /* 1: weight matching; 0: none */
    cost_method method; /* cost for the order stage */
    int center;         /* gate centring (gate method) */
    const int *order;   /* if not NULL, use this order (n) instead of solving */
} align_opts;

void align_opts_default(align_opts *o); /* order on, wm on, expert, centred */

typedef struct {
    int *order;         /* (n) chosen expert order pi */
    double cost_total;  /* assignment total (0 when order given/identity) */
    int *hidden_perm;   /* (n*h) P for each slot, identity when wm off */
    int *shared_order;  /* (s) */
    int *shared_perm;   /* (s*hs), hs the shared experts' width */
} align_result;

/* out = B re-expressed in A's basis (out is allocated here; free with moe_free). */
int align_models(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                 align_result *res, ms_err *err);
void align_result_free(align_result *r);

#endif
