/* geo_report.c - the routing geometry as text, JSON and CSV (geo_report.h). */
#include "analysis/geo_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "io/csv.h"
#include "io/json_file.h"
#include "io/provenance.h"

static cJSON *layer_json(const geo_layer *y, int rank) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", y->name);
    if (y->block >= 0) cJSON_AddNumberToObject(o, "block", y->block);
    else cJSON_AddNullToObject(o, "block");
    cJSON_AddNumberToObject(o, "experts", y->n);
    cJSON_AddNumberToObject(o, "k", y->k);
    cJSON_AddNumberToObject(o, "rank", y->ctl.r);
    cJSON_AddNumberToObject(o, "rank_generic", y->ctl.rmax);
    cJSON_AddItemToObject(o, "rank_tolerance", json_number(y->ctl.tol));
    cJSON_AddItemToObject(o, "singular_values", json_numbers(y->ctl.sv, y->n < y->d ? y->n : y->d));
    if (y->ctl.dup_i >= 0) {
        int dup[2] = {y->ctl.dup_i, y->ctl.dup_j};
        cJSON_AddItemToObject(o, "duplicate_rows", cJSON_CreateIntArray(dup, 2));
    } else {
        cJSON_AddNullToObject(o, "duplicate_rows");
    }
    cJSON_AddItemToObject(o, "logit_error", json_number(y->logit_error));
    cJSON_AddItemToObject(o, "variance_control", json_number(y->var_control));
    cJSON_AddItemToObject(o, "variance_pca", json_number(y->var_pca));
    cJSON *r = cJSON_AddObjectToObject(o, "recall");
    cJSON_AddItemToObject(r, "states", json_number(y->recall_states));
    cJSON_AddItemToObject(r, "pca", json_number(y->recall_pca));
    cJSON_AddItemToObject(r, "shared", json_number(y->recall_shared));
    cJSON_AddItemToObject(r, "specific", json_number(y->recall_specific));
    cJSON *br = cJSON_AddObjectToObject(r, "by_rank"); // readout rank q = 1 .. r
    cJSON_AddItemToObject(br, "states", json_numbers(y->recall_rank, rank));
    cJSON_AddItemToObject(br, "pca", json_numbers(y->recall_rank + rank, rank));
    return o;
}

/* an (n, n) matrix as rows */
static cJSON *matrix_json(const double *M, int rows, int cols) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < rows; i++) cJSON_AddItemToArray(a, json_numbers(M + (size_t)i * cols, cols));
    return a;
}

static cJSON *angles_json(const geometry *G) {
    int L = G->L, R = G->rmax;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "mean_deg", matrix_json(G->mean_angle, L, L));
    cJSON_AddItemToObject(o, "overlap", matrix_json(G->overlap, L, L));
    cJSON_AddItemToObject(o, "chance_overlap", json_number((double)G->r / G->d));
    cJSON *pairs = cJSON_AddArrayToObject(o, "pairs");
    double *deg = ms_malloc((size_t)R * sizeof(double));
    for (int a = 0; a < L; a++)
        for (int b = a + 1; b < L; b++) {
            int k = G->layers[a].ctl.r < G->layers[b].ctl.r ? G->layers[a].ctl.r : G->layers[b].ctl.r;
            const double *th = G->angles + ((size_t)a * L + b) * R;
            for (int i = 0; i < k; i++) deg[i] = th[i] * 180.0 / M_PI;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, "a", a);
            cJSON_AddNumberToObject(p, "b", b);
            cJSON_AddItemToObject(p, "angles_deg", json_numbers(deg, k));
            cJSON_AddItemToArray(pairs, p);
        }
    free(deg);
    return o;
}

static cJSON *fit_json(const geometry *G, const geo_fit *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "shared", json_number(f->shared));
    cJSON_AddItemToObject(o, "specific", json_number(f->specific));
    cJSON_AddItemToObject(o, "identity", json_number(f->identity));
    cJSON_AddItemToObject(o, "eta", json_number(f->eta));
    cJSON *steps = cJSON_AddArrayToObject(o, "steps");
    for (int l = 0; l + 1 < G->L; l++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "from", l);
        cJSON_AddNumberToObject(s, "to", l + 1);
        cJSON_AddItemToObject(s, "shared", json_number(f->r2_shared[l]));
        cJSON_AddItemToObject(s, "specific", json_number(f->r2_specific[l]));
        cJSON_AddItemToObject(s, "identity", json_number(f->r2_identity[l]));
        cJSON_AddItemToArray(steps, s);
    }
    cJSON_AddItemToObject(o, "A", matrix_json(f->A, G->r, G->r));
    return o;
}

