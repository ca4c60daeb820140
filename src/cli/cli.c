/* cli.c - helpers shared by the subcommands. */
#include "core/ms_text.h"
#include "cli/cli.h"

#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/checkpoint.h"
#include "core/blas_threads.h"
#include "io/family.h"
#include "analysis/ms_limits.h"
#include "core/env.h"
#include "plot/plot.h"
#include "core/progress.h"
#include "core/test_hooks.h"
#include "io/model_io.h"
#include "io/provenance.h"
#include "model/symmetry.h"
#include "io/evalset.h"
#include "network/net_evalset.h"
#include "network/net_landscape.h"

/* OpenBLAS (pthreads build) starts its worker threads when it is loaded and
 * each spins (sched_yield) for about 2^28 cycles before it sleeps: a command
 * of a few tens of milliseconds loses a core to that. The commands that run
 * BLAS single-threaded inside their own workers (landscape, eval, study, ...)
 * stop the pool at once; OpenBLAS would start it again on a call that sets
 * the thread count, which blas_threads.c avoids. Weak, so that another BLAS
 * links too. */
void blas_thread_shutdown_(void) __attribute__((weak));

void cli_blas_quiet(void) {
    blas_threads_default(1); /* the pool is up: this starts nothing */
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

int cli_usage_error(const char *usage, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "moescope: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n", usage);
    return 2;
}

int cli_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", ms_process_name());
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int cli_int_option(const char *usage, const char *cmd, const char *opt, const char *arg,
                   long long lo, long long hi, long long *out) {
    if (!cli_parse_int(arg, lo, hi, out)) return 0;
    return cli_usage_error(usage, "%s: %s needs an integer in %lld..%lld, not '%s'", cmd, opt, lo,
                           hi, arg ? arg : "");
}

int cli_option_error(const char *usage, const char *cmd, int ch, int argc, char **argv) {
    const char *word = optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "?";
    if (ch == '?' && optopt && optopt != '?') {
        // an unknown short option inside "-abc": getopt has not moved past the word yet
        if (optind < argc && argv[optind][0] == '-' && argv[optind][1] != '-' &&
            strchr(argv[optind] + 1, optopt))
            word = argv[optind];
        if (word[0] == '-' && word[1] != '-' && strlen(word) > 2)
            return cli_usage_error(usage, "%s: unknown option '-%c' in '%s' (an argument that "
                                          "starts with '-' is read as options: for a file, write "
                                          "./%s or put it after --)",
                                   cmd, optopt, word, word);
    }
    if (ch == ':') return cli_usage_error(usage, "%s: option '%s' needs an argument", cmd, word);
    if (ch == '?' && optopt == 0) // getopt_long: no long option of that name
        return cli_usage_error(usage, "%s: unknown option '%s'", cmd, word);
    return cli_usage_error(usage, "%s: unknown option or missing argument '%s'", cmd, word);
}

int cli_parse_order(const char *s, int *order, int n) {
    int seen[256] = {0};
    if (n <= 0 || n > 256) return -1;
    int count = 0;
    const char *p = s;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= n || seen[v] || count >= n) return -1;
        seen[v] = 1;
        order[count++] = (int)v;
        p = end;
    }
    return count == n ? 0 : -1;
}

/* moescope-mpi: its ranks' stderr reaches mpirun through a pipe (and batch jobs
 * write it to a log), so rank 0 prints a line at every tenth of the work (the
 * counts it gathers from every process) with the time left, instead of a bar */
static void progress_lines(const char *what, long done, long total) {
    static long last_done = -1;
    static int last_step = -1;
    static double since;
    int step = (int)(10.0 * (double)done / (double)total);
    if (done < last_done || last_done < 0) last_step = -1, since = timing_now(); // a new landscape
    last_done = done;
    if (step == last_step) return;
    last_step = step;
    double el = timing_now() - since;
    char left[64] = "";
    if (done > 0 && done < total && el >= 1.0) {
        long s = (long)(el * (double)(total - done) / (double)done + 0.5);
        snprintf(left, sizeof left, ", %ld:%02ld:%02ld left", s / 3600, s / 60 % 60, s % 60);
    }
    fprintf(stderr, "%s: %s %ld/%ld (%d%%) over %d ranks%s\n", ms_process_name(), what, done, total,
            (int)(100.0 * (double)done / (double)total), cli_partition->size, left);
}

