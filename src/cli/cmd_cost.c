/* cmd_cost.c - `moescope cost A B`: the n*n expert cost matrix and its
 * assignment. Every method of the table (cost_method.h) offered at the layer's
 * size is computed; the chosen one's matrix is printed, with every order, total
 * and margin. */
#include <cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ms_text.h"
#include "align/align.h"
#include "io/atomic_file.h"
#include "cli/cli.h"
#include "io/json_file.h"
#include "align/cost_data.h"
#include "align/lap.h"
#include "io/model_io.h"
#include "io/provenance.h"
#include "model/symmetry.h"

static const char *USAGE =
    "moescope cost A.safetensors B.safetensors [--method gate|expert|activation|router] [--no-center] "
    "[--eval E] [--layer L] [--json F]";

static void help(void) {
    printf("usage: %s\n\n"
           "Expert cost matrix between the experts of A (rows A0..) and of B (columns B0..)\n"
           "and the expert order pi minimising sum_i C[i][pi(i)]: slot i of the aligned B\n"
           "holds B's expert pi(i). Every method is computed and reported; the last two\n"
           "need an evaluation set (--eval) and read its inputs (at most %d rows):\n"
           "  gate        distance between (centred) gate rows\n"
           "  expert      distance between hidden-permutation-invariant Gram matrices (default)\n"
           "  activation  1 - correlation of the experts' outputs on the set (Git Re-Basin's\n"
           "              activation matching; align also matches hidden units by theirs)\n"
           "  router      1 - correlation of the gate logits over the set's tokens (MC-SMoE)\n"
           "The margin is the total of the second-best order minus the best; for a\n"
           "group-limited router both are among the group-preserving orders.\n\n"
           "options:\n"
           "  -m, --method M    the matrix printed and written (default expert)\n"
           "      --no-center   do not centre the gate rows (or logits) over the experts\n"
           "  -e, --eval E      evaluation set for activation, router: a layer's inputs, or a\n"
           "                    network's tokens or images, read at the block's inputs under A\n"
           "  -l, --layer L     layer prefix (default moe)\n"
           "      --json F      write {method, centered, matrix, order, total, margin, ...}\n"
           "  -h, --help        this help\n",
           USAGE, COST_DATA_ROWS);
}

typedef struct {
    double *C;     // (n,n)
    int *order;    // (n)
    double total;
    int has_second;
    double second; // total of the best order that differs
} method_result;

static int solve_method(const cost_input *in, cost_method m, method_result *r, ms_err *err) {
    const moe_model *A = in->A;
    int n = A->cfg.n;
    r->C = ms_malloc((size_t)n * n * sizeof(double));
    r->order = ms_malloc((size_t)n * sizeof(int));
    r->has_second = 0;
    if (cost_matrix_in(m, in, r->C, err)) return -1;
    if (align_order(&A->cfg, r->C, r->order, &r->total, err)) return -1;
    if (n >= 2) {
        int *other = ms_malloc((size_t)n * sizeof(int));
        ms_err e2;
        if (align_second_best(&A->cfg, r->C, r->order, other, &r->second, &e2) == 0)
            r->has_second = 1;
        free(other);
    }
    return 0;
}

static void method_free(method_result *r) {
    free(r->C);
    free(r->order);
}

static void print_order_line(const char *name, const method_result *r, int n, int chosen) {
    char *os = moe_order_string(r->order, n);
    printf("%-16s order %s", name, os);
    free(os);
    printf("   total %.6g", r->total);
    if (r->has_second)
        printf("   second best %.6g   margin %.6g", r->second, r->second - r->total);
    else
        printf("   margin n/a");
    printf("%s\n", chosen ? "   (chosen)" : "");
}

/* the method's name, and for the gate whether its rows were centred */
static void method_label(cost_method m, int center, const moe_config *c, char *buf, size_t cap) {
    if (!cost_methods[m].centres) snprintf(buf, cap, "%s", cost_methods[m].name);
    else
        snprintf(buf, cap, "%s (%s)", cost_methods[m].name,
                 center ? "centred" : moe_gate_centring_valid(c) ? "no centre" : "sigmoid");
}

/* 1 when every method computed picked the same order */
static int orders_agree(const method_result *res, const int *offered, int n) {
    for (int m = 1; m < COST_NMETHODS; m++)
        if (offered[m] && memcmp(res[0].order, res[m].order, (size_t)n * sizeof(int))) return 0;
    return 1;
}

static cJSON *order_json(const int *o, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(o[i]));
    return a;
}

