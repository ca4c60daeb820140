/* geo_network.h - the routing geometry (geometry.h) of a network checkpoint
 * (network/net_model.h: a GPT-2 whose blocks' MLPs are MoE layers), whose MoE
 * inputs moescope computes itself, and the transport test that only a whole
 * network allows.
 *
 * Legend: N sequences of T tokens (the evaluation set; a ViT's N images of
 * P + 1 tokens, net_tokens), L MoE blocks, r the common rank, d the width.
 *
 * Inputs: each MoE block's ln_2 h (what its router reads) on every token of
 * the evaluation set, from one threaded evaluation (net_run.block_inputs).
 * Split: the first round(frac N) sequences train (at least one, at least one
 * held out; a single sequence is split by tokens), the rest are held out: the
 * tokens of one sequence are not independent, so a sequence is never split.
 *
 * Transport (dNLL): the control component of MoE block l + 1's input is
 * replaced by the one its shared transition predicts from block l's input in
 * the same pass,
 *     x <- x + U (c_hat - c),   c = U^T x,   c_hat = mu_{l+1} + (U_l^T x_l - mu_l) K
 * (U, mu: block l + 1's first r basis directions and its states' training
 * mean; x_l the input block l was given), for K
 *     canonical  Q_l A Q_{l+1}^T     the shared A of the canonical gauge
 *     raw        A_raw               the shared A fitted in the raw gauge
 *     random     R_l A_rand R_{l+1}^T  the random gauge's
 *     specific   Q_l A_l Q_{l+1}^T   the layer-specific transition (a ceiling)
 *     mean       0                   the states' training mean (the routing
 *                                    information removed: a floor)
 * and the network's loss on the held-out sequences is compared with the loss
 * nothing replaced: dNLL per step (block l + 1 replaced alone) and with every
 * block after the first replaced in one pass (each from the block before it as
 * replaced: the transition rolled out across depth). The router and the
 * experts of the block both see the replaced input, as a forward pre-hook on
 * the MoE module would give it. */
#ifndef MS_GEO_NETWORK_H
#define MS_GEO_NETWORK_H

#include "analysis/geometry.h"
#include "network/net_eval.h"

/* The training sequences and tokens of frac of N sequences of T tokens. */
void geo_network_split(int N, int T, double frac, int *train_seqs, int *train_tokens);

/* The geometry of m's MoE blocks on E (frac of its sequences train; o's N and
 * ntrain are set here). */
int geometry_network(const net_model *m, const net_evalset *E, double frac, geo_opts *o, const net_par *par,
                     geometry *G, ms_err *err);

enum { GT_CANONICAL = 0, GT_RAW, GT_RANDOM, GT_SPECIFIC, GT_MEAN, GT_COUNT };
/* "canonical", "raw", "random", "specific", "mean" */
const char *geo_transport_name(int t);

typedef struct {
    int L, ntrain_seqs, heldout_seqs;
    double loss;          /* the held-out loss, nothing replaced */
    double *dnll;         // (GT_COUNT, L - 1): step l -> l + 1, block l + 1 replaced alone
    double all[GT_COUNT]; /* every block after the first replaced in one pass */
} geo_transport;

/* The transport test of G (geometry_network of m on E, its first ntrain_seqs
 * sequences the training ones) on E's held-out sequences. */
int geo_transport_run(const geometry *G, const net_model *m, const net_evalset *E, int ntrain_seqs,
                      const net_par *par, geo_transport *T, ms_err *err);
void geo_transport_free(geo_transport *T);

#endif
