/* explore_worker.h - the background worker the TUI (ui/) watches.
 *
 * One worker thread owns the computation. explore_submit replaces the current
 * request (the running one is cancelled within milliseconds); the TUI polls
 * explore_poll, which copies the latest (possibly partial) results under a
 * mutex and never blocks on the computation. */
#ifndef MS_EXPLORE_WORKER_H
#define MS_EXPLORE_WORKER_H

#include "align/align.h"
#include "analysis/diagnose.h"
#include "io/evalset.h"
#include "landscape/landscape.h"
#include "model/model.h"
#include "network/net_objective.h"

/* Orders the explorer samples when the landscape is not exhaustive: a layer's
 * LS_SAMPLES (n > 9, the commands' default too), and on a network's loss (n > LS_OBJ_EXHAUSTIVE_MAX), where each order is
 * whole network evaluations: the landscape command's LS_OBJ_SAMPLES (one
 * default, said in the table's title) */
#define EXPLORE_OBJ_SAMPLES LS_OBJ_SAMPLES

/* rows a sampled table holds beside its sample: the two methods' orders, the identity */
#define EXPLORE_EXTRA_MAX (COST_NMETHODS + 1)

typedef struct {
    int order_stage;        /* expert-order stage on/off */
    int wm_stage;           /* weight-matching stage on/off */
    int center;             /* gate centring on/off */
    cost_method method;     /* cost for the order stage */
    int has_selected;       /* plot this order too */
    int selected[LS_MAX_N];
    int T;                  /* interpolation points */
} explore_request;

