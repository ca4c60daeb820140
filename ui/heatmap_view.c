/* heatmap_view.c - see heatmap_view.h.
 *
 * Three ways to draw the matrix, by what the terminal can show:
 *   numbers    each cell a block of background colour from the theme's heat
 *              scale (grid_heat), the value on it in the contrasting colour;
 *              the assigned cells bold, underlined and starred. Monochrome:
 *              the numbers alone.
 *   half       colour + UTF-8 when the numbers do not fit: '▀' cells with
 *              fg = row i and bg = row i+1, two matrix rows per screen row;
 *              the assignment is listed beside the map ("A0→B3 A1→B0").
 *   glyphs     monochrome or ASCII when the numbers do not fit: one screen
 *              row per matrix row, a shade glyph (·░▒▓█, or .:-=+*#%) per
 *              cell (on its heat colour when there is colour), the assigned
 *              cells ◆ / @.
 * Each mode scrolls (off) when even it does not fit. */
#include "heatmap_view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axis.h"
#include "theme.h"

int heat_level(double x, double lo, double hi) {
    if (!(hi > lo)) return 0;
    int l = (int)floor((x - lo) / (hi - lo) * HEAT_LEVELS);
    if (l < 0) l = 0;
    if (l >= HEAT_LEVELS) l = HEAT_LEVELS - 1;
    return l;
}

/* shade glyphs carry the level when numbers do not fit (and in monochrome) */
static uint32_t shade(const grid *g, int level) {
    static const uint32_t u[HEAT_LEVELS] = {0x00B7, 0x2591, 0x2591, 0x2592, 0x2592, 0x2593, 0x2593, 0x2588};
    static const char a[HEAT_LEVELS + 1] = ".:-=+*#%";
    return g->utf8 ? u[level] : (uint32_t)a[level];
}

/* Geometry of the matrix in a pane of w x h cells. */
typedef struct {
    int mode;      /* HEAT_NUMBERS, HEAT_HALF, HEAT_GLYPHS */
    int label_w;   /* row labels */
    int cw;        /* columns per matrix column */
    int rows_fit;  /* screen rows for the matrix */
    int shown;     /* matrix rows and columns shown */
} heat_geom;

static heat_geom geom(int n, int w, int h, int utf8, int color) {
    heat_geom G;
    memset(&G, 0, sizeof G);
    G.label_w = n > 10 ? 4 : 3;
    int avail_w = w - G.label_w;
    G.rows_fit = h - 3; /* title, column header, legend */
    if (n < 1 || avail_w < 1 || G.rows_fit < 1) {
        G.mode = HEAT_GLYPHS;
        return G;
    }
    int cw = avail_w / n;
    if (cw > 9) cw = 9;
    int half_ok = utf8 && color;
    /* numbers need 7 columns a cell; with colour + UTF-8 also every row, since
       the half-block map shows the whole matrix instead of scrolling it */
    if (cw >= 7 && (!half_ok || n <= G.rows_fit)) {
        G.mode = HEAT_NUMBERS;
        G.cw = cw;
    } else if (half_ok) {
        G.mode = HEAT_HALF;
        /* keep room for the assignment list beside the map */
        int side = n > 10 ? 17 : 13;
        cw = (avail_w - side) / n;
        G.cw = cw > 3 ? 3 : cw < 1 ? 1 : cw;
    } else {
        G.mode = HEAT_GLYPHS;
        G.cw = cw >= 3 ? 3 : 2;
    }
    int cols_fit = avail_w / G.cw;
    int rows_mat = G.mode == HEAT_HALF ? 2 * G.rows_fit : G.rows_fit;
    G.shown = n;
    if (G.shown > rows_mat) G.shown = rows_mat;
    if (G.shown > cols_fit) G.shown = cols_fit;
    return G;
}

int heatmap_mode(int n, int w, int h, int utf8, int color) { return geom(n, w, h, utf8, color).mode; }

int heatmap_height(int n, int w, int h, int utf8, int color) {
    heat_geom G = geom(n, w, h, utf8, color);
    int rows = G.mode == HEAT_HALF ? (n + 1) / 2 : n;
    return rows + 3 < h ? rows + 3 : h;
}

