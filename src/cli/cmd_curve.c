/* cmd_curve.c - `moescope curve A B --eval E`: the loss and accuracy along the
 * straight line from A to the aligned B for the naive alignment,
 * skip-order, the chosen alignment and any orders asked for. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "landscape/bootstrap.h"
#include "cli/cli.h"
#include "core/progress.h"
#include "plot/figures.h"
#include "io/provenance.h"
#include "landscape/landscape.h"
#include "model/symmetry.h"
#include "plot/plot_write.h"

static const char *USAGE =
    "moescope curve A.safetensors B.safetensors [--eval E] [--order 2,0,3,1]... [--points 25] "
    "[--method gate|expert|activation|router] [--no-center] [--no-wm] [--png F] [--csv F] [--layer L] [--size WxH] [--font-scale K] "
    "[--interpolate-backbone] [--adaptive] [--json F]";

#define MAX_ORDERS 8
/* --adaptive: the t bracket the golden-section search narrows the peak to */
#define ADAPTIVE_TOL 0.005

static void help(void) {
    printf("usage: %s\n\n"
           "The loss (and accuracy) at T points t = 0 .. 1 on the straight line from A\n"
           "(t = 0) to B re-expressed in A's basis (t = 1), for: naive (identity order, no\n"
           "weight matching), skip-order (identity order + weight matching), the chosen\n"
           "alignment (--method, default expert) and each --order given (with weight\n"
           "matching), with the loss barrier, accuracy barrier and loss AUC of each.\n\n"
           "options:\n"
           "  -e, --eval E      evaluation set (default: eval.safetensors beside A)\n"
           "  -o, --order LIST  also plot this expert order (repeatable, up to %d)\n"
           "  -T, --points T    interpolation points, 3..100000 (default 25)\n"
           "  -m, --method M    the chosen alignment's cost (default expert): gate, expert, or\n"
           "                    activation, router (on E's inputs; cost --help)\n"
           "      --no-center   no gate centring (gate method)\n"
           "      --no-wm       no weight matching in the chosen alignment and the orders\n"
           "  -p, --png F       plot the loss curves (with the chord) as PNG\n"
           "  -c, --csv F       the curves as CSV: t, <name>_loss, <name>_acc, ...\n"
           "  -j, --json F      the curves as JSON, each with its barrier's 95%% bootstrap\n"
           "                    interval over the evaluation set's units (barrier_ci95) and\n"
           "                    every unit's loss at every point (unit_loss)\n"
           CLI_FIGURE_HELP
           "  -l, --layer L     layer prefix (default moe)\n"
           "      --interpolate-backbone  networks: interpolate the tensors outside the MoE\n"
           "                    blocks too (they may then differ)\n"
           "\nA network (E holds input_ids or pixel_values): the curves of one MoE block\n"
           "(--layer: its index) on the network's loss (a GPT-2's next-token, a ViT's class\n"
           "cross-entropy); the other MoE blocks are interpolated at the\n"
           "same t, aligned as the curve says (naive, skip-order) or by --method.\n"
           "      --adaptive    networks: each barrier refined past the grid by golden-section\n"
           "                    search in its best grid point's bracket, to t within 0.005\n"
           "                    (a coarse --points 9 and a few more evaluations for the peak)\n"
           "  -h, --help        this help\n",
           USAGE, MAX_ORDERS);
}

static void print_num(double v, const char *fmt) {
    if (isnan(v)) printf(" %12s", "-");
    else printf(fmt, v);
}

/* naive, skip-order, the method's alignment, then each --order: the curves
 * (into curves[], names[]); their number, or -1 (err) with nothing left to free. */
