/* heatmap.c - a matrix as a heat map, PNG or SVG (heatmap.h). Both formats
 * share one layout (hm_layout), so they draw the same figure. */
#include "plot/heatmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "plot/bitmap_font.h"
#include "plot/plot_png.h"
#include "plot_int.h"

/* viridis at nine evenly spaced points (matplotlib's) */
static const uint32_t VIRIDIS[9] = {0x440154, 0x472D7B, 0x3B528B, 0x2C728E, 0x21918C,
                                    0x28AE80, 0x5EC962, 0xADDC30, 0xFDE725};

uint32_t plot_viridis(double v, double lo, double hi) {
    double t = hi > lo ? (v - lo) / (hi - lo) : 0.0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double x = t * 8;
    int i = x >= 8 ? 7 : (int)x;
    double f = x - i;
    uint32_t a = VIRIDIS[i], b = VIRIDIS[i + 1], out = 0;
    for (int sh = 16; sh >= 0; sh -= 8) {
        double ca = (a >> sh) & 255, cb = (b >> sh) & 255;
        out |= (uint32_t)lround(ca + (cb - ca) * f) << sh;
    }
    return out;
}

/* dark text on light cells, white on dark ones */
static uint32_t text_on(uint32_t bg) {
    double lum = 0.299 * ((bg >> 16) & 255) + 0.587 * ((bg >> 8) & 255) + 0.114 * (bg & 255);
    return lum > 140 ? 0x111111u : 0xFFFFFFu;
}

/* Where everything goes, in pixels: the grid's box and cell size, the colour bar, the text. */
typedef struct {
    int W, H, s;
    int gx, gy, cw, ch;   /* the grid's top-left, one cell's width and height */
    int bx, by, bw, bh;   /* the colour bar */
    int lh, cw_char;      /* a text line's height and a character's advance */
} hm_layout;

static void hm_layout_compute(const plot_heatmap *h, int lh, int cw_char, hm_layout *L) {
    int W = h->size && h->size->w ? h->size->w : PLOT_W, Hh = h->size && h->size->h ? h->size->h : PLOT_H;
    int s = plot_scale(h->size ? h->size->scale : 0, W, Hh);
    L->W = W, L->H = Hh, L->s = s, L->lh = lh * s, L->cw_char = cw_char * s;
    int rl = 0;
    for (int i = 0; h->row_labels && i < h->rows; i++) {
        int n = (int)strlen(h->row_labels[i]);
        rl = n > rl ? n : rl;
    }
    int left = 12 * s + rl * L->cw_char + (h->ylabel ? L->lh + 8 * s : 0);
    int top = (h->title ? L->lh * 2 : L->lh) + 6 * s;
    int bottom = (h->col_labels ? L->lh + 8 * s : 0) + (h->xlabel ? L->lh + 8 * s : 0) + 10 * s;
    int right = 14 * s + 18 * s + 8 * L->cw_char + (h->scale_label ? L->lh + 6 * s : 0);
    int gw = W - left - right, gh = Hh - top - bottom;
    L->cw = gw / (h->cols > 0 ? h->cols : 1), L->ch = gh / (h->rows > 0 ? h->rows : 1);
    L->cw = L->cw < 1 ? 1 : L->cw, L->ch = L->ch < 1 ? 1 : L->ch;
    L->gx = left + (gw - L->cw * h->cols) / 2, L->gy = top;
    L->bx = L->gx + L->cw * h->cols + 14 * s, L->by = top, L->bw = 18 * s, L->bh = L->ch * h->rows;
}

/* the text of cell (i, j), "" when it is not printed */
static void cell_text(const plot_heatmap *h, const hm_layout *L, int i, int j, char *buf, size_t cap) {
    buf[0] = 0;
    double v = h->v[(size_t)i * h->cols + j];
    if (!h->cell_fmt || !isfinite(v)) return;
    snprintf(buf, cap, h->cell_fmt, v);
    if ((int)strlen(buf) * L->cw_char + 4 * L->s > L->cw || L->lh + 2 * L->s > L->ch) buf[0] = 0;
}

/* cell (i, j): its colour and its box's top-left */
static uint32_t cell_at(const plot_heatmap *h, const hm_layout *L, int i, int j, int *x, int *y) {
    double v = h->v[(size_t)i * h->cols + j];
    *x = L->gx + j * L->cw, *y = L->gy + i * L->ch;
    return isfinite(v) ? plot_viridis(v, h->vmin, h->vmax) : 0xF0F0F0u;
}

/* ---- PNG ---- */

