/* export.h - what the TUI writes to disk (curses-free): the curves as a PNG
 * (and the landscape plot), and the aligned B as a checkpoint. */
#ifndef MS_UI_EXPORT_H
#define MS_UI_EXPORT_H

#include "explore_worker.h"

/* The curves of v as a PNG at path; metric_acc plots accuracy. */
int export_curves_png(const explore_snapshot *v, int metric_acc, const char *path, ms_err *err);
/* Every order's barrier over its rank, the chosen orders marked (v must hold
 * the complete landscape). */
int export_landscape_png(const explore_snapshot *v, const char *path, ms_err *err);
/* B aligned with the toggles of q, saved at path; never over an input. */
int export_aligned(const moe_model *A, const moe_model *B, const char *const *inputs, int ninputs,
                   const explore_request *q, const char *path, ms_err *err);
/* "DIR/seed2.safetensors" -> "seed2.aligned.safetensors" (in the current directory). */
void export_aligned_name(const char *b_path, char *out, int cap);

#endif
