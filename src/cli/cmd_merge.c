/* cmd_merge.c - `moescope merge A B --alpha a -o OUT`: align B to A,
 * then interpolate every parameter, (1-a) A + a B' (a model soup; a is the
 * weight of B). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "core/ms_text.h"
#include "io/checkpoint.h"
#include "cli/cli.h"
#include "model/evaluator.h"
#include "landscape/landscape.h"
#include "io/model_io.h"
#include "io/provenance.h"

#define MERGE_MAX_ALPHA 100.0

static const char *USAGE =
    "moescope merge A.safetensors B.safetensors -o OUT [--alpha 0.5] [--method gate|expert|activation|router] "
    "[--no-center] [--no-order] [--no-wm] [--order 2,0,3,1] [--layer L] [--eval E [--alpha-sweep K]]";

static void help(void) {
    printf("usage: %s\n\n"
           "Align B to A (as `moescope align`), then write (1-alpha) A + alpha B' for every\n"
           "parameter: gate, experts, shared experts (and the head when A's and B's differ,\n"
           "with a warning). Nothing else is merged: every other tensor is copied through\n"
           "unchanged from A (the reference basis), in its own dtype, and A's metadata\n"
           "is kept.\n\n"
           "options:\n"
           "  -o, --output OUT  the merged checkpoint (must not be A or B)\n"
           "  -a, --alpha A     weight of B (default 0.5; 0 gives A, 1 gives aligned B)\n"
           "  -m, --method M    the cost for the expert order (default expert): gate, expert,\n"
           "                    or with --eval E activation, router (cost --help)\n"
           "      --no-center   do not centre the gate rows (gate method)\n"
           "      --no-order    skip the expert-order step (identity order)\n"
           "      --no-wm       skip weight matching\n"
           "      --order LIST  use this expert order (e.g. 2,0,3,1) instead of solving\n"
           "  -l, --layer L     layer prefix (default moe); all: every MoE layer (a network's\n"
           "                    MoE blocks), each aligned and merged on its own, in one output\n"
           "  -e, --eval E      also print the loss and accuracy on E of A, B, the soup and\n"
           "                    the naive soup ((1-alpha) A + alpha B, B not aligned)\n"
           "      --alpha-sweep K  with --eval: loss and accuracy of both soups at K values\n"
           "                    of alpha from 0 to 1, with their barriers\n"
           "  -h, --help        this help\n",
           USAGE);
}

/* loss and accuracy of m on E (layer-only statistic without a head) */
static int eval_line(const char *name, const moe_model *m, const evalset *E) {
    moe_eval_result r;
    ms_err err;
    int head = m->cfg.has_head;
    if ((head ? moe_eval(m, E, &r, &err) : moe_eval_layer(m, E, &r, &err))) return cli_error("%s", err.msg);
    if (r.accuracy >= 0) printf("  %-32s loss %.6f  accuracy %.2f%%\n", name, r.loss, 100 * r.accuracy);
    else printf("  %-32s %s %.6g\n", name, head ? "loss" : "mean D(x)^2", r.loss);
    moe_eval_result_free(&r);
    return 0;
}

/* the two curves naive c[0] and aligned c[1] at K values of alpha */
static void print_sweep(const ls_curve *c, int K) {
    printf("\n%8s %14s %10s %14s %10s\n", "alpha", "naive loss", "acc", "aligned loss", "acc");
    for (int m = 0; m < K; m++) {
        printf("%8.4f %14.6f", ls_t(m, K), c[0].loss[m]);
        if (c[0].acc) printf(" %9.2f%%", 100 * c[0].acc[m]);
        else printf(" %10s", "-");
        printf(" %14.6f", c[1].loss[m]);
        if (c[1].acc) printf(" %9.2f%%\n", 100 * c[1].acc[m]);
        else printf(" %10s\n", "-");
    }
    printf("loss barrier: naive %.6f, aligned %.6f\n", c[0].barrier, c[1].barrier);
}

/* both soups over alpha in [0, 1]: the curves A -> B (naive) and A -> B' */
static int alpha_sweep(const moe_model *A, const moe_model *B, const moe_model *Bp,
                       const evalset *E, int K) {
    ls_curve c[2];
    ms_err err;
    memset(c, 0, sizeof c);
    if (curve_compute(A, B, E, K, &c[0], &err) || curve_compute(A, Bp, E, K, &c[1], &err)) {
        ls_curve_free(&c[0]);
        return cli_error("%s", err.msg);
    }
    print_sweep(c, K);
    ls_curve_free(&c[0]);
    ls_curve_free(&c[1]);
    return 0;
}

