/* lesson.c - the guided walk of lesson.h: every number is computed here, from
 * the lesson's checkpoints, by the same library calls the commands use. */
#include "analysis/lesson.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "align/align.h"
#include "io/checkpoint.h"
#include "model/evaluator.h"
#include "landscape/landscape.h"
#include "align/lap.h"
#include "core/env.h"
#include "core/ms_text.h"
#include "io/model_io.h"
#include "io/outputs.h"
#include "model/model.h"
#include "model/symmetry.h"
#include "network/net_landscape.h"
#include "network/net_objective.h"

#define LESSON_T 25                /* interpolation points, as the commands' default */
#define SCRAMBLE_SEED 7            /* step 2-3: moescope scramble A --seed 7 --translate */
#define CENTRE_SEED 2              /* step 4: moescope scramble B --seed 2 --translate-scale 10 */
#define CENTRE_SCALE 10.0
#define TOP1_SCALE 3.0             /* step 6: gate scores times 3 */

struct lesson {
    char *a, *b, *e;               /* the paths, for messages and commands */
    char *qa, *qb, *qe, *prog;     /* the same, quoted for a shell; the binary as run */
    char *dir;                     /* where the steps' files go (kept) */
    char *native_a;                /* A in moescope's format, beside the files built from it */
    int have_scramble;             /* scrambled_A written */
    moe_model A, B;
    evalset E;                     /* a network's: its first MoE block's own inputs */
    /* a network (e holds input_ids or pixel_values): the curves are its loss, the layer its first MoE block */
    net_model na, nb;
    net_evalset ne;
    net_objective *obj;
};

/* The files the steps build, in the lesson's directory. */
enum { F_SCRAMBLED, F_TRANSLATED, F_TOP1, F_TOP1_SCALED, F_GROUPED, F_GROUPED_WITHIN,
       F_GROUPED_ACROSS, F_NATIVE_A };
static const char *step_files[] = {"scrambled_A.safetensors", "translated_B.safetensors",
                                   "top1_A.safetensors", "top1_A_scaled.safetensors",
                                   "grouped_A.safetensors", "grouped_A_within.safetensors",
                                   "grouped_A_across.safetensors", "A.safetensors"};

