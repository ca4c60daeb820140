/* main.c - the moescope binary: dispatch to a subcommand (src/cli/cmd_*.c), or
 * open the explorer (ui/tui.c). The one file that sees both front ends. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lesson_screen.h"
#include "core/progress.h"
#include "io/family.h"
#include "io/provenance.h"
#include "tui.h"

/* The lesson joins the CLI (arguments, --print) and the UI (its screen). */
static int run_lesson(int argc, char **argv) {
    lesson_args a;
    int rc = lesson_parse_args(&a, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.print || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return lesson_print(&a);
    return lesson_screen(&a);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int own_threads; /* runs BLAS single-threaded in its own workers (cli_blas_quiet) */
} commands[] = {
    {"info", cmd_info, "architecture, metadata and genericity diagnostics of a checkpoint", 0},
    {"eval", cmd_eval, "loss, accuracy and per-expert routing load on an evaluation set", 1},
    {"cost", cmd_cost, "expert cost matrix of two checkpoints and its assignment", 0},
    {"align", cmd_align, "write B re-expressed in A's basis (same function as B)", 0},
    {"merge", cmd_merge, "align, then average A and B (a model soup)", 0},
    {"curve", cmd_curve, "loss/accuracy curve between A and aligned B", 0},
    {"landscape", cmd_landscape, "every expert order: barriers, ranks, L-hat", 1},
    {"scramble", cmd_scramble, "apply a random symmetry: same function, shuffled parameters", 1},
    {"train", cmd_train, "train the MoE layer of a small model from a seed", 1},
    {"lap", cmd_lap, "solve one linear assignment stored as tensor 'cost'", 1},
    {"diagnose", cmd_diagnose, "why an alignment fails, in numbers", 0},
    {"lesson", run_lesson, "a guided walk through MoE symmetry, with live numbers", 0},
    {"study", cmd_study, "every pair of a pool of checkpoints: mean +- std tables", 0},
    {"geometry", cmd_geometry, "routing geometry across depth: control subspaces, one gauge, a shared transition", 0},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *fp) {
    fprintf(fp,
            "moescope %s - explore how two mixture-of-experts layers line up\n\n"
            "usage: moescope A.safetensors B.safetensors [--eval E] [--layer L]   (the TUI)\n"
            "       moescope COMMAND [options]   (moescope COMMAND --help for details)\n\n"
            "The TUI (an interactive explorer; ? on its screen lists the keys) also takes:\n"
            "  --eval E          evaluation set (default: eval.safetensors beside A)\n"
            "  --layer L         layer prefix (default moe)\n"
            "  --points T        interpolation points, 3..100000 (default 25)\n"
            "  --ascii           ASCII only (no braille, no half blocks)\n"
            "  --png-live FILE   rewrite a PNG of the curves whenever they change\n"
            "  --theme FILE      colours (a theme file); NO_COLOR=1 turns colour off\n"
            "  --out-dir DIR     where p, e and x write (made when missing; else asked at the first)\n"
            "  --interpolate-backbone  networks: A and B may differ outside the MoE blocks\n"
            "                    (interpolated too)\n"
            "  --all-error-bars  the orders' error bars (~) up to 2^29 per-unit losses, not\n"
            "                    only 2^25 (orders x points x units; minutes on dense8)\n"
            "Above %d experts its orders table is a sample of %d orders (a network's above %d\n"
            "experts, of %d), the landscape and study commands' defaults too.\n\n"
            "A checkpoint is a .safetensors file, a sharded checkpoint's\n"
            "model.safetensors.index.json, or a directory holding either (config.json read).\n"
            "A network (moescope's GPT-2 or ViT folder whose feed-forward blocks are MoE, with an\n"
            "evaluation set of input_ids, or of pixel_values and labels) is measured on its\n"
            "own loss (next-token or class cross-entropy) by every command and the TUI; so is\n"
            "a Hugging Face MoE decoder (mixtral, qwen2_moe, qwen3_moe, olmoe, granitemoe,\n"
            "deepseek_v2, deepseek_v3, gpt_oss, phimoe, jetmoe) given with input_ids.\n"
            "Every command also takes --family NAME (%s)\n"
            "and the router overrides --top-k K, --norm-topk-prob 0|1, --routed-scaling F,\n"
            "--n-group G, --topk-group T (else config.json, else the family's defaults).\n"
            "An evaluation set whose capture.layer metadata names another layer than the one\n"
            "evaluated is refused; --ignore-capture-layer evaluates on it anyway. Without --layer,\n"
            "the layer it names is taken (else the first MoE layer; either is said on stderr).\n\n"
            "commands:\n",
            ms_version(), LS_EXHAUSTIVE_MAX, LS_SAMPLES, LS_OBJ_EXHAUSTIVE_MAX, LS_OBJ_SAMPLES, family_names_list());
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(fp, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

/* Levenshtein distance (command names are short). */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32) return 99;
    int d[33][33];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* argv[1] is neither a command nor a checkpoint when it is a bare word (letters,
 * digits, '-' or '_', no '.' or '/') that names no file: `moescope landscpe A B`. */
static int unknown_command(const char *w) {
    struct stat st;
    if (!*w || w[0] == '-' || stat(w, &st) == 0) return 0;
    for (const char *p = w; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_'))
            return 0;
    size_t best = 0;
    int bd = 99;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        int dd = edit_distance(w, commands[i].name);
        if (dd < bd) bd = dd, best = i;
    }
    fprintf(stderr, "moescope: unknown command '%s'", w);
    if (bd <= 2 || (bd <= 3 && strlen(w) >= 7))
        fprintf(stderr, " (did you mean '%s'?)", commands[best].name);
    fprintf(stderr, "\nusage: moescope COMMAND [options], or moescope A.safetensors B.safetensors "
                    "for the explorer; 'moescope --help' lists the commands\n");
    return 1;
}

/* `moescope seed1.safetensors info`: a command after a checkpoint (a word no
 * file is named, not an option's value) is a command in the wrong place. */
static int command_after(int argc, char **argv) {
    static const char *const valued[] = {"--eval", "-e", "--layer", "-l", "--points", "-T", "--png-live", "-P",
                                         "--theme", "-t", "--out-dir"};
    struct stat st;
    for (int i = 2; i < argc; i++) {
        int is_value = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) is_value |= !strcmp(argv[i - 1], valued[k]);
        for (size_t c = 0; c < NCOMMANDS && !is_value; c++)
            if (!strcmp(argv[i], commands[c].name) && stat(argv[i], &st) != 0) {
                fprintf(stderr, "moescope: '%s' is a command: it comes first (moescope %s %s%s; moescope %s --help)\n",
                        argv[i], argv[i], argv[1], argc > 3 ? " ..." : "", argv[i]);
                return 1;
            }
    }
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN); // past a file-size limit, write(2) fails with EFBIG and we report it
    cli_blas_prefer_cpu(argv); // before anything else: it may run the binary again
    cli_stdio_guard();
    cli_set_program(argv[0]);
    prov_set_command(argc, argv); // every report records the command line
    int rc = cli_front(&argc, argv, "moescope", usage);
    if (rc >= 0) return cli_stdout_done(rc);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            if (commands[i].own_threads) cli_blas_quiet();
            // Ctrl-C ends a subcommand with its unfinished outputs removed (the lesson's
            // screen, like the TUI, reads keys itself)
            if (strcmp(argv[1], "lesson")) progress_install_cancel();
            return cli_stdout_done(commands[i].run(argc - 1, argv + 1));
        }
    if (unknown_command(argv[1]) || command_after(argc, argv)) return 2;
    return tui_main(argc, argv);
}
