/* cli_family.c - the options that choose a checkpoint's family and override its
 * router (--family, --top-k, --norm-topk-prob, --routed-scaling, --n-group,
 * --topk-group), and --ignore-capture-layer. They apply to every command that
 * loads a checkpoint, so main takes them out of argv before the subcommand
 * parses the rest, into one family_overrides that every load of the process is
 * given (cli_overrides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/env.h"
#include "core/mem_budget.h"
#include "core/simd.h"
#include "io/family.h"
#include "io/provenance.h"

int cli_front(int *argc, char **argv, const char *prog, void (*usage)(FILE *fp)) {
    if (*argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("%s %s\nblas: %s (%s kernels)\ncpu: %s\n", prog, ms_version(), prov_blas(),
               prov_blas_kernel(), prov_cpu());
        cli_print_simd(stdout);
        const char *fb = env_get(ENV_OPENBLAS_FALLBACK);
        if (fb)
            printf("note: OpenBLAS did not know this CPU and took its %s kernels; moescope chose these "
                   "(MOESCOPE_OPENBLAS_OWN=1 keeps OpenBLAS's choice)\n", fb);
        return 0;
    }
    ms_err err;
    double limit;
    if (ms_mem_env(&limit, &err)) { // a limit that is not one is never taken for no limit
        fprintf(stderr, "%s: %s\n", ms_process_name(), err.msg);
        return 2;
    }
    int rc = cli_take_family_options(argc, argv); // --family and router overrides
    return rc ? rc : -1;
}

void cli_print_simd(FILE *fp) {
    const char *want = env_get(ENV_SIMD);
    int w = ms_simd_parse(want);
    fprintf(fp, "simd: %s (", ms_simd_name(ms_simd_pick(MS_SIMD_AUTO)));
    if (w < 0) fprintf(fp, "MOESCOPE_SIMD=%s is none of avx512, avx2, plain; ", want);
    else if (w > 0) fprintf(fp, "MOESCOPE_SIMD=%s; ", want);
    fprintf(fp, "the CPU runs %s)\n", ms_simd_name(ms_simd_cpu()));
}

static int opt_value(int *argc, char **argv, int i, const char **val) {
    const char *a = argv[i];
    const char *eq = strchr(a, '=');
    int used = 1;
    if (eq) *val = eq + 1;
    else if (i + 1 < *argc) {
        *val = argv[i + 1];
        used = 2;
    } else {
        *val = NULL;
    }
    return used;
}

static int bad_opt(const char *opt, const char *val, const char *want) {
    fprintf(stderr, "moescope: %s needs %s, got '%s'\n", opt, want, val ? val : "(nothing)");
    return 2;
}

/* filled once, by cli_take_family_options (main, before any command runs) */
static family_overrides fo = FAMILY_OVERRIDES_NONE;

const family_overrides *cli_overrides(void) { return &fo; }

/* --ignore-capture-layer: an evaluation set captured at another layer is evaluated anyway */
static int ignore_capture_layer;

int cli_ignore_capture(void) { return ignore_capture_layer; }

int cli_take_family_options(int *argc, char **argv) {
    static const char *const names[] = {"--family", "--top-k", "--norm-topk-prob",
                                        "--routed-scaling", "--n-group", "--topk-group"};
    for (int i = 1; i < *argc;) {
        if (!strcmp(argv[i], "--ignore-capture-layer")) { // a flag: no value
            ignore_capture_layer = 1;
            for (int j = i; j < *argc; j++) argv[j] = argv[j + 1];
            (*argc)--;
            continue;
        }
        int which = -1;
        for (int j = 0; j < 6; j++) {
            size_t l = strlen(names[j]);
            if (!strncmp(argv[i], names[j], l) && (argv[i][l] == 0 || argv[i][l] == '=')) which = j;
        }
        if (which < 0) {
            i++;
            continue;
        }
        const char *v;
        int used = opt_value(argc, argv, i, &v);
        long long iv = 0;
        int int_ok = !cli_parse_int(v, 1, 4096, &iv) || (which == 2 && !cli_parse_int(v, 0, 1, &iv));
        char *end = NULL;
        switch (which) {
        case 0:
            if (!v || (fo.family = family_from_name(v)) < 0) {
                fprintf(stderr, "moescope: --family: unknown family '%s' (known: %s)\n",
                        v ? v : "", family_names_list());
                return 2;
            }
            break;
        case 1:
            if (!int_ok) return bad_opt(names[1], v, "an integer in 1..4096");
            fo.k = (int)iv;
            break;
        case 2:
            if (!int_ok || iv > 1) return bad_opt(names[2], v, "0 or 1");
            fo.norm_topk_prob = (int)iv;
            break;
        case 3: {
            double x = v ? strtod(v, &end) : 0;
            if (!v || !*v || *end || !(x > 0) || x > MOE_MAX_ROUTED_SCALE)
                return bad_opt(names[3], v, "a positive number of at most 1e6");
            fo.scaling = x;
            break;
        }
        default:
            if (!int_ok) return bad_opt(names[which], v, "an integer in 1..4096");
            if (which == 4) fo.n_group = (int)iv;
            else fo.topk_group = (int)iv;
        }
        for (int j = i; j + used <= *argc; j++) argv[j] = argv[j + used];
        *argc -= used;
    }
    return 0;
}
