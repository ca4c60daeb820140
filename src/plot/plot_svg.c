/* plot_svg.c - the line plots of plot.h as SVG: vector output for papers
 * and slides, written by moescope itself (no converter). The same series,
 * colours, dashes, markers, title, axis labels and legend as the PNG; the
 * ranges, 1/2/5 x 10^k ticks and line widths are plot.c's, as the PNG's. Each
 * series is a <g class="series"> whose data-label is its legend text, so a
 * script can find every curve. Written atomically (atomic_file.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/provenance.h"
#include "plot_int.h"

/* s with the five XML specials escaped; what XML cannot hold - a control
 * character (ESC from a file name), bytes that are not UTF-8 - as U+FFFD */
void plot_xml_put(FILE *fp, const char *s) {
    for (; s && *s; s++) {
        int k = utf8_seq_len((const unsigned char *)s);
        if (!k || ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') || *s == 0x7f) {
            fputs("&#xFFFD;", fp);
            continue;
        }
        if (k > 1) {
            fwrite(s, 1, (size_t)k, fp);
            s += k - 1;
            continue;
        }
        switch (*s) {
        case '&': fputs("&amp;", fp); break;
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '"': fputs("&quot;", fp); break;
        case '\'': fputs("&apos;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

typedef struct {
    double x0, y0, x1, y1, xlo, xhi, ylo, yhi;
    int xlog; /* x on a log10 scale */
} svg_frame;

static double sx(const svg_frame *f, double x) {
    if (f->xlog) return f->x0 + log10(x / f->xlo) / log10(f->xhi / f->xlo) * (f->x1 - f->x0);
    return f->x0 + (x - f->xlo) / (f->xhi - f->xlo) * (f->x1 - f->x0);
}
static double sy(const svg_frame *f, double y) { return f->y1 - (y - f->ylo) / (f->yhi - f->ylo) * (f->y1 - f->y0); }

/* A light grid line across the plot area at a tick (the zero line darker), as the PNG. */
static void svg_grid(FILE *fp, const svg_frame *f, int vertical, double at, int zero) {
    const char *col = zero ? "#B0B0B0" : "#E6E6E6";
    if (vertical)
        fprintf(fp, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"/>\n", f->x0, at, f->x1,
                at, col);
    else
        fprintf(fp, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"/>\n", at, f->y0, at,
                f->y1, col);
}

/* the widest of n labels at font size fs, as svg_title_width estimates it */
static double svg_cat_width(const char *const *cat, int n, double fs) {
    size_t w = 0;
    for (int k = 0; k < n; k++) w = strlen(cat[k]) > w ? strlen(cat[k]) : w;
    return 0.56 * fs * (double)w;
}

/* A categorical axis: category k at k + 1, labelled (every few when they would collide). */
static void svg_cat_ticks(FILE *fp, const svg_frame *f, int vertical, double fs, const char *const *cat, int ncat) {
    double span = vertical ? f->yhi - f->ylo : f->xhi - f->xlo, len = vertical ? f->y1 - f->y0 : f->x1 - f->x0;
    int k = plot_cat_stride(ncat, len * ncat / (span > 0 ? span : 1), vertical ? fs * 1.2 : svg_cat_width(cat, ncat, fs),
                            8);
    for (int c = 0; c < ncat; c += k) {
        if (vertical) {
            double y = sy(f, c + 1);
            svg_grid(fp, f, 1, y, 0);
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>\n", f->x0 - 5, y, f->x0, y);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">",
                    f->x0 - 8, y, fs);
        } else {
            double x = sx(f, c + 1);
            svg_grid(fp, f, 0, x, 0);
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>\n", x, f->y1, x, f->y1 + 5);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\">", x, f->y1 + 8 + fs, fs);
        }
        plot_xml_put(fp, cat[c]);
        fputs("</text>\n", fp);
    }
}

/* Ticks, their grid lines and labels along one axis (y when vertical). */
static void svg_ticks(FILE *fp, const svg_frame *f, int vertical, double fs) {
    double lo = vertical ? f->ylo : f->xlo, hi = vertical ? f->yhi : f->xhi;
    double len = vertical ? f->y1 - f->y0 : f->x1 - f->x0;
    double step = plot_nice_step(lo, hi, (int)(len / (vertical ? 70 : 110)) > 3 ? (int)(len / (vertical ? 70 : 110)) : 3);
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 6) dec = 6;
    if (!vertical && f->xlog) { /* the powers of ten */
        for (double t = pow(10, ceil(log10(lo) - 1e-9)); t <= hi * (1 + 1e-9); t *= 10) {
            double x = sx(f, t);
            svg_grid(fp, f, 0, x, 0);
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>\n", x, f->y1, x, f->y1 + 5);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\">%.6g</text>\n", x,
                    f->y1 + 8 + fs, fs, t);
        }
        return;
    }
    for (double t = ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) {
        double v = fabs(t) < step * 1e-6 ? 0 : t;
        if (vertical) {
            double y = sy(f, v);
            svg_grid(fp, f, 1, y, v == 0);
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>\n", f->x0 - 5, y, f->x0, y);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">%.*f</text>\n",
                    f->x0 - 8, y, fs, dec, v);
        } else {
            double x = sx(f, v);
            svg_grid(fp, f, 0, x, 0);
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>\n", x, f->y1, x, f->y1 + 5);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", x,
                    f->y1 + 8 + fs, fs, dec, v);
        }
    }
}

