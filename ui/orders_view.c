/* orders_view.c - see orders_view.h. */
#include "orders_view.h"
#include "symmetry.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "cost_matrix.h"
#include "rank.h"

void orders_init(orders_state *s) {
    memset(s, 0, sizeof *s);
    s->best_row = -1;
    s->page = 10;
}

void orders_free(orders_state *s) {
    free(s->idx);
    free(s->rank);
    free(s->tied);
    s->idx = s->rank = s->tied = NULL;
    s->cap = 0;
}

const char *orders_sort_name(int sort) {
    static const char *names[SORT_COUNT] = {"rank", "order", "acc.barrier", "AUC"};
    return sort >= 0 && sort < SORT_COUNT ? names[sort] : "?";
}

int order_matches(const int *order, int n, const char *filter) {
    const char *p = filter;
    for (int i = 0;; i++) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) return 1;
        if (*p < '0' || *p > '9' || i >= n) return 0;
        long x;
        if (n <= 10) {
            x = *p++ - '0'; /* one digit per expert: "20" is "2 0" */
        } else {
            char *end;
            x = strtol(p, &end, 10);
            p = end;
        }
        if (x != order[i]) return 0;
    }
}

/* qsort has no context pointer: the rows being sorted (UI thread only) */
static const ls_row *cmp_rows;
static int cmp_n;
static int cmp_order(const ls_row *a, const ls_row *b) {
    for (int i = 0; i < cmp_n; i++)
        if (a->order[i] != b->order[i]) return a->order[i] < b->order[i] ? -1 : 1;
    return 0;
}
static int cmp_double(double a, double b) {
    /* NaN sorts last */
    if (isnan(a) || isnan(b)) return isnan(a) - isnan(b);
    return a < b ? -1 : a > b ? 1 : 0;
}
static int cmp_by_barrier(const void *x, const void *y) {
    const ls_row *a = &cmp_rows[*(const long *)x], *b = &cmp_rows[*(const long *)y];
    int c = cmp_double(a->barrier, b->barrier);
    return c ? c : cmp_order(a, b);
}
static int cmp_by_order(const void *x, const void *y) {
    return cmp_order(&cmp_rows[*(const long *)x], &cmp_rows[*(const long *)y]);
}
static int cmp_by_acc(const void *x, const void *y) {
    const ls_row *a = &cmp_rows[*(const long *)x], *b = &cmp_rows[*(const long *)y];
    int c = cmp_double(a->acc_barrier, b->acc_barrier);
    return c ? c : cmp_by_barrier(x, y);
}
static int cmp_by_auc(const void *x, const void *y) {
    const ls_row *a = &cmp_rows[*(const long *)x], *b = &cmp_rows[*(const long *)y];
    int c = cmp_double(a->auc, b->auc);
    return c ? c : cmp_by_barrier(x, y);
}

