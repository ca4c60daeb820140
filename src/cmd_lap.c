/* cmd_lap.c - placeholder until the command lands. */
#include "cli.h"

int cmd_lap(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'lap' is not built yet");
}