/* network n's loss and accuracy with its MoE block b replaced by layer */
static int net_line(const char *name, const net_model *net, int b, const moe_model *layer, const net_evalset *E) {
    const moe_model **blocks = ms_malloc((size_t)net->cfg.nmoe * sizeof(moe_model *));
    for (int i = 0; i < net->cfg.nmoe; i++) blocks[i] = i == b && layer ? layer : &net->moe[i];
    net_run r = {.moe = blocks};
    net_eval_result res;
    ms_err err;
    int rc = net_evaluate(net, E, NULL, &r, NULL, &res, &err);
    free(blocks);
    if (rc) return cli_error("%s", err.msg);
    printf("  %-32s loss %.6f  accuracy %.2f%%\n", name, res.loss, 100 * res.accuracy);
    net_eval_result_free(&res);
    return 0;
}

/* A network's soups on its token set: the network's loss with the block souped (the
 * other blocks A's: the merge soups this block alone); the sweep moves every MoE
 * block (the network objective: naive, and aligned by the expert cost) */
static int merge_evaluate_net(const moe_model *A, const moe_model *B, const moe_model *Bp, const moe_model *M,
                              const moe_model *N, double alpha, const char *e_path, int sweep) {
    subject S;
    // the networks' MoE blocks stay mapped (the other blocks interpolated per panel; the
    // souped block is the caller's)
    subject_spec sp = {.kind = SUBJECT_NETWORK, .pa = A->path, .pb = B->path, .e_path = e_path, .layer = A->layer,
                       .mapped_pair = 1, .chosen_mapped = 1};
    if (cli_subject_load(&S, &sp, "merge", "")) return 1;
    const subject_net *n = &S.net;
    char lab[64];
    printf("\non %s (the network's %s loss; the other MoE blocks A's):\n", e_path, net_loss_kind(&n->A));
    int b = n->block, rc = net_line("A", &n->A, b, NULL, &n->E) || net_line("B", &n->B, b, NULL, &n->E);
    snprintf(lab, sizeof lab, "soup (1 - %g) A + %g B'", alpha, alpha);
    rc = rc || net_line(lab, &n->A, b, M, &n->E) || net_line("naive soup, B not aligned", &n->A, b, N, &n->E);
    net_objective *no = NULL;
    align_opts other;
    align_opts_default(&other);
    if (!rc && sweep && !(rc = cli_subject_objective(&S, &other, 0, NULL, &no))) {
        ls_curve c[2];
        memset(c, 0, sizeof c);
        ms_err err;
        const ls_objective *ob = net_objective_view(no);
        if (curve_compute_obj(A, B, ob, LS_VAR_NAIVE, sweep, NULL, &c[0], &err) ||
            curve_compute_obj(A, Bp, ob, LS_VAR_MAIN, sweep, NULL, &c[1], &err))
            rc = cli_error("%s", err.msg);
        else
            print_sweep(c, sweep);
        ls_curve_free(&c[0]);
        ls_curve_free(&c[1]);
    }
    net_objective_free(no);
    subject_free(&S);
    return rc ? 1 : 0;
}

static int merge_evaluate(const moe_model *A, const moe_model *B, const moe_model *Bp,
                          const moe_model *M, double alpha, const char *e_path, int sweep) {
    evalset E;
    ms_err err;
    if (net_evalset_is(e_path)) {
        moe_model N;
        moe_clone(&N, A);
        moe_interpolate(&N, A, B, alpha);
        int rc = merge_evaluate_net(A, B, Bp, M, &N, alpha, e_path, sweep);
        moe_free(&N);
        return rc;
    }
    prov_add_input(e_path);
    if (evalset_load(&E, e_path, &err)) return cli_error("%s", err.msg);
    if (cli_check_capture(&E, A)) {
        evalset_free(&E);
        return 1;
    }
    moe_model N; // the naive soup: B without alignment
    moe_clone(&N, A);
    moe_interpolate(&N, A, B, alpha);
    char lab[64];
    printf("\non %s:\n", e_path);
    int rc = eval_line("A", A, &E) || eval_line("B", B, &E);
    snprintf(lab, sizeof lab, "soup (1 - %g) A + %g B'", alpha, alpha);
    rc = rc || eval_line(lab, M, &E);
    snprintf(lab, sizeof lab, "naive soup, B not aligned");
    rc = rc || eval_line(lab, &N, &E);
    if (!rc && sweep) rc = alpha_sweep(A, B, Bp, &E, sweep);
    moe_free(&N);
    evalset_free(&E);
    return rc ? 1 : 0;
}

