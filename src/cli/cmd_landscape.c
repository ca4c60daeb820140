/* cmd_landscape.c - `moescope landscape A B --eval E`: every expert order with
 * Step 2 applied, its barrier, the ranks of the two methods' orders and L-hat
 * as a summary table, JSON, CSV and a PNG plot. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "cli/cli.h"
#include "core/env.h"
#include "plot/figures.h"
#include "landscape/landscape.h"
#include "core/progress.h"
#include "landscape/bootstrap.h"
#include "landscape/rank.h"
#include "model/symmetry.h"
#include "network/net_budget.h"
#include "network/net_landscape.h"
#include "plot/plot_write.h"
#include "plot/scatter_png.h"

static const char *USAGE =
    "moescope landscape A.safetensors B.safetensors [--eval E] [--points 25] [--json F] [--csv F] "
    "[--png F] [--curves-png F] [--scatter-png F] [--layer L] [--method M] [--no-wm] [--no-center] [--all-orders] "
    "[--samples N] "
    "[--seed S] [--exhaustive] [--threads K] [--size WxH] [--font-scale K] [--log-rank] "
    "[--interpolate-backbone] [--no-proxy] [--screen K] [--screen-units M] [--all-error-bars]";

static void help(void) {
    printf("usage: %s\n\n"
           "Evaluate every expert order pi of B (with weight matching inside each matched\n"
           "pair) on the straight line from A to the reordered B: the loss barrier, the\n"
           "accuracy barrier and the loss AUC of each, sorted; the rank of the order the gate\n"
           "and expert costs choose (1 = lowest barrier) and L-hat = 100 (B(chosen) - B(best))\n"
           "/ (B(naive) - B(best)). Exhaustive for n <= %d experts; above that an estimate from\n"
           "sampled orders with a 95%% confidence interval on the rank percentile.\n"
           "A group-limited router (n_group groups of m experts, topk_group kept) keeps its\n"
           "function only under orders that map whole groups onto groups: by default the\n"
           "landscape ranges over those (m!)^g g! orders and ranks among them.\n\n"
           "options:\n"
           "  -e, --eval E       evaluation set (default: eval.safetensors beside A)\n"
           "  -T, --points T     interpolation points, 3..100000 (default 25)\n"
           "  -j, --json F       the full report as JSON (format moescope.landscape/1)\n"
           "  -c, --csv F        every order: rank, order, barrier, acc_barrier, loss_auc\n"
           "  -p, --png F        plot of every order's barrier, sorted, chosen orders marked\n"
           "      --log-rank     the --png figure's rank axis on a log scale (many orders)\n"
           "      --curves-png F the loss curves of naive, skip-order and both methods\n"
           "      --scatter-png F every order's assignment cost sum_i C[i][pi(i)] against its\n"
           "                     barrier, one panel per cost, chosen orders marked\n"
           "  -l, --layer L      layer prefix (default moe)\n"
           "  -m, --method M     match every pair's hidden units as align --method M does:\n"
           "                     activation by their activations on E (Git Re-Basin), the\n"
           "                     others (gate, expert, router; default expert) by weight\n"
           "                     matching; a network's other MoE blocks aligned by M\n"
           "      --no-wm        no weight matching inside the orders (Step 1 only)\n"
           "      --no-center    no gate centring for the gate cost\n"
           "      --all-orders   group-limited routers: every order of the n! (those that\n"
           "                     split a group change B's function: each order's curve\n"
           "                     ends at its own L(1), or without a head its chord at its\n"
           "                     own output)\n"
           "      --samples N    orders sampled when n > %d (default %d, as the explorer)\n"
           "      --seed S       seed for the sampling (default 1)\n"
           "      --exhaustive   every order also for n = 10, 11 (3628800, 39916800 orders)\n"
           "      --threads K    worker threads, 1..8 (default: the online CPUs, at most 8)\n"
           "      --screen K     screening: every order on a subset of the evaluation set,\n"
           "                     then only the best K on it, every method's order and the\n"
           "                     skip-order on the whole set (their barriers exactly the\n"
           "                     plain landscape's); the table says which orders were\n"
           "                     evaluated fully, and which screened-out orders the\n"
           "                     subset's bootstrap intervals cannot tell from its best\n"
           "      --screen-units M  the subset: M of the set's sequences, images or samples,\n"
           "                     spread evenly (default: a quarter, at least 2)\n"
           "\nError bars: each named curve's barrier with its 95%% bootstrap interval over\n"
           "the evaluation set's samples (a network's sequences or images), every order's\n"
           "(JSON barrier_ci95) and each method's rank interval, each order's resampled as\n"
           "its row is done, 1000 products per loss: up to 2^25 per-sample losses (orders x\n"
           "points x units; about 10 CPU s), beyond that none unless\n"
           "      --all-error-bars  up to 2^29 (dense8's 40320 orders x 25 points x 360\n"
           "                     samples: about 2 CPU-minutes more)\n"
           "\nA network (a GPT-2, ViT or Hugging Face decoder whose feed-forward block(s) are\n"
           "MoE, E holding input_ids, or pixel_values and labels): the orders of one MoE\n"
           "block (--layer: its index; default the first) are ranked on the network's\n"
           "held-out loss (next-token or class cross-entropy), the other MoE blocks\n"
           "interpolated at the same t, each aligned by the expert cost (--method M: by\n"
           "M; naive and skip-order move every block together). Every tensor outside the MoE blocks must\n"
           "be equal in A and B.\n"
           "Exhaustive up to %d experts (each order is whole network evaluations), else %d\n"
           "sampled orders (--samples N: N of them; --exhaustive: every order). Beside it, each\n"
           "order's layer-only barrier at the block's own inputs (the proxy a real layer\n"
           "allows): its Spearman rho with the network barrier and the network rank of its\n"
           "best order.\n"
           "      --interpolate-backbone  A and B may differ outside the MoE blocks: interpolate\n"
           "                     those tensors too (every report says so)\n"
           "      --no-proxy     skip the layer-only proxy\n"
           CLI_FIGURE_HELP
           "  -q, --quiet        no progress line (loading included)\n"
           "  -v, --verbose      where the time went (load, each step, in wall and CPU\n"
           "                     time) on stderr; MOESCOPE_TIMING=1 too\n"
           "  -h, --help         this help\n",
           USAGE, LS_EXHAUSTIVE_MAX, LS_EXHAUSTIVE_MAX, LS_SAMPLES, LS_OBJ_EXHAUSTIVE_MAX, LS_OBJ_SAMPLES);
}

/* what the orders of a group-limited router's landscape are */
static void print_order_set(const landscape *L, const moe_config *c) {
    char cnt[48];
    ls_count_format(cnt, sizeof cnt, L->n_fact_log10);
    if (L->groups)
        printf("(a group-limited router: orders that split one of its %d groups change B's "
               "function; ranks are among the %s group-preserving orders; --all-orders for "
               "all)\n",
               L->groups, cnt);
    else if (moe_groups_active(c))
        printf("(all orders of a group-limited router: those that split a group change B's "
               "function, so each order's curve ends at its own B': %s)\n",
               L->kind == LS_LAYER ? "the chord to its own output" : "its own L(1)");
}

