/* plot_png.c - a small anti-aliased rasteriser, axes/legend layout and PNG output.
 *
 * Strokes are drawn as coverage masks: every segment of a polyline is a
 * round-capped capsule whose per-pixel coverage is clamp(r + 0.5 - dist, 0, 1),
 * the mask keeps the maximum over segments, and the whole series is composited
 * once, so joints do not darken and any width is smooth. */
#include "plot/plot_png.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "plot/bitmap_font.h"
#include "plot_int.h"
#include "io/provenance.h"

#define RGB_BG 0xFFFFFFu
#define RGB_TEXT 0x222222u
#define RGB_FRAME 0x555555u
#define RGB_GRID 0xE6E6E6u
#define RGB_ZERO 0xB0B0B0u

/* s (UTF-8) in Latin-1, as tEXt holds it: the code points up to 255 as bytes
 * (R\u00b2 as R and 0xB2), any other as '?'. Allocated. */
static char *latin1_of(const char *s) {
    char *out = ms_malloc(strlen(s) + 1), *o = out;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p < 0x80) *o++ = (char)*p++;
        else if ((*p & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) {
            unsigned cp = ((unsigned)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
            *o++ = cp < 256 ? (char)cp : '?';
            p += 2;
        } else {
            *o++ = '?';
            p++;
            while ((*p & 0xC0) == 0x80) p++;
        }
    }
    *o = 0;
    return out;
}

/* ---- canvas ---- */

typedef struct {
    int w, h;
    uint8_t *px;   // (h, w, 3)
    float *mask;   // (h, w) coverage of the stroke being built
    int mx0, my0, mx1, my1; /* dirty box of the mask (inclusive), mx0 > mx1 when clean */
    int cx0, cy0, cx1, cy1; /* clip box for strokes (inclusive) */
} canvas;

static void cv_init(canvas *c, int w, int h) {
    c->w = w;
    c->h = h;
    c->px = ms_malloc((size_t)w * h * 3);
    memset(c->px, 0xFF, (size_t)w * h * 3);
    c->mask = ms_calloc((size_t)w * h, sizeof(float));
    c->mx0 = w, c->my0 = h, c->mx1 = -1, c->my1 = -1;
    c->cx0 = 0, c->cy0 = 0, c->cx1 = w - 1, c->cy1 = h - 1;
}

static void cv_free(canvas *c) {
    free(c->mask);
    c->mask = NULL;
}

static inline void cv_blend(canvas *c, int x, int y, uint32_t rgb, float a) {
    if (x < 0 || y < 0 || x >= c->w || y >= c->h || a <= 0) return;
    if (a > 1) a = 1;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    float src[3] = {(float)((rgb >> 16) & 255), (float)((rgb >> 8) & 255), (float)(rgb & 255)};
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)lrintf(p[k] + (src[k] - p[k]) * a);
}

static void cv_fill_rect(canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, float a) {
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) cv_blend(c, x, y, rgb, a);
}

/* 1-pixel crisp rectangle outline */
static void cv_rect_outline(canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb, int t) {
    cv_fill_rect(c, x0, y0, x1, y0 + t - 1, rgb, 1);
    cv_fill_rect(c, x0, y1 - t + 1, x1, y1, rgb, 1);
    cv_fill_rect(c, x0, y0, x0 + t - 1, y1, rgb, 1);
    cv_fill_rect(c, x1 - t + 1, y0, x1, y1, rgb, 1);
}

static void mask_touch(canvas *c, int x0, int y0, int x1, int y1) {
    if (x0 < c->mx0) c->mx0 = x0;
    if (y0 < c->my0) c->my0 = y0;
    if (x1 > c->mx1) c->mx1 = x1;
    if (y1 > c->my1) c->my1 = y1;
}

/* Round-capped segment (x0,y0)-(x1,y1) of half-width r into the mask. Pixel
 * (x, y) has its centre at (x + 0.5, y + 0.5). */
static void mask_capsule(canvas *c, double x0, double y0, double x1, double y1, double r) {
    int bx0 = (int)floor(fmin(x0, x1) - r - 1), bx1 = (int)ceil(fmax(x0, x1) + r + 1);
    int by0 = (int)floor(fmin(y0, y1) - r - 1), by1 = (int)ceil(fmax(y0, y1) + r + 1);
    if (bx0 < c->cx0) bx0 = c->cx0;
    if (by0 < c->cy0) by0 = c->cy0;
    if (bx1 > c->cx1) bx1 = c->cx1;
    if (by1 > c->cy1) by1 = c->cy1;
    if (bx0 > bx1 || by0 > by1) return;
    mask_touch(c, bx0, by0, bx1, by1);
    double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    for (int y = by0; y <= by1; y++) {
        double py = y + 0.5;
        for (int x = bx0; x <= bx1; x++) {
            double px = x + 0.5;
            double tt = len2 > 0 ? ((px - x0) * dx + (py - y0) * dy) / len2 : 0;
            if (tt < 0) tt = 0;
            if (tt > 1) tt = 1;
            double ex = px - (x0 + tt * dx), ey = py - (y0 + tt * dy);
            double cov = r + 0.5 - sqrt(ex * ex + ey * ey);
            if (cov <= 0) continue;
            float *m = &c->mask[(size_t)y * c->w + x];
            if (cov > 1) cov = 1;
            if (cov > *m) *m = (float)cov;
        }
    }
}