static cJSON *method_json(const method_result *r, int n) {
    if (!r->order) return cJSON_CreateNull(); // not offered at this size
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "order", order_json(r->order, n));
    cJSON_AddNumberToObject(o, "total", r->total);
    if (r->has_second) {
        cJSON_AddNumberToObject(o, "second_best", r->second);
        cJSON_AddNumberToObject(o, "margin", r->second - r->total);
    } else {
        cJSON_AddNullToObject(o, "second_best");
        cJSON_AddNullToObject(o, "margin");
    }
    return o;
}

static int write_json(const char *path, const moe_model *A, const moe_model *B,
                      cost_method method, int center, const method_result *res, int agree,
                      ms_err *err) {
    int n = A->cfg.n;
    const method_result *r = &res[method];
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "method", cost_method_name(method));
    cJSON_AddBoolToObject(root, "centered", center);
    cJSON *mat = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; j < n; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber(r->C[(size_t)i * n + j]));
        cJSON_AddItemToArray(mat, row);
    }
    cJSON_AddItemToObject(root, "matrix", mat);
    cJSON_AddItemToObject(root, "order", order_json(r->order, n));
    cJSON_AddNumberToObject(root, "total", r->total);
    if (r->has_second) {
        cJSON_AddNumberToObject(root, "margin", r->second - r->total);
        cJSON_AddNumberToObject(root, "second_best", r->second);
    } else {
        cJSON_AddNullToObject(root, "margin");
        cJSON_AddNullToObject(root, "second_best");
    }
    cJSON_AddStringToObject(root, "a", A->path ? A->path : "");
    cJSON_AddStringToObject(root, "b", B->path ? B->path : "");
    cJSON_AddStringToObject(root, "layer", A->layer ? A->layer : "moe");
    cJSON *methods = cJSON_CreateObject();
    for (int m = 0; m < COST_NMETHODS; m++)
        cJSON_AddItemToObject(methods, cost_methods[m].name, method_json(&res[m], n));
    cJSON_AddItemToObject(root, "methods", methods);
    if (agree < 0) cJSON_AddNullToObject(root, "agree");
    else cJSON_AddBoolToObject(root, "agree", agree);
    cJSON_AddItemToObject(root, "provenance", prov_json());
    return json_file_write(root, path, err);
}

/* One format for every cell of the matrix, so the columns line up and read
 * alike: the decimals that give the largest magnitude 5 significant digits
 * (*dec), or, when the cells span more than the 11 columns hold (beyond 1e6,
 * or every cell below 1e-3), scientific notation with 4 decimals (returns 1). */
static int cost_cell_format(const double *C, size_t len, int *dec) {
    double big = 0;
    for (size_t k = 0; k < len; k++)
        if (isfinite(C[k]) && fabs(C[k]) > big) big = fabs(C[k]);
    if (big >= 1e6 || (big > 0 && big < 1e-3)) {
        *dec = 4;
        return 1;
    }
    int digits = big > 0 ? (int)floor(log10(big)) + 1 : 1; /* 0.0034: -2 */
    *dec = digits >= 5 ? 0 : 5 - digits;
    return 0;
}

