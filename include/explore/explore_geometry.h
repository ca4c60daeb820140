/* explore_geometry.h - the explorer's routing-geometry view, computed off the
 * UI thread (no curses): the report of `moescope geometry` (analysis/geometry.h,
 * without the transport test) on checkpoint A, as lines of text.
 *
 * A network's MoE blocks on its evaluation set, or any checkpoint's MoE layers
 * on a capture of every layer's inputs (the explorer's --eval holding inputs.L
 * tensors). The computation runs on its own thread; poll for its lines; stop
 * cancels it (between layers, or inside the network's evaluation) and joins. */
#ifndef MS_EXPLORE_GEOMETRY_H
#define MS_EXPLORE_GEOMETRY_H

#include "io/family.h"
#include "network/net_eval.h"

enum { EXPLORE_GEO_COMPUTING = 1, EXPLORE_GEO_READY = 2, EXPLORE_GEO_FAILED = 3 };

typedef struct explore_geometry explore_geometry;

/* m and E are borrowed and must outlive it. */
explore_geometry *explore_geometry_network(const net_model *m, const net_evalset *E);
/* the paths and overrides are copied */
explore_geometry *explore_geometry_capture(const char *ckpt_path, const char *capture, const family_overrides *o);
/* EXPLORE_GEO_*; when READY, *lines (n of them, the caller frees each and the
 * array) the report; when FAILED, one line saying why. */
int explore_geometry_poll(explore_geometry *g, char ***lines, int *n);
void explore_geometry_stop(explore_geometry *g);

#endif