/* One series: polylines split at NaN gaps, then its markers. */
static void svg_series(FILE *fp, const svg_frame *f, const plot_series *se, double lw) {
    fputs("<g class=\"series\" data-label=\"", fp);
    plot_xml_put(fp, se->label ? se->label : "");
    fprintf(fp, "\" data-points=\"%d\">\n", se->n);
    if (!se->no_line) {
        int open = 0;
        for (int i = 0; i < se->n; i++) {
            int ok = isfinite(se->x[i]) && isfinite(se->y[i]);
            if (ok && !open) {
                fprintf(fp, "<polyline fill=\"none\" stroke=\"#%06X\" stroke-width=\"%.2f\" stroke-linejoin=\"round\"%s points=\"",
                        se->rgb, lw, se->dashed ? " stroke-dasharray=\"8 6\"" : "");
                open = 1;
            }
            if (ok) fprintf(fp, "%.2f,%.2f ", sx(f, se->x[i]), sy(f, se->y[i]));
            if (open && (!ok || i == se->n - 1)) {
                fputs("\"/>\n", fp);
                open = 0;
            }
        }
    }
    if (se->markers || se->no_line) {
        double r = se->marker_size > 0 ? se->marker_size : PLOT_MARKER_R;
        if (se->no_line && se->n > 2000) r = 1.5;
        for (int i = 0; i < se->n; i++)
            if (isfinite(se->x[i]) && isfinite(se->y[i]))
                fprintf(fp, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"#%06X\"/>\n", sx(f, se->x[i]),
                        sy(f, se->y[i]), r, se->rgb);
    }
    fputs("</g>\n", fp);
}

/* The legend in the top-right corner of the plot area. */
static void svg_legend(FILE *fp, const plot_spec *p, const svg_frame *f, double fs, double lw) {
    int n = 0;
    size_t longest = 0;
    for (int s = 0; s < p->nseries; s++)
        if (p->series[s].label && p->series[s].label[0]) {
            n++;
            if (strlen(p->series[s].label) > longest) longest = strlen(p->series[s].label);
        }
    if (!n) return;
    double lh = fs * 1.5, bw = 40 + 0.6 * fs * (double)longest, bh = lh * n + 8;
    double bx = f->x1 - bw - 8, by = f->y0 + 8;
    fprintf(fp, "<g class=\"legend\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#fff\" "
                "fill-opacity=\"0.9\" stroke=\"#999\"/>\n", bx, by, bw, bh);
    int k = 0;
    for (int s = 0; s < p->nseries; s++) {
        const plot_series *se = &p->series[s];
        if (!se->label || !se->label[0]) continue;
        double y = by + 4 + lh * (k++ + 0.5);
        if (se->no_line)
            fprintf(fp, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"#%06X\"/>\n", bx + 18, y, se->rgb);
        else
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#%06X\" stroke-width=\"%.2f\"%s/>\n",
                    bx + 6, y, bx + 30, y, se->rgb, lw, se->dashed ? " stroke-dasharray=\"8 6\"" : "");
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" dominant-baseline=\"middle\">", bx + 36, y, fs);
        plot_xml_put(fp, se->label);
        fputs("</text>\n", fp);
    }
    fputs("</g>\n", fp);
}

/* a title line's width at font size *(double *)ctx: sans-serif averages
 * about 0.56 em a character (the viewer's font decides the exact width) */
static int svg_title_width(const void *ctx, const char *s) {
    return (int)ceil(0.56 * *(const double *)ctx * (double)strlen(s));
}