/* The pane title, the longest wording that fits: the total is never cut. */
static void heat_title(grid *g, const ui_rect *r, const explore_request *q, double total) {
    const char *m = cost_method_name(q->method), *on = q->center ? "on" : "off";
    char t[4][128];
    snprintf(t[0], sizeof t[0], "cost: %s  gate centring %s  total %.4g", m, on, total);
    snprintf(t[1], sizeof t[1], "cost: %s  centring %s  total %.4g", m, on, total);
    snprintf(t[2], sizeof t[2], "%s  centring %s  total %.4g", m, on, total);
    snprintf(t[3], sizeof t[3], "%s  total %.4g", m, total);
    int k = 0;
    while (k < 3 && (int)strlen(t[k]) > r->w - 1) k++;
    grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, t[k]);
}

void heatmap_render(grid *g, const ui_rect *r, const explore_snapshot *v, int *off) {
    if (r->w <= 0 || r->h <= 0) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    if (!v || !v->cost) {
        grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "cost matrix");
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "computing...");
        return;
    }
    const explore_request *q = &v->req;
    heat_title(g, r, q, v->cost_total);
    int n = v->n;
    // C is (n, n): C[i*n+j] cost of B's expert j in A's slot i
    const double *C = v->cost;
    double lo = C[0], hi = C[0];
    for (int i = 0; i < n * n; i++) {
        if (C[i] < lo) lo = C[i];
        if (C[i] > hi) hi = C[i];
    }
    heat_geom G = geom(n, r->w, r->h, g->utf8, g->color);
    if (G.rows_fit < 1 || G.shown < 1) return;
    int cw = G.cw, shown = G.shown, label_w = G.label_w;
    int o = *off;
    if (o > n - shown) o = n - shown;
    if (o < 0) o = 0;
    *off = o;
    /* column header */
    int y = r->y + 1;
    for (int j = 0; j < shown; j++) {
        if (cw >= 3)
            grid_printf(g, r->x + label_w + j * cw, y, cw, ROLE_DIM, "%*s%d", cw - 2 - (o + j >= 10), "B", o + j);
        else
            grid_printf(g, r->x + label_w + j * cw, y, cw, ROLE_DIM, "%d", (o + j) % 10);
    }
    int map_end = r->x + label_w + shown * cw; /* first column right of the map */
    if (shown < n)
        grid_printf(g, map_end, y, r->x + r->w - map_end, ROLE_DIM, " %d-%d/%d [ ]", o, o + shown - 1, n);

    if (G.mode == HEAT_HALF) {
        int screen_rows = (shown + 1) / 2;
        for (int k = 0; k < screen_rows; k++) {
            int a0 = o + 2 * k, a1 = a0 + 1;
            int has1 = 2 * k + 1 < shown;
            y = r->y + 2 + k;
            grid_printf(g, r->x, y, label_w, ROLE_DIM, "A%d", a0);
            for (int j = 0; j < shown; j++) {
                int bj = o + j;
                int top = heat_step(C[a0 * n + bj], lo, hi);
                int bot = has1 ? heat_step(C[a1 * n + bj], lo, hi) : -1;
                int x = r->x + label_w + j * cw;
                for (int c = 0; c < cw; c++) {
                    grid_put(g, x + c, y, 0x2580, ROLE_NORMAL); /* ▀ upper half: row a0 */
                    grid_heat(g, x + c, y, top, bot);
                }
            }
            /* the two rows' assignments beside them */
            int sx = map_end + 1;
            if (sx < r->x + r->w && q->order_stage) {
                char buf[64];
                int len = snprintf(buf, sizeof buf, "A%d\u2192B%d", a0, v->cost_order[a0]);
                if (has1) snprintf(buf + len, sizeof buf - (size_t)len, " A%d\u2192B%d", a1, v->cost_order[a1]);
                grid_text(g, sx, y, r->x + r->w - sx, ROLE_MARK, buf);
            }
        }
        y = r->y + 2 + screen_rows;
    } else {
        /* one number of decimals for the whole matrix (from its largest entry),
           so the columns line up and 12.30 does not print as 12.3 */
        int sig = cw - 3 > 4 ? 4 : cw - 3, dec = 0;
        double amax = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
        if (amax > 0 && isfinite(amax)) dec = sig - 1 - (int)floor(log10(amax));
        if (dec < 0) dec = 0;
        if (dec > sig) dec = sig;
        for (int i = 0; i < shown; i++) {
            int ai = o + i;
            y = r->y + 2 + i;
            grid_printf(g, r->x, y, label_w, ROLE_DIM, "A%d", ai);
            for (int j = 0; j < shown; j++) {
                int bj = o + j;
                double c = C[ai * n + bj];
                int assigned = q->order_stage && v->cost_order[ai] == bj; /* o off: no order used */
                int level = heat_level(c, lo, hi), step = heat_step(c, lo, hi);
                int role = assigned ? ROLE_ASSIGNED : ROLE_HEAT_0 + level;
                int x = r->x + label_w + j * cw;
                if (G.mode == HEAT_NUMBERS) {
                    char num[32], buf[40];
                    /* scientific when 1e18 would not fit, a space kept before the next cell */
                    axis_format(c, dec, cw - 1, num, sizeof num);
                    if (strchr(num, 'e')) axis_format(c, dec, cw - 2, num, sizeof num);
                    snprintf(buf, sizeof buf, "%*s%c", cw - 1, num, assigned ? '*' : ' ');
                    /* colour: the number on its heat colour (the role keeps
                       bold/underline for the assigned cell) */
                    if (g->color && !assigned) role = ROLE_NORMAL;
                    grid_fill(g, x, y, cw, 1, ' ', role);
                    grid_text(g, x, y, cw, role, buf);
                } else {
                    uint32_t glyph = assigned ? (g->utf8 ? 0x25C6 : '@') : shade(g, level);
                    if (g->color && !assigned) role = ROLE_NORMAL;
                    for (int k = 0; k < cw - 1; k++) grid_put(g, x + k, y, glyph, role);
                }
                if (g->color)
                    for (int k = 0; k < (G.mode == HEAT_NUMBERS ? cw : cw - 1); k++) grid_heat(g, x + k, y, -1, step);
            }
        }
        y = r->y + 2 + shown;
    }
    /* legend: the scale from cheap to dear */
    if (y < r->y + r->h) {
        int x = r->x + 1;
        x += grid_printf(g, x, y, r->x + r->w - x, ROLE_DIM, "%.3g ", lo);
        if (G.mode == HEAT_GLYPHS) {
            /* the glyph ramp (on its colours when there are colours) */
            for (int l = 0; l < HEAT_LEVELS && x < r->x + r->w; l++) {
                grid_put(g, x, y, shade(g, l), g->color ? ROLE_NORMAL : ROLE_HEAT_0 + l);
                if (g->color) grid_heat(g, x, y, -1, (2 * l + 1) * HEAT_STEPS / (2 * HEAT_LEVELS));
                x++;
            }
        } else if (g->color) {
            /* the colour scale itself, one cell a step (every other step when narrow) */
            int stride = r->x + r->w - x > HEAT_STEPS + 24 ? 1 : 2;
            for (int s = 0; s < HEAT_STEPS && x < r->x + r->w; s += stride) {
                grid_put(g, x, y, ' ', ROLE_NORMAL);
                grid_heat(g, x++, y, -1, s);
            }
        } else {
            for (int l = 0; l < HEAT_LEVELS && x < r->x + r->w; l++) grid_put(g, x++, y, shade(g, l), ROLE_HEAT_0 + l);
        }
        x += grid_printf(g, x, y, r->x + r->w - x, ROLE_DIM, " %.3g ", hi);
        const char *mark = !q->order_stage        ? " o off: unused"
                         : G.mode == HEAT_NUMBERS ? " *assigned"
                         : G.mode == HEAT_HALF    ? " \u2580 2 rows/line"
                         : g->utf8                ? " \u25C6assigned"
                                                  : " @assigned";
        if (G.mode == HEAT_HALF && x + (int)strlen(" \u2580 2 rows/line") - 2 > r->x + r->w) mark = " \u2580 2 rows";
        grid_text(g, x, y, r->x + r->w - x, ROLE_DIM, mark);
    }
}