static int curves_compute(const moe_model *A, const moe_model *B, const evalset *E,
                          const ls_objective *obj, int T, cost_method method, int center, int wm,
                          int orders[][LS_MAX_N], int norder, ls_curve *curves, char names[][48],
                          ls_refined *ref, ms_err *err) {
    int n = A->cfg.n, ncurves = 0;
    // one line over every curve's inner points (the ends are the end points' losses);
    // a network's evaluations take seconds each, weight matching interrupts it between curves
    double since = timing_now(), total = (double)(3 + norder) * (T - 2);
    for (int k = 0; k < 3 + norder; k++) {
        align_opts ao;
        align_opts_default(&ao);
        ao.center = center;
        ao.method = method;
        // the data-driven methods' tokens: the layer's set, or the block's inputs the network keeps
        if (obj) ao.X = obj->inputs, ao.N = obj->ninputs, ao.d = A->cfg.d;
        else if (E) ao.X = E->inputs, ao.N = E->N, ao.d = E->d;
        if (k == 0) {
            ao.order_stage = 0, ao.wm_stage = 0;
            snprintf(names[k], sizeof names[k], "naive");
        } else if (k == 1) {
            ao.order_stage = 0, ao.wm_stage = 1;
            snprintf(names[k], sizeof names[k], "skip_order");
        } else if (k == 2) {
            ao.wm_stage = wm;
            snprintf(names[k], sizeof names[k], "%s", cost_method_name(method));
        } else {
            ao.wm_stage = wm;
            ao.order = orders[k - 3];
            ao.any_order = 1; // a group-splitting order is a curve to another function
            if (!moe_order_in_group(&A->cfg, ao.order))
                fprintf(stderr, "moescope: note: order %d splits the router's expert groups: B "
                                "reordered by it computes another function, and its curve ends "
                                "there\n", k - 3 + 1);
            snprintf(names[k], sizeof names[k], "order%d", k - 3 + 1);
        }
        moe_model Bp;
        align_result res;
        // a network pair's mapped block: B aligned as views of its file, each point's
        // interpolation a mix formed per panel (no float copy of the layer)
        int mapped = moe_is_mapped(A) && moe_is_mapped(B);
        if ((mapped ? align_models_mapped : align_models)(A, B, &ao, &Bp, &res, err)) {
            for (int i = 0; i < ncurves; i++) ls_curve_free(&curves[i]);
            return -1;
        }
        // a network's naive and skip-order curves move every MoE block that way
        int var = k == 0 ? LS_VAR_NAIVE : k == 1 ? LS_VAR_SKIP : LS_VAR_MAIN;
        progress_begin_since(CURVE_PHASE, total, "points", since);
        progress_set((double)k * (T - 2));
        int c = obj ? curve_compute_obj(A, &Bp, obj, var, T, NULL, &curves[k], err)
                    : curve_compute(A, &Bp, E, T, &curves[k], err);
        if (!c) memcpy(curves[k].order, res.order, (size_t)n * sizeof(int));
        if (!c && ref) c = curve_refine_obj(A, &Bp, obj, var, &curves[k], ADAPTIVE_TOL, &ref[k], err);
        moe_free(&Bp);
        align_result_free(&res);
        if (c) {
            for (int i = 0; i <= k; i++) ls_curve_free(&curves[i]);
            return -1;
        }
        ncurves = k + 1;
    }
    progress_end();
    return ncurves;
}

/* The summary (order, barrier, accuracy barrier, loss AUC per curve), then
 * the curves' values at every t. */
static void curves_print(const ls_curve *curves, char names[][48], int ncurves, int n, int T, ls_kind kind) {
    printf("%-12s %-*s %12s %12s %12s\n", "curve", n * 3 > 12 ? n * 3 : 12, "order", "barrier",
           "acc_barrier", "loss_auc");
    for (int k = 0; k < ncurves; k++) {
        char buf[LS_MAX_N * 4 + 1];
        moe_order_format(buf, sizeof buf, curves[k].order, n);
        printf("%-12s %-*s", names[k], n * 3 > 12 ? n * 3 : 12, buf);
        print_num(curves[k].barrier, " %12.9f");
        print_num(curves[k].acc_barrier, " %12.9f");
        print_num(curves[k].auc, " %12.9f");
        printf("\n");
    }
    printf("\n%8s", "t");
    for (int k = 0; k < ncurves; k++) {
        char col[64];
        snprintf(col, sizeof col, "%.10s loss", names[k]);
        printf(" %16s", col);
        if (kind == LS_CLASSIFY) {
            snprintf(col, sizeof col, "%.10s acc", names[k]);
            printf(" %16s", col);
        }
    }
    printf("\n");
    for (int m = 0; m < T; m++) {
        printf("%8.4f", ls_t(m, T));
        for (int k = 0; k < ncurves; k++) {
            printf(" %16.9f", curves[k].loss[m]);
            if (curves[k].acc) printf(" %16.6f", curves[k].acc[m]);
        }
        printf("\n");
    }
}

