/* terminal.h - can this terminal draw a full-screen program (the explorer, the
 * lesson's screen)? Asked before anything loads, so a dumb, unknown or unset
 * TERM gets a message saying what to do instead of curses' bare "Error opening
 * terminal" (or a screen that draws nothing). */
#ifndef MS_UI_TERMINAL_H
#define MS_UI_TERMINAL_H

#include <stddef.h>

/* 1 when TERM names a terminal that can move its cursor; else 0 with the
 * reason in why ("TERM is not set", "TERM=dumb cannot move the cursor", ...). */
int terminal_usable(char *why, size_t cap);

#endif
