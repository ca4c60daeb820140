/* cmd_train.c - `moescope train`: the checkpoints of sample-checkpoints/.
 *
 * Three modes:
 *   --pretrain          the dense model of a small digits classifier (an MoE
 *                       with n = 1) trained with its LayerNorm and head;
 *   --head PRE          an MoE layer trained from a seed while PRE's LayerNorm
 *                       and head stay frozen: on the digits (PRE made by
 *                       --pretrain) or, when PRE is a teacher, on the
 *                       teacher's Gaussian inputs and head outputs (MSE);
 *   --make-teacher      a random teacher MoE with its head (no training). */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "core/blas_threads.h"
#include "cli/cli.h"
#include "io/digits.h"
#include "io/model_io.h"
#include "model/moe_kernels.h"
#include "io/safetensors.h"
#include "model/train.h"

static const char *USAGE =
    "moescope train --data DIGITS.safetensors (--pretrain | --head PRE.safetensors) -o OUT\n"
    "       moescope train --head TEACHER.safetensors -o OUT      (teacher-student)\n"
    "       moescope train --make-teacher -o TEACHER.safetensors [--embed-dim 8] [--classes 8]\n"
    "       [--n 4] [--h 16] [--router dense|topk] [--k 2] [--shared 0]\n"
    "       [--act relu|gelu|silu_glu] [--no-residual] [--no-bias] [--epochs 60] [--lr 0.003]\n"
    "       [--schedule constant|cosine] [--aux 0] [--batch 32] [--seed 1]\n"
    "       [--embed-dim 32] [--embed-seed 0] [--embed-scale 1] [--samples 20000]\n"
    "       [--gate-scale 2sqrt(d)] [--out-scale 3]\n"
    "       [--eval-out EVAL.safetensors] [--variant NAME] [--quiet]";

static void help(void) {
    printf("usage: %s\n\n"
           "Trains the MoE layer of a small model with a frozen head (LayerNorm + linear):\n"
           "features x -> block z = x + D(x) -> LayerNorm -> head. Samples i %% 5 == 0 are the\n"
           "test split.\n\n"
           "Digits: x = scale * tanh(R p), a fixed random embedding of the 8x8 pixels p into\n"
           "d dims; cross-entropy on the labels.\n"
           "  --pretrain        train the dense model (a single feed-forward block, written as\n"
           "                    an MoE with n = 1) together with LayerNorm and head\n"
           "  --head FILE       the pretrained model: its LayerNorm and head are frozen and\n"
           "                    copied; its embedding settings are used\n\n"
           "Teacher-student: a random teacher MoE whose gate rows are scaled so routing is\n"
           "sharp; students of the same shape learn its head outputs from x ~ N(0, I) with\n"
           "mean squared error, and recover its experts, each student in its own order.\n"
           "  --make-teacher    write a teacher (--seed, --n, --h, --router, --k, --act,\n"
           "                    --embed-dim d, --classes C, --samples N, --gate-scale,\n"
           "                    --out-scale); its data are drawn from --seed + 1\n"
           "  --head TEACHER    train a student of the teacher (no --data)\n\n"
           "  --seed S          the MoE's initialisation and the data order\n"
           "  --schedule cosine lr * (1 + cos(pi * step / steps)) / 2 (default constant)\n"
           "  --aux A           load-balancing loss A * n * sum_i f_i P_i (f_i: share of the\n"
           "                    selections that went to expert i; P_i: mean router softmax)\n"
           "  --eval-out FILE   also write the test split's MoE-layer inputs and labels or\n"
           "                    targets\n"
           "  --variant NAME    recorded in the metadata (train.variant)\n"
           "  --no-bias         no gate or expert biases (they stay 0, untrained), as in\n"
           "                    Mixtral-style layers\n"
           "Training is single-threaded so the same seed gives the same bytes.\n",
           USAGE);
}

typedef struct {
    const char *data, *out, *head, *eval_out, *variant;
    int pretrain, make_teacher, quiet, residual, cosine, no_bias;
    long n, h, k, s, epochs, batch, d, seed, embed_seed, classes, samples;
    double lr, embed_scale, aux, gate_scale, out_scale;
    int have_d, have_es, have_sc;
    moe_router router;
    moe_act act;
} train_args;

