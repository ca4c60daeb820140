/* family_table.h - family.c's table, shared with family_io.c (private to src/). */
#ifndef MS_FAMILY_TABLE_H
#define MS_FAMILY_TABLE_H

#include "io/family.h"

typedef struct {
    const char *name;
    const char *model_type;  /* config.json's model_type */
    const char *gate;        /* the gate's weight, relative to the layer prefix */
    const char *probe;       /* a tensor every layer of the family has (NULL: special) */
    int k;                   /* defaults when config.json is silent */
    int norm_topk_prob;
    double scaling;
    const char *n_key;       /* config.json's count of routed experts (NULL: none at its top) */
} family_desc;

extern const family_desc family_table[FAM_COUNT];

#endif
