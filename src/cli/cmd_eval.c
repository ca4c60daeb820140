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

#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "io/json_file.h"
#include "cli/cli.h"
#include "core/mem_budget.h"
#include "core/progress.h"
#include "model/evaluator.h"
#include "model/model.h"
#include "analysis/ms_limits.h"
#include "io/model_io.h"
#include "io/safetensors.h"

static const char *USAGE =
    "moescope eval CKPT [--eval E] [--layer L] [--json F] [--dump-outputs F] [--repeat R] [--threads K]";

static void help(void) {
    printf("usage: %s\n\n"
           "Loss, accuracy and per-expert routing load of one MoE layer on an evaluation set,\n"
           "or of a network whose feed-forward block(s) are MoE: a GPT-2 or a Hugging Face\n"
           "MoE decoder (Mixtral, Qwen-MoE, OLMoE, Granite, DeepSeek, GPT-OSS) on token\n"
           "sequences, a ViT (Hugging Face's ViTForImageClassification layout) on labelled\n"
           "images.\n\n"
           "  --eval E          evaluation set (safetensors: inputs [N,d], labels [N] or targets [N,C];\n"
           "                    for a GPT-2 input_ids [N,T], I32 or I64; for a ViT pixel_values\n"
           "                    [N,C,H,W] (float) and labels [N] (I32 or I64); default:\n"
           "                    eval.safetensors beside CKPT)\n"
           "  --layer L         layer prefix in the checkpoint (default moe)\n"
           "  --json F          write {\"loss\", \"accuracy\", \"load\": [...]} to F\n"
           "  --dump-outputs F  write the block outputs z (`outputs` [N,d]), the gate weights\n"
           "                    (`gates` [N,n]) and, with a head, `logits` [N,C] to F\n"
           "  --repeat R        evaluate R times; print the evaluation time (no loading) to stderr\n"
           "  --threads K       worker threads 1..8 (default: one per CPU, at most 8)\n"
           "  --help            this text\n\n"
           "Classification: loss is the mean cross-entropy, accuracy the argmax accuracy.\n"
           "Regression: loss is the mean squared error over N*C, accuracy is absent.\n"
           "Without a head (layer-only mode): loss is the mean over N*d of D(x)^2.\n"
           "A GPT-2 or a decoder: loss is the mean next-token cross-entropy over the N (T-1)\n"
           "positions, accuracy the next-token top-1; --dump-outputs writes `logits` [N,T,V].\n"
           "A ViT: loss is the mean class cross-entropy of the classifier on the CLS token\n"
           "over the N images, accuracy the class top-1; --dump-outputs writes `logits` [N,C].\n"
           "Either network lists every MoE block's load.\n",
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

/* ---- a network checkpoint on its token evaluation set ---- */

static int net_write_json(const char *path, const subject_net *n, const net_eval_result *r, ms_err *err) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "loss", r->loss);
    cJSON_AddNumberToObject(root, "accuracy", r->accuracy);
    cJSON *blocks = cJSON_AddArrayToObject(root, "blocks");
    for (int b = 0; b < n->A.cfg.nmoe; b++) {
        cJSON *o = cJSON_CreateObject(), *load = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "block", n->A.cfg.moe_layers[b]);
        cJSON_AddStringToObject(o, "layer", n->A.moe[b].layer);
        for (int i = 0; i < n->A.moe[b].cfg.n; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "expert", i);
            cJSON_AddNumberToObject(e, "mean_gate", r->load_mean[b * r->n + i]);
            cJSON_AddNumberToObject(e, "fraction_routed", r->load_frac[b * r->n + i]);
            cJSON_AddItemToArray(load, e);
        }
        cJSON_AddItemToObject(o, "load", load);
        // "load" at the top is the chosen block's, as for a single layer
        if (b == n->block) cJSON_AddItemToObject(root, "load", cJSON_Duplicate(load, 1));
        cJSON_AddItemToArray(blocks, o);
    }
    cJSON_AddStringToObject(root, "mode", "network");
    cJSON_AddStringToObject(root, "checkpoint", n->A.path);
    cJSON_AddStringToObject(root, "eval", n->E.path);
    cJSON_AddStringToObject(root, "architecture", net_arch_of(n->A.cfg.arch)->model_type);
    cJSON_AddNumberToObject(root, net_arch_of(n->A.cfg.arch)->target == NET_TARGET_CLASS ? "images" : "sequences", n->E.N);
    cJSON_AddNumberToObject(root, "tokens_per_sequence", net_tokens(&n->A, &n->E));
    cJSON_AddNumberToObject(root, "positions", (double)r->positions);
    return json_file_write(root, path, err);
}

/* sequences [row0, row0 + nrows) of E evaluated alone: their logits */
typedef struct {
    const subject_net *n;
    int threads;
} dump_ctx;

