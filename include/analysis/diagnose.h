/* diagnose.h - why an alignment fails, in numbers.
 *
 * Per checkpoint: the genericity conditions of the symmetry theorems (distinct
 * experts, pairwise distinct gate differences, for top-k: k >= 2, n - 1 <= d and
 * the rank / smallest singular value of the consecutive gate differences) and,
 * with an evaluation set, the routing load (dead and collapsed experts).
 * Per pair: the margin of each method's assignment, whether the methods agree,
 * the weight-matching residual of every matched slot, whether the chosen order
 * is the best one (from the landscape), and whether the heads are identical.
 *
 * Every finding is a {severity, code, text, number} record, curses-free, so the
 * CLI, `info` and the TUI pane show the same words. A finding with severity
 * DG_WARN or above is a flag; DG_OK and DG_INFO records carry the numbers of the
 * conditions that hold.
 *
 * Distances (all in double):
 *   expert distance  d(e, f) = min over hidden permutations P of |theta_e - P theta_f|
 *                    (theta = fc1 w/b, fc2 w/b [, fc3 w/b]); weight matching finds
 *                    the minimising P exactly. Relative: over the RMS of |theta|.
 *                    For h > DG_WM_MAX_H the expert (Gram) cost of m against
 *                    itself instead, relative to its mean off-diagonal entry.
 *   output distance  RMS over (N', d) of E_i(X) - E_j(X), N' = min(N, 2048) first
 *                    samples. Relative: over the RMS of the expert outputs.
 *   gate rows        r_i = [W_i | b_i] (d+1); min |r_i - r_j|.
 *   gate differences min over ordered pairs (i,j) != (k,l), i != j, k != l, of
 *                    |(r_i - r_j) - (r_k - r_l)|. Both relative to the mean
 *                    |r_i - mean r| (translation-free).
 *   top-k rank       M (n-1, d), M[i-1] = W_{i-1} - W_i (i = 1..n-1); singular
 *                    values by a one-sided Jacobi SVD of our own (no LAPACK);
 *                    rank = #{sigma > sigma_max * max(n-1, d) * FLT_EPSILON};
 *                    sigma_min is the (n-1)-th singular value (0 when n-1 > d).
 *   routing          load_mean[i] = mean gate weight; load_frac[i] = fraction of
 *                    samples with i in the top-k (dense: i is the argmax, ties to
 *                    the smaller index). Dead: top-k never selects it; dense: mean
 *                    gate weight below 0.01 / n.
 *   margin           second-best assignment total minus the best, relative to the
 *                    mean entry of the cost matrix; ambiguous below 1%.
 */
#ifndef MS_DIAGNOSE_H
#define MS_DIAGNOSE_H

#include <stdio.h>

#include "align/align.h"
#include "io/evalset.h"
#include "landscape/landscape.h"
#include "model/model.h"

typedef enum { DG_OK = 0, DG_INFO = 1, DG_WARN = 2, DG_BAD = 3 } dg_severity;

/* What would settle a finding the diagnostics had to leave open. The library
 * only names it; each front end says how to get it (the CLI names its flag,
 * the TUI points at its orders pane). */
typedef enum {
    DG_NEXT_NONE = 0,
    DG_NEXT_EVAL = 1,      /* an evaluation set */
    DG_NEXT_LANDSCAPE = 2, /* the landscape (the rank of the chosen order) */
} dg_next;

typedef struct {
    dg_severity severity;
    char code[32];   /* stable id: "experts_distinct", "dead_expert", ... */
    char who[8];     /* "A", "B", "A,B" or "" */
    char text[320];  /* the finding in plain words, with its number; never a flag */
    double number;   /* the key number (NaN when none) */
    dg_next next;    /* what would settle it, DG_NEXT_NONE when nothing is open */
} dg_finding;

typedef struct {
    dg_finding *items;
    int n, cap;
} dg_list;