/* M = (1 - alpha) A + alpha B' (M may be A itself), a shared frozen head kept as its
 * bytes, checked for overflow, the merge recorded in the metadata: 0, else 1 after the
 * message */
static int soup_make(moe_model *M, const moe_model *A, const moe_model *Bp, double alpha, const char *alpha_str,
                     const char *pa, const char *pb) {
    int same_head = moe_heads_equal(A, Bp);
    if (!same_head)
        fprintf(stderr, "moescope: warning: the heads of %s and %s differ; interpolating them "
                        "too (the setting assumes a frozen, shared head)\n", pa, pb);
    // M starts as A (architecture, A's metadata), then takes the interpolation
    if (M != A) moe_clone(M, A);
    moe_interpolate(M, A, Bp, alpha);
    if (same_head && M->cfg.has_head) {
        // a frozen head shared by A and B stays its bytes ((1-a) x + a x may round off x)
        const moe_config *c = &M->cfg;
        memcpy(M->head_w, Bp->head_w, (size_t)c->C * (size_t)c->d * sizeof(float)); // (C, d)
        memcpy(M->head_b, Bp->head_b, (size_t)c->C * sizeof(float));                // (C)
        if (c->has_norm) {
            memcpy(M->norm_w, Bp->norm_w, (size_t)c->d * sizeof(float)); // (d)
            memcpy(M->norm_b, Bp->norm_b, (size_t)c->d * sizeof(float)); // (d)
        }
    }
    // (1 - alpha) A + alpha B' of values near the limits can overflow: blame the merge
    char label[80], *path = M->path;
    ms_err err;
    snprintf(label, sizeof label, "the merge (1 - %g) A + %g B'", alpha, alpha);
    M->path = label;
    int bad = moe_range_check(M, NULL, &err);
    M->path = path;
    if (bad) return cli_error("%s", err.msg);
    moe_meta_set(M, "moescope.merge.a", pa);
    moe_meta_set(M, "moescope.merge.b", pb);
    moe_meta_set(M, "moescope.merge.alpha", alpha_str);
    for (int i = 0; i < Bp->nmeta; i++) // how B was aligned
        if (!strncmp(Bp->meta[i].key, "moescope.align.", 15)) moe_meta_set(M, Bp->meta[i].key, Bp->meta[i].value);
    return 0;
}

/* --layer all: each MoE layer's soup in turn, written over the chain that starts at A */
typedef struct {
    const cli_align_args *a;
    double alpha;
    const char *alpha_str;
    const char *src, *dst; /* the step's checkpoint chain: read from src, write dst */
} merge_all;

static int merge_keep(void *ctx, moe_model *A, moe_model *B, const align_result *res) {
    const merge_all *m = ctx;
    (void)res;
    return soup_make(A, A, B, m->alpha, m->alpha_str, m->a->pa, m->a->pb) || cli_save_checkpoint(A, m->src, m->dst);
}

static int merge_step(void *ctx, int i, const char *layer, const char *src, const char *dst) {
    merge_all *m = ctx;
    (void)i;
    m->src = src, m->dst = dst;
    return cli_align_layer(m->a, layer, m->a->pb, merge_keep, m);
}

static int merge_every_layer(cli_align_args *a, int argc, char **argv, double alpha, const char *alpha_str) {
    int orc = cli_every_layer_args(a, argc, argv, "merge", USAGE, 0); // the output is A's chain
    if (orc) return orc;
    if (a->e_path)
        return cli_usage_error(USAGE, "merge: --eval evaluates one layer's soup: name the layer with --layer");
    merge_all ctx = {a, alpha, alpha_str, NULL, NULL};
    int rc = cli_each_layer(a->pa, a->pa, a->out_path, merge_step, &ctx);
    if (!rc)
        printf("weight matching %s\nwrote %s = (1 - %g) A + %g B' in every MoE layer\n", a->ao.wm_stage ? "on" : "off",
               a->out_path, alpha, alpha);
    return rc;
}

