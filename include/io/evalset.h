/* evalset.h - an evaluation set: `inputs` (N,d) and either `labels` (N) for
 * classification or `targets` (N,C) for regression (dimension legend in
 * model.h). */
#ifndef MS_EVALSET_H
#define MS_EVALSET_H

#include <stdint.h>

#include "model/model.h"
#include "core/ms_error.h"

typedef struct {
    char *path;
    int N, d, C;       /* C: number of classes (labels) or target width */
    float *inputs;     // (N, d)
    int32_t *labels;   // (N), classification; NULL for regression
    float *targets;    // (N, C), regression; NULL for classification
} evalset;

int evalset_load(evalset *e, const char *path, ms_err *err);
void evalset_free(evalset *e);
/* Check e fits m (width d, label range / target width vs the head). */
int evalset_check(const evalset *e, const moe_model *m, ms_err *err);

#endif
