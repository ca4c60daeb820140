/* figures.c - see figures.h. */
#include "plot/figures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/rank.h"
#include "model/symmetry.h"
#include "plot/plot_write.h"

void fig_curve_label(char *buf, int cap, const char *name, const int *order, int n, double barrier, int acc) {
    // above 16 experts the first 8 and the count: the legend keeps its barrier
    char ob[LS_MAX_N * 4 + 1] = "";
    if (order) {
        size_t len = moe_order_format(ob, sizeof ob, order, n > 16 ? 8 : n);
        if (n > 16) snprintf(ob + len, sizeof ob - len, " ... (%d)", n);
    }
    // the order in brackets: a name ending in a digit ("pin 1") stays apart from it
    snprintf(buf, (size_t)cap, "%s%s%s%s (%s %.3g)", name, order ? " [" : "", ob, order ? "]" : "",
             acc ? "acc. barrier" : "barrier", barrier);
}

void fig_ckpt_name(const char *path, char *buf, int cap) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *d = b > path + 1 ? b - 1 : path;
    while (d > path && d[-1] != '/') d--;
    int with_dir = b > path + 1 && !(b - d == 2 && d[0] == '.');
    int len = (int)strlen(b);
    const char *ext = ".safetensors";
    int el = (int)strlen(ext);
    if (len > el && !strcmp(b + len - el, ext)) len -= el;
    if (with_dir) snprintf(buf, (size_t)cap, "%.*s%.*s", (int)(b - d), d, len, b);
    else snprintf(buf, (size_t)cap, "%.*s", len, b);
}

void fig_pair_title(char *buf, int cap, const char *metric, const char *a_path, const char *b_path, const char *how) {
    char a[256], b[256];
    fig_ckpt_name(a_path, a, sizeof a);
    fig_ckpt_name(b_path, b, sizeof b);
    snprintf(buf, (size_t)cap, "%s from %s (t = 0) to %s aligned (t = 1)%s%s", metric, a, b, how ? ": " : "",
             how ? how : "");
}

void fig_accuracy_range(plot_spec *p) {
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < p->nseries; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double v = p->series[s].y[i];
            if (isfinite(v)) lo = fmin(lo, v), hi = fmax(hi, v);
        }
    if (!isfinite(lo)) return;
    double m = 0.06 * (hi - lo > 0 ? hi - lo : 0.05);
    p->ymin = fmax(0, lo - m);
    p->ymax = fmin(1, hi + m);
    if (!(p->ymax > p->ymin)) p->ymin = p->ymax - 0.05;
}

static long find_row(const fig_landscape *f, const int *order) {
    for (long k = 0; order && k < f->nrows; k++)
        if (ls_order_is(f->orders, f->n, f->rows[k].id, order)) return k;
    return -1;
}

uint32_t fig_method_rgb(cost_method m) {
    static const uint32_t rgb[COST_NMETHODS] = {[COST_GATE] = PLOT_RGB_GATE, [COST_EXPERT] = PLOT_RGB_EXPERT};
    return rgb[m];
}

int fig_landscape_write(const fig_landscape *f, const char *path, ms_err *err) {
    if (f->nrows < 1) return ms_fail(err, "%s: no orders to plot", path);
    double *bars = ms_malloc((size_t)f->nrows * sizeof(double)); // (nrows)
    for (long k = 0; k < f->nrows; k++) bars[k] = f->rows[k].barrier;
    long idx[COST_NMETHODS + 3]; // the methods' orders, identity, plateau, best
    uint32_t rgb[COST_NMETHODS + 3];
    char lbuf[COST_NMETHODS + 3][112];
    const char *labels[COST_NMETHODS + 3];
    int nm = 0;
    for (int m = 0; m < COST_NMETHODS; m++) {
        long k = find_row(f, f->chosen[m]);
        if (k < 0) continue;
        idx[nm] = k;
        if (f->tied[m] > 1)
            snprintf(lbuf[nm], sizeof lbuf[nm], "%s cost (rank %d, tied %d, by AUC %d)", cost_method_name((cost_method)m),
                     f->rank[m], f->tied[m], f->rank_auc[m]);
        else
            snprintf(lbuf[nm], sizeof lbuf[nm], "%s cost (rank %d)", cost_method_name((cost_method)m), f->rank[m]);
        rgb[nm++] = fig_method_rgb((cost_method)m);
    }
    int id[LS_MAX_N];
    for (int i = 0; i < f->n; i++) id[i] = i;
    long ki = find_row(f, id);
    if (ki >= 0) {
        rank_view v = {.count = f->nrows, .barrier = &f->rows[0].barrier, .stride = sizeof(ls_row)};
        idx[nm] = ki;
        snprintf(lbuf[nm], sizeof lbuf[nm], "identity order (rank %ld)", rank_of(&v, bars[ki], f->tau));
        rgb[nm++] = PLOT_RGB_SKIP;
    }
    // the plateau: the last order tied (within tau) with the best
    long plat = 0;
    while (plat + 1 < f->nrows && !(bars[plat + 1] - bars[0] > f->tau)) plat++;
    if (plat > 0) {
        idx[nm] = plat;
        snprintf(lbuf[nm], sizeof lbuf[nm], "tied with the best: ranks 1..%ld (within %.2g)", plat + 1, f->tau);
        rgb[nm++] = PLOT_RGB_OTHER;
    }
    // the best last, so that no other mark hides it (the earlier ones ring it)
    idx[nm] = 0;
    snprintf(lbuf[nm], sizeof lbuf[nm], "best (barrier %.3g)", bars[0]);
    rgb[nm++] = PLOT_RGB_BEST;
    for (int i = 0; i < nm; i++) labels[i] = lbuf[i];
    char title[640], a[256] = "", b[256] = "";
    if (f->a_path && f->b_path) {
        fig_ckpt_name(f->a_path, a, sizeof a);
        fig_ckpt_name(f->b_path, b, sizeof b);
    }
    snprintf(title, sizeof title, "loss barrier of %s %ld expert orders (n = %d), sorted%s%s%s%s",
             f->exhaustive ? "all" : "sampled", f->nrows, f->n, a[0] ? ": " : "", a, a[0] ? " and " : "", b);
    int rc = plot_landscape_write_ex(bars, f->nrows, idx, labels, rgb, nm, title, f->log_rank, f->size, path, err);
    free(bars);
    return rc;
}
