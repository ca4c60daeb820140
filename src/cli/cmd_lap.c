/* cmd_lap.c - `moescope lap COST.safetensors [--maximize] [--json F]`: solve the
 * linear assignment stored as the 2-D tensor 'cost' (any float dtype).
 *
 * Undocumented, for tests/bench/bench_lap.py: `--time` skips the row listing
 * and prints the time of lap_solve alone (no file I/O, no printing), wall
 * clock and this process's CPU time (the honest number on a shared machine),
 * and `--repeat R` solves R times and reports the best of each and the mean,
 * with the process's peak resident set (VmHWM). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "cli/cli.h"
#include "align/lap.h"
#include "io/safetensors.h"

/* Up to the weight-matching matrices of real MoE experts (hidden width h:
 * Mixtral-8x7B 14336, 8x22B 16384): 16384 x 16384 doubles are 2 GiB and
 * minutes of solving at worst. A 1.6 GB float32 file of zeros declaring 20000 x 20000
 * is refused before anything is read. */
#define LAP_MAX_CELLS (16384LL * 16384)

static const char *USAGE = "moescope lap COST.safetensors [--maximize] [--json F]";

static void lap_help(void) {
    printf("usage: %s\n\n"
           "Solve one linear assignment: the tensor 'cost' (2-D, any float dtype) of\n"
           "COST.safetensors, rows to columns, minimising the total (or maximising\n"
           "with --maximize). Rectangular matrices assign every row when there are\n"
           "fewer rows than columns, else every column (other rows print '-').\n\n"
           "  --maximize   maximise the total instead of minimising it\n"
           "  --json F     also write {\"assignment\": [col of each row, -1 if none],\n"
           "               \"total\": ...} to F (atomically)\n",
           USAGE);
}

/* Peak resident set of this process in kB (Linux VmHWM), or -1. */
static long peak_rss_kb(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1) break;
    fclose(fp);
    return kb;
}

/* Read the cost (nr, nc) as doubles into out, transposed to (nc, nr) when
 * transpose is set, so that the process holds the matrix once: float64 data
 * is read from the file (pread) a block of rows at a time into a small
 * buffer, never through the file's mapping (a page fault there maps the pages
 * around it too, up to a whole large folio of the page cache, ~1 MiB, which
 * stays counted in the resident set until dropped). Other dtypes convert
 * through st_read_f64. */
static int read_cost(const st_file *f, const st_tensor *t, int transpose, double *out,
                     ms_err *err) {
    const size_t nr = (size_t)t->shape[0], nc = (size_t)t->shape[1];
    if (t->dtype != ST_F64) {
        if (!transpose) return st_read_f64(f, t, out, err);
        double *tmp = ms_malloc(nr * nc * sizeof(double));
        int rc = st_read_f64(f, t, tmp, err);
        for (size_t i = 0; !rc && i < nr; i++)
            for (size_t j = 0; j < nc; j++) out[j * nr + i] = tmp[i * nc + j];
        free(tmp);
        return rc;
    }
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ms_fail(err, "%s: cannot open: %s", f->path, strerror(errno));
    // rows per block: 64 KiB of them, but 8 to 32 (8 rows transposed write
    // whole cache lines of the (nc, nr) matrix)
    size_t B = (64u << 10) / (8 * (nc ? nc : 1));
    B = B < 8 ? 8 : B > 32 ? 32 : B;
    double *buf = ms_malloc(B * (nc ? nc : 1) * sizeof(double));
    const off_t at = (off_t)((size_t)(f->data - f->map) + t->begin);
    int rc = 0;
    for (size_t i0 = 0; i0 < nr && !rc; i0 += B) {
        size_t i1 = i0 + B < nr ? i0 + B : nr, want = (i1 - i0) * nc * 8, got = 0;
        while (got < want) {
            ssize_t r = pread(fd, (char *)buf + got, want - got, at + (off_t)(i0 * nc * 8 + got));
            if (r <= 0) {
                rc = ms_fail(err, "%s: cannot read tensor 'cost': %s", f->path,
                             r < 0 ? strerror(errno) : "the file shrank");
                break;
            }
            got += (size_t)r;
        }
        for (size_t i = i0; i < i1 && !rc; i++)
            for (size_t j = 0; j < nc; j++) {
                double x = buf[(i - i0) * nc + j];
                if (!isfinite(x)) {
                    rc = ms_fail(err, "%s: tensor 'cost': non-finite value %g at [%zu, %zu]",
                                 f->path, x, i, j);
                    break;
                }
                out[transpose ? j * nr + i : i * nc + j] = x;
            }
    }
    free(buf);
    close(fd);
    return rc;
}

