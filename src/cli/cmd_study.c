/* cmd_study.c - moescope study: the landscape of every pair of a pool of
 * checkpoints and the mean +- sample std over the pairs (study.h). */
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "cli/cli.h"
#include "io/provenance.h"
#include "core/progress.h"
#include "io/safetensors.h"
#include "analysis/study.h"
#include "io/model_io.h"
#include "plot/study_png.h"
#include "network/net_budget.h"
#include "network/net_landscape.h"

#define USAGE                                                                                    \
    "moescope study CKPT1 CKPT2 [CKPT3 ...] | DIR [--eval E] [--points 25] [--json F] [--csv F] " \
    "[--latex F] [--png F] [--samples N] [--seed S] [--exhaustive] [--threads K] [--layer L] [--no-wm] [-q] " \
    "[--no-center] [--interpolate-backbone] [--no-proxy] [--screen K] [--screen-units M] [--all-error-bars]"
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
           "loaded and evaluated once (its loss and accuracy are shared by its pairs). A\n"
           "checkpoint directory (shards with an index, model.safetensors or config.json)\n"
           "is one checkpoint; any other directory stands for its seeds: its *.safetensors\n"
           "files and checkpoint subdirectories, sorted, less the evaluation set and any\n"
           "teacher (train.mode = teacher, as train --make-teacher writes); the reports\n"
           "list what was left out. Without --eval, DIR/eval.safetensors is used (for\n"
           "checkpoints named one by one, eval.safetensors beside the first). For\n"
           "n >= 10 each landscape is sampled (--samples) and ranks carry a 95%% interval.\n"
           "Each pair's barriers and ranks carry a 95%% bootstrap interval over the\n"
           "evaluation set's samples (a network's sequences or images), in the text, JSON,\n"
           "CSV and LaTeX reports; the ranks', as landscape's, up to 2^25 per-unit losses\n"
           "(orders x points x units, each order's resampled as its row is done).\n"
           "A pool of networks (GPT-2, ViT or Hugging Face decoder folders such as\n"
           "Qwen3-MoE's, with MoE blocks sharing their frozen backbone, E holding\n"
           "input_ids, or pixel_values and labels): every pair's landscape of one MoE\n"
           "block (--layer) on the network's loss, as `landscape` computes it\n"
           "(exhaustive up to %d experts, else %d sampled orders, or --samples N), with\n"
           "the layer-only proxy's Spearman rho and its best order's network rank per\n"
           "pair; files beside the folders (their shared backbone shard) and teachers\n"
           "(role = teacher) are left out.\n\n"
           "  -e, --eval E      evaluation set\n"
           "  -T, --points T    interpolation points, 3..100000 (default 25)\n"
           "  -j, --json F      moescope.study/1: pairs (the landscape's keys, no order list)\n"
           "                    and summary {\"naive.barrier\": {mean, std, n}, ...}\n"
           "  -c, --csv F       one row per pair, then mean and std rows\n"
           "      --latex F     a booktabs table (\\usepackage{booktabs})\n"
           "  -p, --png F       per-pair barrier bars over a rank-percentile strip (SVG for\n"
           "                    F.svg; --size WxH and --font-scale K as for landscape)\n"
           "      --samples N   n >= 10: orders sampled per pair (default %d, as the explorer)\n"
           "      --seed S      sampling seed\n"
           "      --exhaustive  every order also for n = 10, 11 (3628800, 39916800 orders)\n"
           "      --threads K   worker threads (default: all CPUs, at most 8)\n"
           "      --no-wm       no weight matching inside each order\n"
           "      --no-center   no gate centring for the gate cost\n"
           "      --interpolate-backbone  networks: interpolate what the seeds do not share\n"
           "      --no-proxy    networks: no layer-only proxy\n"
           "      --screen K    screening, per pair: every order on a subset of the\n"
           "                    evaluation set, then the best K on it, every method's order\n"
           "                    and the skip-order on the whole set; the pair's ranks are\n"
           "                    among those survivors, beside each method's rank on the\n"
           "                    subset and the orders its bootstrap intervals cannot tell\n"
           "                    from its best (and how many of those were screened out)\n"
           "      --screen-units M  the subset: M of the set's samples, sequences or images,\n"
           "                    spread evenly (default: a quarter, at least 2)\n"
           "      --all-error-bars  the ranks' intervals up to 2^29 per-unit losses per pair\n"
           "                    (dense8's 40320 orders x 25 points x 360 samples: about 2\n"
           "                    CPU-minutes of resampling a pair)\n"
           "      --layer L     layer prefix (default moe)\n"
           "  -q, --quiet       no table on stdout, no progress line\n"
           "  -h, --help        this text\n",
           LS_OBJ_EXHAUSTIVE_MAX, LS_OBJ_SAMPLES, LS_SAMPLES);
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The pool: checkpoints given or found in directories, and a directory's
 * files left out of it with the reason (shown in every report). */
