/* orders_view.h - the expert orders pane: every order with rank, order,
 * barrier, accuracy barrier and AUC; marks for best (*), gate-chosen (G),
 * expert-chosen (E) and identity (I); a rank followed by '=' when other orders
 * tie with it (within tau, rank.h), so tied rows read as a group; a progress gauge; scrolling, sorting by
 * column and a prefix filter. Sorting works on an index, and only the visible
 * rows are drawn, so 40320 rows scroll as fast as 24. */
#ifndef MS_UI_ORDERS_VIEW_H
#define MS_UI_ORDERS_VIEW_H

#include "explore_worker.h"
#include "grid.h"
#include "layout.h"

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

#endif
