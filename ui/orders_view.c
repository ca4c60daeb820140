/* orders_view.c - see orders_view.h. */
#include "orders_view.h"
#include "model/symmetry.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "align/cost_matrix.h"
#include "landscape/rank.h"
#include "order_abbrev.h"

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
static const uint8_t *cmp_orders; /* (norders, n): the rows' orders by id */
static int cmp_n;
static int cmp_order(const ls_row *a, const ls_row *b) {
    if (!cmp_orders) return 0;
    return memcmp(cmp_orders + (size_t)a->id * cmp_n, cmp_orders + (size_t)b->id * cmp_n, (size_t)cmp_n);
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
    long nrows = v ? v->ndone + v->nextra : 0; /* a sample's rows and those beside it */
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
    cmp_orders = v ? v->orders : NULL;
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
    int ord[LS_MAX_N];
    for (long i = 0; i < nrows; i++) {
        if (s->filter[0]) explore_row_order(v, &v->rows[s->idx[i]], ord);
        if (!s->filter[0] || order_matches(ord, n, s->filter)) s->idx[k++] = s->idx[i];
    }
    s->nidx = k;
    for (long i = 0; s->desc && i < k / 2; i++) { /* descending: the same list reversed */
        long t = s->idx[i];
        s->idx[i] = s->idx[k - 1 - i];
        s->idx[k - 1 - i] = t;
    }
    /* keep the cursor on the same order */
    if (s->have_cursor_order) {
        for (long i = 0; i < s->nidx; i++)
            if (explore_row_is(v, &v->rows[s->idx[i]], s->cursor_order)) {
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
        explore_row_order(v, &v->rows[s->idx[pos]], s->cursor_order);
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
    if (!v || s->cursor < 0 || s->cursor >= s->nidx || s->nidx > v->ndone + v->nextra) return NULL;
    return &v->rows[s->idx[s->cursor]];
}

long orders_pos_at(const orders_state *s, const ui_rect *r, int y) {
    long pos = s->top + (y - (r->y + 3));
    if (y < r->y + 3 || pos >= s->nidx) return -1;
    return pos;
}

/* Column geometry of a pane w wide: the spaced order and 8-wide numbers when
 * they fit, else the order's digits without spaces (n <= 10) and 7-wide
 * numbers, so that no column is lost at 80 columns; larger n abbreviate the
 * order (order_abbrev.h) to the width left (the selected row's whole order is
 * in the detail rows under the table). Without accuracy (no labels) the
 * acc.bar column is left out. */
typedef struct {
    int vw;        /* width of a number column */
    int compact;   /* order printed without spaces */
    int abbrev;    /* order abbreviated to ow columns */
    int ow;        /* order column */
    int nv;        /* value columns: barrier, [acc.bar,] AUC */
    int x_rank, x_order, x_val; /* offsets in the pane */
} orders_cols;

static orders_cols orders_geom(int n, int w, int has_acc) {
    orders_cols c;
    memset(&c, 0, sizeof c);
    c.nv = has_acc ? 3 : 2;
    c.x_rank = ORDERS_MARKS + 1; /* marks and a space */
    c.x_order = c.x_rank + 6; /* rank (5: "40320", "  12=") and a space */
    for (int k = 0; k < 4 + (n <= 10); k++) { // k = 4 (n <= 10): k = 3 one column narrower
        c.compact = k >= 2 && n <= 10;
        c.vw = k % 2 || k == 4 ? 7 : 8;
        if (k == 4) c.x_rank--, c.x_order--; // no space after the marks (a rank of 5 digits abuts them)
        c.ow = c.compact ? n : layout_order_chars(n);
        if (c.ow < 5) c.ow = 5;
        c.x_val = c.x_order + c.ow + 1;
        if (c.x_val + c.nv * c.vw + c.nv - 1 <= w || (k == 4 && n <= 10)) return c;
    }
    c.abbrev = 1;
    c.compact = 0;
    c.vw = 7;
    c.ow = w - c.x_order - 1 - (c.nv * c.vw + c.nv - 1);
    if (c.ow < 5) c.ow = 5;
    c.x_val = c.x_order + c.ow + 1;
    return c;
}

void orders_marks_legend(char *buf, size_t cap, int w, const char *sep, const char *tail) {
    const char *sp = sep[1] ? " " : ""; // the help's "* best", "> plotted"
    for (int form = 0; form < 3; form++) {
        char b[256];
        int len = snprintf(b, sizeof b, "*%sbest", sp);
        if (form == 2) {
            len += snprintf(b + len, sizeof b - (size_t)len, "%s", sep);
            for (int m = 0; m < COST_NMETHODS; m++) b[len++] = cost_methods[m].mark; // COST_NMETHODS < 200
            len += snprintf(b + len, sizeof b - (size_t)len, " methods");
        }
        for (int m = 0; form < 2 && m < COST_NMETHODS; m++) { // the middle form: "activation" as "act"
            const char *nm = cost_methods[m].name;
            len += snprintf(b + len, sizeof b - (size_t)len, "%s%c %.*s", sep, cost_methods[m].mark,
                            form && strlen(nm) > 6 ? 3 : (int)strlen(nm), nm);
        }
        len += snprintf(b + len, sizeof b - (size_t)len, form ? "%sI id%s>%splot" : "%sI identity%s>%splotted", sep,
                        sep, sp);
        if (tail) snprintf(b + len, sizeof b - (size_t)len, "%s%s", sep, tail);
        snprintf(buf, cap, "%s", b);
        if ((int)strlen(b) <= w) return;
    }
}

int orders_width(int n, int has_acc) {
    orders_cols c = orders_geom(n, 1 << 20, has_acc);
    return c.x_val + c.nv * c.vw + c.nv - 1;
}

static void put_value(grid *g, int x, int y, int w, int role, double val) {
    char b[32];
    if (isnan(val)) snprintf(b, sizeof b, "-");
    else snprintf(b, sizeof b, "%.4f", val);
    if ((int)strlen(b) > w) snprintf(b, sizeof b, "%.*e", w >= 9 ? 2 : w >= 8 ? 1 : 0, val); /* 1e18 stays apart */
    grid_printf(g, x, y, w, role, "%*s", w, b);
}

/* The row's order (kept apart from the rows: explore_worker.h). */
static void row_order(const explore_snapshot *v, const ls_row *row, int *p) { explore_row_order(v, row, p); }

double orders_total_log10(int n, int groups) {
    return groups > 1 && n % groups == 0 ? ls_wreath_log10(groups, n / groups) : ls_factorial_log10(n);
}

/* "40320", or "about 10^87" past 9 digits */
static void count_words(double log10_count, char *buf, size_t cap) {
    if (log10_count < 9) snprintf(buf, cap, "%.0f", floor(pow(10.0, log10_count) + 0.5));
    else snprintf(buf, cap, "about 10^%.0f", floor(log10_count));
}

int orders_sampled(const explore_snapshot *v) {
    return v && v->n > 0 && v->norders > 0 && log10((double)v->norders) < orders_total_log10(v->n, v->groups) - 1e-9;
}

/* The worker's percentile of method m (explore_worker.h): one source for the
 * table, the status line and the saved state. */
static int worker_rank(const explore_snapshot *v, int m, sample_rank *o) {
    if (v->rank[m] < 1 || isnan(v->pct[m]) || isnan(v->pct_lo[m]) || isnan(v->pct_hi[m])) return 0;
    o->method = m;
    o->final = 1;
    o->less = v->rank[m] - 1;
    o->nrows = v->nsampled > 0 ? v->nsampled : v->ndone;
    o->pct = v->pct[m];
    o->lo = v->pct_lo[m];
    o->hi = v->pct_hi[m];
    o->log10_total = orders_total_log10(v->n, v->groups);
    /* past a double (n > 170) rank_est is inf: its log10 from the share */
    o->log10_est = isfinite(v->rank_est[m]) && v->rank_est[m] >= 1 ? log10(v->rank_est[m])
                   : o->pct > 0 ? log10(o->pct / 100) + o->log10_total : 0;
    o->valid = 1;
    return 1;
}

int orders_sample_rank(const explore_snapshot *v, sample_rank *o) {
    memset(o, 0, sizeof *o);
    if (!orders_sampled(v) || v->ndone < 1 || !v->req.order_stage) return 0;
    int m = v->req.method;
    if (worker_rank(v, m, o)) return 1;
    if (!v->have_current || !v->have_methods) return 0;
    if (memcmp(v->current.order, v->method_order[m], sizeof(int) * (size_t)v->n)) return 0;
    double b = v->current.barrier, tau = rank_tau(v->have_naive ? v->naive.barrier : NAN);
    if (isnan(b)) return 0;
    long less = 0;
    for (long k = 0; k < v->ndone; k++) less += v->rows[k].barrier < b - tau;
    /* the share of the sampled orders below the chosen one estimates its
       percentile among all of them; the 95% interval is Wilson's */
    double N = (double)v->ndone, p = less / N, lo, hi;
    rank_wilson95(p, N, &lo, &hi);
    o->method = m;
    o->less = less;
    o->nrows = v->ndone;
    o->pct = 100 * p;
    o->lo = 100 * lo;
    o->hi = 100 * hi;
    o->log10_total = orders_total_log10(v->n, v->groups);
    o->log10_est = log10(1 + p * pow(10.0, o->log10_total > 300 ? 300 : o->log10_total));
    if (o->log10_total > 300 && p > 0) o->log10_est = log10(p) + o->log10_total; /* 1 is negligible there */
    o->valid = 1;
    return 1;
}

/* The pane's two heading rows: the count and the marks' legend (on the
 * title when it fits, else on the second row, where the gauge, the spinner
 * or the filter go while they are active). A sample says so and of how
 * many orders. */
static void orders_heading(grid *g, const ui_rect *r, orders_state *s, const explore_snapshot *v) {
    long total = v ? v->norders : 0, done = v ? v->ndone : 0;
    char legend[160], t[160], all[48] = "", pn[24] = "";
    int np = s->pins ? s->pins->n : 0; /* the pins' digits: shorter words for the rest where needed */
    if (np) snprintf(pn, sizeof pn, np == 1 ? "1 pinned" : "1-%d pinned", np);
    orders_marks_legend(legend, sizeof legend, r->w - 1, " ", np ? pn : NULL);
    int sampled = orders_sampled(v);
    if (sampled) count_words(orders_total_log10(v->n, v->groups), all, sizeof all);
    int tl = 0;
    for (int k = 0; k < 3; k++) {
        if (!sampled) tl = snprintf(t, sizeof t, "expert orders %ld/%ld%s", done, total, v && v->groups > 1 ? " group-preserving" : "");
        else if (k == 0) tl = snprintf(t, sizeof t, "expert orders %ld/%ld sampled of %s", done, total, all);
        else if (k == 1) tl = snprintf(t, sizeof t, "orders %ld/%ld sampled of %s", done, total, all);
        else tl = snprintf(t, sizeof t, "%ld/%ld sampled of %s", done, total, all);
        if (tl <= r->w - 1 || !sampled) break;
    }
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

/* Where the table's columns are in a pane (orders_geom plus the value
 * columns shown, the cost and the barrier bar of wide panes). */
typedef struct {
    orders_cols C;
    int vx[3], vk[3];  /* value columns: x and which value (0 barrier, 1 acc.bar, 2 AUC) */
    int cost_x, bar_x, bar_w, show_cost;
    double bmax;       /* the bar's full length */
} table_geom;

static const char *vname[3] = {"barrier", "acc.bar", "AUC"};

/* The header row, the sorted column marked: the arrow in the gap before the
 * name when it is right-aligned, after it when left-aligned (up: ascending,
 * down: descending). */
static void table_header(grid *g, const ui_rect *r, const orders_state *s, const explore_snapshot *v, table_geom *T) {
    int n = v ? v->n : 0, y = r->y + 2;
    T->C = orders_geom(n, r->w, !v || v->kind == LS_CLASSIFY);
    const orders_cols *C = &T->C;
    for (int k = 0, j = 0; k < 3; k++) {
        if (k == 1 && C->nv < 3) continue;
        T->vk[j] = k;
        T->vx[j] = C->x_val + j * (C->vw + 1);
        j++;
    }
    grid_printf(g, r->x + C->x_rank, y, r->w - C->x_rank, ROLE_DIM, "%5s", "rank");
    grid_text(g, r->x + C->x_order, y, r->w - C->x_order, ROLE_DIM, "order");
    for (int j = 0; j < C->nv; j++) grid_printf(g, r->x + T->vx[j], y, C->vw, ROLE_DIM, "%*s", C->vw, vname[T->vk[j]]);
    /* wide panes: each order's assignment cost under the shown matrix, then
       a bar of its barrier (against the largest barrier so far) */
    T->cost_x = T->vx[C->nv - 1] + C->vw + 1;
    T->bar_x = T->cost_x + 10;
    T->bar_w = r->w - T->bar_x - 1;
    T->show_cost = v && v->cost && T->cost_x + 9 <= r->w;
    if (T->show_cost) grid_printf(g, r->x + T->cost_x, y, 9, ROLE_DIM, "%9s", "cost");
    if (!T->show_cost || T->bar_w < 8) T->bar_w = 0;
    T->bmax = 0;
    for (long k = 0; T->bar_w && k < s->nrows; k++)
        if (v->rows[k].barrier > T->bmax) T->bmax = v->rows[k].barrier;
    if (T->bar_w) grid_text(g, r->x + T->bar_x + 1, y, T->bar_w, ROLE_DIM, "barrier");
    int lx = -1, lw = 0, ax = 0;
    if (s->sort == SORT_RANK) lx = C->x_rank + 1, lw = 4, ax = lx - 1;
    else if (s->sort == SORT_ORDER) lx = C->x_order, lw = 5, ax = lx + 5;
    else
        for (int j = 0; j < C->nv; j++)
            if (T->vk[j] == (s->sort == SORT_ACC ? 1 : 2)) {
                lw = (int)strlen(vname[T->vk[j]]);
                lx = T->vx[j] + C->vw - lw;
                ax = lx - 1;
            }
    if (lx >= 0 && r->x + lx + lw < r->x + r->w) {
        for (int i = 0; i < lw; i++) grid_role(g, r->x + lx + i, y, 1, ROLE_MARK);
        grid_put(g, r->x + ax, y, g->utf8 ? (s->desc ? 0x25BE : 0x25B4) : (s->desc ? 'v' : '^'), ROLE_MARK);
    }
}

int orders_undistinguished(const explore_snapshot *v, long ri, long best_row) {
    if (!v || v->ci_units <= 0 || best_row < 0 || ri == best_row || ri < 0 || ri >= v->ndone) return 0;
    const ls_row *a = &v->rows[ri], *b = &v->rows[best_row];
    return a->bar_lo <= b->bar_hi && b->bar_lo <= a->bar_hi;
}

/* the legend of the ~ mark with its count (1); a complete table without
 * intervals: why, when the landscape said (2: to be wrapped); 0: neither */
static int ci_line(const orders_state *s, const explore_snapshot *v, char *buf, size_t cap) {
    if (v && v->ci_units <= 0 && v->ci_why && v->have_landscape) {
        snprintf(buf, cap, "no error bars (~): %s", v->ci_why);
        return 2;
    }
    if (!v || v->ci_units <= 0 || s->best_row < 0) return 0;
    long cnt = 0;
    for (long k = 0; k < v->ndone; k++) cnt += orders_undistinguished(v, k, s->best_row);
    snprintf(buf, cap, "~ not distinguished from the best *: %ld order%s whose 95%% interval overlaps its "
             "(bootstrap over %d units)", cnt, cnt == 1 ? "" : "s", v->ci_units);
    return 1;
}

/* The method marks of a row whose order is ro: a column per row of
 * cost_methods[] (G E A R), each method's mark in its own column when its order
 * is ro, so a row chosen by several methods shows them all. */
static void method_marks(const explore_snapshot *v, const int *ro, char *mk) {
    for (int m = 0; m < COST_NMETHODS && v->have_methods; m++)
        if (v->method_have[m] && !memcmp(ro, v->method_order[m], sizeof(int) * (size_t)v->n))
            mk[m] = cost_methods[m].mark;
}

/* One row of the table: marks, rank, order (abbreviated for large n), values. */
static void table_row(grid *g, const ui_rect *r, const orders_state *s, const explore_snapshot *v, const table_geom *T,
                      long pos, int y) {
    int n = v->n;
    const orders_cols *C = &T->C;
    long ri = s->idx[pos];
    const ls_row *row = &v->rows[ri];
    int cur = pos == s->cursor;
    int role = cur ? ROLE_CURSOR : ROLE_NORMAL;
    if (cur) grid_fill(g, r->x, y, r->w, 1, ' ', ROLE_CURSOR);
    int ro[LS_MAX_N]; /* the row's order */
    row_order(v, row, ro);
    int is_id = 1;
    for (int k = 0; k < n; k++) is_id &= ro[k] == k;
    enum { MK_ID = 1 + COST_NMETHODS, MK_SEL, MK_W }; // best, a mark per method, identity, selected
    char marks[MK_W + 1];
    memset(marks, ' ', MK_W);
    marks[MK_W] = 0;
    if (ri == s->best_row) marks[0] = '*';
    else if (orders_undistinguished(v, ri, s->best_row)) marks[0] = '~';
    method_marks(v, ro, marks + 1);
    if (is_id) marks[MK_ID] = 'I';
    if (v->have_selected && !memcmp(ro, v->selected.order, sizeof(int) * (size_t)n)) marks[MK_SEL] = '>';
    /* a pin of this order: under the table's weight-matching setting first */
    int pi = s->pins ? pins_find(s->pins, ro, n, v->req.wm_stage) : -1;
    if (pi < 0 && s->pins) pi = pins_find(s->pins, ro, n, !v->req.wm_stage);
    if (pi >= 0) marks[MK_SEL] = pins_glyph(pi);
    grid_text(g, r->x, y, MK_W, cur ? ROLE_CURSOR : ROLE_MARK, marks);
    if (pi >= 0 && !cur) grid_role(g, r->x + MK_SEL, y, 1, ROLE_CURVE_PIN(pi));
    char ord[LS_MAX_N * 4 + 8];
    if (C->compact) { /* digits without spaces, as the filter accepts them (n <= 10) */
        for (int k = 0; k < n; k++) ord[k] = (char)('0' + ro[k]);
        ord[n] = 0;
    } else if (C->abbrev) {
        order_abbrev(ro, n, C->ow, g->utf8, ord, sizeof ord);
    } else {
        moe_order_format(ord, sizeof ord, ro, n);
    }
    char rk[32]; // "  12=" when other orders tie with this one
    if (s->tied[ri] > 1 && s->rank[ri] < 10000) snprintf(rk, sizeof rk, "%4ld=", s->rank[ri]);
    else snprintf(rk, sizeof rk, "%5ld", s->rank[ri]);
    grid_printf(g, r->x + C->x_rank, y, r->w - C->x_rank, role, "%s ", rk);
    grid_text(g, r->x + C->x_order, y, C->ow, role, ord);
    for (int j = 0; j < C->nv; j++) {
        int k = T->vk[j];
        put_value(g, r->x + T->vx[j], y, C->vw, role, k == 0 ? row->barrier : k == 1 ? row->acc_barrier : row->auc);
    }
    if (T->show_cost) {
        char cb[32];
        axis_format(cost_of_order(v->cost, ro, n), 3, 9, cb, sizeof cb);
        grid_printf(g, r->x + T->cost_x, y, 9, role, "%9s", cb);
    }
    if (T->bar_w && T->bmax > 0 && row->barrier > 0) {
        /* eighths of a cell in UTF-8 */
        int eighths = (int)lround(row->barrier / T->bmax * T->bar_w * 8);
        for (int b = 0; b < T->bar_w && eighths > 0; b++, eighths -= 8)
            grid_put(g, r->x + T->bar_x + 1 + b, y,
                     g->utf8 ? (eighths >= 8 ? 0x2588 : 0x2590 - (uint32_t)eighths) : (eighths >= 4 ? '#' : '.'),
                     cur ? ROLE_CURSOR : ROLE_GAUGE);
    }
}

/* a count for people: "37", "40320", past a million "1.1x10^11" (two
 * digits: an estimate of rank 0.77 x 10^89 then reads apart from the 1.3 x
 * 10^89 orders) */
static void est_words(double log10_x, char *buf, size_t cap) {
    if (log10_x < 6) {
        snprintf(buf, cap, "%.0f", floor(pow(10.0, log10_x) + 0.5));
        return;
    }
    int e = (int)floor(log10_x);
    double m = pow(10.0, log10_x - e);
    if (m >= 9.95) m = 1.0, e++; /* 9.96 rounds to 10.0: 1.0 x 10^(e+1) */
    snprintf(buf, cap, "%.1fx10^%d", m, e);
}

/* The sample line: the longest wording that fits w. An order in the better
 * half is in the "top" share of the orders below it; one in the worse half
 * in the "bottom" share of those above it, which reads the right way round
 * (an order above 76.5% of the sample is in the bottom 23.5%). */
static void sample_line(const explore_snapshot *v, const sample_rank *sr, int w, char *buf, size_t cap) {
    char est[48], all[48];
    est_words(sr->log10_est, est, sizeof est);
    est_words(sr->log10_total, all, sizeof all);
    /* which figures these are: the worker's, or the table's running estimate */
    const char *m = cost_method_name(sr->method);
    /* "final" only once the table is: ranks that came early (the middle-point
       bound) still await the rest of the rows the table shows */
    const char *label = !v->have_landscape ? (sr->final ? "ranked, table filling" : "estimate so far")
                        : sr->final ? "final" : "estimate";
    const char *brief = !v->have_landscape ? (sr->final ? " filling" : " so far") : sr->final ? " final" : "";
    int top = sr->pct <= 50;
    const char *side = top ? "top" : "bottom";
    double pct = top ? sr->pct : 100 - sr->pct, lo = top ? sr->lo : 100 - sr->hi, hi = top ? sr->hi : 100 - sr->lo;
    for (int k = 0; k < 4; k++) {
        if (k == 0)
            snprintf(buf, cap, "%s order: %s %.3g%% (95%% CI %.3g-%.3g%%), rank ~%s of %s, %s", m, side, pct, lo, hi,
                     est, all, label);
        else if (k == 1)
            snprintf(buf, cap, "%s: %s %.3g%% (95%% CI %.3g-%.3g%%) rank ~%s of %s%s", m, side, pct, lo, hi, est, all,
                     brief);
        else if (k == 2)
            snprintf(buf, cap, "%s: %s %.3g%% (95%% CI %.3g-%.3g%%) rank ~%s%s", m, side, pct, lo, hi, est, brief);
        else snprintf(buf, cap, "%c %s %.3g%% CI %.3g-%.3g%% ~%s%s", m[0] - 32, side, pct, lo, hi, est, brief);
        if ((int)strlen(buf) <= w) return;
    }
}

/* What an extra row is (explore_snapshot.nextra): the methods whose order it
 * is ("E expert", "GE 2 methods"), else the identity; how: "the expert
 * method", "2 methods", "the identity" */
static void extra_names(const explore_snapshot *v, const ls_row *row, char *mark, size_t mcap, char *how,
                        size_t hcap) {
    int ro[LS_MAX_N], n = v->n, cnt = 0;
    char marks[COST_NMETHODS + 1];
    const char *one = "";
    explore_row_order(v, row, ro);
    for (int m = 0; m < COST_NMETHODS; m++)
        if (v->have_methods && !memcmp(ro, v->method_order[m], sizeof(int) * (size_t)n))
            marks[cnt++] = cost_methods[m].mark, one = cost_methods[m].name;
    marks[cnt] = 0;
    if (!cnt) snprintf(mark, mcap, "I identity"), snprintf(how, hcap, "the identity");
    else if (cnt == 1) snprintf(mark, mcap, "%s %s", marks, one), snprintf(how, hcap, "the %s method", one);
    else snprintf(mark, mcap, "%s %d methods", marks, cnt), snprintf(how, hcap, "%d methods", cnt);
}

void orders_row_found(const explore_snapshot *v, long k, char *how, size_t cap) {
    char mark[64];
    if (k < v->ndone) snprintf(how, cap, "sampled");
    else extra_names(v, &v->rows[k], mark, sizeof mark, how, cap);
}

/* A sample need not hold the methods' orders nor the identity (the
 * skip-order with weight matching on, the naive order without): those it
 * lacks are rows all the same, evaluated beside it (rows ndone..). The line
 * naming them (0 when there are none). */
static int outside_line(const explore_snapshot *v, char *buf, size_t cap) {
    if (!orders_sampled(v) || v->ndone < 1 || v->nextra < 1) return 0;
    int len = snprintf(buf, cap, "beside the sample (rows, not drawn into it):");
    for (long k = v->ndone; k < v->ndone + v->nextra && (size_t)len < cap; k++) {
        char mark[64], how[64];
        extra_names(v, &v->rows[k], mark, sizeof mark, how, sizeof how);
        len += snprintf(buf + len, cap - (size_t)len, "%s %s", k > v->ndone ? "," : "", mark);
    }
    return 1;
}

/* A sample's best order found, sampled or beside it, and how (0: none yet) */
static int best_line(const explore_snapshot *v, char *buf, size_t cap) {
    if (!orders_sampled(v) || v->ndone < 1) return 0;
    long best = 0;
    for (long k = 1; k < v->ndone + v->nextra; k++) best = v->rows[k].barrier < v->rows[best].barrier ? k : best;
    char mark[64], how[64] = "sampled";
    if (best >= v->ndone) extra_names(v, &v->rows[best], mark, sizeof mark, how, sizeof how);
    snprintf(buf, cap, "best found %.4f (%s)", v->rows[best].barrier, how);
    return 1;
}

/* text wrapped at spaces into line[at..], at most max lines and none past the
 * 8th (the rest clipped; text may be line[at] itself): the lines written */
static int wrap_into(char line[8][256], int at, int max, int w, const char *text) {
    char all[LS_MAX_N * 4 + 16];
    snprintf(all, sizeof all, "%s", text);
    const char *p = all;
    int k = 0;
    while (*p && k < max && at + k < 8 && w > 12) {
        int take = (int)strlen(p);
        if (take > w) {
            take = w;
            while (take > 0 && p[take] != ' ') take--;
            if (!take) take = w;
        }
        snprintf(line[at + k++], 256, "%.*s", take, p);
        p += take;
        while (*p == ' ') p++;
    }
    return k;
}

/* The lines under the table: for a sample, the chosen order's estimated
 * percentile with its 95% interval (and a grouped router's order set); for
 * abbreviated orders, the selected row's whole order, wrapped. Returns the
 * rows they take, at most a third of the pane (draw 0: only counts). */
static int table_details(grid *g, const ui_rect *r, const orders_state *s, const explore_snapshot *v,
                         const table_geom *T, int draw) {
    if (!v) return 0;
    int room = (r->h - 3) / 3, w = r->w - 1;
    char line[8][256];
    int nl = 0;
    sample_rank sr;
    if (orders_sample_rank(v, &sr)) sample_line(v, &sr, w, line[nl++], sizeof line[0]);
    else if (orders_sampled(v) && v->ndone > 0)
        snprintf(line[nl++], sizeof line[0], "sampled: a rank estimate needs the order stage (o)");
    if (outside_line(v, line[nl], sizeof line[0])) nl++;
    if (best_line(v, line[nl], sizeof line[0])) nl++;
    int ci = ci_line(s, v, line[nl], sizeof line[0]);
    if (ci == 1) nl++;
    if (ci == 2) { // the why wrapped over up to 3 lines (kept whole, clipped, if too narrow)
        int k = wrap_into(line, nl, 3, w, line[nl]);
        nl += k ? k : 1;
    }
    if (v->groups > 1 && v->n % v->groups == 0) {
        char all[48];
        count_words(orders_total_log10(v->n, v->groups), all, sizeof all);
        snprintf(line[nl++], sizeof line[0], "(%d!)^%d %d! = %s group-preserving orders", v->n / v->groups, v->groups,
                 v->groups, all);
    }
    const ls_row *sel = T->C.abbrev ? orders_selected(s, v) : NULL;
    if (sel && w > 12) {
        /* the whole order, wrapped at spaces */
        int ro[LS_MAX_N];
        char full[LS_MAX_N * 4 + 16];
        row_order(v, sel, ro);
        int len = snprintf(full, 16, "order ");
        moe_order_format(full + len, sizeof full - (size_t)len, ro, v->n);
        nl += wrap_into(line, nl, 8 - nl, w, full);
    }
    if (nl > room) { /* the order goes on past the last row: say so */
        nl = room;
        if (sel && nl > 0) {
            char *last = line[nl - 1];
            size_t keep = strlen(last) > (size_t)w - 2 ? (size_t)w - 2 : strlen(last);
            snprintf(last + keep, sizeof line[0] - keep, "%s", g->utf8 ? " \u2026" : " ~");
        }
    }
    for (int i = 0; draw && i < nl; i++)
        grid_text(g, r->x + 1, r->y + r->h - nl + i, w, i == 0 && line[i][0] != 'o' ? ROLE_MESSAGE : ROLE_DIM, line[i]);
    return nl;
}

void orders_render(grid *g, const ui_rect *r, orders_state *s, const explore_snapshot *v) {
    if (r->w <= 0 || r->h < 4) return;
    long total = v ? v->norders : 0, done = v ? v->ndone : 0;
    orders_heading(g, r, s, v);
    table_geom T;
    table_header(g, r, s, v, &T);
    int detail = table_details(g, r, s, v, &T, 0);
    s->page = r->h - 3 - detail;
    if (s->page < 1) s->page = 1;
    clamp_top(s);
    for (int i = 0; i < s->page; i++) {
        long pos = s->top + i;
        int y = r->y + 3 + i;
        if (pos >= s->nidx) {
            if (pos == 0 && done == 0)
                grid_text(g, r->x + 1, y, r->w - 1, ROLE_DIM,
                          v && v->phase[0] && v->phase_detail[0] ? v->phase_detail /* the step and its count */
                          : total > 0 ? "rows appear here as the evaluator finishes them" : "waiting for the evaluator...");
            break;
        }
        table_row(g, r, s, v, &T, pos, y);
    }
    table_details(g, r, s, v, &T, 1);
}