static void mask_disc(canvas *c, double cx, double cy, double r) {
    mask_capsule(c, cx, cy, cx, cy, r);
}

/* Composite the mask in one colour and clear it. */
static void mask_flush(canvas *c, uint32_t rgb, float alpha) {
    for (int y = c->my0; y <= c->my1; y++)
        for (int x = c->mx0; x <= c->mx1; x++) {
            float *m = &c->mask[(size_t)y * c->w + x];
            if (*m > 0) cv_blend(c, x, y, rgb, *m * alpha);
            *m = 0;
        }
    c->mx0 = c->w, c->my0 = c->h, c->mx1 = -1, c->my1 = -1;
}

/* ---- text ---- */

typedef struct {
    canvas *c;
    uint32_t rgb;
} text_ctx;

static void text_put(void *ctx, int x, int y) {
    text_ctx *t = ctx;
    cv_blend(t->c, x, y, t->rgb, 1);
}

static void cv_text(canvas *c, const bm_font *f, const char *s, int x, int y, int scale,
                    uint32_t rgb) {
    text_ctx t = {c, rgb};
    bm_draw_text(f, s, x, y, scale, 0, text_put, &t);
}

static void cv_text_up(canvas *c, const bm_font *f, const char *s, int x, int y, int scale,
                       uint32_t rgb) {
    text_ctx t = {c, rgb};
    bm_draw_text(f, s, x, y, scale, 1, text_put, &t);
}

/* ---- ticks ---- */

/* Tick label for v with a step of `step`: enough decimals to tell ticks apart. */
static void tick_label(char *buf, size_t n, double v, double step, double maxabs) {
    if (fabs(v) < step * 1e-6) v = 0; /* no "-0" */
    if (maxabs >= 1e6 || (maxabs > 0 && maxabs < 1e-3)) {
        snprintf(buf, n, "%.3g", v);
        return;
    }
    int dec = (int)ceil(-log10(step) - 1e-9);
    if (dec < 0) dec = 0;
    if (dec > 6) dec = 6;
    snprintf(buf, n, "%.*f", dec, v);
}

/* ---- the plot ---- */

typedef struct {
    int x0, y0, x1, y1; /* plot area, inclusive pixel box */
    double xlo, xhi, ylo, yhi;
    int xlog;           /* x on a log10 scale (xlo > 0) */
} frame;

static double map_x(const frame *f, double x) {
    if (f->xlog) return f->x0 + log10(x / f->xlo) / log10(f->xhi / f->xlo) * (f->x1 + 1 - f->x0);
    return f->x0 + (x - f->xlo) / (f->xhi - f->xlo) * (f->x1 + 1 - f->x0);
}
static double map_y(const frame *f, double y) {
    return f->y1 + 1 - (y - f->ylo) / (f->yhi - f->ylo) * (f->y1 + 1 - f->y0);
}

/* Clip the segment to the clip box grown by m (Liang-Barsky); 0 when nothing is left. */
static int clip_segment(const canvas *c, double m, double *x0, double *y0, double *x1,
                        double *y1) {
    double lo = 0, hi = 1, dx = *x1 - *x0, dy = *y1 - *y0;
    double p[4] = {-dx, dx, -dy, dy};
    double q[4] = {*x0 - (c->cx0 - m), (c->cx1 + 1 + m) - *x0, *y0 - (c->cy0 - m),
                   (c->cy1 + 1 + m) - *y0};
    for (int k = 0; k < 4; k++) {
        if (p[k] == 0) {
            if (q[k] < 0) return 0;
            continue;
        }
        double t = q[k] / p[k];
        if (p[k] < 0) {
            if (t > lo) lo = t;
        } else if (t < hi) {
            hi = t;
        }
        if (lo > hi) return 0;
    }
    double ax = *x0 + lo * dx, ay = *y0 + lo * dy, bx = *x0 + hi * dx, by = *y0 + hi * dy;
    *x0 = ax, *y0 = ay, *x1 = bx, *y1 = by;
    return 1;
}

/* Stroke a polyline (NaN = gap) into the mask; dash > 0 gives dashes of that
 * length with gaps of 0.7 * dash. Points closer than 0.6 px to the previous kept
 * one are skipped (so 40320 points cost what ~1000 do). */
