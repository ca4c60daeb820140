/* main.c - the moescope binary: dispatch to a subcommand, or open the TUI. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "family.h"

#define MOESCOPE_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"info", cmd_info, "architecture, metadata and genericity diagnostics of a checkpoint"},
    {"eval", cmd_eval, "loss, accuracy and per-expert routing load on an evaluation set"},
    {"cost", cmd_cost, "expert cost matrix of two checkpoints and its assignment"},
    {"align", cmd_align, "write B re-expressed in A's basis (same function as B)"},
    {"merge", cmd_merge, "align, then average A and B (a model soup)"},
    {"curve", cmd_curve, "loss/accuracy curve between A and aligned B"},
    {"landscape", cmd_landscape, "every expert order: barriers, ranks, L-hat"},
    {"scramble", cmd_scramble, "apply a random symmetry: same function, shuffled parameters"},
    {"train", cmd_train, "train the MoE layer of a small model from a seed"},
    {"lap", cmd_lap, "solve one linear assignment stored as tensor 'cost'"},
    {"diagnose", cmd_diagnose, "why an alignment fails, in numbers"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *fp) {
    fprintf(fp,
            "moescope %s - explore how two mixture-of-experts layers line up\n\n"
            "usage: moescope A.safetensors B.safetensors [--eval E] [--layer L]   (the TUI)\n"
            "       moescope COMMAND [options]   (moescope COMMAND --help for details)\n\n"
            "commands:\n",
            MOESCOPE_VERSION);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN); // past a file-size limit, write(2) fails with EFBIG and we report it
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("moescope %s\n", MOESCOPE_VERSION);
        return 0;
    }
    int rc = family_take_options(&argc, argv); // --family and router overrides, for every command
    if (rc) return rc;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    return tui_main(argc, argv);
}