/* what a landscape's phase counts, from its name (ls_opts.phase names no unit) */
static const char *progress_unit_of(const char *what) {
    if (strstr(what, "at points")) return "points";
    if (strstr(what, "first layers")) return "experts";
    return strstr(what, "pairs") ? "pairs" : "orders";
}

/* The landscape's and the study's progress: on the shared progress line (a
 * terminal only), or as lines under MPI. */
void cli_progress(const char *what, long done, long total) {
    static char phase[64];
    static long phase_total = -1;
    if (total <= 0) return;
    if (cli_partition) {
        progress_lines(what, done, total);
        return;
    }
    // another phase (a library's: loading, weight matching) may have taken the line
    if (strcmp(phase, what) || total != phase_total || !progress_is(what)) {
        snprintf(phase, sizeof phase, "%s", what);
        phase_total = total;
        progress_begin(what, (double)total, progress_unit_of(what));
    }
    progress_set((double)done);
}

void cli_progress_end(void) { progress_end(); }

int cli_progress_wanted(int show) {
    if (!show || !cli_reports_here()) return 0;
    if (!cli_partition) return progress_enabled();
    const char *env = env_get(ENV_PROGRESS); // a pipe to mpirun: lines, unless turned off
    return !(env && !strcmp(env, "0"));
}

/* A study's line: the pair in the phase, every pair's orders in the count, the
 * rate and the ETA over the whole study (pair: the pairs done) */
void cli_progress_pairs(int pair, int npairs, long done, long total) {
    static double since = -1;
    if (cli_partition || total <= 0 || npairs <= 0) return; // MPI: a line per pair
    if (since < 0) since = timing_now();
    char phase[64];
    snprintf(phase, sizeof phase, "study pair %d/%d", pair + 1 < npairs ? pair + 1 : npairs, npairs);
    if (!progress_is(phase)) progress_begin_since(phase, (double)npairs * (double)total, "orders", since);
    progress_set((double)pair * (double)total + (double)done);
}

/* A landscape's progress inside another command (diagnose, study): ctx unused */
void cli_progress_rows(void *ctx, long done, long total) {
    (void)ctx;
    cli_progress("landscape", done, total);
}

void cli_progress_step(void *ctx, const char *what, long done, long total) {
    (void)ctx;
    if (!cli_partition) cli_progress(what, done, total);
}

int cli_check_capture(const evalset *E, const moe_model *m) {
    ms_err err;
    if (cli_ignore_capture() || !evalset_check_layer(E, m, &err)) return 0;
    return cli_error("%s", err.msg);
}

static void note_router_default(const moe_model *m) {
    if (!m || !moe_router_defaulted(&m->cfg)) return;
    fprintf(stderr, "moescope: warning: %s has no routing metadata (moescope.router): its layer %s is "
                    "evaluated as a dense softmax over all %d experts %s; a top-k model: --top-k K, or "
                    "the file's metadata moescope.router = topk and moescope.top_k = K\n",
            m->path, m->layer, m->cfg.n,
            m->cfg.residual ? "with a residual (z = x + D(x))" : "without a residual (z = D(x))");
}

void cli_note_router_defaults(const moe_model *a, const moe_model *b) {
    note_router_default(a);
    if (b && (!a || !a->path || !b->path || strcmp(a->path, b->path))) note_router_default(b);
}