static void stroke_series(canvas *c, const frame *f, const plot_series *se, double r,
                          double dash) {
    double px = 0, py = 0, ph = 0;
    int have = 0;
    double gap = dash * 0.7, period = dash + gap;
    for (int i = 0; i < se->n; i++) {
        double x = se->x[i], y = se->y[i];
        if (!isfinite(x) || !isfinite(y)) {
            have = 0;
            continue;
        }
        double qx = map_x(f, x), qy = map_y(f, y);
        if (!have) {
            px = qx, py = qy, have = 1;
            if (se->n == 1 || i + 1 >= se->n || !isfinite(se->y[i + 1])) mask_disc(c, qx, qy, r);
            continue;
        }
        double dx = qx - px, dy = qy - py, len = sqrt(dx * dx + dy * dy);
        if (len < 0.6 && i + 1 < se->n) continue;
        double sx0 = px, sy0 = py, sx1 = qx, sy1 = qy;
        if (!clip_segment(c, r + 2, &sx0, &sy0, &sx1, &sy1)) {
            // entirely outside: keep the dash phase moving
            if (dash > 0) ph = fmod(ph + fmin(len, 1e9), period);
            px = qx, py = qy;
            continue;
        }
        if (dash > 0 && (sx0 != px || sy0 != py || sx1 != qx || sy1 != qy)) {
            // only the visible part is walked (a point far outside the range
            // would otherwise cost len / period iterations)
            dx = sx1 - sx0, dy = sy1 - sy0, len = sqrt(dx * dx + dy * dy);
        }
        if (dash <= 0) {
            mask_capsule(c, sx0, sy0, sx1, sy1, r);
        } else {
            // walk the segment through the dash pattern; ph is the phase in
            // [0, period), carried from segment to segment, snapped at the
            // pattern's edges so rounding can never stall the walk
            double s0 = 0;
            while (s0 < len) {
                double edge = ph < dash ? dash : period;
                double s1 = fmin(len, s0 + (edge - ph));
                if (ph < dash) {
                    double a = s0 / len, b = s1 / len;
                    mask_capsule(c, sx0 + a * dx, sy0 + a * dy, sx0 + b * dx, sy0 + b * dy, r);
                }
                ph += s1 - s0;
                if (ph >= edge - 1e-9) ph = edge >= period ? 0 : dash;
                if (s1 <= s0) break; /* cannot happen; belt and braces */
                s0 = s1;
            }
        }
        px = qx, py = qy;
    }
}

static int load_fonts(bm_font **body, bm_font **title, ms_err *err) {
    *body = ms_malloc(sizeof(bm_font));
    *title = ms_malloc(sizeof(bm_font));
    if (bm_font_open(*body, "9x15.bdf", err) || bm_font_open(*title, "9x18B.bdf", err)) {
        free(*body);
        free(*title);
        *body = *title = NULL;
        return ms_prefix(err, "PNG plot");
    }
    return 0;
}

/* Tick values lo <= k*step <= hi by integer index (no v += step drift or stall),
 * at most max of them. */
static int tick_values(double lo, double hi, double step, double *out, int max) {
    if (!(step > 0) || !isfinite(lo) || !isfinite(hi)) return 0;
    double k0 = ceil(lo / step - 1e-9), k1 = floor(hi / step + 1e-9);
    int n = 0;
    for (double k = k0; k <= k1 && n < max; k++) out[n++] = k * step;
    return n;
}

static int imax(int a, int b) { return a > b ? a : b; }

typedef struct {
    const bm_font *f;
    int scale;
} title_measure;

static int title_width(const void *ctx, const char *s) {
    const title_measure *m = ctx;
    return bm_text_width(m->f, s, m->scale);
}

#define MAX_TICKS 64

typedef struct {
    frame f;
    int s, ts, lh, lht, ticklen, pad; /* ts: the title's scale, smaller when it would not fit */
    char tl[PLOT_TITLE_LINES][PLOT_TITLE_CAP]; /* the title, wrapped to the canvas */
    int ntl;
    double ystep, xstep, ymaxabs, xmaxabs;
    double yt[MAX_TICKS], xt[MAX_TICKS];
    int nyt, nxt;
    int yauto;     /* the y range is the data's (not the spec's) */
} layout;

/* Ranges, ticks and margins; headroom is the fraction of the plot height kept
 * free above the data (room for the legend). */
