/* scatter_png.h - does the data-free cost predict the barrier? (scatter_png.c) */
#ifndef MS_SCATTER_PNG_H
#define MS_SCATTER_PNG_H

#include "landscape/landscape.h"
#include "plot/plot.h"

/* Every order's assignment cost sum_i C[i][pi(i)] against its barrier, one
 * panel per cost (gate, expert), chosen and best orders marked (PNG, or SVG
 * for a path ending in .svg), at size (may be NULL). */
int landscape_write_scatter_png(const landscape *L, const plot_size *size, const char *path, ms_err *err);

#endif