/* --adaptive: each curve's refined barrier, where, what it cost and how close. */
static void refined_print(const ls_refined *ref, char names[][48], int ncurves, int T) {
    printf("\nadaptive barriers (golden-section search in the best grid point's bracket, to t within %g):\n",
           ADAPTIVE_TOL);
    printf("%-12s %12s %8s %8s %10s %12s\n", "curve", "barrier", "t", "points", "t_bracket", "gap_spread");
    for (int k = 0; k < ncurves; k++)
        printf("%-12s %12.9f %8.5f %8d %10.6f %12.9f\n", names[k], ref[k].barrier, ref[k].t, T + ref[k].points,
               ref[k].tol, ref[k].spread);
}

/* --json: the curves (ls_json_curve, with their per-unit losses), the resampling,
 * and with --adaptive each refined barrier */
static int curves_json(const ls_curve *curves, char names[][48], int ncurves, const ls_refined *ref,
                       const char *unit, const char *what, const char *const paths[3], const char *path,
                       ms_err *err) {
    int T = curves[0].T, S = curves[0].nseq;
    cJSON *root = cJSON_CreateObject(), *cs = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moescope.curve/1");
    cJSON_AddStringToObject(root, "a", paths[0]);
    cJSON_AddStringToObject(root, "b", paths[1]);
    cJSON_AddStringToObject(root, "eval", paths[2]);
    if (what) cJSON_AddStringToObject(root, "objective", what);
    cJSON_AddNumberToObject(root, "points", T);
    cJSON *t = cJSON_CreateArray();
    for (int m = 0; m < T; m++) cJSON_AddItemToArray(t, json_number(ls_t(m, T)));
    cJSON_AddItemToObject(root, "t", t);
    cJSON_AddItemToObject(root, "bootstrap", ls_json_bootstrap(S, curves[0].seq ? LS_BOOT_RESAMPLES : 0, unit,
                                                               "too many units to keep"));
    for (int k = 0; k < ncurves; k++) {
        cJSON *c = ls_json_curve(&curves[k], curves[k].n, 1);
        if (ref) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddItemToObject(a, "barrier", json_number(ref[k].barrier));
            cJSON_AddItemToObject(a, "t", json_number(ref[k].t));
            cJSON_AddNumberToObject(a, "points", T + ref[k].points);
            cJSON_AddItemToObject(a, "t_bracket", json_number(ref[k].tol));
            cJSON_AddItemToObject(a, "gap_spread", json_number(ref[k].spread));
            cJSON_AddItemToObject(c, "adaptive", a);
        }
        cJSON_AddItemToObject(cs, names[k], c);
    }
    cJSON_AddItemToObject(root, "curves", cs);
    return json_file_write(root, path, err);
}

/* the barriers' intervals, below the curves */
static void intervals_print(const ls_curve *curves, char names[][48], int ncurves, const char *unit) {
    if (!curves[0].seq) return;
    printf("\nbarrier 95%% bootstrap intervals over the evaluation set's %d %s (%d resamples):\n",
           curves[0].nseq, unit, LS_BOOT_RESAMPLES);
    printf("%-12s %12s %12s %12s\n", "curve", "barrier_ci_lo", "barrier", "barrier_ci_hi");
    for (int k = 0; k < ncurves; k++)
        printf("%-12s %12.9f %12.9f %12.9f\n", names[k], curves[k].bar_lo, curves[k].barrier, curves[k].bar_hi);
}