int cli_load_models(const char *pa, const char *pb, const char *layer, moe_model *A, moe_model *B) {
    subject_spec sp = {.kind = SUBJECT_LAYER, .pa = pa, .pb = pb, .layer = layer,
                       .uses = MS_USE_WM | MS_USE_COST, .ov = cli_overrides()};
    subject s;
    ms_err err;
    if (subject_load(&s, &sp, &err)) return cli_error("%s", err.msg);
    *A = s.A, *B = s.B; // theirs now
    memset(&s.A, 0, sizeof s.A), memset(&s.B, 0, sizeof s.B);
    subject_free(&s);
    cli_note_router_defaults(A, B);
    return 0;
}

/* Would A's and B's layers in float32 take more than a quarter of the machine?
 * (MOESCOPE_STREAM=1: always yes, =0: never) */
static int stream_wanted(const moe_model *A, const moe_model *B) {
    const char *env = env_get(ENV_STREAM);
    if (env) return atoi(env) != 0;
    double layers = 4.0 * (double)moe_expert_size(&A->cfg) * (A->cfg.n + B->cfg.n);
    return layers > ms_mem_machine() / 4;
}

int cli_load_mapped(const char *path, const char *layer, moe_model *m, ckpt **map) {
    ms_err err;
    *map = NULL;
    if (test_hook_get(HOOK_FLOATS)) return 1; // the float path, for a test's reference
    return moe_load_mapped(m, path, layer, cli_overrides(), map, &err) ? 1 : 0;
}

int cli_load_models_mapped(const char *pa, const char *pb, const char *layer, moe_model *A, moe_model *B,
                           ckpt **ma, ckpt **mb) {
    ms_err err;
    *ma = *mb = NULL;
    if (env_get(ENV_STREAM)) return 1; // streamed, or held whole: as it says
    // their shared expert mapped too (one of them, in both: aligned as a view, written decoded)
    if (moe_load_mapped_shared(A, pa, layer, cli_overrides(), ma, &err)) return 1;
    int rc = moe_load_mapped_shared(B, pb, layer, cli_overrides(), mb, &err);
    if (!rc && (moe_shared_mapped(A) != moe_shared_mapped(B) || A->cfg.s > 1)) {
        moe_shared_to_floats(A);
        moe_shared_to_floats(B);
    }
    if (!rc && (moe_check_compatible(A, B, &err) || ms_limits_check(A, B, NULL, MS_USE_WM | MS_USE_COST, &err)))
        rc = 1;
    if (rc) { // the loads that hold them say what is wrong
        moe_free(A);
        moe_free(B);
        moe_map_close(*ma);
        moe_map_close(*mb);
        *ma = *mb = NULL;
        return 1;
    }
    prov_add_input(pa);
    prov_add_input(pb);
    cli_note_router_defaults(A, B);
    return 0;
}

int cli_load_models_stream(const char *pa, const char *pb, const char *layer, moe_model *A,
                           moe_model *B, expert_source *sa, expert_source *sb) {
    prov_add_input(pa);
    prov_add_input(pb);
    ms_err err;
    memset(sb, 0, sizeof *sb);
    if (moe_load_stream(A, pa, layer, cli_overrides(), sa, &err)) return cli_error("%s", err.msg);
    if (moe_load_stream(B, pb, layer, cli_overrides(), sb, &err)) {
        moe_free(A);
        moe_source_close(sa);
        return cli_error("%s", err.msg);
    }
    int rc = 0;
    if (!stream_wanted(A, B)) { // small enough to hold: read whole (the headers twice)
        moe_free(A);
        moe_free(B);
        moe_source_close(sa);
        moe_source_close(sb);
        if (moe_load(A, pa, layer, cli_overrides(), &err)) return cli_error("%s", err.msg);
        if (moe_load(B, pb, layer, cli_overrides(), &err)) {
            moe_free(A);
            return cli_error("%s", err.msg);
        }
    }
    // the derived allocations bounded from the shapes; the value ranges of what is
    // held (a streamed layer's routed experts are never all in memory to be scanned)
    if (ms_limits_check(A, B, NULL, MS_USE_WM | MS_USE_COST, &err)) rc = cli_error("%s", err.msg);
    if (rc) {
        moe_free(A);
        moe_free(B);
        moe_source_close(sa);
        moe_source_close(sb);
    } else {
        cli_note_router_defaults(A, B);
    }
    return rc;
}

