/* figures.h - what every figure says, from one place, so that curve --png,
 * landscape --png/--curves-png and the explorer's p agree: the legend entry of
 * a curve, a title naming both checkpoints, an accuracy axis that stops at 1,
 * and the landscape figure with its marks (best, the methods' orders, the
 * identity, the tie plateau). Numbers in legends have 3 significant figures. */
#ifndef MS_FIGURES_H
#define MS_FIGURES_H

#include "landscape/landscape.h"
#include "plot/plot.h"

/* "naive [0 1 2 3] (barrier 0.143)"; acc: "(acc. barrier 0.0123)". order may be
 * NULL (no order printed). */
void fig_curve_label(char *buf, int cap, const char *name, const int *order, int n, double barrier, int acc);
/* A checkpoint as a figure names it: "x/dense4/seed1.safetensors" -> "dense4/seed1". */
void fig_ckpt_name(const char *path, char *buf, int cap);
/* "loss from dense4/seed1 (t = 0) to dense4/seed2 aligned (t = 1)", then
 * ": how" when how is not NULL. metric: "loss", "accuracy", ... */
void fig_pair_title(char *buf, int cap, const char *metric, const char *a_path, const char *b_path, const char *how);
/* Accuracy in [0, 1]: a y range from the series' data with a margin, never
 * above 1 nor below 0 (set on p, whose series must be set). */
void fig_accuracy_range(plot_spec *p);

/* The colour of method m's order and curve in every figure. */
uint32_t fig_method_rgb(cost_method m);

/* The landscape figure: rows sorted by barrier ascending. */
typedef struct {
    const ls_row *rows;
    const uint8_t *orders;  /* (norders, n): row k's order is orders + rows[k].id * n */
    long nrows;
    int n;                 /* experts */
    int exhaustive;
    const int *chosen[COST_NMETHODS]; /* by cost_method, NULL when unknown */
    int rank[COST_NMETHODS], tied[COST_NMETHODS], rank_auc[COST_NMETHODS];
    double tau;            /* tie tolerance (rank.h) */
    const char *a_path, *b_path; /* for the title; may be NULL */
    int log_rank;          /* the rank on a log axis */
    const plot_size *size; /* NULL: the default */
} fig_landscape;
/* Every order's barrier over its rank; marked: the methods' orders, the
 * identity, the end of the plateau tied with the best, and the best last (on
 * top). PNG, or SVG when path ends in .svg. */
int fig_landscape_write(const fig_landscape *f, const char *path, ms_err *err);

#endif
