/* cmd_diagnose.c - `moescope diagnose A B --eval E [--json F]`: the findings of
 * diagnostics for a pair of checkpoints, each number with its verdict in words. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "cli/cli.h"
#include "analysis/diagnose.h"
#include "model/symmetry.h"
#include "network/net_landscape.h"

static const char *USAGE =
    "moescope diagnose A.safetensors B.safetensors [--eval E] [--json F] [--method gate|expert|activation|router] "
    "[--no-center] [--landscape|--no-landscape] [--points T] [--layer L] [--interpolate-backbone] [--no-eval]";

static void help(void) {
    printf("usage: %s\n\n"
           "Why an alignment of B to A may fail, in numbers:\n"
           "  - per checkpoint, the conditions of the symmetry theorems: experts pairwise\n"
           "    distinct (parameters up to hidden permutations; outputs on the evaluation\n"
           "    inputs), gate rows and gate differences W_i - W_j pairwise distinct, and for\n"
           "    top-k routing k >= 2, n - 1 <= d and the rank / smallest singular value of\n"
           "    W_{i-1} - W_i (own Jacobi SVD); top-1 routing is flagged;\n"
           "  - routing on the evaluation set: mean gate weight and top-k share per expert,\n"
           "    dead experts;\n"
           "  - per pair: the margin of each method's assignment, whether gate and expert\n"
           "    agree, the weight-matching residual of every slot, whether the chosen order\n"
           "    is the best (landscape), and whether the heads are identical.\n"
           "Lines marked [warn] are flags. The exit code is 0 whenever the report was made.\n\n"
           "options:\n"
           "  -e, --eval E        evaluation set (routing, outputs, landscape; default:\n"
           "                      eval.safetensors beside A)\n"
           "      --no-eval       none: only what the weights say\n"
           "      --json F        write the findings and every number as JSON\n"
           "  -m, --method M      the chosen alignment (default expert): gate, expert, or\n"
           "                      with E activation, router (cost --help)\n"
           "      --no-center     no gate centring for the gate cost\n"
           "      --landscape     rank the chosen order among all orders (default when n! <= 5040)\n"
           "      --no-landscape  skip the landscape\n"
           "      --points T      interpolation points for the landscape, 3..100000 (default 25)\n"
           "  -l, --layer L       layer prefix (default moe)\n"
           "      --interpolate-backbone  networks: A and B may differ outside the MoE blocks\n"
           "\nA network (E holds input_ids or pixel_values): one MoE block (--layer: its\n"
           "index), its routing and outputs on the block's own inputs (the LayerNorm before\n"
           "its MLP, ln_2 / layernorm_after, of network A's hidden states), the\n"
           "chosen order ranked on the network's loss (by default when n! <= 120), and\n"
           "whether the frozen backbones agree.\n"
           "  -h, --help          this help\n",
           USAGE);
}

/* the findings grouped by who: A, B, then the pair */
static void print_findings(const diag_report *r) {
    const char *groups[3] = {"A", "B", "A,B"};
    const char *titles[3] = {"\ncheckpoint A", "\ncheckpoint B", "\nthe pair (B aligned to A)"};
    for (int g = 0; g < 3; g++) {
        printf("%s\n", titles[g]);
        for (int i = 0; i < r->findings.n; i++) {
            const dg_finding *f = &r->findings.items[i];
            if (strcmp(f->who, groups[g])) continue;
            printf("  [%-4s] %s%s\n", dg_severity_name(f->severity), f->text,
                   f->next == DG_NEXT_EVAL        ? " (pass --eval E)"
                   : f->next == DG_NEXT_LANDSCAPE ? "; pass --landscape to rank it"
                                                  : "");
        }
    }
    int nflags = dg_count(&r->findings, DG_WARN);
    printf("\n%d finding%s flagged\n", nflags, nflags == 1 ? "" : "s");
}

/* A network's MoE block: the diagnostics on the block's own inputs (ln_2 of
 * network A's hidden states there), the chosen order ranked on the network's
 * loss, and whether the frozen backbones agree. */
