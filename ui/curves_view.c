/* curves_view.c - see curves_view.h. */
#include "curves_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "order_abbrev.h"
#include "pins.h"
#include "model/symmetry.h"

typedef struct {
    int pw, ph;          /* plot size in cells */
    int utf8;
    int mono;            /* UTF-8 without colour: only the current curve and the
                          * chord in braille, the others in their glyphs, so
                          * that they stay apart without colour */
    uint8_t *bits;       // (ph, pw) braille dots, or the ASCII glyph
    uint8_t *role;       // (ph, pw)
    uint8_t *glyph;      // (ph, pw) 1 where bits holds a glyph (mono)
} canvas;

/* in a monochrome UTF-8 canvas, which curves keep braille */
static int mono_braille(int role) { return role == ROLE_CURVE_CURRENT || role == ROLE_CHORD; }

/* braille dot bit for (dx 0..1, dy 0..3) inside a cell */
static const uint8_t braille_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

static void canvas_dot(canvas *c, int X, int Y, int role, char glyph) {
    int cx, cy;
    if (c->utf8) {
        cx = X / 2;
        cy = Y / 4;
    } else {
        cx = X;
        cy = Y;
    }
    if (X < 0 || Y < 0 || cx >= c->pw || cy >= c->ph) return;
    int k = cy * c->pw + cx;
    if (!c->utf8) {
        c->bits[k] = (uint8_t)glyph;
    } else if (c->mono && !mono_braille(role)) {
        c->bits[k] = (uint8_t)glyph;
        c->glyph[k] = 1;
    } else if (c->glyph[k]) {
        c->bits[k] = braille_bit[Y % 4][X % 2]; /* braille drawn later covers a glyph */
        c->glyph[k] = 0;
    } else {
        c->bits[k] |= braille_bit[Y % 4][X % 2];
    }
    c->role[k] = (uint8_t)role;
}

/* A series of T values over t in [0,1], as connected segments. dash: draw
 * every other stretch (the chord). */
static void canvas_series(canvas *c, const double *y, int T, double lo, double hi, int role, char glyph, int dash) {
    int W = c->utf8 ? 2 * c->pw : c->pw, H = c->utf8 ? 4 * c->ph : c->ph;
    if (T < 2 || W < 2 || H < 2) return;
    double span = hi - lo > 0 ? hi - lo : 1;
    int step = 0;
    for (int m = 0; m + 1 < T; m++) {
        if (!isfinite(y[m]) || !isfinite(y[m + 1])) continue;
        double x0 = (double)m / (T - 1) * (W - 1), x1 = (double)(m + 1) / (T - 1) * (W - 1);
        double y0 = (hi - y[m]) / span * (H - 1), y1 = (hi - y[m + 1]) / span * (H - 1);
        /* sample the segment densely enough to connect the dots */
        int steps = (int)ceil(fmax(fabs(x1 - x0), fabs(y1 - y0))) + 1;
        for (int s = 0; s <= steps; s++, step++) {
            double f = (double)s / steps;
            if (dash && (step / (c->utf8 ? 3 : 1)) % 2) continue;
            canvas_dot(c, (int)lround(x0 + f * (x1 - x0)), (int)lround(y0 + f * (y1 - y0)), role, glyph);
        }
    }
}

typedef struct {
    const ls_curve *c;
    int role;
    char glyph;
    const char *name;
    int pin;             /* -1, or the index of the pin this curve is */
} series;

typedef struct {
    uint32_t glyph;
    int role, text_role;
    char full[96], brief[96];
} legend_entry;

/* The legend's entries: the curves (newest first, then the pins) with their
 * barriers, then the chord. A pin's glyph is its digit, as on its curve. */
static int legend_entries(const grid *g, const explore_snapshot *v, const pin_set *pins, const series *S, int ns,
                          int metric_acc, legend_entry *E) {
    int ne = 0;
    for (int s = ns - 1; s >= 0; s--) {
        legend_entry *e = &E[ne++];
        e->glyph = g->utf8 && (g->color || mono_braille(S[s].role)) && S[s].pin < 0 ? 0x28FF : (uint32_t)S[s].glyph;
        e->role = S[s].role;
        e->text_role = ROLE_NORMAL;
        double b = metric_acc ? S[s].c->acc_barrier : S[s].c->barrier;
        if (S[s].pin >= 0) {
            char lab[LS_MAX_N * 4 + 32];
            pins_label(pins, S[s].pin, v->req.wm_stage, 1, lab, sizeof lab);
            char num[24];
            snprintf(num, sizeof num, "%.4f", b);
            snprintf(e->full, sizeof e->full, "%.70s %.20s", lab, num);
            snprintf(e->brief, sizeof e->brief, "%.95s", lab); /* a label of n = 256 is longer */
        } else if (S[s].c == &v->current) {
            snprintf(e->full, sizeof e->full, "%s %s=%.4f", S[s].name, metric_acc ? "acc.barrier" : "barrier", b);
            memcpy(e->brief, e->full, sizeof e->brief);
            e->text_role = ROLE_CURVE_CURRENT;
        } else {
            snprintf(e->full, sizeof e->full, "%s %.4f", S[s].name, b);
            snprintf(e->brief, sizeof e->brief, "%s", S[s].c == &v->selected ? S[s].name + 6 : S[s].name);
        }
    }
    E[ne] = (legend_entry){g->utf8 ? 0x2504 : '.', ROLE_CHORD, ROLE_NORMAL, "chord", "chord"};
    return ne + 1;
}

