/* export.h - what the TUI writes to disk (curses-free): the curves as a PNG
 * (and the landscape plot); the name of the aligned B the worker writes
 * (explore_export). */
#ifndef MS_UI_EXPORT_H
#define MS_UI_EXPORT_H

#include "explore/explore_worker.h"
#include "pins.h"

/* The curves of v and the pinned ones (pins may be NULL) as a PNG at path
 * (SVG when it ends in .svg); metric_acc plots accuracy. The title names the
 * checkpoints a_path and b_path, and what the loss is: objective, a network's
 * ("network loss, MoE block 2 (...)"), or NULL or "" for a layer's. */
int export_curves_png(const explore_snapshot *v, const pin_set *pins, int metric_acc, const char *objective,
                      const char *a_path, const char *b_path, const char *path, ms_err *err);
/* Every order's barrier over its rank, marked as landscape --png marks it
 * (figures.h; v must hold the complete landscape). */
int export_landscape_png(const explore_snapshot *v, const char *a_path, const char *b_path, const char *path,
                         ms_err *err);
/* The name an export of B with q's stages gets, in the current directory:
 * "DIR/seed2.safetensors" -> "DIR-seed2.aligned-expert-wm.safetensors" (the
 * folder names the pair; then the order stage: expert, gate,
 * gate-uncentred or identity; then wm or nowm). explore_export numbers it
 * when the name is taken. */
void export_aligned_name(const char *b_path, const explore_request *q, char *out, int cap);
/* The name `p` gives a figure, in the current directory, from the same parts:
 * "dense4/seed1", "dense4/seed2" -> "dense4-seed1-seed2.curves-expert-wm.png"
 * ("curves-acc-..." for accuracy; B's folder only when it differs from A's),
 * or with landscape "dense4-seed1-seed2.landscape-wm.png" (the landscape
 * depends on weight matching; "-uncentred" when the gate cost is not
 * centred, which moves the gate mark). The caller numbers it when taken. */
void export_plot_name(const char *a_path, const char *b_path, const explore_request *q, int is_landscape,
                      int metric_acc, char *out, int cap);
/* The same parts around what and ext: "dense4-seed1-seed2.<what>-expert-wm.<ext>". */
void export_pair_name(const char *a_path, const char *b_path, const explore_request *q, const char *what,
                      const char *ext, char *out, int cap);

/* The export directory dir ready: "~" and "~/..." are the home directory,
 * made with its parents when missing; out the path as used (no trailing
 * '/'). 0, or -1 with why saying what is in the way (not a directory, cannot
 * be made, not writable, inside the folder of one of the nin inputs ins -
 * refused before anything is made). */
int export_dir_ready(const char *dir, const char *const *ins, int nin, char *out, int cap, char *why, int wcap);
/* A file name typed where the export directory is asked ("exports/d8.csv": its last
 * component ends in .png, .svg, .csv, .json or .safetensors): 1 with dir its folder
 * ("." for none) and file its name; else 0. */
int export_split_file(const char *typed, char *dir, int dcap, char *file, int fcap);
/* The directory the export prompt offers: the current one when it can be
 * written, else the home directory, else /tmp (absolute, so the prompt says
 * where the files go). */
void export_dir_default(char *out, int cap);

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
    curves_key_curve pins[PINS_MAX];
    int pin_wm[PINS_MAX];
} curves_key;

void curves_key_of(const explore_snapshot *v, const pin_set *pins, int metric_acc, curves_key *k);
int curves_key_equal(const curves_key *a, const curves_key *b);

#endif
