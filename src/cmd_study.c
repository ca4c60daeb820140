/* cmd_study.c - moescope study: the landscape of every pair of a pool of
 * checkpoints and the mean +- sample std over the pairs (study.h). */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli.h"
#include "provenance.h"
#include "study.h"

#define USAGE                                                                                    \
    "moescope study CKPT1 CKPT2 [CKPT3 ...] | DIR --eval E [--points 25] [--json F] [--csv F] " \
    "[--latex F] [--png F] [--samples N] [--seed S] [--threads K] [--layer L] [--no-wm] [-q]"
#define ST_MAX_POOL 64

static void help(void) {
    printf("usage: %s\n\n", USAGE);
    printf("The landscape (every expert order, rank, tied, rank by AUC, L-hat) of every\n"
           "pair i < j of the checkpoints, and per pair and as mean +- sample standard\n"
           "deviation over the pairs: naive, skip-order, gate and expert barriers (loss\n"
           "and accuracy), the methods' rank, tied, rank_auc, L-hat and rank percentile,\n"
           "best and worst barrier, the identity order's rank, and Spearman's rho between\n"
           "each method's assignment cost sum_i C[i][pi(i)] and the barrier over every\n"
           "order (does the data-free cost predict the barrier?). Each checkpoint is\n"
           "loaded once. A directory stands for its *.safetensors files (sorted), less the\n"
           "evaluation set; without --eval, DIR/eval.safetensors is used. For n >= 10 each\n"
           "landscape is sampled (--samples) and ranks carry a 95%% interval.\n\n"
           "  -e, --eval E      evaluation set\n"
           "  -T, --points T    interpolation points (default 25)\n"
           "  -j, --json F      moescope.study/1: pairs (the landscape's keys, no order list)\n"
           "                    and summary {\"naive.barrier\": {mean, std, n}, ...}\n"
           "  -c, --csv F       one row per pair, then mean and std rows\n"
           "      --latex F     a booktabs table (\\usepackage{booktabs})\n"
           "  -p, --png F       per-pair barrier bars over a rank-percentile strip\n"
           "      --samples N   n >= 10: orders sampled per pair (default 20000)\n"
           "      --seed S      sampling seed\n"
           "      --threads K   worker threads (default: all CPUs, at most 8)\n"
           "      --no-wm       no weight matching inside each order\n"
           "      --layer L     layer prefix (default moe)\n"
           "  -q, --quiet       no table on stdout\n"
           "  -h, --help        this text\n");
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expand a directory into its *.safetensors (sorted; the evaluation set left
 * out) into paths[*np..]; files are taken as they are. */
static int add_input(const char *arg, const char **e_path, char **paths, int *np, ms_err *err) {
    struct stat st;
    if (stat(arg, &st)) return ms_fail(err, "%s: no such file or directory", arg);
    if (!S_ISDIR(st.st_mode)) {
        if (*np >= ST_MAX_POOL) return ms_fail(err, "more than %d checkpoints", ST_MAX_POOL);
        paths[(*np)++] = ms_strdup(arg);
        return 0;
    }
    DIR *d = opendir(arg);
    if (!d) return ms_fail(err, "%s: cannot read the directory", arg);
    int first = *np;
    struct dirent *de;
    size_t al = strlen(arg);
    const char *sep = al && arg[al - 1] == '/' ? "" : "/";
    char *dflt = NULL;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 12 || strcmp(de->d_name + l - 12, ".safetensors")) continue;
        char *p = ms_malloc(al + l + 2);
        sprintf(p, "%s%s%s", arg, sep, de->d_name);
        if (!strcmp(de->d_name, "eval.safetensors") && !*e_path) {
            dflt = p; // the directory's evaluation set
            continue;
        }
        if (*e_path && same_file(p, *e_path)) {
            free(p);
            continue;
        }
        if (*np >= ST_MAX_POOL) {
            free(p);
            closedir(d);
            free(dflt);
            return ms_fail(err, "%s: more than %d checkpoints", arg, ST_MAX_POOL);
        }
        paths[(*np)++] = p;
    }
    closedir(d);
    if (dflt) *e_path = dflt; // kept for the process (freed with the pool below)
    if (dflt) paths[ST_MAX_POOL] = dflt;
    qsort(paths + first, (size_t)(*np - first), sizeof(char *), by_name);
    if (*np == first) return ms_fail(err, "%s: no checkpoints (*.safetensors) in the directory", arg);
    return 0;
}

