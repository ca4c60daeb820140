/* cmd_align.c - `moescope align A B -o OUT`: write B re-expressed in A's basis
 * (Algorithm 1, SPEC §4). The result computes the same function as B. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "atomic_file.h"
#include "cli.h"

static const char *USAGE =
    "moescope align A.safetensors B.safetensors -o OUT [--method gate|expert] [--no-center] "
    "[--no-order] [--no-wm] [--order 2,0,3,1] [--layer L]";

static void help(void) {
    printf("usage: %s\n\n"
           "Re-express B in A's basis: reorder B's experts (with their gate rows) by a linear\n"
           "assignment on the expert cost, then permute the hidden units of each expert by\n"
           "weight matching against A's expert in the same slot. The output computes exactly\n"
           "the same function as B; only its parameters move closer to A's.\n\n"
           "options:\n"
           "  -o, --output OUT  the aligned checkpoint (must not be A or B)\n"
           "  -m, --method M    gate | expert: the cost for the expert order (default expert)\n"
           "      --no-center   do not centre the gate rows (gate method)\n"
           "      --no-order    skip the expert-order step (identity order)\n"
           "      --no-wm       skip weight matching (identity hidden permutations)\n"
           "      --order LIST  use this expert order (e.g. 2,0,3,1) instead of solving\n"
           "  -l, --layer L     layer prefix (default moe)\n"
           "  -h, --help        this help\n",
           USAGE);
}

int cmd_align(int argc, char **argv) {
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"method", required_argument, 0, 'm'},
        {"no-center", no_argument, 0, 'C'},    {"no-order", no_argument, 0, 'O'},
        {"no-wm", no_argument, 0, 'W'},        {"order", required_argument, 0, 'r'},
        {"layer", required_argument, 0, 'l'},  {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    align_opts ao;
    align_opts_default(&ao);
    const char *out_path = NULL, *layer = NULL, *order_str = NULL;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "o:m:l:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out_path = optarg; break;
        case 'm':
            if (cost_method_parse(optarg, &ao.method))
                return cli_usage_error(USAGE, "align: --method must be gate or expert, not '%s'",
                                       optarg);
            break;
        case 'C': ao.center = 0; break;
        case 'O': ao.order_stage = 0; break;
        case 'W': ao.wm_stage = 0; break;
        case 'r': order_str = optarg; break;
        case 'l': layer = optarg; break;
        case 'h': help(); return 0;
        default:
            return cli_usage_error(USAGE, "align: unknown option or missing argument '%s'",
                                   argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(USAGE, "align: expected two checkpoints, got %d", argc - optind);
    if (!out_path) return cli_usage_error(USAGE, "align: -o OUT is required");
    const char *pa = argv[optind], *pb = argv[optind + 1];

    ms_err err;
    const char *inputs[2] = {pa, pb};
    if (af_check_not_input(out_path, inputs, 2, &err)) return cli_error("%s", err.msg);
    moe_model A, B, out;
    if (moe_load(&A, pa, layer, &err)) return cli_error("%s", err.msg);
    if (moe_load(&B, pb, layer, &err)) {
        moe_free(&A);
        return cli_error("%s", err.msg);
    }
    int rc = 0;
    int *order = NULL;
    if (order_str) {
        order = ms_malloc((size_t)A.cfg.n * sizeof(int));
        if (cli_parse_order(order_str, order, A.cfg.n)) {
            rc = cli_usage_error(USAGE, "align: --order '%s' is not a permutation of 0..%d",
                                 order_str, A.cfg.n - 1);
            goto done;
        }
        ao.order = order;
    }
    align_result res;
    if (align_models(&A, &B, &ao, &out, &res, &err)) {
        rc = cli_error("%s", err.msg);
        goto done;
    }
    if (moe_save(&out, out_path, &err)) {
        rc = cli_error("%s", err.msg);
    } else {
        printf("order");
        for (int i = 0; i < A.cfg.n; i++) printf(" %d", res.order[i]);
        if (order_str)
            printf("   (given)\n");
        else if (!ao.order_stage)
            printf("   (identity: expert-order step off)\n");
        else
            printf("   cost total %.6g (%s%s)\n", res.cost_total, cost_method_name(ao.method),
                   ao.method == COST_GATE ? (ao.center ? ", centred" : ", not centred") : "");
        if (A.cfg.s > 0) {
            printf("shared order");
            for (int j = 0; j < A.cfg.s; j++) printf(" %d", res.shared_order[j]);
            printf("\n");
        }
        printf("weight matching %s\nwrote %s\n", ao.wm_stage ? "on" : "off", out_path);
    }
    moe_free(&out);
    align_result_free(&res);
done:
    free(order);
    moe_free(&A);
    moe_free(&B);
    return rc;
}