static void layout_compute(const plot_spec *p, const plot_extra *ex, int W, int H, int s,
                           const bm_font *fb, const bm_font *ft, double headroom, layout *L) {
    frame *f = &L->f;
    L->s = s;
    L->lh = bm_line_height(fb, s);
    L->ts = s;
    while (L->ts > 1 && p->title && bm_text_width(ft, p->title, L->ts) > W - 16 * s) L->ts--;
    L->lht = bm_line_height(ft, L->ts);
    /* a title still too wide at the smallest scale goes on two or three lines */
    title_measure tm = {ft, L->ts};
    L->ntl = plot_title_lines(p->title, W - 16 * s, title_width, &tm, L->tl);
    plot_axis_range(p, 0, &f->xlo, &f->xhi);
    L->yauto = plot_axis_range(p, 1, &f->ylo, &f->yhi);
    if (L->yauto && headroom > 0 && headroom < 0.8) f->yhi = f->ylo + (f->yhi - f->ylo) / (1 - headroom);

    // y ticks first: their labels decide the left margin
    int ytarget = (H / s) / 70;
    if (ytarget < 3) ytarget = 3;
    L->ystep = plot_nice_step(f->ylo, f->yhi, ytarget);
    L->ymaxabs = fmax(fabs(f->ylo), fabs(f->yhi));
    L->nyt = tick_values(f->ylo, f->yhi, L->ystep, L->yt, MAX_TICKS);
    int ylabw = 0, xcatw = 0;
    char buf[64];
    for (int i = 0; i < L->nyt && !p->nycat; i++) {
        tick_label(buf, sizeof buf, L->yt[i], L->ystep, L->ymaxabs);
        int w = bm_text_width(fb, buf, s);
        if (w > ylabw) ylabw = w;
    }
    for (int k = 0; k < p->nycat; k++) ylabw = imax(ylabw, bm_text_width(fb, p->ycat[k], s));
    for (int k = 0; k < p->nxcat; k++) xcatw = imax(xcatw, bm_text_width(fb, p->xcat[k], s));
    L->ticklen = 5 * s, L->pad = 8 * s;
    int pad = L->pad, lh = L->lh;
    int left = pad + (p->ylabel && p->ylabel[0] ? lh + pad : 0) + ylabw + L->ticklen + 4 * s;
    int top = L->ntl ? pad + L->ntl * L->lht + pad + 2 * s : pad * 2;
    int bottom = L->ticklen + 4 * s + lh + (p->xlabel && p->xlabel[0] ? pad / 2 + lh : 0) + pad;
    int right = 24 * s;
    f->x0 = left;
    f->y0 = top;
    f->x1 = W - right - 1;
    f->y1 = H - bottom - 1;
    if (f->x1 - f->x0 < 20) f->x1 = f->x0 + 20;
    if (f->y1 - f->y0 < 20) f->y1 = f->y0 + 20;

    int xtarget = (W / s) / 110;
    if (xtarget < 3) xtarget = 3;
    L->xstep = plot_nice_step(f->xlo, f->xhi, xtarget);
    if (ex && ex->min_xstep > 0 && L->xstep < ex->min_xstep) L->xstep = ex->min_xstep;
    L->xmaxabs = fmax(fabs(f->xlo), fabs(f->xhi));
    L->nxt = tick_values(f->xlo, f->xhi, L->xstep, L->xt, MAX_TICKS);
    f->xlog = p->xlog && f->xlo > 0;
    if (f->xlog) { /* the powers of ten in range */
        L->nxt = 0;
        for (double t = pow(10, ceil(log10(f->xlo) - 1e-9)); t <= f->xhi * (1 + 1e-9) && L->nxt < MAX_TICKS; t *= 10)
            L->xt[L->nxt++] = t;
        L->xstep = 1;
    }
    /* categories: a tick at each (every k-th where the labels would collide) */
    double xspan = f->xhi - f->xlo > 0 ? f->xhi - f->xlo : 1, yspan = f->yhi - f->ylo > 0 ? f->yhi - f->ylo : 1;
    if (p->nxcat) {
        int k = plot_cat_stride(p->nxcat, (f->x1 - f->x0) * p->nxcat / xspan, xcatw, 8 * s);
        L->nxt = 0;
        for (int c = 0; c < p->nxcat && L->nxt < MAX_TICKS; c += k) L->xt[L->nxt++] = c + 1;
        L->xstep = k;
    }
    if (p->nycat) {
        int k = plot_cat_stride(p->nycat, (f->y1 - f->y0) * p->nycat / yspan, L->lh, 2 * s);
        L->nyt = 0;
        for (int c = 0; c < p->nycat && L->nyt < MAX_TICKS; c += k) L->yt[L->nyt++] = c + 1;
        L->ystep = k;
    }
}

/* A tick's label: its category on a categorical axis, else the number. */
static void axis_text(const plot_spec *p, const layout *L, int y_axis, double v, char *buf, size_t cap) {
    int ncat = y_axis ? p->nycat : p->nxcat, k = (int)lround(v) - 1;
    const char *const *cat = y_axis ? p->ycat : p->xcat;
    if (ncat && k >= 0 && k < ncat) snprintf(buf, cap, "%s", cat[k]);
    else if (!y_axis && L->f.xlog) snprintf(buf, cap, "%.6g", v);
    else if (y_axis) tick_label(buf, cap, v, L->ystep, L->ymaxabs);
    else tick_label(buf, cap, v, L->xstep, L->xmaxabs);
}

