/* plot.c - what the PNG and SVG renderers share (plot.h): sizes, the text
 * scale, tick steps, axis ranges, the line width, and the landscape figure's
 * spec (plot_int.h). */
#include "plot/plot.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_int.h"

int plot_scale(int asked, int W, int H) {
    int s = asked > 0 ? asked : (W >= 1600 ? 2 : 1);
    // capped by what the canvas holds: a long legend entry needs ~480 px per step
    int room = (W < H * 3 / 2 ? W : H * 3 / 2) / 480;
    if (s > room) s = room;
    return s < 1 ? 1 : s > 4 ? 4 : s;
}

void plot_spec_init(plot_spec *p, const plot_size *size) {
    memset(p, 0, sizeof *p);
    p->width = size && size->w > 0 ? size->w : PLOT_W;
    p->height = size && size->h > 0 ? size->h : PLOT_H;
    p->scale = size ? size->scale : 0;
    p->xmin = p->xmax = p->ymin = p->ymax = NAN;
}

int plot_parse_size(const char *s, plot_size *out) {
    // strtol, not sscanf's %d: "4294967456x600" must not wrap to 160 x 600
    char *x, *end;
    if (!s || !isdigit((unsigned char)s[0])) return -1;
    errno = 0;
    long w = strtol(s, &x, 10);
    if (errno || *x != 'x' || !isdigit((unsigned char)x[1])) return -1;
    long h = strtol(x + 1, &end, 10);
    if (errno || *end || w < 160 || h < 120 || w > 16384 || h > 16384) return -1;
    out->w = (int)w;
    out->h = (int)h;
    return 0;
}

void plot_dims(const plot_spec *p, int *W, int *H) {
    *W = p->width > 0 ? p->width : PLOT_W;
    *H = p->height > 0 ? p->height : PLOT_H;
}

int plot_check(const plot_spec *p, ms_err *err) {
    int W, H;
    plot_dims(p, &W, &H);
    if (W < 160 || H < 120 || W > 16384 || H > 16384)
        return ms_fail(err, "plot size %dx%d out of range (160x120 .. 16384x16384)", W, H);
    for (int s = 0; s < p->nseries; s++) {
        const plot_series *se = &p->series[s];
        if (se->n < 0 || (se->n > 0 && (!se->x || !se->y)))
            return ms_fail(err, "plot series %d ('%s') has no data", s, se->label ? se->label : "");
    }
    return 0;
}

double plot_line_px(const plot_spec *p, double s) {
    return (p->line_width > 0 ? p->line_width : PLOT_LINE_WIDTH) * s;
}

int plot_cat_stride(int ncat, double len, double maxw, double gap) {
    if (ncat < 1) return 0;
    double per = len / ncat;
    int k = 1;
    while (k < ncat && k * per < maxw + gap) k++;
    return k;
}

/* ---- titles ---- */

/* the longest prefix of s (at most cap - 1 bytes) ending at a space, or where
 * the text ends, that fits maxw; 0 when not even the first word fits */
static int fit_words(const char *s, int maxw, int (*width)(const void *, const char *), const void *ctx) {
    char buf[PLOT_TITLE_CAP];
    int best = 0, len = (int)strlen(s);
    for (int i = 1; i <= len && i < PLOT_TITLE_CAP; i++) {
        if (i < len && s[i] != ' ') continue;
        snprintf(buf, sizeof buf, "%.*s", i, s);
        if (width(ctx, buf) > maxw) break;
        best = i;
    }
    return best;
}

int plot_title_lines(const char *title, int maxw, int (*width)(const void *ctx, const char *s), const void *ctx,
                     char lines[PLOT_TITLE_LINES][PLOT_TITLE_CAP]) {
    if (!title || !title[0]) return 0;
    snprintf(lines[0], PLOT_TITLE_CAP, "%s", title);
    if (width(ctx, lines[0]) <= maxw) return 1;
    /* "what from A to B: how" reads best split after its colon */
    const char *colon = strstr(title, ": ");
    if (colon) {
        snprintf(lines[0], PLOT_TITLE_CAP, "%.*s", (int)(colon - title + 1), title);
        snprintf(lines[1], PLOT_TITLE_CAP, "%s", colon + 2);
        if (width(ctx, lines[0]) <= maxw && width(ctx, lines[1]) <= maxw) return 2;
    }
    const char *p = title;
    int n = 0;
    while (*p && n < PLOT_TITLE_LINES) {
        while (*p == ' ') p++;
        int take = fit_words(p, maxw, width, ctx);
        if (take == 0) { /* one word wider than the line: as much of it as fits */
            take = 1;
            char buf[PLOT_TITLE_CAP];
            while (p[take] && take + 1 < PLOT_TITLE_CAP) {
                snprintf(buf, sizeof buf, "%.*s", take + 1, p);
                if (width(ctx, buf) > maxw) break;
                take++;
            }
        }
        snprintf(lines[n++], PLOT_TITLE_CAP, "%.*s", take, p);
        p += take;
        while (*p == ' ') p++;
    }
    if (*p) { /* more than the lines hold: the last ends in "..." */
        char *last = lines[n - 1];
        int l = (int)strlen(last);
        for (;;) {
            char buf[PLOT_TITLE_CAP];
            snprintf(buf, sizeof buf, "%.*s...", l, last);
            if (width(ctx, buf) <= maxw || l == 0) {
                snprintf(last, PLOT_TITLE_CAP, "%s", buf);
                break;
            }
            l--;
        }
    }
    return n;
}

/* ---- ranges and ticks ---- */

static int auto_range(double lo, double hi) { return isnan(lo) || isnan(hi) || !(lo < hi); }

