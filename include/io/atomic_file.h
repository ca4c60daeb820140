/* atomic_file.h - write outputs so a reader never sees half a file.
 *
 * af_open creates a temporary file in the destination's directory; af_commit
 * flushes, fsyncs and renames it over the destination; af_abort removes it.
 * An existing file is therefore either left as it was or fully replaced. */
#ifndef MS_ATOMIC_FILE_H
#define MS_ATOMIC_FILE_H

#include <stdio.h>

#include "core/ms_error.h"

typedef struct {
    FILE *fp;
    char *path;     /* destination */
    char *tmppath;  /* temporary file beside it */
    void *priv;     /* the stream's state (fd, first write error), owned by atomic_file.c */
} atomic_file;

int af_open(atomic_file *af, const char *path, ms_err *err);
/* The mkstemp / mkdtemp template of a temporary beside path: "DIR/.BASE.tmpXXXXXX"
 * (hidden, a file's) or "DIR/BASE.tmp-XXXXXX" (a directory's), BASE cut to its first
 * 200 bytes so that any legal name (up to 255 bytes) gets a legal temporary.
 * Malloc'd. */
char *af_temp_template(const char *path, int hidden);
/* Returns -1 (and removes the temporary) if any write failed, e.g. disk full. */
int af_commit(atomic_file *af, ms_err *err);
void af_abort(atomic_file *af);

/* Refuse two outputs that would land in one file: -1 with a message if any two
 * of outs[0..n) (NULL entries skipped) are the same existing file (same device
 * and inode, so also through a symlink or a hard link) or the same directory
 * entry (realpath of the directory + base name: "x", "./x", "d/../x"). labels
 * (e.g. "--json", may be NULL) name the options in the message. */
int af_check_distinct(const char *const *outs, const char *const *labels, int n, ms_err *err);

/* "DIR/x.ext" when no file has that name, else the first free "DIR/x.2.ext",
 * "DIR/x.3.ext", ... into out: for outputs that must never replace a file.
 * 0, or -1 when none of the first 999 is free. */
int af_free_name(const char *want, char *out, size_t cap);

/* "a block device", "a socket", "a FIFO", ...: a node's kind for messages */
const char *af_node_kind(unsigned mode);

/* 1 when writing path goes straight into an existing node, without a temporary
 * or a rename: a character device or FIFO (/dev/null, a pipe), or one of the
 * process's own descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N). */
int af_writes_in_place(const char *path);

/* Where writing path lands: "<realpath of its directory>/<base name>" (the
 * directory entry af_commit renames onto), or a copy of path when the
 * directory cannot be resolved. Trailing slashes are ignored. The caller frees it. */
char *af_destination(const char *path);

/* Convenience: write a whole buffer atomically. */
int af_write_all(const char *path, const void *buf, size_t len, ms_err *err);

#endif