cJSON *geometry_json(const geometry *G, cJSON *run) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moescope.geometry/1");
    if (run) cJSON_AddItemToObject(root, "run", run);
    cJSON_AddNumberToObject(root, "tokens", G->N);
    cJSON_AddNumberToObject(root, "train", G->ntrain);
    cJSON_AddNumberToObject(root, "held_out", G->N - G->ntrain);
    cJSON_AddNumberToObject(root, "width", G->d);
    cJSON_AddNumberToObject(root, "rank", G->r);
    cJSON_AddNumberToObject(root, "seed", (double)G->seed);
    cJSON *ls = cJSON_AddArrayToObject(root, "layers");
    for (int l = 0; l < G->L; l++) cJSON_AddItemToArray(ls, layer_json(&G->layers[l], G->r));
    cJSON_AddItemToObject(root, "angles", angles_json(G));
    cJSON *g = cJSON_AddObjectToObject(root, "gpa");
    cJSON_AddNumberToObject(g, "iterations", G->gpa.iterations);
    cJSON_AddBoolToObject(g, "converged", G->gpa.converged);
    cJSON_AddItemToObject(g, "residual", json_number(G->gpa.residual));
    cJSON_AddItemToObject(g, "residual_identity", json_number(G->gpa.residual0));
    cJSON_AddStringToObject(g, "start", G->gpa.start == GEO_START_SPECTRAL ? "spectral" : "first");
    cJSON_AddItemToObject(g, "residual_other_start", json_number(G->gpa.residual_other));
    cJSON *t = cJSON_AddObjectToObject(root, "transitions");
    for (int m = 0; m < GEO_NMETHODS; m++) cJSON_AddItemToObject(t, geo_method_name(m), fit_json(G, &G->fit[m]));
    cJSON_AddItemToObject(root, "eta_share", json_number(G->fit[GEO_CANONICAL].eta));
    return root;
}

int geometry_write_json(const geometry *G, cJSON *run, const char *path, ms_err *err) {
    cJSON *root = geometry_json(G, run);
    cJSON_AddItemToObject(root, "provenance", prov_json());
    return json_file_write(root, path, err);
}

/* ---- the text report ---- */

/* a layer's short label for the tables: "h.3" for block 3, else its index */
static void short_label(const geo_layer *y, int l, char *buf, size_t cap) {
    if (y->block >= 0) snprintf(buf, cap, "L%d", y->block);
    else snprintf(buf, cap, "#%d", l);
}

/* the width of the layer column: the longest name (nm: the names as printed) */
static int name_width(const geometry *G, char *const *nm) {
    int w = 5;
    for (int l = 0; l < G->L; l++) w = (int)strlen(nm[l]) > w ? (int)strlen(nm[l]) : w;
    return w;
}

static void print_routers(FILE *fp, const geometry *G, char *const *nm) {
    int w = name_width(G, nm);
    fprintf(fp, "\nrouters (W~ = W minus its mean row: the translation removed)\n");
    // within 100 columns for a GPT-2's names (the explorer's r pane at 120 columns)
    fprintf(fp, "  %-*s  experts  rank  s_min/s_max  logit error  variance: control  top-r PCs\n", w, "layer");
    for (int l = 0; l < G->L; l++) {
        const geo_layer *y = &G->layers[l];
        const geo_control *c = &y->ctl;
        fprintf(fp, "  %-*s  %7d  %2d/%-2d %12.3g  %11.1e  %16.1f%%  %8.1f%%\n", w, nm[l], y->n, c->r, c->rmax,
                c->sv[c->r - 1] / c->sv[0], y->logit_error, 100 * y->var_control, 100 * y->var_pca);
    }
    fprintf(fp, "  (logit error: the centred logits rebuilt from the states, largest relative deviation;\n"
                "  variance: the inputs' share in the control subspace, and in the top r principal components)\n");
    for (int l = 0; l < G->L; l++) {
        const geo_layer *y = &G->layers[l];
        const geo_control *c = &y->ctl;
        if (c->r < c->rmax && c->dup_i >= 0)
            fprintf(fp, "  [warn] %s: rank %d < %d: gate rows %d and %d are equal after centring\n", nm[l], c->r,
                    c->rmax, c->dup_i, c->dup_j);
        else if (c->r < c->rmax)
            fprintf(fp, "  [warn] %s: rank %d < %d: its centred gate rows are linearly dependent\n", nm[l], c->r,
                    c->rmax);
        if (y->n - 1 > y->d)
            fprintf(fp, "  [info] %s: n - 1 = %d > d = %d: the width bounds the rank\n", nm[l], y->n - 1, y->d);
        if (c->r > G->r)
            fprintf(fp, "  [info] %s: the states keep its first %d of %d directions (the common rank)\n", nm[l],
                    G->r, c->r);
        if (y->logit_error > 1e-6)
            fprintf(fp, "  [warn] %s: the states give the centred logits back only to %.1e\n", nm[l], y->logit_error);
        if (y->cfg.score != SCORE_SOFTMAX)
            fprintf(fp, "  [warn] %s: %s scores: adding a vector to every gate row is no symmetry of them, so "
                        "the centred router drops a direction its scores read\n",
                    nm[l], moe_score_name(y->cfg.score));
    }
}

