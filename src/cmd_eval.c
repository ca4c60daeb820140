/* cmd_eval.c - placeholder until the command lands. */
#include "cli.h"

int cmd_eval(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'eval' is not built yet");
}