static void on_progress(void *ctx, long done, long total) {
    if (*(int *)ctx) cli_progress("landscape", done, total);
}

/* the steps before the rows (weight matching, precompute, the middle point) */
static void on_phase(void *ctx, const char *what, long done, long total) {
    if (*(int *)ctx && !cli_partition) cli_progress(what, done, total); // MPI: rows only
}

/* -v or MOESCOPE_TIMING: print_split is wanted */
static int split_wanted;

/* where the time went (on stderr, beside the progress: stdout is the report):
 * loading, then the landscape's steps in wall and CPU time; with -v or
 * MOESCOPE_TIMING (the JSON's provenance records it always) */
static void print_split(const landscape *L) {
    double rest = L->secs_total;
    fprintf(stderr, "landscape time: load %.3g s", L->secs_load);
    for (int s = 0; s < LS_STEPS; s++) {
        fprintf(stderr, ", %s %.3g s", ls_step_name(s, 0), L->secs_step[s]);
        rest -= L->secs_step[s];
    }
    fprintf(stderr, ", rest %.3g s\nlandscape CPU time (all threads):", rest > 0 ? rest : 0.0);
    for (int s = 0; s < LS_STEPS; s++)
        fprintf(stderr, "%s %s %.3g s", s ? "," : "", ls_step_name(s, 0), L->cpu_step[s]);
    fprintf(stderr, "\n");
}

/* the order column: whole up to 16 experts, above that its first 12 and the count
 * (the JSON and CSV reports hold every order whole) */
enum { ORDER_WHOLE_MAX = 16, ORDER_HEAD = 12 };

static int order_width(int n) {
    int w = n <= ORDER_WHOLE_MAX ? n * 3 : ORDER_HEAD * 4 + 12;
    return w > 12 ? w : 12;
}

static void print_order(const int *p, int n) {
    char buf[LS_MAX_N * 4 + 1];
    size_t len = moe_order_format(buf, sizeof buf, p, n > ORDER_WHOLE_MAX ? ORDER_HEAD : n);
    if (n > ORDER_WHOLE_MAX) snprintf(buf + len, sizeof buf - len, " ... (%d)", n);
    printf("%-*s", order_width(n), buf);
}

static void print_num(double v, const char *fmt) {
    if (isnan(v)) printf("%12s", "-");
    else printf(fmt, v);
}

static void print_row(const char *name, const int *order, int n, double bar, double accb, double auc,
                      const char *rank, double lhat) {
    printf("%-11s ", name);
    print_order(order, n);
    print_num(bar, " %11.6f");
    print_num(accb, " %11.4f");
    print_num(auc, " %11.6f");
    printf(" %20s", rank ? rank : "");
    if (rank) print_num(lhat, " %8.2f");
    printf("\n");
}

/* every order's barrier, sorted, the chosen orders, the identity and the
   tie plateau marked (figures.h: the TUI's p draws the same) */
