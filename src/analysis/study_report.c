/* study_report.c - a study as a text table, JSON ("moescope.study/1"), CSV,
 * a booktabs LaTeX table and a PNG (per-pair barrier bars over a
 * rank-percentile strip). Files are written atomically; non-finite numbers
 * are JSON null, CSV "nan" and LaTeX "--". */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "io/csv.h"
#include "io/json_file.h"
#include "io/provenance.h"
#include "landscape/bootstrap.h"
#include "landscape/rank.h"
#include "analysis/study.h"

/* the file name without directories and ".safetensors" */
static void short_name(const char *path, char *out, size_t cap) {
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    snprintf(out, cap, "%s", s);
    char *dot = strstr(out, ".safetensors");
    if (dot && dot[12] == '\0') *dot = '\0';
}

/* The name of checkpoint i in the tables: its short name, or the path as given
 * when another checkpoint of the pool has the same short name (a/seed1, b/seed1). */
static void pool_name(const study *S, int i, char *out, size_t cap) {
    char other[512];
    short_name(S->paths[i], out, cap);
    for (int j = 0; j < S->npool; j++) {
        if (j == i) continue;
        short_name(S->paths[j], other, sizeof other);
        if (!strcmp(other, out)) {
            snprintf(out, cap, "%s", S->paths[i]);
            return;
        }
    }
}

/* "A / B": the whole label, never cut */
static void pair_label(const study *S, const st_pair *p, char *out, size_t cap) {
    char a[512], b[512];
    pool_name(S, p->ia, a, sizeof a);
    pool_name(S, p->ib, b, sizeof b);
    snprintf(out, cap, "%s / %s", a, b);
}

static const st_stat *stat_of(const study *S, const char *path) {
    int nf;
    const st_field *fs = study_fields(&nf);
    for (int f = 0; f < nf; f++)
        if (!strcmp(fs[f].path, path)) return &S->summary[f];
    return NULL;
}

/* ---- text ---- */

static void cell(FILE *f, double v, const char *fmt, int w) {
    if (isfinite(v)) fprintf(f, fmt, w, v);
    else fprintf(f, "%*s", w, "-");
}

/* the columns of the text table and the LaTeX table */
static const struct {
    const char *path, *head, *tex;
    int decimals;
} COLS[] = {
    {"naive.barrier", "naive", "Naive", 4},
    {"skip_order.barrier", "skip", "Skip", 4},
    {"methods.gate.barrier", "gate", "Gate", 4},
    {"methods.expert.barrier", "expert", "Expert", 4},
    {"best.barrier", "best", "Best", 4},
    {"methods.gate.rank", "rank g", "Rk.\\ g", 1},
    {"methods.gate.tied", "tied g", "Ties g", 0},
    {"methods.expert.rank", "rank e", "Rk.\\ e", 1},
    {"methods.expert.tied", "tied e", "Ties e", 0},
    {"methods.gate.l_hat", "L-hat g", "$\\hat{L}$ g", 1},
    {"methods.expert.l_hat", "L-hat e", "$\\hat{L}$ e", 1},
    {"methods.gate.spearman", "rho g", "$\\rho$ g", 2},
    {"methods.expert.spearman", "rho e", "$\\rho$ e", 2},
    {"identity_rank", "id rank", "Id.", 1},
    // the data-driven methods (cost_data.h): the third text table
    {"methods.activation.barrier", "act", "Act.", 4},
    {"methods.activation.rank", "rank a", "Rk.\\ a", 1},
    {"methods.activation.tied", "tied a", "Ties a", 0},
    {"methods.activation.l_hat", "L-hat a", "$\\hat{L}$ a", 1},
    {"methods.activation.spearman", "rho a", "$\\rho$ a", 2},
    {"methods.router.barrier", "router", "Router", 4},
    {"methods.router.rank", "rank r", "Rk.\\ r", 1},
    {"methods.router.tied", "tied r", "Ties r", 0},
    {"methods.router.l_hat", "L-hat r", "$\\hat{L}$ r", 1},
    {"methods.router.spearman", "rho r", "$\\rho$ r", 2},
};
#define NCOLS (int)(sizeof COLS / sizeof COLS[0])
#define STUDY_BARRIER_COLS 5 /* naive .. best: the first text table */
#define STUDY_DATA_COLS 10   /* the data-driven methods': the last text table */

static double field_value(const st_pair *p, const char *path) {
    int nf;
    const st_field *fs = study_fields(&nf);
    for (int f = 0; f < nf; f++)
        if (!strcmp(fs[f].path, path)) return st_get(p, &fs[f]);
    return NAN;
}

/* "mean +- std"; the std left out when undefined (one pair), "n/a" without values */
static void mean_pm(FILE *f, const st_stat *s, int dec) {
    if (!isfinite(s->mean)) fputs("n/a", f);
    else if (!isfinite(s->std)) fprintf(f, "%.*f", dec, s->mean);
    else fprintf(f, "%.*f +- %.*f", dec, s->mean, dec, s->std);
}

/* a count of orders for people: exact up to 15 digits, else "about 10^89" */
static void count_text(char *buf, size_t cap, double v) {
    if (isinf(v)) snprintf(buf, cap, "more than 10^308");
    else if (v < 1e15) snprintf(buf, cap, "%.0f", v);
    else ls_count_format(buf, cap, log10(v));
}