static void svg_body(FILE *fp, const plot_spec *p, const plot_vline *g, int ng, int W, int H, int id) {
    double s = plot_scale(p->scale, W, H), fs = 13 * s, lw = plot_line_px(p, s), tfs = fs * 1.2;
    char tl[PLOT_TITLE_LINES][PLOT_TITLE_CAP];
    int ntl = plot_title_lines(p->title, (int)(W - 16 * s), svg_title_width, &tfs, tl);
    double ylabw = p->nycat ? fmax(60 * s, 20 * s + svg_cat_width(p->ycat, p->nycat, fs)) : 60 * s;
    svg_frame f = {.x0 = ylabw + (p->ylabel ? fs * 1.5 : 0), .y0 = ntl ? 40 * s + (ntl - 1) * tfs * 1.25 : 16 * s,
                   .x1 = W - 24 * s, .y1 = H - 36 * s - (p->xlabel ? fs * 1.5 : 0)};
    plot_axis_range(p, 0, &f.xlo, &f.xhi);
    plot_axis_range(p, 1, &f.ylo, &f.yhi);
    f.xlog = p->xlog && f.xlo > 0;
    fprintf(fp, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    fprintf(fp, "<g font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" stroke-width=\"%.2f\">\n", s);
    if (ntl) { /* inside the font's group, one tspan a line */
        fprintf(fp, "<text class=\"title\" x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\">", W / 2.0,
                24 * s, tfs);
        for (int i = 0; i < ntl; i++) {
            fprintf(fp, "<tspan x=\"%.2f\" dy=\"%.2f\">", W / 2.0, i ? tfs * 1.25 : 0.0);
            plot_xml_put(fp, tl[i]);
            fputs("</tspan>", fp);
        }
        fputs("</text>\n", fp);
    }
    fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#000\"/>\n", f.x0,
            f.y0, f.x1 - f.x0, f.y1 - f.y0);
    if (p->nycat) svg_cat_ticks(fp, &f, 1, fs, p->ycat, p->nycat);
    else svg_ticks(fp, &f, 1, fs);
    if (p->nxcat) svg_cat_ticks(fp, &f, 0, fs, p->xcat, p->nxcat);
    else svg_ticks(fp, &f, 0, fs);
    if (p->xlabel) {
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\">", (f.x0 + f.x1) / 2,
                H - 10 * s, fs);
        plot_xml_put(fp, p->xlabel);
        fputs("</text>\n", fp);
    }
    if (p->ylabel) {
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.2f %.2f)\">",
                fs, (f.y0 + f.y1) / 2, fs, fs, (f.y0 + f.y1) / 2);
        plot_xml_put(fp, p->ylabel);
        fputs("</text>\n", fp);
    }
    fputs("</g>\n", fp);
    fprintf(fp, "<clipPath id=\"plot%d\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/></clipPath>\n", id, f.x0,
            f.y0, f.x1 - f.x0, f.y1 - f.y0);
    fprintf(fp, "<g clip-path=\"url(#plot%d)\">\n", id);
    for (int i = 0; i < ng; i++) // the marked orders' guide lines, dashed, under the data
        fprintf(fp, "<line class=\"guide\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#%06X\" "
                    "stroke-opacity=\"0.8\" stroke-width=\"%.2f\" stroke-dasharray=\"%.1f %.1f\"/>\n",
                sx(&f, g[i].x), f.y0, sx(&f, g[i].x), f.y1, g[i].rgb, 0.6 * s, 5 * s, 5 * s);
    for (int i = 0; i < p->nseries; i++) svg_series(fp, &f, &p->series[i], lw);
    fputs("</g>\n<g font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n", fp);
    svg_legend(fp, p, &f, fs, lw);
    fputs("</g>\n", fp);
}

void plot_svg_head(FILE *fp, int W, int H) {
    fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            W, H, W, H);
    /* how the figure was made (provenance.h), as in the PNG's text chunks */
    const char **pk, **pv;
    int npv;
    prov_pairs(&pk, &pv, &npv);
    fputs("<metadata>\n", fp);
    for (int i = 0; i < npv; i++) {
        fputs("<moescope:item xmlns:moescope=\"https://github.com/moescope\" key=\"", fp);
        plot_xml_put(fp, pk[i]);
        fputs("\">", fp);
        plot_xml_put(fp, pv[i]);
        fputs("</moescope:item>\n", fp);
    }
    fputs("</metadata>\n", fp);
}

/* panels stacked, the first with guide lines */
int plot_svg_file(const plot_spec *const *panels, int np, const plot_vline *g, int ng, const char *path,
                  ms_err *err) {
    int W = 0, H = 0;
    for (int k = 0; k < np; k++) {
        int h;
        if (plot_check(panels[k], err)) return ms_prefix(err, "%s", path);
        plot_dims(panels[k], &W, &h);
        H += h;
    }
    atomic_file af;
    if (af_open(&af, path, err)) return -1;
    FILE *fp = af.fp;
    plot_svg_head(fp, W, H);
    // panels top to bottom, each in its own coordinates (clip ids differ)
    for (int k = 0, y = 0; k < np; k++) {
        int w, h;
        plot_dims(panels[k], &w, &h);
        fprintf(fp, "<g class=\"panel\" transform=\"translate(0,%d)\">\n", y);
        svg_body(fp, panels[k], k ? NULL : g, k ? 0 : ng, w, h, k);
        fputs("</g>\n", fp);
        y += h;
    }
    fputs("</svg>\n", fp);
    return af_commit(&af, err);
}
