/* heatmap_view.c - see heatmap_view.h.
 *
 * Four ways to draw the matrix, by what the terminal can show and the zoom:
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
 *   blocks     zoomed out (z): one screen cell per b x b block, coloured (or
 *              shaded) by the block's mean cost on a scale from the smallest
 *              to the largest block mean; ◆ / @ where the block holds an
 *              assigned pair.
 * Each mode scrolls in both directions when it does not fit; the cursor cell
 * (Tab gives it the keys) is drawn in the cursor's colours, and its row and
 * column labels with it. */
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

static uint32_t assigned_glyph(const grid *g) { return g->utf8 ? 0x25C6 : '@'; }

static int digits(int x) {
    int d = 1;
    while (x >= 10) x /= 10, d++;
    return d;
}

/* Geometry of the matrix in a pane of w x h cells. Units are matrix rows and
 * columns at zoom 1, b x b blocks when zoomed. */
typedef struct {
    int mode;      /* HEAT_* */
    int b, units;  /* block side, ceil(n / b) */
    int label_w;   /* row labels "A17 " */
    int cw;        /* screen columns per unit */
    int rows_fit;  /* screen rows for the matrix */
    int rows_vis, cols_vis; /* units shown (half: matrix rows, two a screen row) */
    int side;      /* half: columns kept for the assignment list beside the map */
} heat_geom;

static int imin(int a, int b) { return a < b ? a : b; }

static heat_geom geom(int n, int zoom, int w, int h, int utf8, int color) {
    heat_geom G;
    memset(&G, 0, sizeof G);
    G.b = zoom > 1 ? zoom : 1;
    G.units = n > 0 ? (n + G.b - 1) / G.b : 0;
    G.label_w = 2 + digits(n > 1 ? n - 1 : 0);
    int avail_w = w - G.label_w;
    G.rows_fit = h - 3; /* title, column header, legend */
    if (n < 1 || avail_w < 1 || G.rows_fit < 1) {
        G.mode = G.b > 1 ? HEAT_BLOCKS : HEAT_GLYPHS;
        G.cw = 1;
        return G;
    }
    if (G.b > 1) {
        /* two columns a block look square on most fonts, when they fit */
        G.mode = HEAT_BLOCKS;
        G.cw = avail_w >= 2 * G.units ? 2 : 1;
        G.rows_vis = imin(G.units, G.rows_fit);
        G.cols_vis = imin(G.units, avail_w / G.cw);
        return G;
    }
    int cw = avail_w / n;
    if (cw > 9) cw = 9;
    int half_ok = utf8 && color;
    /* numbers need 7 columns a cell; with colour + UTF-8 also every row, since
       the half-block map shows the whole matrix instead of scrolling it */
    int room = avail_w;
    if (cw >= 7 && (!half_ok || n <= G.rows_fit)) {
        G.mode = HEAT_NUMBERS;
        G.cw = cw;
    } else if (half_ok) {
        G.mode = HEAT_HALF;
        /* keep room for the assignment list beside the map: "A14→B1 A15→B0" */
        G.side = 2 * (2 * digits(n - 1) + 3) + 3;
        room = avail_w - G.side >= 8 ? avail_w - G.side : avail_w;
        cw = room / n;
        G.cw = cw > 3 ? 3 : cw < 1 ? 1 : cw;
    } else {
        G.mode = HEAT_GLYPHS;
        G.cw = cw >= 3 ? 3 : 2;
    }
    G.cols_vis = imin(n, room / G.cw);
    G.rows_vis = imin(n, G.mode == HEAT_HALF ? 2 * G.rows_fit : G.rows_fit);
    return G;
}

int heatmap_mode(int n, int w, int h, int utf8, int color) { return geom(n, 1, w, h, utf8, color).mode; }