/* the orders in p's set (n!, or the group-preserving ones), for people */
static void set_text(char *buf, size_t cap, const st_pair *p) {
    if (isfinite(p->norders)) count_text(buf, cap, p->norders);
    else ls_count_format(buf, cap, p->norders_log10);
}

/* frac times the orders in p's set, for people ("0" for none) */
static void share_text(char *buf, size_t cap, double frac, const st_pair *p) {
    if (!(frac > 0)) snprintf(buf, cap, "0");
    else if (isfinite(frac * p->norders)) count_text(buf, cap, round(frac * p->norders));
    else ls_count_format(buf, cap, log10(frac) + p->norders_log10);
}

/* Orders tied at barrier 0, summed over the pairs. A count is over the orders
 * ranked: every order of the set, or only the sampled ones; a sample's share
 * stands for the whole set as an estimate, given with its 95% Wilson interval
 * (the pairs pooled: they rank sets of one size, so the pooled share estimates
 * the mean share over the pairs). */
static void print_zero_tied(const study *S, FILE *f) {
    const st_pair *p0 = &S->pairs[0];
    double z = 0, nr = 0;
    for (int k = 0; k < S->npairs; k++) z += S->pairs[k].zero_tied, nr += S->pairs[k].nranked;
    double ph = nr > 0 ? z / nr : 0, lo = ph, hi = ph;
    char cnt[48], set[48], e[48], el[48], eh[48];
    count_text(cnt, sizeof cnt, nr);
    fprintf(f, "orders tied at barrier 0 (B <= tau): %.0f of %s %sover the pairs (%.2f%%)", z, cnt,
            p0->exhaustive ? "" : "sampled ", 100.0 * ph);
    if (p0->exhaustive) {
        fputc('\n', f);
        return;
    }
    rank_wilson95(ph, nr, &lo, &hi);
    set_text(set, sizeof set, p0);
    share_text(e, sizeof e, ph, p0);
    share_text(el, sizeof el, lo, p0);
    share_text(eh, sizeof eh, hi, p0);
    fprintf(f, "; estimated per pair: %s of all %s orders (95%% CI %.2f%%..%.2f%%: %s..%s)\n", e, set,
            100.0 * lo, 100.0 * hi, el, eh);
}

/* "[lo, hi]" of an interval, "-" without one, in a column w wide */
static void ci_cell(FILE *f, double lo, double hi, const char *fmt, int w) {
    char buf[64];
    if (isfinite(lo) && isfinite(hi)) snprintf(buf, sizeof buf, fmt, lo, hi);
    else snprintf(buf, sizeof buf, "-");
    fprintf(f, " %-*s", w, buf);
}

/* A column of the intervals: a curve's barrier interval (naive, skip-order, then
 * each row of cost_methods[]) or a method's rank interval, one per method too. */
typedef struct {
    int curve; /* -2 naive, -1 skip-order, m >= 0 method m's */
    int rank;  /* 1: method curve's rank interval */
} iv_col;

#define IV_MAX (2 + 2 * COST_NMETHODS)

static int iv_cols(iv_col *c) {
    int k = 0;
    c[k++] = (iv_col){-2, 0};
    c[k++] = (iv_col){-1, 0};
    for (int m = 0; m < COST_NMETHODS; m++) c[k++] = (iv_col){m, 0};
    for (int m = 0; m < COST_NMETHODS; m++) c[k++] = (iv_col){m, 1};
    return k;
}

static void iv_get(const st_pair *p, iv_col c, double *lo, double *hi) {
    if (c.rank) {
        *lo = p->m[c.curve].rank_lo, *hi = p->m[c.curve].rank_hi;
        return;
    }
    const st_curve *cv = c.curve == -2 ? &p->naive : c.curve == -1 ? &p->skip : &p->m[c.curve].c;
    *lo = cv->bar_lo, *hi = cv->bar_hi;
}

/* its JSON path without the key: "naive", "skip_order", "methods.gate" */
static void iv_path(iv_col c, char *buf, size_t cap) {
    if (c.curve < 0) snprintf(buf, cap, "%s", c.curve == -2 ? "naive" : "skip_order");
    else snprintf(buf, cap, "methods.%s", cost_methods[c.curve].name);
}

/* its heading in the text table */
static void iv_head(iv_col c, char *buf, size_t cap) {
    if (c.rank) snprintf(buf, cap, "rank %s", cost_methods[c.curve].name);
    else if (c.curve < 0) snprintf(buf, cap, "%s", c.curve == -2 ? "naive" : "skip");
    else snprintf(buf, cap, "%s", cost_methods[c.curve].name);
}

/* some pair has the interval (a method without the set, or a layer's ranks past
 * 720 orders, have none) */
static int iv_any(const study *S, iv_col c) {
    for (int k = 0; k < S->npairs; k++) {
        double lo, hi;
        iv_get(&S->pairs[k], c, &lo, &hi);
        if (isfinite(lo)) return 1;
    }
    return 0;
}

/* the first pair without rank intervals (its landscape's orders had none), -1: none */
static int first_without_ranks(const study *S, int *count) {
    int k0 = -1;
    *count = 0;
    for (int k = 0; k < S->npairs; k++)
        if (S->pairs[k].nseq && S->pairs[k].boot_why) *count += 1, k0 = k0 < 0 ? k : k0;
    return k0;
}

/* The barriers as the paper prints them, mean +- std over the pairs, then each
 * pair's 95% bootstrap intervals: every named curve's barrier and every
 * method's rank, in as many tables of at most 120 columns as they need */