typedef struct {
    char *paths[ST_MAX_POOL];
    int np;
    char *left[ST_MAX_POOL];
    char *why[ST_MAX_POOL]; /* malloc'd */
    int nleft;
    char *dir_eval; /* a directory's eval.safetensors, when --eval was not given */
    const char *dirs[ST_MAX_POOL]; /* the pool directories named (inputs: no report inside) */
    int ndirs;
} st_pool;

static void pool_free(st_pool *P) {
    for (int i = 0; i < P->np; i++) free(P->paths[i]);
    for (int i = 0; i < P->nleft; i++) free(P->left[i]), free(P->why[i]);
    free(P->dir_eval);
}

static void pool_leave(st_pool *P, char *path, const char *why) {
    if (P->nleft < ST_MAX_POOL) {
        P->left[P->nleft] = path;
        P->why[P->nleft++] = ms_strdup(why);
    } else {
        free(path);
    }
}

/* Is the file a teacher (train.mode = teacher, as `train --make-teacher`
 * writes; a network folder: its MoE shard's role says teacher, as
 * sample-checkpoints/make_gpt.py writes "teacher (not a seed)")? A teacher is not
 * one of the seeds a directory's pool stands for. */
static int is_teacher(const char *path) {
    ckpt c;
    if (ckpt_open(&c, path, NULL)) return 0; // loading it later says what is wrong
    int t = 0;
    for (int k = 0; k < c.ntensors && !t; k++) {
        const st_file *f;
        const st_tensor *te;
        if ((k && !strstr(c.names[k], "gate.weight")) || ckpt_tensor(&c, c.names[k], &f, &te, NULL)) continue;
        const char *mode = st_meta(f, "train.mode"), *role = st_meta(f, "role");
        t = (mode && !strcmp(mode, "teacher")) || (role && !strncmp(role, "teacher", 7));
    }
    ckpt_close(&c);
    return t;
}

static int has_suffix(const char *s, const char *suf) {
    size_t l = strlen(s), k = strlen(suf);
    return l >= k && !strcmp(s + l - k, suf);
}

/* Is the directory one checkpoint in a model family's layout (an index of
 * shards, model.safetensors or config.json), rather than a pool of them? */
static int is_ckpt_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int yes = 0;
    struct dirent *de;
    while (!yes && (de = readdir(d)))
        yes = has_suffix(de->d_name, ".safetensors.index.json") || !strcmp(de->d_name, "config.json") ||
              !strcmp(de->d_name, "model.safetensors");
    closedir(d);
    return yes;
}

/* A directory's *.safetensors and checkpoint subdirectories, sorted, into the
 * pool; the evaluation set and teachers are left out (and recorded). */