typedef struct {
    uint8_t *px;
    int W, H;
    uint32_t rgb;
} hm_canvas;

static void put_px(void *ctx, int x, int y) {
    hm_canvas *c = ctx;
    if (x < 0 || y < 0 || x >= c->W || y >= c->H) return;
    uint8_t *p = c->px + ((size_t)y * c->W + x) * 3;
    p[0] = (uint8_t)(c->rgb >> 16), p[1] = (uint8_t)(c->rgb >> 8), p[2] = (uint8_t)c->rgb;
}

static void fill(hm_canvas *c, int x0, int y0, int w, int h, uint32_t rgb) {
    c->rgb = rgb;
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) put_px(c, x, y);
}

static void text(hm_canvas *c, const bm_font *f, const char *s, int x, int y, int scale, uint32_t rgb, int up) {
    c->rgb = rgb;
    bm_draw_text(f, s, x, y, scale, up, put_px, c);
}

static void png_labels(const plot_heatmap *h, const hm_layout *L, hm_canvas *c, const bm_font *f, const bm_font *ft) {
    int s = L->s;
    if (h->title) text(c, ft, h->title, (L->W - bm_text_width(ft, h->title, s)) / 2, 6 * s, s, 0x222222u, 0);
    for (int i = 0; h->row_labels && i < h->rows; i++)
        text(c, f, h->row_labels[i], L->gx - 8 * s - bm_text_width(f, h->row_labels[i], s),
             L->gy + i * L->ch + (L->ch - L->lh) / 2, s, 0x222222u, 0);
    int yb = L->gy + L->ch * h->rows + 6 * s;
    for (int j = 0; h->col_labels && j < h->cols; j++)
        text(c, f, h->col_labels[j], L->gx + j * L->cw + (L->cw - bm_text_width(f, h->col_labels[j], s)) / 2, yb, s,
             0x222222u, 0);
    if (h->xlabel)
        text(c, f, h->xlabel, L->gx + (L->cw * h->cols - bm_text_width(f, h->xlabel, s)) / 2,
             yb + (h->col_labels ? L->lh + 8 * s : 0), s, 0x222222u, 0);
    if (h->ylabel)
        text(c, f, h->ylabel, 6 * s, L->gy + (L->ch * h->rows + bm_text_width(f, h->ylabel, s)) / 2, s, 0x222222u, 1);
    char buf[32];
    for (int k = 0; k <= 2; k++) { // the colour bar's ends and middle
        double v = h->vmin + (h->vmax - h->vmin) * k / 2.0;
        snprintf(buf, sizeof buf, "%.3g", v);
        text(c, f, buf, L->bx + L->bw + 6 * s, L->by + L->bh - (L->bh * k) / 2 - L->lh / 2, s, 0x222222u, 0);
    }
    if (h->scale_label)
        text(c, f, h->scale_label, L->bx + L->bw + 8 * L->cw_char + 6 * s,
             L->by + (L->bh + bm_text_width(f, h->scale_label, s)) / 2, s, 0x222222u, 1);
}

static int heatmap_png(const plot_heatmap *h, const char *path, ms_err *err) {
    bm_font *f = ms_malloc(sizeof(bm_font)), *ft = ms_malloc(sizeof(bm_font));
    int rc = bm_font_open(f, "9x15.bdf", err);
    if (!rc) rc = bm_font_open(ft, "9x18B.bdf", err);
    if (rc) {
        free(f), free(ft);
        return ms_prefix(err, "%s", path);
    }
    hm_layout L;
    hm_layout_compute(h, bm_line_height(f, 1), bm_text_width(f, "0", 1), &L);
    hm_canvas c = {.px = ms_malloc((size_t)L.W * L.H * 3), .W = L.W, .H = L.H};
    memset(c.px, 0xFF, (size_t)L.W * L.H * 3);
    char buf[64];
    for (int i = 0; i < h->rows; i++)
        for (int j = 0; j < h->cols; j++) {
            int x, y;
            uint32_t bg = cell_at(h, &L, i, j, &x, &y);
            fill(&c, x, y, L.cw - (L.cw > 3), L.ch - (L.ch > 3), bg); // a one-pixel white seam
            cell_text(h, &L, i, j, buf, sizeof buf);
            if (buf[0])
                text(&c, f, buf, x + (L.cw - bm_text_width(f, buf, L.s)) / 2, y + (L.ch - L.lh) / 2, L.s, text_on(bg), 0);
        }
    for (int y = 0; y < L.bh; y++)
        fill(&c, L.bx, L.by + y, L.bw, 1, plot_viridis(L.bh - 1 - y, 0, L.bh > 1 ? L.bh - 1 : 1));
    png_labels(h, &L, &c, f, ft);
    rc = plot_write_png_meta(c.px, L.W, L.H, h->title, h->scale_label, path, err);
    free(c.px);
    free(f);
    free(ft);
    return rc;
}