static int parse_long(const char *s, long lo, long hi, long *out) {
    long long v;
    if (cli_parse_int(s, lo, hi, &v)) return -1;
    *out = (long)v;
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

/* One option with a value; 1 if a is not one of them, -1 on a bad value. */
static int parse_valued(train_args *t, const char *a, const char *v) {
    int bad = 0;
    if (!strcmp(a, "--data")) t->data = v;
    else if (!strcmp(a, "-o") || !strcmp(a, "--output")) t->out = v;
    else if (!strcmp(a, "--head")) t->head = v;
    else if (!strcmp(a, "--eval-out")) t->eval_out = v;
    else if (!strcmp(a, "--variant")) t->variant = v;
    else if (!strcmp(a, "--n")) bad = parse_long(v, 1, 64, &t->n);
    else if (!strcmp(a, "--h")) bad = parse_long(v, 1, 4096, &t->h);
    else if (!strcmp(a, "--k")) bad = parse_long(v, 1, 64, &t->k);
    else if (!strcmp(a, "--shared")) bad = parse_long(v, 0, 64, &t->s);
    else if (!strcmp(a, "--epochs")) bad = parse_long(v, 0, 100000, &t->epochs);
    else if (!strcmp(a, "--batch")) bad = parse_long(v, 1, 1 << 20, &t->batch);
    else if (!strcmp(a, "--seed")) bad = parse_long(v, 0, INT64_MAX - 1, &t->seed);
    else if (!strcmp(a, "--classes")) bad = parse_long(v, 1, 4096, &t->classes);
    else if (!strcmp(a, "--samples")) bad = parse_long(v, 5, 10000000, &t->samples);
    else if (!strcmp(a, "--embed-dim")) bad = parse_long(v, 1, 4096, &t->d), t->have_d = 1;
    else if (!strcmp(a, "--embed-seed"))
        bad = parse_long(v, 0, INT64_MAX, &t->embed_seed), t->have_es = 1;
    else if (!strcmp(a, "--embed-scale"))
        bad = parse_double(v, 1e-6, 1e6, &t->embed_scale), t->have_sc = 1;
    else if (!strcmp(a, "--lr")) bad = parse_double(v, 1e-9, 10, &t->lr);
    else if (!strcmp(a, "--aux")) bad = parse_double(v, 0, 100, &t->aux);
    else if (!strcmp(a, "--gate-scale")) bad = parse_double(v, 1e-6, 1e6, &t->gate_scale);
    else if (!strcmp(a, "--out-scale")) bad = parse_double(v, 1e-6, 1e6, &t->out_scale);
    else if (!strcmp(a, "--schedule")) {
        if (!strcmp(v, "cosine")) t->cosine = 1;
        else if (!strcmp(v, "constant")) t->cosine = 0;
        else bad = 1;
    } else if (!strcmp(a, "--router")) {
        if (!strcmp(v, "dense")) t->router = ROUTER_DENSE;
        else if (!strcmp(v, "topk")) t->router = ROUTER_TOPK;
        else bad = 1;
    } else if (!strcmp(a, "--act")) {
        if (!strcmp(v, "relu")) t->act = ACT_RELU;
        else if (!strcmp(v, "gelu")) t->act = ACT_GELU;
        else if (!strcmp(v, "silu_glu")) t->act = ACT_SILU_GLU;
        else bad = 1;
    } else return 1;
    return bad ? -1 : 0;
}

/* 0 to go on, -1 after --help, else the exit code of an error. */
static int parse_args(train_args *t, int argc, char **argv) {
    *t = (train_args){.residual = 1, .n = 4, .h = 16, .k = 2, .epochs = 60, .batch = 32,
                      .d = 32, .seed = 1, .classes = 8, .samples = 20000, .lr = 3e-3,
                      .embed_scale = 1.0, .out_scale = 3.0, .router = ROUTER_DENSE,
                      .act = ACT_RELU};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return help(), -1;
        if (!strcmp(a, "--pretrain")) { t->pretrain = 1; continue; }
        if (!strcmp(a, "--make-teacher")) { t->make_teacher = 1; continue; }
        if (!strcmp(a, "--quiet")) { t->quiet = 1; continue; }
        if (!strcmp(a, "--no-residual")) { t->residual = 0; continue; }
        if (!strcmp(a, "--no-bias")) { t->no_bias = 1; continue; }
        if (i + 1 >= argc) return cli_usage_error(USAGE, "train: %s needs a value", a);
        const char *v = argv[++i];
        int r = parse_valued(t, a, v);
        if (r > 0) return cli_usage_error(USAGE, "train: unknown option '%s'", a);
        if (r < 0) return cli_usage_error(USAGE, "train: bad value '%s' for %s", v, a);
    }
    if (!t->out) return cli_usage_error(USAGE, "train: -o OUT is required");
    if (t->make_teacher + t->pretrain + !!t->head != 1)
        return cli_usage_error(USAGE,
                               "train: give exactly one of --pretrain, --head and --make-teacher");
    if (t->pretrain && !t->data) return cli_usage_error(USAGE, "train: --data is required");
    if (t->router == ROUTER_TOPK && t->k > t->n)
        return cli_usage_error(USAGE, "train: --k %ld is larger than --n %ld", t->k, t->n);
    if (t->gate_scale == 0) t->gate_scale = 2.0 * sqrt((double)(t->have_d ? t->d : 8));
    // never write over an input (or one output over the other)
    int nin = !!t->data + !!t->head;
    const char *ins[2] = {t->data ? t->data : t->head, t->head};
    const out_spec outs[2] = {{t->out, "-o", OUT_FILE}, {t->eval_out, "--eval-out", OUT_FILE}};
    return cli_check_outputs("train", USAGE, outs, 2, ins, nin);
}