/* Data points (and samples along segments) of all series inside the box. */
static long box_hits(const plot_spec *p, const frame *f, int bx, int by, int bw, int bh) {
    long hits = 0;
    for (int si = 0; si < p->nseries; si++) {
        const plot_series *se = &p->series[si];
        double prevx = NAN, prevy = NAN;
        for (int i = 0; i < se->n; i++) {
            if (!isfinite(se->x[i]) || !isfinite(se->y[i])) {
                prevx = NAN;
                continue;
            }
            double qx = map_x(f, se->x[i]), qy = map_y(f, se->y[i]);
            // sample each segment so long segments crossing the box count too
            int steps = isnan(prevx) ? 1 : 8;
            for (int j = 1; j <= steps; j++) {
                double tt = (double)j / steps;
                double sx = isnan(prevx) ? qx : prevx + tt * (qx - prevx);
                double sy = isnan(prevx) ? qy : prevy + tt * (qy - prevy);
                if (sx >= bx - 4 && sx <= bx + bw + 4 && sy >= by - 4 && sy <= by + bh + 4) hits++;
            }
            prevx = qx, prevy = qy;
        }
    }
    return hits;
}

typedef struct {
    int n, w, h, rowh, sample, lpad, margin;
} legend_dims;

static void legend_measure(const plot_spec *p, const bm_font *fb, int s, legend_dims *d) {
    memset(d, 0, sizeof *d);
    int legw = 0;
    for (int si = 0; si < p->nseries; si++) {
        const char *l = p->series[si].label;
        if (!l || !l[0]) continue;
        d->n++;
        int w = bm_text_width(fb, l, s);
        if (w > legw) legw = w;
    }
    int lh = bm_line_height(fb, s);
    d->sample = 30 * s, d->rowh = lh + 4 * s, d->lpad = 8 * s, d->margin = 10 * s;
    d->w = d->lpad + d->sample + 8 * s + legw + d->lpad;
    d->h = d->lpad + d->n * d->rowh - 4 * s + d->lpad;
}

/* The legend's corner: the one covering the fewest data points (ties: top right
 * first). Returns the hits there. */
static long legend_place(const plot_spec *p, const frame *f, const legend_dims *d, int *bx,
                         int *by) {
    int m = d->margin;
    int cand[4][2] = {{f->x1 - m - d->w, f->y0 + m},
                      {f->x0 + m, f->y0 + m},
                      {f->x1 - m - d->w, f->y1 - m - d->h},
                      {f->x0 + m, f->y1 - m - d->h}};
    long best = -1;
    for (int k = 0; k < 4; k++) {
        long hits = box_hits(p, f, cand[k][0], cand[k][1], d->w, d->h);
        if (best < 0 || hits < best) best = hits, *bx = cand[k][0], *by = cand[k][1];
    }
    return best;
}

