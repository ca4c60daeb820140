/* cli.h - the subcommands of the moescope binary and small shared helpers.
 *
 * Each command lives in src/cmd_<name>.c as int cmd_<name>(int argc, char **argv)
 * with argv[0] the command name. Exit codes: 0 success, 1 failure (bad input,
 * I/O), 2 usage error (unknown option, missing argument). */
#ifndef MS_CLI_H
#define MS_CLI_H

#include <stdio.h>

int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_align(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_curve(int argc, char **argv);
int cmd_landscape(int argc, char **argv);
int cmd_scramble(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_lap(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
/* The TUI (ui/tui.c): moescope A B [--eval E] [--layer L] ... */
int tui_main(int argc, char **argv);

/* Print "moescope CMD: msg" and the usage line to stderr; returns 2. */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "moescope: msg" to stderr; returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse "2,0,3,1" or "2 0 3 1" into a permutation of 0..n-1; -1 if not one. */
int cli_parse_order(const char *s, int *order, int n);
/* Progress bar on stderr, only when stderr is a terminal. */
void cli_progress(const char *what, long done, long total);
void cli_progress_end(void);

#endif
