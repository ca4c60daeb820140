/* cost_method.h - the methods that match B's experts to A's slots, one row of
 * a table each (registered once, as ggml registers an op): every command and
 * the explorer iterate over cost_methods[] rather than naming methods.
 *
 * A method is a cost matrix C (n,n), C[i*n+j] the cost of putting B's expert j
 * in A's slot i; the order it picks is the assignment that minimises sum C. */
#ifndef MS_COST_METHOD_H
#define MS_COST_METHOD_H

#include <stddef.h>

#include "model/model.h"

/* the rows of cost_methods[], in the order every report lists them */
typedef enum { COST_GATE = 0, COST_EXPERT = 1, COST_ACTIVATION = 2, COST_ROUTER = 3, COST_NMETHODS } cost_method;

/* what a method needs besides the two checkpoints */
typedef enum { COST_NEEDS_NOTHING = 0, COST_NEEDS_EVALSET = 1 } cost_needs;

struct cost_tuning;

/* What a cost function reads. */
typedef struct {
    const moe_model *A, *B;
    const expert_source *sa, *sb;     /* NULL or no read: the models' own experts */
    int center;                       /* gate: centre the rows over the experts */
    const struct cost_tuning *tuning; /* expert: NULL, the defaults */
    const float *X;                   /* (N, d) the evaluation set's inputs at the block, */
    int N, d;                         /* for the data-driven methods; NULL: none */
} cost_input;

typedef struct {
    const char *name;  /* "gate": --method's word, JSON keys, text reports */
    const char *title; /* "Gate": table headings */
    char mark;         /* 'G': the explorer's mark on the method's order */
    cost_needs needs;
    int centres;       /* 1: --no-center applies (the gate rows' centring) */
    int (*cost)(const cost_input *in, double *C, ms_err *err); /* C (n,n) */
    /* NULL: offered at every size; else 1 when na x nb experts of c (streamed:
     * read from the files) are within reach, 0 and why (a sentence) */
    int (*offered)(const moe_config *c, int na, int nb, int streamed, char *why, size_t cap);
    /* NULL: hidden units matched by weight matching (weight_matching.h); else
     * by this on the evaluation set's inputs X (N, d) */
    int (*match_hidden)(const moe_expert *a, const moe_expert *b, const moe_config *c, const float *X, int N,
                        int *P, double *S, ms_err *err);
} cost_method_info;

extern const cost_method_info cost_methods[COST_NMETHODS];

const char *cost_method_name(cost_method m);
/* a method's name to its row; -1 for a name no row has */
int cost_method_parse(const char *s, cost_method *m);
/* 1 when method m is offered for na x nb experts of c (else why, as above) */
int cost_method_offered(cost_method m, const moe_config *c, int na, int nb, int streamed, char *why,
                        size_t cap);
/* 1 when method m can run: it needs nothing, or an evaluation set is there */
int cost_method_available(cost_method m, int have_set);
/* the names for a usage message: "gate or expert" */
const char *cost_method_choices(void);

#endif
