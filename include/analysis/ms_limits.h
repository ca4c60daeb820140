/* ms_limits.h - bounds on the memory a computation derives from its inputs.
 *
 * A small file can describe a layer whose analysis needs far more memory than
 * the file holds (n = 2, d = 1, h = 2^15 is 262 KB, yet weight matching two of
 * its experts needs an h x h matrix of 8 GiB). Every command checks the largest
 * derived allocations it will make here, from the shapes alone, before
 * allocating any of them, and refuses with a message that says what would be
 * needed and which input's shape causes it.
 *
 * The budget: at most MS_MEM_RATIO times the bytes of the inputs' parameters
 * and samples (as float32), but at least MS_MEM_FLOOR, and never more than
 * the machine's physical memory or the environment variable
 * MOESCOPE_MAX_MEMORY (bytes, or with a K, M, G or T suffix). The inputs are
 * held while the derived allocations are made, so inputs + the largest of them
 * must fit the machine as well (a Mixtral-sized pair is 11 GiB of float32
 * before anything is derived).
 *
 * It also refuses finite values so large that the arithmetic would overflow
 * (moe_range_check, model_io.h), naming the input tensor that holds them. */
#ifndef MS_LIMITS_H
#define MS_LIMITS_H

#include <stddef.h>

#include "core/mem_budget.h"
#include "model/evaluator.h"
#include "model/model.h"

#define MS_MEM_FLOOR (256.0 * 1024 * 1024)
#define MS_MEM_RATIO 64.0

/* What a command derives (OR them): */
enum {
    MS_USE_WM = 1,   /* weight matching: an h x h matrix of doubles */
    MS_USE_COST = 2, /* expert cost: Gram blocks or h x h products (cost_expert_bytes) */
    MS_USE_EVAL = 4, /* forward passes: N x (2n + C + 3d) floats */
    MS_USE_DIAG = 8, /* diagnostics: every expert's outputs on up to 2048 samples */
};

/* Check the derived allocations `uses` of A (and B, E when not NULL) against
 * the budget. -1 with a message naming the file, the shape and the bytes. */
int ms_limits_check(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses,
                    ms_err *err);
/* The same without the values' range check (moe_range_check): for layers whose
 * routed weights are not read yet (a network's blocks the explorer reads off its
 * screen's thread, net_load_lazy), checked once they are. */
int ms_limits_memory(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses, ms_err *err);

#endif
