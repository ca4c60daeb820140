/* cli.h - the subcommands of the moescope binary and small shared helpers.
 *
 * Each command lives in src/cmd_<name>.c as int cmd_<name>(int argc, char **argv)
 * with argv[0] the command name. Exit codes: 0 success, 1 failure (bad input,
 * I/O), 2 usage error (unknown option, missing argument). */
#ifndef MS_CLI_H
#define MS_CLI_H

#include <stdio.h>

#include "align/align.h"
#include "analysis/subject.h"
#include "io/evalset.h"
#include "io/family.h"
#include "io/outputs.h"
#include "landscape/landscape.h"
#include "landscape/landscape_screen.h"
#include "model/model.h"
#include "network/net_objective.h"
#include "plot/plot.h"

int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_align(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_curve(int argc, char **argv);
int cmd_landscape(int argc, char **argv);
int cmd_scramble(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_lap(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_geometry(int argc, char **argv);

/* Print "moescope CMD: msg" and the usage line to stderr; returns 2. */
int cli_usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* At start-up, before any BLAS call: OpenBLAS 0.3.21 (Debian 12's) does not know
 * newer CPUs (an Emerald Rapids Xeon, family 6 model 207) and falls back to its
 * SSE3 "Prescott" kernels, a third of the speed the CPU has. When the user chose
 * none (OPENBLAS_CORETYPE unset) and OpenBLAS fell back so on a CPU with AVX-512
 * (or AVX2 and FMA), the binary runs itself again with OPENBLAS_CORETYPE=SkylakeX
 * (Haswell): OpenBLAS picks its kernels once, as it is loaded.
 * MOESCOPE_OPENBLAS_OWN=1 keeps OpenBLAS's own choice. Returns when nothing is to
 * be done (or the exec failed). */
void cli_blas_prefer_cpu(char **argv);
/* At start-up: a closed stdin, stdout or stderr (`>&-`) gets /dev/null, so the
 * next file opened cannot become fd 1 and receive the printed text; a closed
 * stdout is then reported by cli_stdout_done. */
void cli_stdio_guard(void);
/* At the end of a command: stdout flushed; when anything printed there was lost
 * (a full disk, a closed descriptor: `info > /dev/full`) the message says so
 * and the exit code is 1 (else rc). */
int cli_stdout_done(int rc);
/* The binary as the user ran it, for commands printed to be run again:
 * "moescope" when it was found on PATH, else the path given ("./moescope").
 * main records argv[0]. */
void cli_set_program(const char *argv0);
const char *cli_program(void);
/* Print "moescope: msg" to stderr; returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* BLAS single-threaded for the whole process, its idle worker threads
 * stopped (they spin for a while after start-up): for commands whose own
 * workers are the parallel layer. */
void cli_blas_quiet(void);
/* The usage error for getopt_long's '?' or ':' result ch: names the argument as
 * typed (for "-dash.safetensors", the unknown '-d' in it, with a hint for file
 * names that start with '-'). Returns 2. */
int cli_option_error(const char *usage, const char *cmd, int ch, int argc, char **argv);
/* An integer option's value, the whole argument a decimal integer in lo..hi
 * (out of range is refused, never clamped or wrapped: --points 4294967299 is not
 * 3): 0 with *out set, else -1. cli_parse_u64: digits only, up to 2^64 - 1. */
int cli_parse_int(const char *s, long long lo, long long hi, long long *out);
int cli_parse_u64(const char *s, unsigned long long *out);
/* cli_parse_int, or 2 after the usage error "CMD: OPT needs an integer in
 * LO..HI, not 'ARG'". */
int cli_int_option(const char *usage, const char *cmd, const char *opt, const char *arg,
                   long long lo, long long hi, long long *out);
/* --points T of every command and the explorer, LS_POINTS_MIN..LS_POINTS_MAX
 * (landscape.h): 0 with *T set, else 2 after the usage error. */
int cli_points_option(const char *usage, const char *cmd, const char *arg, int *T);
/* Parse "2,0,3,1" or "2 0 3 1" into a permutation of 0..n-1; -1 if not one. */
int cli_parse_order(const char *s, int *order, int n);
/* Progress bar on stderr, only when stderr is a terminal; under moescope-mpi a
 * line at every tenth (rank 0: the rows of every rank). */
void cli_progress(const char *what, long done, long total);
/* Does this command show its progress at all: not -q (show 0), the process that
 * reports (rank 0 of moescope-mpi), and there the line on a terminal
 * (progress_enabled) or, under moescope-mpi, its lines (MOESCOPE_PROGRESS=0: none).
 * Every command with a -q decides with this one test. */
int cli_progress_wanted(int show);
void cli_progress_end(void);
/* a study's line: pair (done so far) of npairs, that pair's landscape rows */
void cli_progress_pairs(int pair, int npairs, long done, long total);
/* ls_opts' progress and phase for a landscape inside another command (ctx unused) */
void cli_progress_rows(void *ctx, long done, long total);
void cli_progress_step(void *ctx, const char *what, long done, long total);

/* Every output of command cmd checked before any work (io/outputs.h): 0, else
 * the message printed and the exit code (2 when two outputs name one file, a
 * usage error; else 1). */
int cli_check_outputs(const char *cmd, const char *usage, const out_spec *outs, int nout,
                      const char *const *inputs, int nin);
/* The one rule for a left-out evaluation set: eval.safetensors beside the
 * checkpoint A (in the folder that holds A's file, A's folder, or the folder of
 * A's index), returned in buf when it exists, else NULL. cli_eval_or_default:
 * e_path when given, else that default, said on stderr when used. */
const char *cli_default_eval(const char *a_path, char *buf, size_t cap);
const char *cli_eval_or_default(const char *e_path, const char *a_path, char *buf, size_t cap);
/* After a failed load: a hint on stderr when checkpoint a (or b, NULL for a
 * one-checkpoint command) is an evaluation set or a data set, with the
 * command line that swaps it with e_path when that looks like the checkpoint. */
void cli_hint_swapped(const char *cmd, const char *a, const char *b, const char *e_path);

/* Layer `layer` (NULL means "moe") of checkpoints A (pa) and B (pb), as
 * cli_subject_load loads a layer pair without an evaluation set. 0 on success;
 * on failure the message is printed, nothing is left to free and 1 returned. */
int cli_load_models(const char *pa, const char *pb, const char *layer, moe_model *A, moe_model *B);
/* A's and B's layers with their routed weights left mapped in their dtype, and their
 * shared expert (one, mapped in both: moe_load_mapped_shared; else in floats),
 * checked as cli_load_models checks them: 0 and the mappings in
 * *ma, *mb (moe_map_close after moe_free); 1 when they are not mapped so (moescope's
 * own files, a layout transposed in its file, MOESCOPE_STREAM set, any problem, which
 * cli_load_models then says): nothing loaded. */
/* One layer loaded as cli_load_models_mapped loads a pair (m, *map: moe_map_close after
 * moe_free); 1 when not mapped so (nothing loaded: moe_load then says what is wrong). */
int cli_load_mapped(const char *path, const char *layer, moe_model *m, ckpt **map);
int cli_load_models_mapped(const char *pa, const char *pb, const char *layer, moe_model *A, moe_model *B,
                           ckpt **ma, ckpt **mb);
/* The same for cost and align, without an evaluation set: a pair of layers
 * whose float32 copies would take more than a quarter of the machine's memory
 * (ms_mem_machine) is opened expert by expert (moe_load_stream: sa and sb read
 * the routed experts; a layer that cannot be streamed loads whole, its source
 * without read). MOESCOPE_STREAM=1 streams any family layout, =0 never. Close
 * the sources with moe_source_close. */
int cli_load_models_stream(const char *pa, const char *pb, const char *layer, moe_model *A,
                           moe_model *B, expert_source *sa, expert_source *sb);
/* cli_save_checkpoint for a model aligned by align_models_stream: its routed
 * experts are B's, read from sb, one slot at a time as the output is written. */
int cli_save_aligned_stream(const moe_model *m, const expert_source *sb, const align_result *res,
                            const char *src_path, const char *out_path);

/* Write m to out_path with every other tensor of src_path passed through
 * (moe_save_with): a warning on stderr for tensors of the layer's namespace that
 * were dropped; 0 on success, else the message printed and 1 returned. */
int cli_save_checkpoint(const moe_model *m, const char *src_path, const char *out_path);
/* The same for experts moved by a permutation (slot i holds src_path's expert
 * order[i]; shared_order for the shared experts; NULL: unmoved): a family's
 * tensors keep the dtype of the expert whose values they hold (family_save_moved). */
int cli_save_moved(const moe_model *m, const int *order, const int *shared_order,
                   const char *src_path, const char *out_path);

/* One getopt result of the landscape options landscape and study share: 'T'
 * --points, 'S' --samples, 's' --seed, 't' --threads, 'W' --no-wm, 'E' --exhaustive (cmd names
 * the command in messages). 0 if handled, 2 after a usage error, -1 if ch is
 * none of these. */
int cli_landscape_option(ls_opts *lo, int ch, const char *arg, const char *cmd, const char *usage);

/* The figure options: 'Z' --size WxH (pixels) and 'F' --font-scale 1..4
 * (text and strokes), for every PNG or SVG the command writes
 * (cli_figure_size). 0 if handled, 2 after a usage error, -1 otherwise. */
#define CLI_FIGURE_OPTIONS {"size", required_argument, 0, 'Z'}, {"font-scale", required_argument, 0, 'F'}
/* The landscape's options (cli_landscape_option takes their letters), for every
 * command that computes landscapes, and a network's two. */
#define CLI_LANDSCAPE_OPTIONS                                                                                \
    {"points", required_argument, 0, 'T'}, {"no-wm", no_argument, 0, 'W'},                                   \
        {"samples", required_argument, 0, 'S'}, {"exhaustive", no_argument, 0, 'E'},                         \
        {"seed", required_argument, 0, 's'}, {"threads", required_argument, 0, 't'}
/* screening (landscape_screen.h): 'K' --screen K, 'U' --screen-units M */
#define CLI_SCREEN_OPTIONS {"screen", required_argument, 0, 'K'}, {"screen-units", required_argument, 0, 'U'}
int cli_screen_option(ls_screen_opts *so, int ch, const char *arg, const char *cmd, const char *usage);
#define CLI_NETWORK_OPTIONS {"interpolate-backbone", no_argument, 0, 'I'}, {"no-proxy", no_argument, 0, 'N'}
#define CLI_FIGURE_HELP                                                                                     \
    "      --size WxH    figure size in pixels (default 960x600); a figure name ending\n"                   \
    "                    in .svg writes SVG (vector) instead of PNG\n"                                        \
    "      --font-scale K  text and line scale 1..4, as far as the size holds it\n"                     \
    "                      (about 480 pixels a step; default: 2 from 1600 pixels wide)\n"
int cli_figure_option(int ch, const char *arg, const char *cmd, const char *usage);
/* What they set (default 960 x 600, scale 0: auto), for plot_spec_init and the
 * figures' writers. */
const plot_size *cli_figure_size(void);

/* Set by moescope-mpi before a command runs: the landscapes of `landscape` and `study`
 * are split over its processes, and only rank 0 prints and writes reports. NULL in the
 * plain binary. */
extern const ls_partition *cli_partition;
/* this process prints and writes the reports (not one of moescope-mpi's ranks > 0) */
int cli_reports_here(void);

/* ---- align and merge: the options and inputs they share ---- */
typedef struct {
    const char *out_path, *layer, *order_str; /* -o, --layer, --order; NULL if absent */
    align_opts ao;      /* --method, --no-center, --no-order, --no-wm */
    const char *pa, *pb; /* the two checkpoints */
    moe_model A, B;
    int *order;         /* --order parsed (n), NULL without it; ao.order points here */
    int stream_ok;      /* set before cli_align_inputs: A and B may be streamed (align) */
    int out_like_a;     /* set before cli_align_inputs: -o is written in A's layout (merge), else B's */
    const char *e_path; /* set before cli_align_inputs: an evaluation set -o must not touch;
                           a layer's is loaded (E) for the data-driven methods (ao.X) */
    expert_source sa, sb; /* their routed experts when streamed (cli_load_models_stream) */
    ckpt *ma, *mb;      /* their routed weights' mappings (cli_load_models_mapped), NULL: not mapped */
    evalset E;
} cli_align_args;

/* Nothing given: align_opts_default, no paths. */
void cli_align_args_init(cli_align_args *a);
/* One getopt result: 'o' output, 'm' method, 'C' no-center, 'O' no-order,
 * 'W' no-wm, 'r' order, 'l' layer (cmd names the command in messages).
 * 0 if handled, 2 after a usage error, -1 if ch is none of these. */
int cli_align_option(cli_align_args *a, int ch, const char *arg, const char *cmd,
                     const char *usage);
/* After the options: exactly two checkpoints argv[optind..] and -o OUT, OUT
 * naming neither, A and B loaded, --order checked against A's n. 0 on
 * success (free with cli_align_args_free); otherwise the exit code (1 or 2)
 * after the message, with nothing left to free. */
int cli_align_inputs(cli_align_args *a, int argc, char **argv, const char *cmd,
                     const char *usage);
void cli_align_args_free(cli_align_args *a);
/* Print "order 2 0 3 1   cost total ... (method[, centred])" (or why the order
 * was not solved) for an alignment made with a's options. */
void cli_print_order(const cli_align_args *a, const align_result *res, int n);
/* --layer all, one step: A's layer `layer` and B's (read from b_path) loaded and
 * checked, B aligned to A with a's options, keep(ctx, &A, &B, &res) writes the
 * step's output, then "layer L: order ..." is printed. 0, or 1 after the message. */
/* --layer all's arguments: exactly two checkpoints (a->pa, a->pb set), -o OUT, no
 * --order; OUT a folder when `like` (A or B) is one, naming neither input. 0, or the
 * exit code after the message. */
int cli_every_layer_args(cli_align_args *a, int argc, char **argv, const char *cmd, const char *usage,
                         int like_b);
typedef int (*cli_layer_keep)(void *ctx, moe_model *A, moe_model *B, const align_result *res);
int cli_align_layer(const cli_align_args *a, const char *layer, const char *b_path, cli_layer_keep keep,
                    void *ctx);

/* ---- what a command works on: a layer pair or a network pair (analysis/subject.h) ---- */
/* subject_load with the command line's overrides (--family, ..., --ignore-capture-layer):
 * 0; else the exit code after the message ("CMD: ..." and the usage line for a usage
 * error, 2; 1 otherwise, with a hint when a layer's checkpoint is an evaluation set).
 * A note on stderr says when the networks' backbones differ and are interpolated. */
int cli_subject_load(subject *s, subject_spec *sp, const char *cmd, const char *usage);
/* The inputs of A's layer from the evaluation set e_path, for the data-driven
 * methods: a layer's set ('inputs', checked against A), or a network's (token ids,
 * images) run through network pa up to the MoE block `layer` names (NULL: the
 * first), whose own inputs under A they are, as the landscape reads them. 0, or
 * -1 with err set and E empty. */
int cli_layer_inputs(const char *pa, const char *e_path, const char *layer, const moe_model *A, evalset *E,
                     ms_err *err);
/* The warning for a layer read without routing metadata (moe_router_defaulted):
 * evaluated as dense, and how to say top-k; once for a file given twice. */
void cli_note_router_defaults(const moe_model *a, const moe_model *b);
/* A network's objective for its chosen block, the other blocks aligned by other;
 * *out NULL for a layer. 0, or 1 after the message. */
int cli_subject_objective(subject *s, const align_opts *other, int threads, atomic_int *cancel,
                          net_objective **out);
/* the same on another evaluation set of s's networks (borrowed, as subject_net_objective_on) */
int cli_subject_objective_on(subject *s, const net_evalset *E, const align_opts *other, int threads,
                             atomic_int *cancel, net_objective **out);
/* lo's orders for a network: exhaustive up to LS_OBJ_EXHAUSTIVE_MAX experts unless
 * --exhaustive was given, LS_OBJ_SAMPLES sampled orders unless --samples was (so
 * --samples N alone samples N orders of n = 7..9 instead of enumerating all n!) */
enum { CLI_GIVEN_SAMPLES = 1, CLI_GIVEN_EXHAUSTIVE = 2 };
void cli_net_landscape_defaults(ls_opts *lo, int given);
/* the CLI_GIVEN_* bit of a landscape option (0 for any other) */
int cli_orders_given(int ch);

/* ---- `--layer all`: every MoE layer, each on its own (align, scramble) ---- */
int cli_layer_is_all(const char *layer);
/* step(ctx, i, layer, src, dst): write dst from src with MoE layer i (its prefix
 * layer) rewritten; 0, or the exit code after its message */
typedef int (*cli_layer_step)(void *ctx, int i, const char *layer, const char *src, const char *dst);
/* Every MoE layer of checkpoint layers_of in turn: the first written from src0,
 * each next from the one before (folders beside out, removed after), the last
 * into out. */
int cli_each_layer(const char *layers_of, const char *src0, const char *out, cli_layer_step step, void *ctx);

/* `moescope lesson`: its arguments (the samples when A and B are not given),
 * and the steps printed (--print, or no terminal). The interactive screen is
 * ui/lesson_screen.c's. lesson_parse_args returns 0, -1 after --help, or the
 * exit code of a usage error. */
typedef struct {
    const char *a, *b, *e;
    const char *dir;  /* --dir: where the lesson's files go (default moescope-lesson), kept */
    int start, print;
} lesson_args;
int lesson_parse_args(lesson_args *a, int argc, char **argv);
int lesson_print(const lesson_args *a);

/* Take --family, --top-k, --norm-topk-prob, --routed-scaling, --n-group,
 * --topk-group and --ignore-capture-layer out of argv (they apply to every
 * command that loads a checkpoint). 0, or 2 after printing a usage error. */
int cli_take_family_options(int *argc, char **argv);
/* What they set, for every load the commands and the explorer make (moe_load,
 * family_load, ...): nothing overridden until cli_take_family_options ran. */
const family_overrides *cli_overrides(void);
/* --ignore-capture-layer was given: an evaluation set captured at another layer
 * is evaluated anyway */
int cli_ignore_capture(void);
/* evalset_check_layer unless --ignore-capture-layer: 0, or 1 after the message. */
int cli_check_capture(const evalset *E, const moe_model *m);

/* What every binary does first: no argument (usage on stderr, 2), --help / -h /
 * help (usage on stdout, 0), --version ("prog VERSION", 0), then the family
 * options taken out of argv (2 on a bad one). -1: go on with argv[1]. */
int cli_front(int *argc, char **argv, const char *prog, void (*usage)(FILE *fp));
/* "simd: FORM (...)": the vector form moescope's own kernels run (core/simd.h), why,
 * and the widest the CPU runs; --version's last line */
void cli_print_simd(FILE *fp);

#endif