/* ---- SVG ---- */

static void svg_text(FILE *fp, double x, double y, double fs, const char *anchor, const char *s, uint32_t rgb,
                     int up) {
    fprintf(fp, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\" text-anchor=\"%s\" dominant-baseline=\"middle\" "
                "fill=\"#%06X\"",
            x, y, fs, anchor, rgb);
    if (up) fprintf(fp, " transform=\"rotate(-90 %.1f %.1f)\"", x, y);
    fputs(">", fp);
    plot_xml_put(fp, s);
    fputs("</text>\n", fp);
}

static int heatmap_svg(const plot_heatmap *h, const char *path, ms_err *err) {
    hm_layout L;
    hm_layout_compute(h, 15, 9, &L); // the PNG's 9x15 font's metrics
    atomic_file af;
    if (af_open(&af, path, err)) return -1;
    FILE *fp = af.fp;
    double fs = 13.0 * L.s;
    plot_svg_head(fp, L.W, L.H);
    fprintf(fp, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n<g font-family=\"DejaVu Sans, Helvetica, Arial, "
                "sans-serif\">\n",
            L.W, L.H);
    if (h->title) svg_text(fp, L.W / 2.0, L.lh, fs * 1.2, "middle", h->title, 0x222222u, 0);
    char buf[64];
    for (int i = 0; i < h->rows; i++)
        for (int j = 0; j < h->cols; j++) {
            int x, y;
            uint32_t bg = cell_at(h, &L, i, j, &x, &y);
            fprintf(fp, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06X\" "
                        "data-value=\"%.9g\"/>\n",
                    x, y, L.cw - (L.cw > 3), L.ch - (L.ch > 3), bg, h->v[(size_t)i * h->cols + j]);
            cell_text(h, &L, i, j, buf, sizeof buf);
            if (buf[0]) svg_text(fp, x + L.cw / 2.0, y + L.ch / 2.0, fs, "middle", buf, text_on(bg), 0);
        }
    for (int i = 0; h->row_labels && i < h->rows; i++)
        svg_text(fp, L.gx - 8.0 * L.s, L.gy + (i + 0.5) * L.ch, fs, "end", h->row_labels[i], 0x222222u, 0);
    double yb = L.gy + L.ch * h->rows + 6.0 * L.s + L.lh / 2.0;
    for (int j = 0; h->col_labels && j < h->cols; j++)
        svg_text(fp, L.gx + (j + 0.5) * L.cw, yb, fs, "middle", h->col_labels[j], 0x222222u, 0);
    if (h->xlabel)
        svg_text(fp, L.gx + L.cw * h->cols / 2.0, yb + (h->col_labels ? L.lh + 8.0 * L.s : 0), fs, "middle",
                 h->xlabel, 0x222222u, 0);
    if (h->ylabel) svg_text(fp, 6.0 * L.s + L.lh / 2.0, L.gy + L.ch * h->rows / 2.0, fs, "middle", h->ylabel, 0x222222u, 1);
    for (int k = 0; k < 64; k++) // the colour bar in 64 bands, the largest on top
        fprintf(fp, "<rect x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"#%06X\"/>\n", L.bx,
                L.by + L.bh * k / 64.0, L.bw, L.bh / 64.0 + 0.5, plot_viridis(63 - k, 0, 63));
    for (int k = 0; k <= 2; k++) {
        snprintf(buf, sizeof buf, "%.3g", h->vmin + (h->vmax - h->vmin) * k / 2.0);
        svg_text(fp, L.bx + L.bw + 6.0 * L.s, L.by + L.bh - L.bh * k / 2.0, fs, "start", buf, 0x222222u, 0);
    }
    if (h->scale_label)
        svg_text(fp, L.bx + L.bw + 8.0 * L.cw_char + 6.0 * L.s + L.lh / 2.0, L.by + L.bh / 2.0, fs, "middle",
                 h->scale_label, 0x222222u, 1);
    fputs("</g>\n</svg>\n", fp);
    return af_commit(&af, err);
}

int plot_heatmap_write(const plot_heatmap *h, const char *path, ms_err *err) {
    if (h->rows < 1 || h->cols < 1) return ms_fail(err, "%s: an empty heat map", path);
    return plot_is_svg(path) ? heatmap_svg(h, path, err) : heatmap_png(h, path, err);
}