/* printf into a new string (malloc'd) */
static char *fmt_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *fmt_new(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *out = ms_malloc((size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(out, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    return out;
}

/* p as a shell word: bare when safe, else single-quoted (malloc'd) */
static char *sh_word(const char *p) {
    int safe = *p != '\0';
    for (const char *c = p; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *c)) safe = 0;
    if (safe) return ms_strdup(p);
    char *q = ms_malloc(4 * strlen(p) + 3), *o = q;
    *o++ = '\'';
    for (; *p; p++) {
        if (*p == '\'') memcpy(o, "'\\''", 4), o += 4;
        else *o++ = *p;
    }
    *o++ = '\'';
    *o = 0;
    return q;
}

/* a step's file; a network's is a folder (the network with that block), named
 * without the file suffix */
static void step_path(const lesson *L, int file, char *out, size_t size) {
    const char *f = step_files[file];
    int stem = L->obj ? (int)(strlen(f) - strlen(".safetensors")) : (int)strlen(f);
    snprintf(out, size, "%s/%.*s", L->dir, stem, f);
}

/* a network step's folder left by an earlier lesson in the same directory (a
 * save never replaces a folder): its files, then the folder */
static void remove_step_folder(const char *p) {
    DIR *d = opendir(p);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            char *q = fmt_new("%s/%s", p, de->d_name);
            unlink(q);
            free(q);
        }
    closedir(d);
    rmdir(p);
}

/* m at the lesson's file: in moescope's own format (its router as m has it: a
 * real family's layout would take the router from A's config.json instead), or
 * for a network the network with this block, so the printed commands run on
 * the network's loss */
static int lesson_save(const moe_model *m, const lesson *L, int file, char *path, size_t size, ms_err *err) {
    step_path(L, file, path, size);
    if (L->obj) {
        remove_step_folder(path);
        return moe_save(m, path, err);
    }
    moe_model c = *m; // a shallow view with the family and the layer name of the native format
    c.cfg.family[0] = '\0';
    c.layer = "moe";
    c.path = NULL;
    return moe_save(&c, path, err);
}

/* a and b as networks: their first MoE block as the lesson's layer, its own
 * inputs as E, the curves on the network's loss */
static int open_network(lesson *L, const char *a, const char *b, const char *e, const family_overrides *fo,
                        ms_err *err) {
    char what[512];
    if (net_load(&L->na, a, fo, err) || net_load(&L->nb, b, fo, err) || net_check_compatible(&L->na, &L->nb, err))
        return -1;
    int d = net_backbone_diff(a, b, what, sizeof what, err);
    if (d > 0) return ms_fail(err, "%s and %s do not share their frozen backbone: %s", a, b, what);
    if (d < 0 || net_evalset_load(&L->ne, e, err) || net_evalset_check(&L->ne, &L->na, err)) return -1;
    if (!L->na.cfg.nmoe) return ms_fail(err, "%s: the network has no MoE block", a);
    net_obj_opts o = {.chosen = 0};
    align_opts_default(&o.other);
    net_par par = {0};
    if (net_objective_new(&L->na, &L->nb, &L->ne, &o, &L->obj, err) ||
        net_block_inputs(&L->na, &L->ne, 0, &par, &L->E, err))
        return -1;
    moe_clone(&L->A, &L->na.moe[0]);
    moe_clone(&L->B, &L->nb.moe[0]);
    return 0;
}

static void close_network(lesson *L) {
    net_objective_free(L->obj);
    net_free(&L->na);
    net_free(&L->nb);
    net_evalset_free(&L->ne);
}

/* DIR's mark: the lesson wrote there, so a rerun may replace its files */
#define LESSON_MARK ".moescope-lesson"

/* Before anything is written: DIR not inside an input's folder, no step file an
 * input, and a step file or folder already there replaced only when DIR is a
 * lesson's (its mark, or the default moescope-lesson) - never a file of the
 * user's that has a step's name (a scrambled_A.safetensors of their own). */
static int check_dir(const lesson *L, ms_err *err) {
    const char *ins[3] = {L->a, L->b, L->e};
    if (outputs_check_dir(L->dir, "lesson: --dir", ins, 3, err)) return -1;
    char *mark = fmt_new("%s/%s", L->dir, LESSON_MARK), path[1024];
    struct stat sb;
    // marked, or the default directory (a lesson's by its name, from before the mark too)
    int ours = !lstat(mark, &sb) || !strcmp(L->dir, LESSON_DIR_DEFAULT), rc = 0;
    free(mark);
    int native_a = !L->obj && strcmp(moe_family(&L->A.cfg), "native"); // A.safetensors written too
    for (int f = 0; f < F_NATIVE_A + native_a && !rc; f++) {
        step_path(L, f, path, sizeof path);
        if (outputs_check_not_input(path, "lesson: its file", ins, 3, err)) rc = -1;
        else if (!ours && !lstat(path, &sb))
            rc = ms_fail(err, "lesson: %s is there and %s is no lesson's directory (no %s in it): refusing to replace "
                              "it; give --dir a new directory",
                         path, L->dir, LESSON_MARK);
    }
    return rc;
}

/* DIR made (when missing) and marked as the lesson's */
static int make_dir(const lesson *L, ms_err *err) {
    struct stat sb;
    if (mkdir(L->dir, 0777) && (errno != EEXIST || stat(L->dir, &sb) || !S_ISDIR(sb.st_mode)))
        return ms_fail(err, "lesson: cannot create the directory %s for its files: %s (give --dir DIR)", L->dir,
                       strerror(errno));
    char *mark = fmt_new("%s/%s", L->dir, LESSON_MARK);
    FILE *fp = fopen(mark, "wx"); // there already: a lesson's directory
    if (fp) {
        fputs("moescope lesson's files: a lesson run with --dir here replaces them\n", fp);
        fclose(fp);
    }
    free(mark);
    return 0;
}

lesson *lesson_open(const char *a, const char *b, const char *e, const family_overrides *o,
                    const char *dir, const char *prog,
                    ms_err *err) {
    lesson *L = ms_calloc(1, sizeof *L);
    if (e && net_evalset_is(e)) {
        if (open_network(L, a, b, e, o, err)) {
            close_network(L);
            moe_free(&L->A);
            moe_free(&L->B);
            evalset_free(&L->E);
            free(L);
            return NULL;
        }
    } else if (moe_load(&L->A, a, NULL, o, err)) {
        return free(L), NULL;
    }
    if (!L->obj && moe_load(&L->B, b, NULL, o, err)) return moe_free(&L->A), free(L), NULL;
    if (!L->obj && (moe_check_compatible(&L->A, &L->B, err) || evalset_load(&L->E, e, err))) {
        moe_free(&L->A);
        moe_free(&L->B);
        free(L);
        return NULL;
    }
    L->a = ms_strdup(a);
    L->b = ms_strdup(b);
    L->e = ms_strdup(e);
    L->qa = sh_word(a), L->qb = sh_word(b), L->qe = sh_word(e), L->prog = sh_word(prog);
    L->dir = ms_strdup(dir);
    if (!L->obj && moe_eval_check(&L->A, &L->E, err)) {
        lesson_close(L);
        return NULL;
    }
    if (check_dir(L, err) || make_dir(L, err)) {
        lesson_close(L);
        return NULL;
    }
    // a real family's A beside the files built from it, in the same format, for the explorer
    char path[1024];
    if (!L->obj && strcmp(moe_family(&L->A.cfg), "native")) {
        if (lesson_save(&L->A, L, F_NATIVE_A, path, sizeof path, err)) {
            lesson_close(L);
            return NULL;
        }
        L->native_a = ms_strdup(path);
    }
    return L;
}

const char *lesson_dir(const lesson *L) { return L->dir; }

void lesson_close(lesson *L) {
    if (!L) return;
    close_network(L);
    moe_free(&L->A);
    moe_free(&L->B);
    evalset_free(&L->E);
    free(L->a);
    free(L->b);
    free(L->e);
    free(L->qa);
    free(L->qb);
    free(L->qe);
    free(L->prog);
    free(L->dir);
    free(L->native_a);
    free(L);
}

/* A for a pair with one of the lesson's files (the same format as those) */
static const char *pair_a(const lesson *L) { return L->native_a ? L->native_a : L->a; }

/* a lesson file's path as a shell word (malloc'd) */
static char *qfile(const lesson *L, int file) {
    char path[1024];
    step_path(L, file, path, sizeof path);
    return sh_word(path);
}

/* a name in the lesson's directory for an output in src's layout (a sharded src
 * is written as a directory: no file suffix), as a shell word (malloc'd) */
static char *qout(const lesson *L, const char *src, const char *stem) {
    char *probe = fmt_new("%s/%s", L->dir, stem);
    char *path = fmt_new("%s%s", probe, ckpt_output_is_dir(src, probe) ? "" : ".safetensors");
    char *q = sh_word(path);
    free(probe);
    free(path);
    return q;
}

/* the step's commands: a shell line */
static void cli_line(lesson_step *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cli_line(lesson_step *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->cli, sizeof s->cli, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- numbers */

static double sq_dist(const float *x, const float *y, size_t n, double *norm_x) {
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double t = (double)x[i] - (y ? y[i] : 0.0f);
        s += t * t;
        if (norm_x) *norm_x += (double)x[i] * x[i];
    }
    return s;
}

/* ||theta_A - theta_B|| / ||theta_A|| over the MoE's parameters (gate and
 * routed experts; the frozen head is left out). centre: measure the gate rows
 * after removing each model's mean row (a common translation is no change). */
static double param_distance(const moe_model *A, const moe_model *B, int centre) {
    const moe_config *c = &A->cfg;
    size_t hd = (size_t)c->h * c->d;
    double num = 0, den = 0;
    for (int j = 0; j <= c->d; j++) { // gate column j (j = d: the bias)
        double ma = 0, mb = 0;
        for (int i = 0; i < c->n && centre; i++) {
            ma += (j < c->d ? A->gate_w[(size_t)i * c->d + j] : A->gate_b[i]) / c->n;
            mb += (j < c->d ? B->gate_w[(size_t)i * c->d + j] : B->gate_b[i]) / c->n;
        }
        for (int i = 0; i < c->n; i++) {
            double a = (j < c->d ? A->gate_w[(size_t)i * c->d + j] : A->gate_b[i]) - ma;
            double b = (j < c->d ? B->gate_w[(size_t)i * c->d + j] : B->gate_b[i]) - mb;
            num += (a - b) * (a - b);
            den += a * a;
        }
    }
    for (int i = 0; i < c->n; i++) {
        const moe_expert *a = &A->experts[i], *b = &B->experts[i];
        num += sq_dist(a->fc1_w, b->fc1_w, hd, &den) + sq_dist(a->fc1_b, b->fc1_b, c->h, &den);
        num += sq_dist(a->fc2_w, b->fc2_w, hd, &den) + sq_dist(a->fc2_b, b->fc2_b, c->d, &den);
        if (a->fc3_w)
            num += sq_dist(a->fc3_w, b->fc3_w, hd, &den) + sq_dist(a->fc3_b, b->fc3_b, c->h, &den);
    }
    return den > 0 ? sqrt(num / den) : 0;
}

/* max |z_A(x) - z_B(x)| over the evaluation set, and the RMS of z_A. */
static void output_difference(const moe_model *A, const moe_model *B, const evalset *E,
                              double *maxdiff, double *rms) {
    int d = A->cfg.d, Bmax = 512;
    float *za = ms_malloc((size_t)Bmax * d * sizeof(float));
    float *zb = ms_malloc((size_t)Bmax * d * sizeof(float));
    double mx = 0, ss = 0;
    for (int r0 = 0; r0 < E->N; r0 += Bmax) {
        int nb = E->N - r0 < Bmax ? E->N - r0 : Bmax;
        moe_forward(A, E->inputs + (size_t)r0 * d, nb, za, NULL);
        moe_forward(B, E->inputs + (size_t)r0 * d, nb, zb, NULL);
        for (size_t i = 0; i < (size_t)nb * d; i++) {
            double t = fabs((double)za[i] - zb[i]);
            mx = t > mx ? t : mx;
            ss += (double)za[i] * za[i];
        }
    }
    *maxdiff = mx;
    *rms = sqrt(ss / ((double)E->N * d));
    free(za);
    free(zb);
}

/* The curve from A to Bp on the lesson's loss: the layer's on E, or a network's
 * (the other MoE blocks aligned as o says: var). */
static int lesson_curve(const lesson *L, const moe_model *A, const moe_model *Bp, int var, ls_curve *cv,
                        ms_err *err) {
    if (L->obj) return curve_compute_obj(A, Bp, net_objective_view(L->obj), var, LESSON_T, NULL, cv, err);
    return curve_compute(A, Bp, &L->E, LESSON_T, cv, err);
}

static int var_of(const align_opts *o) {
    return o->order_stage ? LS_VAR_MAIN : o->wm_stage ? LS_VAR_SKIP : LS_VAR_NAIVE;
}

/* The curve from A to B aligned with o (order written to order_out if not
 * NULL); its barrier, or NaN with err set. */
static double aligned_barrier(const lesson *L, const moe_model *A, const moe_model *B,
                              const align_opts *o, int *order_out, ms_err *err) {
    moe_model Bp;
    align_result res;
    if (align_models(A, B, o, &Bp, &res, err)) return NAN;
    ls_curve cv;
    double bar = NAN;
    if (!lesson_curve(L, A, &Bp, var_of(o), &cv, err)) {
        bar = cv.barrier;
        ls_curve_free(&cv);
    }
    if (order_out) memcpy(order_out, res.order, (size_t)A->cfg.n * sizeof(int));
    align_result_free(&res);
    moe_free(&Bp);
    return bar;
}

static void say(lesson_step *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(lesson_step *s, const char *fmt, ...) {
    size_t len = strlen(s->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->text + len, sizeof s->text - len, fmt, ap);
    va_end(ap);
}

static void explore(lesson_step *s, const char *a, const char *b) {
    snprintf(s->explore_a, sizeof s->explore_a, "%s", a);
    snprintf(s->explore_b, sizeof s->explore_b, "%s", b);
}

/* ------------------------------------------------------------------ steps */

/* What the samples are (their metadata "recipe": a native file's, or the shard holding a
 * folder's MoE gate), malloc'd; NULL when they do not say. */
static char *recipe_of(const char *path, const moe_model *m) {
    const char *r = moe_meta_get(m, "recipe");
    if (r) return ms_strdup(r);
    ckpt c;
    if (ckpt_open(&c, path, NULL)) return NULL;
    const st_file *f = ckpt_layer_shard(&c, m->layer);
    char *out = f && st_meta(f, "recipe") ? ms_strdup(st_meta(f, "recipe")) : NULL;
    ckpt_close(&c);
    return out;
}

static void say_recipe(lesson *L, lesson_step *s) {
    char *r = recipe_of(L->a, &L->A);
    if (!r) return;
    char *e = ms_escaped(r);
    say(s, "How they were made (the recipe in A's metadata): %s.\n", e);
    if (strstr(r, "approximate one function"))
        say(s, "So a correspondence between their experts is partly built in by the recipe; seeds "
               "trained on the task's own loss need not share one.\n");
    free(e);
    free(r);
}

static int step_far_apart(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Two seeds, far apart");
    align_opts o;
    align_opts_default(&o);
    o.order_stage = 0;
    o.wm_stage = 0;
    moe_model Bp;
    align_result res;
    if (align_models(&L->A, &L->B, &o, &Bp, &res, err)) return -1;
    ls_curve cv;
    int rc = lesson_curve(L, &L->A, &Bp, LS_VAR_NAIVE, &cv, err);
    align_result_free(&res);
    moe_free(&Bp);
    if (rc) return -1;
    if (L->obj)
        say(s, "A and B are one network whose MoE block %d was fine-tuned from two seeds (the rest "
               "frozen and shared); the loss here is the network's %s loss, and the layer "
               "numbers are at the block's own inputs.\n",
            L->na.cfg.moe_layers[0], net_loss_kind(&L->na));
    say_recipe(L, s);
    if (L->obj || L->A.cfg.has_head) {
        // a network was introduced just above: its block, not "the same MoE layer"
        say(s, L->obj ? "Both fit the data: loss %.6g for A, %.6g for B.\n"
                      : "A and B are the same MoE layer trained from two seeds. Both fit the data: loss "
                        "%.6g for A, %.6g for B.\n",
            cv.loss[0], cv.loss[cv.T - 1]);
        say(s, "Walk the straight line between their parameters (the naive interpolation) and the "
               "loss climbs: the barrier is %.6g above the chord between the end points.\n",
            cv.barrier);
    } else { // layer only: the loss is the distance from the chord of the two outputs
        say(s, "A and B are the same MoE layer trained from two seeds. Without a head the loss is "
               "the layer's own: the mean squared distance of the interpolated layer's output from "
               "the straight line between A's and B's outputs, 0 at both ends.\n");
        say(s, "Walk the straight line between their parameters (the naive interpolation) and that "
               "loss climbs: the barrier is %.6g.\n",
            cv.barrier);
    }
    say(s, "Their parameters are far apart: ||A - B|| / ||A|| = %.4g. Is that distance real, or "
           "only the way each seed happened to label its experts and hidden units?\n",
        param_distance(&L->A, &L->B, 0));
    cli_line(s, "%s curve %s %s --eval %s   # the naive row", L->prog, L->qa,
             L->qb, L->qe);
    explore(s, L->a, L->b);
    ls_curve_free(&cv);
    return 0;
}

/* S = A scrambled with SCRAMBLE_SEED (and a translation), saved for the explorer. */
static int make_scramble(lesson *L, moe_model *S, int *pi, char *path, size_t size, ms_err *err) {
    moe_clone(S, &L->A);
    moe_scramble(S, SCRAMBLE_SEED, 1.0, pi);
    if (L->have_scramble) { // the same seed: the same file as a step before
        step_path(L, F_SCRAMBLED, path, size);
        return 0;
    }
    if (lesson_save(S, L, F_SCRAMBLED, path, size, err)) return moe_free(S), -1;
    L->have_scramble = 1;
    return 0;
}

static int step_scramble(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "A scramble computes the same function");
    moe_model S;
    int pi[64];
    char path[1024], os[512];
    if (make_scramble(L, &S, pi, path, sizeof path, err)) return -1;
    double mx, rms;
    output_difference(&L->A, &S, &L->E, &mx, &rms);
    moe_order_format(os, sizeof os, pi, L->A.cfg.n);
    say(s, "Take A and shuffle it: put A's expert pi[i] in slot i (pi = %s) with its gate row, "
           "permute the hidden units inside every expert, and add one common shift to all gate "
           "rows (softmax ignores it).\n",
        os);
    // float32 rounding of a sum over the experts: a few 1e-7 of the outputs' size
    say(s, "The parameters move far: ||A - S|| / ||A|| = %.4g. The function does not: over the "
           "%d evaluation inputs the outputs differ by at most %.3g (the outputs' RMS is %.4g)%s\n",
        param_distance(&L->A, &S, 0), L->E.N, mx, rms,
        mx <= 1e-4 * rms ? " - float rounding, nothing else." : ", more than float rounding.");
    say(s, "These moves form the layer's symmetry group: expert permutations, a common gate "
           "translation, and hidden-unit permutations inside each expert.\n");
    char *qs = qout(L, L->a, "S");
    cli_line(s,
             "%s scramble %s -o %s --seed %d --translate; %s eval %s --eval %s; %s eval %s --eval %s"
             "   # the order pi; the same loss for both",
             L->prog, L->qa, qs, SCRAMBLE_SEED, L->prog, qs, L->qe, L->prog, L->qa, L->qe);
    free(qs);
    explore(s, pair_a(L), path);
    moe_free(&S);
    return 0;
}

static int step_recover(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Aligning recovers the scramble");
    moe_model S;
    int pi[64], n = L->A.cfg.n;
    char path[1024], os[512], msg[512];
    if (make_scramble(L, &S, pi, path, sizeof path, err)) return -1;
    double *C = ms_malloc((size_t)n * n * sizeof(double));
    align_opts o;
    align_opts_default(&o);
    moe_model Sp;
    align_result res;
    int rc = -1;
    if (cost_matrix(&L->A, &S, COST_EXPERT, 1, C, err) ||
        align_models(&L->A, &S, &o, &Sp, &res, err))
        goto done;
    double on = 0, off = INFINITY;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double v = C[(size_t)i * n + j];
            if (j == res.order[i]) on = v > on ? v : on;
            else off = v < off ? v : off;
        }
    moe_order_format(os, sizeof os, res.order, n);
    say(s, "The expert cost compares Gram matrices of each expert's weights, which no hidden "
           "permutation changes. Between A and S it is %.3g on the assigned cells and at least "
           "%.4g everywhere else: zeros on the permutation.\n",
        on, off);
    moe_scramble_check(&L->A, &S, res.order, msg, sizeof msg);
    say(s, "The assignment picks the order %s. %s.\n", os, msg);
    say(s, "After weight matching inside each pair, S in A's basis is %.3g away from A "
           "(relative distance, the common gate shift set aside: it changes no output).\n",
        param_distance(&L->A, &Sp, 1));
    char *qs = qout(L, L->a, "S"), *qal = qout(L, L->a, "S_aligned");
    cli_line(s, "%s cost %s %s; %s align %s %s -o %s   # S from step 2's commands",
             L->prog, L->qa, qs, L->prog, L->qa, qs, qal);
    free(qs);
    free(qal);
    explore(s, pair_a(L), path);
    rc = 0;
    moe_free(&Sp);
    align_result_free(&res);
done:
    free(C);
    moe_free(&S);
    return rc;
}

/* The gate cost's assignment between A and B: its total and the margin to the
 * best different assignment. */
static int gate_margin(const moe_model *A, const moe_model *B, int center, double *total,
                       double *margin, ms_err *err) {
    int n = A->cfg.n, rc = -1;
    double *C = ms_malloc((size_t)n * n * sizeof(double));
    int *o = ms_malloc((size_t)n * sizeof(int)), *o2 = ms_malloc((size_t)n * sizeof(int));
    double second;
    if (!cost_matrix(A, B, COST_GATE, center, C, err) &&
        !lap_solve(C, n, n, 0, o, total, err) &&
        !lap_second_best(C, n, 0, o, o2, &second, err)) {
        *margin = second - *total;
        rc = 0;
    }
    free(o2);
    free(o);
    free(C);
    return rc;
}

static int step_centring(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Why gate centring matters");
    int n = L->A.cfg.n, ou[64], oc[64];
    char path[1024], su[256], sc[256];
    if (L->A.cfg.score != SCORE_SOFTMAX) {
        say(s, "This router (%s scores) has no translation symmetry: "
               "a common shift of the gate rows changes the outputs, so the gate cost must not "
               "centre, and there is nothing to show here.\n", moe_score_name(L->A.cfg.score));
        explore(s, L->a, L->b);
        return 0;
    }
    moe_model T;
    moe_clone(&T, &L->B);
    moe_scramble(&T, CENTRE_SEED, CENTRE_SCALE, NULL);
    int rc = lesson_save(&T, L, F_TRANSLATED, path, sizeof path, err);
    align_opts o;
    align_opts_default(&o);
    o.method = COST_GATE;
    o.center = 0;
    double bu = rc ? NAN : aligned_barrier(L, &L->A, &T, &o, ou, err);
    o.center = 1;
    double bc = isnan(bu) ? NAN : aligned_barrier(L, &L->A, &T, &o, oc, err);
    double tu, mu, tc, mc;
    if (!isnan(bc) && (gate_margin(&L->A, &T, 0, &tu, &mu, err) ||
                       gate_margin(&L->A, &T, 1, &tc, &mc, err)))
        bc = NAN;
    moe_free(&T);
    if (isnan(bc)) return -1;
    moe_order_format(su, sizeof su, ou, n);
    moe_order_format(sc, sizeof sc, oc, n);
    say(s, "Scramble B and shift all its gate rows by a large common vector (%g times the rows' "
           "own size): softmax does not notice, the gate cost does.\n",
        CENTRE_SCALE);
    say(s, "Without centring, the gate cost matches A's rows with the shifted rows and picks the "
           "order %s (barrier %.6g). Centred (each model's mean row removed, which removes the "
           "shift), it picks %s (barrier %.6g).\n",
        su, bu, sc, bc);
    if (memcmp(ou, oc, (size_t)n * sizeof(int)))
        say(s, "Different orders: the shift swamped the small differences between the rows.\n");
    else
        say(s, "Here both pick the same order: the rows differ enough to survive the shift.\n");
    say(s, "But look at the certainty. Without centring the runner-up order costs only %.4g "
           "more than the best, on a total of %.4g: a %.3g%% margin. Centred it costs %.4g "
           "more, on a total of %.4g.\n",
        mu, tu, 100 * mu / tu, mc, tc);
    char *qt = qout(L, L->b, "T");
    cli_line(s,
             "%s scramble %s -o %s --seed %d --translate-scale %g; %s cost %s %s --method gate "
             "--no-center; %s cost %s %s --method gate",
             L->prog, L->qb, qt, CENTRE_SEED, CENTRE_SCALE, L->prog, L->qa, qt, L->prog, L->qa, qt);
    free(qt);
    explore(s, pair_a(L), path);
    return 0;
}

static int step_skip_order(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Skipping the expert order leaves the barrier high");
    align_opts o;
    align_opts_default(&o);
    int order[64], n = L->A.cfg.n;
    char os[256];
    o.order_stage = 0;
    o.wm_stage = 0;
    double naive = aligned_barrier(L, &L->A, &L->B, &o, NULL, err);
    o.wm_stage = 1;
    double skip = isnan(naive) ? NAN : aligned_barrier(L, &L->A, &L->B, &o, NULL, err);
    o.order_stage = 1;
    double full = isnan(skip) ? NAN : aligned_barrier(L, &L->A, &L->B, &o, order, err);
    if (isnan(full)) return -1;
    moe_order_format(os, sizeof os, order, n);
    say(s, "Back to A and B. Weight matching alone (identity expert order, hidden units matched "
           "inside each slot) takes the barrier from %.6g to %.6g.\n",
        naive, skip);
    if (full < skip) {
        say(s, "First matching the experts (the expert cost picks the order %s), then the hidden "
               "units, takes it to %.6g: %.3g times lower than weight matching alone.\n",
            os, full, full > 0 ? skip / full : INFINITY);
        say(s, "Experts trained from different seeds play the same roles in different slots: "
               "without the expert order, weight matching aligns the wrong pairs.\n");
    } else {
        say(s, "First matching the experts (the expert cost picks the order %s), then the hidden "
               "units, gives %.6g: no lower than weight matching alone here - the expert order "
               "the cost picked does not help this pair.\n",
            os, full);
    }
    cli_line(s, "%s curve %s %s --eval %s   # the naive, skip_order and expert rows",
             L->prog, L->qa, L->qb, L->qe);
    explore(s, L->a, L->b);
    return 0;
}

/* A copy of A with its gate scores scaled by f (rows and biases). */
static void scale_gate(moe_model *m, double f) {
    for (size_t i = 0; i < (size_t)m->cfg.n * m->cfg.d; i++) m->gate_w[i] *= (float)f;
    for (int i = 0; i < m->cfg.n; i++) m->gate_b[i] *= (float)f;
}

/* The order the assignment of method picks between A and B (n ints). */
static int assigned_order(const moe_model *A, const moe_model *B, cost_method method, int *order, ms_err *err) {
    int n = A->cfg.n;
    double *C = ms_malloc((size_t)n * n * sizeof(double)), total;
    int rc = cost_matrix(A, B, method, 1, C, err) || lap_solve(C, n, n, 0, order, &total, err) ? -1 : 0;
    free(C);
    return rc;
}

static int step_top1(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Top-1 routing has an extra symmetry");
    moe_model P, Q, Qp;
    moe_clone(&P, &L->A);
    P.cfg.router = ROUTER_TOPK;
    P.cfg.k = 1;
    P.cfg.renorm = RENORM_YES;
    moe_clone(&Q, &P);
    scale_gate(&Q, TOP1_SCALE);
    memset(&Qp, 0, sizeof Qp);
    char pa[1024], pb[1024], og[256], oe[256];
    int n = P.cfg.n, rc = -1, ordg[64], orde[64];
    double *C = ms_malloc((size_t)n * n * sizeof(double));
    align_opts o;
    align_opts_default(&o);
    align_result res;
    memset(&res, 0, sizeof res);
    if (lesson_save(&P, L, F_TOP1, pa, sizeof pa, err) || lesson_save(&Q, L, F_TOP1_SCALED, pb, sizeof pb, err) ||
        cost_matrix(&P, &Q, COST_GATE, 1, C, err) || assigned_order(&P, &Q, COST_GATE, ordg, err) ||
        assigned_order(&P, &Q, COST_EXPERT, orde, err) || align_models(&P, &Q, &o, &Qp, &res, err))
        goto done;
    ls_curve cv;
    if (curve_compute(&P, &Q, &L->E, LESSON_T, &cv, err)) goto done;
    double mx, rms, diag = 0, bar = cv.barrier;
    ls_curve_free(&cv);
    output_difference(&P, &Q, &L->E, &mx, &rms);
    for (int i = 0; i < n; i++) diag += C[(size_t)i * n + i];
    moe_order_format(og, sizeof og, ordg, n);
    moe_order_format(oe, sizeof oe, orde, n);
    say(s, "Give A top-1 routing: each input goes to its single best-scoring expert, with weight "
           "1. Now multiply every gate score by %g.\n",
        TOP1_SCALE);
    say(s, "The best expert stays the best, so the function does not change: the outputs differ "
           "by at most %.3g (RMS %.4g; 0 means bit for bit), and the straight path between the two "
           "copies has barrier %.3g.\n",
        mx, rms, bar);
    say(s, "Yet the centred gate cost between them, slot by slot, totals %.4g: a cost that is not "
           "zero between two copies of one function. The assignments still find the order here "
           "(the gate cost picks %s, the expert cost %s), but no step of the alignment undoes the "
           "scaling: aligned to the first copy, the second is still %.3g away (relative distance).\n",
        diag, og, oe, param_distance(&P, &Qp, 1));
    say(s, "That is why the theory (and moescope's verdicts) assume dense routing or top-k "
           "with k >= 2, where the gate's softmax weights pin the scale down.\n");
    char *qa = qfile(L, F_TOP1), *qb = qfile(L, F_TOP1_SCALED);
    cli_line(s, "%s cost %s %s --method gate; %s cost %s %s; %s curve %s %s --eval %s   # the naive row",
             L->prog, qa, qb, L->prog, qa, qb, L->prog, qa, qb, L->qe);
    free(qa);
    free(qb);
    explore(s, pa, pb);
    rc = 0;
done:
    free(C);
    align_result_free(&res);
    moe_free(&Qp);
    moe_free(&P);
    moe_free(&Q);
    return rc;
}

/* The loss of m on E (layer-only statistics without a head), NaN on failure. */
static double loss_of(const moe_model *m, const evalset *E, ms_err *err) {
    moe_eval_result r;
    memset(&r, 0, sizeof r);
    int fail = m->cfg.has_head ? moe_eval(m, E, &r, err) : moe_eval_layer(m, E, &r, err);
    double v = fail ? NAN : r.loss;
    moe_eval_result_free(&r);
    return v;
}

static int step_groups(lesson *L, lesson_step *s, ms_err *err) {
    snprintf(s->title, sizeof s->title, "Group-limited routers allow fewer orders");
    int n = L->A.cfg.n;
    if (n < 4 || n % 2) {
        say(s, "This step needs an even number of experts (at least 4); A has %d.\n", n);
        explore(s, L->a, L->b);
        return 0;
    }
    moe_model G, W, X;
    moe_clone(&G, &L->A);
    G.cfg.router = ROUTER_TOPK;
    G.cfg.k = 2;
    G.cfg.n_group = 2;
    G.cfg.topk_group = 1;
    G.cfg.group_score = GROUP_MAX;
    int within[64], across[64];
    for (int i = 0; i < n; i++) within[i] = across[i] = i;
    within[0] = 1, within[1] = 0;                          // two experts of group 0
    across[n / 2 - 1] = n / 2, across[n / 2] = n / 2 - 1;  // one expert of each group
    moe_clone(&W, &G);
    moe_permute_experts(&W, within);
    moe_clone(&X, &G);
    moe_permute_experts(&X, across);
    char pa[1024], pw[1024], px[1024];
    // a network's config.json has no group-limited router: no files for it
    int rc = !L->obj && (lesson_save(&G, L, F_GROUPED, pa, sizeof pa, err) ||
                         lesson_save(&W, L, F_GROUPED_WITHIN, pw, sizeof pw, err) ||
                         lesson_save(&X, L, F_GROUPED_ACROSS, px, sizeof px, err))
                 ? -1
                 : 0;
    double lg = rc ? NAN : loss_of(&G, &L->E, err), lw = isnan(lg) ? NAN : loss_of(&W, &L->E, err);
    double lx = isnan(lw) ? NAN : loss_of(&X, &L->E, err);
    if (!rc && isnan(lx)) rc = -1;
    if (!rc) {
        double mw, mx, rms;
        output_difference(&G, &W, &L->E, &mw, &rms);
        output_difference(&G, &X, &L->E, &mx, &rms);
        say(s, "Split A's %d experts into 2 groups of %d, and route like DeepSeek: keep the "
               "group holding the best expert, then the top 2 experts inside it.\n",
            n, n / 2);
        // eval's "loss" as eval prints it: a head's loss, or (layer only) the mean squared output
        const char *what = G.cfg.has_head ? "loss" : "eval's loss, the mean squared output,";
        say(s, "Swap two experts of the same group: the outputs differ by at most %.3g (%s %.6f, "
               "as before the swap: %.6f). Swap expert %d with expert %d across the groups: they "
               "differ by up to %.4g (RMS %.4g; %s %.6f). Only orders that move whole groups keep "
               "the function: the group is the wreath product S_%d wr S_2, (%d!)^2 * 2! orders "
               "instead of %d!.\n",
            mw, what, lw, lg, n / 2 - 1, n / 2, mx, rms, what, lx, n / 2, n / 2, n);
        if (L->obj) {
            cli_line(s, "# a network's config.json has no group-limited router: these numbers are "
                        "its MoE block's alone, at the block's own inputs, with no files to reproduce them");
            explore(s, L->a, L->b);
            goto done;
        }
        char *qa = qfile(L, F_GROUPED), *qw = qfile(L, F_GROUPED_WITHIN), *qx = qfile(L, F_GROUPED_ACROSS);
        cli_line(s, "%s eval %s --eval %s; %s eval %s --eval %s; %s eval %s --eval %s"
                 "   # the losses: the same, the same, another",
                 L->prog, qa, L->qe, L->prog, qw, L->qe, L->prog, qx, L->qe);
        free(qa);
        free(qw);
        free(qx);
        explore(s, pa, px);
    }
done:
    moe_free(&G);
    moe_free(&W);
    moe_free(&X);
    return rc;
}

int lesson_step_compute(lesson *L, int i, lesson_step *out, ms_err *err) {
    static int (*const steps[LESSON_STEPS])(lesson *, lesson_step *, ms_err *) = {
        step_far_apart, step_scramble, step_recover, step_centring,
        step_skip_order, step_top1, step_groups};
    if (i < 0 || i >= LESSON_STEPS) return ms_fail(err, "lesson: no step %d", i + 1);
    memset(out, 0, sizeof *out);
    out->index = i;
    return steps[i](L, out, err);
}