static int write_landscape_png(const landscape *L, const char *pa, const char *pb, int log_rank, const char *path,
                               ms_err *err) {
    fig_landscape f = {.rows = L->rows, .orders = L->orders, .nrows = L->norders, .n = L->n, .exhaustive = L->exhaustive,
                       .tau = L->tau, .a_path = pa, .b_path = pb,
                       .log_rank = log_rank, .size = cli_figure_size()};
    for (int m = 0; m < COST_NMETHODS; m++) {
        f.chosen[m] = L->methods[m].order;
        f.rank[m] = L->rank[m];
        f.tied[m] = L->tied[m];
        f.rank_auc[m] = L->rank_auc[m];
    }
    return fig_landscape_write(&f, path, err);
}

/* loss curves of naive, skip-order and both methods, with the chord */
static int write_curves_png(const landscape *L, const char *pa, const char *pb, const char *path, ms_err *err) {
    enum { NC = 2 + COST_NMETHODS }; // naive, skip-order, each method's order
    const ls_curve *cv[NC] = {&L->naive, &L->skip_order};
    char names[NC][48] = {"naive", "skip-order"};
    uint32_t cols[NC] = {PLOT_RGB_NAIVE, PLOT_RGB_SKIP};
    for (int m = 0; m < COST_NMETHODS; m++) {
        cv[2 + m] = &L->methods[m];
        snprintf(names[2 + m], sizeof names[2 + m], "%s cost", cost_method_name((cost_method)m));
        cols[2 + m] = fig_method_rgb((cost_method)m);
    }
    plot_series s[NC + 1];
    char labels[NC][160];
    memset(s, 0, sizeof s);
    double chord[2] = {L->loss_a, L->loss_b}, tx[2] = {0.0, 1.0};
    for (int i = 0; i < NC; i++) {
        fig_curve_label(labels[i], sizeof labels[i], names[i], cv[i]->order, L->n, cv[i]->barrier, 0);
        s[i].label = labels[i];
        s[i].x = L->t;
        s[i].y = cv[i]->loss;
        s[i].n = L->T;
        s[i].rgb = cols[i];
        s[i].markers = 1;
    }
    s[NC].label = "chord";
    s[NC].x = tx;
    s[NC].y = chord;
    s[NC].n = 2;
    s[NC].rgb = PLOT_RGB_CHORD;
    s[NC].dashed = 1;
    plot_spec p;
    plot_spec_init(&p, cli_figure_size());
    char title[600];
    fig_pair_title(title, sizeof title, L->kind == LS_LAYER ? "layer-output loss" : "loss", pa, pb, NULL);
    p.title = title;
    p.xlabel = "t";
    p.ylabel = L->kind == LS_LAYER ? "layer-output loss" : "loss";
    p.series = s;
    p.nseries = NC + 1;
    return plot_write(&p, path, err);
}

/* the orders ranked and the sampled estimates, for people */
static void print_header(const landscape *L, const ls_opts *lo, const ls_screen *scr) {
    int n = L->n;
    const char *kind = L->objective            ? "network" // its own line below says which
                       : L->kind == LS_CLASSIFY ? "classification"
                       : L->kind == LS_REGRESS  ? "regression"
                                                : "layer-output";
    char set[160] = "", all[48], cnt[48];
    ls_factorial_format(all, sizeof all, n);
    ls_count_format(cnt, sizeof cnt, L->n_fact_log10);
    if (L->groups)
        snprintf(set, sizeof set, " group-preserving (S_%d wr S_%d, of %s in S_%d)", L->group_size,
                 L->groups, all, n);
    if (scr)
        printf("landscape: %ld expert orders on the whole set, the survivors of %ld screened on %d of its %d "
               "%s (%s), %d points, %s loss\n",
               L->norders, scr->sub.norders, scr->units, scr->total_units, scr->unit,
               scr->sub.exhaustive ? "all orders" : "sampled", L->T, kind);
    else if (L->exhaustive)
        printf("landscape: all %ld%s expert orders (n = %d), %d points, %s loss%s\n", L->norders,
               set, n, L->T, kind, lo->wm ? ", weight matching in every order" : ", no weight matching");
    else
        printf("landscape: %ld sampled%s expert orders of %s (n = %d, seed %llu), %d points, %s "
               "loss\n",
               L->norders, set, cnt, n, (unsigned long long)lo->seed, L->T, kind);
}

/* the estimate from a sample: rank percentile p = (rank - 1) / samples with its
 * 95% Wilson interval, and p times the orders in the set */
static void print_sampled(const landscape *L) {
    char cnt[48], est[48];
    ls_count_format(cnt, sizeof cnt, L->n_fact_log10);
    // the chosen orders are evaluated beside the sample, not drawn into it, so
    // they can lie below its best (L-hat is then 0: the best known is theirs)
    int below = 0;
    for (int m = 0; m < COST_NMETHODS; m++) below = below || L->methods[m].barrier < L->rows[L->best].barrier;
    printf("best, worst: of the %ld sampled orders%s\n", L->norders,
           below ? "; a chosen order lies below the sample's best" : "");
    for (int m = 0; m < COST_NMETHODS; m++) {
        double p = (double)(L->rank[m] - 1) / L->norders;
        if (p > 0) ls_count_format(est, sizeof est, log10(p) + L->n_fact_log10);
        else snprintf(est, sizeof est, "1");
        printf("%s: %ld of %ld sampled orders are better; rank percentile %.2f%% (95%% CI "
               "%.2f%%..%.2f%%), estimated rank %s of %s\n",
               cost_method_name((cost_method)m), (long)L->rank[m] - 1, L->norders, 100.0 * p,
               L->pct_lo[m], L->pct_hi[m], est, cnt);
    }
}

