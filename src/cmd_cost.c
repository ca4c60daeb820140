/* cmd_cost.c - placeholder until the command lands. */
#include "cli.h"

int cmd_cost(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'cost' is not built yet");
}
