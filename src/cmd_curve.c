/* cmd_curve.c - placeholder until the command lands. */
#include "cli.h"

int cmd_curve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'curve' is not built yet");
}