/* The curves and the chord as a PNG at png. */
static int curves_png(const ls_curve *curves, char names[][48], int ncurves, int n, int T, ls_kind kind,
                      const char *what, const char *pa, const char *pb, const char *png, ms_err *err) {
    static const uint32_t cols[3] = {PLOT_RGB_NAIVE, PLOT_RGB_SKIP, PLOT_RGB_ALIGNED};
    static const uint32_t extra[4] = {PLOT_RGB_SELECTED, PLOT_RGB_GATE, PLOT_RGB_OTHER,
                                      PLOT_RGB_BEST};
    plot_series s[3 + MAX_ORDERS + 1];
    char labels[3 + MAX_ORDERS][160];
    double *tx = ms_malloc((size_t)T * sizeof(double));
    for (int m = 0; m < T; m++) tx[m] = ls_t(m, T);
    memset(s, 0, sizeof s);
    for (int k = 0; k < ncurves; k++) {
        // one --order is "order", several "order #1", "order #2" (names[] are the CSV's columns)
        char nm[48];
        if (k >= 3) snprintf(nm, sizeof nm, ncurves == 4 ? "order" : "order #%d", k - 2);
        else snprintf(nm, sizeof nm, "%s", k == 0 ? "naive" : k == 1 ? "skip-order" : names[k]);
        fig_curve_label(labels[k], sizeof labels[k], nm, curves[k].order, n, curves[k].barrier, 0);
        s[k].label = labels[k];
        s[k].x = tx;
        s[k].y = curves[k].loss;
        s[k].n = T;
        s[k].rgb = k < 3 ? cols[k] : extra[(k - 3) % 4];
        s[k].markers = T <= 41;
    }
    double cx[2] = {0.0, 1.0}, cy[2] = {curves[2].loss[0], curves[2].loss[T - 1]};
    s[ncurves].label = "chord";
    s[ncurves].x = cx;
    s[ncurves].y = cy;
    s[ncurves].n = 2;
    s[ncurves].rgb = PLOT_RGB_CHORD;
    s[ncurves].dashed = 1;
    plot_spec p;
    plot_spec_init(&p, cli_figure_size());
    char title[600];
    // a network's: "network loss, MoE block 1 (mean next-token cross-entropy)"
    fig_pair_title(title, sizeof title, what ? what : kind == LS_LAYER ? "layer-output loss" : "loss", pa, pb, NULL);
    p.title = title;
    p.xlabel = "t";
    p.ylabel = what ? "network loss" : kind == LS_LAYER ? "layer-output loss" : "loss";
    p.series = s;
    p.nseries = ncurves + 1;
    int rc = plot_write(&p, png, err);
    free(tx);
    return rc;
}

