/* geo_report.h - the routing geometry (geometry.h) as a text report, JSON
 * and CSV. */
#ifndef MS_GEO_REPORT_H
#define MS_GEO_REPORT_H

#include <cJSON.h>
#include <stdio.h>

#include "analysis/geo_network.h"
#include "analysis/geometry.h"

/* The text report: the routers, the angles, the gauge, the transitions and
 * their baselines, the recalls, and (T not NULL) the transport test; lines
 * marked [warn] are what a reader should not miss (a rank below n - 1, GPA
 * not settled, scores for which the translation is no symmetry). */
void geometry_print(FILE *fp, const geometry *G, const geo_transport *T);

/* The transport test under "transport" of a JSON document. */
void geo_transport_json(cJSON *root, const geometry *G, const geo_transport *T);

/* One row per step l -> l + 1: each method's shared and specific R^2, the
 * identity's (canonical), layer l + 1's recalls, and the transport's dNLL (T:
 * may be NULL, then empty); "# " provenance lines first. Atomic. */
int geometry_write_csv(const geometry *G, const geo_transport *T, const char *path, ms_err *err);

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
