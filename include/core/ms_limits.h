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
 * MOESCOPE_MAX_MEMORY (bytes, or with a K, M or G suffix). The inputs are
 * held while the derived allocations are made, so inputs + the largest of them
 * must fit the machine as well (a Mixtral-sized pair is 11 GiB of float32
 * before anything is derived).
 *
 * It also refuses finite values so large that the arithmetic would overflow
 * (ms_range_check), naming the input tensor that holds them. */
#ifndef MS_LIMITS_H
#define MS_LIMITS_H

#include <stddef.h>

#include "io/evalset.h"
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

/* The machine's limit in bytes: physical memory or the cgroup's memory.max,
 * whichever is lower, lowered further by MOESCOPE_MAX_MEMORY. */
double ms_mem_machine(void);

/* Check the derived allocations `uses` of A (and B, E when not NULL) against
 * the budget. -1 with a message naming the file, the shape and the bytes. */
int ms_limits_check(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses,
                    ms_err *err);

/* Finite values whose products overflow: the activations bounded from the
 * largest parameters of m (and inputs of E, when not NULL) must stay below 1e30
 * and the expert cost's Gram entries below 1e36 (float32 ends at 3.4e38).
 * -1 with a message naming the file and the tensor with the largest values.
 * ms_limits_check runs it on every model it is given. */
int ms_range_check(const moe_model *m, const evalset *E, ms_err *err);

/* ms_range_check in pieces, for a layer whose routed experts are read one at a
 * time (a streamed layer, family_io.c): the largest |value| of each kind of
 * tensor and where it is, gathered from what m holds (ms_range_held; E may be
 * NULL), then from each routed expert i read apart (ms_range_expert), and
 * judged once all are in (ms_range_judge: ms_range_check's bound and message,
 * the same words whichever way the experts came). */
typedef struct {
    double v;
    char where[512];
    int expert, shared, e; /* expert: an expert's tensor (e, or the shared one) ... */
    char sfx[16];          /* ... its part ("fc1.weight") and element at of it */
    size_t at;
} ms_vmax;
typedef struct {
    ms_vmax G, W1, W2, SW1, SW2, X, Ng, Nb, Hw, Hb; /* SW: the shared experts' */
} ms_range;
void ms_range_held(ms_range *r, const moe_model *m, const evalset *E);
void ms_range_expert(ms_range *r, const moe_model *m, int i, const moe_expert *e);
int ms_range_judge(const ms_range *r, const moe_model *m, ms_err *err);

/* "8.0 GiB" into buf. */
const char *ms_bytes_str(char *buf, size_t cap, double bytes);

#endif