static void render(const plot_spec *p, const plot_extra *ex, canvas *c, const bm_font *fb,
                   const bm_font *ft) {
    int W = c->w, H = c->h;
    int s = plot_scale(p->scale, W, H);
    double lw = plot_line_px(p, s);
    double mr = (ex && ex->marker_r > 0 ? ex->marker_r : PLOT_MARKER_R) * s;

    // layout; when the legend would cover data in every corner, make room above
    // the data (auto y range only) and lay out again
    layout Ly;
    layout_compute(p, ex, W, H, s, fb, ft, 0, &Ly);
    legend_dims ld;
    legend_measure(p, fb, s, &ld);
    int bx = 0, by = 0;
    if (ld.n > 0 && legend_place(p, &Ly.f, &ld, &bx, &by) > 0 && Ly.yauto) {
        double room = (double)(ld.h + 2 * ld.margin) / (Ly.f.y1 + 1 - Ly.f.y0);
        if (room < 0.6) {
            layout_compute(p, ex, W, H, s, fb, ft, room, &Ly);
            legend_place(p, &Ly.f, &ld, &bx, &by);
        }
    }
    const frame *f = &Ly.f;
    int lh = Ly.lh, ticklen = Ly.ticklen, pad = Ly.pad;
    char buf[64];

    // grid
    for (int i = 0; i < Ly.nyt; i++) {
        int y = (int)floor(map_y(f, Ly.yt[i]));
        if (y < f->y0 || y > f->y1) continue;
        uint32_t col = fabs(Ly.yt[i]) < Ly.ystep * 1e-6 ? RGB_ZERO : RGB_GRID;
        cv_fill_rect(c, f->x0, y, f->x1, y + (s > 1 ? 1 : 0), col, 1);
    }
    for (int i = 0; i < Ly.nxt; i++) {
        int x = (int)floor(map_x(f, Ly.xt[i]));
        if (x < f->x0 || x > f->x1) continue;
        cv_fill_rect(c, x, f->y0, x + (s > 1 ? 1 : 0), f->y1, RGB_GRID, 1);
    }

    // guide lines (landscape marks), dashed, under the data
    c->cx0 = f->x0, c->cy0 = f->y0, c->cx1 = f->x1, c->cy1 = f->y1;
    for (int i = 0; ex && i < ex->nvlines; i++) {
        double x = ex->vlines[i].x, xs[2] = {x, x}, ys[2] = {f->ylo, f->yhi};
        plot_series g = {.x = xs, .y = ys, .n = 2};
        stroke_series(c, f, &g, 0.6 * s, 5.0 * s);
        mask_flush(c, ex->vlines[i].rgb, 0.8f);
    }

    // data
    for (int si = 0; si < p->nseries; si++) {
        const plot_series *se = &p->series[si];
        if (!se->no_line) {
            stroke_series(c, f, se, lw / 2, se->dashed ? 7.0 * s : 0);
            mask_flush(c, se->rgb, 1);
        }
        if (se->markers) {
            double r = se->marker_size > 0 ? se->marker_size * s : mr;
            int outline = ex && ex->outline_markers;
            for (int pass = outline ? 0 : 1; pass < 2; pass++) {
                for (int i = 0; i < se->n; i++) {
                    if (!isfinite(se->x[i]) || !isfinite(se->y[i])) continue;
                    mask_disc(c, map_x(f, se->x[i]), map_y(f, se->y[i]),
                              pass == 0 ? r + 1.5 * s : r);
                }
                mask_flush(c, pass == 0 ? RGB_BG : se->rgb, 1);
            }
        }
    }
    c->cx0 = 0, c->cy0 = 0, c->cx1 = W - 1, c->cy1 = H - 1;

    // frame, ticks and tick labels
    cv_rect_outline(c, f->x0 - 1, f->y0 - 1, f->x1 + 1, f->y1 + 1, RGB_FRAME, 1);
    for (int i = 0; i < Ly.nyt; i++) {
        int y = (int)floor(map_y(f, Ly.yt[i]));
        if (y < f->y0 - 1 || y > f->y1 + 1) continue;
        cv_fill_rect(c, f->x0 - 1 - ticklen, y, f->x0 - 2, y + (s > 1 ? 1 : 0), RGB_FRAME, 1);
        axis_text(p, &Ly, 1, Ly.yt[i], buf, sizeof buf);
        int w = bm_text_width(fb, buf, s);
        cv_text(c, fb, buf, f->x0 - 1 - ticklen - 4 * s - w, y - lh / 2, s, RGB_TEXT);
    }
    for (int i = 0; i < Ly.nxt; i++) {
        int x = (int)floor(map_x(f, Ly.xt[i]));
        if (x < f->x0 - 1 || x > f->x1 + 1) continue;
        cv_fill_rect(c, x, f->y1 + 2, x + (s > 1 ? 1 : 0), f->y1 + 1 + ticklen, RGB_FRAME, 1);
        axis_text(p, &Ly, 0, Ly.xt[i], buf, sizeof buf);
        int w = bm_text_width(fb, buf, s);
        int tx = x - w / 2;
        if (tx + w > W - 2) tx = W - 2 - w;
        cv_text(c, fb, buf, tx, f->y1 + 2 + ticklen + 3 * s, s, RGB_TEXT);
    }

    // title and axis labels
    for (int i = 0; i < Ly.ntl; i++) { /* each line centred over the plot, inside the canvas */
        int w = bm_text_width(ft, Ly.tl[i], Ly.ts);
        int tx = (f->x0 + f->x1) / 2 - w / 2;
        if (tx + w > W - pad) tx = W - pad - w;
        if (tx < pad) tx = pad;
        cv_text(c, ft, Ly.tl[i], tx, pad + s + i * Ly.lht, Ly.ts, RGB_TEXT);
    }
    if (p->xlabel && p->xlabel[0]) {
        int w = bm_text_width(fb, p->xlabel, s);
        cv_text(c, fb, p->xlabel, (f->x0 + f->x1) / 2 - w / 2, H - pad - lh, s, RGB_TEXT);
    }
    if (p->ylabel && p->ylabel[0]) {
        int w = bm_text_width(fb, p->ylabel, s);
        cv_text_up(c, fb, p->ylabel, pad, (f->y0 + f->y1) / 2 + w / 2, s, RGB_TEXT);
    }

    // legend
    if (ld.n > 0) {
        cv_fill_rect(c, bx, by, bx + ld.w - 1, by + ld.h - 1, RGB_BG, 0.92f);
        cv_rect_outline(c, bx, by, bx + ld.w - 1, by + ld.h - 1, 0xBBBBBBu, 1);
        int row = 0;
        for (int si = 0; si < p->nseries; si++) {
            const plot_series *se = &p->series[si];
            if (!se->label || !se->label[0]) continue;
            int ty = by + ld.lpad + row * ld.rowh;
            double cy = ty + lh / 2.0, sx0 = bx + ld.lpad, sx1 = bx + ld.lpad + ld.sample;
            if (!se->no_line) {
                if (se->dashed) { /* a sample of the dash pattern */
                    double d = 7.0 * s, x = sx0;
                    while (x < sx1) {
                        mask_capsule(c, x, cy, fmin(sx1, x + d), cy, lw / 2);
                        x += d * 1.7;
                    }
                } else {
                    mask_capsule(c, sx0, cy, sx1, cy, lw / 2);
                }
                mask_flush(c, se->rgb, 1);
            }
            if (se->markers) {
                double r = se->marker_size > 0 ? se->marker_size * s : mr;
                if (ex && ex->outline_markers) {
                    mask_disc(c, (sx0 + sx1) / 2, cy, r + 1.5 * s);
                    mask_flush(c, RGB_BG, 1);
                }
                mask_disc(c, (sx0 + sx1) / 2, cy, r);
                mask_flush(c, se->rgb, 1);
            }
            cv_text(c, fb, se->label, (int)sx1 + 8 * s, ty, s, RGB_TEXT);
            row++;
        }
    }
}