static void print_intervals(const study *S, FILE *f, int lw) {
    static const char *bars[3][2] = {{"naive", "naive.barrier"}, {"skip", "skip_order.barrier"},
                                     {"best", "best.barrier"}};
    fputs("\nbarriers, mean +- std over the pairs:\n ", f); // rows of their own: within 120 columns
    for (int i = 0; i < 3; i++) {
        fprintf(f, " %s ", bars[i][0]);
        mean_pm(f, stat_of(S, bars[i][1]), 4);
        fputs(i < 2 ? "," : "\n ", f);
    }
    for (int m = 0; m < COST_NMETHODS; m++) { // every method of cost_methods[]
        char path[64];
        snprintf(path, sizeof path, "methods.%s.barrier", cost_methods[m].name);
        fprintf(f, " %s ", cost_methods[m].name);
        mean_pm(f, stat_of(S, path), 4);
        fputs(m + 1 < COST_NMETHODS ? "," : "\n", f);
    }
    const st_pair *p0 = &S->pairs[0];
    if (!p0->nseq) return;
    fprintf(f, "95%% bootstrap intervals over the evaluation set's %d %s (%d resamples), per pair:\n",
            p0->nseq, p0->unit, LS_BOOT_RESAMPLES);
    iv_col all[IV_MAX], c[IV_MAX];
    int na = iv_cols(all), nc = 0;
    for (int i = 0; i < na; i++)
        if (iv_any(S, all[i])) c[nc++] = all[i];
    char lab[1100], shown[4400], head[48];
    for (int c0 = 0; c0 < nc;) {
        int c1 = c0, used = lw, w[IV_MAX];
        for (; c1 < nc; c1++) {
            iv_head(c[c1], head, sizeof head);
            w[c1] = c[c1].rank ? (int)strlen(head) > 9 ? (int)strlen(head) : 9 : 16;
            if (c1 > c0 && used + 1 + w[c1] > 120) break;
            used += 1 + w[c1];
        }
        fprintf(f, "%-*s", lw, "pair");
        for (int i = c0; i < c1; i++) {
            iv_head(c[i], head, sizeof head);
            fprintf(f, " %-*s", i + 1 < c1 ? w[i] : 0, head);
        }
        fputc('\n', f);
        for (int k = 0; k < S->npairs; k++) {
            pair_label(S, &S->pairs[k], lab, sizeof lab);
            ms_escape(shown, sizeof shown, lab);
            fprintf(f, "%-*s", lw, shown);
            for (int i = c0; i < c1; i++) {
                double lo, hi;
                iv_get(&S->pairs[k], c[i], &lo, &hi);
                ci_cell(f, lo, hi, c[i].rank ? "[%.0f, %.0f]" : "[%.4f, %.4f]", i + 1 < c1 ? w[i] : 0);
            }
            fputc('\n', f);
        }
        c0 = c1;
    }
    int cnt, k0 = first_without_ranks(S, &cnt);
    if (k0 >= 0)
        fprintf(f, "  (no rank intervals for %d of %d pair%s: %s)\n", cnt, S->npairs, S->npairs == 1 ? "" : "s",
                S->pairs[k0].boot_why);
}

/* columns [c0, c1) of the text table: a row per pair, then mean and std */
static void study_table(const study *S, FILE *f, int lw, int c0, int c1) {
    char lab[1100], shown[4400];
    fprintf(f, "%-*s", lw, "pair");
    for (int c = c0; c < c1; c++) fprintf(f, " %8s", COLS[c].head);
    fputc('\n', f);
    for (int k = 0; k < S->npairs; k++) {
        // a directory's pool is named by its listing: the names escaped for the terminal
        pair_label(S, &S->pairs[k], lab, sizeof lab);
        ms_escape(shown, sizeof shown, lab);
        fprintf(f, "%-*s", lw, shown);
        for (int c = c0; c < c1; c++) {
            double v = field_value(&S->pairs[k], COLS[c].path);
            fputc(' ', f);
            if (COLS[c].decimals == 0 || (COLS[c].decimals == 1 && strstr(COLS[c].path, "rank")))
                cell(f, v, "%*.0f", 8);
            else if (COLS[c].decimals == 4) cell(f, v, "%*.4f", 8);
            else if (COLS[c].decimals == 2) cell(f, v, "%*.2f", 8);
            else cell(f, v, "%*.1f", 8);
        }
        fputc('\n', f);
    }
    for (int row = 0; row < 2; row++) {
        fprintf(f, "%-*s", lw, row == 0 ? "mean" : "std");
        for (int c = c0; c < c1; c++) {
            const st_stat *s = stat_of(S, COLS[c].path);
            double v = s ? (row == 0 ? s->mean : s->std) : NAN;
            fputc(' ', f);
            cell(f, v, COLS[c].decimals == 4 ? "%*.4f" : "%*.2f", 8);
        }
        fputc('\n', f);
    }
}

/* A screened study (--screen K): per pair the survivors evaluated on the whole
 * set, each method's rank on the subset among every order, and the orders the
 * subset's intervals cannot tell from its best, of them screened out */