static int dump_panel(void *ctx, int64_t row0, int64_t nrows, float *buf, ms_err *err) {
    const dump_ctx *x = ctx;
    const net_evalset *E = &x->n->E;
    net_evalset part = *E; // a view of the rows: no copy
    part.N = (int)nrows;
    if (E->ids) part.ids = E->ids + (size_t)row0 * E->T;
    if (E->pixels) part.pixels = E->pixels + (size_t)row0 * E->C * E->H * E->W;
    if (E->labels) part.labels = E->labels + row0;
    net_run r = {.logits = buf};
    net_par par = {.threads = x->threads};
    net_eval_result res;
    if (net_evaluate(&x->n->A, &part, NULL, &r, &par, &res, err)) return -1;
    net_eval_result_free(&res);
    return 0;
}

/* `logits` [N, T, V] (a ViT's [N, V]) written in panels of sequences of at most
 * DUMP_PANEL_BYTES (a sixteenth of the memory limit when that is less): never held
 * whole (a small checkpoint with a large vocabulary and set makes gigabytes) */
#define DUMP_PANEL_BYTES ((size_t)8 << 20)
static int net_dump(const char *path, const subject_net *n, int threads, ms_err *err) {
    const net_config *c = &n->A.cfg;
    int T = net_tokens(&n->A, &n->E), per = net_logit_rows(&n->A, T);
    size_t seq = (size_t)per * c->vocab * sizeof(float), cap = DUMP_PANEL_BYTES;
    if (ms_mem_machine() / 16 < (double)cap) cap = (size_t)(ms_mem_machine() / 16); // a low limit: smaller panels
    size_t panel = cap / (seq ? seq : 1);
    char what[600];
    snprintf(what, sizeof what, "%s: --dump-outputs' panel of one sequence's logits (%d x %d)", n->A.path, per,
             c->vocab);
    if (ms_mem_fits((double)seq, what, err)) return -1;
    dump_ctx x = {n, threads};
    st_writer *w = st_writer_new();
    int64_t sh[3] = {n->E.N, T, c->vocab}, shv[2] = {n->E.N, c->vocab};
    st_writer_add_panels(w, "logits", per > 1 ? 3 : 2, per > 1 ? sh : shv, panel ? panel : 1, dump_panel, &x);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    return rc;
}

/* loss, accuracy and every MoE block's routing load; --repeat times whole
 * evaluations (the frozen prefix included: what a forward pass costs) */
static int eval_network(const subject_net *n, const char *ck, const char *e_path, const char *json,
                        const char *dump, long repeat, int threads) {
    ms_err err;
    net_eval_result r;
    memset(&r, 0, sizeof r);
    net_run run = {.want_load = 1};
    net_par par = {.threads = threads};
    int rc = 0;
    struct timespec c0, c1; // the process's CPU time too: on a shared machine wall time is its share
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = now_sec();
    for (long it = 0; it < (repeat ? repeat : 1) && !rc; it++) {
        net_eval_result_free(&r);
        progress_begin(NET_EVAL_ROWS, 0, "rows"); // the evaluation's own count moves it
        if (net_evaluate(&n->A, &n->E, NULL, &run, &par, &r, &err)) rc = cli_error("%s", err.msg);
        progress_end();
    }
    double dt = now_sec() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    int T = net_tokens(&n->A, &n->E), vit = net_arch_of(n->A.cfg.arch)->target == NET_TARGET_CLASS;
    if (!rc && repeat > 0) {
        double tok = (double)n->E.N * T;
        fprintf(stderr, "eval: %ld runs of %d x %d tokens in %.6f s: %.6f s per run, %.0f tokens/s "
                        "(CPU %.6f s per run)\n",
                repeat, n->E.N, T, dt, dt / repeat, (double)repeat * tok / dt, cpu / repeat);
    }
    const net_config *c = &n->A.cfg;
    if (!rc) {
        printf("checkpoint  %s (network %s: %d blocks, d = %d, %d heads, %s = %d; %s", ck,
               net_arch_of(c->arch)->model_type, c->nlayer, c->d, c->nhead, vit ? "classes" : "V", c->vocab,
               c->nmoe ? "MoE at block" : "no MoE block");
        for (int b = 0; b < c->nmoe; b++) printf("%s %d", b ? "," : "", c->moe_layers[b]);
        if (vit)
            printf(")\neval set    %s (N = %d images of %d x %d x %d: %d patches + CLS = %d tokens each)\n",
                   e_path, n->E.N, n->E.C, n->E.H, n->E.W, c->npatch, T);
        else
            printf(")\neval set    %s (N = %d sequences of T = %d tokens: %ld next-token positions)\n",
                   e_path, n->E.N, T, r.positions);
        printf("loss        %.6f (mean %s cross-entropy, nats)\n", r.loss, vit ? "class" : "next-token");
        printf("accuracy    %.4f (%s top-1)\n", r.accuracy, vit ? "class" : "next-token");
    }
    for (int b = 0; b < c->nmoe && !rc; b++) {
        const moe_config *mc = &n->A.moe[b].cfg;
        char rdesc[512];
        moe_router_describe(mc, rdesc, sizeof rdesc);
        int dense = mc->router == ROUTER_DENSE;
        printf("\nblock %d (%s): %s\nexpert  mean gate%s\n", c->moe_layers[b], n->A.moe[b].layer, rdesc,
               dense ? "" : "  fraction routed");
        for (int i = 0; i < mc->n; i++) {
            printf("%6d  %9.4f", i, r.load_mean[b * r.n + i]);
            if (!dense) printf("  %15.4f", r.load_frac[b * r.n + i]);
            printf("\n");
        }
    }
    if (!rc && json && net_write_json(json, n, &r, &err)) rc = cli_error("%s", err.msg);
    if (!rc && dump && net_dump(dump, n, threads, &err)) rc = cli_error("%s", err.msg);
    net_eval_result_free(&r);
    return rc;
}

