/* export.c - see export.h. */
#include "export.h"

#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "io/provenance.h"
#include "plot/figures.h"
#include "landscape/rank.h"
#include "orders_view.h"
#include "model/symmetry.h"
#include "io/outputs.h"
#include "plot/plot_write.h"

/* Pins in the colours the live curves do not use (Okabe-Ito, as the rest). */
static const uint32_t pin_rgb[PINS_MAX] = {0xCC79A7u, 0x56B4E9u, 0x000000u, 0xF0E442u};

/* The pinned curves as series s[ns..) (returns the new count), named "pin 1 [2 0 3 1] (barrier ...)"
 * (", wm off" when computed under the other setting than cur_wm). */
static int pin_series(const pin_set *pins, int metric_acc, int cur_wm, const double *t, plot_series *s,
                      char (*names)[160], int ns) {
    for (int i = 0; pins && i < pins->n; i++) {
        const pin *p = &pins->p[i];
        char nm[32];
        snprintf(nm, sizeof nm, "pin %d%s", i + 1, p->wm == cur_wm ? "" : p->wm ? ", wm on" : ", wm off");
        fig_curve_label(names[ns], sizeof names[ns], nm, p->c.order, p->c.n,
                        metric_acc ? p->c.acc_barrier : p->c.barrier, metric_acc);
        /* dashed with large markers, drawn over the live curves: a pin of the
           plotted order shows over its curve instead of hiding under it */
        s[ns] = (plot_series){.label = names[ns], .x = t, .y = metric_acc ? p->c.acc : p->c.loss, .n = p->c.T,
                              .rgb = pin_rgb[i], .markers = 1, .dashed = 1, .marker_size = 5.0};
        ns++;
    }
    return ns;
}

int export_curves_png(const explore_snapshot *v, const pin_set *pins, int metric_acc, const char *objective,
                      const char *a_path, const char *b_path, const char *path, ms_err *err) {
    int T = v->T;
    if (T < 2 || !v->have_naive) return ms_fail(err, "%s: no curves yet", path);
    prov_date_now(); /* dated when written, not when the explorer started */
    if (metric_acc && v->kind != LS_CLASSIFY) return ms_fail(err, "%s: no accuracy without labels", path);
    plot_series s[5 + PINS_MAX];
    memset(s, 0, sizeof s);
    char names[4 + PINS_MAX][160];
    int ns = 0;
    const struct {
        int have;
        const ls_curve *c;
        const char *name;
        uint32_t rgb;
    } in[4] = {
        {v->have_naive, &v->naive, "naive", PLOT_RGB_NAIVE},
        {v->have_skip, &v->skip_order, "skip-order", PLOT_RGB_SKIP},
        {v->have_selected, &v->selected, "order", PLOT_RGB_SELECTED},
        {v->have_current, &v->current, "current", PLOT_RGB_ALIGNED},
    };
    for (int i = 0; i < 4; i++) {
        if (!in[i].have) continue;
        double b = metric_acc ? in[i].c->acc_barrier : in[i].c->barrier;
        fig_curve_label(names[ns], sizeof names[ns], in[i].name, in[i].c->order, v->n, b, metric_acc);
        s[ns].label = names[ns];
        s[ns].x = v->t;
        s[ns].y = metric_acc ? in[i].c->acc : in[i].c->loss;
        s[ns].n = T;
        s[ns].rgb = in[i].rgb;
        s[ns].markers = 1;
        ns++;
    }
    ns = pin_series(pins, metric_acc, v->req.wm_stage, v->t, s, names, ns);
    const double *y0 = metric_acc ? v->naive.acc : v->naive.loss;
    double chord[2] = {y0[0], y0[T - 1]}, tx[2] = {0.0, 1.0};
    s[ns].label = "chord";
    s[ns].x = tx;
    s[ns].y = chord;
    s[ns].n = 2;
    s[ns].rgb = PLOT_RGB_CHORD;
    s[ns].dashed = 1; /* the chord is a reference, not a path: dashed as in the terminal */
    ns++;
    plot_spec p;
    plot_spec_init(&p, NULL);
    char title[600], how[96];
    snprintf(how, sizeof how, "order %s, weight matching %s",
             v->req.order_stage ? cost_method_name(v->req.method) : "identity", v->req.wm_stage ? "on" : "off");
    /* a network's curves say so, and which block, as curve --png's */
    int net = objective && objective[0];
    char what[160];
    if (net && metric_acc) { /* "network accuracy, MoE block 2": the loss's wording without its loss */
        const char *blk = strchr(objective, ',');
        int len = blk ? (int)strcspn(blk, "(") : 0;
        while (len > 0 && blk[len - 1] == ' ') len--;
        snprintf(what, sizeof what, "network accuracy%.*s", len, blk ? blk : "");
    } else snprintf(what, sizeof what, "%s", net ? objective : metric_acc ? "accuracy" : v->kind == LS_LAYER ? "layer-output loss" : "loss");
    fig_pair_title(title, sizeof title, what, a_path, b_path, how);
    p.title = title;
    p.xlabel = "t";
    p.ylabel = metric_acc ? "accuracy" : net ? "network loss" : v->kind == LS_LAYER ? "layer-output loss" : "loss";
    p.series = s;
    p.nseries = ns;
    if (metric_acc) fig_accuracy_range(&p); /* the axis stops at 1 */
    return plot_write(&p, path, err);
}

