/* mem_budget.h - the memory limit every large allocation is checked against.
 *
 * The limit is the machine's physical memory or the container's cgroup memory.max,
 * whichever is lower, lowered further by MOESCOPE_MAX_MEMORY: a positive number of
 * bytes with an optional suffix K, M, G or T (also KB/KiB, ...; all powers of 1024),
 * anything else refused at the start with exit 2. */
#ifndef MEM_BUDGET_H
#define MEM_BUDGET_H

#include <stddef.h>

#include "core/ms_error.h"

/* The machine's limit in bytes. */
double ms_mem_machine(void);

/* MOESCOPE_MAX_MEMORY parsed strictly into *bytes (0 when unset); -1 with a message
 * for anything but a positive number with an optional suffix. */
int ms_mem_env(double *bytes, ms_err *err);

/* 0 when `bytes` fit the limit; else -1 with "WHAT: needs X, over the memory limit of Y". */
int ms_mem_fits(double bytes, const char *what, ms_err *err);

/* "8.0 GiB" into buf. */
const char *ms_bytes_str(char *buf, size_t cap, double bytes);

#endif
