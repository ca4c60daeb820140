/* cmd_landscape.c - placeholder until the command lands. */
#include "cli.h"

int cmd_landscape(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'landscape' is not built yet");
}
