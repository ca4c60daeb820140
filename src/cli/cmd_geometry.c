/* cmd_geometry.c - `moescope geometry CKPT --eval E`: the routing geometry
 * across depth of one checkpoint's MoE layers (analysis/geometry.h): their
 * control subspaces, the angles between them, one canonical gauge, a shared
 * transition against layer-specific ones and the baselines, the expert
 * choices the states keep, and for a network the transport test. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_capture.h"
#include "analysis/geo_network.h"
#include "analysis/geo_report.h"
#include "cli/cli.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "io/provenance.h"
#include "plot/geometry_fig.h"

static const char *USAGE =
    "moescope geometry CKPT --eval E [--json F] [--csv F] [--angles-png F] [--r2-png F] [--train-frac F] "
    "[--seed S] [--no-transport] [--threads K] [--size WxH] [--font-scale K]";

static void help(void) {
    printf("usage: %s\n\n"
           "The routing geometry across depth of a checkpoint with several MoE layers.\n"
           "Per layer: the centred router W~ = W - (its mean row) (the translation no softmax\n"
           "sees), its rank r <= n - 1 and singular values, an orthonormal basis U of its row\n"
           "space (the control subspace: the directions of the residual stream the router\n"
           "reads), the control states c = U^T x on the evaluation tokens (checked: the centred\n"
           "logits come back from them), and the share of the inputs' variance they hold.\n"
           "Across layers: the principal angles between every pair of control subspaces; one\n"
           "rotation per layer into a canonical gauge (generalized Procrustes, GPA: U is\n"
           "defined only up to a rotation, so the states are too); a shared transition\n"
           "y_{l+1} ~ y_l A fitted on the training tokens against layer-specific ones, their\n"
           "held-out R^2 and eta_share = shared / specific, in the canonical gauge and in the\n"
           "baselines' coordinates (raw SVD bases, a random gauge, residual PCA at rank r,\n"
           "a CCA chain); the expert choices (top-k) read out of the states, residual PCA and\n"
           "the transported states. For a network, the transport test: the held-out loss when\n"
           "block l+1's control component is replaced by the one transported from block l.\n\n"
           "CKPT and E:\n"
           "  a network checkpoint (GPT-2 or ViT layout with config.json's moe.layers, or a\n"
           "    Hugging Face MoE decoder) and its evaluation set (input_ids, or\n"
           "    pixel_values): moescope computes every MoE block's inputs (the MLP's norm of\n"
           "    the residual) itself;\n"
           "  any checkpoint (a Hugging Face MoE, moescope's own layers) and a capture of every\n"
           "    MoE layer's inputs for the same tokens: tensors inputs.L [N, d], one per block L\n"
           "    (sample-checkpoints/capture_inputs.py --layers all).\n\n"
           "options:\n"
           "  -e, --eval E        the evaluation set or the capture (default: eval.safetensors\n"
           "                      beside CKPT)\n"
           "      --json F        every number as JSON\n"
           "      --csv F         one row per step l -> l+1: R^2 of every method, recalls, dNLL\n"
           "      --angles-png F  the layers x layers heat map of the mean principal angle\n"
           "      --r2-png F      held-out R^2 per step: shared (canonical), specific, baselines\n"
           "      --train-frac F  the share of sequences (a capture: tokens) that train, the\n"
           "                      rest held out (default 0.8)\n"
           "      --seed S        the random gauge's rotations (default 1)\n"
           "      --no-transport  networks: skip the transport test\n"
           "  -t, --threads K     network evaluation threads 1..8 (default: one per CPU)\n"
           CLI_FIGURE_HELP
           "  -h, --help          this help\n"
           "The exit code is 1 for a checkpoint with fewer than two MoE layers, inputs that do\n"
           "not match the layers, or too few tokens for the split.\n",
           USAGE);
}

typedef struct {
    const char *ckpt, *eval, *json, *csv, *angles_png, *r2_png;
    double frac;
    unsigned long long seed;
    int transport, threads;
} geo_args;

/* the outputs, once the report is made */
static int write_outputs(const geo_args *a, const geometry *G, const geo_transport *T, cJSON *run) {
    ms_err err;
    if (a->json) {
        cJSON *root = geometry_json(G, run);
        if (T) geo_transport_json(root, G, T);
        cJSON_AddItemToObject(root, "provenance", prov_json());
        if (json_file_write(root, a->json, &err)) return cli_error("%s", err.msg);
    } else {
        cJSON_Delete(run);
    }
    if (a->csv && geometry_write_csv(G, T, a->csv, &err)) return cli_error("%s", err.msg);
    if (a->angles_png && geometry_write_angles(G, cli_figure_size(), a->angles_png, &err)) return cli_error("%s", err.msg);
    if (a->r2_png && geometry_write_r2(G, cli_figure_size(), a->r2_png, &err)) return cli_error("%s", err.msg);
    return 0;
}