static void print_screening(const study *S, FILE *f, int lw) {
    const st_pair *p0 = &S->pairs[0];
    fprintf(f, "\nscreening, per pair: the survivors, each method's rank on the subset among all %.0f orders, "
               "and the orders\nthe subset's intervals cannot tell from its best, of them screened out:\n",
            p0->scr_orders);
    int w[COST_NMETHODS];
    fprintf(f, "%-*s %9s", lw, "pair", "survivors");
    for (int m = 0; m < COST_NMETHODS; m++) {
        char head[48];
        snprintf(head, sizeof head, "sub %s", cost_methods[m].name);
        w[m] = (int)strlen(head) > 8 ? (int)strlen(head) : 8;
        fprintf(f, " %*s", w[m], head);
    }
    fputs("  not told from its best (out)\n", f);
    char lab[1100], shown[4400];
    for (int k = 0; k < S->npairs; k++) {
        const st_pair *p = &S->pairs[k];
        pair_label(S, p, lab, sizeof lab);
        ms_escape(shown, sizeof shown, lab);
        fprintf(f, "%-*s %9.0f", lw, shown, p->scr_full);
        for (int m = 0; m < COST_NMETHODS; m++) fputc(' ', f), cell(f, p->scr_rank[m], "%*.0f", w[m]);
        fprintf(f, "  %.0f of %.0f (%.0f)\n", p->scr_undist, p->scr_with_ci, p->scr_undist_out);
    }
}

void study_print(const study *S, FILE *f) {
    const st_pair *p0 = S->npairs ? &S->pairs[0] : NULL;
    fprintf(f, "study: %d checkpoints, %d pairs", S->npool, S->npairs);
    char cnt[48];
    if (p0) {
        set_text(cnt, sizeof cnt, p0);
        if (S->screen_keep) fprintf(f, ", n = %d, %.0f orders screened per pair", p0->n, p0->scr_orders);
        else if (p0->exhaustive) fprintf(f, ", n = %d, all %s orders per pair", p0->n, cnt);
        else fprintf(f, ", n = %d, %.0f sampled of %s orders per pair", p0->n, p0->nranked, cnt);
        fprintf(f, ", %d points", S->T);
    }
    fprintf(f, "\nloss barriers; ranks with ties within tau; rho: Spearman of assignment cost vs barrier\n");
    if (p0 && S->screen_keep)
        fprintf(f, "screened (--screen %d): every order on %d of the %d %s, then the best %d there, every "
                   "method's order and the\nskip-order on all of them; ranks, tied, L-hat, rho and id rank are "
                   "among those survivors (the subset's ranks at the end)\n",
                S->screen_keep, p0->scr_units, p0->scr_of_units, S->scr_unit ? S->scr_unit : "units",
                S->screen_keep);
    else if (p0 && !p0->exhaustive)
        fprintf(f, "ranks, tied and id rank are among the %.0f sampled orders (tied counts the chosen "
                   "order too); the JSON and CSV add each rank_estimate among all of them\n",
                p0->nranked);
    fputc('\n', f);
    int lw = 24; // the pair column: as wide as the longest label
    char lab[1100], shown[4400];
    for (int k = 0; k < S->npairs; k++) {
        pair_label(S, &S->pairs[k], lab, sizeof lab);
        int w = (int)ms_escape(shown, sizeof shown, lab);
        if (w > lw) lw = w;
    }
    // two tables, the barriers then the ranks, so that a long pair label stays
    // within 120 columns (one table of every column was 150 wide)
    study_table(S, f, lw, 0, STUDY_BARRIER_COLS);
    fprintf(f, "\nranks (of the gate and expert orders), L-hat, rho, the identity's rank:\n");
    study_table(S, f, lw, STUDY_BARRIER_COLS, NCOLS - STUDY_DATA_COLS);
    fprintf(f, "\nthe data-driven methods (on the evaluation set's inputs at the block): activation "
               "matching, router logits:\n");
    study_table(S, f, lw, NCOLS - STUDY_DATA_COLS, NCOLS);
    if (p0) print_intervals(S, f, lw);
    if (p0 && S->screen_keep) print_screening(S, f, lw);
    static const char *acc[4] = {"naive.acc_barrier", "skip_order.acc_barrier",
                                 "methods.gate.acc_barrier", "methods.expert.acc_barrier"};
    fprintf(f, "\naccuracy barriers (mean +- std):");
    if (S->kind != LS_CLASSIFY) {
        fprintf(f, " n/a (%s)\n", S->kind == LS_REGRESS ? "regression" : "layer only");
    } else {
        for (int i = 0; i < 4; i++) { // on a row of their own: the row stays within 120 columns
            fprintf(f, "%s%s ", i ? " " : "\n  ", COLS[i].head);
            mean_pm(f, stat_of(S, acc[i]), 4);
            fputs(i < 3 ? "," : "\n", f);
        }
    }
    fputs("rank by AUC tie-break (mean +- std): gate ", f);
    mean_pm(f, stat_of(S, "methods.gate.rank_auc"), 2);
    fputs(", expert ", f);
    mean_pm(f, stat_of(S, "methods.expert.rank_auc"), 2);
    fputs("; worst barrier ", f);
    mean_pm(f, stat_of(S, "worst.barrier"), 4);
    fputc('\n', f);
    // L-hat divides by the naive barrier, B's identity order: it moves when B's seed labels its
    // experts otherwise; the orders' median barrier does not
    fputs("L-hat against the median order, labelling-free (mean +- std): gate ", f);
    mean_pm(f, stat_of(S, "methods.gate.l_hat_median"), 2);
    fputs(", expert ", f);
    mean_pm(f, stat_of(S, "methods.expert.l_hat_median"), 2);
    fputc('\n', f);
    double r[4];
    study_ratios(S, r);
    fprintf(f, "ratios of mean barriers: naive/gate %.1f, naive/expert %.1f, skip/gate %.1f, skip/expert %.1f\n",
            r[0], r[1], r[2], r[3]);
    if (p0 && !S->screen_keep) print_zero_tied(S, f); // survivors are no sample of the orders
    if (S->objective[0]) {
        fprintf(f, "objective: %s\n", S->objective);
        const st_stat *rho = stat_of(S, "proxy.spearman"), *rk = stat_of(S, "proxy.best_network_rank");
        if (rho && rho->n) {
            fputs("layer-only proxy at the block's own inputs: Spearman rho with the network barrier ", f);
            mean_pm(f, rho, 2);
            fputs(", its best order's network rank ", f);
            mean_pm(f, rk, 2);
            fputc('\n', f);
        }
    } else {
        fprintf(f, "each checkpoint evaluated once (%d evaluations for %d pairs)\n", S->nevals, S->npairs);
    }
    for (int i = 0; i < S->nleft; i++) { // file names and reasons: escaped for the terminal
        char *name = ms_escaped(S->left[i]), *why = ms_escaped(S->left_why[i]);
        fprintf(f, "left out: %s (%s)\n", name, why);
        free(name);
        free(why);
    }
}