/* Lay the legend out in a pane of width w from row y (first fit: each entry
 * on the first row with room for it), drawing when draw is set; brief: 0
 * full entries, 1 names only, 2 full entries packed tight. Returns the
 * rows used, or -1 when the entries do not fit in max_rows. */
static int legend_flow(grid *g, int x0, int w, int y, const legend_entry *E, int ne, int brief, int max_rows,
                       int draw) {
    int lx[4], used = 0;
    int tight = brief == 2; /* no margin, one space between entries */
    int start = x0 + !tight, gap = tight ? 1 : 2;
    if (max_rows > 4) max_rows = 4;
    for (int k = 0; k < 4; k++) lx[k] = start;
    for (int i = 0; i < ne; i++) {
        const char *txt = brief == 1 ? E[i].brief : E[i].full;
        int need = 2 + (int)strlen(txt), ly = 0;
        while (ly < max_rows && lx[ly] > start && lx[ly] + need > x0 + w) ly++;
        if (ly >= max_rows) return -1;
        if (draw) {
            grid_put(g, lx[ly], y + ly, E[i].glyph, E[i].role);
            grid_text(g, lx[ly] + 2, y + ly, x0 + w - lx[ly] - 2, E[i].text_role, txt);
        }
        lx[ly] += need + gap;
        if (ly + 1 > used) used = ly + 1;
    }
    return used;
}

/* A pin's digit where its curve is furthest from the chord (its barrier), so
 * that braille curves of one colour can be told apart. */
static void pin_digit(canvas *c, const series *S, const double *chord, int T, double lo, double hi, int metric_acc) {
    const double *y = metric_acc ? S->c->acc : S->c->loss;
    if (!y) return;
    int best = -1;
    double gap = -INFINITY;
    for (int m = 0; m < T; m++) {
        double d = metric_acc ? chord[m] - y[m] : y[m] - chord[m];
        if (isfinite(d) && d > gap) gap = d, best = m;
    }
    if (best < 0) return;
    int W = c->utf8 ? 2 * c->pw : c->pw, H = c->utf8 ? 4 * c->ph : c->ph;
    double span = hi - lo > 0 ? hi - lo : 1;
    int X = (int)lround((double)best / (T - 1) * (W - 1)), Y = (int)lround((hi - y[best]) / span * (H - 1));
    int cx = c->utf8 ? X / 2 : X, cy = c->utf8 ? Y / 4 : Y;
    if (cx < 0 || cy < 0 || cx >= c->pw || cy >= c->ph) return;
    int k = cy * c->pw + cx;
    c->bits[k] = (uint8_t)S->glyph;
    c->glyph[k] = 1;
    c->role[k] = (uint8_t)S->role;
}