static int write_evalset(const train_set *te, const char *path, const char *variant,
                         const char *what, ms_err *err) {
    int64_t *lab = NULL;
    st_writer *w = st_writer_new();
    int64_t xs[2] = {te->N, te->d}, ys[1] = {te->N}, ts[2] = {te->N, te->C};
    st_writer_add_f32(w, "inputs", 2, xs, te->x);
    if (te->y) {
        lab = ms_malloc((size_t)te->N * sizeof(int64_t));
        for (int i = 0; i < te->N; i++) lab[i] = te->y[i];
        st_writer_add_i64(w, "labels", 1, ys, lab);
    } else {
        st_writer_add_f32(w, "targets", 2, ts, te->t);
    }
    st_writer_meta(w, "moescope.evalset", what);
    if (variant) st_writer_meta(w, "train.variant", variant);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    free(lab);
    return rc;
}

static void meta_long(moe_model *m, const char *key, long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    moe_meta_set(m, key, buf);
}

static void meta_double(moe_model *m, const char *key, double v) {
    char buf[64];
    fmt_double(buf, sizeof buf, v);
    moe_meta_set(m, key, buf);
}

static void base_config(moe_config *c, const train_args *t, int d, int C) {
    memset(c, 0, sizeof *c);
    c->n = t->pretrain ? 1 : (int)t->n;
    c->d = d;
    c->h = (int)t->h;
    c->k = (int)t->k;
    c->s = t->pretrain ? 0 : (int)t->s;
    c->C = C;
    c->router = t->pretrain ? ROUTER_DENSE : t->router;
    c->act = t->act;
    c->residual = t->residual;
    c->has_gate_bias = c->has_expert_bias = c->has_norm = c->has_head = 1;
    // --no-bias: gate and expert biases stay 0 (Mixtral-style layers have none)
    if (t->no_bias && !t->pretrain) c->has_gate_bias = c->has_expert_bias = 0;
}

/* What a file is, in words (metadata "recipe", shown by `info`): the students of a
 * teacher all approximate one function, which builds correspondence in; seeds trained
 * on the task's own loss each find their own. */
#define RECIPE_TEACHER "a random teacher MoE layer (not trained): the function its students learn"
#define RECIPE_STUDENT "teacher-student: a fresh MoE layer trained by mean squared error to " \
    "reproduce a random teacher layer's outputs (its head frozen), so all seeds approximate one function"
#define RECIPE_PRETRAIN "pretraining: a dense layer trained with its LayerNorm and head on the " \
    "class loss; the MoE seeds keep its LayerNorm and head, frozen"
#define RECIPE_MOE "a fresh MoE layer trained on the class loss alone, the embedding, LayerNorm " \
    "and head frozen, no teacher: each seed finds its own function"

/* --make-teacher: a random teacher, no training. */
static int make_teacher(const train_args *t) {
    moe_config c;
    base_config(&c, t, (int)(t->have_d ? t->d : 8), (int)t->classes);
    moe_model m;
    moe_alloc(&m, &c);
    m.layer = ms_strdup("moe");
    teacher_opts to = {(uint64_t)t->seed, t->gate_scale, t->out_scale};
    train_init_teacher(&m, &to);
    moe_meta_set(&m, "train.mode", "teacher");
    if (t->variant) moe_meta_set(&m, "train.variant", t->variant);
    meta_long(&m, "train.seed", t->seed);
    meta_long(&m, "train.data_seed", t->seed + 1);
    meta_long(&m, "train.samples", t->samples);
    meta_double(&m, "train.gate_scale", t->gate_scale);
    meta_double(&m, "train.out_scale", t->out_scale);
    moe_meta_set(&m, "train.data", "x ~ N(0, I); targets = this model's head outputs");
    moe_meta_set(&m, "recipe", RECIPE_TEACHER);
    ms_err err;
    int rc = moe_save(&m, t->out, &err) ? cli_error("%s", err.msg) : 0;
    if (!rc && !t->quiet)
        fprintf(stderr, "train: wrote teacher %s (n=%d, d=%d, h=%d, %s)\n", t->out, c.n, c.d,
                c.h, moe_router_name(c.router));
    moe_free(&m);
    return rc;
}