typedef struct {
    const moe_config *c;
    const expert_source *sb;
    const align_result *res;
    float *mem;
    moe_expert x;
    int cur; /* the slot in x, -1: none */
} slot_reader;

static const moe_expert *aligned_slot(void *ctx, int e, ms_err *err) {
    slot_reader *r = ctx;
    if (r->cur == e) return &r->x;
    r->cur = -1;
    if (align_stream_slot(r->c, r->sb, r->res, e, &r->x, err)) return NULL;
    r->cur = e;
    return &r->x;
}

/* A note of the writer's (it names tensors of the file): escaped for the terminal. */
static void print_note(const char *out_path, const char *note) {
    char *e = ms_escaped(note);
    fprintf(stderr, "moescope: note: %s: %s\n", out_path, e);
    free(e);
}

int cli_save_aligned_stream(const moe_model *m, const expert_source *sb, const align_result *res,
                            const char *src_path, const char *out_path) {
    slot_reader r = {.c = &m->cfg, .sb = sb, .res = res, .cur = -1};
    r.mem = ms_malloc(moe_expert_size(&m->cfg) * sizeof(float));
    moe_expert_carve(&r.x, &m->cfg, r.mem);
    family_experts ex = {aligned_slot, &r};
    ms_err err;
    char *note = NULL;
    int rc = family_save_moved(m, &ex, res->order, res->shared_order, src_path, out_path, &note, &err);
    free(r.mem);
    if (rc) return cli_error("%s", err.msg);
    if (note) print_note(out_path, note);
    free(note);
    return 0;
}

/* A native layer into a directory-like -o: the directory holding the file under
 * its source's name (model.safetensors for a folder), as a family layer's is. */
static char *native_dir_target(const char *src, const char *out, ms_err *err) {
    struct stat sb;
    if (stat(out, &sb) && mkdir(out, 0777) && errno != EEXIST) {
        ms_fail(err, "%s: cannot create the directory: %s", out, strerror(errno));
        return NULL;
    }
    const char *base = strrchr(src, '/');
    base = base ? base + 1 : src;
    if (!stat(src, &sb) && S_ISDIR(sb.st_mode)) base = "model.safetensors";
    return ckpt_path_join(out, base);
}

int cli_save_checkpoint(const moe_model *m, const char *src_path, const char *out_path) {
    return cli_save_moved(m, NULL, NULL, src_path, out_path);
}

/* a mapped layer's slot e decoded (its views and mixes formed): family_experts' slot */
typedef struct {
    const moe_model *m;
    float *mem;
    moe_expert x;
} mapped_slots;

static const moe_expert *mapped_slot(void *ctx, int e, ms_err *err) {
    mapped_slots *r = ctx;
    (void)err;
    return moe_expert_floats(r->m, e, &r->x, r->mem);
}

int cli_save_moved(const moe_model *m, const int *order, const int *shared_order,
                   const char *src_path, const char *out_path) {
    ms_err err;
    int dropped = 0;
    if (src_path && strcmp(moe_family(&m->cfg), "native")) {
        // a real family: written back in its own names, dtypes and layout (a mapped
        // layer's routed experts decoded one slot at a time)
        char *note = NULL;
        mapped_slots r = {m, NULL, {0}};
        family_experts ex = {mapped_slot, &r};
        if (moe_is_mapped(m)) r.mem = ms_malloc(moe_expert_size(&m->cfg) * sizeof(float));
        int rc = family_save_moved(m, r.mem ? &ex : NULL, order, shared_order, src_path, out_path, &note, &err);
        free(r.mem);
        if (rc) return cli_error("%s", err.msg);
        if (note) print_note(out_path, note);
        free(note);
        return 0;
    }
    char *target = NULL;
    if (src_path && ckpt_output_is_dir(src_path, out_path) &&
        !(target = native_dir_target(src_path, out_path, &err)))
        return cli_error("%s", err.msg);
    int rc = moe_save_with(m, src_path, target ? target : out_path, &dropped, &err);
    free(target);
    if (rc) return cli_error("%s", err.msg);
    if (dropped)
        fprintf(stderr,
                "moescope: warning: %s: dropped %d tensor(s) under '%s.gate.', '%s.experts.' or "
                "'%s.shared.' that moescope does not read (they would not match the rewritten "
                "layer)\n",
                src_path, dropped, m->layer, m->layer, m->layer);
    return 0;
}