int heatmap_height(int n, int zoom, int w, int h, int utf8, int color) {
    heat_geom G = geom(n, zoom, w, h, utf8, color);
    int rows = G.mode == HEAT_HALF ? (n + 1) / 2 : G.units;
    return rows + 3 < h ? rows + 3 : h;
}

static int shows_all(const heat_geom *G) { return G->rows_vis >= G->units && G->cols_vis >= G->units; }

int heatmap_zoom_fit(int n, int w, int h, int utf8, int color, int align) {
    for (int b = 1; b < n; b++) {
        heat_geom G = geom(n, b, w, h, utf8, color);
        if (G.rows_fit < 1) return 1;
        /* grouped experts: blocks that tile the groups (or whole groups) */
        if (b > 1 && align > 1 && align % b && b % align) continue;
        if (shows_all(&G)) return b;
    }
    return n > 1 ? n : 1;
}

int heatmap_zoom_step(int zoom, int fit, int dir) {
    if (zoom < 1) zoom = 1;
    if (dir > 0) {
        if (zoom >= fit) return fit;
        return 2 * zoom >= fit ? fit : 2 * zoom;
    }
    if (zoom <= 1) return 1;
    int p = 1;
    while (2 * p < zoom) p *= 2;
    return p;
}

void heatmap_move(heat_view *s, int n, int drow, int dcol) {
    int b = s->zoom > 1 ? s->zoom : 1;
    long r = s->row + (long)drow * b, c = s->col + (long)dcol * b;
    if (b > 1) { /* whole blocks: the cursor sits on a block's first cell */
        r -= ((r % b) + b) % b;
        c -= ((c % b) + b) % b;
    }
    s->row = (int)(r < 0 ? 0 : r > n - 1 ? n - 1 : r);
    s->col = (int)(c < 0 ? 0 : c > n - 1 ? n - 1 : c);
    s->follow = 1;
}

int heatmap_hit(const ui_rect *r, int n, const heat_view *s, int utf8, int color, int x, int y, int *row, int *col) {
    heat_geom G = geom(n, s->zoom, r->w, r->h, utf8, color);
    int ux = x - (r->x + G.label_w), uy = y - (r->y + 2);
    if (G.cw < 1 || ux < 0 || uy < 0 || ux >= G.cols_vis * G.cw) return 0;
    int c = (s->col0 + ux / G.cw) * G.b, rr;
    if (G.mode == HEAT_HALF) {
        if (2 * uy >= G.rows_vis) return 0;
        rr = s->row0 + 2 * uy; /* the upper of the screen row's two */
    } else {
        if (uy >= G.rows_vis) return 0;
        rr = (s->row0 + uy) * G.b;
    }
    if (rr >= n || c >= n) return 0;
    *row = rr;
    *col = c;
    return 1;
}

/* The view in range and the cursor in the view (heatmap_view.h). */
static void view_clamp(heat_view *s, const heat_geom *G, int n) {
    if (s->row < 0) s->row = 0;
    if (s->row > n - 1) s->row = n - 1;
    if (s->col < 0) s->col = 0;
    if (s->col > n - 1) s->col = n - 1;
    int cr = s->row / G->b, cc = s->col / G->b;
    if (s->centre) {
        s->row0 = cr - G->rows_vis / 2;
        s->col0 = cc - G->cols_vis / 2;
        s->centre = 0;
        s->follow = 1;
    }
    if (s->follow) {
        if (cr < s->row0) s->row0 = cr;
        if (cr >= s->row0 + G->rows_vis) s->row0 = cr - G->rows_vis + 1;
        if (cc < s->col0) s->col0 = cc;
        if (cc >= s->col0 + G->cols_vis) s->col0 = cc - G->cols_vis + 1;
    }
    int rmax = G->units - G->rows_vis, cmax = G->units - G->cols_vis;
    s->row0 = s->row0 > rmax ? rmax : s->row0;
    s->col0 = s->col0 > cmax ? cmax : s->col0;
    if (s->row0 < 0) s->row0 = 0;
    if (s->col0 < 0) s->col0 = 0;
    if (!s->follow) {
        if (cr < s->row0) s->row = s->row0 * G->b;
        if (cr >= s->row0 + G->rows_vis && G->rows_vis > 0) s->row = (s->row0 + G->rows_vis - 1) * G->b;
        if (cc < s->col0) s->col = s->col0 * G->b;
        if (cc >= s->col0 + G->cols_vis && G->cols_vis > 0) s->col = (s->col0 + G->cols_vis - 1) * G->b;
    }
}

