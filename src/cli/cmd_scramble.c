/* cmd_scramble.c - `moescope scramble A -o OUT [--seed S] [--translate]`:
 * apply a random element of G(n) (expert order, optionally a gate
 * translation) and random hidden permutations. OUT computes the same
 * function as A with shuffled parameters; the metadata says what was done
 * (moescope.scramble.*, see symmetry.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "cli/cli.h"
#include "core/ms_text.h"
#include "io/model_io.h"
#include "model/model.h"
#include "model/symmetry.h"

static const char *USAGE =
    "moescope scramble A -o OUT [--seed S] [--translate | --translate-scale X] [--layer L]";

static void help(void) {
    printf("usage: %s\n\n"
           "Write OUT: the layer of A with a random expert order, random hidden-unit\n"
           "permutations in every expert (and shared expert), a random order of the\n"
           "shared experts, and with --translate a random common shift of the gate rows.\n"
           "OUT computes the same function as A. The metadata records the seed and the\n"
           "order: moescope.scramble.order = pi means slot i of OUT holds A's expert pi[i]\n"
           "(a folder: in the metadata of the shard holding the layer, shown by info).\n"
           "Every other tensor of A (other MoE layers, embeddings, ...) is copied through\n"
           "unchanged, in its own dtype, and A's metadata is kept. The chosen layer keeps a\n"
           "Hugging Face folder's layout, dtype and shards; in moescope's own layout the\n"
           "layer and the head are written as F32.\n\n"
           "  -o, --output OUT  output checkpoint (must not be A)\n"
           "  --seed S          random seed (default 1)\n"
           "  --translate       also add a random (c_W, c_b) to every gate row, as large as\n"
           "                    the rows themselves (RMS of the gate weights)\n"
           "  --translate-scale X  the same, X times larger (e.g. 20: a shift that swamps\n"
           "                    the rows; the function is still the same, and only the\n"
           "                    centred gate cost still finds the expert order)\n"
           "  --layer L         layer prefix (default moe); all: every MoE layer (a network's\n"
           "                    MoE blocks), layer i with seed S + i\n"
           "  --help            this text\n",
           USAGE);
}

/* --layer all: layer i scrambled with seed + i */
typedef struct {
    unsigned long long seed;
    double translate;
} scramble_all;

/* Scramble layer `layer` of in into out; report: print what was done in full
 * (else one line, a step of --layer all). */
static int scramble_one(const char *in, const char *out, const char *layer, unsigned long long seed,
                        double translate, int report) {
    ms_err err;
    moe_model m;
    // a family layout's routed weights stay mapped in their dtype: the experts moved as
    // views of the file, each output slot decoded as it is written (cli_save_moved)
    ckpt *map = NULL;
    if (cli_load_mapped(in, layer, &m, &map) && moe_load(&m, in, layer, cli_overrides(), &err))
        return cli_error("%s", err.msg);
    int *pi = ms_malloc((size_t)m.cfg.n * sizeof(int));
    int *sp = ms_malloc((size_t)(m.cfg.s ? m.cfg.s : 1) * sizeof(int));
    int *hidden = map ? ms_malloc((size_t)m.cfg.n * m.cfg.h * sizeof(int)) : NULL; // the views' orders
    moe_scramble_mapped(&m, (uint64_t)seed, translate, pi, sp, hidden);
    int rc = 0;
    char *el = ms_escaped(m.layer), *ein = ms_escaped(in); // text from the file, for the terminal
    // the shared experts move too: each keeps its own dtype where it lands
    if (cli_save_moved(&m, pi, m.cfg.s ? sp : NULL, in, out)) {
        rc = 1;
    } else if (!report) {
        printf("layer %s: expert order %s (seed %llu)\n", el, moe_meta_get(&m, "moescope.scramble.order"),
               seed);
    } else {
        printf("scrambled %s (layer %s, n = %d, seed %llu)\n", ein, el, m.cfg.n, seed);
        printf("  expert order  %s  (slot i of the output holds expert pi[i] of the input)\n",
               moe_meta_get(&m, "moescope.scramble.order"));
        printf("  hidden units  permuted in %d expert(s)%s\n", m.cfg.n + m.cfg.s,
               m.cfg.s ? " (shared included)" : "");
        if (m.cfg.s)
            printf("  shared order  %s\n", moe_meta_get(&m, "moescope.scramble.shared_order"));
        if (translate > 0)
            printf("  gate          translated by a random (c_W, c_b), %g x the rows' RMS\n",
                   translate);
        else
            printf("  gate          not translated\n");
        printf("wrote %s\n", out);
    }
    free(el);
    free(ein);
    free(pi);
    free(sp);
    moe_free(&m);
    free(hidden);
    moe_map_close(map);
    return rc;
}

static int scramble_step(void *ctx, int i, const char *layer, const char *src, const char *dst) {
    const scramble_all *s = ctx;
    return scramble_one(src, dst, layer, s->seed + (unsigned long long)i, s->translate, 0);
}

int cmd_scramble(int argc, char **argv) {
    const char *out = NULL, *layer = NULL;
    unsigned long long seed = 1;
    double translate = 0;
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 's'},
                                         {"translate", no_argument, 0, 't'},
                                         {"translate-scale", required_argument, 0, 'T'},
                                         {"layer", required_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":o:s:l:th", opts, NULL)) != -1) {
        switch (ch) {
        case 'o': out = optarg; break;
        case 's': {
            if (cli_parse_u64(optarg, &seed))
                return cli_usage_error(USAGE, "scramble: --seed needs an integer in 0..%llu, not '%s'",
                                       (unsigned long long)UINT64_MAX, optarg);
            break;
        }
        case 't': translate = 1; break;
        case 'T': {
            char *end;
            errno = 0;
            translate = strtod(optarg, &end);
            if (errno || *end || !*optarg || !(translate > 0 && translate <= 1e6))
                return cli_usage_error(USAGE, "scramble: --translate-scale needs a number in "
                                              "(0, 1e6], got '%s'", optarg);
            break;
        }
        case 'l': layer = optarg; break;
        case 'h': help(); return 0;
        case ':': return cli_option_error(USAGE, "scramble", ch, argc, argv);
        default: return cli_option_error(USAGE, "scramble", ch, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "scramble: missing the checkpoint A");
    if (optind + 1 < argc)
        return cli_usage_error(USAGE, "scramble: unexpected argument '%s'", argv[optind + 1]);
    if (!out) return cli_usage_error(USAGE, "scramble: -o OUT is required");
    const char *in = argv[optind];
    const char *inputs[1] = {in};
    const out_spec outs[1] = {{out, "-o", ckpt_output_is_dir(in, out) ? OUT_DIR : OUT_FILE}};
    int orc = cli_check_outputs("scramble", USAGE, outs, 1, inputs, 1);
    if (orc) return orc;
    if (cli_layer_is_all(layer)) {
        scramble_all ctx = {seed, translate};
        return cli_each_layer(in, in, out, scramble_step, &ctx);
    }
    return scramble_one(in, out, layer, seed, translate, 1);
}