/* the error bars: each named curve's barrier and each method's rank with its
 * bootstrap interval (bootstrap.h), when every order's per-unit losses were kept */
static void print_error_bars(const landscape *L) {
    if (!L->nseq) return;
    printf("\nerror bars: 95%% bootstrap intervals over the evaluation set's %d %s (%d resamples):\n", L->nseq,
           L->boot_unit, LS_BOOT_RESAMPLES);
    const ls_curve *cv[2 + COST_NMETHODS] = {&L->naive, &L->skip_order};
    const char *names[2 + COST_NMETHODS] = {"naive", "skip-order"};
    for (int m = 0; m < COST_NMETHODS; m++) cv[2 + m] = &L->methods[m], names[2 + m] = cost_method_name((cost_method)m);
    for (int a = 0; a < 2 + COST_NMETHODS; a++) {
        printf("  %-11s barrier %.6g [%.6g, %.6g]", names[a], cv[a]->barrier, cv[a]->bar_lo, cv[a]->bar_hi);
        if (a >= 2 && L->boot_resamples)
            printf("  rank %d [%.0f, %.0f] of %ld orders", L->rank[a - 2], L->rank_lo[a - 2],
                   L->rank_hi[a - 2], L->norders);
        printf("\n");
    }
    if (!L->boot_resamples) {
        printf("  (no rank intervals: %s)\n", L->boot_why ? L->boot_why : "no per-sample losses of the orders");
        return;
    }
    const ls_row *b = &L->rows[L->best];
    printf("  %-11s barrier %.6g [%.6g, %.6g]\n", "best", b->barrier, b->bar_lo, b->bar_hi);
}

/* the summary table: named alignments, both methods' ranks, best and worst */
static void print_summary(const landscape *L, const moe_config *c, const ls_opts *lo, const ls_screen *scr) {
    int n = L->n;
    print_header(L, lo, scr);
    print_order_set(L, c);
    if (L->kind == LS_CLASSIFY)
        printf("end points: loss A %.6f (accuracy %.2f%%), loss B %.6f (accuracy %.2f%%)\n",
               L->loss_a, 100 * L->acc_a, L->loss_b, 100 * L->acc_b);
    else if (L->kind == LS_LAYER && L->loss_a == 0 && L->loss_b == 0)
        printf("end points: loss 0 at A and at B (the layer-output loss: the distance from the "
               "line between A's and B's outputs)\n");
    else
        printf("end points: loss A %.6g, loss B %.6g\n", L->loss_a, L->loss_b);
    printf("\n%-11s %-*s %11s %11s %11s %20s %8s\n", "alignment", order_width(n), "order",
           "barrier", "acc barrier", "loss AUC", "rank", "L-hat");
    print_row("naive", L->naive.order, n, L->naive.barrier, L->naive.acc_barrier, L->naive.auc, NULL, 0);
    print_row("skip-order", L->skip_order.order, n, L->skip_order.barrier, L->skip_order.acc_barrier,
              L->skip_order.auc, NULL, 0);
    for (int m = 0; m < COST_NMETHODS; m++) {
        char rank[48];
        if (L->exhaustive && L->tied[m] > 1)
            snprintf(rank, sizeof rank, "%d/%ld (%d tied)", L->rank[m], L->norders, L->tied[m]);
        else if (L->exhaustive || scr) snprintf(rank, sizeof rank, "%d/%ld", L->rank[m], L->norders);
        else snprintf(rank, sizeof rank, "~%.3g%%", 100.0 * (L->rank[m] - 1) / L->norders);
        const ls_curve *cv = &L->methods[m];
        print_row(cost_method_name((cost_method)m), cv->order, n, cv->barrier, cv->acc_barrier, cv->auc, rank,
                  L->l_hat[m]);
    }
    const ls_row *b = &L->rows[L->best], *w = &L->rows[L->worst];
    int bo[LS_MAX_N], wo[LS_MAX_N];
    ls_order_get(L->orders, n, b->id, bo);
    ls_order_get(L->orders, n, w->id, wo);
    // the best and the worst ranked as the methods are: with ties at tau (all 24 tied at 0:
    // the worst is rank 1 too)
    rank_view v = {.count = L->ndone, .width = n, .barrier = &L->rows[0].barrier, .stride = sizeof(ls_row)};
    char br[48], wr[48];
    long bt = rank_tied_count(&v, b->barrier, L->tau), wt = rank_tied_count(&v, w->barrier, L->tau);
    long wk = rank_of(&v, w->barrier, L->tau);
    if (bt > 1) snprintf(br, sizeof br, "1 (%ld tied)", bt);
    else snprintf(br, sizeof br, "1");
    if (wt > 1) snprintf(wr, sizeof wr, "%ld (%ld tied)", wk, wt);
    else snprintf(wr, sizeof wr, "%ld", wk);
    print_row("best", bo, n, b->barrier, b->acc_barrier, b->auc, br, NAN);
    print_row("worst", wo, n, w->barrier, w->acc_barrier, w->auc, wr, NAN);
    if (!L->exhaustive && !scr) print_sampled(L);
    print_error_bars(L);
}