static int add_dir(const char *arg, const char *e_path, st_pool *P, ms_err *err) {
    DIR *d = opendir(arg);
    if (!d) return ms_fail(err, "%s: cannot read the directory", arg);
    int first = P->np;
    struct dirent *de;
    size_t al = strlen(arg);
    const char *sep = al && arg[al - 1] == '/' ? "" : "/";
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.') continue;
        char *p = ms_malloc(al + l + 2);
        sprintf(p, "%s%s%s", arg, sep, de->d_name);
        struct stat st;
        int sub = !stat(p, &st) && S_ISDIR(st.st_mode);
        if (sub ? !is_ckpt_dir(p) : !has_suffix(de->d_name, ".safetensors")) {
            free(p);
            continue;
        }
        const char *ev = e_path ? e_path : P->dir_eval;
        if (ev && same_file(p, ev)) {
            free(p);
        } else if (!strcmp(de->d_name, "eval.safetensors")) {
            if (!ev) P->dir_eval = p; // the directory's evaluation set
            else pool_leave(P, p, "an evaluation set");
        } else if (is_teacher(p)) {
            pool_leave(P, p, "a teacher (train.mode or role = teacher), not a seed");
        } else if (P->np >= ST_MAX_POOL) {
            free(p);
            closedir(d);
            return ms_fail(err, "%s: more than %d checkpoints", arg, ST_MAX_POOL);
        } else {
            P->paths[P->np++] = p;
        }
    }
    closedir(d);
    qsort(P->paths + first, (size_t)(P->np - first), sizeof(char *), by_name);
    // a pool of network folders: files beside them (their shared backbone shard) are no seeds
    int nets = 0;
    for (int i = first; i < P->np; i++) nets += net_path_is_network(P->paths[i]);
    for (int i = first; nets && i < P->np; i++)
        if (!net_path_is_network(P->paths[i])) {
            // a folder that does not open says why (a seed whose config.json is a FIFO is
            // not "a shard the seeds share")
            ckpt c;
            ms_err e;
            struct stat sb;
            int broken = 0;
            if (!stat(P->paths[i], &sb) && S_ISDIR(sb.st_mode)) {
                if (ckpt_open(&c, P->paths[i], &e)) broken = 1;
                else ckpt_close(&c);
            }
            pool_leave(P, P->paths[i], broken ? e.msg : "not a network checkpoint (a shard the seeds share?)");
            memmove(&P->paths[i], &P->paths[i + 1], (size_t)(P->np - i - 1) * sizeof(char *));
            P->np--, i--;
        }
    if (P->np == first) return ms_fail(err, "%s: no checkpoints (*.safetensors) in the directory", arg);
    return 0;
}

/* A file, or a directory holding one checkpoint, is taken as it is; any
 * other directory stands for its seeds. */
static int add_input(const char *arg, const char *e_path, st_pool *P, ms_err *err) {
    struct stat st;
    if (stat(arg, &st)) return ms_fail(err, "%s: no such file or directory", arg);
    if (S_ISDIR(st.st_mode) && !is_ckpt_dir(arg)) {
        if (P->ndirs < ST_MAX_POOL) P->dirs[P->ndirs++] = arg;
        return add_dir(arg, e_path, P, err);
    }
    if (P->np >= ST_MAX_POOL) return ms_fail(err, "more than %d checkpoints", ST_MAX_POOL);
    P->paths[P->np++] = ms_strdup(arg);
    return 0;
}

/* the study's line (cli_progress_pairs): the pairs done, then each pair's rows;
 * moescope-mpi prints a line per pair */
static struct {
    int pair, npairs;
} SP;
static void on_pair(int done, int total) {
    SP.pair = done, SP.npairs = total;
    if (cli_partition) cli_progress("pairs", done, total);
}
static void on_rows(void *ctx, long done, long total) {
    if (!cli_partition) {
        cli_progress_pairs(SP.pair, SP.npairs, done, total);
        return;
    }
    char what[64]; // moescope-mpi: a network pair's evaluations, over every process
    snprintf(what, sizeof what, "study pair %d/%d", SP.pair + 1, SP.npairs);
    cli_progress(what, done, total);
}
static void on_step(void *ctx, const char *what, long done, long total) {
    char phase[64];
    snprintf(phase, sizeof phase, "study pair %d/%d: %s", SP.pair + 1, SP.npairs, what);
    cli_progress_step(ctx, phase, done, total);
}
/* the progress of study_run: on_pair, and on a terminal each pair's rows
 * (moescope-mpi: a network pair's evaluations, as lines) */
static void study_progress(ls_opts *lo, int npool, int on, int net) {
    SP.pair = 0, SP.npairs = npool * (npool - 1) / 2;
    lo->progress = on && (!cli_partition || net) ? on_rows : NULL;
    lo->phase = on && !cli_partition ? on_step : NULL;
}

static int study_outputs(const study *S, const char *e_path, const char *const *outs, ms_err *err) {
    if (outs[0] && study_write_json(S, e_path, outs[0], err)) return -1;
    if (outs[1] && study_write_csv(S, outs[1], err)) return -1;
    if (outs[2] && study_write_latex(S, outs[2], err)) return -1;
    if (outs[3] && study_write_png(S, cli_figure_size(), outs[3], err)) return -1;
    return 0;
}

