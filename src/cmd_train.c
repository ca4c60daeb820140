/* cmd_train.c - `moescope train`: the pretrained dense model, or the MoE layer
 * of a small digits classifier trained from a seed with the head frozen. */
#include <cblas.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cli.h"
#include "safetensors.h"
#include "train.h"

static const char *USAGE =
    "moescope train --data DIGITS.safetensors (--pretrain | --head PRE.safetensors) -o OUT\n"
    "       [--n 4] [--h 16] [--router dense|topk] [--k 2] [--shared 0]\n"
    "       [--act relu|gelu|silu_glu] [--no-residual] [--epochs 60] [--lr 0.003]\n"
    "       [--batch 32] [--seed 1] [--embed-dim 32] [--embed-seed 0] [--embed-scale 1]\n"
    "       [--eval-out EVAL.safetensors] [--variant NAME] [--quiet]";

static void help(void) {
    printf("usage: %s\n\n"
           "Trains the MoE layer of a small digits classifier: frozen features x (a fixed\n"
           "random embedding x = scale * tanh(R p) of the 8x8 pixels p into d dims) -> block\n"
           "z = x + D(x) -> LayerNorm -> linear head. Samples i %% 5 == 0 are the test split.\n\n"
           "  --pretrain        train the dense model (a single feed-forward block, written as\n"
           "                    an MoE with n = 1) together with LayerNorm and head\n"
           "  --head FILE       the pretrained model: its LayerNorm and head are frozen and\n"
           "                    copied; its embedding settings are used\n"
           "  --seed S          the MoE's initialisation and the data order\n"
           "  --eval-out FILE   also write the test split's MoE-layer inputs and labels\n"
           "  --variant NAME    recorded in the metadata (train.variant)\n"
           "Training is single-threaded so the same seed gives the same bytes.\n",
           USAGE);
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The shortest %g form that reads back as the same double. */
static void fmt_double(char *buf, size_t size, double v) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static int write_evalset(const train_set *te, const char *path, const char *variant,
                         ms_err *err) {
    int64_t *lab = ms_malloc((size_t)te->N * sizeof(int64_t));
    for (int i = 0; i < te->N; i++) lab[i] = te->y[i];
    st_writer *w = st_writer_new();
    int64_t xs[2] = {te->N, te->d}, ys[1] = {te->N};
    st_writer_add_f32(w, "inputs", 2, xs, te->x);
    st_writer_add_i64(w, "labels", 1, ys, lab);
    st_writer_meta(w, "moescope.evalset", "digits test split (i % 5 == 0), MoE-layer inputs");
    if (variant) st_writer_meta(w, "train.variant", variant);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    free(lab);
    return rc;
}

int cmd_train(int argc, char **argv) {
    const char *data = NULL, *out = NULL, *head = NULL, *eval_out = NULL, *variant = NULL;
    int pretrain = 0, quiet = 0, residual = 1;
    long n = 4, h = 16, k = 2, s = 0, epochs = 60, batch = 32, d = 32;
    long seed = 1, embed_seed = 0;
    double lr = 3e-3, embed_scale = 1.0;
    int have_d = 0, have_es = 0, have_sc = 0;
    moe_router router = ROUTER_DENSE;
    moe_act act = ACT_RELU;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 0;
        }
        if (!strcmp(a, "--pretrain")) { pretrain = 1; continue; }
        if (!strcmp(a, "--quiet")) { quiet = 1; continue; }
        if (!strcmp(a, "--no-residual")) { residual = 0; continue; }
        if (i + 1 >= argc) return cli_usage_error(USAGE, "train: %s needs a value", a);
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) out = v;
        else if (!strcmp(a, "--head")) head = v;
        else if (!strcmp(a, "--eval-out")) eval_out = v;
        else if (!strcmp(a, "--variant")) variant = v;
        else if (!strcmp(a, "--n")) bad = parse_long(v, 1, 64, &n);
        else if (!strcmp(a, "--h")) bad = parse_long(v, 1, 4096, &h);
        else if (!strcmp(a, "--k")) bad = parse_long(v, 1, 64, &k);
        else if (!strcmp(a, "--shared")) bad = parse_long(v, 0, 64, &s);
        else if (!strcmp(a, "--epochs")) bad = parse_long(v, 0, 100000, &epochs);
        else if (!strcmp(a, "--batch")) bad = parse_long(v, 1, 1 << 20, &batch);
        else if (!strcmp(a, "--seed")) bad = parse_long(v, 0, INT64_MAX, &seed);
        else if (!strcmp(a, "--embed-dim")) bad = parse_long(v, 1, 4096, &d), have_d = 1;
        else if (!strcmp(a, "--embed-seed")) bad = parse_long(v, 0, INT64_MAX, &embed_seed), have_es = 1;
        else if (!strcmp(a, "--embed-scale")) bad = parse_double(v, 1e-6, 1e6, &embed_scale), have_sc = 1;
        else if (!strcmp(a, "--lr")) bad = parse_double(v, 1e-9, 10, &lr);
        else if (!strcmp(a, "--router")) {
            if (!strcmp(v, "dense")) router = ROUTER_DENSE;
            else if (!strcmp(v, "topk")) router = ROUTER_TOPK;
            else bad = 1;
        } else if (!strcmp(a, "--act")) {
            if (!strcmp(v, "relu")) act = ACT_RELU;
            else if (!strcmp(v, "gelu")) act = ACT_GELU;
            else if (!strcmp(v, "silu_glu")) act = ACT_SILU_GLU;
            else bad = 1;
        } else return cli_usage_error(USAGE, "train: unknown option '%s'", a);
        if (bad) return cli_usage_error(USAGE, "train: bad value '%s' for %s", v, a);
    }
    if (!data) return cli_usage_error(USAGE, "train: --data is required");
    if (!out) return cli_usage_error(USAGE, "train: -o OUT is required");
    if (pretrain == !!head)
        return cli_usage_error(USAGE, "train: give exactly one of --pretrain and --head");
    if (router == ROUTER_TOPK && k > n)
        return cli_usage_error(USAGE, "train: --k %ld is larger than --n %ld", k, n);

    // never write over an input (or one output over the other)
    ms_err ierr;
    const char *inputs[2] = {data, head ? head : data};
    const char *outs[2] = {out, eval_out}, *out_opts[2] = {"-o", "--eval-out"};
    if (af_check_not_input(out, inputs, 2, &ierr) ||
        (eval_out && af_check_not_input(eval_out, inputs, 2, &ierr)))
        return cli_error("%s", ierr.msg);
    if (eval_out && af_check_distinct(outs, out_opts, 2, &ierr))
        return cli_usage_error(USAGE, "train: %s", ierr.msg);

    // one BLAS thread: a fixed order of the reductions, hence reproducible bytes
    openblas_set_num_threads(1);
    ms_err err;
    moe_model pre;
    memset(&pre, 0, sizeof pre);
    if (head) {
        if (moe_load(&pre, head, NULL, &err)) return cli_error("%s", err.msg);
        if (!pre.cfg.has_head) {
            moe_free(&pre);
            return cli_error("%s: no head (head.out.weight) to freeze", head);
        }
        // the embedding is part of the frozen backbone: take it from the head's file
        const char *md = moe_meta_get(&pre, "train.embed_dim");
        const char *ms = moe_meta_get(&pre, "train.embed_seed");
        const char *mc = moe_meta_get(&pre, "train.embed_scale");
        if (!md || !ms || !mc) {
            moe_free(&pre);
            return cli_error("%s: no train.embed_* metadata (not made by 'train --pretrain')",
                             head);
        }
        long pd = strtol(md, NULL, 10), ps = strtol(ms, NULL, 10);
        double pc = strtod(mc, NULL);
        if ((have_d && pd != d) || (have_es && ps != embed_seed) ||
            (have_sc && pc != embed_scale)) {
            int rc = cli_error("%s: embedding d=%s seed=%s scale=%s differs from the options",
                               head, md, ms, mc);
            moe_free(&pre);
            return rc;
        }
        d = pd;
        embed_seed = ps;
        embed_scale = pc;
        if (pre.cfg.d != d) {
            moe_free(&pre);
            return cli_error("%s: model width %d but train.embed_dim %ld", head, pre.cfg.d, d);
        }
    }

    train_set tr, te;
    if (train_load_digits(data, (int)d, (uint64_t)embed_seed, embed_scale, &tr, &te, &err)) {
        moe_free(&pre);
        return cli_error("%s", err.msg);
    }
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = pretrain ? 1 : (int)n;
    c.d = (int)d;
    c.h = (int)h;
    c.k = (int)k;
    c.s = pretrain ? 0 : (int)s;
    c.C = tr.C;
    c.router = pretrain ? ROUTER_DENSE : router;
    c.act = act;
    c.residual = residual;
    c.has_gate_bias = c.has_expert_bias = c.has_norm = c.has_head = 1;
    int rc = 0;
    if (head) {
        if (pre.cfg.C < tr.C) {
            rc = cli_error("%s: head has %d outputs, the data %d classes", head, pre.cfg.C, tr.C);
            goto done_data;
        }
        c.C = pre.cfg.C;
        c.has_norm = pre.cfg.has_norm;
        if (pre.cfg.residual != residual) {
            rc = cli_error("%s: residual=%d but this run has residual=%d", head, pre.cfg.residual,
                           residual);
            goto done_data;
        }
    }
    moe_model m;
    moe_alloc(&m, &c);
    m.layer = ms_strdup("moe");
    train_init(&m, (uint64_t)seed, pretrain);
    if (head) {
        if (c.has_norm) {
            memcpy(m.norm_w, pre.norm_w, (size_t)d * sizeof(float));
            memcpy(m.norm_b, pre.norm_b, (size_t)d * sizeof(float));
        }
        memcpy(m.head_w, pre.head_w, (size_t)c.C * d * sizeof(float));
        memcpy(m.head_b, pre.head_b, (size_t)c.C * sizeof(float));
    }
    train_opts o = {.epochs = (int)epochs, .batch = (int)batch, .lr = lr,
                    .seed = (uint64_t)seed, .with_head = pretrain, .progress = !quiet};
    double loss = 0, acc = 0;
    if (train_run(&m, &tr, &te, &o, &loss, &acc, &err)) {
        rc = cli_error("%s", err.msg);
        goto done_model;
    }
    char buf[64];
    moe_meta_set(&m, "train.mode", pretrain ? "pretrain" : "moe");
    if (variant) moe_meta_set(&m, "train.variant", variant);
    moe_meta_set(&m, "train.data", base_name(data));
    moe_meta_set(&m, "train.split", "test = samples i % 5 == 0");
    if (head) moe_meta_set(&m, "train.head", base_name(head));
    snprintf(buf, sizeof buf, "%ld", seed);
    moe_meta_set(&m, "train.seed", buf);
    snprintf(buf, sizeof buf, "%ld", d);
    moe_meta_set(&m, "train.embed_dim", buf);
    snprintf(buf, sizeof buf, "%ld", embed_seed);
    moe_meta_set(&m, "train.embed_seed", buf);
    fmt_double(buf, sizeof buf, embed_scale);
    moe_meta_set(&m, "train.embed_scale", buf);
    snprintf(buf, sizeof buf, "%ld", epochs);
    moe_meta_set(&m, "train.epochs", buf);
    fmt_double(buf, sizeof buf, lr);
    moe_meta_set(&m, "train.lr", buf);
    snprintf(buf, sizeof buf, "%ld", batch);
    moe_meta_set(&m, "train.batch", buf);
    moe_meta_set(&m, "train.optimizer", "adam (0.9, 0.999, 1e-8)");
    snprintf(buf, sizeof buf, "%.6f", loss);
    moe_meta_set(&m, "train.train_loss", buf);
    snprintf(buf, sizeof buf, "%.6f", acc);
    moe_meta_set(&m, "train.test_accuracy", buf);
    if (moe_save(&m, out, &err)) {
        rc = cli_error("%s", err.msg);
        goto done_model;
    }
    if (eval_out && write_evalset(&te, eval_out, variant, &err)) {
        rc = cli_error("%s", err.msg);
        goto done_model;
    }
    if (!quiet)
        fprintf(stderr, "train: wrote %s (%s, n=%d, seed %ld): train loss %.4f, test acc %.4f\n",
                out, pretrain ? "pretrained dense" : "moe", c.n, seed, loss, acc);
done_model:
    moe_free(&m);
done_data:
    train_set_free(&tr);
    train_set_free(&te);
    moe_free(&pre);
    return rc;
}