void cli_align_args_init(cli_align_args *a) {
    memset(a, 0, sizeof *a);
    align_opts_default(&a->ao);
}

const ls_partition *cli_partition;

int cli_reports_here(void) { return !cli_partition || cli_partition->rank == 0; }

int cli_points_option(const char *usage, const char *cmd, const char *arg, int *T) {
    long long v;
    int rc = cli_int_option(usage, cmd, "--points", arg, LS_POINTS_MIN, LS_POINTS_MAX, &v);
    if (!rc) *T = (int)v;
    return rc;
}

int cli_landscape_option(ls_opts *lo, int ch, const char *arg, const char *cmd, const char *usage) {
    long long v;
    int rc;
    switch (ch) {
    case 'E': lo->exhaustive_max = LS_EXHAUSTIVE_FORCED_MAX; return 0;
    case 'T': return cli_points_option(usage, cmd, arg, &lo->T);
    case 'S':
        // sampling draws distinct orders: far below n! (>= 3628800 for n >= 10)
        if ((rc = cli_int_option(usage, cmd, "--samples", arg, 1, 1000000, &v))) return rc;
        lo->nsample = (long)v;
        return 0;
    case 's':
    {
        unsigned long long seed;
        if (cli_parse_u64(arg, &seed))
            return cli_usage_error(usage, "%s: --seed needs an integer in 0..%llu, not '%s'", cmd,
                                   (unsigned long long)UINT64_MAX, arg);
        lo->seed = seed;
        return 0;
    }
    case 't':
        if ((rc = cli_int_option(usage, cmd, "--threads", arg, 1, 8, &v))) return rc;
        lo->nthreads = (int)v;
        return 0;
    case 'W': lo->wm = 0; return 0;
    case 'G': lo->all_orders = 1; return 0;
    default: return -1;
    }
}

int cli_screen_option(ls_screen_opts *so, int ch, const char *arg, const char *cmd, const char *usage) {
    long long v;
    int rc;
    if (ch != 'K' && ch != 'U') return -1;
    if ((rc = cli_int_option(usage, cmd, ch == 'K' ? "--screen" : "--screen-units", arg, ch == 'K' ? 1 : 2,
                             1 << 30, &v)))
        return rc;
    *(ch == 'K' ? &so->keep : &so->units) = (int)v;
    return 0;
}

/* --size and --font-scale, for every figure of the command */
static plot_size figure_size = {PLOT_W, PLOT_H, 0};

const plot_size *cli_figure_size(void) { return &figure_size; }

int cli_figure_option(int ch, const char *arg, const char *cmd, const char *usage) {
    long long k;
    int rc;
    switch (ch) {
    case 'Z':
        if (plot_parse_size(arg, &figure_size))
            return cli_usage_error(usage, "%s: --size must be WxH in pixels, 160x120 .. 16384x16384, not '%s'", cmd, arg);
        return 0;
    case 'F':
        if ((rc = cli_int_option(usage, cmd, "--font-scale", arg, 1, 4, &k))) return rc;
        figure_size.scale = (int)k;
        return 0;
    default: return -1;
    }
}

/* 1 when every flag of want (space-separated) is in /proc/cpuinfo's first flags line */
static int cpu_has(const char *want) {
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int found = 0;
    while (fp && !found && fgets(line, sizeof line, fp))
        if (!strncmp(line, "flags", 5)) found = 1;
    if (fp) fclose(fp);
    if (!found) return 0;
    line[strcspn(line, "\n")] = ' ';
    char w[64];
    for (const char *p = want; sscanf(p, "%63s", w) == 1; p = strstr(p, w) + strlen(w)) {
        char pad[80];
        snprintf(pad, sizeof pad, " %s ", w);
        if (!strstr(line, pad)) return 0;
    }
    return 1;
}