static int render_checked(const plot_spec *p, const plot_extra *ex, uint8_t **rgb_out, int *w_out,
                          int *h_out, ms_err *err) {
    int W, H;
    plot_dims(p, &W, &H);
    if (plot_check(p, err)) return -1;
    bm_font *fb, *ft;
    if (load_fonts(&fb, &ft, err)) return -1;
    canvas c;
    cv_init(&c, W, H);
    render(p, ex, &c, fb, ft);
    cv_free(&c);
    free(fb);
    free(ft);
    *rgb_out = c.px;
    if (w_out) *w_out = W;
    if (h_out) *h_out = H;
    return 0;
}

int plot_render_rgb(const plot_spec *p, uint8_t **rgb_out, int *w_out, int *h_out, ms_err *err) {
    return render_checked(p, NULL, rgb_out, w_out, h_out, err);
}

/* ---- PNG output ---- */

typedef struct {
    jmp_buf jb;
    char msg[256];
} png_errctx;

static void png_err_fn(png_structp png, png_const_charp msg) {
    png_errctx *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    longjmp(e->jb, 1);
}

/* Our own write/flush so a failure reports errno ("File too large", "No space
 * left on device") instead of libpng's bare "Write Error". */
static void png_write_fn(png_structp png, png_bytep data, png_size_t len) {
    FILE *fp = png_get_io_ptr(png);
    errno = 0;
    if (fwrite(data, 1, len, fp) != len) {
        png_errctx *e = png_get_error_ptr(png);
        snprintf(e->msg, sizeof e->msg, "%s", errno ? strerror(errno) : "short write");
        longjmp(e->jb, 1);
    }
}

static void png_flush_fn(png_structp png) {
    FILE *fp = png_get_io_ptr(png);
    errno = 0;
    if (fflush(fp) != 0) {
        png_errctx *e = png_get_error_ptr(png);
        snprintf(e->msg, sizeof e->msg, "%s", errno ? strerror(errno) : "flush failed");
        longjmp(e->jb, 1);
    }
}

static void png_warn_fn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

int plot_write_png_rgb(const uint8_t *rgb, int w, int h, const char *path, ms_err *err) {
    return plot_write_png_meta(rgb, w, h, NULL, NULL, path, err);
}

