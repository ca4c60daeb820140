/* tui.h - the explorer's entry point, the only part of ui/ the program's main
 * calls: moescope A B [--eval E] [--layer L] ... (argv[0] the program). */
#ifndef MS_TUI_H
#define MS_TUI_H

/* Parse the options, load the checkpoints, run the explorer until the user
 * quits. Returns the exit code (0, 1 failure, 2 usage error). */
int tui_main(int argc, char **argv);

#endif
