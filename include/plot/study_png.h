/* study_png.h - the study as one figure (study_png.c). */
#ifndef MS_STUDY_PNG_H
#define MS_STUDY_PNG_H

#include "analysis/study.h"
#include "plot/plot.h"

/* Bars of each pair's barriers above a strip of each method's rank percentile
 * (PNG, or SVG for a path ending in .svg) at size (may be NULL), written
 * atomically. */
int study_write_png(const study *S, const plot_size *size, const char *path, ms_err *err);

#endif