static void on_pair(int done, int total) { cli_progress("pairs", done, total); }

static int study_outputs(const study *S, const char *e_path, const char *const *outs, ms_err *err) {
    if (outs[0] && study_write_json(S, e_path, outs[0], err)) return -1;
    if (outs[1] && study_write_csv(S, outs[1], err)) return -1;
    if (outs[2] && study_write_latex(S, outs[2], err)) return -1;
    if (outs[3] && study_write_png(S, outs[3], err)) return -1;
    return 0;
}

static int run_study(char **paths, int np, const char *e_path, const char *layer, ls_opts *lo,
                     const char *const *outs, int show) {
    ms_err err;
    moe_model *M = ms_calloc((size_t)np, sizeof(moe_model));
    evalset E;
    int rc = 0, nl = 0;
    prov_add_input(e_path);
    for (; nl < np; nl++) {
        prov_add_input(paths[nl]);
        if (moe_load(&M[nl], paths[nl], layer, &err)) {
            rc = cli_error("%s", err.msg);
            break;
        }
    }
    if (!rc && evalset_load(&E, e_path, &err)) rc = cli_error("%s", err.msg);
    if (!rc) {
        study S;
        lo->progress = NULL;
        if (study_run(M, (const char *const *)paths, np, &E, lo, isatty(2) ? on_pair : NULL, &S, &err)) {
            cli_progress_end();
            rc = cli_error("%s", err.msg);
        } else {
            cli_progress_end();
            if (show) study_print(&S, stdout);
            if (study_outputs(&S, e_path, outs, &err)) rc = cli_error("%s", err.msg);
            study_free(&S);
        }
        evalset_free(&E);
    }
    for (int i = 0; i < nl; i++) moe_free(&M[i]);
    free(M);
    return rc;
}

int cmd_study(int argc, char **argv) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},    {"points", required_argument, 0, 'T'},
        {"json", required_argument, 0, 'j'},    {"csv", required_argument, 0, 'c'},
        {"latex", required_argument, 0, 'L'},   {"png", required_argument, 0, 'p'},
        {"layer", required_argument, 0, 'l'},   {"no-wm", no_argument, 0, 'W'},
        {"samples", required_argument, 0, 'S'}, {"seed", required_argument, 0, 's'},
        {"threads", required_argument, 0, 't'}, {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    ls_opts lo;
    ls_opts_default(&lo);
    const char *e_path = NULL, *layer = NULL, *outs[4] = {NULL, NULL, NULL, NULL};
    int show = 1, ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "e:T:j:c:p:l:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': e_path = optarg; break;
        case 'j': outs[0] = optarg; break;
        case 'c': outs[1] = optarg; break;
        case 'L': outs[2] = optarg; break;
        case 'p': outs[3] = optarg; break;
        case 'l': layer = optarg; break;
        case 'q': show = 0; break;
        case 'h': help(); return 0;
        default: {
            int r = cli_landscape_option(&lo, ch, optarg, "study", USAGE);
            if (r > 0) return r;
            if (r < 0) return cli_option_error(USAGE, "study", ch, argc, argv);
        }
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "study: no checkpoints given");
    char *paths[ST_MAX_POOL + 1] = {0}; // [ST_MAX_POOL]: a directory's evaluation set
    int np = 0, rc = 0;
    ms_err err;
    for (int i = optind; i < argc && !rc; i++)
        if (add_input(argv[i], &e_path, paths, &np, &err)) rc = cli_error("%s", err.msg);
    if (!rc && !e_path) rc = cli_usage_error(USAGE, "study: --eval E is required");
    if (!rc && np < 2) rc = cli_usage_error(USAGE, "study: need at least two checkpoints, got %d", np);
    static const char *const labels[4] = {"--json", "--csv", "--latex", "--png"};
    for (int i = 0; i < 4 && !rc; i++) {
        const char *ins[ST_MAX_POOL + 1];
        for (int k = 0; k < np; k++) ins[k] = paths[k];
        ins[np] = e_path;
        if (outs[i] && af_check_not_input(outs[i], ins, np + 1, &err)) rc = cli_error("%s", err.msg);
    }
    if (!rc && af_check_distinct(outs, labels, 4, &err)) rc = cli_usage_error(USAGE, "study: %s", err.msg);
    if (!rc) rc = run_study(paths, np, e_path, layer, &lo, outs, show);
    for (int i = 0; i <= ST_MAX_POOL; i++) free(paths[i]);
    return rc;
}