void orders_update(orders_state *s, const explore_snapshot *v) {
    long nrows = v ? v->ndone : 0;
    /* only when the rows changed: progress updates alone do not sort again */
    if (s->built && s->built_epoch == (v ? v->rows_epoch : 0) && s->built_ndone == nrows &&
        s->built_rows == (v ? v->rows : NULL) && s->built_sort == s->sort && s->built_desc == s->desc &&
        !strcmp(s->built_filter, s->filter))
        return;
    int n = v ? v->n : 0;
    if (nrows > s->cap) {
        s->cap = nrows;
        s->idx = ms_realloc(s->idx, (size_t)s->cap * sizeof(long));
        s->rank = ms_realloc(s->rank, (size_t)s->cap * sizeof(long));
        s->tied = ms_realloc(s->tied, (size_t)s->cap * sizeof(long));
    }
    s->nrows = nrows;
    cmp_rows = v ? v->rows : NULL;
    cmp_n = n;
    /* ranks with the tie tolerance (rank.h), from one sort by barrier */
    for (long i = 0; i < nrows; i++) s->idx[i] = i;
    if (nrows > 1) qsort(s->idx, (size_t)nrows, sizeof(long), cmp_by_barrier);
    if (nrows > 0) {
        double *sb = ms_malloc((size_t)nrows * sizeof(double));
        long *rt = ms_malloc((size_t)nrows * 2 * sizeof(long)); // (2, nrows): rank, tied
        for (long i = 0; i < nrows; i++) sb[i] = v->rows[s->idx[i]].barrier;
        rank_view rv = rank_view_arrays(sb, NULL, NULL, n, nrows);
        rank_table(&rv, rank_tau(v->have_naive ? v->naive.barrier : NAN), rt, rt + nrows, NULL);
        for (long i = 0; i < nrows; i++) {
            s->rank[s->idx[i]] = rt[i];
            s->tied[s->idx[i]] = rt[nrows + i];
        }
        free(sb);
        free(rt);
    }
    s->best_row = nrows > 0 ? s->idx[0] : -1;
    /* the filtered list in the wanted order */
    if (s->sort != SORT_RANK && nrows > 1)
        qsort(s->idx, (size_t)nrows, sizeof(long),
              s->sort == SORT_ORDER ? cmp_by_order : s->sort == SORT_ACC ? cmp_by_acc : cmp_by_auc);
    long k = 0;
    for (long i = 0; i < nrows; i++)
        if (!s->filter[0] || order_matches(v->rows[s->idx[i]].order, n, s->filter)) s->idx[k++] = s->idx[i];
    s->nidx = k;
    for (long i = 0; s->desc && i < k / 2; i++) { /* descending: the same list reversed */
        long t = s->idx[i];
        s->idx[i] = s->idx[k - 1 - i];
        s->idx[k - 1 - i] = t;
    }
    /* keep the cursor on the same order */
    if (s->have_cursor_order) {
        for (long i = 0; i < s->nidx; i++)
            if (!memcmp(v->rows[s->idx[i]].order, s->cursor_order, sizeof(int) * (size_t)n)) {
                long d = i - s->cursor;
                s->cursor = i;
                s->top += d;
                break;
            }
    }
    if (s->cursor >= s->nidx) s->cursor = s->nidx - 1;
    if (s->cursor < 0) s->cursor = 0;
    s->built = 1;
    s->built_epoch = v ? v->rows_epoch : 0;
    s->built_ndone = nrows;
    s->built_rows = v ? v->rows : NULL;
    s->built_sort = s->sort;
    s->built_desc = s->desc;
    memcpy(s->built_filter, s->filter, sizeof s->filter);
}

static void clamp_top(orders_state *s) {
    int page = s->page > 0 ? s->page : 1;
    if (s->cursor < s->top) s->top = s->cursor;
    if (s->cursor >= s->top + page) s->top = s->cursor - page + 1;
    if (s->top > s->nidx - page) s->top = s->nidx - page;
    if (s->top < 0) s->top = 0;
}

void orders_set_cursor(orders_state *s, const explore_snapshot *v, long pos) {
    if (pos >= s->nidx) pos = s->nidx - 1;
    if (pos < 0) pos = 0;
    s->cursor = pos;
    if (v && s->nidx > 0) {
        memcpy(s->cursor_order, v->rows[s->idx[pos]].order, sizeof s->cursor_order);
        s->have_cursor_order = 1;
    }
    clamp_top(s);
}

void orders_move(orders_state *s, long delta) {
    long c = s->cursor;
    if (delta == LONG_MAX) c = s->nidx - 1;
    else if (delta == LONG_MIN) c = 0;
    else c += delta;
    if (c >= s->nidx) c = s->nidx - 1;
    if (c < 0) c = 0;
    s->cursor = c;
    s->have_cursor_order = 0; /* set by orders_set_cursor when a view is at hand */
    clamp_top(s);
}