/* The pane title, the longest wording that fits: the total is never cut; when
 * zoomed it says what a cell is (the block's mean cost). */
static void heat_title(grid *g, const ui_rect *r, const explore_request *q, double total, int b) {
    const char *m = cost_method_name(q->method), *on = q->center ? "on" : "off";
    char t[4][320], z[3][48] = {"", "", ""};
    if (b > 1) {
        snprintf(z[0], sizeof z[0], "  %dx%d block mean", b, b);
        snprintf(z[1], sizeof z[1], "  %dx mean", b);
    }
    for (int zi = 0; zi < 3; zi++) {
        snprintf(t[0], sizeof t[0], "cost: %s  gate centring %s  total %.4g%s", m, on, total, z[zi]);
        snprintf(t[1], sizeof t[1], "cost: %s  centring %s  total %.4g%s", m, on, total, z[zi]);
        snprintf(t[2], sizeof t[2], "%s  centring %s  total %.4g%s", m, on, total, z[zi]);
        snprintf(t[3], sizeof t[3], "%s  total %.4g%s", m, total, z[zi]);
        int k = 0;
        while (k < 3 && (int)strlen(t[k]) > r->w - 1) k++;
        if ((int)strlen(t[k]) <= r->w - 1 || zi == 2) {
            grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, t[k]);
            return;
        }
    }
}

/* Column labels: "B40" over each column when a label fits a column, else a
 * label every k columns (k from 1 2 4 5 8 10 ...) where they do not collide;
 * the cursor's column label over them when the map has the keys. */
static void draw_header(grid *g, const ui_rect *r, const heat_geom *G, const heat_view *s, int n) {
    int y = r->y + 1, x0 = r->x + G->label_w, right = r->x + r->w;
    int lab = 1 + digits(n - 1);
    char buf[16];
    if (G->b == 1 && G->cw > lab) { /* a gap after each label; the cursor's in its place, in its colours */
        for (int j = 0; j < G->cols_vis; j++) {
            snprintf(buf, sizeof buf, "B%d", s->col0 + j);
            int len = (int)strlen(buf), wd = G->cw - 1 >= len ? G->cw - 1 : G->cw;
            grid_printf(g, x0 + j * G->cw, y, G->cw, ROLE_DIM, "%*s", wd, buf);
            if (s->focus && s->col == s->col0 + j) grid_role(g, x0 + j * G->cw + wd - len, y, len, ROLE_CURSOR);
        }
        return;
    } else {
        static const int nice[] = {1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256};
        int k = 256;
        for (size_t i = 0; i < sizeof nice / sizeof nice[0]; i++)
            if (nice[i] * G->cw >= lab + 1) {
                k = nice[i];
                break;
            }
        int map_end = x0 + G->cols_vis * G->cw; /* labels stay over the map */
        int cx0 = -1000, cx1 = -1000;             /* the cursor's label, kept clear */
        if (s->focus) {
            cx0 = x0 + (s->col / G->b - s->col0) * G->cw;
            cx1 = cx0 + 1 + digits((s->col / G->b) * G->b) + 1;
        }
        for (int j = 0; j < G->cols_vis; j++) {
            int u = s->col0 + j, x = x0 + j * G->cw;
            if (u % k) continue;
            snprintf(buf, sizeof buf, "B%d", u * G->b);
            int len = (int)strlen(buf);
            if (x + len <= map_end && (x + len < cx0 || x > cx1)) grid_text(g, x, y, right - x, ROLE_DIM, buf);
        }
    }
    if (s->focus) {
        int j = s->col / G->b - s->col0, x = x0 + j * G->cw;
        snprintf(buf, sizeof buf, "B%d", (s->col / G->b) * G->b);
        int len = (int)strlen(buf);
        if (x + len > right) x = right - len;
        grid_text(g, x, y, right - x, ROLE_CURSOR, buf);
    }
}

