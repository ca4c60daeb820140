/* geometry_fig.h - the routing geometry's figures (geometry_fig.c), PNG or
 * SVG by the file name, at size (NULL: the default). */
#ifndef MS_GEOMETRY_FIG_H
#define MS_GEOMETRY_FIG_H

#include "analysis/geometry.h"
#include "plot/plot.h"

/* The layers x layers heat map of the mean principal angle between their
 * control subspaces (degrees, 0 to 90). */
int geometry_write_angles(const geometry *G, const plot_size *size, const char *path, ms_err *err);
/* Held-out R^2 of each step l -> l+1: the shared transition in the canonical
 * gauge, the layer-specific one, the shared one in the raw, random, PCA and
 * CCA coordinates, and the identity. */
int geometry_write_r2(const geometry *G, const plot_size *size, const char *path, ms_err *err);

#endif