void study_ratios(const study *S, double r[4]) {
    static const char *num[2] = {"naive.barrier", "skip_order.barrier"};
    static const char *den[2] = {"methods.gate.barrier", "methods.expert.barrier"};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            const st_stat *x = stat_of(S, num[a]), *y = stat_of(S, den[b]);
            r[a * 2 + b] = y->mean > 0 ? x->mean / y->mean : NAN;
        }
}

/* ---- JSON ---- */

/* obj["a"]["b"]...["z"] = item for the dotted path "a.b...z", creating objects */
static void json_put(cJSON *obj, const char *path, cJSON *item) {
    char key[96];
    const char *dot;
    while ((dot = strchr(path, '.'))) {
        snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
        cJSON *next = cJSON_GetObjectItemCaseSensitive(obj, key);
        if (!next) next = cJSON_AddObjectToObject(obj, key);
        obj = next;
        path = dot + 1;
    }
    cJSON_AddItemToObject(obj, path, item);
}

static cJSON *pair_json(const study *S, const st_pair *p) {
    int nf, n = p->n;
    const st_field *fs = study_fields(&nf);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "a", S->paths[p->ia]);
    cJSON_AddStringToObject(o, "b", S->paths[p->ib]);
    int id[LS_MAX_N];
    for (int i = 0; i < n; i++) id[i] = i;
    json_put(o, "naive.order", cJSON_CreateIntArray(id, n));
    json_put(o, "skip_order.order", cJSON_CreateIntArray(id, n));
    for (int m = 0; m < COST_NMETHODS; m++) {
        const char *mn = cost_method_name((cost_method)m);
        char path[64];
        snprintf(path, sizeof path, "methods.%s.order", mn);
        json_put(o, path, cJSON_CreateIntArray(p->m[m].order, n));
        if (!p->exhaustive) {
            snprintf(path, sizeof path, "methods.%s.rank_percentile_ci95", mn);
            json_put(o, path, json_pair(p->m[m].pct_lo, p->m[m].pct_hi));
        }
    }
    if (p->nseq) {
        json_put(o, "naive.barrier_ci95", json_pair(p->naive.bar_lo, p->naive.bar_hi));
        json_put(o, "skip_order.barrier_ci95", json_pair(p->skip.bar_lo, p->skip.bar_hi));
        for (int m = 0; m < COST_NMETHODS; m++) {
            char path[64];
            snprintf(path, sizeof path, "methods.%s.barrier_ci95", cost_method_name((cost_method)m));
            json_put(o, path, json_pair(p->m[m].c.bar_lo, p->m[m].c.bar_hi));
        }
        for (int m = 0; m < COST_NMETHODS; m++)
            if (isfinite(p->m[m].rank_lo)) {
                char path[64];
                snprintf(path, sizeof path, "methods.%s.rank_ci95", cost_method_name((cost_method)m));
                json_put(o, path, json_pair(p->m[m].rank_lo, p->m[m].rank_hi));
            }
    }
    json_put(o, "best.order", cJSON_CreateIntArray(p->best_order, n));
    json_put(o, "worst.order", cJSON_CreateIntArray(p->worst_order, n));
    for (int f = 0; f < nf; f++) json_put(o, fs[f].path, json_number(st_get(p, &fs[f])));
    cJSON_AddItemToObject(o, "orders_in_set", json_number(p->norders)); // null past a double
    if (!p->exhaustive) {
        cJSON_AddItemToObject(o, "zero_tied_percent_ci95", json_pair(p->zero_lo, p->zero_hi));
    }
    cJSON_AddItemToObject(o, "tau", json_number(p->tau));
    if (S->screen_keep) { // landscape --screen's keys, and each method's rank on the subset
        cJSON *sc = cJSON_AddObjectToObject(o, "screening");
        cJSON_AddNumberToObject(sc, "units", p->scr_units);
        cJSON_AddNumberToObject(sc, "of_units", p->scr_of_units);
        cJSON_AddStringToObject(sc, "unit", S->scr_unit ? S->scr_unit : "samples");
        cJSON_AddNumberToObject(sc, "keep", S->screen_keep);
        cJSON_AddNumberToObject(sc, "orders_screened", p->scr_orders);
        cJSON_AddNumberToObject(sc, "evaluated_fully", p->scr_full);
        cJSON_AddNumberToObject(sc, "with_subset_interval", p->scr_with_ci);
        cJSON_AddNumberToObject(sc, "undistinguished_from_best", p->scr_undist);
        cJSON_AddNumberToObject(sc, "undistinguished_screened_out", p->scr_undist_out);
        cJSON *sr = cJSON_AddObjectToObject(sc, "subset_rank");
        for (int m = 0; m < COST_NMETHODS; m++)
            cJSON_AddItemToObject(sr, cost_method_name((cost_method)m), json_number(p->scr_rank[m]));
    }
    return o;
}