static int diagnose_network(subject *S, diag_opts *o, const char *json) {
    const char *pa = S->pa, *pb = S->pb, *eval = S->e_path;
    const subject_net *n = &S->net;
    ms_err err;
    int rc = 0, b = n->block;
    const moe_model *A = S->a, *B = S->b;
    evalset X;
    memset(&X, 0, sizeof X);
    landscape L;
    memset(&L, 0, sizeof L);
    net_objective *no = NULL;
    net_par par = {0};
    if (eval && net_block_inputs(&n->A, &n->E, b, &par, &X, &err)) rc = cli_error("%s", err.msg);
    ls_opts lo;
    ls_opts_default(&lo);
    cli_net_landscape_defaults(&lo, 0);
    int exh, want = o->landscape;
    if (want < 0) want = ls_orders_planned(&A->cfg, &lo, &exh, NULL) <= 120 && exh; // 5!: a few seconds
    align_opts other;
    align_opts_default(&other);
    other.method = o->method, other.center = o->center;
    if (!rc && eval && want) {
        if (o->T >= 2) lo.T = o->T;
        lo.center = o->center;
        lo.progress = o->progress, lo.phase = o->phase, lo.ctx = o->ctx;
        // said up front: this is the long part (on a busy machine, minutes)
        long planned = ls_orders_planned(&A->cfg, &lo, &exh, NULL);
        fprintf(stderr, "diagnose: ranking %s%ld orders of MoE block %d on the network's loss: %ld "
                        "orders x %d interior points, each a network forward over the %d evaluation sequences\n",
                exh ? "all " : "", planned, n->A.cfg.moe_layers[b], planned, lo.T - 2, n->E.N);
        if (cli_subject_objective(S, &other, 0, NULL, &no)) rc = 1;
        lo.objective = no ? net_objective_view(no) : NULL;
        if (!rc && landscape_compute(A, B, NULL, &lo, &L, &err)) rc = cli_error("%s", err.msg);
        if (!rc) o->L = &L;
    }
    diag_report r;
    memset(&r, 0, sizeof r);
    if (!rc && diag_pair(A, B, eval ? &X : NULL, o, &r, &err)) rc = cli_error("%s", err.msg);
    if (!rc) {
        for (int i = 0; i < r.findings.n; i++) // the block has no head of its own: the network is it
            if (!strcmp(r.findings.items[i].code, "heads"))
                snprintf(r.findings.items[i].text, sizeof r.findings.items[i].text,
                         "the loss is the network's (its LM head, after the other blocks)");
        if (n->backbone_diff[0])
            dg_add(&r.findings, DG_WARN, "backbone", "A,B", NAN, "the backbones differ (%s): interpolated "
                   "too, so these are not barriers of one frozen backbone", n->backbone_diff);
        else
            dg_add(&r.findings, DG_OK, "backbone", "A,B", NAN, "the frozen backbone (every tensor outside "
                   "the MoE blocks) is equal in A and B");
        printf("diagnose  A = %s\n          B = %s\n", pa, pb);
        printf("          MoE block %d (%s) of a %d-block network: n = %d, d = %d, h = %d, router %s",
               n->A.cfg.moe_layers[b], A->layer, n->A.cfg.nlayer, A->cfg.n, A->cfg.d, A->cfg.h,
               moe_router_name(A->cfg.router));
        if (A->cfg.router == ROUTER_TOPK) printf(" (k = %d)", A->cfg.k);
        printf("\n          evaluation set %s%s\n", eval ? eval : "none",
               eval ? " (routing and outputs on the block's own inputs; the rank on the network's loss)" : "");
        print_findings(&r);
        if (json && diag_write_json(&r, pa, pb, eval, json, &err)) rc = cli_error("%s", err.msg);
    }
    diag_report_free(&r);
    landscape_free(&L);
    net_objective_free(no);
    evalset_free(&X);
    return rc;
}

