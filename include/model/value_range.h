/* value_range.h - finite values so large that the arithmetic would overflow.
 *
 * The activations bounded from the largest parameters of a layer (and inputs of
 * an evaluation set) must stay below 1e30 and the expert cost's Gram entries
 * below 1e36 (float32 ends at 3.4e38). The scan says which tensor and element
 * holds the largest values, in moescope's own names; the caller names it in the
 * terms of the file it came from (model_io.h: moe_range_check; a family's own
 * tensor and shard, family.h: family_range_fail).
 *
 * In pieces, for a layer whose routed experts are read one at a time (a
 * streamed layer, family_io.c): the largest |value| of each kind of tensor and
 * where it is, gathered from what m holds (range_held; E may be NULL), then
 * from each routed expert i read apart (range_expert), and judged once all are
 * in (range_judge: the same verdict whichever way the experts came). */
#ifndef MS_VALUE_RANGE_H
#define MS_VALUE_RANGE_H

#include <stddef.h>

#include "model/evaluator.h"
#include "model/model.h"

/* The largest |value| of one kind of tensor, and where it is. */
typedef struct {
    double v;
    char file[400];        /* the model's file, or the evaluation set's */
    char tensor[160];      /* moescope's name: "moe.experts.3.fc1.weight", "inputs" */
    size_t at;             /* its element */
    int expert, shared, e; /* expert: a routed (shared: a shared) expert e's part ... */
    char part[16];         /* ... part ("fc1.weight") */
} range_max;

typedef struct {
    range_max G, W1, W2, SW1, SW2, X, Ng, Nb, Hw, Hb; /* SW: the shared experts' */
} value_range;

/* What range_judge found: the bound broken and its largest contributor. */
typedef struct {
    double magnitude, limit; /* the largest magnitude computed with; its bound (1e30 or 1e36) */
    range_max culprit;       /* culprit.v 0: no tensor to blame */
} range_finding;

/* The bounds every computation keeps (a network's forward too, net_range.h): sums of
 * squares of activations must fit a double and sums of them a float. */
#define RANGE_ACT_MAX 1e30
#define RANGE_GRAM_MAX 1e36

void range_held(value_range *r, const moe_model *m, const evalset *E);
void range_expert(value_range *r, const moe_model *m, int i, const moe_expert *e);
/* The largest activation the layer computes with from r (its input bound r->X.v);
 * *mix: a bound on the experts' mixture (the layer's output before a residual),
 * *gram: on the expert cost's Gram entries. */
double range_bounds(const value_range *r, const moe_model *m, double *mix, double *gram);
/* 0 when every bound holds; 1 when one does not, *f saying which and why. */
int range_judge(const value_range *r, const moe_model *m, range_finding *f);
/* The refusal of f: -1 with "<where> holds values up to V (element at): with n =
 * ..., the layer's arithmetic would overflow float32 ...". where NULL: the
 * culprit as moescope names it ("<file>: tensor '<name>'", its element). */
int range_fail(const range_finding *f, const moe_model *m, const char *where, long long at,
               ms_err *err);

#endif