int study_write_json(const study *S, const char *e_path, const char *path, ms_err *err) {
    int nf;
    const st_field *fs = study_fields(&nf);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moescope.study/1");
    cJSON *ck = cJSON_AddArrayToObject(root, "checkpoints");
    for (int i = 0; i < S->npool; i++) cJSON_AddItemToArray(ck, cJSON_CreateString(S->paths[i]));
    cJSON_AddStringToObject(root, "eval", e_path ? e_path : "");
    if (S->objective[0]) cJSON_AddStringToObject(root, "objective", S->objective);
    cJSON_AddNumberToObject(root, "points", S->T);
    if (S->npairs) {
        cJSON_AddNumberToObject(root, "n", S->pairs[0].n);
        cJSON_AddBoolToObject(root, "exhaustive", S->pairs[0].exhaustive);
    }
    if (S->npairs) { // the intervals' resampling, or why there are none (the orders' and ranks', as landscape's)
        cJSON *boot = ls_json_bootstrap(S->pairs[0].nseq, S->pairs[0].nseq ? LS_BOOT_RESAMPLES : 0,
                                        S->pairs[0].unit, "no per-unit losses kept");
        int cnt, k0 = first_without_ranks(S, &cnt);
        if (k0 >= 0) cJSON_AddStringToObject(boot, "orders_and_ranks", S->pairs[k0].boot_why);
        cJSON_AddItemToObject(root, "bootstrap", boot);
    }
    cJSON *pairs = cJSON_AddArrayToObject(root, "pairs");
    for (int k = 0; k < S->npairs; k++) cJSON_AddItemToArray(pairs, pair_json(S, &S->pairs[k]));
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    for (int f = 0; f < nf; f++) {
        cJSON *s = cJSON_AddObjectToObject(sum, fs[f].path);
        cJSON_AddItemToObject(s, "mean", json_number(S->summary[f].mean));
        cJSON_AddItemToObject(s, "std", json_number(S->summary[f].std));
        cJSON_AddNumberToObject(s, "n", S->summary[f].n);
    }
    double r[4];
    study_ratios(S, r);
    cJSON *rat = cJSON_AddObjectToObject(root, "ratios");
    static const char *rn[4] = {"naive/gate", "naive/expert", "skip_order/gate", "skip_order/expert"};
    for (int i = 0; i < 4; i++) cJSON_AddItemToObject(rat, rn[i], json_number(r[i]));
    cJSON *lo = cJSON_AddArrayToObject(root, "left_out");
    for (int i = 0; i < S->nleft; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", S->left[i]);
        cJSON_AddStringToObject(o, "why", S->left_why[i]);
        cJSON_AddItemToArray(lo, o);
    }
    cJSON *prov = prov_json();
    cJSON_AddNumberToObject(prov, "endpoint_evaluations", S->nevals);
    cJSON_AddItemToObject(root, "provenance", prov);
    return json_file_write(root, path, err);
}

/* ---- CSV ---- */

static void csv_num(FILE *f, double v) {
    if (isnan(v)) fputs("nan", f);
    else fprintf(f, "%.9g", v);
}

/* close the memory stream (which sets *buf and *len) and write it out */
static int finish_memstream(FILE *f, char **buf, size_t *len, const char *path, const char *what,
                            ms_err *err) {
    fclose(f);
    int rc = af_write_all(path, *buf, *len, err);
    free(*buf);
    return rc ? ms_prefix(err, "writing the %s", what) : 0;
}

/* a memory stream that starts with how the file was made, each line after prefix */
static FILE *report_open(char **buf, size_t *len, const char *prefix) {
    FILE *f = open_memstream(buf, len);
    if (!f) return NULL;
    char *prov = prov_text(prefix);
    fputs(prov, f);
    free(prov);
    return f;
}