/* The finished study S with the pool's left-out files: the table, the reports; S freed. */
static int study_report(study *S, const st_pool *P, const char *e_path, const char *const *outs, int show) {
    ms_err err;
    int rc = 0;
    S->nleft = P->nleft;
    S->left = (const char *const *)P->left;
    S->left_why = (const char *const *)P->why;
    if (show) study_print(S, stdout);
    if (study_outputs(S, e_path, outs, &err)) rc = cli_error("%s", err.msg);
    study_free(S);
    return rc;
}

/* the pool as subjects of S0's kind: S[0] is S0 (with the evaluation set), each
 * next one loaded alone (a network's checked against the first: one architecture,
 * one frozen backbone unless --interpolate-backbone) */
static int load_pool(const st_pool *P, subject *S0, const char *layer, int interp, subject *S) {
    S[0] = *S0;
    int net = S0->kind == SUBJECT_NETWORK;
    for (int i = 1; i < P->np; i++) {
        subject_spec sp = {.kind = S0->kind, .pa = P->paths[i], .pb = net ? P->paths[0] : NULL, .layer = layer,
                           .interp_backbone = interp, .mapped_pair = 1, .chosen_mapped = 1};
        int rc = cli_subject_load(&S[i], &sp, "study", USAGE);
        if (rc) return rc; // the caller frees those before
        if (net) net_free(&S[i].net.B), S[i].b = NULL; // the first, for the checks only
    }
    // every MoE block stays mapped, unless one checkpoint's cannot be (another layout of
    // the family): then that block in floats in all, as a pair's (the pairs mix them)
    for (int b = 0; net && b < S[0].net.A.cfg.nmoe; b++) {
        int mixed = 0;
        for (int i = 1; i < P->np; i++)
            mixed |= moe_is_mapped(&S[i].net.A.moe[b]) != moe_is_mapped(&S[0].net.A.moe[b]) ||
                     moe_shared_mapped(&S[i].net.A.moe[b]) != moe_shared_mapped(&S[0].net.A.moe[b]);
        for (int i = 0; i < P->np && mixed; i++) net_block_floats(&S[i].net.A, b);
    }
    return 0;
}

/* after study_run: the error, or (rank 0 of moescope-mpi, or the one process) the report */
static int study_finish(int failed, study *S, int here, const st_pool *P, const char *e_path,
                        const char *const *outs, int show, const ms_err *err) {
    if (failed) {
        cli_progress_end();
        return cli_error("%s", err->msg);
    }
    if (!here) {
        study_free(S);
        return 0;
    }
    cli_progress_end();
    return study_report(S, P, e_path, outs, show);
}

static int run_study(const st_pool *P, const subject *S, const char *e_path, ls_opts *lo,
                     const ls_screen_opts *scr, const char *const *outs, int show) {
    char *const *paths = P->paths;
    int np = P->np;
    ms_err err;
    moe_model *M = ms_calloc((size_t)np, sizeof(moe_model));
    for (int i = 0; i < np; i++) M[i] = S[i].A; // views
    study Sd;
    lo->part = cli_partition; // moescope-mpi: every landscape split over its processes
    int here = cli_reports_here(); // rank 0 of moescope-mpi alone reports
    int bar = cli_progress_wanted(show); // moescope-mpi: lines (cli_progress)
    study_progress(lo, np, bar, 0);
    int failed = study_run(M, (const char *const *)paths, np, &S[0].E, lo, scr, bar ? on_pair : NULL, &Sd, &err);
    int rc = study_finish(failed, &Sd, here, P, e_path, outs, show, &err);
    free(M);
    return rc;
}

/* ---- a pool of networks: every pair's landscape on the network's loss ---- */

typedef struct {
    subject *nets;          /* (np) each with its network A loaded; E in nets[0] */
    const ls_opts *lo;
    align_opts other;
    int interp, proxy;
    net_objective *cur, *cur_sub;
    const net_evalset *sub; /* the screening's subset (study --screen), NULL without */
    evalset *inputs;        /* (np) checkpoint i's block inputs for the proxy, made on first use */
} net_study;

