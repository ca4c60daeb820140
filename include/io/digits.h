/* digits.h - the UCI digits of sample-checkpoints/, read into the trainer's
 * sets (model/train.h). */
#ifndef MS_DIGITS_H
#define MS_DIGITS_H

#include <stdint.h>

#include "model/train.h"

/* The UCI digits file of sample-checkpoints/: `pixels` (N, P) F32 in [0,1],
 * `labels` (N) I64. Splits it (sample i goes to the test set when i % 5 == 0)
 * and embeds the pixels into d features with the frozen random embedding. */
int digits_load(const char *path, int d, uint64_t embed_seed, double embed_scale,
                train_set *train, train_set *test, ms_err *err);

#endif
