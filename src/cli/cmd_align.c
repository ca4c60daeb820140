/* cmd_align.c - `moescope align A B -o OUT`: write B re-expressed in A's basis
 * (Algorithm 1). The result computes the same function as B. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "cli/cli.h"
#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "io/model_io.h"
#include "model/symmetry.h"

static const char *USAGE =
    "moescope align A.safetensors B.safetensors -o OUT [--method gate|expert|activation|router] "
    "[--eval E] [--no-center] [--no-order] [--no-wm] [--order 2,0,3,1] [--layer L]";

static void help(void) {
    printf("usage: %s\n\n"
           "Re-express B in A's basis: reorder B's experts (with their gate rows) by a linear\n"
           "assignment on the expert cost, then permute the hidden units of each expert by\n"
           "weight matching against A's expert in the same slot. The output computes exactly\n"
           "the same function as B; only its parameters move closer to A's. Every other\n"
           "tensor of B (other MoE layers, embeddings, ...) is copied through unchanged, in\n"
           "its own dtype, and B's metadata is kept.\n\n"
           "options:\n"
           "  -o, --output OUT  the aligned checkpoint (must not be A or B)\n"
           "  -m, --method M    the cost for the expert order (default expert; cost --help):\n"
           "                    gate, expert, or with --eval activation (hidden units matched\n"
           "                    by their activations on E too) or router\n"
           "  -e, --eval E      the evaluation set the last two read: a layer's inputs, or a\n"
           "                    network's tokens or images, read at the block's inputs under A\n"
           "      --no-center   do not centre the gate rows (gate and router methods)\n"
           "      --no-order    skip the expert-order step (identity order)\n"
           "      --no-wm       skip weight matching (identity hidden permutations)\n"
           "      --order LIST  use this expert order (e.g. 2,0,3,1) instead of solving\n"
           "  -l, --layer L     layer prefix (default moe); all: every MoE layer (a network's\n"
           "                    MoE blocks), each aligned on its own, in one output\n"
           "  -h, --help        this help\n",
           USAGE);
}

/* What a teacher would say next: whether B was a scramble of A and the order
 * undid it, and what is left of the gate difference. Without a scramble record
 * (a model family's files carry none) the experts themselves say it: after
 * weight matching each of B's experts equals A's in its slot up to rounding
 * (res->expert_diff, found the same way held or streamed). */
static void explain_result(const moe_model *A, const moe_model *Bp, const align_result *res) {
    char msg[512];
    if (moe_scramble_check(A, Bp, res->order, msg, sizeof msg))
        printf("%s\n", msg);
    else if (isfinite(res->expert_diff) && res->expert_diff <= 1e-6 * res->expert_scale)
        printf("experts: every aligned expert of B equals A's in its slot up to rounding (largest "
               "difference %.3g, values up to %.3g): B's experts are A's, permuted - a scramble "
               "of A - and the alignment undid the permutation\n",
               res->expert_diff, res->expert_scale);
    double shift, resid, rows;
    moe_gate_shift(A, Bp, &shift, &resid, &rows);
    if (!(rows > 0)) return;
    printf("gate: the aligned rows differ from A's by a common shift of norm %.4g (%.3gx the "
           "rows' RMS norm %.4g)",
           shift, shift / rows, rows);
    if (A->cfg.score == SCORE_SOFTMAX)
        printf(" - a translation, which softmax ignores: it changes no output -");
    else
        printf(" - %s scores have no translation symmetry: this shift is a real difference -",
               moe_score_name(A->cfg.score));
    printf(" and by %.4g per row beyond it\n", resid);
}

/* --layer all: each layer of B (from the previous step's output) aligned to A's */
typedef struct {
    const cli_align_args *a;
    const char *src, *dst; /* the step's checkpoint chain: read B from src, write dst */
} align_all;