int study_write_csv(const study *S, const char *path, ms_err *err) {
    int nf;
    const st_field *fs = study_fields(&nf);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = report_open(&buf, &len, "# ");
    if (!f) return ms_fail(err, "%s: out of memory formatting the CSV", path);
    // one row per pair, then the mean and the sample std over the pairs; the
    // zero-tied share's 95% interval (sampled; else the share itself), then each
    // bootstrap interval close each pair row (empty in the mean and std rows)
    fputs("row,a,b", f);
    for (int k = 0; k < nf; k++) fprintf(f, ",%s", fs[k].path);
    fputs(",zero_tied_percent_lo,zero_tied_percent_hi", f);
    // then each 95% bootstrap interval of the pair (nan: none), every curve's and method's
    iv_col iv[IV_MAX];
    int niv = iv_cols(iv);
    char ip[64];
    for (int i = 0; i < niv; i++) {
        iv_path(iv[i], ip, sizeof ip);
        const char *key = iv[i].rank ? "rank_ci95" : "barrier_ci95";
        fprintf(f, ",%s.%s_lo,%s.%s_hi", ip, key, ip, key);
    }
    if (S->screen_keep) { // a screened study: the subset's numbers too (JSON's "screening")
        fputs(",screening.evaluated_fully,screening.undistinguished_from_best,"
              "screening.undistinguished_screened_out", f);
        for (int m = 0; m < COST_NMETHODS; m++) fprintf(f, ",screening.subset_rank.%s", cost_methods[m].name);
    }
    fputc('\n', f);
    for (int k = 0; k < S->npairs; k++) {
        const st_pair *p = &S->pairs[k];
        fputs("pair,", f);
        csv_field(f, S->paths[p->ia]);
        fputc(',', f);
        csv_field(f, S->paths[p->ib]);
        for (int c = 0; c < nf; c++) {
            fputc(',', f);
            csv_num(f, st_get(p, &fs[c]));
        }
        fputc(',', f);
        csv_num(f, p->zero_lo);
        fputc(',', f);
        csv_num(f, p->zero_hi);
        for (int i = 0; i < niv; i++) {
            double lo, hi;
            iv_get(p, iv[i], &lo, &hi);
            fputc(',', f);
            csv_num(f, lo);
            fputc(',', f);
            csv_num(f, hi);
        }
        const double sv[3] = {p->scr_full, p->scr_undist, p->scr_undist_out};
        for (int i = 0; S->screen_keep && i < 3 + COST_NMETHODS; i++)
            fputc(',', f), csv_num(f, i < 3 ? sv[i] : p->scr_rank[i - 3]);
        fputc('\n', f);
    }
    for (int row = 0; row < 2; row++) {
        fputs(row == 0 ? "mean,," : "std,,", f);
        for (int c = 0; c < nf; c++) {
            fputc(',', f);
            csv_num(f, row == 0 ? S->summary[c].mean : S->summary[c].std);
        }
        fputs(",,", f); // the intervals are per pair
        for (int i = 0; i < niv; i++) fputs(",,", f);
        for (int i = 0; S->screen_keep && i < 3 + COST_NMETHODS; i++) fputc(',', f);
        fputc('\n', f);
    }
    return finish_memstream(f, &buf, &len, path, "CSV", err);
}

/* ---- LaTeX (booktabs) ---- */

static void tex_escape(FILE *f, const char *s) {
    for (; *s; s++) {
        if (strchr("_&%$#{}", *s)) fprintf(f, "\\%c", *s);
        else if (*s == '\\') fputs("\\textbackslash{}", f);
        else if (*s == '~' || *s == '^') fprintf(f, "\\%c{}", *s);
        else fputc(*s, f);
    }
}

static void tex_num(FILE *f, double v, int dec) {
    if (isfinite(v)) fprintf(f, "%.*f", dec, v);
    else fputs("--", f);
}

/* One booktabs table of the columns cols[0..nc) of COLS: a header, a row a
 * pair ("seed1--seed2"), then the mean and the sample std, each a row of its
 * own so every cell stays one number wide. */
static void tex_table(FILE *f, const study *S, const int *cols, int nc, const char *caption) {
    fputs("\\begin{table}[t]\n\\centering\n\\small\n\\setlength{\\tabcolsep}{3pt}\n", f);
    fprintf(f, "\\caption{%s}\n\\begin{tabular}{l", caption);
    for (int c = 0; c < nc; c++) fputc('r', f);
    fputs("}\n\\toprule\nPair", f);
    for (int c = 0; c < nc; c++) fprintf(f, " & %s", COLS[cols[c]].tex);
    fputs(" \\\\\n\\midrule\n", f);
    for (int k = 0; k < S->npairs; k++) {
        char a[512], b[512];
        pool_name(S, S->pairs[k].ia, a, sizeof a);
        pool_name(S, S->pairs[k].ib, b, sizeof b);
        tex_escape(f, a);
        fputs("--", f);
        tex_escape(f, b);
        for (int c = 0; c < nc; c++) {
            int d = COLS[cols[c]].decimals;
            fputs(" & ", f);
            tex_num(f, field_value(&S->pairs[k], COLS[cols[c]].path),
                    d == 4 ? 4 : strstr(COLS[cols[c]].path, "rank") || d == 0 ? 0 : d);
        }
        fputs(" \\\\\n", f);
    }
    fputs("\\midrule\n", f);
    for (int row = 0; row < 2; row++) {
        fputs(row == 0 ? "Mean" : "Std", f);
        for (int c = 0; c < nc; c++) {
            const st_stat *st = stat_of(S, COLS[cols[c]].path);
            fputs(" & ", f);
            tex_num(f, st ? (row == 0 ? st->mean : st->std) : NAN, COLS[cols[c]].decimals == 4 ? 4 : 2);
        }
        fputs(" \\\\\n", f);
    }
    fputs("\\bottomrule\n\\end{tabular}\n\\end{table}\n", f);
}

/* A method's columns of COLS ("methods.<name>."): n of them into cols */
static int method_cols(cost_method m, int *cols) {
    char pre[48];
    snprintf(pre, sizeof pre, "methods.%s.", cost_methods[m].name);
    int n = 0;
    for (int c = 0; c < NCOLS; c++)
        if (!strncmp(COLS[c].path, pre, strlen(pre))) cols[n++] = c;
    return n;
}