/* Which rows (and columns) show when not all do: "0-4/12 [ ]", or
 * "A0-9 B0-19/64" when the columns scroll too; "" when all show. */
static void where_text(const heat_geom *G, const heat_view *s, int n, char *buf, size_t cap) {
    int rl = s->row0 * G->b, rh = imin(n, (s->row0 + G->rows_vis) * G->b) - 1;
    int cl = s->col0 * G->b, ch = imin(n, (s->col0 + G->cols_vis) * G->b) - 1;
    buf[0] = 0;
    if (G->cols_vis < G->units) snprintf(buf, cap, " A%d-%d B%d-%d/%d", rl, rh, cl, ch, n);
    else if (G->rows_vis < G->units) snprintf(buf, cap, " %d-%d/%d [ ]", rl, rh, n);
}

/* A row label, in the cursor's colours when the cursor is on that row. */
static void row_label(grid *g, const ui_rect *r, const heat_geom *G, int y, int a, int cursor_row) {
    grid_printf(g, r->x, y, G->label_w, cursor_row ? ROLE_CURSOR : ROLE_DIM, "A%d", a);
}

/* Zoom 1, colour + UTF-8, numbers do not fit: two rows a screen row. */
static void draw_half(grid *g, const ui_rect *r, const heat_geom *G, const heat_view *s, const explore_snapshot *v,
                      double lo, double hi) {
    int n = v->n, x0 = r->x + G->label_w;
    const double *C = v->cost;
    int screen_rows = (G->rows_vis + 1) / 2;
    for (int k = 0; k < screen_rows; k++) {
        int a0 = s->row0 + 2 * k, a1 = a0 + 1;
        int has1 = 2 * k + 1 < G->rows_vis && a1 < n;
        int y = r->y + 2 + k;
        row_label(g, r, G, y, a0, s->focus && (s->row == a0 || (has1 && s->row == a1)));
        for (int j = 0; j < G->cols_vis; j++) {
            int bj = s->col0 + j;
            int top = heat_step(C[a0 * n + bj], lo, hi);
            int bot = has1 ? heat_step(C[a1 * n + bj], lo, hi) : -1;
            int cur = s->focus && bj == s->col && (s->row == a0 || (has1 && s->row == a1));
            for (int c = 0; c < G->cw; c++) {
                int x = x0 + j * G->cw + c;
                grid_put(g, x, y, 0x2580, ROLE_NORMAL); /* ▀ upper half: row a0 */
                /* the cursor cell: the half of its row in the cursor's colour */
                if (cur) grid_heat(g, x, y, s->row == a0 ? -1 : top, s->row == a0 ? bot : -1);
                else grid_heat(g, x, y, top, bot);
                if (cur) grid_at(g, x, y)->role = ROLE_CURSOR;
            }
        }
        /* the two rows' assignments beside them */
        int sx = x0 + G->cols_vis * G->cw + 1;
        if (sx < r->x + r->w && v->req.order_stage) {
            char buf[64];
            int len = snprintf(buf, sizeof buf, "A%d\u2192B%d", a0, v->cost_order[a0]);
            if (has1) snprintf(buf + len, sizeof buf - (size_t)len, " A%d\u2192B%d", a1, v->cost_order[a1]);
            grid_text(g, sx, y, r->x + r->w - sx, ROLE_MARK, buf);
        }
    }
}