/* the network's lines: what the loss is, and the layer-only proxy measured */
static void print_network(const landscape *L, int nmoe) {
    if (nmoe > 1)
        printf("objective: %s; the other MoE blocks interpolated at the same t, each aligned on its own\n",
               L->objective);
    else
        printf("objective: %s\n", L->objective);
    if (!L->has_proxy) return;
    int p[LS_MAX_N];
    ls_order_get(L->orders, L->n, L->proxy_best_id, p);
    char *os = moe_order_string(p, L->n);
    printf("layer-only proxy (each order's layer-only barrier at the block's own inputs): Spearman rho "
           "%.3f with the network barrier over the %ld orders; its best order %s ranks %ld of %ld by "
           "the network barrier\n",
           L->proxy_spearman, L->norders, os, L->proxy_best_rank, L->norders);
    free(os);
}

/* ---- --screen (landscape_screen.h) ---- */

static void on_screen_progress(void *ctx, long done, long total) {
    if (*(int *)ctx) cli_progress("screening", done, total);
}

/* which named alignment an order is, for the table's last column */
static const char *screen_mark(const landscape *L, const uint8_t *o, char *buf, size_t cap) {
    int p[LS_MAX_N], n = L->n, len = 0;
    for (int i = 0; i < n; i++) p[i] = o[i];
    buf[0] = 0;
    const ls_curve *cv[COST_NMETHODS + 1];
    const char *names[COST_NMETHODS + 1];
    for (int m = 0; m < COST_NMETHODS; m++) cv[m] = &L->methods[m], names[m] = cost_method_name((cost_method)m);
    cv[COST_NMETHODS] = &L->skip_order, names[COST_NMETHODS] = "skip-order";
    for (int a = 0; a <= COST_NMETHODS; a++)
        if (!memcmp(p, cv[a]->order, (size_t)n * sizeof(int)) && len < (int)cap)
            len += snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", names[a]);
    return buf;
}

enum { SCREEN_SHOWN = 5 }; /* screened-only orders printed below the survivors */

static void print_screen_row(const ls_screen *S, const ls_screen_row *w, long rank) {
    int p[LS_MAX_N], n = S->sub.n;
    char mark[64], rk[24], ci[64];
    for (int i = 0; i < n; i++) p[i] = w->order[i];
    if (rank > 0) snprintf(rk, sizeof rk, "%ld", rank);
    else snprintf(rk, sizeof rk, "-");
    printf("%5s  ", rk);
    print_order(p, n);
    print_num(w->bar, " %11.6f");
    if (isnan(w->sub_lo)) snprintf(ci, sizeof ci, "%.6f", w->sub_bar);
    else snprintf(ci, sizeof ci, "%.6f [%.6f, %.6f]", w->sub_bar, w->sub_lo, w->sub_hi);
    printf("  %-34s %6ld  %-8s %-9s %s\n", ci, w->sub_rank,
           w->undistinguished < 0 ? "" : w->undistinguished ? "no" : "yes",
           w->full_id >= 0 ? "whole set" : "subset", screen_mark(&S->full, w->order, mark, sizeof mark));
}

/* every survivor by its barrier on the whole set, then the best few screened out */
static void print_screen_table(const ls_screen *S) {
    long nfull = S->full.norders, shown = 0;
    printf("\nscreening: every order on %d of the %d %s (spread evenly), then the best %d on that subset, "
           "both methods' orders and the skip-order (%ld orders) on all %d\n",
           S->units, S->total_units, S->unit, S->keep, nfull, S->total_units);
    printf("%5s  %-*s %11s  %-34s %6s  %-8s %-9s\n", "rank", order_width(S->sub.n), "order", "barrier",
           "subset barrier [95% interval]", "subset", "distinct", "evaluated");
    for (long i = 0; i < S->nrows; i++) {
        const ls_screen_row *w = &S->rows[i];
        if (w->full_id < 0 && shown++ >= SCREEN_SHOWN) continue;
        print_screen_row(S, w, w->full_id >= 0 ? i + 1 : 0);
    }
    if (S->nrows - nfull > SCREEN_SHOWN)
        printf("  ... %ld more orders screened out (--csv, --json: every order)\n", S->nrows - nfull - SCREEN_SHOWN);
    printf("(rank: among the orders evaluated on the whole set; subset: the rank on the subset; distinct: "
           "its subset interval lies above that of the subset's best)\n");
}

