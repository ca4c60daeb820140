/* symmetry.h - the symmetry actions of an MoE layer: they change parameters, never the function. */
#ifndef MS_SYMMETRY_H
#define MS_SYMMETRY_H

#include <stdint.h>

#include "model/model.h"

/* Expert order pi: slot i of the result holds m's expert pi[i] and gate row pi[i]. */
void moe_permute_experts(moe_model *m, const int *pi);
/* Shared experts reordered the same way (their sum is order-free). */
void moe_permute_shared(moe_model *m, const int *pi);
/* Add (cW (d), cb) to every gate row. */
void moe_translate_gate(moe_model *m, const float *cW, float cb);
/* Hidden permutation P of one expert: unit u of the result is unit P[u] of e
 * (rows of fc1/fc3 and their biases, columns of fc2). */
void moe_expert_permute_hidden(moe_expert *e, const moe_config *c, const int *P);

/* The symmetry group of a layer's router: which reparametrisations keep the
 * function, and why (shown by info, diagnose and the TUI's help). */
typedef struct {
    char name[128];    /* e.g. "S_8 x translations" or "S_2 wr S_4 (group-preserving)" */
    char why[640];     /* one paragraph: why this group and no larger one */
    int translation;   /* a common gate translation is a symmetry: gate centring is valid */
    int groups;        /* > 1: only permutations mapping whole groups onto groups */
    int group_size;    /* experts per group (n / groups) */
    int top1;          /* k = 1: flagged, outside the theory */
} moe_symmetry;

void moe_symmetry_group(const moe_config *c, moe_symmetry *g);
/* Is a common translation of the gate rows a symmetry? Softmax scores: yes,
 * whatever follows them (dense; top-k of the logits or of the probabilities,
 * renormalised or not, group-limited, routed scale: Mixtral, Qwen, OLMoE,
 * DeepSeek-V2, Switch, Granite, JetMoE, GPT-OSS, native). Sigmoid scores
 * (DeepSeek-V3) and PhiMoE's sparsemixer (masks by |s|): no. The one decision
 * behind the gate cost's centring, scramble's translation and the routing's
 * centred gate (moe_gate_routing). */
int moe_gate_centring_valid(const moe_config *c);
/* The number of groups when the group limit can change the routing, else 0
 * (no groups, all groups kept, or groups ranked by their maxima with
 * k <= topk_group: the k best experts always lie in kept groups). */
int moe_groups_active(const moe_config *c);
/* Does the expert order pi map whole groups onto whole groups (always 1
 * without groups)? */
int moe_order_in_group(const moe_config *c, const int *pi);

/* A random element of G(n) plus random hidden permutations, from seed.
 * Records what it did in the metadata (moescope.scramble.*): the expert order,
 * and for testing the inverse can be recovered from it. If order_out is not
 * NULL it receives the expert order (n).
 *
 * Precisely, from rng_seed(seed), in this order:
 *   1. pi = rng_permutation(n); moe_permute_experts(m, pi): slot i of the
 *      result holds the ORIGINAL expert pi[i] (the order as APPLIED, the same
 *      convention as moe_permute_experts);
 *   2. for each slot i = 0..n-1 a hidden permutation rng_permutation(h);
 *   3. if s > 0: shared order sp = rng_permutation(s) applied the same way,
 *      then a hidden permutation per shared slot;
 *   4. if translate > 0: cW[j] = N(0,1)*scale (j = 0..d-1), cb = N(0,1)*scale,
 *      scale = translate * the RMS of the gate weights (after step 1), added
 *      to every row (translate = 1: a shift as large as the rows themselves).
 * Metadata written: moescope.scramble.seed = the seed (decimal),
 *   moescope.scramble.order = pi as "2 0 3 1" (slot i holds original pi[i]),
 *   moescope.scramble.shared_order = sp (only when s > 0),
 *   moescope.scramble.translate = translate ("0": none; "1": the default).
 * Group-limited routers (n_group = g > 1, m = n / g): step 1 draws from the
 * wreath product instead: a group order rho = rng_permutation(g), then for
 * each slot group a = 0..g-1 an inner order tau_a = rng_permutation(m), and
 * pi[a m + i] = rho[a] m + tau_a[i]. Sigmoid routers (no translation
 * symmetry) are never translated, whatever `translate` says. The selection
 * bias permutes with its gate row; a gated shared expert's gate vector
 * stays where it is (it is not per expert).
 * Recovery: aligning the scrambled model S to the original O (B = S, A = O)
 * must find the expert order sigma = pi^{-1}, i.e. sigma[pi[i]] = i: slot j
 * of the aligned S holds S's expert sigma[j], which is O's expert j. */
void moe_scramble(moe_model *m, uint64_t seed, double translate, int *order_out);
/* The same, with the shared experts' order too (shared_out: s ints, slot j holding
 * the source's shared expert shared_out[j]; NULL: not wanted). */
void moe_scramble_orders(moe_model *m, uint64_t seed, double translate, int *order_out,
                         int *shared_out);
/* The same for m mapped too (moe_load_mapped): its routed experts become views of
 * the mapping, reading the hidden permutations from hidden (n h ints, which must
 * outlive m's use); m in floats: hidden may be NULL. Same draws, same values. */
void moe_scramble_mapped(moe_model *m, uint64_t seed, double translate, int *order_out, int *shared_out,
                         int *hidden);

/* A fingerprint of m's parameters (FNV-1a over the float bits of the layer
 * and head as loaded): moe_scramble records the source's as
 * moescope.scramble.source, so a later alignment can tell that B is a
 * scramble of A. */
uint64_t moe_fingerprint(const moe_model *m);

/* An expert order as moescope prints it everywhere, "2 0 3 1": into buf (cap
 * bytes, always terminated, cut after the last whole number that fits);
 * returns the length the whole string needs, as snprintf. 12 n + 1 bytes
 * always suffice. */
size_t moe_order_format(char *buf, size_t cap, const int *p, int n);
/* The same, allocated (the caller frees). */
char *moe_order_string(const int *p, int n);

/* Does B carry a scramble record of A (moescope.scramble.source equal to A's
 * fingerprint, and a valid moescope.scramble.order pi)? Returns 0 when not;
 * otherwise 1 if order (the expert order an alignment of B to A found) is
 * pi's inverse (order[pi[i]] = i: every expert back in its own slot), 2 if it
 * is not. A sentence that says so goes to msg (always filled). */
int moe_scramble_check(const moe_model *A, const moe_model *B, const int *order, char *msg,
                       size_t size);

/* How B' (B aligned to A) still differs from A in the gate: the common shift
 * c = mean_i (row_i(B') - row_i(A)) over the rows [W_i | b_i], its norm
 * *shift, the RMS over rows of what is left, ||row_i(B') - row_i(A) - c||,
 * in *resid, and the RMS norm of A's rows in *rows. For softmax routers the
 * shift is a translation: it changes no output. */
void moe_gate_shift(const moe_model *A, const moe_model *Bp, double *shift, double *resid,
                    double *rows);

#endif
