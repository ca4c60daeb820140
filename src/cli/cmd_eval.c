/* cmd_eval.c - `moescope eval CKPT --eval E`: loss, accuracy and the
 * per-expert routing load on an evaluation set.
 *
 * A layer without a head has no loss; eval then reports layer-only
 * statistics: "loss" is the mean over N*d of D(x)^2 (the squared layer
 * output, residual excluded) and "accuracy" is null.
 *
 * Options for tests and benchmarks:
 *   --dump-outputs F  write F (safetensors): `outputs` (N,d) the block output z,
 *                     `gates` (N,n), and `logits` (N,C) when there is a head;
 *   --repeat R        run the evaluation R times and report the evaluation time
 *                     alone (loading excluded) on stderr. */
#include <cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/atomic_file.h"
#include "io/json_file.h"
#include "cli/cli.h"
#include "model/evaluator.h"
#include "model/model.h"
#include "core/ms_limits.h"
#include "io/model_io.h"
#include "io/safetensors.h"

static const char *USAGE =
    "moescope eval CKPT --eval E [--layer L] [--json F] [--dump-outputs F] [--repeat R]";

static void help(void) {
    printf("usage: %s\n\n"
           "Loss, accuracy and per-expert routing load of one MoE layer on an evaluation set.\n\n"
           "  --eval E          evaluation set (safetensors: inputs [N,d], labels [N] or targets [N,C])\n"
           "  --layer L         layer prefix in the checkpoint (default moe)\n"
           "  --json F          write {\"loss\", \"accuracy\", \"load\": [...]} to F\n"
           "  --dump-outputs F  write the block outputs z (`outputs` [N,d]), the gate weights\n"
           "                    (`gates` [N,n]) and, with a head, `logits` [N,C] to F\n"
           "  --repeat R        evaluate R times; print the evaluation time (no loading) to stderr\n"
           "  --help            this text\n\n"
           "Classification: loss is the mean cross-entropy, accuracy the argmax accuracy.\n"
           "Regression: loss is the mean squared error over N*C, accuracy is absent.\n"
           "Without a head (layer-only mode): loss is the mean over N*d of D(x)^2.\n",
           USAGE);
}

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_json(const char *path, const moe_model *m, const evalset *e,
                      const moe_eval_result *r, ms_err *err) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "loss", r->loss);
    if (r->accuracy >= 0) cJSON_AddNumberToObject(root, "accuracy", r->accuracy);
    else cJSON_AddNullToObject(root, "accuracy");
    cJSON *load = cJSON_AddArrayToObject(root, "load");
    for (int i = 0; i < m->cfg.n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "expert", i);
        cJSON_AddNumberToObject(o, "mean_gate", r->load_mean[i]);
        cJSON_AddNumberToObject(o, "fraction_routed", r->load_frac[i]);
        cJSON_AddItemToArray(load, o);
    }
    const char *kind = !m->cfg.has_head ? "layer" : e->labels ? "classification" : "regression";
    cJSON_AddStringToObject(root, "mode", kind);
    cJSON_AddStringToObject(root, "checkpoint", m->path);
    cJSON_AddStringToObject(root, "layer", m->layer);
    cJSON_AddStringToObject(root, "eval", e->path);
    cJSON_AddNumberToObject(root, "samples", e->N);
    return json_file_write(root, path, err);
}

