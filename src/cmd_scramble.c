/* cmd_scramble.c - placeholder until the command lands. */
#include "cli.h"

int cmd_scramble(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'scramble' is not built yet");
}