int cmd_merge(int argc, char **argv) {
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"alpha", required_argument, 0, 'a'},
        {"method", required_argument, 0, 'm'}, {"no-center", no_argument, 0, 'C'},
        {"no-order", no_argument, 0, 'O'},     {"no-wm", no_argument, 0, 'W'},
        {"order", required_argument, 0, 'r'},  {"layer", required_argument, 0, 'l'},
        {"eval", required_argument, 0, 'e'},   {"alpha-sweep", required_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    const char *e_path = NULL;
    int sweep = 0;
    cli_align_args a;
    cli_align_args_init(&a);
    const char *alpha_str = "0.5";
    double alpha = 0.5;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "o:a:m:l:e:h", opts, NULL)) != -1) {
        if (ch == 'h') {
            help();
            return 0;
        }
        if (ch == 'e' || ch == 'S') {
            long long v;
            int rc;
            if (ch == 'e') e_path = optarg;
            else if ((rc = cli_int_option(USAGE, "merge", "--alpha-sweep", optarg, 2, 1001, &v)))
                return rc;
            else sweep = (int)v;
            continue;
        }
        if (ch == 'a') {
            char *end;
            alpha = strtod(optarg, &end);
            if (end == optarg || *end || !isfinite(alpha))
                return cli_usage_error(USAGE, "merge: --alpha needs a number, not '%s'", optarg);
            // beyond this the soup is an extrapolation by orders of magnitude (and 1e20
            // times a weight overflows float32): a mistake, not a merge
            if (fabs(alpha) > MERGE_MAX_ALPHA)
                return cli_usage_error(USAGE, "merge: --alpha %s is out of range (-%g..%g; 0 "
                                              "gives A, 1 gives aligned B)",
                                       optarg, MERGE_MAX_ALPHA, MERGE_MAX_ALPHA);
            alpha_str = optarg;
            continue;
        }
        int r = cli_align_option(&a, ch, optarg, "merge", USAGE);
        if (r > 0) return r;
        if (r < 0)
            return cli_option_error(USAGE, "merge", ch, argc, argv);
    }
    if (sweep && !e_path) return cli_usage_error(USAGE, "merge: --alpha-sweep needs --eval E");
    a.out_like_a = 1;
    a.e_path = e_path;
    if (cli_layer_is_all(a.layer)) return merge_every_layer(&a, argc, argv, alpha, alpha_str);
    int rc = cli_align_inputs(&a, argc, argv, "merge", USAGE);
    if (rc) return rc;
    if (e_path) { // evaluated: the shared experts' products as the float path's (sgemm on the whole)
        moe_shared_to_floats(&a.A);
        moe_shared_to_floats(&a.B);
    }
    const char *pa = a.pa, *pb = a.pb;
    const align_opts *ao = &a.ao;
    moe_model *A = &a.A, Bp_own, M_own;
    memset(&Bp_own, 0, sizeof Bp_own);
    memset(&M_own, 0, sizeof M_own);
    // without --eval nothing needs the unaligned B or A again: B is aligned where it
    // lies and A becomes the soup (a real layer is gigabytes: no extra copies)
    // (mapped layers: B' views of B's file and the soup mixes of A's and B's, formed a
    // slot at a time as the output is written: no copy is large)
    int inplace = !e_path && !a.ma;
    moe_model *Bp = inplace ? &a.B : &Bp_own, *M = inplace ? A : &M_own;
    ms_err err;
    align_result res;
    if (a.ma ? align_models_mapped(A, &a.B, ao, Bp, &res, &err)
             : inplace ? align_models_inplace(A, &a.B, ao, &res, &err)
                       : align_models(A, &a.B, ao, Bp, &res, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    if (soup_make(M, A, Bp, alpha, alpha_str, pa, pb)) {
        rc = 1;
        goto freeall;
    }
    if (cli_save_checkpoint(M, pa, a.out_path)) {
        rc = 1;
    } else {
        cli_print_order(&a, &res, M->cfg.n);
        printf("weight matching %s\nwrote %s = (1 - %g) A + %g B'\n", ao->wm_stage ? "on" : "off",
               a.out_path, alpha, alpha);
        if (e_path) rc = merge_evaluate(A, &a.B, Bp, M, alpha, e_path, sweep);
    }
freeall:
    moe_free(&M_own);
    moe_free(&Bp_own);
    align_result_free(&res);
done:
    cli_align_args_free(&a);
    return rc;
}