static void print_angles(FILE *fp, const geometry *G) {
    int L = G->L;
    char lab[32];
    fprintf(fp, "\nprincipal angles between the control subspaces: the mean, degrees (0: one subspace, 90: "
                "orthogonal)\n      ");
    for (int b = 0; b < L; b++) short_label(&G->layers[b], b, lab, sizeof lab), fprintf(fp, " %6s", lab);
    fprintf(fp, "\n");
    for (int a = 0; a < L; a++) {
        short_label(&G->layers[a], a, lab, sizeof lab);
        fprintf(fp, "  %-4s", lab);
        for (int b = 0; b < L; b++) fprintf(fp, " %6.1f", G->mean_angle[a * L + b]);
        fprintf(fp, "\n");
    }
    fprintf(fp, "  mean cos^2 of consecutive layers:");
    for (int a = 0; a + 1 < L; a++) fprintf(fp, " %.3f", G->overlap[a * L + a + 1]);
    fprintf(fp, "  (two unrelated %d-dimensional subspaces of R^%d: about %.3f)\n", G->r, G->d, (double)G->r / G->d);
}

static void print_transitions(FILE *fp, const geometry *G) {
    const geo_gpa *g = &G->gpa;
    fprintf(fp, "\ncanonical gauge (GPA over the %d training tokens): residual %.4f of the states' energy "
                "(identity gauge, axis signs aligned: %.4f), from the %s start (the other: %.4f), %d rounds%s\n",
            G->ntrain, g->residual, g->residual0, geo_gpa_start_name(g->start), g->residual_other, g->iterations,
            g->converged ? "" : ", NOT settled");
    if (!g->converged) fprintf(fp, "  [warn] GPA stopped after %d rounds before its rotations settled\n", g->iterations);
    fprintf(fp, "\ntransitions y_{l+1} ~ y_l A, held-out R^2 pooled over the %d steps\n", G->L - 1);
    fprintf(fp, "  %-30s %8s %9s %9s %10s\n", "coordinates", "shared", "specific", "identity", "eta_share");
    for (int m = 0; m < GEO_NMETHODS; m++) {
        const geo_fit *f = &G->fit[m];
        fprintf(fp, "  %-30s %8.4f %9.4f %9.4f %10.3f\n", geo_method_title(m), f->shared, f->specific, f->identity,
                f->eta);
    }
    const geo_fit *f = &G->fit[GEO_CANONICAL];
    fprintf(fp, "  per step, canonical shared / specific:");
    for (int l = 0; l + 1 < G->L; l++) fprintf(fp, "  %d->%d %.3f/%.3f", l, l + 1, f->r2_shared[l], f->r2_specific[l]);
    fprintf(fp, "\n");
}

static void print_recall(FILE *fp, const geometry *G, char *const *nm) {
    int w = name_width(G, nm);
    fprintf(fp, "\nexpert choices recalled on the %d held-out tokens (top-k; a dense router's top-1), from\n",
            G->N - G->ntrain);
    fprintf(fp, "  %-*s  %2s  %11s  %12s  %18s  %8s\n", w, "layer", "k", "the states", "residual PCA",
            "transported shared", "specific");
    for (int l = 0; l < G->L; l++) {
        const geo_layer *y = &G->layers[l];
        fprintf(fp, "  %-*s  %2d  %11.4f  %12.4f", w, nm[l], y->k, y->recall_states, y->recall_pca);
        if (l) fprintf(fp, "  %18.4f  %8.4f\n", y->recall_shared, y->recall_specific);
        else fprintf(fp, "  %18s  %8s\n", "-", "-");
    }
    fprintf(fp, "  by readout rank q = 1 .. %d, states/PCA (each from its first q coordinates; at full rank "
                "the states' is 1 by construction):\n", G->r);
    for (int l = 0; l < G->L; l++) {
        const geo_layer *y = &G->layers[l];
        fprintf(fp, "  %-*s ", w, nm[l]);
        for (int q = 0; q < G->r; q++) fprintf(fp, " %.3f/%.3f", y->recall_rank[q], y->recall_rank[G->r + q]);
        fprintf(fp, "\n");
    }
}