int export_landscape_png(const explore_snapshot *v, const char *a_path, const char *b_path, const char *path,
                         ms_err *err) {
    if (!v->have_landscape || v->ndone < 1) return ms_fail(err, "%s: the landscape is not complete yet", path);
    prov_date_now();
    /* the worker publishes the final rows sorted by barrier; the same figure
       as landscape --png (figures.h) */
    fig_landscape f = {.rows = v->rows, .orders = v->orders, .nrows = v->ndone, .n = v->n, .exhaustive = v->exhaustive,
                       .tau = rank_tau(v->have_naive ? v->naive.barrier : NAN), .a_path = a_path, .b_path = b_path,
                       .log_rank = v->ndone > 1000}; /* 40320 orders: the top ranks need the room */
    for (int m = 0; m < COST_NMETHODS; m++) {
        f.chosen[m] = v->have_methods ? v->method_order[m] : NULL;
        f.rank[m] = v->rank[m];
        f.tied[m] = v->tied[m];
        f.rank_auc[m] = v->rank_auc[m];
    }
    return fig_landscape_write(&f, path, err);
}

/* "DIR/seed2.safetensors" -> "DIR-seed2" (the folder names the pair: dense4/seed2
 * and shared4/seed2 differ); with_dir 0: "seed2". */
static void path_stem(const char *path, int with_dir, char *out, int cap) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int len = (int)strlen(base);
    const char *ext = ".safetensors";
    int el = (int)strlen(ext);
    if (len > el && !strcmp(base + len - el, ext)) len -= el;
    char dir[128] = "";
    if (with_dir && base > path + 1) {
        const char *end = base - 1, *d = end;
        while (d > path && d[-1] != '/') d--;
        if (end - d > 0 && !(end - d == 1 && d[0] == '.')) snprintf(dir, sizeof dir, "%.*s-", (int)(end - d), d);
    }
    snprintf(out, (size_t)cap, "%s%.*s", dir, len, base);
}

static const char *order_stage_name(const explore_request *q) {
    if (!q->order_stage) return "identity";
    if (cost_methods[q->method].centres && !q->center) return "gate-uncentred";
    return cost_method_name(q->method);
}

void export_aligned_name(const char *b_path, const explore_request *q, char *out, int cap) {
    char stem[512];
    path_stem(b_path, 1, stem, sizeof stem);
    snprintf(out, (size_t)cap, "%s.aligned-%s-%s", stem, order_stage_name(q), q->wm_stage ? "wm" : "nowm");
    // a sharded B is written as a directory (its shards, index and config.json): no file suffix
    if (!ckpt_output_is_dir(b_path, out)) snprintf(out + strlen(out), (size_t)cap - strlen(out), ".safetensors");
}

/* the folder of a path ("" for none) */
static int same_dir(const char *a, const char *b) {
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    long la = sa ? sa - a : 0, lb = sb ? sb - b : 0;
    return la == lb && !strncmp(a, b, (size_t)la);
}

void export_pair_name(const char *a_path, const char *b_path, const explore_request *q, const char *what,
                      const char *ext, char *out, int cap) {
    char sa[512], sb[512];
    path_stem(a_path, 1, sa, sizeof sa);
    path_stem(b_path, !same_dir(a_path, b_path), sb, sizeof sb);
    snprintf(out, (size_t)cap, "%s-%s.%s-%s-%s.%s", sa, sb, what, order_stage_name(q), q->wm_stage ? "wm" : "nowm",
             ext);
}

void export_plot_name(const char *a_path, const char *b_path, const explore_request *q, int is_landscape,
                      int metric_acc, char *out, int cap) {
    if (is_landscape) {
        char sa[512], sb[512];
        path_stem(a_path, 1, sa, sizeof sa);
        path_stem(b_path, !same_dir(a_path, b_path), sb, sizeof sb);
        snprintf(out, (size_t)cap, "%s-%s.landscape-%s%s.png", sa, sb, q->wm_stage ? "wm" : "nowm",
                 q->center ? "" : "-uncentred");
    } else {
        export_pair_name(a_path, b_path, q, metric_acc ? "curves-acc" : "curves", "png", out, cap);
    }
}

/* ---- the export directory ---- */