/* how far the cut can be trusted: the orders the subset cannot tell from its best */
static void print_screen_confidence(const ls_screen *S, int layer) {
    printf("subset confidence: %ld of the %ld orders with an interval on the subset overlap its best's "
           "(not distinguished from it); %ld of those were screened out%s\n",
           S->undistinguished, S->with_ci, S->undistinguished_out,
           S->undistinguished_out ? ": a larger --screen or --screen-units would evaluate them" : "");
    if (layer)
        printf("(a layer: intervals for the survivors and the next %d orders on the subset, computed again "
               "the plain way; the fused kernel keeps no per-sample losses)\n",
               S->keep);
}

/* the reports asked for (outs: --json, --csv, --png, --curves-png,
 * --scatter-png) of L; of a screening S (L its survivors' landscape), the JSON
 * gains a "screening" object and the CSV lists every order screened */
static int write_reports(const landscape *L, const ls_screen *S, const char *const outs[5], const char *pa,
                         const char *pb, const char *e_path, const char *layer, int log_rank) {
    ms_err err;
    if (outs[0] && landscape_write_json_with(L, pa, pb, e_path, layer, S ? ls_screen_json(S) : NULL, outs[0], &err))
        return cli_error("%s", err.msg);
    if (outs[1] && (S ? ls_screen_write_csv(S, outs[1], &err) : landscape_write_csv(L, outs[1], &err)))
        return cli_error("%s", err.msg);
    if (outs[2] && write_landscape_png(L, pa, pb, log_rank, outs[2], &err)) return cli_error("%s", err.msg);
    if (outs[3] && write_curves_png(L, pa, pb, outs[3], &err)) return cli_error("%s", err.msg);
    if (outs[4] && landscape_write_scatter_png(L, cli_figure_size(), outs[4], &err)) return cli_error("%s", err.msg);
    return 0;
}

static void print_screen(const ls_screen *S, const moe_config *c, const ls_opts *lo) {
    print_summary(&S->full, c, lo, S);
    print_screen_table(S);
    print_screen_confidence(S, !S->full.objective);
}

/* --screen on a layer: the subset is rows of E */
static int screen_layer(subject *Sj, const ls_opts *lo, const ls_screen_opts *so, const char *const outs[5],
                        const char *layer, int log_rank) {
    evalset Es;
    evalset_subset(&Sj->E, ls_screen_units(Sj->E.N, so), &Es);
    ls_opts sub = *lo;
    sub.progress = on_screen_progress;
    ls_screen R;
    ms_err err;
    int rc = landscape_screen(Sj->a, Sj->b, &Es, &Sj->E, &sub, lo, so, &R, &err);
    cli_progress_end();
    if (!rc && ls_layer_intervals(Sj->a, Sj->b, &Sj->E, lo->wm, &R.full, NULL, &err)) rc = -1;
    if (rc) rc = cli_error("%s", err.msg);
    if (!rc) {
        print_screen(&R, &Sj->a->cfg, lo);
        rc = write_reports(&R.full, &R, outs, Sj->pa, Sj->pb, Sj->e_path, layer ? layer : "moe", log_rank);
    }
    ls_screen_free(&R); // zeroed when it failed
    evalset_free(&Es);
    return rc;
}

/* --screen on a network: the subset is sequences (or images), its own objective */
static int screen_network(subject *Sj, ls_opts *lo, const ls_screen_opts *so, net_objective *whole,
                          const align_opts *other, const char *const outs[5], int log_rank) {
    net_evalset Es;
    net_evalset_subset(&Sj->net.E, ls_screen_units(Sj->net.E.N, so), &Es);
    net_objective *part;
    int rc = cli_subject_objective_on(Sj, &Es, other, lo->nthreads, NULL, &part);
    if (!rc) {
        ls_opts sub = *lo;
        sub.objective = net_objective_view(part);
        sub.progress = on_screen_progress;
        lo->objective = net_objective_view(whole);
        ls_screen R;
        ms_err err;
        rc = landscape_screen(Sj->a, Sj->b, NULL, NULL, &sub, lo, so, &R, &err);
        cli_progress_end();
        if (rc) rc = cli_error("%s", err.msg);
        if (!rc) {
            print_screen(&R, &Sj->a->cfg, lo);
            print_network(&R.full, Sj->net.A.cfg.nmoe);
            rc = write_reports(&R.full, &R, outs, Sj->pa, Sj->pb, Sj->e_path, Sj->a->layer, log_rank);
            ls_screen_free(&R);
        }
        net_objective_free(part);
    }
    net_evalset_free(&Es);
    return rc;
}