/* Data range of x or y over all series (finite values of points with both finite). */
static void data_range(const plot_spec *p, int want_y, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int s = 0; s < p->nseries; s++) {
        const plot_series *se = &p->series[s];
        for (int i = 0; i < se->n; i++) {
            double x = se->x[i], y = se->y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            double v = want_y ? y : x;
            if (v < *lo) *lo = v;
            if (v > *hi) *hi = v;
        }
    }
}

static void widen_degenerate(double *lo, double *hi) {
    if (!isfinite(*lo) || !isfinite(*hi)) {
        *lo = 0;
        *hi = 1;
    } else if (*lo == *hi) {
        double d = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 0.5;
        *lo -= d;
        *hi += d;
    }
}

int plot_axis_range(const plot_spec *p, int want_y, double *lo, double *hi) {
    double set_lo = want_y ? p->ymin : p->xmin, set_hi = want_y ? p->ymax : p->xmax;
    if (!auto_range(set_lo, set_hi)) {
        *lo = set_lo, *hi = set_hi;
        return 0;
    }
    data_range(p, want_y, lo, hi);
    widen_degenerate(lo, hi);
    if (want_y) {
        double m = 0.06 * (*hi - *lo);
        *lo -= m, *hi += m;
    }
    return 1;
}

double plot_nice_step(double lo, double hi, int target) {
    double span = hi - lo;
    if (!(span > 0) || !isfinite(span)) return 1;
    if (target < 1) target = 1;
    double raw = span / target;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    double nice = m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10;
    return nice * p;
}

int plot_is_svg(const char *path) {
    size_t n = strlen(path);
    return n > 4 && (!strcmp(path + n - 4, ".svg") || !strcmp(path + n - 4, ".SVG"));
}

/* ---- the landscape figure ---- */

void landscape_fig_free(landscape_fig *b) {
    free(b->xs);
    free(b->ser);
    free(b->mx);
    free(b->my);
    free(b->vl);
}

int landscape_fig_build(const double *barriers_sorted, long n, const long *marked_idx,
                        const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                        const char *title, int width, int height, int log_rank, landscape_fig *b,
                        ms_err *err) {
    memset(b, 0, sizeof *b);
    if (n < 1) return ms_fail(err, "landscape plot: no orders");
    if (n > 100000000L) return ms_fail(err, "landscape plot: %ld orders is too many", n);
    for (int k = 0; k < nmarked; k++)
        if (marked_idx[k] < 0 || marked_idx[k] >= n)
            return ms_fail(err, "landscape plot: marked order %d has index %ld, outside 0..%ld",
                           k, marked_idx[k], n - 1);
    // x = rank (1-based), y = barrier
    b->xs = ms_malloc((size_t)n * sizeof(double));
    for (long i = 0; i < n; i++) b->xs[i] = (double)(i + 1);
    int ns = 1 + nmarked;
    b->ser = ms_calloc((size_t)ns, sizeof(plot_series));
    b->mx = ms_calloc((size_t)(nmarked + 1), sizeof(double));
    b->my = ms_calloc((size_t)(nmarked + 1), sizeof(double));
    b->vl = ms_calloc((size_t)(nmarked + 1), sizeof(plot_vline));
    snprintf(b->allbuf, sizeof b->allbuf, "all %ld orders", n);
    b->ser[0] = (plot_series){.label = b->allbuf, .x = b->xs, .y = barriers_sorted, .n = (int)n,
                              .rgb = PLOT_RGB_OTHER, .markers = n <= 150};
    for (int k = 0; k < nmarked; k++) {
        b->mx[k] = (double)(marked_idx[k] + 1);
        b->my[k] = barriers_sorted[marked_idx[k]];
        b->ser[1 + k] = (plot_series){.label = marked_labels ? marked_labels[k] : NULL,
                                      .x = &b->mx[k], .y = &b->my[k], .n = 1,
                                      .rgb = marked_rgb ? marked_rgb[k] : PLOT_RGB_ALIGNED,
                                      .markers = 1, .no_line = 1, .marker_size = 6};
        // marks on the same order (or a few pixels apart): the earlier ones (drawn
        // below) get bigger, so each shows as a ring around the next
        long near = n / 200;
        for (int j = k + 1; j < nmarked; j++)
            if (labs(marked_idx[j] - marked_idx[k]) <= near) b->ser[1 + k].marker_size += 3;
        b->vl[k] = (plot_vline){b->mx[k], b->ser[1 + k].rgb};
    }
    plot_spec_init(&b->p, NULL);
    b->p.title = title;
    b->p.xlabel = "order rank (1 = lowest barrier)";
    b->p.ylabel = "loss barrier";
    b->p.width = width > 0 ? width : PLOT_W;
    b->p.height = height > 0 ? height : PLOT_H;
    b->p.series = b->ser;
    b->p.nseries = ns;
    b->p.line_width = n > 150 ? 2.0 : 1.5;
    // a little room on both sides so the end markers are not cut by the frame
    double xm = n > 1 ? 0.02 * (double)(n - 1) : 0.5;
    b->p.xmin = 1 - xm, b->p.xmax = (double)n + xm;
    if (log_rank && n > 1) { /* the top ranks get as much room as the rest */
        b->p.xlog = 1;
        b->p.xmin = 0.85, b->p.xmax = (double)n * 1.15;
        b->p.xlabel = "order rank (1 = lowest barrier), log scale";
    }
    b->ex = (plot_extra){.vlines = b->vl, .nvlines = nmarked, .min_xstep = 1, .marker_r = 3.0,
                         .outline_markers = 1};
    return 0;
}
