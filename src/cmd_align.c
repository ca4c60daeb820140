/* cmd_align.c - placeholder until the command lands. */
#include "cli.h"

int cmd_align(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'align' is not built yet");
}