/* `landscape` on networks: every order of one MoE block on the network's loss */
static int landscape_network(subject *S, double t_load, ls_opts *lo, const ls_screen_opts *so, int proxy,
                             const char *const outs[5], int show, int log_rank) {
    const char *pa = S->pa, *pb = S->pb, *e_path = S->e_path;
    subject_net *n = &S->net;
    ms_err err;
    if (ls_check_orders(&n->A.moe[n->block].cfg, lo, pa, &err)) // before the other blocks' alignment
        return cli_error("%s", err.msg);
    // the proxy's block inputs are made after the landscape: refuse them before it
    if (proxy && net_inputs_mem_check(&n->A, &n->E, n->block, &err)) return cli_error("%s", err.msg);
    align_opts other;
    align_opts_default(&other);
    other.center = lo->center, other.wm_stage = lo->wm, other.method = lo->hidden;
    net_objective *no;
    // moescope-mpi: A's and B's evaluations each on one process (the landscape's), not on all
    n->ends_later = cli_partition && cli_partition->size > 1;
    if (cli_subject_objective(S, &other, lo->nthreads, NULL, &no)) return 1;
    if (so->keep) {
        int src = screen_network(S, lo, so, no, &other, outs, log_rank);
        net_objective_free(no);
        return src;
    }
    lo->objective = net_objective_view(no);
    lo->part = cli_partition; // moescope-mpi: the (point, order) evaluations split over its processes
    const moe_model *A = S->a, *B = S->b;
    landscape L;
    int rc = 0;
    if (landscape_compute(A, B, NULL, lo, &L, &err)) {
        cli_progress_end();
        rc = cli_error("%s", err.msg);
        goto out;
    }
    cli_progress_end();
    if (!cli_reports_here()) goto done; // rank 0 of moescope-mpi alone reports
    L.secs_load = t_load;
    double align_s, prefix_s;
    net_objective_times(no, &align_s, &prefix_s, &L.secs_step[LS_STEP_ENDS]);
    L.secs_step[LS_STEP_PRE] = align_s + prefix_s; // the other blocks aligned, the frozen prefix
    if (proxy) {
        evalset X;
        net_par par = {.threads = lo->nthreads};
        rc = net_block_inputs(&n->A, &n->E, n->block, &par, &X, &err);
        if (!rc) {
            rc = net_landscape_proxy(A, B, &X, lo, &L, &err);
            evalset_free(&X);
        }
        if (rc) {
            rc = cli_error("%s", err.msg);
            goto done;
        }
    }
    print_summary(&L, &A->cfg, lo, NULL);
    print_network(&L, n->A.cfg.nmoe);
    printf("\nranks known after %.3f s, all orders after %.3f s\n", L.secs_ranks, L.secs_total);
    if (split_wanted) print_split(&L);
    rc = write_reports(&L, NULL, outs, pa, pb, e_path, A->layer, log_rank);
done:
    landscape_free(&L);
out:
    net_objective_free(no);
    return rc;
}