/* The frozen part: pre (loaded from --head), checked against the options;
 * teacher = 1 when it is a teacher. */
static int load_head(train_args *t, moe_model *pre, int *teacher) {
    ms_err err;
    if (moe_load(pre, t->head, NULL, cli_overrides(), &err)) return cli_error("%s", err.msg);
    if (!pre->cfg.has_head) return cli_error("%s: no head (head.out.weight) to freeze", t->head);
    const char *mode = moe_meta_get(pre, "train.mode");
    *teacher = mode && !strcmp(mode, "teacher");
    if (*teacher) {
        if (t->data) return cli_error("%s is a teacher: its data are generated, drop --data",
                                      t->head);
        const char *ns = moe_meta_get(pre, "train.samples"), *ds = moe_meta_get(pre, "train.data_seed");
        if (!ns || !ds) return cli_error("%s: teacher without train.samples/data_seed", t->head);
        if (parse_long(ns, 5, 10000000, &t->samples))
            return cli_error("%s: metadata train.samples = '%s' is not an integer in 5..10000000",
                             t->head, ns);
        if (parse_long(ds, 0, INT64_MAX, &t->embed_seed))
            return cli_error("%s: metadata train.data_seed = '%s' is not a non-negative integer",
                             t->head, ds);
        t->d = pre->cfg.d;
        return 0;
    }
    if (!t->data) return cli_usage_error(USAGE, "train: --data is required");
    // the embedding is part of the frozen backbone: take it from the head's file
    const char *md = moe_meta_get(pre, "train.embed_dim");
    const char *ms = moe_meta_get(pre, "train.embed_seed");
    const char *mc = moe_meta_get(pre, "train.embed_scale");
    if (!md || !ms || !mc)
        return cli_error("%s: no train.embed_* metadata (not made by 'train --pretrain')",
                         t->head);
    long pd, ps;
    double pc;
    if (parse_long(md, 1, 4096, &pd) || parse_long(ms, 0, INT64_MAX, &ps) ||
        parse_double(mc, 1e-6, 1e6, &pc))
        return cli_error("%s: train.embed_dim '%s', embed_seed '%s' or embed_scale '%s' is not "
                         "a number in range", t->head, md, ms, mc);
    if ((t->have_d && pd != t->d) || (t->have_es && ps != t->embed_seed) ||
        (t->have_sc && pc != t->embed_scale))
        return cli_error("%s: embedding d=%s seed=%s scale=%s differs from the options",
                         t->head, md, ms, mc);
    t->d = pd;
    t->embed_seed = ps;
    t->embed_scale = pc;
    if (pre->cfg.d != t->d)
        return cli_error("%s: model width %d but train.embed_dim %ld", t->head, pre->cfg.d, t->d);
    return 0;
}

static void record_meta(moe_model *m, const train_args *t, int teacher, const train_result *r) {
    moe_meta_set(m, "train.mode", t->pretrain ? "pretrain" : teacher ? "student" : "moe");
    moe_meta_set(m, "recipe", t->pretrain ? RECIPE_PRETRAIN : teacher ? RECIPE_STUDENT : RECIPE_MOE);
    if (t->variant) moe_meta_set(m, "train.variant", t->variant);
    if (teacher) {
        moe_meta_set(m, "train.data", "the teacher's: x ~ N(0, I), its head outputs (MSE)");
        meta_long(m, "train.samples", t->samples);
    } else {
        moe_meta_set(m, "train.data", base_name(t->data));
    }
    moe_meta_set(m, "train.split", "test = samples i % 5 == 0");
    if (t->head) moe_meta_set(m, "train.head", base_name(t->head));
    meta_long(m, "train.seed", t->seed);
    if (!teacher) {
        meta_long(m, "train.embed_dim", t->d);
        meta_long(m, "train.embed_seed", t->embed_seed);
        meta_double(m, "train.embed_scale", t->embed_scale);
    }
    meta_long(m, "train.epochs", t->epochs);
    meta_double(m, "train.lr", t->lr);
    if (t->cosine) moe_meta_set(m, "train.schedule", "cosine");
    if (t->aux > 0) meta_double(m, "train.aux_loss", t->aux);
    meta_long(m, "train.batch", t->batch);
    moe_meta_set(m, "train.optimizer", "adam (0.9, 0.999, 1e-8)");
    char buf[64];
    snprintf(buf, sizeof buf, teacher ? "%.6g" : "%.6f", r->train_loss);
    moe_meta_set(m, "train.train_loss", buf);
    if (teacher) {
        snprintf(buf, sizeof buf, "%.6g", r->test_loss);
        moe_meta_set(m, "train.test_mse", buf);
    } else {
        snprintf(buf, sizeof buf, "%.6f", r->test_acc);
        moe_meta_set(m, "train.test_accuracy", buf);
    }
}