/* One number of decimals for the whole matrix (from its largest entry), so
 * the columns line up and 12.30 does not print as 12.3. */
static int number_decimals(int cw, double lo, double hi) {
    int sig = cw - 3 > 4 ? 4 : cw - 3, dec = 0;
    double amax = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    if (amax > 0 && isfinite(amax)) dec = sig - 1 - (int)floor(log10(amax));
    if (dec < 0) dec = 0;
    if (dec > sig) dec = sig;
    return dec;
}

/* Zoom 1, one screen row a matrix row: numbers, or shade glyphs. */
static void draw_cells(grid *g, const ui_rect *r, const heat_geom *G, const heat_view *s, const explore_snapshot *v,
                       double lo, double hi) {
    int n = v->n, cw = G->cw, dec = number_decimals(cw, lo, hi);
    const double *C = v->cost;
    for (int i = 0; i < G->rows_vis; i++) {
        int ai = s->row0 + i, y = r->y + 2 + i;
        row_label(g, r, G, y, ai, s->focus && s->row == ai);
        for (int j = 0; j < G->cols_vis; j++) {
            int bj = s->col0 + j;
            double c = C[ai * n + bj];
            int assigned = v->req.order_stage && v->cost_order[ai] == bj; /* o off: no order used */
            int cur = s->focus && s->row == ai && s->col == bj;
            int level = heat_level(c, lo, hi), step = heat_step(c, lo, hi);
            int role = cur ? ROLE_CURSOR : assigned ? ROLE_ASSIGNED : g->color ? ROLE_NORMAL : ROLE_HEAT_0 + level;
            int x = r->x + G->label_w + j * cw;
            int span = G->mode == HEAT_NUMBERS ? cw : cw - 1;
            if (G->mode == HEAT_NUMBERS) {
                char num[32], buf[40];
                /* scientific when 1e18 would not fit, a space kept before the next cell */
                axis_format(c, dec, cw - 1, num, sizeof num);
                if (strchr(num, 'e')) axis_format(c, dec, cw - 2, num, sizeof num);
                snprintf(buf, sizeof buf, "%*s%c", cw - 1, num, assigned ? '*' : ' ');
                grid_fill(g, x, y, cw, 1, ' ', role);
                grid_text(g, x, y, cw, role, buf);
            } else {
                uint32_t glyph = assigned ? assigned_glyph(g) : shade(g, level);
                for (int k = 0; k < span; k++) grid_put(g, x + k, y, glyph, role);
            }
            /* colour: on its heat colour (the cursor keeps its own) */
            if (g->color && !cur)
                for (int k = 0; k < span; k++) grid_heat(g, x + k, y, -1, step);
        }
    }
}

/* The block (ub, uc) of side b: its mean cost and whether it holds an
 * assigned pair (i, pi(i)). */
static double block_mean(const explore_snapshot *v, int b, int ub, int uc, int *assigned) {
    int n = v->n, r0 = ub * b, c0 = uc * b, r1 = imin(n, r0 + b), c1 = imin(n, c0 + b);
    double sum = 0;
    *assigned = 0;
    for (int i = r0; i < r1; i++) {
        const double *row = v->cost + (size_t)i * n;
        for (int j = c0; j < c1; j++) sum += row[j];
        if (v->req.order_stage && v->cost_order[i] >= c0 && v->cost_order[i] < c1) *assigned = 1;
    }
    return sum / ((double)(r1 - r0) * (c1 - c0));
}

