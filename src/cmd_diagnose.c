/* cmd_diagnose.c - placeholder until the command lands. */
#include "cli.h"

int cmd_diagnose(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'diagnose' is not built yet");
}
