/* cost_matrix.h - the data-free expert costs of Algorithm 1 step 1: how far
 * B's expert j is from A's slot i, for the expert-order assignment. */
#ifndef MS_COST_MATRIX_H
#define MS_COST_MATRIX_H

#include <stddef.h>

#include "align/cost_method.h"
#include "model/model.h"

/* C (n,n): C[i*n+j] = cost of putting B's expert j in A's slot i, for a method
 * that needs no evaluation set (cost_matrix_in for any).
 * gate: sqrt(|Wbar^A_i - Wbar^B_j|^2 + (bbar^A_i - bbar^B_j)^2), centred over
 * experts when center != 0. expert: Gram-matrix distance (permutation
 * invariant). Gram products use OpenBLAS. */
int cost_matrix(const moe_model *A, const moe_model *B, cost_method method, int center,
                double *C, ms_err *err);
/* cost_matrix for layers whose routed experts are read one at a time from sa / sb
 * (moe_load_stream; NULL or a source without read: the model's own experts):
 * the same numbers, bit for bit, with one expert in memory at a time. */
int cost_matrix_src(const moe_model *A, const expert_source *sa, const moe_model *B,
                    const expert_source *sb, cost_method method, int center, double *C,
                    ms_err *err);
/* The assignment cost of an order: sum_i C[i][order[i]] (C is (n,n)). */
double cost_of_order(const double *C, const int *order, int n);
/* How the expert cost is computed (tests, benchmarks); zero: the defaults. */
typedef struct cost_tuning {
    int side;           /* 0 the cheaper side of the Gram products by their flops,
                         * 1 d x d Grams, 2 h x h products per pair */
    double block_bytes; /* d x d Grams formed in row blocks of at most this (0: 256 MiB) */
} cost_tuning;
/* cost_matrix_src computed as t says (NULL: the defaults): the same numbers up
 * to rounding whichever side and block size. */
int cost_matrix_tuned(const moe_model *A, const expert_source *sa, const moe_model *B,
                      const expert_source *sb, cost_method method, int center,
                      const cost_tuning *t, double *C, ms_err *err);
/* The exact expert cost is offered when it would take at most this long: its flops
 * at 100 GFLOP/s plus, for layers read expert by expert, the decoding of what it
 * reads at 2 GB/s. Mixtral-sized (streamed): ~5 min; OLMoE-sized: ~20 min;
 * DeepSeek-V3-sized (n = 256, d = 7168, h = 2048), which cannot be held: its d side
 * is 3.0e14 flops but 256 MiB of Gram blocks hold 9 of its rows, so the 512
 * experts would be decoded ~3200 times over (~17 hours), and its h side is 2.4e16
 * flops (~66 hours). No randomised estimate is offered instead. */
#define COST_EXPERT_MAX_SECONDS (3.0 * 3600.0)
/* Flops of the expert cost of na x nb experts of c, on the side it picks. */
double cost_expert_flops(const moe_config *c, int na, int nb);
/* 1 if within COST_EXPERT_MAX_SECONDS (streamed: the experts are read from files);
 * else 0 and why (a sentence) in why. cost_matrix refuses the expert method with it. */
int cost_expert_offered(const moe_config *c, int na, int nb, int streamed, char *why, size_t cap);
/* Bytes the expert cost of na x nb experts of c allocates (on the side it picks). */
double cost_expert_bytes(const moe_config *c, int na, int nb);
/* -1 with a message naming both files when A's and B's experts cannot be compared. */
int cost_check_shapes(const moe_model *A, const moe_model *B, ms_err *err);
/* Method m's cost matrix C (n,n) from in: any row of cost_methods[]; a method
 * that needs an evaluation set fails without in->X, saying so. */
int cost_matrix_in(cost_method m, const cost_input *in, double *C, ms_err *err);
/* The rows of cost_methods[] (cost_method.h): the gate and expert costs above. */
int cost_gate(const cost_input *in, double *C, ms_err *err);
int cost_expert(const cost_input *in, double *C, ms_err *err);
/* Same for the shared experts (s,s), expert method. */
int cost_matrix_shared(const moe_model *A, const moe_model *B, double *C, ms_err *err);

#endif
