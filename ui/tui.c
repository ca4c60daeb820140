/* tui.c - placeholder until the TUI lands. */
#include "cli.h"

int tui_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("the TUI is not built yet; see 'moescope --help'");
}