void cli_blas_prefer_cpu(char **argv) {
    const char *own = env_get(ENV_OPENBLAS_OWN), *set = env_get(ENV_OPENBLAS_CORETYPE);
    const char *core = openblas_get_corename();
    if ((own && strcmp(own, "0")) || set || !core || strcmp(core, "Prescott")) return;
    const char *k = cpu_has("avx512f avx512dq avx512cd avx512bw avx512vl") ? "SkylakeX"
                    : cpu_has("avx2 fma")                                  ? "Haswell"
                                                                           : NULL;
    if (!k) return; // an SSE3 CPU: Prescott is its kernel
    setenv("OPENBLAS_CORETYPE", k, 1);
    setenv("MOESCOPE_OPENBLAS_FALLBACK", core, 1); // --version says whose choice it was
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); // not run again: go on with OpenBLAS's choice
    unsetenv("MOESCOPE_OPENBLAS_FALLBACK");
    env_refresh();
}

static const char *program = "moescope";

void cli_set_program(const char *argv0) {
    if (argv0 && strchr(argv0, '/')) program = argv0;
}

const char *cli_program(void) { return program; }

static int stdout_was_closed;

void cli_stdio_guard(void) {
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            // open returns the lowest free descriptor: this one
            int got = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
            if (got != fd && got >= 0) close(got);
            if (fd == 1) stdout_was_closed = 1;
        }
}

int cli_stdout_done(int rc) {
    if (stdout_was_closed) {
        cli_error("stdout is closed: the output was lost");
        return rc ? rc : 1;
    }
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    bad |= ferror(stdout) != 0;
    if (!bad) return rc;
    cli_error("cannot write the output to stdout: %s", e ? strerror(e) : "a write failed");
    return rc ? rc : 1;
}

int cli_check_outputs(const char *cmd, const char *usage, const out_spec *outs, int nout,
                      const char *const *inputs, int nin) {
    ms_err err;
    int rc = outputs_check(outs, nout, inputs, nin, &err);
    if (rc == -2) return cli_usage_error(usage, "%s: %s", cmd, err.msg);
    return rc ? cli_error("%s", err.msg) : 0;
}

int cli_align_option(cli_align_args *a, int ch, const char *arg, const char *cmd,
                     const char *usage) {
    switch (ch) {
    case 'o': a->out_path = arg; return 0;
    case 'm':
        if (cost_method_parse(arg, &a->ao.method))
            return cli_usage_error(usage, "%s: --method must be %s, not '%s'", cmd, cost_method_choices(), arg);
        return 0;
    case 'C': a->ao.center = 0; return 0;
    case 'O': a->ao.order_stage = 0; return 0;
    case 'W': a->ao.wm_stage = 0; return 0;
    case 'r': a->order_str = arg; return 0;
    case 'l': a->layer = arg; return 0;
    default: return -1;
    }
}

int cli_layer_inputs(const char *pa, const char *e_path, const char *layer, const moe_model *A, evalset *E,
                     ms_err *err) {
    memset(E, 0, sizeof *E);
    if (!net_evalset_is(e_path)) {
        if (evalset_load(E, e_path, err)) return -1;
        if (!evalset_check_layer(E, A, err)) return 0;
        evalset_free(E);
        return -1;
    }
    // a network's tokens or images: the block's own inputs, network A run up to it
    subject S;
    subject_spec sp = {.kind = SUBJECT_NETWORK, .pa = pa, .e_path = e_path, .layer = layer,
                       .uses = MS_USE_EVAL, .ov = cli_overrides(), .mapped = 1}; // only evaluated
    if (subject_load(&S, &sp, err)) return -1;
    net_par par = {0};
    int rc = net_block_inputs(&S.net.A, &S.net.E, S.net.block, &par, E, err);
    subject_free(&S);
    return rc;
}

