/* state_export.h - `x`: what the explorer shows, saved for a notebook or a
 * paper (curses-free). JSON (format "moescope.tui_state/1"): provenance, the
 * checkpoints, the toggles, the cost matrix and its assignment, every curve
 * shown (t, loss, accuracy, barriers, AUC; "pinned": the orders pinned with
 * P, each with the weight-matching setting it was computed under), the ranks and L-hat, and the
 * orders table as far as it is computed (rank with ties, order, barrier,
 * accuracy barrier, AUC, assignment cost). A name ending in .csv writes the
 * orders table alone as CSV (provenance as "# " lines). */
#ifndef MS_UI_STATE_EXPORT_H
#define MS_UI_STATE_EXPORT_H

#include "explore/explore_worker.h"
#include "pins.h"

/* Write the state of v and the pins (may be NULL) at path (never over a
 * file: the caller picks a free name). 0, or -1 with a message naming the file. */
int state_write(const explore_snapshot *v, const pin_set *pins, const char *a_path, const char *b_path,
                const char *path, ms_err *err);

#endif