/* Zoomed out: one screen cell (cw columns) a block. */
static void draw_blocks(grid *g, const ui_rect *r, const heat_geom *G, const heat_view *s, const explore_snapshot *v,
                        double lo, double hi) {
    int b = G->b;
    for (int i = 0; i < G->rows_vis; i++) {
        int ub = s->row0 + i, y = r->y + 2 + i;
        row_label(g, r, G, y, ub * b, s->focus && s->row / b == ub);
        for (int j = 0; j < G->cols_vis; j++) {
            int uc = s->col0 + j, assigned;
            double mean = block_mean(v, b, ub, uc, &assigned);
            int level = heat_level(mean, lo, hi), step = heat_step(mean, lo, hi);
            int cur = s->focus && s->row / b == ub && s->col / b == uc;
            uint32_t glyph = assigned ? assigned_glyph(g) : g->color && !cur ? ' ' : shade(g, level);
            int role = cur ? ROLE_CURSOR : assigned ? ROLE_ASSIGNED : g->color ? ROLE_NORMAL : ROLE_HEAT_0 + level;
            int x = r->x + G->label_w + j * G->cw;
            for (int k = 0; k < G->cw; k++) {
                grid_put(g, x + k, y, glyph, role);
                if (g->color && !cur) grid_heat(g, x + k, y, -1, step);
            }
        }
    }
}

/* The scale from cheap to dear at (x, y); returns the column after it. */
static int draw_scale(grid *g, int x, int y, int right, int mode, double lo, double hi) {
    x += grid_printf(g, x, y, right - x, ROLE_DIM, "%.3g ", lo);
    if (mode == HEAT_GLYPHS || (mode == HEAT_BLOCKS && !g->color)) {
        /* the glyph ramp (on its colours when there are colours) */
        for (int l = 0; l < HEAT_LEVELS && x < right; l++) {
            grid_put(g, x, y, shade(g, l), g->color ? ROLE_NORMAL : ROLE_HEAT_0 + l);
            if (g->color) grid_heat(g, x, y, -1, (2 * l + 1) * HEAT_STEPS / (2 * HEAT_LEVELS));
            x++;
        }
    } else if (g->color) {
        /* the colour scale itself, one cell a step (every other step when narrow) */
        int stride = right - x > HEAT_STEPS + 24 ? 1 : 2;
        for (int st = 0; st < HEAT_STEPS && x < right; st += stride) {
            grid_put(g, x, y, ' ', ROLE_NORMAL);
            grid_heat(g, x++, y, -1, st);
        }
    } else {
        for (int l = 0; l < HEAT_LEVELS && x < right; l++) grid_put(g, x++, y, shade(g, l), ROLE_HEAT_0 + l);
    }
    return x + grid_printf(g, x, y, right - x, ROLE_DIM, " %.3g ", hi);
}

/* where at x on the legend row y when it fits, else right of the map on the header row */
static void where_put(grid *g, const ui_rect *r, const heat_geom *G, int x, int y, const char *where) {
    int right = r->x + r->w, wl = (int)strlen(where);
    int map_end = r->x + G->label_w + G->cols_vis * G->cw;
    if (!wl) return;
    if (x + wl <= right) grid_text(g, x, y, wl, ROLE_DIM, where);
    else if (map_end + 1 + wl <= right) grid_text(g, map_end + 1, r->y + 1, wl, ROLE_DIM, where);
}

/* The cursor's cell (or block) in words: "A17 B40 1.234 A17→B12". */
static int readout(grid *g, int x, int y, int right, const heat_geom *G, const heat_view *s, const explore_snapshot *v) {
    char buf[128];
    int b = G->b, n = v->n;
    const char *arrow = g->utf8 ? "\u2192" : "->";
    if (b == 1) {
        snprintf(buf, sizeof buf, "A%d B%d %.4g  A%d%sB%d ", s->row, s->col, v->cost[s->row * n + s->col], s->row,
                 arrow, v->cost_order[s->row]);
    } else {
        int ub = s->row / b, uc = s->col / b, assigned;
        double mean = block_mean(v, b, ub, uc, &assigned);
        snprintf(buf, sizeof buf, "A%d-%d B%d-%d mean %.4g%s ", ub * b, imin(n, ub * b + b) - 1, uc * b,
                 imin(n, uc * b + b) - 1, mean, assigned ? " (assigned)" : "");
    }
    return x + grid_text(g, x, y, right - x, ROLE_CURSOR, buf);
}

