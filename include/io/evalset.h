/* evalset.h - an evaluation set read from a safetensors file: `inputs` (N,d)
 * and either `labels` (N) for classification or `targets` (N,C) for
 * regression. The evalset type is the evaluator's (model/evaluator.h). */
#ifndef MS_EVALSET_H
#define MS_EVALSET_H

#include "core/ms_error.h"
#include "model/evaluator.h"

int evalset_load(evalset *e, const char *path, ms_err *err);
void evalset_free(evalset *e);

#endif
