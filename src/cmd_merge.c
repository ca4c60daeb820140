/* cmd_merge.c - placeholder until the command lands. */
#include "cli.h"

int cmd_merge(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'merge' is not built yet");
}