void curves_render(grid *g, const ui_rect *r, const explore_snapshot *v, const pin_set *pins, int metric_acc,
                   int net_blocks) {
    if (r->w < 20 || r->h < 6) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    const char *metric = metric_acc ? "accuracy" : "loss";
    int T = v ? v->T : 0;
    char title[96];
    snprintf(title, sizeof title, "curves: %s against t (a: %s)", metric, metric_acc ? "loss" : "accuracy");
    if ((int)strlen(title) > r->w - 1) snprintf(title, sizeof title, "curves: %s (a: %s)", metric, metric_acc ? "loss" : "accuracy");
    grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, title);
    if (!v || T < 2 || !(v->have_naive || v->have_skip || v->have_current || v->have_selected)) {
        if (v && !v->failed && v->prep[0]) // a network's frozen prefix and end points come first
            grid_printf(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "preparing the network: %s", v->prep);
        else
            grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, v && v->failed ? v->status : "computing curves...");
        return;
    }
    if (metric_acc && v->kind != LS_CLASSIFY) {
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "no accuracy: the evaluation set has no labels");
        return;
    }
    char sel_name[80];
    if (v->have_selected) {
        char o[64];
        order_abbrev(v->selected.order, v->n, 48, g->utf8, o, sizeof o);
        snprintf(sel_name, sizeof sel_name, "order %s", o);
    }
    series S[4 + PINS_MAX];
    int ns = 0;
    /* the pins first: the live curves are drawn over them and lead the legend */
    for (int i = 0; pins && i < pins->n; i++)
        S[ns++] = (series){&pins->p[i].c, ROLE_CURVE_PIN(i), pins_glyph(i), "", i};
    if (v->have_naive) S[ns++] = (series){&v->naive, ROLE_CURVE_NAIVE, 'x', "naive", -1};
    // on a network of several MoE blocks skip-order aligns them all (identity order, weight
    // matching): why it can sit above the identity row of the chosen block's table
    char skip_name[48];
    snprintf(skip_name, sizeof skip_name, net_blocks > 1 ? "skip-order, all %d blocks" : "skip-order", net_blocks);
    if (v->have_skip) S[ns++] = (series){&v->skip_order, ROLE_CURVE_SKIP, '+', skip_name, -1};
    if (v->have_selected) S[ns++] = (series){&v->selected, ROLE_CURVE_SELECTED, 'o', sel_name, -1};
    if (v->have_current) S[ns++] = (series){&v->current, ROLE_CURVE_CURRENT, '*', "current", -1};
    /* the chord between the endpoints (all alignments share them) */
    const ls_curve *any = S[pins ? pins->n : 0].c; /* the first live curve */
    const double *ys0 = metric_acc ? any->acc : any->loss;
    double e0 = ys0 ? ys0[0] : NAN, e1 = ys0 ? ys0[T - 1] : NAN;
    double *chord = ms_malloc(sizeof(double) * (size_t)T); // (T)
    for (int m = 0; m < T; m++) {
        double t = v->t ? v->t[m] : (double)m / (T - 1);
        chord[m] = (1 - t) * e0 + t * e1;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < ns; s++) {
        const double *y = metric_acc ? S[s].c->acc : S[s].c->loss;
        for (int m = 0; y && m < T; m++)
            if (isfinite(y[m])) {
                lo = fmin(lo, y[m]);
                hi = fmax(hi, y[m]);
            }
    }
    if (!isfinite(lo)) lo = hi = 0;
    double pad = (hi - lo) * 0.05;
    if (pad <= 0) pad = fabs(hi) * 0.05 + 1e-6;
    lo -= pad;
    hi += pad;

    /* geometry: y labels | axis | plot; below: axis, x labels, then the
       legend with as many rows as it needs (the plot keeps at least 3) */
    int lw = 8;
    legend_entry E[4 + PINS_MAX + 1];
    int ne = legend_entries(g, v, pins, S, ns, metric_acc, E), brief = 0;
    int rows_max = r->h - 1 - 1 - 3; /* title, axis (with the x labels), 3 plot rows */
    /* the full legend, then packed tighter, then names only */
    int lrows = -1;
    for (int b = 0; b < 3 && lrows < 0; b++) {
        brief = b == 0 ? 0 : b == 1 ? 2 : 1;
        lrows = legend_flow(g, r->x, r->w, 0, E, ne, brief, rows_max, 0);
    }
    if (lrows < 0) lrows = rows_max > 0 ? rows_max : 0;
    /* a short plot gets the x labels' row: they go on the axis row */
    int xrow = r->h - 1 - 2 - lrows >= 6;
    canvas c = {.pw = r->w - lw - 2, .ph = r->h - 2 - xrow - lrows, .utf8 = g->utf8, .mono = g->utf8 && !g->color};
    if (c.pw < 4 || c.ph < 2) {
        free(chord);
        return;
    }
    int px = r->x + lw + 1, py = r->y + 1;
    c.bits = ms_calloc((size_t)(c.pw * c.ph), 1);
    c.role = ms_calloc((size_t)(c.pw * c.ph), 1);
    c.glyph = ms_calloc((size_t)(c.pw * c.ph), 1);
    canvas_series(&c, chord, T, lo, hi, ROLE_CHORD, '.', 1);
    for (int s = 0; s < ns; s++) {
        const double *y = metric_acc ? S[s].c->acc : S[s].c->loss;
        if (y) canvas_series(&c, y, T, lo, hi, S[s].role, S[s].glyph, 0);
    }
    for (int s = 0; s < ns && S[s].pin >= 0; s++) pin_digit(&c, &S[s], chord, T, lo, hi, metric_acc);
    for (int j = 0; j < c.ph; j++)
        for (int i = 0; i < c.pw; i++) {
            int k = j * c.pw + i;
            if (!c.bits[k]) continue;
            grid_put(g, px + i, py + j, c.utf8 && !c.glyph[k] ? 0x2800u + c.bits[k] : c.bits[k], c.role[k]);
        }
    free(c.bits);
    free(c.role);
    free(c.glyph);
    free(chord);

    /* y axis: round ticks in one precision, the metric's name on a free row */
    uint32_t hbar = g->utf8 ? 0x2500 : '-', corner = g->utf8 ? 0x2514 : '+';
    axis_y(g, r->x, lw, px, py, c.ph, lo, hi, c.utf8 ? 4 : 1, metric);
    /* x axis, ticks at 0, 0.5, 1 */
    int ay = py + c.ph;
    grid_put(g, px - 1, ay, corner, ROLE_BORDER);
    for (int i = 0; i < c.pw; i++) grid_put(g, px + i, ay, hbar, ROLE_BORDER);
    int xy = ay + xrow;
    grid_text(g, px, xy, 1, ROLE_DIM, "0");
    grid_text(g, px + (c.pw - 3) / 2, xy, 3, ROLE_DIM, "0.5");
    grid_text(g, px + c.pw - 1, xy, 1, ROLE_DIM, "1");
    grid_text(g, px + c.pw / 4, xy, 1, ROLE_DIM, "t");

    legend_flow(g, r->x, r->w, xy + 1, E, ne, brief, lrows, 1);
}