/* The evaluation set's inputs at the layer, when given, for the data-driven methods
 * (cli_layer_inputs: a network's set read at the block, only when the method reads it,
 * since that is a forward pass); one of them without it: a usage error */
static int align_match_set(cli_align_args *a, const char *cmd, const char *usage) {
    ms_err err;
    const cost_method_info *mi = &cost_methods[a->ao.method];
    if (a->e_path && (align_method_reads_set(a->ao.method) || !net_evalset_is(a->e_path))) {
        if (cli_layer_inputs(a->pa, a->e_path, a->layer, &a->A, &a->E, &err)) return cli_error("%s", err.msg);
        a->ao.X = a->E.inputs, a->ao.N = a->E.N, a->ao.d = a->E.d;
    }
    if (!a->ao.X && a->ao.order_stage && !a->ao.order && !a->order_str && mi->needs == COST_NEEDS_EVALSET)
        return cli_usage_error(usage, "%s: --method %s needs an evaluation set (--eval E): a layer's "
                               "inputs, or a network's tokens or images", cmd, cost_method_name(a->ao.method));
    return 0;
}

int cli_align_inputs(cli_align_args *a, int argc, char **argv, const char *cmd,
                     const char *usage) {
    if (argc - optind != 2)
        return cli_usage_error(usage, "%s: expected two checkpoints, got %d", cmd, argc - optind);
    if (!a->out_path) return cli_usage_error(usage, "%s: -o OUT is required", cmd);
    a->pa = argv[optind];
    a->pb = argv[optind + 1];
    const char *inputs[3] = {a->pa, a->pb, a->e_path};
    // align writes B re-expressed, merge A's layout: the output follows that checkpoint's
    const char *like = a->out_like_a ? a->pa : a->pb;
    const out_spec outs[1] = {{a->out_path, "-o", ckpt_output_is_dir(like, a->out_path) ? OUT_DIR : OUT_FILE}};
    int orc = cli_check_outputs(cmd, usage, outs, 1, inputs, a->e_path ? 3 : 2);
    if (orc) return orc;
    // a family layout's routed weights stay mapped in their dtype where they can, unless
    // align streams them (two layers too large to scan whole: each expert's pages released)
    int rc = cli_load_models_mapped(a->pa, a->pb, a->layer, &a->A, &a->B, &a->ma, &a->mb);
    if (!rc && a->stream_ok && stream_wanted(&a->A, &a->B)) {
        moe_free(&a->A);
        moe_free(&a->B);
        moe_map_close(a->ma);
        moe_map_close(a->mb);
        a->ma = a->mb = NULL;
        rc = 1;
    }
    if (rc)
        rc = a->stream_ok ? cli_load_models_stream(a->pa, a->pb, a->layer, &a->A, &a->B, &a->sa, &a->sb)
                          : cli_load_models(a->pa, a->pb, a->layer, &a->A, &a->B);
    if (rc) return rc;
    if ((rc = align_match_set(a, cmd, usage))) {
        cli_align_args_free(a);
        return rc;
    }
    if (a->order_str) {
        // checked against A's n, so only after loading
        int n = a->A.cfg.n;
        a->order = ms_malloc((size_t)n * sizeof(int));
        if (cli_parse_order(a->order_str, a->order, n)) {
            rc = cli_usage_error(usage, "%s: --order '%s' is not a permutation of 0..%d", cmd,
                                 a->order_str, n - 1);
            cli_align_args_free(a);
            return rc;
        }
        a->ao.order = a->order;
    }
    return 0;
}

void cli_align_args_free(cli_align_args *a) {
    free(a->order);
    a->order = NULL;
    a->ao.order = NULL;
    moe_free(&a->A);
    moe_free(&a->B);
    moe_source_close(&a->sa);
    moe_source_close(&a->sb);
    moe_map_close(a->ma);
    moe_map_close(a->mb);
    a->ma = a->mb = NULL;
    evalset_free(&a->E);
    a->ao.X = NULL;
}

