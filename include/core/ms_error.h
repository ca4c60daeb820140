/* ms_error.h - error reporting for moescope (and, for every user of both,
 * checked allocation: core/ms_alloc.h).
 *
 * Library functions return 0 on success and -1 on failure, filling an ms_err
 * with a message meant for the user ("file.safetensors: tensor 'moe.gate.weight':
 * shape [4, 8] needs 128 bytes, has 64"). The caller must check the return.
 * Allocation failure is not recoverable: ms_malloc reports file:line and
 * exits (ms_alloc.h). */
#ifndef MS_ERROR_H
#define MS_ERROR_H

#include <stddef.h>

#include "core/ms_alloc.h"

typedef struct {
    char msg[1024];
} ms_err;

/* Set e->msg from a printf format (e may be NULL) and return -1. */
int ms_fail(ms_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix an existing message: "prefix: old message". Returns -1. */
int ms_prefix(ms_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
