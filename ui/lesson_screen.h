/* lesson_screen.h - the interactive screen of `moescope lesson`. */
#ifndef MS_UI_LESSON_SCREEN_H
#define MS_UI_LESSON_SCREEN_H

#include "cli/cli.h"

/* Run the lesson on a terminal until the user quits; the exit code. */
int lesson_screen(const lesson_args *a);

#endif