static cJSON *run_json(const geo_args *a, const char *mode) {
    cJSON *run = cJSON_CreateObject();
    cJSON_AddStringToObject(run, "checkpoint", a->ckpt);
    cJSON_AddStringToObject(run, "eval", a->eval);
    cJSON_AddStringToObject(run, "mode", mode);
    cJSON_AddNumberToObject(run, "train_fraction", a->frac);
    return run;
}

static int geometry_of_network(const geo_args *a) {
    subject S;
    // only evaluated (router inputs, the transport's forwards): the MoE blocks stay mapped
    subject_spec sp = {.kind = SUBJECT_NETWORK, .pa = a->ckpt, .e_path = a->eval, .mapped = 1};
    int rc = cli_subject_load(&S, &sp, "geometry", USAGE);
    if (rc) return rc;
    const subject_net *n = &S.net;
    ms_err err;
    geo_opts o;
    geo_opts_default(&o);
    o.seed = a->seed;
    net_par par = {.threads = a->threads};
    geometry G;
    geo_transport T;
    memset(&T, 0, sizeof T);
    int ts, tt, ntok = net_tokens(&n->A, &n->E);
    geo_network_split(n->E.N, ntok, a->frac, &ts, &tt);
    if (geometry_network(&n->A, &n->E, a->frac, &o, &par, &G, &err)) {
        subject_free(&S);
        return cli_error("%s", err.msg);
    }
    int transport = a->transport && ts >= 1;
    if (transport && geo_transport_run(&G, &n->A, &n->E, ts, &par, &T, &err)) rc = cli_error("%s", err.msg);
    if (!rc) {
        const char *unit = n->E.pixels ? "images" : "sequences"; // a ViT's: its patches and the CLS token
        printf("geometry  %s\n          evaluation set %s: %d %s of %d tokens", a->ckpt, a->eval, n->E.N, unit, ntok);
        if (ts) printf(", the first %d %s train, %d held out\n", ts, unit, n->E.N - ts);
        else printf(" (one sequence: its first %d tokens train)\n", tt);
        printf("          a %d-block network, MoE blocks", n->A.cfg.nlayer);
        for (int i = 0; i < n->A.cfg.nmoe; i++) printf(" %d", n->A.cfg.moe_layers[i]);
        printf("\n\n");
        geometry_print(stdout, &G, transport ? &T : NULL);
        if (a->transport && !ts) printf("\n(no transport test: one sequence leaves none held out)\n");
        cJSON *run = run_json(a, "network");
        cJSON_AddNumberToObject(run, "sequences", n->E.N);
        cJSON_AddNumberToObject(run, "sequence_length", ntok);
        cJSON_AddNumberToObject(run, "train_sequences", ts);
        rc = write_outputs(a, &G, transport ? &T : NULL, run);
    }
    geo_transport_free(&T);
    geometry_free(&G);
    subject_free(&S);
    return rc;
}