/* pair (i, j)'s objective on E (the whole set, or the screening's subset) into *no */
static int ns_objective(net_study *s, int i, int j, const net_evalset *E, net_objective **no,
                        const ls_objective **obj, ms_err *err) {
    net_obj_opts o = {.chosen = s->nets[0].net.block, .other = s->other, .interp_backbone = s->interp,
                      .par = {.threads = s->lo->nthreads},
                      // moescope-mpi: A's and B's evaluations each on one process, not on all
                      .ends_later = cli_partition && cli_partition->size > 1};
    if (net_objective_new(&s->nets[i].net.A, &s->nets[j].net.A, E, &o, no, err)) return -1;
    *obj = net_objective_view(*no);
    return 0;
}

static int ns_make(void *ctx, int i, int j, const ls_objective **obj, ms_err *err) {
    net_study *s = ctx;
    return ns_objective(s, i, j, &s->nets[0].net.E, &s->cur, obj, err);
}

static int ns_make_sub(void *ctx, int i, int j, const ls_objective **obj, ms_err *err) {
    net_study *s = ctx;
    return ns_objective(s, i, j, s->sub, &s->cur_sub, obj, err);
}

static void ns_done(void *ctx) {
    net_study *s = ctx;
    net_objective_free(s->cur);
    net_objective_free(s->cur_sub);
    s->cur = s->cur_sub = NULL;
}

static int ns_proxy(void *ctx, int i, int j, landscape *L, ms_err *err) {
    net_study *s = ctx;
    if (!cli_reports_here()) return 0; // moescope-mpi: only rank 0 holds the table
    int b = s->nets[0].net.block;
    net_par par = {.threads = s->lo->nthreads};
    if (!s->inputs[i].inputs && net_block_inputs(&s->nets[i].net.A, &s->nets[0].net.E, b, &par, &s->inputs[i], err))
        return -1;
    return net_landscape_proxy(s->nets[i].a, s->nets[j].a, &s->inputs[i], s->lo, L, err);
}

static int run_study_net(const st_pool *P, subject *nets, const char *e_path, ls_opts *lo,
                         const ls_screen_opts *scr, const char *const *outs, int show, int interp, int proxy) {
    ms_err err;
    // the proxy's block inputs are made after each pair's landscape: refuse them before
    if (proxy && net_inputs_mem_check(&nets[0].net.A, &nets[0].net.E, nets[0].net.block, &err))
        return cli_error("%s", err.msg);
    net_study ns = {.nets = nets, .lo = lo, .interp = interp, .proxy = proxy};
    align_opts_default(&ns.other);
    ns.other.center = lo->center, ns.other.wm_stage = lo->wm;
    ns.inputs = ms_calloc((size_t)P->np, sizeof(evalset));
    net_evalset Es;
    memset(&Es, 0, sizeof Es);
    if (scr->keep) {
        net_evalset_subset(&nets[0].net.E, ls_screen_units(nets[0].net.E.N, scr), &Es);
        ns.sub = &Es;
    }
    study_objective so = {ns_make, ns_make_sub, ns_done, proxy ? ns_proxy : NULL, &ns};
    moe_model *M = ms_calloc((size_t)P->np, sizeof(moe_model)); // each one's chosen block
    for (int i = 0; i < P->np; i++) M[i] = *nets[i].a;
    study S;
    lo->part = cli_partition; // moescope-mpi: each pair's evaluations split over its processes
    int here = cli_reports_here(), rc = 0, bar = cli_progress_wanted(show);
    study_progress(lo, P->np, bar, 1);
    int failed = study_run_obj(M, (const char *const *)P->paths, P->np, &so, lo, scr, bar ? on_pair : NULL, &S, &err);
    rc = study_finish(failed, &S, here, P, e_path, outs, show, &err);
    if (scr->keep) net_evalset_free(&Es);
    for (int i = 0; i < P->np; i++) evalset_free(&ns.inputs[i]);
    free(ns.inputs);
    free(M);
    return rc;
}