static void home_dir(char *out, size_t cap) {
    const struct passwd *pw = getpwuid(getuid());
    snprintf(out, cap, "%s", pw && pw->pw_dir ? pw->pw_dir : "/");
}

int export_dir_ready(const char *dir, const char *const *ins, int nin, char *out, int cap, char *why, int wcap) {
    why[0] = 0;
    char home[4096] = "";
    if (dir[0] == '~' && (dir[1] == 0 || dir[1] == '/')) home_dir(home, sizeof home);
    snprintf(out, (size_t)cap, "%s%s", home, home[0] ? dir + 1 : dir);
    size_t l = strlen(out);
    while (l > 1 && out[l - 1] == '/') out[--l] = 0;
    /* never inside an input's folder, checked before anything is made there */
    ms_err err;
    if (outputs_check_dir(out, NULL, ins, nin, &err)) {
        snprintf(why, (size_t)wcap, "%s", err.msg);
        return -1;
    }
    /* each missing component in turn, as mkdir -p */
    for (size_t i = 1; i <= l; i++) {
        if (out[i] != '/' && out[i] != 0) continue;
        char c = out[i];
        out[i] = 0;
        struct stat st;
        if (stat(out, &st) != 0 && mkdir(out, 0777) != 0 && errno != EEXIST) {
            snprintf(why, (size_t)wcap, "%.400s: cannot make the export directory: %s", out, strerror(errno));
            out[i] = c;
            return -1;
        }
        out[i] = c;
    }
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, (size_t)wcap, "%.400s: not a directory: nothing exported (O chooses another)", out);
        return -1;
    }
    if (access(out, W_OK | X_OK) != 0) {
        snprintf(why, (size_t)wcap, "%.400s: cannot write there (%s): nothing exported (O chooses another)", out,
                 strerror(errno));
        return -1;
    }
    /* the current directory: "." (the files are then named as they are) */
    char cwd[4096], rd[4096];
    if (getcwd(cwd, sizeof cwd) && realpath(out, rd) && !strcmp(cwd, rd)) snprintf(out, (size_t)cap, ".");
    return 0;
}

int export_split_file(const char *typed, char *dir, int dcap, char *file, int fcap) {
    static const char *const ext[] = {".png", ".svg", ".csv", ".json", ".safetensors"};
    const char *slash = strrchr(typed, '/'), *base = slash ? slash + 1 : typed;
    size_t bl = strlen(base);
    int is_file = 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0] && !is_file; i++) {
        size_t el = strlen(ext[i]);
        is_file = bl > el && !strcmp(base + bl - el, ext[i]);
    }
    if (!is_file) return 0;
    snprintf(file, (size_t)fcap, "%s", base);
    if (!slash) snprintf(dir, (size_t)dcap, ".");
    else if (slash == typed) snprintf(dir, (size_t)dcap, "/");
    else snprintf(dir, (size_t)dcap, "%.*s", (int)(slash - typed), typed);
    return 1;
}

void export_dir_default(char *out, int cap) {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) && access(cwd, W_OK | X_OK) == 0) {
        snprintf(out, (size_t)cap, "%s", cwd);
        return;
    }
    home_dir(cwd, sizeof cwd);
    snprintf(out, (size_t)cap, "%s", access(cwd, W_OK | X_OK) == 0 ? cwd : "/tmp");
}

/* ---- --png-live: what the curves figure shows ---- */

static void key_curve(curves_key_curve *k, int have, const ls_curve *c, int n) {
    k->have = have;
    if (!have) return;
    memcpy(k->order, c->order, sizeof(int) * (size_t)n);
    k->barrier = c->barrier;
    k->acc_barrier = c->acc_barrier;
    k->auc = c->auc;
    k->T = c->T;
}

void curves_key_of(const explore_snapshot *v, const pin_set *pins, int metric_acc, curves_key *k) {
    memset(k, 0, sizeof *k); /* unused order slots and padding compare equal */
    k->metric_acc = metric_acc;
    k->order_stage = v->req.order_stage;
    k->wm_stage = v->req.wm_stage;
    k->method = (int)v->req.method;
    k->center = v->req.center;
    key_curve(&k->naive, v->have_naive, &v->naive, v->n);
    key_curve(&k->skip, v->have_skip, &v->skip_order, v->n);
    key_curve(&k->current, v->have_current, &v->current, v->n);
    key_curve(&k->selected, v->have_selected, &v->selected, v->n);
    for (int i = 0; pins && i < pins->n; i++) {
        key_curve(&k->pins[i], 1, &pins->p[i].c, pins->p[i].c.n);
        k->pin_wm[i] = pins->p[i].wm;
    }
}

int curves_key_equal(const curves_key *a, const curves_key *b) {
    /* both built by curves_key_of from a zeroed struct: bytes compare the
       fields (a NaN barrier equals itself, as it should here) */
    return !memcmp(a, b, sizeof *a);
}