int cmd_landscape(int argc, char **argv) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'},  {"json", required_argument, 0, 'j'},
        {"csv", required_argument, 0, 'c'},   {"png", required_argument, 0, 'p'},
        {"curves-png", required_argument, 0, 'P'}, {"scatter-png", required_argument, 0, 'X'},
        {"log-rank", no_argument, 0, 'R'},    {"layer", required_argument, 0, 'l'},
        {"all-error-bars", no_argument, 0, 'B'},
        {"no-center", no_argument, 0, 'C'},   {"all-orders", no_argument, 0, 'G'},
        {"quiet", no_argument, 0, 'q'},       {"help", no_argument, 0, 'h'},
        {"method", required_argument, 0, 'm'}, CLI_LANDSCAPE_OPTIONS,                CLI_NETWORK_OPTIONS,
        CLI_SCREEN_OPTIONS,
        {"verbose", no_argument, 0, 'v'},
        CLI_FIGURE_OPTIONS,                   {0, 0, 0, 0}};
    ls_opts lo;
    ls_opts_default(&lo);
    ls_screen_opts so = {0, 0};
    // the memory budget for the per-point buffers (MB), for tests and benchmarks
    const char *mem = env_get(ENV_LS_MEM_MB);
    if (mem) lo.mem_mb = atof(mem);
    const char *e_path = NULL, *json = NULL, *csv = NULL, *png = NULL, *cpng = NULL, *layer = NULL;
    const char *spng = NULL;
    int show = 1, log_rank = 0, ch, interp = 0, proxy = 1, orders_given = 0;
    const char *tm = env_get(ENV_TIMING);
    split_wanted = tm && strcmp(tm, "0");
    optind = 1, opterr = 0;
    while ((ch = getopt_long(argc, argv, "e:T:j:c:p:l:m:qvh", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': e_path = optarg; break;
        case 'j': json = optarg; break;
        case 'c': csv = optarg; break;
        case 'p': png = optarg; break;
        case 'P': cpng = optarg; break;
        case 'X': spng = optarg; break;
        case 'R': log_rank = 1; break;
        case 'B': lo.all_error_bars = 1; break;
        case 'l': layer = optarg; break;
        case 'C': lo.center = 0; break;
        case 'm':
            if (cost_method_parse(optarg, &lo.hidden))
                return cli_usage_error(USAGE, "landscape: --method must be %s, not '%s'", cost_method_choices(),
                                       optarg);
            break;
        case 'q': show = 0, progress_silence(); break; // the library's phases too
        case 'v': split_wanted = 1; break;
        case 'I': interp = 1; break;
        case 'N': proxy = 0; break;
        case 'h': help(); return 0;
        default: {
            orders_given |= cli_orders_given(ch);
            int r = cli_landscape_option(&lo, ch, optarg, "landscape", USAGE);
            if (r < 0) r = cli_screen_option(&so, ch, optarg, "landscape", USAGE);
            if (r < 0) r = cli_figure_option(ch, optarg, "landscape", USAGE);
            if (r > 0) return r;
            if (r < 0) return cli_option_error(USAGE, "landscape", ch, argc, argv);
        }
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(USAGE, "landscape: expected two checkpoints, got %d", argc - optind);
    if (so.units && !so.keep) return cli_usage_error(USAGE, "landscape: --screen-units needs --screen K");
    if (so.keep && cli_partition)
        return cli_usage_error(USAGE, "landscape: --screen runs in one process, not under moescope-mpi");
    const char *pa = argv[optind], *pb = argv[optind + 1];
    char guess[4096];
    e_path = cli_eval_or_default(e_path, pa, guess, sizeof guess);
    if (!e_path)
        return cli_usage_error(USAGE, "landscape: --eval E is required (no eval.safetensors beside %s)", pa);
    const char *inputs[3] = {pa, pb, e_path};
    const char *outs[5] = {json, csv, png, cpng, spng};
    const out_spec ospec[5] = {{json, "--json", OUT_FILE}, {csv, "--csv", OUT_FILE}, {png, "--png", OUT_FILE},
                               {cpng, "--curves-png", OUT_FILE}, {spng, "--scatter-png", OUT_FILE}};
    int orc = cli_check_outputs("landscape", USAGE, ospec, 5, inputs, 3);
    if (orc) return orc;
    ms_err err;

    int bar = cli_progress_wanted(show);
    lo.progress = on_progress;
    lo.phase = on_phase;
    lo.ctx = &bar;
    subject S;
    subject_spec sp = {.pa = pa, .pb = pb, .e_path = e_path, .layer = layer, .interp_backbone = interp,
                       .uses = MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG, .mapped_pair = 1,
                       .chosen_mapped = 1, .chosen_shared_mapped = 1};
    double t_load = timing_now();
    if ((orc = cli_subject_load(&S, &sp, "landscape", USAGE))) return orc;
    t_load = timing_now() - t_load;
    if (S.kind == SUBJECT_NETWORK) {
        cli_net_landscape_defaults(&lo, orders_given);
        orc = landscape_network(&S, t_load, &lo, &so, proxy, outs, show, log_rank);
        subject_free(&S);
        return orc;
    }
    const moe_model *A = S.a, *B = S.b;
    const evalset *E = &S.E;
    int rc = 0;
    if (cli_reports_here() && A->cfg.has_head && B->cfg.has_head && !moe_heads_equal(A, B))
        fprintf(stderr, "moescope: warning: the heads of %s and %s differ; interpolating them too\n",
                pa, pb);
    if (cli_reports_here() && A->cfg.router == ROUTER_TOPK && A->cfg.k == 1) // once under MPI
        fprintf(stderr, "moescope: warning: top-1 routing is outside the theory (positive scaling "
                        "of the scores is an extra symmetry)\n");
    if (so.keep) {
        rc = screen_layer(&S, &lo, &so, outs, layer, log_rank);
        subject_free(&S);
        return rc;
    }
    lo.part = cli_partition; // moescope-mpi: split over its processes
    lo.keep_units = 1;       // the error bars (ls_layer_intervals) from the sweep itself
    lo.stream_units = 1;     // ... beyond a table, resampled as the rows come
    landscape L;
    if (landscape_compute(A, B, E, &lo, &L, &err)) {
        cli_progress_end();
        rc = cli_error("%s", err.msg);
        goto out;
    }
    cli_progress_end();
    L.secs_load = t_load;
    if (!cli_reports_here()) goto done; // rank 0 of moescope-mpi alone reports
    if (ls_layer_intervals(A, B, E, lo.wm, &L, NULL, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }

    print_summary(&L, &A->cfg, &lo, NULL);
    for (int m = 0; m < COST_NMETHODS; m++) // ties (rank.h): rank counts only orders more than tau below
        if (L.tied[m] > 1)
            printf("%s: rank %d (tied: %d at %.4f; by AUC %d), tolerance %.3g\n",
                   cost_method_name((cost_method)m), L.rank[m], L.tied[m], L.methods[m].barrier,
                   L.rank_auc[m], L.tau);
    printf("L-hat against the median order (labelling-free):");
    for (int m = 0; m < COST_NMETHODS; m++)
        printf("%s %s %.2f", m ? "," : "", cost_method_name((cost_method)m), L.l_hat_median[m]);
    printf(" (median barrier %.6f; L-hat above is against the naive, B's identity order)\n", L.median_barrier);
    printf("\nranks known after %.3f s, all orders after %.3f s\n", L.secs_ranks, L.secs_total);
    if (split_wanted) print_split(&L);

    rc = write_reports(&L, NULL, outs, pa, pb, e_path, layer ? layer : "moe", log_rank);
done:
    landscape_free(&L);
out:
    subject_free(&S);
    return rc;
}