int cmd_study(int argc, char **argv) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},  {"json", required_argument, 0, 'j'},
        {"csv", required_argument, 0, 'c'},   {"latex", required_argument, 0, 'L'},
        {"png", required_argument, 0, 'p'},   {"layer", required_argument, 0, 'l'},
        {"quiet", no_argument, 0, 'q'},       {"help", no_argument, 0, 'h'},
        {"no-center", no_argument, 0, 'C'},   {"all-error-bars", no_argument, 0, 'B'},
        CLI_LANDSCAPE_OPTIONS,
        CLI_NETWORK_OPTIONS,                  CLI_FIGURE_OPTIONS,
        CLI_SCREEN_OPTIONS,                   {0, 0, 0, 0}};
    ls_opts lo;
    ls_opts_default(&lo);
    ls_screen_opts scr = {0, 0};
    const char *e_path = NULL, *layer = NULL, *outs[4] = {NULL, NULL, NULL, NULL};
    int show = 1, ch, interp = 0, proxy = 1, orders_given = 0;
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
        case 'q': show = 0, progress_silence(); break; // the library's phases too
        case 'I': interp = 1; break;
        case 'N': proxy = 0; break;
        case 'C': lo.center = 0; break;
        case 'B': lo.all_error_bars = 1; break;
        case 'h': help(); return 0;
        default: {
            orders_given |= cli_orders_given(ch);
            int r = cli_landscape_option(&lo, ch, optarg, "study", USAGE);
            if (r < 0) r = cli_figure_option(ch, optarg, "study", USAGE);
            if (r < 0) r = cli_screen_option(&scr, ch, optarg, "study", USAGE);
            if (r > 0) return r;
            if (r < 0) return cli_option_error(USAGE, "study", ch, argc, argv);
        }
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "study: no checkpoints given");
    if (scr.units && !scr.keep) return cli_usage_error(USAGE, "study: --screen-units needs --screen K");
    if (scr.keep && cli_partition)
        return cli_usage_error(USAGE, "study: --screen runs in one process, not under moescope-mpi");
    st_pool P;
    memset(&P, 0, sizeof P);
    int rc = 0;
    ms_err err;
    for (int i = optind; i < argc && !rc; i++)
        if (add_input(argv[i], e_path, &P, &err)) rc = cli_error("%s", err.msg);
    if (!e_path) e_path = P.dir_eval;
    char guess[4096]; /* checkpoints named one by one: the rule of every command, beside the first */
    if (!rc && !e_path && P.np > 0) e_path = cli_eval_or_default(NULL, P.paths[0], guess, sizeof guess);
    if (!rc && !e_path) rc = cli_usage_error(USAGE, "study: --eval E is required (no eval.safetensors beside the checkpoints)");
    if (!rc && P.np < 2) rc = cli_usage_error(USAGE, "study: need at least two checkpoints, got %d", P.np);
    if (!rc) {
        // the pool's directories are inputs too: a report never replaces a file there
        // (a backbone, a checkpoint the study left out, a README)
        const char *ins[2 * ST_MAX_POOL + 1];
        int nin = 0;
        for (int k = 0; k < P.np; k++) ins[nin++] = P.paths[k];
        for (int k = 0; k < P.ndirs; k++) ins[nin++] = P.dirs[k];
        ins[nin++] = e_path;
        const out_spec op[4] = {{outs[0], "--json", OUT_FILE}, {outs[1], "--csv", OUT_FILE},
                                {outs[2], "--latex", OUT_FILE}, {outs[3], "--png", OUT_FILE}};
        rc = cli_check_outputs("study", USAGE, op, 4, ins, nin);
    }
    subject S0, *S = NULL;
    // a network's MoE blocks stay mapped (the pool's too: load_pool)
    subject_spec sp = {.pa = P.np ? P.paths[0] : NULL, .e_path = e_path, .layer = layer, .interp_backbone = interp,
                       .mapped = 1};
    if (!rc) rc = cli_subject_load(&S0, &sp, "study", USAGE);
    if (!rc) {
        S = ms_calloc((size_t)P.np, sizeof(subject));
        rc = load_pool(&P, &S0, layer, interp, S);
    }
    if (!rc && S[0].kind == SUBJECT_NETWORK) {
        cli_net_landscape_defaults(&lo, orders_given);
        rc = run_study_net(&P, S, e_path, &lo, &scr, outs, show, interp, proxy);
    } else if (!rc) {
        rc = run_study(&P, S, e_path, &lo, &scr, outs, show);
    }
    for (int i = 0; S && i < P.np && S[i].pa; i++) subject_free(&S[i]);
    free(S);
    pool_free(&P);
    return rc;
}