/* The legend row: the scale and what marks the assignment (or, while the
 * map has the keys, the cursor's cell first), then which rows show. The
 * header row takes the rows shown when the legend has no room for them. */
static void draw_legend(grid *g, const ui_rect *r, int y, const heat_geom *G, const heat_view *s,
                        const explore_snapshot *v, double lo, double hi) {
    int x = r->x + 1, right = r->x + r->w;
    char where[64];
    where_text(G, s, v->n, where, sizeof where);
    int wl = (int)strlen(where);
    if (s->focus) {
        x = readout(g, x, y, right, G, s, v) + 1;
        if (right - x >= 14 + wl) x = draw_scale(g, x, y, right - wl, G->mode, lo, hi);
        where_put(g, r, G, x, y, where);
        return;
    }
    x = draw_scale(g, x, y, right, G->mode, lo, hi);
    const char *dia = g->utf8 ? "\u25C6" : "@";
    char mark[64];
    if (!v->req.order_stage) snprintf(mark, sizeof mark, " o off: unused");
    else if (G->mode == HEAT_NUMBERS) snprintf(mark, sizeof mark, " *assigned");
    else if (G->mode == HEAT_HALF) snprintf(mark, sizeof mark, right - x >= 16 ? " \u2580 2 rows/line" : " \u2580 2 rows");
    else if (G->mode == HEAT_BLOCKS)
        snprintf(mark, sizeof mark, right - x >= 20 ? " %s holds assigned" : " %sassigned", dia);
    else snprintf(mark, sizeof mark, " %sassigned", dia);
    x += grid_text(g, x, y, right - x, ROLE_DIM, mark);
    where_put(g, r, G, x, y, where);
}

void heatmap_render(grid *g, const ui_rect *r, const explore_snapshot *v, heat_view *s) {
    if (r->w <= 0 || r->h <= 0) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    if (!v || !v->cost) {
        grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "cost matrix");
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "computing...");
        return;
    }
    int n = v->n;
    if (s->zoom > n) s->zoom = n;
    heat_geom G = geom(n, s->zoom, r->w, r->h, g->utf8, g->color);
    heat_title(g, r, &v->req, v->cost_total, G.b);
    // C is (n, n): C[i*n+j] cost of B's expert j in A's slot i
    const double *C = v->cost;
    double lo = C[0], hi = C[0];
    for (int i = 0; i < n * n; i++) {
        if (C[i] < lo) lo = C[i];
        if (C[i] > hi) hi = C[i];
    }
    if (G.rows_fit < 1 || G.rows_vis < 1 || G.cols_vis < 1) return;
    if (G.mode == HEAT_BLOCKS) { /* the scale spans the block means: they crowd the middle of the cells' range */
        lo = INFINITY, hi = -INFINITY;
        for (int ub = 0; ub < G.units; ub++)
            for (int uc = 0; uc < G.units; uc++) {
                int assigned;
                double m = block_mean(v, G.b, ub, uc, &assigned);
                lo = m < lo ? m : lo;
                hi = m > hi ? m : hi;
            }
    }
    view_clamp(s, &G, n);
    draw_header(g, r, &G, s, n);
    if (G.mode == HEAT_HALF) draw_half(g, r, &G, s, v, lo, hi);
    else if (G.mode == HEAT_BLOCKS) draw_blocks(g, r, &G, s, v, lo, hi);
    else draw_cells(g, r, &G, s, v, lo, hi);
    int y = r->y + 2 + (G.mode == HEAT_HALF ? (G.rows_vis + 1) / 2 : G.rows_vis);
    if (y < r->y + r->h) draw_legend(g, r, y, &G, s, v, lo, hi);
}
