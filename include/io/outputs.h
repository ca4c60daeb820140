/* outputs.h - every output path of a command, checked before the computation.
 *
 * A long run (a landscape of 40320 orders, a 21-minute real-size layer) must not
 * end in "cannot write": each command lists its outputs and its inputs and
 * calls outputs_check once, before loading anything heavy. An output passes when
 *   - its directory exists, is a directory, and this process may create files
 *     in it (an existing character device or FIFO, /dev/null or a pipe, is
 *     written in place and needs none of that);
 *   - it is not a directory where a file is meant (OUT_FILE), nor a file or a
 *     non-empty directory where a checkpoint directory is meant (OUT_DIR);
 *   - it is no input: not the same file (device and inode, so also through a
 *     symlink or a hard link) as an input, nor as any file inside a checkpoint
 *     folder given as input (the shards, the index, config.json, anything
 *     there), and not inside such a folder at all - a directory argument, or
 *     the folder of an index or of a single file's config.json - since a new
 *     file there changes what the folder loads as;
 *   - no two outputs name the same file (af_check_distinct).
 * Messages name the output by its option ("--json out.json: ..."). */
#ifndef MS_OUTPUTS_H
#define MS_OUTPUTS_H

#include "core/ms_error.h"

typedef enum {
    OUT_FILE, /* a report, a figure, a single-file checkpoint */
    OUT_DIR,  /* a checkpoint directory (a sharded checkpoint): absent or empty */
} out_kind;

typedef struct {
    const char *path;  /* NULL: not asked for (skipped) */
    const char *label; /* the option, e.g. "--json", "-o" */
    out_kind kind;
} out_spec;

/* 0 when every output may be written, else -1 with the first problem in err,
 * -2 when only two outputs name one file (a usage error). inputs: checkpoint
 * arguments (file, index or directory) and other input files. */
int outputs_check(const out_spec *outs, int nout, const char *const *inputs, int nin, ms_err *err);

/* The same for one output. */
int outputs_check_one(const char *path, const char *label, out_kind kind, const char *const *inputs,
                      int nin, ms_err *err);

/* Only the check against the inputs (no input by any name, nor inside an input's
 * folder), for an output whose directory is made later or that replaces a
 * folder it wrote before (the lesson's files). */
int outputs_check_not_input(const char *path, const char *label, const char *const *inputs, int nin, ms_err *err);

/* A directory that outputs will go into (the explorer's export directory, made
 * when missing, parents too): 0 unless it is or lies inside a checkpoint folder
 * given as input; checked before anything is made. label names it in the message (NULL: the path alone). */
int outputs_check_dir(const char *dir, const char *label, const char *const *inputs, int nin, ms_err *err);

#endif
