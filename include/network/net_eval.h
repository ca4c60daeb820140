/* net_eval.h - a network's held-out loss: the evaluation set (token ids, or
 * images and their labels) and the threaded evaluation (legend in net_model.h).
 *
 * GPT-2: loss = the mean next-token cross-entropy over the N (T - 1) positions
 * (as Hugging Face's labels = input_ids), accuracy = next-token top-1.
 * ViT: loss = the mean class cross-entropy of the classifier on the CLS token
 * over the N images, accuracy = top-1 (as ViTForImageClassification's loss with
 * labels). Both summed in double; argmax ties go to the smaller index. The blocks before the first MoE block are frozen and shared, so
 * they are computed once per evaluation set (net_prefix) and every evaluation
 * starts from the residual stream entering that block's MLP.
 *
 * Threads as the layer evaluator's (evaluator.c): fixed items of whole
 * sequences (about NET_ITEM_TOKENS tokens each) go to one worker per CPU (at
 * most 8), BLAS single-threaded inside them; each item's sums are kept and
 * reduced in item order. When items are fewer than threads (one long sequence,
 * a few), the threads without an item take pieces of the items' steps: row
 * panels (NET_PANEL_ROWS) of the attention's projections and of the MLPs, the
 * attention's heads, the head's vocabulary column slices and its rows' losses
 * (net_forward.h), each piece computed whole by whichever thread takes it and
 * the losses summed in row order, so those use every core. The numbers are the
 * same, bit for bit, for any thread count. */
#ifndef MS_NET_EVAL_H
#define MS_NET_EVAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "network/net_evalset.h"

#define NET_ITEM_TOKENS 512
/* An MLP and the attention's projections run over an item's rows in panels
 * this tall (moe_forward's chunks), with a cancel check between pieces, as
 * between blocks and the head's slices:
 * a cancel stops an evaluation of long sequences within one panel's work. */
#define NET_PANEL_ROWS 512
/* What an evaluation tells the calling thread's progress listener
 * (progress_inner): NET_EVAL_ROWS, the rows of the evaluation set done (a
 * fraction while a row is between blocks) of all of them. Only the caller's
 * thread reports; the others' rows count in it.
 *
 * For the tests: MOESCOPE_TEST_EVAL_GATE=FILE makes every item of an
 * evaluation but its first wait until FILE exists (or the cancel): an
 * evaluation then stays in flight, with progress, as long as a test wants. */
#define NET_EVAL_ROWS "evaluation rows"

/* The residual stream entering MoE block moe_layers[0]'s MLP (after its
 * attention), (N T, d); with no MoE block, the stream after the last block
 * (net_prefix_compute_to: block L0's). */
typedef struct {
    int L0;   /* the first MoE block (or a later block), or NL */
    float *h; // (N T, d)
} net_prefix;

typedef struct {
    int threads;          /* workers (0: one per CPU, at most 8) */
    atomic_int *cancel;   /* polled between items, blocks and row panels; non-zero: stop, return -1
                             "cancelled". NULL: the calling thread's (progress_cancel_flag) */
    int checked;          /* the caller ran net_evalset_check on (E, m) (or on two networks m lies
                             between): the magnitudes are not bounded again (a pass over the
                             whole network per evaluation), the shapes still are */
} net_par;

int net_prefix_compute(const net_model *m, const net_evalset *E, const net_par *par, net_prefix *p,
                       ms_err *err);
/* The same up to block L0 (>= the first MoE block; its attention done), the MoE
 * blocks before it m's own: the frozen part of two networks equal below L0. An
 * evaluation from it starts at L0 (the MoE blocks before it are not run again:
 * their loads, inputs and edits are not seen). */
int net_prefix_compute_to(const net_model *m, const net_evalset *E, const net_par *par, int L0, net_prefix *p,
                          ms_err *err);
void net_prefix_free(net_prefix *p);

/* A change to the MoE blocks' inputs as the evaluation runs: before MoE block
 * i (an index into moe_layers) computes, fn may rewrite its input X (M, d)
 * (ln_2 h, what its router and experts read) in place; prev (M, d) is the
 * input the MoE block before it was given in this pass (after its own edit),
 * NULL for the first. M rows of whole sequences, row0 the first's index into
 * the evaluation set's N T tokens. Called from the evaluation's threads, each
 * on its own rows. */
typedef struct {
    void (*fn)(void *ctx, int i, float *X, const float *prev, int M, size_t row0);
    void *ctx;
} net_edit;

/* What one evaluation computes beyond the loss. */
typedef struct {
    const moe_model *const *moe; /* (nmoe) the MoE blocks to use; NULL: m's own */
    int want_load;               /* each MoE block's routing load (below) */
    float *logits;               /* (N T, V) when not NULL; a ViT's (N, V), the CLS tokens' */
    float *const *block_inputs;  /* (nmoe) when not NULL: MoE block i's inputs (N T, d) into
                                    block_inputs[i] (after an edit), where that is not NULL */
    long block_rows;             /* > 0: only the first block_rows rows of those inputs */
    const net_edit *edit;        /* NULL: none */
    double *seq_loss;            /* (N) when not NULL: each sequence's (image's) summed loss */
    int inputs_only;             /* stop once the last MoE block with a block_inputs pointer has
                                    its inputs (the rows of block_rows alone when it is > 0): no
                                    block after it, no head, loss and accuracy NaN. The inputs are
                                    the whole evaluation's, bit for bit (the same items' steps) */
} net_run;

typedef struct {
    double loss, accuracy;
    long positions;     /* net_positions: N (T - 1), a ViT's N */
    int nmoe, n;        /* the loads' shape (0 without want_load) */
    double *load_mean;  /* (nmoe, n) each expert's mean gate weight over the N T tokens */
    double *load_frac;  /* (nmoe, n) the share of tokens routed to it (g > 0) */
} net_eval_result;

/* Evaluate m (its MoE blocks replaced by r->moe) on E, starting from p (NULL:
 * computed inside the items). */
int net_evaluate(const net_model *m, const net_evalset *E, const net_prefix *p, const net_run *r,
                 const net_par *par, net_eval_result *out, ms_err *err);
void net_eval_result_free(net_eval_result *r);

#endif