int plot_write_png_meta(const uint8_t *rgb, int w, int h, const char *title, const char *legend, const char *path,
                        ms_err *err) {
    atomic_file af;
    if (af_open(&af, path, err)) return -1;
    png_errctx ectx;
    ectx.msg[0] = 0;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ectx, png_err_fn, png_warn_fn);
    if (!png) {
        af_abort(&af);
        return ms_fail(err, "%s: cannot create the PNG writer", path);
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        af_abort(&af);
        return ms_fail(err, "%s: cannot create the PNG writer", path);
    }
    if (setjmp(ectx.jb)) {
        png_destroy_write_struct(&png, &info);
        af_abort(&af);
        return ms_fail(err, "%s: writing PNG failed: %s", path, ectx.msg);
    }
    png_set_write_fn(png, af.fp, png_write_fn, png_flush_fn);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 6);
    // how the plot was made (provenance.h): version, command, inputs, ...
    const char **pk, **pv;
    int npv;
    prov_pairs(&pk, &pv, &npv);
    png_text txt[10];
    int nt = 0;
    for (int i = 0; i < npv && i < 8; i++)
        txt[nt++] = (png_text){.compression = PNG_TEXT_COMPRESSION_NONE, .key = (png_charp)pk[i],
                               .text = (png_charp)pv[i]};
    // what the figure shows, for scripts and tests: its title and legend (tEXt is Latin-1)
    char *t1 = title && title[0] ? latin1_of(title) : NULL, *l1 = legend && legend[0] ? latin1_of(legend) : NULL;
    if (t1) txt[nt++] = (png_text){.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Title", .text = t1};
    if (l1) txt[nt++] = (png_text){.compression = PNG_TEXT_COMPRESSION_NONE, .key = "Legend", .text = l1};
    png_set_text(png, info, txt, nt);
    free(t1);
    free(l1);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(rgb + (size_t)y * w * 3));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return af_commit(&af, err);
}

/* The words a figure shows, for its PNG text chunks: the panels' titles
 * (" | " between) and every legend entry, one a line (free both). */
static void figure_words(const plot_spec *const *panels, int np, char **title, char **legend) {
    size_t tcap = 1, lcap = 1;
    for (int k = 0; k < np; k++) {
        tcap += (panels[k]->title ? strlen(panels[k]->title) : 0) + 3;
        for (int i = 0; i < panels[k]->nseries; i++)
            lcap += (panels[k]->series[i].label ? strlen(panels[k]->series[i].label) : 0) + 1;
    }
    *title = ms_calloc(tcap, 1);
    *legend = ms_calloc(lcap, 1);
    for (int k = 0; k < np; k++) {
        if (panels[k]->title && panels[k]->title[0]) {
            if ((*title)[0]) strcat(*title, " | ");
            strcat(*title, panels[k]->title);
        }
        for (int i = 0; i < panels[k]->nseries; i++)
            if (panels[k]->series[i].label && panels[k]->series[i].label[0]) {
                if ((*legend)[0]) strcat(*legend, "\n");
                strcat(*legend, panels[k]->series[i].label);
            }
    }
}

/* p as a PNG whose text chunks also carry the title and the legend (one label
 * a line). */
int plot_png_file(const plot_spec *p, const plot_extra *ex, const char *path, ms_err *err) {
    uint8_t *rgb;
    int w, h;
    if (render_checked(p, ex, &rgb, &w, &h, err)) return ms_prefix(err, "%s", path);
    char *title, *legend;
    figure_words(&p, 1, &title, &legend);
    int rc = plot_write_png_meta(rgb, w, h, title, legend, path, err);
    free(title);
    free(legend);
    free(rgb);
    return rc;
}

int plot_png_stack(const plot_spec *const *panels, int np, const char *path, ms_err *err) {
    uint8_t **rgb = ms_calloc((size_t)np, sizeof(uint8_t *));
    int *hs = ms_calloc((size_t)np, sizeof(int)), W = 0, H = 0, rc = 0;
    for (int k = 0; k < np && !rc; k++) {
        int w;
        rc = render_checked(panels[k], NULL, &rgb[k], &w, &hs[k], err);
        if (!rc && k && w != W) rc = ms_fail(err, "stacked panels of widths %d and %d", W, w);
        W = w, H += hs[k];
    }
    if (!rc) {
        uint8_t *all = ms_malloc((size_t)W * H * 3); // (H, W, 3)
        size_t off = 0;
        for (int k = 0; k < np; k++) {
            size_t bytes = (size_t)W * hs[k] * 3;
            memcpy(all + off, rgb[k], bytes);
            off += bytes;
        }
        char *title, *legend;
        figure_words(panels, np, &title, &legend);
        rc = plot_write_png_meta(all, W, H, title, legend, path, err);
        free(all);
        free(title);
        free(legend);
    } else {
        ms_prefix(err, "%s", path);
    }
    for (int k = 0; k < np; k++) free(rgb[k]);
    free(rgb);
    free(hs);
    return rc;
}

/* ---- the landscape ---- */

int plot_landscape_render_rgb(const double *barriers_sorted, long n, const long *marked_idx,
                              const char *const *marked_labels, const uint32_t *marked_rgb,
                              int nmarked, const char *title, int width, int height,
                              uint8_t **rgb_out, ms_err *err) {
    landscape_fig b;
    int rc = landscape_fig_build(barriers_sorted, n, marked_idx, marked_labels, marked_rgb, nmarked, title, width,
                                 height, 0, &b, err);
    if (!rc) rc = render_checked(&b.p, &b.ex, rgb_out, NULL, NULL, err);
    landscape_fig_free(&b);
    return rc;
}
