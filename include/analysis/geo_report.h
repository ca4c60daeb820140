/* geo_report.h - the routing geometry (geometry.h) as a text report, JSON
 * and CSV. */
#ifndef MS_GEO_REPORT_H
#define MS_GEO_REPORT_H

#include <cJSON.h>
#include <stdio.h>

#include "analysis/geometry.h"

/* The JSON document (format "moescope.geometry/1"): tokens and split, per
 * layer (rank, singular values, logit check, variance shares, recalls),
 * angles (mean in degrees, mean cos^2, every pair's list), the gauge (GPA),
 * the transitions per method (pooled and per step, A), eta_share; run (may be
 * NULL) is added under "run" (the caller's: checkpoint, evaluation set, ...)
 * and taken over. No provenance (geometry_write_json adds it). */
cJSON *geometry_json(const geometry *G, cJSON *run);
/* geometry_json with the provenance, to path atomically. */
int geometry_write_json(const geometry *G, cJSON *run, const char *path, ms_err *err);

#endif