typedef struct {
    unsigned long generation; /* changes whenever anything below changes */
    int busy;                 /* the worker is computing */
    double progress;          /* 0..1 of the current request */
    char status[256];         /* "computing landscape 120/40320", errors */
    int n, T;
    ls_kind kind;
    double *t;                /* (T) */
    /* the request these results belong to */
    explore_request req;
    /* cost matrix of req.method/req.center and its assignment */
    double *cost;             /* (n,n), NULL until ready */
    int cost_order[LS_MAX_N];
    double cost_total;
    /* the orders both methods choose (gate with req.center), for the marks */
    int have_methods;
    int method_have[COST_NMETHODS]; /* the method could run (a data-driven one needs the set) */
    int method_order[COST_NMETHODS][LS_MAX_N];
    /* curves: valid when have_* is set */
    int have_naive, have_skip, have_current, have_selected;
    ls_curve naive, skip_order, current, selected;
    /* the order the toggles give (identity when the order stage is off) */
    int current_order[LS_MAX_N];
    /* landscape rows, in the order they finished (sort for display) */
    long norders, ndone;
    ls_row *rows;             /* (ndone) */
    /* (norders_held, n) the landscape's orders, published before its first
     * row: row r's order is orders + r.id * n (explore_row_order); NULL while
     * no landscape has begun. orders_epoch changes whenever they do. */
    uint8_t *orders;
    long norders_held;
    unsigned long orders_epoch;
    long rows_cap;            /* allocated rows (snapshot copies) */
    unsigned long rows_epoch; /* changes when rows are reset or reordered */
    int have_landscape;       /* all rows done: ranks below are valid */
    /* > 0: the complete table's rows carry their barrier's 95% bootstrap
     * interval (ls_row.bar_lo, bar_hi) over this many units of the evaluation
     * set (a network's landscape; bootstrap.h); 0: none */
    int ci_units;
    /* ci_units 0 on a complete layer table: why its orders have no intervals
       (static; the landscape's boot_why), NULL when not said */
    const char *ci_why;
    int exhaustive;           /* 0: the rows are a sample of the orders */
    int groups;               /* > 1: the orders are a group-limited router's group-preserving ones */
    /* the orders the table ranks over: orders_in_set of them (n!, or (m!)^g g!
     * with groups = g > 1), inf past a double (all orders of n > 170): print
     * orders_in_set_log10 then ("about 10^287", ls_count_format). The table
     * holds all of them (exhaustive) or a uniform sample of nsampled; both are
     * set with the first rows_reset of a landscape, before any row. */
    double orders_in_set, orders_in_set_log10;
    long nsampled;            /* 0 when exhaustive */
    /* sampled tables (exhaustive = 0), per method [COST_GATE], [COST_EXPERT],
     * valid when rank[m] > 0: rank[m] is the rank among the sample (1 + the
     * sampled orders more than tau below the method order's barrier), pct[m] =
     * 100 (rank - 1) / nsampled its percentile, pct_lo[m]..pct_hi[m] that
     * percentile's 95 % Wilson interval (percent), rank_est[m] = 1 + pct/100 x
     * orders_in_set the estimated rank among all of them (inf when the set is;
     * its log10 is log10(pct/100) + orders_in_set_log10). Exhaustive tables:
     * pct = pct_lo = pct_hi = the exact percentile, rank_est = rank. */
    double pct[COST_NMETHODS], pct_lo[COST_NMETHODS], pct_hi[COST_NMETHODS], rank_est[COST_NMETHODS];
    /* each method's order's barrier for the table's key (NaN unknown), and
     * whether it is among the rows (a sample need not hold it: the orders
     * pane lists it under the table then) */
    double method_bar[COST_NMETHODS];
    int method_in_rows[COST_NMETHODS];
    /* a sample lacking the methods' orders or the identity (the skip-order
     * with weight matching on, else the naive): each one whose barrier is
     * known is a row all the same, evaluated beside the sample - rows[ndone ..
     * ndone + nextra), their orders at ids norders_held + q. Not in ndone nor
     * in the sample's statistics. */
    long nextra;
    int failed;               /* the last request ended in an error (status says) */
    int rank[COST_NMETHODS];  /* by cost_method, from the complete rows */
    /* tie class size and AUC tie-break rank (rank.h); 0 unknown */
    int tied[COST_NMETHODS], rank_auc[COST_NMETHODS];
    double l_hat[COST_NMETHODS];  /* NaN when undefined */
    double loss_a, loss_b, acc_a, acc_b;
    /* what the landscape is doing while no row is out yet (it reports rows
     * only in its last phase): "" when idle; phase_since is the monotonic
     * clock (explore_clock) when it began, for an elapsed time */
    char phase[96];
    double phase_since;
    /* the landscape's current step within that phase with its count
     * (ls_opts.phase), e.g. "precomputing pairs 40/73"; "" when none */
    char phase_detail[96];
    /* what the front (cost matrices, assignments, curves) is doing, e.g.
     * "expert cost 1.2/3.4 GFlop", "weight matching 12/64 experts", "curve
     * naive"; "" when it is idle. A newer request cancels it mid-phase. */
    char front_phase[96];
    /* a network's preparation in flight (explore_start_net): the step and the
     * rows of its evaluation with the time left, "frozen prefix: rows
     * 512/8192, 0:42 left"; "" when there is none (or it ended) */
    char prep[128];
    /* a network's backbones are read and checked (explore_start_net): the
     * routing geometry may read them; 0 before, and for a layer */
    int net_values;
    /* the ranks came early (landscape on_ranks): rank/l_hat above are final
     * although the table is still filling in */
    int ranks_early;
    /* the diagnostics pane's findings (diag_findings), computed on the
     * diagnostics thread once per (method, centring) when explore_request_diag
     * asks for them. diag_state: EXPLORE_DIAG_NONE (never asked),
     * _COMPUTING, _READY (diag holds the findings of diag_method and
     * diag_center) or _FAILED (diag_error says why). diag_epoch changes
     * whenever diag does. */
    int diag_state;
    cost_method diag_method;
    int diag_center;
    dg_list diag;
    char diag_error[256];
    unsigned long diag_epoch;
    /* the last aligned-checkpoint export (explore_export): export_state
     * EXPLORE_EXPORT_NONE, _RUNNING, _DONE (written at export_path, with the
     * stages of export_req) or _FAILED (export_error says why); export_epoch
     * changes whenever these do */
    int export_state;
    char export_path[512];
    char export_error[256];
    explore_request export_req;
    unsigned long export_epoch;
} explore_snapshot;

enum { EXPLORE_DIAG_NONE = 0, EXPLORE_DIAG_COMPUTING = 1, EXPLORE_DIAG_READY = 2, EXPLORE_DIAG_FAILED = 3 };

typedef struct explore_worker explore_worker;

/* Starts the worker. A, B, E are borrowed and must outlive the worker. E NULL:
 * data-free (an evaluation set that does not fit the layer): costs,
 * assignments, diagnostics and the export, no curves and no landscape. */