/* Train the MoE of m on tr (te reported) and write the outputs. */
static int train_and_save(moe_model *m, const train_args *t, int teacher, const train_set *tr,
                          const train_set *te) {
    train_opts o = {.epochs = (int)t->epochs, .batch = (int)t->batch, .lr = t->lr,
                    .seed = (uint64_t)t->seed, .with_head = t->pretrain, .progress = !t->quiet,
                    .cosine = t->cosine, .aux = t->aux};
    train_result r;
    ms_err err;
    if (train_run(m, tr, te, &o, &r, &err)) return cli_error("%s", err.msg);
    record_meta(m, t, teacher, &r);
    if (moe_save(m, t->out, &err)) return cli_error("%s", err.msg);
    const char *what = teacher ? "teacher test split (i % 5 == 0): inputs and head outputs"
                               : "digits test split (i % 5 == 0), MoE-layer inputs";
    if (t->eval_out && write_evalset(te, t->eval_out, t->variant, what, &err))
        return cli_error("%s", err.msg);
    if (!t->quiet) {
        fprintf(stderr, "train: wrote %s (%s, n=%d, seed %ld): train loss %.4g, ", t->out,
                t->pretrain ? "pretrained dense" : teacher ? "student" : "moe", m->cfg.n,
                t->seed, r.train_loss);
        if (teacher) fprintf(stderr, "test mse %.4g\n", r.test_loss);
        else fprintf(stderr, "test acc %.4f\n", r.test_acc);
    }
    return 0;
}

int cmd_train(int argc, char **argv) {
    train_args t;
    int rc = parse_args(&t, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    // one BLAS thread: a fixed order of the reductions, hence reproducible bytes
    // (main has set it already; this keeps library callers right)
    blas_threads_default(1);
    if (t.make_teacher) return make_teacher(&t);
    moe_model pre;
    memset(&pre, 0, sizeof pre);
    int teacher = 0;
    if (t.head && (rc = load_head(&t, &pre, &teacher))) {
        moe_free(&pre);
        return rc;
    }
    train_set tr, te;
    ms_err err;
    if (teacher) {
        train_teacher_data(&pre, (int)t.samples, (uint64_t)t.embed_seed, &tr, &te);
    } else if (digits_load(t.data, (int)t.d, (uint64_t)t.embed_seed, t.embed_scale, &tr,
                                 &te, &err)) {
        moe_free(&pre);
        return cli_error("%s", err.msg);
    }
    moe_config c;
    base_config(&c, &t, (int)t.d, tr.C);
    moe_model m;
    memset(&m, 0, sizeof m);
    if (t.head) {
        if (pre.cfg.C < tr.C || (teacher && pre.cfg.C != tr.C)) {
            rc = cli_error("%s: head has %d outputs, the data %d", t.head, pre.cfg.C, tr.C);
            goto done;
        }
        c.C = pre.cfg.C;
        c.has_norm = pre.cfg.has_norm;
        if (pre.cfg.residual != t.residual) {
            rc = cli_error("%s: residual=%d but this run has residual=%d", t.head,
                           pre.cfg.residual, t.residual);
            goto done;
        }
    }
    moe_alloc(&m, &c);
    m.layer = ms_strdup("moe");
    train_init(&m, (uint64_t)t.seed, t.pretrain);
    if (t.head) {
        size_t d = (size_t)c.d;
        if (c.has_norm) {
            memcpy(m.norm_w, pre.norm_w, d * sizeof(float));
            memcpy(m.norm_b, pre.norm_b, d * sizeof(float));
        }
        memcpy(m.head_w, pre.head_w, (size_t)c.C * d * sizeof(float));
        memcpy(m.head_b, pre.head_b, (size_t)c.C * sizeof(float));
    }
    rc = train_and_save(&m, &t, teacher, &tr, &te);
done:
    moe_free(&m);
    train_set_free(&tr);
    train_set_free(&te);
    moe_free(&pre);
    return rc;
}
