/* terminal.c - see terminal.h. */
#include "terminal.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <term.h>
#include <unistd.h>

#include "core/env.h"

int terminal_usable(char *why, size_t cap) {
    const char *t = env_get(ENV_TERM);
    if (!t || !*t) {
        snprintf(why, cap, "TERM is not set, so curses cannot tell what this terminal can draw");
        return 0;
    }
    int errret = 0;
    if (setupterm((char *)t, STDOUT_FILENO, &errret) != OK) {
        if (errret == 1) snprintf(why, cap, "TERM=%.60s is a hardcopy terminal", t);
        else if (errret == 0) snprintf(why, cap, "TERM=%.60s is a terminal type this machine does not know (no terminfo entry)", t);
        else snprintf(why, cap, "the terminfo database is missing (TERM=%.60s)", t);
        return 0;
    }
    // a full-screen program moves the cursor; "dumb" (Emacs shells, some CI logs) cannot
    char *cup = tigetstr("cup");
    int ok = cup && cup != (char *)-1;
    if (!ok) snprintf(why, cap, "TERM=%.60s cannot move the cursor (a dumb terminal)", t);
    del_curterm(cur_term);
    cur_term = NULL;
    return ok;
}
