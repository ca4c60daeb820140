/* lesson.h - a guided walk through MoE symmetry with live numbers.
 *
 * Each step is a sentence or two about one fact of the theory, with numbers
 * the library computes on the lesson's checkpoints (never canned): two seeds
 * are far apart; a scramble computes the same function; aligning recovers
 * the scramble; why gate centring matters; skipping the expert order leaves
 * the barrier high; top-1 routing has an extra scaling symmetry; a
 * group-limited router only allows group-preserving orders.
 *
 * The models the steps build (scrambles, a top-1 copy, grouped copies) are
 * written to a directory that is kept (lesson_open's dir), in moescope's own
 * format (so a changed router is kept with them), so a front end can open any
 * step in the explorer and each step's commands run as printed after the
 * lesson ends. The seeds are fixed, so those commands give the same numbers. */
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
    char cli[2048];           /* the commands that reproduce the numbers (a shell line) */
    char explore_a[1024];     /* the pair to open in the explorer for this step */
    char explore_b[1024];
} lesson_step;

/* --dir's default: the lesson's own directory by its name */
#define LESSON_DIR_DEFAULT "moescope-lesson"

/* Load A, B (read as o says, may be NULL) and the evaluation set E (A and B:
 * two seeds of one layer); the files the steps build go to dir (created when
 * absent; the lesson's names in it are replaced), and the commands printed
 * start with prog (the binary as the user runs it: "moescope", or "./moescope"
 * where it is not installed). Returns NULL with a message in err on failure. */
lesson *lesson_open(const char *a, const char *b, const char *e, const family_overrides *o,
                    const char *dir, const char *prog, ms_err *err);
/* The directory the lesson's files are in. */
const char *lesson_dir(const lesson *L);
/* Compute step i (0-based) into *out: 0 or -1 with a message. */
int lesson_step_compute(lesson *L, int i, lesson_step *out, ms_err *err);
/* Free everything (the files stay in the lesson's directory). */
void lesson_close(lesson *L);

#endif
