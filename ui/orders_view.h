/* orders_view.h - the expert orders pane: every order with rank, order,
 * barrier, accuracy barrier and AUC; marks for best (*), a column per matching
 * method (cost_methods[]: G gate, E expert, A activation, R router), identity (I),
 * plotted (>) and pinned (the pin's digit,
 * as on its curve, in the pinned curves' colour; it takes the plotted mark's
 * place, the pinned curve being the one plotted); a rank followed by '=' when other orders
 * tie with it (within tau, rank.h), so tied rows read as a group; a progress gauge; scrolling, sorting by
 * column and a prefix filter. Sorting works on an index, and only the visible
 * rows are drawn, so 40320 rows scroll as fast as 24. */
#ifndef MS_UI_ORDERS_VIEW_H
#define MS_UI_ORDERS_VIEW_H

#include "explore/explore_worker.h"
#include "grid.h"
#include "layout.h"
#include "pins.h"

typedef enum { SORT_RANK = 0, SORT_ORDER, SORT_ACC, SORT_AUC, SORT_COUNT } orders_sort;

typedef struct {
    int sort;                   /* orders_sort */
    int desc;                   /* descending (S) */
    char filter[64];            /* prefix of the order, e.g. "2 0" */
    int editing;                /* the filter is being typed */
    long top, cursor;           /* in the filtered, sorted list */
    int have_cursor_order;      /* keep the cursor on this order across rebuilds */
    int cursor_order[LS_MAX_N];
    int page;                   /* rows visible at the last render */
    /* the index, rebuilt when rows, sort or filter change */
    long *idx, nidx;            /* (nidx) indices into v->rows */
    long *rank;                 /* (nrows) rank of each row among the rows done (rank.h:
                                   orders within tau of each other share it) */
    long *tied;                 /* (nrows) rows within tau of each row, itself included */
    long nrows, cap;
    unsigned long built_epoch;  /* v->rows_epoch and v->ndone of the index */
    long built_ndone;
    const ls_row *built_rows;
    int built_sort, built_desc, built;
    char built_filter[64];
    long best_row;              /* row with the smallest barrier, -1 none */
    const pin_set *pins;        /* the pinned orders (borrowed; app_render sets it), NULL none */
    double now;                 /* explore_clock() at render: spinner frame, elapsed time */
} orders_state;

void orders_init(orders_state *s);
void orders_free(orders_state *s);
/* Rebuild the index if the rows, the sort or the filter changed. */
void orders_update(orders_state *s, const explore_snapshot *v);
void orders_move(orders_state *s, long delta);   /* clamps; LONG_MAX = bottom */
void orders_set_cursor(orders_state *s, const explore_snapshot *v, long pos);
/* The row under the cursor, NULL if none. */
const ls_row *orders_selected(const orders_state *s, const explore_snapshot *v);
/* The list position drawn at screen row y of pane r, or -1. */
long orders_pos_at(const orders_state *s, const ui_rect *r, int y);
void orders_render(grid *g, const ui_rect *r, orders_state *s, const explore_snapshot *v);
/* Does the order start with the experts in filter ("2 0", "2,0", and for
 * n <= 10 also "20": one digit per expert)? */
int order_matches(const int *order, int n, const char *filter);
const char *orders_sort_name(int sort);
/* Width of a table row with every column (layout.c sizes the pane by it). */
int orders_width(int n, int has_acc);
/* The marks' legend from cost_methods[], the longest of three wordings within
 * w characters (the shortest whatever w): "*best G gate E expert A activation
 * R router I identity >plotted", "... A act R router I id >plot", "*best GEAR
 * methods I id >plot"; sep between entries ("  " in the help, else " "),
 * tail appended ("1-2 pinned", may be NULL). */
void orders_marks_legend(char *buf, size_t cap, int w, const char *sep, const char *tail);

/* log10 of the number of orders a landscape ranges over: n!, or (m!)^g g!
 * for a group-limited router's g groups of m (groups > 1). */
double orders_total_log10(int n, int groups);
/* Are the rows a sample of the orders (fewer than all of them)? */
int orders_sampled(const explore_snapshot *v);
/* How row k (an index into v->rows) was found, for exports: "sampled" (the
 * sample's, or every order's when exhaustive), else the extra row's "the
 * expert method", "2 methods", "the identity" (explore_snapshot.nextra) */
void orders_row_found(const explore_snapshot *v, long k, char *how, size_t cap);
/* 1 when row ri (an index into v->rows) is not distinguished from row best_row:
 * the table carries bootstrap intervals (v->ci_units > 0) and theirs overlap;
 * the table marks it '~' beside the best's '*' */
int orders_undistinguished(const explore_snapshot *v, long ri, long best_row);
/* The shown method's order ranked against a sampled landscape: the share of
 * sampled orders whose barrier is below it (beyond the tie tolerance tau,
 * rank.h) estimates its percentile among all orders; lo..hi is the Wilson
 * 95% interval of that share, and the estimated rank among all orders is
 * 1 + share * total. The worker's figures (v->pct, pct_lo, pct_hi, rank_est)
 * once it has the method's rank (final = 1: the numbers the status line
 * gives); until then an estimate over the rows so far
 * (final = 0), valid while the current curve is the method's order. Returns
 * 1 when valid; never with the order stage off. */
typedef struct {
    int valid, method;
    int final;                   /* the worker's figures, not the running estimate */
    long less, nrows;            /* sampled orders below it, rows so far */
    double pct, lo, hi;          /* percentile and its interval, in % */
    double log10_total, log10_est;
} sample_rank;
int orders_sample_rank(const explore_snapshot *v, sample_rank *out);

#endif