/* Finite costs whose sum overflows (n costs of 1e308): the total, and the
 * solver's potentials, would be infinite. Refused naming the largest cell. */
static int sum_can_overflow(const char *in, const double *cost, int nr, int nc, int tr,
                            ms_err *err) {
    size_t cells = (size_t)nr * (size_t)nc, at = 0;
    double big = 0;
    for (size_t k = 0; k < cells; k++)
        if (fabs(cost[k]) > big) big = fabs(cost[k]), at = k;
    int n = nr > nc ? nr : nc;
    double lim = DBL_MAX / (4.0 * (n > 0 ? n : 1));
    if (big <= lim) return 0;
    // cost is held (nc, nr) when transposed
    size_t i = tr ? at % (size_t)nr : at / (size_t)nc, j = tr ? at / (size_t)nr : at % (size_t)nc;
    return ms_fail(err, "%s: tensor 'cost': |cost[%zu][%zu]| = %g; a total of up to %d such "
                        "costs would overflow a double (each must be at most %.3g here)",
                   in, i, j, big, n, lim);
}

static double now_seconds(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_json(const char *path, const int *row_to_col, int nr, double total,
                      ms_err *err) {
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "assignment");
    for (int i = 0; i < nr; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(row_to_col[i]));
    cJSON_AddNumberToObject(root, "total", total); /* cJSON prints 17 digits when needed */
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return ms_fail(err, "%s: cannot format JSON", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* replace the terminator: the file ends with a newline */
    int rc = af_write_all(path, text, len + 1, err);
    free(text);
    return rc;
}

int cmd_lap(int argc, char **argv) {
    const char *in = NULL, *json = NULL;
    int maximize = 0, timing = 0;
    long repeat = 1;
    for (int a = 1; a < argc; a++) {
        const char *s = argv[a];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            lap_help();
            return 0;
        } else if (!strcmp(s, "--maximize") || !strcmp(s, "--maximise")) {
            maximize = 1;
        } else if (!strcmp(s, "--json")) {
            if (++a >= argc) return cli_usage_error(USAGE, "lap: --json needs a file name");
            json = argv[a];
        } else if (!strcmp(s, "--time")) {
            timing = 1;
        } else if (!strcmp(s, "--repeat")) {
            long long v;
            if (++a >= argc) return cli_usage_error(USAGE, "lap: --repeat needs a count");
            int rc = cli_int_option(USAGE, "lap", "--repeat", argv[a], 1, 1000000, &v);
            if (rc) return rc;
            repeat = (long)v;
        } else if (s[0] == '-' && s[1]) {
            return cli_usage_error(USAGE, "lap: unknown option '%s'", s);
        } else if (!in) {
            in = s;
        } else {
            return cli_usage_error(USAGE, "lap: one cost file only ('%s' is extra)", s);
        }
    }
    if (!in) return cli_usage_error(USAGE, "lap: missing COST.safetensors");

    ms_err err;
    const out_spec outs[1] = {{json, "--json", OUT_FILE}};
    int orc = cli_check_outputs("lap", USAGE, outs, 1, &in, 1);
    if (orc) return orc;
    st_file f;
    if (st_open(&f, in, &err)) return cli_error("%s", err.msg);
    const st_tensor *t = st_find(&f, "cost");
    if (!t) {
        st_close(&f);
        return cli_error("%s: no tensor 'cost' (lap reads the 2-D tensor named 'cost')", in);
    }
    if (t->ndim != 2) {
        int nd = t->ndim;
        st_close(&f);
        return cli_error("%s: tensor 'cost' must be 2-D (rows, columns); it has %d dimensions",
                         in, nd);
    }
    if (t->shape[0] > 1000000 || t->shape[1] > 1000000 || t->numel > LAP_MAX_CELLS) {
        long long r = (long long)t->shape[0], k = (long long)t->shape[1];
        st_close(&f);
        return cli_error("%s: tensor 'cost' is %lld x %lld; lap takes at most %lld cells "
                         "(16384 x 16384: %lld MiB as doubles, and O(n^3) work) and 1000000 rows "
                         "or columns",
                         in, r, k, (long long)LAP_MAX_CELLS, (long long)LAP_MAX_CELLS * 8 >> 20);
    }
    int nr = (int)t->shape[0], nc = (int)t->shape[1];
    // more rows than columns: hold the cost transposed, (nc, nr), and solve
    // that; lap_solve would otherwise make a transposed copy of its own, and
    // it returns the same assignment either way (see lap.h)
    int tr = nr > nc;
    double *cost = ms_malloc((size_t)(t->numel ? t->numel : 1) * sizeof(double));
    int *row_to_col = ms_malloc((size_t)(nr ? nr : 1) * sizeof(int));
    int *sol = tr ? ms_malloc((size_t)(nc ? nc : 1) * sizeof(int)) : row_to_col;
    int rc = 1;
    double total = 0, best = 1e300, sum = 0, best_cpu = 1e300;
    if (read_cost(&f, t, tr, cost, &err) || sum_can_overflow(in, cost, nr, nc, tr, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    for (long r = 0; r < repeat; r++) {
        /* the solver is single-threaded: this thread's CPU time, not the process's,
           which would also count OpenBLAS's idle pool threads spinning at start-up */
        double t0 = now_seconds(CLOCK_MONOTONIC), c0 = now_seconds(CLOCK_THREAD_CPUTIME_ID);
        if (lap_solve(cost, tr ? nc : nr, tr ? nr : nc, maximize, sol, &total, &err)) {
            cli_error("%s: tensor 'cost': %s", in, err.msg);
            goto done;
        }
        double dt = now_seconds(CLOCK_MONOTONIC) - t0;
        double dc = now_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
        best = dt < best ? dt : best;
        best_cpu = dc < best_cpu ? dc : best_cpu;
        sum += dt;
    }
    if (tr) {
        for (int i = 0; i < nr; i++) row_to_col[i] = -1;
        for (int j = 0; j < nc; j++) row_to_col[sol[j]] = j;
        total = 0; /* summed in row order, as lap_solve sums the untransposed cost */
        for (int i = 0; i < nr; i++)
            if (row_to_col[i] >= 0) total += cost[(size_t)row_to_col[i] * nr + i];
    }
    if (!timing)
        for (int i = 0; i < nr; i++) {
            if (row_to_col[i] >= 0) printf("%d -> %d\n", i, row_to_col[i]);
            else printf("%d -> -\n", i);
        }
    printf("total: %.17g\n", total);
    if (timing)
        printf("solve_seconds: best %.6f mean %.6f cpu_best %.6f over %ld runs (%d x %d, %s, "
               "lap_solve only) peak_rss_kb %ld\n",
               best, sum / (double)repeat, best_cpu, repeat, nr, nc,
               maximize ? "maximise" : "minimise", peak_rss_kb());
    if (json && write_json(json, row_to_col, nr, total, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    rc = 0;
done:
    free(cost);
    free(row_to_col);
    if (tr) free(sol);
    st_close(&f);
    return rc;
}