static int dump_outputs(const char *path, const moe_model *m, const evalset *e, ms_err *err) {
    const moe_config *c = &m->cfg;
    int N = e->N;
    float *Z = ms_malloc((size_t)N * c->d * sizeof(float)); // (N, d)
    float *G = ms_malloc((size_t)N * c->n * sizeof(float)); // (N, n)
    float *L = c->has_head ? ms_malloc((size_t)N * c->C * sizeof(float)) : NULL; // (N, C)
    moe_forward(m, e->inputs, N, Z, G);
    if (L) moe_head(m, Z, N, L);
    st_writer *w = st_writer_new();
    int64_t nd[2] = {N, c->d}, nn[2] = {N, c->n}, nc[2] = {N, c->C};
    st_writer_add_f32(w, "outputs", 2, nd, Z);
    st_writer_add_f32(w, "gates", 2, nn, G);
    if (L) st_writer_add_f32(w, "logits", 2, nc, L);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    free(Z);
    free(G);
    free(L);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    const char *eval_path = NULL, *layer = NULL, *json = NULL, *dump = NULL;
    long repeat = 1;
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},   {"layer", required_argument, 0, 'l'},
        {"json", required_argument, 0, 'j'},   {"dump-outputs", required_argument, 0, 'D'},
        {"repeat", required_argument, 0, 'r'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":e:l:j:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': eval_path = optarg; break;
        case 'l': layer = optarg; break;
        case 'j': json = optarg; break;
        case 'D': dump = optarg; break;
        case 'r': {
            char *end;
            repeat = strtol(optarg, &end, 10);
            if (*end || repeat < 1 || repeat > 1000000)
                return cli_usage_error(USAGE, "eval: --repeat needs a positive integer, got '%s'",
                                       optarg);
            break;
        }
        case 'h': help(); return 0;
        case ':': return cli_option_error(USAGE, "eval", ch, argc, argv);
        default: return cli_option_error(USAGE, "eval", ch, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "eval: missing the checkpoint");
    if (optind + 1 < argc) return cli_usage_error(USAGE, "eval: unexpected argument '%s'", argv[optind + 1]);
    if (!eval_path) return cli_usage_error(USAGE, "eval: --eval E is required");
    const char *ckpt = argv[optind];

    ms_err err;
    // refuse before any work: an output must never replace an input
    const char *inputs[2] = {ckpt, eval_path};
    if (json && af_check_not_input(json, inputs, 2, &err)) return cli_error("%s", err.msg);
    if (dump && af_check_not_input(dump, inputs, 2, &err)) return cli_error("%s", err.msg);
    const char *outs[2] = {json, dump};
    static const char *const labels[2] = {"--json", "--dump-outputs"};
    if (af_check_distinct(outs, labels, 2, &err)) return cli_usage_error(USAGE, "eval: %s", err.msg);
    moe_model m;
    evalset e;
    if (moe_load(&m, ckpt, layer, &err)) return cli_error("%s", err.msg);
    if (evalset_load(&e, eval_path, &err)) {
        moe_free(&m);
        return cli_error("%s", err.msg);
    }
    int rc = 0;
    moe_eval_result r;
    memset(&r, 0, sizeof r);
    if (moe_eval_check(&m, &e, &err) || ms_limits_check(&m, NULL, &e, MS_USE_EVAL, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    double t0 = now_sec();
    for (long it = 0; it < repeat; it++) {
        moe_eval_result_free(&r);
        int fail = m.cfg.has_head ? moe_eval(&m, &e, &r, &err) : moe_eval_layer(&m, &e, &r, &err);
        if (fail) {
            rc = cli_error("%s", err.msg);
            goto done;
        }
    }
    double dt = now_sec() - t0;
    if (repeat > 1)
        fprintf(stderr, "eval: %ld runs of %d samples in %.6f s: %.6f s per run, %.0f samples/s\n",
                repeat, e.N, dt, dt / repeat, (double)repeat * e.N / dt);

    const moe_config *c = &m.cfg;
    printf("checkpoint  %s (layer %s)\n", ckpt, m.layer);
    printf("eval set    %s (N = %d)\n", eval_path, e.N);
    if (!c->has_head) {
        printf("mode        layer only (no head): loss = mean of D(x)^2 over N*d\n");
        printf("loss        %.6f\n", r.loss);
    } else if (e.labels) {
        printf("loss        %.6f (mean cross-entropy)\n", r.loss);
        printf("accuracy    %.4f\n", r.accuracy);
    } else {
        printf("loss        %.6f (mean squared error)\n", r.loss);
    }
    char rdesc[512];
    moe_router_describe(c, rdesc, sizeof rdesc);
    printf("routing     %s\n", rdesc);
    // dense routing sends every input to every expert: the fraction would be 1 everywhere
    int dense = c->router == ROUTER_DENSE;
    printf("\nexpert  mean gate%s\n", dense ? "" : "  fraction routed");
    for (int i = 0; i < c->n; i++) {
        printf("%6d  %9.4f", i, r.load_mean[i]);
        if (!dense) printf("  %15.4f", r.load_frac[i]);
        printf("\n");
    }

    if (json && write_json(json, &m, &e, &r, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    if (dump && dump_outputs(dump, &m, &e, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
done:
    moe_eval_result_free(&r);
    evalset_free(&e);
    moe_free(&m);
    return rc;
}
