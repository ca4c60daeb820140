/* lesson.h - a guided walk through MoE symmetry with live numbers.
 *
 * Each step is a sentence or two about one fact of the theory, with numbers
 * the library computes on the lesson's checkpoints (never canned): two seeds
 * are far apart; a scramble computes the same function; aligning recovers
 * the scramble; why gate centring matters; skipping the expert order leaves
 * the barrier high; top-1 routing has an extra scaling symmetry; a
 * group-limited router only allows group-preserving orders.
 *
 * The models the steps build (scrambles, a top-1 copy, a grouped copy) are
 * written to a private temporary directory, so a front end can open any step
 * in the explorer; lesson_close removes them. The seeds are fixed, so the
 * same commands on the command line give the same numbers (each step says
 * which). */
#ifndef MS_LESSON_H
#define MS_LESSON_H

#include "core/ms_error.h"
#include "io/family.h"

#define LESSON_STEPS 7
#define LESSON_TEXT 2048

typedef struct lesson lesson;

typedef struct {
    int index;                /* 0 .. LESSON_STEPS-1 */
    char title[96];
    char text[LESSON_TEXT];   /* sentences with the step's numbers; '\n' ends a paragraph */
    char cli[512];            /* the commands that reproduce the numbers */
    char explore_a[1024];     /* the pair to open in the explorer for this step */
    char explore_b[1024];
} lesson_step;

/* Load A, B (read as o says, may be NULL) and the evaluation set E (A and B:
 * two seeds of one layer).
 * Returns NULL with a message in err on failure. */
lesson *lesson_open(const char *a, const char *b, const char *e, const family_overrides *o,
                    ms_err *err);
/* Compute step i (0-based) into *out: 0 or -1 with a message. */
int lesson_step_compute(lesson *L, int i, lesson_step *out, ms_err *err);
/* Free everything and remove the temporary files. */
void lesson_close(lesson *L);

#endif
