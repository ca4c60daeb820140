/* geo_report.c - the routing geometry as JSON (geo_report.h). */
#include "analysis/geo_report.h"

#include <math.h>
#include <stdlib.h>

#include "io/json_file.h"
#include "io/provenance.h"

static cJSON *layer_json(const geo_layer *y) {
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
    for (int l = 0; l < G->L; l++) cJSON_AddItemToArray(ls, layer_json(&G->layers[l]));
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