/* moved experts keep their dtypes, as a one-layer align's do (family_save_moved) */
static int align_keep(void *ctx, moe_model *A, moe_model *B, const align_result *res) {
    const align_all *c = ctx;
    (void)A;
    return cli_save_moved(B, res->order, res->shared_order, c->src, c->dst);
}

static int align_step(void *ctx, int i, const char *layer, const char *src, const char *dst) {
    align_all *c = ctx;
    (void)i;
    c->src = src, c->dst = dst;
    return cli_align_layer(c->a, layer, src, align_keep, c);
}

static int align_every_layer(cli_align_args *a, int argc, char **argv) {
    int orc = cli_every_layer_args(a, argc, argv, "align", USAGE, 1); // the output is B's chain
    if (orc) return orc;
    align_all ctx = {a, NULL, NULL};
    int rc = cli_each_layer(a->pa, a->pb, a->out_path, align_step, &ctx);
    if (!rc) printf("weight matching %s\nwrote %s\n", a->ao.wm_stage ? "on" : "off", a->out_path);
    return rc;
}

int cmd_align(int argc, char **argv) {
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"method", required_argument, 0, 'm'},
        {"no-center", no_argument, 0, 'C'},    {"no-order", no_argument, 0, 'O'},
        {"no-wm", no_argument, 0, 'W'},        {"order", required_argument, 0, 'r'},
        {"layer", required_argument, 0, 'l'},  {"help", no_argument, 0, 'h'},
        {"eval", required_argument, 0, 'e'},   {0, 0, 0, 0}};
    cli_align_args a;
    cli_align_args_init(&a);
    a.stream_ok = 1; // a layer too large to hold twice is read expert by expert
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "o:m:l:e:h", opts, NULL)) != -1) {
        if (ch == 'h') {
            help();
            return 0;
        }
        if (ch == 'e') {
            a.e_path = optarg;
            continue;
        }
        int r = cli_align_option(&a, ch, optarg, "align", USAGE);
        if (r > 0) return r;
        if (r < 0)
            return cli_option_error(USAGE, "align", ch, argc, argv);
    }
    if (cli_layer_is_all(a.layer)) return align_every_layer(&a, argc, argv);
    int rc = cli_align_inputs(&a, argc, argv, "align", USAGE);
    if (rc) return rc;
    const align_opts *ao = &a.ao;
    const moe_model *A = &a.A;
    ms_err err;
    align_result res;
    // B is aligned where it lies (a real layer is gigabytes: no second copy); its metadata
    // (a scramble record) stays, for the closing explanation. Streamed layers: only the
    // permutations are found here, and B's experts are moved as the output is written.
    // Mapped layers: B aligned as views of its file, each slot decoded as it is written
    int streamed = a.sa.read || a.sb.read;
    moe_model Bv, *Bp = a.ma ? &Bv : &a.B;
    memset(&Bv, 0, sizeof Bv);
    if (a.ma ? align_models_mapped(A, &a.B, ao, &Bv, &res, &err)
             : streamed ? align_models_stream(A, &a.sa, &a.B, &a.sb, ao, &res, &err)
                        : align_models_inplace(A, &a.B, ao, &res, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    if (a.sb.read ? cli_save_aligned_stream(&a.B, &a.sb, &res, a.pb, a.out_path)
                  : cli_save_moved(Bp, res.order, res.shared_order, a.pb, a.out_path)) {
        rc = 1;
    } else {
        cli_print_order(&a, &res, A->cfg.n);
        if (A->cfg.s > 0) {
            char *so = moe_order_string(res.shared_order, A->cfg.s);
            printf("shared order %s\n", so);
            free(so);
        }
        printf("weight matching %s\n", ao->wm_stage ? "on" : "off");
        explain_result(A, Bp, &res);
        printf("wrote %s\n", a.out_path);
    }
    moe_free(&Bv);
    align_result_free(&res);
done:
    cli_align_args_free(&a);
    return rc;
}
