/* lesson_view.h - the lesson screen drawn into a grid (no curses: tested
 * without a terminal). */
#ifndef MS_UI_LESSON_VIEW_H
#define MS_UI_LESSON_VIEW_H

#include "grid.h"
#include "analysis/lesson.h"

#define LESSON_MIN_W 40
#define LESSON_MIN_H 12

/* Step s of LESSON_STEPS (s NULL while step `index` is being computed), the
 * paragraphs wrapped to the width, the command that reproduces the numbers,
 * and the keys; status (may be NULL) on the line above the keys. */
void lesson_render(grid *g, const lesson_step *s, int index, const char *status);

#endif