void dg_list_free(dg_list *l);
const char *dg_severity_name(dg_severity s); /* "ok", "info", "warn", "bad" */
/* Append a finding (text formatted from fmt) to l. */
void dg_add(dg_list *l, dg_severity sev, const char *code, const char *who, double number,
            const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Findings at or above severity min. */
int dg_count(const dg_list *l, dg_severity min);
/* The first finding with this code (and who, unless who is NULL), or NULL. */
const dg_finding *dg_find(const dg_list *l, const char *code, const char *who);

#define DG_REL_TINY 1e-3     /* relative distance below which two things are "the same" */
#define DG_MARGIN_TINY 0.01  /* relative assignment margin below which it is ambiguous */
#define DG_MARGIN_LOW 0.05   /* a margin below this is named beside a poor rank */
#define DG_REL_UNRELATED 0.9 /* median relative slot residual from which the experts do not correspond */
#define DG_SPREAD_LOW 0.1    /* the orders' barriers within this fraction of the worst: the order hardly matters */
#define DG_OUTPUT_SAMPLES 2048
#define DG_WM_MAX_H 512      /* larger experts: Gram distances instead of n^2/2 assignments */
#define DG_WM_MAX_PAIRS 20000 /* more pairs of experts (n > 200): Gram distances too */
/* Bounds that keep n = 4096 finishing (the plain forms are O(n^4) and O(n^2 N d)):
 * gate differences for n > DG_GATE_DIFF_PLAIN_N by a pruned sweep of at most
 * DG_GATE_DIFF_WORK distance evaluations; the output distances on at most
 * DG_OUTPUT_WORK / (n^2 / 2 d) samples (and at least 16). */
#define DG_GATE_DIFF_PLAIN_N 64
#define DG_GATE_DIFF_WORK 5e7
#define DG_OUTPUT_WORK 4e9

/* Per-checkpoint numbers. Arrays are malloc'd; free with diag_ckpt_free. */
typedef struct {
    int n, d, h, k, topk;
    int expert_gram;            /* h > DG_WM_MAX_H: expert_dist holds Gram distances
                                 * (the expert cost of m against itself), min_rel is
                                 * relative to their mean off-diagonal value */
    double *expert_dist;        // (n, n) WM-aligned parameter distances, 0 on the diagonal
    double expert_rms;          /* RMS of |theta_i| */
    double expert_min, expert_min_rel;
    int expert_pair[2];
    int has_outputs, nsamples;  /* with an evaluation set */
    double *output_dist;        // (n, n)
    double output_rms;
    double output_min, output_min_rel;
    int output_pair[2];
    double gate_scale;          /* mean |r_i - mean r| */
    double gate_row_min, gate_row_min_rel;
    int gate_row_pair[2];
    double gate_diff_min, gate_diff_min_rel;
    int gate_diff_pairs[4];     /* (i, j), (k, l) */
    int gate_diff_exhaustive;   /* 0: the sweep stopped at DG_GATE_DIFF_WORK, min is an upper bound */
    int nsigma;                 /* n - 1 */
    double *sigma;              // (n-1) singular values of M, descending (zeros past d)
    int rank;
    double sigma_min, sigma_max;
    int has_routing, N;
    double *load_mean;          // (n)
    double *load_frac;          // (n)
} diag_ckpt;

void diag_ckpt_free(diag_ckpt *s);

/* The conditions of one checkpoint; E may be NULL (no outputs, no routing).
 * who names it in the findings ("A", "B", or "" for `info`). Findings are
 * appended to out. */
int diag_checkpoint(const moe_model *m, const evalset *E, const char *who, diag_ckpt *s,
                    dg_list *out, ms_err *err);

typedef struct {
    cost_method method;   /* the chosen alignment (default expert) */
    int center;           /* gate centring (default 1) */
    int landscape;        /* 1: compute the landscape (rank of the chosen order); 0: skip;
                           * -1 (default): only when n! <= 5040 */
    int T;                /* points for the landscape (default 25) */
    const landscape *L;   /* if not NULL, a finished landscape of (A, B) to use */
    /* the landscape's progress (ls_opts' progress, phase, ctx); may be NULL */
    void (*progress)(void *ctx, long done, long total);
    void (*phase)(void *ctx, const char *what, long done, long total);
    void *ctx;
    const double *cost_expert; /* (n, n) the expert cost of A's experts against B's when the
                                * caller has it (the explorer's front): not computed again */
} diag_opts;

void diag_opts_default(diag_opts *o);

typedef struct {
    int n;
    diag_ckpt a, b;
    int heads_equal;
    int *order[COST_NMETHODS];        /* (n) by cost_method */
    int *second_order[COST_NMETHODS]; /* (n) best assignment different from order */
    double total[COST_NMETHODS], second[COST_NMETHODS], margin[COST_NMETHODS];
    double margin_rel[COST_NMETHODS], cost_mean[COST_NMETHODS];
    int methods_agree;
    cost_method method;     /* the chosen one */
    double *slot_resid;     // (n) WM residual of slot i: A's expert i vs B's expert order[i]
    double *slot_rel;       // (n) relative to the RMS of the two experts' |theta|
    int slot_gram;          /* h > DG_WM_MAX_H: slot_resid is the pair's expert (Gram) cost
                               instead, slot_rel relative to that cost's mean over all pairs */
    double *cost_expert;    // (n, n) the expert cost of A's against B's experts, when computed
    int worst_slot;
    int have_landscape;     /* the three below are valid */
    long rank, norders;
    long tied, rank_auc;    /* tie class size and AUC tie-break rank (rank.h) */
    int exhaustive;
    double barrier_chosen, barrier_best, barrier_worst;
    long rank_other;        /* the other cost method's order: its rank and barrier */
    double barrier_other;
    int barrier_tie;        /* chosen and best barriers equal within 1e-6 of the loss scale */
    int *best_order;        /* (n) */
    dg_list findings;
} diag_report;

/* Everything for the pair; A and B must be compatible. E may be NULL (no
 * routing, no landscape). */
int diag_pair(const moe_model *A, const moe_model *B, const evalset *E, const diag_opts *o,
              diag_report *r, ms_err *err);
void diag_report_free(diag_report *r);

/* Convenience for the TUI: just the findings for the pair (o may be NULL). */
int diag_findings(const moe_model *A, const moe_model *B, const evalset *E, const diag_opts *o,
                  dg_list *out, ms_err *err);

/* Print findings as text ("  [warn] ..."), one per line; title may be NULL. */
void dg_print(FILE *fp, const dg_list *l, const char *title);

struct cJSON;
/* `moescope info`: the genericity section for one checkpoint, printed to fp;
 * with json not NULL also added to it as "genericity": {findings, flags, numbers}. */
void diag_info_print(FILE *fp, const moe_model *m, struct cJSON *json);
/* Findings as a JSON array of {severity, code, who, text, number}. */
struct cJSON *dg_list_json(const dg_list *l);

/* The report as JSON (format "moescope.diagnose/1"), written atomically. */
int diag_write_json(const diag_report *r, const char *a_path, const char *b_path,
                    const char *e_path, const char *path, ms_err *err);

#endif
