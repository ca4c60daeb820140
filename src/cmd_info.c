/* cmd_info.c - placeholder until the command lands. */
#include "cli.h"

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'info' is not built yet");
}