static void print_transport(FILE *fp, const geometry *G, const geo_transport *T) {
    fprintf(fp, "\ntransport: the network's loss on the %d held-out sequences (%.6f with nothing replaced) when MoE "
                "block l+1's control component is replaced by the one transported from block l: dNLL\n",
            T->heldout_seqs, T->loss);
    fprintf(fp, "  %-10s", "step");
    for (int t = 0; t < GT_COUNT; t++) fprintf(fp, " %10s", geo_transport_name(t));
    fprintf(fp, "\n");
    int S = G->L - 1;
    for (int l = 0; l < S; l++) {
        char st[32];
        snprintf(st, sizeof st, "%d->%d", l, l + 1);
        fprintf(fp, "  %-10s", st);
        for (int t = 0; t < GT_COUNT; t++) fprintf(fp, " %10.5f", T->dnll[(size_t)t * S + l]);
        fprintf(fp, "\n");
    }
    fprintf(fp, "  %-10s", "all");
    for (int t = 0; t < GT_COUNT; t++) fprintf(fp, " %10.5f", T->all[t]);
    fprintf(fp, "\n  (specific: the layer-specific transitions, a ceiling; mean: the states' training mean, the "
                "routing information removed)\n");
}

/* The layer names come from the checkpoint (a native file's prefixes): escaped
 * for the terminal (ms_text.h). */
void geometry_print(FILE *fp, const geometry *G, const geo_transport *T) {
    char **nm = ms_malloc(sizeof(char *) * (size_t)(G->L > 0 ? G->L : 1));
    for (int l = 0; l < G->L; l++) nm[l] = ms_escaped(G->layers[l].name);
    fprintf(fp, "routing geometry: %d MoE layers, width d = %d, common rank r = %d; %d tokens, the first %d train, "
                "%d held out\n",
            G->L, G->d, G->r, G->N, G->ntrain, G->N - G->ntrain);
    print_routers(fp, G, nm);
    print_angles(fp, G);
    print_transitions(fp, G);
    print_recall(fp, G, nm);
    if (T) print_transport(fp, G, T);
    for (int l = 0; l < G->L; l++) free(nm[l]);
    free(nm);
}

void geo_transport_json(cJSON *root, const geometry *G, const geo_transport *T) {
    cJSON *o = cJSON_AddObjectToObject(root, "transport");
    cJSON_AddNumberToObject(o, "train_sequences", T->ntrain_seqs);
    cJSON_AddNumberToObject(o, "heldout_sequences", T->heldout_seqs);
    cJSON_AddItemToObject(o, "loss", json_number(T->loss));
    int S = G->L - 1;
    for (int t = 0; t < GT_COUNT; t++) {
        cJSON *m = cJSON_AddObjectToObject(o, geo_transport_name(t));
        cJSON_AddItemToObject(m, "steps", json_numbers(T->dnll + (size_t)t * S, S));
        cJSON_AddItemToObject(m, "all", json_number(T->all[t]));
    }
}

/* ---- CSV ---- */

static void csv_num(FILE *f, double v) {
    if (isnan(v)) fputs(",nan", f);
    else fprintf(f, ",%.9g", v);
}

int geometry_write_csv(const geometry *G, const geo_transport *T, const char *path, ms_err *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ms_fail(err, "%s: out of memory formatting the CSV", path);
    char *p = prov_text("# ");
    fputs(p, f);
    free(p);
    fputs("from,to,from_layer,to_layer", f);
    for (int m = 0; m < GEO_NMETHODS; m++) fprintf(f, ",%s_shared,%s_specific", geo_method_name(m), geo_method_name(m));
    fputs(",identity,recall_states,recall_pca,recall_shared,recall_specific", f);
    for (int t = 0; t < GT_COUNT; t++) fprintf(f, ",dnll_%s", geo_transport_name(t));
    fputs("\n", f);
    int S = G->L - 1;
    for (int l = 0; l < S; l++) {
        const geo_layer *y = &G->layers[l + 1];
        fprintf(f, "%d,%d,", l, l + 1);
        csv_field(f, G->layers[l].name);
        fputc(',', f);
        csv_field(f, y->name);
        for (int m = 0; m < GEO_NMETHODS; m++) csv_num(f, G->fit[m].r2_shared[l]), csv_num(f, G->fit[m].r2_specific[l]);
        csv_num(f, G->fit[GEO_CANONICAL].r2_identity[l]);
        csv_num(f, y->recall_states), csv_num(f, y->recall_pca), csv_num(f, y->recall_shared);
        csv_num(f, y->recall_specific);
        for (int t = 0; t < GT_COUNT; t++) csv_num(f, T ? T->dnll[(size_t)t * S + l] : NAN);
        fputs("\n", f);
    }
    fclose(f);
    int rc = af_write_all(path, buf, len, err);
    free(buf);
    return rc;
}