int cmd_diagnose(int argc, char **argv) {
    const char *eval = NULL, *json = NULL, *layer = NULL;
    diag_opts o;
    diag_opts_default(&o);
    enum { OPT_NOCENTER = 256, OPT_LS, OPT_NOLS, OPT_POINTS, OPT_INTERP, OPT_NOEVAL };
    int interp = 0, no_eval = 0;
    static const struct option opts[] = {{"eval", required_argument, 0, 'e'},
                                         {"json", required_argument, 0, 'j'},
                                         {"method", required_argument, 0, 'm'},
                                         {"no-center", no_argument, 0, OPT_NOCENTER},
                                         {"landscape", no_argument, 0, OPT_LS},
                                         {"no-landscape", no_argument, 0, OPT_NOLS},
                                         {"no-eval", no_argument, 0, OPT_NOEVAL},
                                         {"points", required_argument, 0, OPT_POINTS},
                                         {"layer", required_argument, 0, 'l'},
                                         {"interpolate-backbone", no_argument, 0, OPT_INTERP},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":e:j:m:l:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': eval = optarg; break;
        case 'j': json = optarg; break;
        case 'l': layer = optarg; break;
        case 'm':
            if (cost_method_parse(optarg, &o.method))
                return cli_usage_error(USAGE, "diagnose: --method must be %s, not '%s'",
                                       cost_method_choices(), optarg);
            break;
        case OPT_NOCENTER: o.center = 0; break;
        case OPT_LS: o.landscape = 1; break;
        case OPT_NOLS: o.landscape = 0; break;
        case OPT_NOEVAL: no_eval = 1; break;
        case OPT_INTERP: interp = 1; break;
        case OPT_POINTS:
            if (cli_points_option(USAGE, "diagnose", optarg, &o.T)) return 2;
            break;
        case 'h': help(); return 0;
        case ':':
            return cli_option_error(USAGE, "diagnose", ch, argc, argv);
        default: return cli_option_error(USAGE, "diagnose", ch, argc, argv);
        }
    }
    if (argc - optind < 2) return cli_usage_error(USAGE, "diagnose: needs two checkpoints A and B");
    if (argc - optind > 2)
        return cli_usage_error(USAGE, "diagnose: unexpected argument '%s'", argv[optind + 2]);
    const char *pa = argv[optind], *pb = argv[optind + 1];
    if (no_eval && eval) return cli_usage_error(USAGE, "diagnose: --no-eval and --eval exclude each other");
    char guess[4096];
    if (!no_eval) eval = cli_eval_or_default(eval, pa, guess, sizeof guess);

    ms_err err;
    const char *inputs[3] = {pa, pb, eval};
    const out_spec outs[1] = {{json, "--json", OUT_FILE}};
    int orc = cli_check_outputs("diagnose", USAGE, outs, 1, inputs, 3);
    if (orc) return orc;
    // the landscape that ranks the chosen order: its rows on the progress line
    o.progress = cli_progress_rows, o.phase = cli_progress_step;
    subject S;
    // a network's MoE blocks stay mapped in their dtype, the chosen one too (its experts
    // decoded one or two at a time, its landscape's orders views and mixes of the files);
    // so does a family layout's layer
    subject_spec sp = {.pa = pa, .pb = pb, .e_path = eval, .layer = layer, .interp_backbone = interp,
                       .uses = MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG, .mapped_pair = 1,
                       .chosen_mapped = 1, .chosen_shared_mapped = 1, .layer_mapped = 1};
    if ((orc = cli_subject_load(&S, &sp, "diagnose", USAGE))) return orc;
    int rc = 0;
    if (S.kind == SUBJECT_NETWORK) {
        rc = diagnose_network(&S, &o, json);
        subject_free(&S);
        return rc;
    }
    const moe_model *A = S.a, *B = S.b;
    diag_report r;
    if (diag_pair(A, B, eval ? &S.E : NULL, &o, &r, &err)) {
        rc = cli_error("%s", err.msg);
        diag_report_free(&r);
        goto done;
    }
    printf("diagnose  A = %s\n          B = %s\n", pa, pb);
    printf("          n = %d, d = %d, h = %d, router %s", A->cfg.n, A->cfg.d, A->cfg.h,
           moe_router_name(A->cfg.router));
    if (A->cfg.router == ROUTER_TOPK) printf(" (k = %d)", A->cfg.k);
    printf(", evaluation set %s\n", eval ? eval : "none");
    moe_symmetry sym;
    moe_symmetry_group(&A->cfg, &sym);
    printf("          symmetry group %s\n          %s\n", sym.name, sym.why);
    print_findings(&r);
    if (json && diag_write_json(&r, pa, pb, eval, json, &err)) rc = cli_error("%s", err.msg);
    diag_report_free(&r);
done:
    subject_free(&S);
    return rc;
}