int cli_every_layer_args(cli_align_args *a, int argc, char **argv, const char *cmd, const char *usage,
                         int like_b) {
    if (argc - optind != 2)
        return cli_usage_error(usage, "%s: expected two checkpoints, got %d", cmd, argc - optind);
    if (!a->out_path) return cli_usage_error(usage, "%s: -o OUT is required", cmd);
    if (a->order_str) return cli_usage_error(usage, "%s: --order names one layer's order, not --layer all's", cmd);
    a->pa = argv[optind];
    a->pb = argv[optind + 1];
    if (!a->e_path && a->ao.order_stage && cost_methods[a->ao.method].needs == COST_NEEDS_EVALSET)
        return cli_usage_error(usage, "%s: --method %s needs an evaluation set (--eval E)", cmd,
                               cost_method_name(a->ao.method));
    const char *inputs[3] = {a->pa, a->pb, a->e_path};
    const out_spec outs[1] = {
        {a->out_path, "-o", ckpt_output_is_dir(like_b ? a->pb : a->pa, a->out_path) ? OUT_DIR : OUT_FILE}};
    return cli_check_outputs(cmd, usage, outs, 1, inputs, a->e_path ? 3 : 2);
}

int cli_align_layer(const cli_align_args *a, const char *layer, const char *b_path, cli_layer_keep keep,
                    void *ctx) {
    moe_model A, B, Bp;
    ms_err err;
    ckpt *ma, *mb; // a family layout's routed weights mapped where they can be: B aligned as views
    int mapped = !cli_load_models_mapped(a->pa, b_path, layer, &A, &B, &ma, &mb);
    if (!mapped && moe_load(&A, a->pa, layer, cli_overrides(), &err)) return cli_error("%s", err.msg);
    if (!mapped && moe_load(&B, b_path, layer, cli_overrides(), &err)) {
        moe_free(&A);
        return cli_error("%s", err.msg);
    }
    memset(&Bp, 0, sizeof Bp);
    // a data-driven method reads this layer's own inputs (a network's: its block's)
    align_opts ao = a->ao;
    evalset E;
    memset(&E, 0, sizeof E);
    int reads = a->e_path && align_method_reads_set(ao.method);
    align_result res;
    int rc = moe_check_compatible(&A, &B, &err);
    if (!rc && reads) rc = cli_layer_inputs(a->pa, a->e_path, layer, &A, &E, &err);
    ao.X = E.inputs, ao.N = E.N, ao.d = E.d;
    if (!rc) rc = mapped ? align_models_mapped(&A, &B, &ao, &Bp, &res, &err) : align_models_inplace(&A, &B, &ao, &res, &err);
    if (rc) rc = cli_error("%s", err.msg);
    evalset_free(&E);
    if (!rc) {
        rc = keep(ctx, &A, mapped ? &Bp : &B, &res) ? 1 : 0;
        if (!rc) {
            char *el = ms_escaped(layer); // a prefix from the file
            printf("layer %s: ", el);
            free(el);
            cli_print_order(a, &res, A.cfg.n);
        }
        align_result_free(&res);
    }
    moe_free(&Bp); // (its views were of B's mapping: freed first)
    moe_free(&A);
    moe_free(&B);
    moe_map_close(mapped ? ma : NULL);
    moe_map_close(mapped ? mb : NULL);
    return rc;
}

void cli_print_order(const cli_align_args *a, const align_result *res, int n) {
    const align_opts *ao = &a->ao;
    char *os = moe_order_string(res->order, n);
    printf("order %s", os);
    free(os);
    if (a->order_str)
        printf("   (given)\n");
    else if (!ao->order_stage)
        printf("   (identity: expert-order step off)\n");
    else
        printf("   cost total %.6g (%s%s)\n", res->cost_total, cost_method_name(ao->method),
               cost_methods[ao->method].centres ? (ao->center ? ", centred" : ", not centred") : "");
}