int cmd_eval(int argc, char **argv) {
    const char *eval_path = NULL, *layer = NULL, *json = NULL, *dump = NULL;
    long repeat = 0; // 0: not asked for (one evaluation, no timing)
    int threads = 0;
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},   {"layer", required_argument, 0, 'l'},
        {"json", required_argument, 0, 'j'},   {"dump-outputs", required_argument, 0, 'D'},
        {"repeat", required_argument, 0, 'r'}, {"threads", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'},
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
            long long v;
            int rc = cli_int_option(USAGE, "eval", "--repeat", optarg, 1, 1000000, &v);
            if (rc) return rc;
            repeat = (long)v;
            break;
        }
        case 't': {
            long long v;
            int rc = cli_int_option(USAGE, "eval", "--threads", optarg, 1, 8, &v);
            if (rc) return rc;
            threads = (int)v;
            break;
        }
        case 'h': help(); return 0;
        case ':': return cli_option_error(USAGE, "eval", ch, argc, argv);
        default: return cli_option_error(USAGE, "eval", ch, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "eval: missing the checkpoint");
    if (optind + 1 < argc) return cli_usage_error(USAGE, "eval: unexpected argument '%s'", argv[optind + 1]);
    const char *ck = argv[optind];
    char guess[4096];
    eval_path = cli_eval_or_default(eval_path, ck, guess, sizeof guess);
    if (!eval_path)
        return cli_usage_error(USAGE, "eval: --eval E is required (no eval.safetensors beside %s)", ck);

    ms_err err;
    // refuse before any work: an output must never replace an input
    const char *inputs[2] = {ck, eval_path};
    const out_spec outs[2] = {{json, "--json", OUT_FILE}, {dump, "--dump-outputs", OUT_FILE}};
    int orc = cli_check_outputs("eval", USAGE, outs, 2, inputs, 2);
    if (orc) return orc;
    subject S;
    // a network is only evaluated here: its experts' weights are used where the file keeps them
    subject_spec sp = {.pa = ck, .e_path = eval_path, .layer = layer, .uses = MS_USE_EVAL, .mapped = 1};
    if ((orc = cli_subject_load(&S, &sp, "eval", USAGE))) return orc;
    if (S.kind == SUBJECT_NETWORK) {
        orc = eval_network(&S.net, ck, eval_path, json, dump, repeat, threads);
        subject_free(&S);
        return orc;
    }
    const moe_model m = S.A; // views: S owns them
    const evalset e = S.E;
    int rc = 0;
    moe_eval_result r;
    memset(&r, 0, sizeof r);
    double t0 = now_sec();
    for (long it = 0; it < (repeat ? repeat : 1); it++) {
        moe_eval_result_free(&r);
        int fail = m.cfg.has_head ? moe_eval(&m, &e, &r, &err) : moe_eval_layer(&m, &e, &r, &err);
        if (fail) {
            rc = cli_error("%s", err.msg);
            goto done;
        }
    }
    double dt = now_sec() - t0;
    if (repeat > 0)
        fprintf(stderr, "eval: %ld runs of %d samples in %.6f s: %.6f s per run, %.0f samples/s\n",
                repeat, e.N, dt, dt / repeat, (double)repeat * e.N / dt);

    const moe_config *c = &m.cfg;
    char *elayer = ms_escaped(m.layer); // from the file
    printf("checkpoint  %s (layer %s)\n", ck, elayer);
    free(elayer);
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
    subject_free(&S);
    return rc;
}
