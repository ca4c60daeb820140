/* export.h - what the TUI writes to disk (curses-free): the curves as a PNG
 * (and the landscape plot); the name of the aligned B the worker writes
 * (explore_export). */
#ifndef MS_UI_EXPORT_H
#define MS_UI_EXPORT_H

#include "explore_worker.h"

/* The curves of v as a PNG at path; metric_acc plots accuracy. */
int export_curves_png(const explore_snapshot *v, int metric_acc, const char *path, ms_err *err);
/* Every order's barrier over its rank, the chosen orders marked (v must hold
 * the complete landscape). */
int export_landscape_png(const explore_snapshot *v, const char *path, ms_err *err);
/* The name an export of B with q's stages gets, in the current directory:
 * "DIR/seed2.safetensors" -> "DIR-seed2.aligned-expert-wm.safetensors" (the
 * folder names the pair; then the order stage: expert, gate,
 * gate-uncentred or identity; then wm or nowm). explore_export numbers it
 * when the name is taken. */
void export_aligned_name(const char *b_path, const explore_request *q, char *out, int cap);

/* What the curves figure shows, for --png-live to rewrite it exactly when
 * that changes: the toggles, the metric, and each curve's order and numbers. */
typedef struct {
    int have, T;
    int order[LS_MAX_N];
    double barrier, acc_barrier, auc;
} curves_key_curve;
typedef struct {
    int metric_acc, order_stage, wm_stage, method, center;
    curves_key_curve naive, skip, current, selected;
} curves_key;

void curves_key_of(const explore_snapshot *v, int metric_acc, curves_key *k);
int curves_key_equal(const curves_key *a, const curves_key *b);

#endif