/* cost A A: a matrix of every expert against itself says nothing; say so */
static void note_same_checkpoint(const char *pa, const char *pb) {
    struct stat a, b;
    if (stat(pa, &a) || stat(pb, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino) return;
    fprintf(stderr, "moescope: note: A and B are the same checkpoint (%s): each expert costs 0 against "
                    "itself and the identity order is the answer; compare two checkpoints trained from "
                    "different seeds\n", pa);
}

int cmd_cost(int argc, char **argv) {
    static const struct option opts[] = {
        {"method", required_argument, 0, 'm'}, {"no-center", no_argument, 0, 'C'},
        {"layer", required_argument, 0, 'l'},  {"json", required_argument, 0, 'j'},
        {"eval", required_argument, 0, 'e'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    cost_method method = COST_EXPERT;
    int center = 1;
    const char *layer = NULL, *json = NULL, *e_path = NULL;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "m:l:e:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'm':
            if (cost_method_parse(optarg, &method))
                return cli_usage_error(USAGE, "cost: --method must be %s, not '%s'",
                                       cost_method_choices(), optarg);
            break;
        case 'C': center = 0; break;
        case 'l': layer = optarg; break;
        case 'j': json = optarg; break;
        case 'e': e_path = optarg; break;
        case 'h': help(); return 0;
        default:
            return cli_option_error(USAGE, "cost", ch, argc, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(USAGE, "cost: expected two checkpoints, got %d", argc - optind);
    const char *pa = argv[optind], *pb = argv[optind + 1];

    ms_err err;
    const char *inputs[3] = {pa, pb, e_path};
    const out_spec outs[1] = {{json, "--json", OUT_FILE}};
    int orc = cli_check_outputs("cost", USAGE, outs, 1, inputs, 3);
    if (orc) return orc;
    if (!e_path && cost_methods[method].needs == COST_NEEDS_EVALSET)
        return cli_usage_error(USAGE, "cost: --method %s needs an evaluation set (--eval E)",
                               cost_method_name(method));
    evalset E;
    memset(&E, 0, sizeof E);
    moe_model A, B;
    expert_source sa, sb; // a layer too large to hold twice: its experts read one at a time
    if (cli_load_models_stream(pa, pb, layer, &A, &B, &sa, &sb)) return 1;
    // the layer's inputs: a layer's set, or a network's run up to the block
    if (e_path && cli_layer_inputs(pa, e_path, layer, &A, &E, &err)) {
        moe_free(&A);
        moe_free(&B);
        moe_source_close(&sa);
        moe_source_close(&sb);
        return cli_error("%s", err.msg);
    }
    note_same_checkpoint(pa, pb);
    int rc = 0;
    method_result res[COST_NMETHODS];
    memset(res, 0, sizeof res);
    // a method not offered at this size (the exact expert cost past DeepSeek-V3 sizes):
    // the others, and why
    char why[COST_NMETHODS][600];
    int offered[COST_NMETHODS], all = 1;
    for (int m = 0; m < COST_NMETHODS; m++) {
        offered[m] = cost_method_offered((cost_method)m, &A.cfg, A.cfg.n, B.cfg.n, sa.read || sb.read,
                                         why[m], sizeof why[m]);
        if (!cost_method_available((cost_method)m, e_path != NULL)) {
            snprintf(why[m], sizeof why[m], "needs an evaluation set (--eval E)");
            offered[m] = 0;
            continue; // not asked for: agreement is among the others
        }
        all = all && offered[m];
    }
    if (!offered[method]) {
        fprintf(stderr, "moescope: note: %s; showing the gate cost\n", why[method]);
        method = COST_GATE;
    }
    if (moe_check_compatible(&A, &B, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    cost_input in = {.A = &A, .B = &B, .sa = &sa, .sb = &sb, .center = center, .X = E.inputs, .N = E.N,
                     .d = E.d};
    for (int m = 0; m < COST_NMETHODS; m++)
        if (offered[m] && solve_method(&in, (cost_method)m, &res[m], &err)) {
            rc = cli_error("%s", err.msg);
            goto done;
        }
    int n = A.cfg.n;
    int agree = all ? orders_agree(res, offered, n) : -1;
    const method_result *r = &res[method];
    // centring is a no-op where there is no translation symmetry (sigmoid scores)
    if (!moe_gate_centring_valid(&A.cfg)) center = 0;

    char *elayer = ms_escaped(A.layer ? A.layer : "moe"); // from the file
    printf("A: %s\nB: %s\nlayer %s: n=%d d=%d h=%d\n", pa, pb, elayer, n, A.cfg.d, A.cfg.h);
    free(elayer);
    printf("\ncost matrix, method %s%s (rows A0.., columns B0..; * = assigned):\n",
           cost_method_name(method),
           cost_methods[method].centres ? (center ? ", centred" : ", not centred") : "");
    printf("     ");
    for (int j = 0; j < n; j++) {
        char lab[16];
        snprintf(lab, sizeof lab, "B%d", j);
        printf(" %11s ", lab);
    }
    printf("\n");
    int dec, sci = cost_cell_format(r->C, (size_t)n * n, &dec);
    for (int i = 0; i < n; i++) {
        printf("A%-3d ", i);
        for (int j = 0; j < n; j++)
            printf(sci ? " %11.*e%c" : " %11.*f%c", dec, r->C[(size_t)i * n + j], r->order[i] == j ? '*' : ' ');
        printf("\n");
    }
    printf("\n");
    char later[160] = "";
    for (int m = 0; m < COST_NMETHODS; m++) {
        char label[64];
        method_label((cost_method)m, center, &A.cfg, label, sizeof label);
        if (!cost_method_available((cost_method)m, e_path != NULL)) // said once, below
            snprintf(later + strlen(later), sizeof later - strlen(later), "%s%s", later[0] ? ", " : "", label);
        else if (offered[m]) print_order_line(label, &res[m], n, method == (cost_method)m);
        else printf("%-16s not offered: %s\n", label, why[m]);
    }
    if (all) printf("methods agree:   %s\n", agree ? "yes" : "no");
    if (later[0]) printf("(with an evaluation set, --eval E, also: %s)\n", later);
    if (A.cfg.s > 0) printf("(%d shared experts are ordered separately by align)\n", A.cfg.s);

    if (json && write_json(json, &A, &B, method, center, res, agree, &err))
        rc = cli_error("%s", err.msg);
done:
    for (int m = 0; m < COST_NMETHODS; m++) method_free(&res[m]);
    evalset_free(&E);
    moe_free(&A);
    moe_free(&B);
    moe_source_close(&sa);
    moe_source_close(&sb);
    return rc;
}
