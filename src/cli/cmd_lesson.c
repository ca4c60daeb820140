/* cmd_lesson.c - `moescope lesson [A B --eval E]`: the guided walk of lesson.h.
 * On a terminal the explorer's lesson screen (ui/) shows it step by step; with
 * --print, or without a terminal, every step is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "analysis/lesson.h"

static const char *USAGE =
    "moescope lesson [A.safetensors B.safetensors [--eval E]] [--dir DIR] [--step N] [--print]";

static void help(void) {
    printf("usage: %s\n\n"
           "A guided walk through the symmetries of an MoE layer, one short step at a time,\n"
           "each with numbers computed live on A and B (two seeds of one layer):\n"
           "  1 two seeds are far apart          2 a scramble computes the same function\n"
           "  3 aligning recovers the scramble   4 why gate centring matters\n"
           "  5 skipping the expert order leaves the barrier high\n"
           "  6 top-1 routing has an extra symmetry\n"
           "  7 group-limited routers allow fewer orders\n"
           "Without A and B: the teacher4 samples (sample-checkpoints/teacher4).\n"
           "Keys: n / right / space next, b / left back, x open this step's pair in the\n"
           "explorer (quit it to come back), q quit.\n\n"
           "  --dir DIR  where the lesson writes the checkpoints it builds (scrambles, a\n"
           "             top-1 copy, grouped copies; default moescope-lesson in the working\n"
           "             directory). They are kept: each step's commands use them. A rerun\n"
           "             rewrites them; a file of a step's name the lesson did not write (DIR\n"
           "             lacks its .moescope-lesson mark) or that is an input is never replaced,\n"
           "             and DIR is never inside an input's folder.\n"
           "  --step N   start at step N (1..%d)\n"
           "  --print    print the steps instead of the interactive screen (also without a\n"
           "             terminal)\n",
           USAGE, LESSON_STEPS);
}

/* The samples, beside the working directory or beside the binary. */
static int find_samples(lesson_args *a) {
    static char buf[3][1200];
    char exe[1024];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    const char *roots[] = {".", exe};
    for (int r = 0; r < 2; r++) {
        snprintf(buf[0], sizeof buf[0], "%s/sample-checkpoints/teacher4/seed1.safetensors", roots[r]);
        snprintf(buf[1], sizeof buf[1], "%s/sample-checkpoints/teacher4/seed2.safetensors", roots[r]);
        snprintf(buf[2], sizeof buf[2], "%s/sample-checkpoints/teacher4/eval.safetensors", roots[r]);
        if (!access(buf[0], R_OK) && !access(buf[1], R_OK) && !access(buf[2], R_OK)) {
            a->a = buf[0], a->b = buf[1], a->e = buf[2];
            return 0;
        }
    }
    return cli_usage_error(USAGE, "lesson: give A B --eval E (the teacher4 samples are not "
                                  "beside the working directory or the binary)");
}

int lesson_parse_args(lesson_args *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->dir = LESSON_DIR_DEFAULT;
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) return help(), -1;
        if (!strcmp(s, "--print")) { a->print = 1; continue; }
        if (!strcmp(s, "--eval") || !strcmp(s, "-e") || !strcmp(s, "--step") || !strcmp(s, "--dir")) {
            if (i + 1 >= argc) return cli_usage_error(USAGE, "lesson: %s needs a value", s);
            const char *v = argv[++i];
            if (!strcmp(s, "--dir")) {
                a->dir = v;
            } else if (s[2] == 's') {
                long long n;
                int rc = cli_int_option(USAGE, "lesson", "--step", v, 1, LESSON_STEPS, &n);
                if (rc) return rc;
                a->start = (int)n - 1;
            } else {
                a->e = v;
            }
            continue;
        }
        if (s[0] == '-') return cli_usage_error(USAGE, "lesson: unknown option '%s'", s);
        if (npos == 2) return cli_usage_error(USAGE, "lesson: unexpected argument '%s'", s);
        pos[npos++] = s;
    }
    if (npos == 1) return cli_usage_error(USAGE, "lesson: give both A and B, or neither");
    if (npos == 0) return a->e ? cli_usage_error(USAGE, "lesson: --eval without A and B")
                               : find_samples(a);
    static char guess[4096]; /* the commands' rule: eval.safetensors beside A */
    if (!a->e) a->e = cli_eval_or_default(NULL, pos[0], guess, sizeof guess);
    if (!a->e)
        return cli_usage_error(USAGE, "lesson: --eval E is required with A and B (no eval.safetensors beside %s)",
                               pos[0]);
    a->a = pos[0], a->b = pos[1];
    return 0;
}

int lesson_print(const lesson_args *a) {
    ms_err err;
    lesson *L = lesson_open(a->a, a->b, a->e, cli_overrides(), a->dir, cli_program(), &err);
    if (!L) return cli_error("%s", err.msg);
    int rc = 0;
    printf("The lesson writes the checkpoints it builds to %s (kept: the commands below use them).\n\n",
           lesson_dir(L));
    lesson_step *s = ms_malloc(sizeof *s);
    for (int i = a->start; i < LESSON_STEPS; i++) {
        if (lesson_step_compute(L, i, s, &err)) {
            rc = cli_error("%s", err.msg);
            break;
        }
        printf("step %d/%d: %s\n\n%s\n  reproduce: %s\n\n", i + 1, LESSON_STEPS, s->title, s->text,
               s->cli);
    }
    free(s);
    lesson_close(L);
    return rc;
}