static int geometry_of_capture(const geo_args *a) {
    prov_add_input(a->ckpt);
    prov_add_input(a->eval);
    ms_err err;
    geo_capture c;
    if (geo_capture_open(&c, a->ckpt, a->eval, cli_overrides(), &err)) return cli_error("%s", err.msg);
    geo_opts o;
    geo_opts_default(&o);
    o.seed = a->seed;
    o.N = c.N;
    o.ntrain = (int)lround(a->frac * c.N);
    geometry G;
    int rc = 0;
    if (geometry_compute(c.in, c.L, geo_capture_inputs, &c, &o, &G, &err)) rc = cli_error("%s", err.msg);
    if (!rc) {
        printf("geometry  %s\n          captured inputs %s: %d tokens, the first %d train\n\n", a->ckpt, a->eval, c.N,
               o.ntrain);
        geometry_print(stdout, &G, NULL);
        rc = write_outputs(a, &G, NULL, run_json(a, "capture"));
        geometry_free(&G);
    }
    geo_capture_close(&c);
    return rc;
}

/* one option; 0, 2 after a usage error, -1 when ch is none of these */
static int take_option(geo_args *a, int ch, const char *arg) {
    char *end;
    switch (ch) {
    case 'e': a->eval = arg; return 0;
    case 'j': a->json = arg; return 0;
    case 'c': a->csv = arg; return 0;
    case 'A': a->angles_png = arg; return 0;
    case 'R': a->r2_png = arg; return 0;
    case 'T': a->transport = 0; return 0;
    case 'f':
        a->frac = strtod(arg, &end);
        if (*end || !(a->frac > 0 && a->frac < 1))
            return cli_usage_error(USAGE, "geometry: --train-frac needs a number between 0 and 1, not '%s'", arg);
        return 0;
    case 's':
        if (cli_parse_u64(arg, &a->seed))
            return cli_usage_error(USAGE, "geometry: --seed needs a non-negative integer, not '%s'", arg);
        return 0;
    case 't': {
        long long t;
        int rc = cli_int_option(USAGE, "geometry", "--threads", arg, 1, 8, &t);
        a->threads = (int)t;
        return rc;
    }
    }
    return -1;
}

int cmd_geometry(int argc, char **argv) {
    geo_args a = {.frac = 0.8, .seed = 1, .transport = 1};
    static const struct option opts[] = {{"eval", required_argument, 0, 'e'},      {"json", required_argument, 0, 'j'},
                                         {"csv", required_argument, 0, 'c'},       {"train-frac", required_argument, 0, 'f'},
                                         {"seed", required_argument, 0, 's'},      {"no-transport", no_argument, 0, 'T'},
                                         {"threads", required_argument, 0, 't'},   {"help", no_argument, 0, 'h'},
                                         {"angles-png", required_argument, 0, 'A'}, {"r2-png", required_argument, 0, 'R'},
                                         CLI_FIGURE_OPTIONS,                       {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":e:t:h", opts, NULL)) != -1) {
        if (ch == 'h') {
            help();
            return 0;
        }
        int rc = take_option(&a, ch, optarg);
        if (rc < 0) rc = cli_figure_option(ch, optarg, "geometry", USAGE);
        if (rc > 0) return rc;
        if (rc < 0) return cli_option_error(USAGE, "geometry", ch, argc, argv);
    }
    if (argc - optind < 1) return cli_usage_error(USAGE, "geometry: needs a checkpoint");
    if (argc - optind > 1) return cli_usage_error(USAGE, "geometry: unexpected argument '%s'", argv[optind + 1]);
    a.ckpt = argv[optind];
    char guess[4096];
    a.eval = cli_eval_or_default(a.eval, a.ckpt, guess, sizeof guess);
    if (!a.eval)
        return cli_usage_error(USAGE, "geometry: needs --eval E (a network's input_ids, or every MoE layer's captured "
                                      "inputs; no eval.safetensors beside %s)", a.ckpt);
    const char *inputs[2] = {a.ckpt, a.eval};
    const out_spec outs[4] = {{a.json, "--json", OUT_FILE},
                              {a.csv, "--csv", OUT_FILE},
                              {a.angles_png, "--angles-png", OUT_FILE},
                              {a.r2_png, "--r2-png", OUT_FILE}};
    int orc = cli_check_outputs("geometry", USAGE, outs, 4, inputs, 2);
    if (orc) return orc;
    // a network's router inputs come from its own forward; a layer's were captured
    return subject_detect(a.ckpt, a.eval) == SUBJECT_NETWORK ? geometry_of_network(&a) : geometry_of_capture(&a);
}