/* "[lo, hi]" as a LaTeX cell, "--" without one */
static void tex_ci(FILE *f, double lo, double hi, int dec) {
    fputs(" & ", f);
    if (isfinite(lo) && isfinite(hi)) fprintf(f, "[%.*f, %.*f]", dec, lo, dec, hi);
    else fputs("--", f);
}

/* Each pair's 95% bootstrap intervals, a row per alignment (naive, skip-order,
 * each method of cost_methods[]): barrier and its interval, rank and its
 * interval; narrow (six columns) so it fits a paper column too. */
static void tex_intervals(FILE *f, const study *S) {
    const st_pair *p0 = &S->pairs[0];
    fputs("\\begin{table}[t]\n\\centering\n\\small\n\\setlength{\\tabcolsep}{3pt}\n", f);
    fprintf(f, "\\caption{Each pair's barriers and ranks with their 95\\%% bootstrap intervals over the "
               "evaluation set's %d %s (%d resamples, percentile).}\n",
            p0->nseq, p0->unit, LS_BOOT_RESAMPLES);
    fputs("\\begin{tabular}{llrcrc}\n\\toprule\nPair & Alignment & Barrier & 95\\% CI & Rk. & 95\\% CI \\\\\n"
          "\\midrule\n", f);
    for (int k = 0; k < S->npairs; k++) {
        const st_pair *p = &S->pairs[k];
        char a[512], b[512];
        pool_name(S, p->ia, a, sizeof a);
        pool_name(S, p->ib, b, sizeof b);
        if (k) fputs("\\addlinespace\n", f);
        for (int r = -2; r < COST_NMETHODS; r++) {
            const st_curve *c = r == -2 ? &p->naive : r == -1 ? &p->skip : &p->m[r].c;
            if (r >= 0 && !isfinite(c->barrier)) continue; // a method that could not run
            if (r == -2) tex_escape(f, a), fputs("--", f), tex_escape(f, b);
            fprintf(f, " & %s & ", r == -2 ? "Naive" : r == -1 ? "Skip" : cost_methods[r].title);
            tex_num(f, c->barrier, 4);
            tex_ci(f, c->bar_lo, c->bar_hi, 4);
            fputs(" & ", f);
            if (r >= 0) tex_num(f, p->m[r].rank, 0);
            if (r >= 0) tex_ci(f, p->m[r].rank_lo, p->m[r].rank_hi, 0);
            else fputs(" & ", f);
            fputs(" \\\\\n", f);
        }
    }
    fputs("\\bottomrule\n\\end{tabular}\n\\end{table}\n", f);
}

/* Two tables narrow enough for one column of a two-column paper: the
 * barriers with the ranks, then the finer numbers; a table for each
 * data-driven method that ran; each pair's intervals. */
int study_write_latex(const study *S, const char *path, ms_err *err) {
    static const int first[] = {0, 1, 2, 3, 4, 5, 7}, second[] = {6, 8, 9, 10, 11, 12, 13};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = report_open(&buf, &len, "% ");
    if (!f) return ms_fail(err, "%s: out of memory formatting the LaTeX table", path);
    fputs("% needs \\usepackage{booktabs}; each table fits one column of a two-column paper\n", f);
    char cap[480];
    snprintf(cap, sizeof cap, "Loss barriers of the naive, skip-order and aligned interpolations and of the best "
             "order, and the rank (Rk.) of each method's order, over %d pairs of %d checkpoints; g: gate cost, "
             "e: expert cost.", S->npairs, S->npool);
    if (S->screen_keep && S->npairs) // ranks among a screening's survivors
        snprintf(cap + strlen(cap), sizeof cap - strlen(cap), " Screened: ranks among the best %d orders on "
                 "%d of the %d %s and every method's order.", S->screen_keep, S->pairs[0].scr_units,
                 S->pairs[0].scr_of_units, S->scr_unit ? S->scr_unit : "units");
    tex_table(f, S, first, (int)(sizeof first / sizeof first[0]), cap);
    snprintf(cap, sizeof cap, "The orders tied with each method's (Ties), $\\hat{L}$, the cost--barrier rank "
             "correlation $\\rho$ and the identity order's rank (Id.), over the same %d pairs; g: gate cost, "
             "e: expert cost.", S->npairs);
    tex_table(f, S, second, (int)(sizeof second / sizeof second[0]), cap);
    for (int m = 0; m < COST_NMETHODS; m++) {
        char bpath[64];
        snprintf(bpath, sizeof bpath, "methods.%s.barrier", cost_methods[m].name);
        const st_stat *st = stat_of(S, bpath);
        if (cost_methods[m].needs == COST_NEEDS_NOTHING || !st || !st->n) continue;
        int cols[NCOLS], nc = method_cols((cost_method)m, cols);
        snprintf(cap, sizeof cap, "The %s method (on the evaluation set's inputs at the block): its barrier, "
                 "rank, ties, $\\hat{L}$ and cost--barrier $\\rho$, over the same %d pairs.",
                 cost_methods[m].name, S->npairs);
        tex_table(f, S, cols, nc, cap);
    }
    if (S->npairs && S->pairs[0].nseq) tex_intervals(f, S);
    return finish_memstream(f, &buf, &len, path, "LaTeX table", err);
}