int cmd_curve(int argc, char **argv) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},   {"order", required_argument, 0, 'o'},
        {"points", required_argument, 0, 'T'}, {"method", required_argument, 0, 'm'},
        {"no-center", no_argument, 0, 'C'},    {"no-wm", no_argument, 0, 'W'},
        {"png", required_argument, 0, 'p'},    {"csv", required_argument, 0, 'c'},
        {"layer", required_argument, 0, 'l'},  {"help", no_argument, 0, 'h'},
        {"interpolate-backbone", no_argument, 0, 'I'}, {"adaptive", no_argument, 0, 'A'},
        {"json", required_argument, 0, 'j'},
        CLI_FIGURE_OPTIONS, {0, 0, 0, 0}};
    const char *e_path = NULL, *png = NULL, *csv = NULL, *layer = NULL, *json = NULL;
    const char *order_s[MAX_ORDERS];
    int norder = 0, T = 25, wm = 1, center = 1, interp = 0, adaptive = 0;
    cost_method method = COST_EXPERT;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "e:o:T:m:p:c:j:l:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': e_path = optarg; break;
        case 'o':
            if (norder >= MAX_ORDERS)
                return cli_usage_error(USAGE, "curve: at most %d --order options", MAX_ORDERS);
            order_s[norder++] = optarg;
            break;
        case 'T':
            if (cli_points_option(USAGE, "curve", optarg, &T)) return 2;
            break;
        case 'm':
            if (cost_method_parse(optarg, &method))
                return cli_usage_error(USAGE, "curve: --method must be %s, not '%s'", cost_method_choices(), optarg);
            break;
        case 'C': center = 0; break;
        case 'W': wm = 0; break;
        case 'p': png = optarg; break;
        case 'c': csv = optarg; break;
        case 'j': json = optarg; break;
        case 'l': layer = optarg; break;
        case 'I': interp = 1; break;
        case 'A': adaptive = 1; break;
        case 'h': help(); return 0;
        default: {
            int r = cli_figure_option(ch, optarg, "curve", USAGE);
            if (r > 0) return r;
            if (r < 0) return cli_option_error(USAGE, "curve", ch, argc, argv);
        }
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(USAGE, "curve: expected two checkpoints, got %d", argc - optind);
    const char *pa = argv[optind], *pb = argv[optind + 1];
    char guess[4096];
    e_path = cli_eval_or_default(e_path, pa, guess, sizeof guess);
    if (!e_path) return cli_usage_error(USAGE, "curve: --eval E is required (no eval.safetensors beside %s)", pa);
    const char *inputs[3] = {pa, pb, e_path};
    const out_spec outs[3] = {{png, "--png", OUT_FILE}, {csv, "--csv", OUT_FILE}, {json, "--json", OUT_FILE}};
    int orc = cli_check_outputs("curve", USAGE, outs, 3, inputs, 3);
    if (orc) return orc;
    ms_err err;

    // a network (E holds input_ids or pixel_values): the curves of its chosen MoE block on the network's loss
    subject S;
    subject_spec sp = {.pa = pa, .pb = pb, .e_path = e_path, .layer = layer, .interp_backbone = interp,
                       .uses = MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG, .mapped_pair = 1,
                       .chosen_mapped = 1};
    if ((orc = cli_subject_load(&S, &sp, "curve", USAGE))) return orc;
    net_objective *no = NULL;
    if (adaptive && S.kind != SUBJECT_NETWORK) {
        subject_free(&S);
        return cli_usage_error(USAGE, "curve: --adaptive is for networks");
    }
    align_opts other;
    align_opts_default(&other);
    other.method = method, other.center = center, other.wm_stage = wm;
    if (cli_subject_objective(&S, &other, 0, NULL, &no)) {
        subject_free(&S);
        return 1;
    }
    const ls_objective *obj = no ? net_objective_view(no) : NULL;
    const moe_model *A = S.a, *B = S.b;
    const evalset *E = obj ? NULL : &S.E;
    prov_set_run(1, T);
    int rc = 0, n = A->cfg.n, ncurves = 0;
    int orders[MAX_ORDERS][LS_MAX_N];
    ls_curve curves[3 + MAX_ORDERS];
    ls_refined ref[3 + MAX_ORDERS];
    char names[3 + MAX_ORDERS][48];
    const char *name_p[3 + MAX_ORDERS];
    memset(curves, 0, sizeof curves);
    if (n > LS_MAX_N) {
        rc = cli_error("%s: %d experts; curves handle at most %d", pa, n, LS_MAX_N);
        goto out;
    }
    for (int k = 0; k < norder; k++)
        if (cli_parse_order(order_s[k], orders[k], n)) {
            rc = cli_usage_error(USAGE, "curve: --order '%s' is not a permutation of 0..%d",
                                 order_s[k], n - 1);
            goto out;
        }
    if (A->cfg.has_head && B->cfg.has_head && !moe_heads_equal(A, B))
        fprintf(stderr, "moescope: warning: the heads of %s and %s differ; interpolating them too\n",
                pa, pb);
    ncurves = curves_compute(A, B, E, obj, T, method, center, wm, orders, norder, curves, names,
                              adaptive ? ref : NULL, &err);
    if (ncurves < 0) {
        ncurves = 0;
        rc = cli_error("%s", err.msg);
        goto out;
    }
    for (int k = 0; k < ncurves; k++) name_p[k] = names[k];

    // summary, then the curves themselves
    ls_kind kind = obj ? obj->kind : ls_kind_of(A, E);
    if (obj) printf("objective: %s (the other MoE blocks at the same t)\n\n", obj->what);
    curves_print(curves, names, ncurves, n, T, kind);
    if (adaptive) refined_print(ref, names, ncurves, T);
    const char *unit = obj ? obj->unit : "samples";
    intervals_print(curves, names, ncurves, unit);
    if (csv && curves_write_csv(curves, name_p, ncurves, csv, &err)) rc = cli_error("%s", err.msg);
    if (!rc && json && curves_json(curves, names, ncurves, adaptive ? ref : NULL, unit, obj ? obj->what : NULL,
                                   inputs, json, &err))
        rc = cli_error("%s", err.msg);
    if (!rc && png && curves_png(curves, names, ncurves, n, T, kind, obj ? obj->what : NULL, pa, pb, png, &err)) rc = cli_error("%s", err.msg);
out:
    for (int k = 0; k < ncurves; k++) ls_curve_free(&curves[k]);
    net_objective_free(no);
    subject_free(&S);
    return rc;
}