const ls_row *orders_selected(const orders_state *s, const explore_snapshot *v) {
    if (!v || s->cursor < 0 || s->cursor >= s->nidx || s->nidx > v->ndone) return NULL;
    return &v->rows[s->idx[s->cursor]];
}

long orders_pos_at(const orders_state *s, const ui_rect *r, int y) {
    long pos = s->top + (y - (r->y + 3));
    if (y < r->y + 3 || pos >= s->nidx) return -1;
    return pos;
}

/* Column geometry of a pane w wide: the spaced order and 8-wide numbers when
 * they fit, else the order's digits without spaces (n <= 10) and 7-wide
 * numbers, so that no column is lost at 80 columns. */
typedef struct {
    int vw;        /* width of a number column */
    int compact;   /* order printed without spaces */
    int ow;        /* order column */
    int x_rank, x_order, x_val; /* offsets in the pane */
} orders_cols;

static orders_cols orders_geom(int n, int w) {
    orders_cols c;
    for (int k = 0; k < 4; k++) {
        c.compact = k >= 2 && n <= 10;
        c.vw = k % 2 ? 7 : 8;
        c.ow = c.compact ? n : 2 * n - 1;
        if (c.ow < 5) c.ow = 5;
        c.x_rank = 6;             /* marks (5) and a space */
        c.x_order = c.x_rank + 6; /* rank (5: "40320", "  12=") and a space */
        c.x_val = c.x_order + c.ow + 1;
        if (c.x_val + 3 * c.vw + 2 <= w) break;
    }
    return c;
}

static void put_value(grid *g, int x, int y, int w, int role, double val) {
    char b[32];
    if (isnan(val)) snprintf(b, sizeof b, "-");
    else snprintf(b, sizeof b, "%.4f", val);
    if ((int)strlen(b) > w) snprintf(b, sizeof b, "%.*e", w >= 9 ? 2 : w >= 8 ? 1 : 0, val); /* 1e18 stays apart */
    grid_printf(g, x, y, w, role, "%*s", w, b);
}

/* The pane's two heading rows: the count and the marks' legend (on the
 * title when it fits, else on the second row, where the gauge, the spinner
 * or the filter go while they are active). */
static void orders_heading(grid *g, const ui_rect *r, orders_state *s, const explore_snapshot *v) {
    long total = v ? v->norders : 0, done = v ? v->ndone : 0;
    static const char *legend = "*best G gate E expert I identity >plotted";
    char t[128];
    int tl = snprintf(t, sizeof t, "expert orders %ld/%ld%s%s", done, total,
                      v && !v->exhaustive && v->have_landscape ? " sampled" : "",
                      v && v->groups > 1 ? " group-preserving" : "");
    int legend_up = tl + 2 + (int)strlen(legend) <= r->w - 1;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    grid_printf(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "%s%s%s", t, legend_up ? "  " : "", legend_up ? legend : "");
    int y = r->y + 1;
    int filling = total > 0 && done < total;
    if (s->editing || s->filter[0]) {
        grid_printf(g, r->x, y, r->w, s->editing ? ROLE_MESSAGE : ROLE_DIM, "filter /%s%s  (%ld rows)", s->filter,
                    s->editing ? "_" : "", s->nidx);
    } else if (v && v->phase[0] && done == 0) {
        /* the landscape reports no rows in its first phases: a spinner, what
           it is doing and for how long, instead of a gauge stuck at 0 */
        static const uint32_t spin_u[10] = {0x280B, 0x2819, 0x2839, 0x2838, 0x283C, 0x2834, 0x2826, 0x2827, 0x2807, 0x280F};
        static const char spin_a[4] = {'|', '/', '-', '\\'};
        long frame = s->now > 0 ? (long)(s->now * 10) : 0;
        grid_put(g, r->x, y, g->utf8 ? spin_u[frame % 10] : (uint32_t)spin_a[frame % 4], ROLE_GAUGE);
        double el = s->now > 0 && v->phase_since > 0 ? s->now - v->phase_since : 0;
        if (el < 0) el = 0;
        grid_printf(g, r->x + 2, y, r->w - 2, ROLE_DIM, "%s (%.0f s)", v->phase, el);
    } else if (filling) {
        /* the gauge: on the title row after the count when the legend took this row */
        int gx = legend_up ? r->x : r->x + 1 + tl + 1, gy = legend_up ? y : r->y;
        int gw = r->x + r->w - gx - 7;
        if (gw >= 4) {
            int fill = (int)((double)done / (double)total * gw);
            grid_put(g, gx, gy, '[', ROLE_DIM);
            for (int i = 0; i < gw; i++)
                grid_put(g, gx + 1 + i, gy, i < fill ? (g->utf8 ? 0x2588 : '#') : (g->utf8 ? 0x00B7 : '.'),
                         i < fill ? ROLE_GAUGE : ROLE_DIM);
            grid_printf(g, gx + 1 + gw, gy, 6, ROLE_DIM, "]%4.0f%%", 100.0 * done / total);
        }
        if (!legend_up) grid_text(g, r->x, y, r->w, ROLE_DIM, legend);
    } else if (!legend_up) {
        grid_text(g, r->x, y, r->w, ROLE_DIM, legend);
    } else {
        grid_printf(g, r->x, y, r->w, ROLE_DIM, "sorted by %s %s (s, S)  filter: /", orders_sort_name(s->sort),
                    s->desc ? "desc" : "asc");
    }
}

