/* evalset.h - an evaluation set read from a safetensors file: `inputs` (N,d)
 * and either `labels` (N) for classification or `targets` (N,C) for
 * regression. The evalset type is the evaluator's (model/evaluator.h). */
#ifndef MS_EVALSET_H
#define MS_EVALSET_H

#include "core/ms_error.h"
#include "model/evaluator.h"

int evalset_load(evalset *e, const char *path, ms_err *err);
void evalset_free(evalset *e);
/* An evaluation set whose capture.layer names a block (or prefix) other than m's
 * layer holds another layer's hidden states: -1 with a message naming both (the
 * explorer shows such a layer without curves instead). 0 without the metadata. */
int evalset_check_layer(const evalset *e, const moe_model *m, ms_err *err);

/* A subset of an evaluation set's units, for screening (landscape_screen.h): m
 * of N spread evenly, unit u of the subset being unit evalset_pick(N, m, u) =
 * floor(u N / m) of the whole (every 4th for m = N/4), whatever the set's order. */
long evalset_pick(long N, long m, long u);
/* out: E's rows evalset_pick(N, m, .) copied (path and metadata too); m in 1..N */
void evalset_subset(const evalset *E, int m, evalset *out);

#endif