explore_worker *explore_start(const moe_model *A, const moe_model *B, const evalset *E, ms_err *err);
/* The same for a network's MoE block: the curves and the landscape on obj (the
 * network's loss, borrowed, outliving the worker; its eval() is called from
 * two threads at once), E the block's own inputs for the diagnostics (may be
 * NULL). */
explore_worker *explore_start_obj(const moe_model *A, const moe_model *B, const evalset *E,
                                  const ls_objective *obj, ms_err *err);
/* A network's MoE block without waiting for the network: A and B the block's
 * layers (the networks' own, their routed weights perhaps not read yet: a shell
 * of net_load_lazy is filled in place by the worker, its config and name left as
 * they are, a mapped block is read into floats of the worker's own; their values
 * checked then: the front's first step, before the costs), no the objective of its loss as net_objective_create left it (the
 * worker prepares it: the frozen prefix and the end points), net and net_b the
 * networks A and B (their backbones' values read by the worker when they are
 * not in, net_load_backbone, and checked on set; same: 1 their backbones are
 * equal, B's then A's values, net_share_backbone; 0 each its own;
 * EXPLORE_SAME_COMPARE compared first, on the worker, as subject_backbones_check:
 * equal, shared; different, the preparation fails with its refusal) and set their evaluation set,
 * for the block's own inputs (the diagnostics'; data-free until they are in).
 * All borrowed, outliving the worker; nothing else touches net and net_b until
 * explore_stop. The costs, assignments and data-free diagnostics come at once;
 * the curves and the landscape once the preparation is done (snapshot.prep
 * says how far it is, net_values when the backbones are in); explore_stop
 * cancels it within one tensor, block or panel of rows. */
#define EXPLORE_SAME_COMPARE (-1)
explore_worker *explore_start_net(const moe_model *A, const moe_model *B, net_objective *no, net_model *net,
                                  net_model *net_b, int same, const net_evalset *set, int block, ms_err *err);
/* the preparation's steps: the backbones' reading ("load seed1 backbone") and
 * check before net_objective_prepare's (NET_PREP_*), and its last after them */
#define EXPLORE_PREP_INPUTS "the block's own inputs"
#define EXPLORE_PREP_BLOCKS "reading the other MoE blocks" /* before the backbones: net_load_lazy's shells */
void explore_submit(explore_worker *g, const explore_request *r);
/* on: a layer's orders get their error bars up to 2^29 per-unit losses (orders
 * x points x units, as landscape --all-error-bars: minutes of resampling on
 * dense8 at 25 points), not only up to 2^25; for the landscapes started after */
void explore_set_all_error_bars(explore_worker *g, int on);
/* Ask for the diagnostics of (method, center). Never blocks: a result
 * computed before is published at once, otherwise the diagnostics thread
 * computes it (diag_state COMPUTING until then); the newest ask wins. */
void explore_request_diag(explore_worker *g, cost_method method, int center);
enum { EXPLORE_EXPORT_NONE = 0, EXPLORE_EXPORT_RUNNING = 1, EXPLORE_EXPORT_DONE = 2, EXPLORE_EXPORT_FAILED = 3 };
/* Write B aligned with the stages of q (order stage, method, centring, weight
 * matching) as a checkpoint, on the worker's side thread: at path, or when a
 * file is there at the first free "stem.2.ext", "stem.3.ext", ... (an export
 * never replaces a file, and never an input). The outcome comes back in the
 * snapshot's export_* fields. */
void explore_export(explore_worker *g, const explore_request *q, const char *path);
/* Copy the latest results into v if v->generation differs (returns 1), else 0. */
int explore_poll(explore_worker *g, explore_snapshot *v);
void explore_snapshot_free(explore_snapshot *v);
/* Every thread told to stop (each at its next check, within a panel of rows);
 * returns at once. explore_stop still joins and frees. */
void explore_cancel(explore_worker *g);
void explore_stop(explore_worker *g); /* cancels, joins, frees */
/* Row r's order (from v->orders) as ints into p (v->n); the identity when the
 * orders are not there (never for a published row). */
void explore_row_order(const explore_snapshot *v, const ls_row *r, int *p);
/* Is row r's order p (v->n ints)? */
int explore_row_is(const explore_snapshot *v, const ls_row *r, const int *p);

/* Seconds on the monotonic clock the worker stamps phase_since with. */
double explore_clock(void);

#endif
