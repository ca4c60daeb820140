/* cmd_train.c - placeholder until the command lands. */
#include "cli.h"

int cmd_train(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("'train' is not built yet");
}