void orders_render(grid *g, const ui_rect *r, orders_state *s, const explore_snapshot *v) {
    if (r->w <= 0 || r->h < 4) return;
    int n = v ? v->n : 0;
    long total = v ? v->norders : 0, done = v ? v->ndone : 0;
    orders_heading(g, r, s, v);
    int y;
    /* header, the sorted column marked */
    y = r->y + 2;
    orders_cols C = orders_geom(n, r->w);
    int vx[3] = {C.x_val, C.x_val + C.vw + 1, C.x_val + 2 * (C.vw + 1)};
    grid_printf(g, r->x + C.x_rank, y, r->w - C.x_rank, ROLE_DIM, "%5s", "rank");
    grid_text(g, r->x + C.x_order, y, r->w - C.x_order, ROLE_DIM, "order");
    static const char *vname[3] = {"barrier", "acc.bar", "AUC"};
    for (int k = 0; k < 3; k++) grid_printf(g, r->x + vx[k], y, C.vw, ROLE_DIM, "%*s", C.vw, vname[k]);
    /* wide panes: each order's assignment cost under the shown matrix, then
       a bar of its barrier (against the largest barrier so far) */
    int cost_x = vx[2] + C.vw + 1, bar_x = cost_x + 10, bar_w = r->w - bar_x - 1;
    int show_cost = v && v->cost && cost_x + 9 <= r->w;
    if (show_cost) grid_printf(g, r->x + cost_x, y, 9, ROLE_DIM, "%9s", "cost");
    if (!show_cost || bar_w < 8) bar_w = 0;
    double bmax = 0;
    for (long k = 0; bar_w && k < s->nrows; k++)
        if (v->rows[k].barrier > bmax) bmax = v->rows[k].barrier;
    if (bar_w) grid_text(g, r->x + bar_x + 1, y, bar_w, ROLE_DIM, "barrier");
    /* the sorted column's name marked and the arrow in the gap before the
       name when it is right-aligned, after it when left-aligned (up:
       ascending, down: descending) */
    int lx, lw, ax;
    if (s->sort == SORT_RANK) lx = C.x_rank + 1, lw = 4, ax = lx - 1;
    else if (s->sort == SORT_ORDER) lx = C.x_order, lw = 5, ax = lx + 5;
    else {
        int k = s->sort == SORT_ACC ? 1 : 2;
        lw = (int)strlen(vname[k]);
        lx = vx[k] + C.vw - lw;
        ax = lx - 1;
    }
    if (r->x + lx + lw < r->x + r->w) {
        for (int i = 0; i < lw; i++) grid_role(g, r->x + lx + i, y, 1, ROLE_MARK);
        grid_put(g, r->x + ax, y, g->utf8 ? (s->desc ? 0x25BE : 0x25B4) : (s->desc ? 'v' : '^'), ROLE_MARK);
    }
    s->page = r->h - 3;
    clamp_top(s);
    for (int i = 0; i < s->page; i++) {
        long pos = s->top + i;
        y = r->y + 3 + i;
        if (pos >= s->nidx) {
            if (pos == 0 && done == 0)
                grid_text(g, r->x + 1, y, r->w - 1, ROLE_DIM,
                          v && v->phase[0] && v->phase_detail[0] ? v->phase_detail /* the step and its count */
                          : total > 0 ? "rows appear here as the evaluator finishes them" : "waiting for the evaluator...");
            break;
        }
        long ri = s->idx[pos];
        const ls_row *row = &v->rows[ri];
        int cur = pos == s->cursor;
        int role = cur ? ROLE_CURSOR : ROLE_NORMAL;
        if (cur) grid_fill(g, r->x, y, r->w, 1, ' ', ROLE_CURSOR);
        int is_id = 1;
        for (int k = 0; k < n; k++) is_id &= row->order[k] == k;
        char marks[6] = "     ";
        if (ri == s->best_row) marks[0] = '*';
        if (v->have_methods && !memcmp(row->order, v->method_order[COST_GATE], sizeof(int) * (size_t)n)) marks[1] = 'G';
        if (v->have_methods && !memcmp(row->order, v->method_order[COST_EXPERT], sizeof(int) * (size_t)n)) marks[2] = 'E';
        if (is_id) marks[3] = 'I';
        if (v->have_selected && !memcmp(row->order, v->selected.order, sizeof(int) * (size_t)n)) marks[4] = '>';
        grid_text(g, r->x, y, 5, cur ? ROLE_CURSOR : ROLE_MARK, marks);
        char ord[64];
        if (C.compact) { /* digits without spaces, as the filter accepts them (n <= 10) */
            for (int k = 0; k < n; k++) ord[k] = (char)('0' + row->order[k]);
            ord[n] = 0;
        } else {
            moe_order_format(ord, sizeof ord, row->order, n);
        }
        char rk[32]; // "  12=" when other orders tie with this one
        if (s->tied[ri] > 1 && s->rank[ri] < 10000) snprintf(rk, sizeof rk, "%4ld=", s->rank[ri]);
        else snprintf(rk, sizeof rk, "%5ld", s->rank[ri]);
        grid_printf(g, r->x + C.x_rank, y, r->w - C.x_rank, role, "%s %-*s", rk, C.ow, ord);
        for (int k = 0; k < 3; k++)
            put_value(g, r->x + vx[k], y, C.vw, role, k == 0 ? row->barrier : k == 1 ? row->acc_barrier : row->auc);
        if (show_cost) {
            char cb[32];
            axis_format(cost_of_order(v->cost, row->order, n), 3, 9, cb, sizeof cb);
            grid_printf(g, r->x + cost_x, y, 9, role, "%9s", cb);
        }
        if (bar_w && bmax > 0 && row->barrier > 0) {
            /* eighths of a cell in UTF-8 */
            int eighths = (int)lround(row->barrier / bmax * bar_w * 8);
            for (int b = 0; b < bar_w && eighths > 0; b++, eighths -= 8)
                grid_put(g, r->x + bar_x + 1 + b, y,
                         g->utf8 ? (eighths >= 8 ? 0x2588 : 0x2590 - (uint32_t)eighths) : (eighths >= 4 ? '#' : '.'),
                         cur ? ROLE_CURSOR : ROLE_GAUGE);
        }
    }
}
