/* provenance.h - how a report was made: the moescope version (git describe at
 * build time, else the release constant), the command line, each input file's
 * size and SHA-256, the thread count, the curve points, the date, and the
 * number of processes that computed it ("ranks": the MPI ranks of moescope-mpi,
 * 1 for the plain binary). Process-wide: main records the command line, the loaders record
 * their inputs, the commands record threads and points; every report then
 * embeds the same record (JSON object, PNG tEXt chunks, CSV "# " lines). */
#ifndef MS_PROVENANCE_H
#define MS_PROVENANCE_H

#include <cJSON.h>

#define MS_VERSION_FALLBACK "0.1.0"

/* git describe of the build, or MS_VERSION_FALLBACK; never empty */
const char *ms_version(void);

void prov_set_command(int argc, char **argv);
/* an input file (hashed when a report is first written; repeats ignored) */
void prov_add_input(const char *path);
/* threads: the resolved count (default 1); points: T (default 0: none) */
void prov_set_run(int threads, int points);
/* The reports from now on are dated now (SOURCE_DATE_EPOCH when set): the
 * date is the command's start, and the explorer's exports, made long after
 * it, each take their own moment. */
void prov_date_now(void);
/* processes (MPI ranks) computing the reports (default 1) */
void prov_set_ranks(int ranks);

/* The machine: the CPU ("model name (family F, model M)" from /proc/cpuinfo),
 * OpenBLAS's build ("OpenBLAS 0.3.21 ... DYNAMIC_ARCH ...") and the kernels it
 * chose for this CPU ("Haswell", "SkylakeX", "Prescott": OPENBLAS_CORETYPE sets
 * them). float32 results differ in their last bits between kernels. */
const char *prov_cpu(void);
const char *prov_blas(void);
const char *prov_blas_kernel(void);

/* {"version", "command", "inputs": [{"path", "bytes", "sha256"}], "threads",
 * "points", "date", "ranks", "cpu", "blas", "blas_kernel"}; an input that cannot be read gets null sha256.
 * A checkpoint folder or index input also lists the "files" its digest covers
 * (the digest of their sorted sha256sum lines, provenance.c): the index,
 * config.json and the shards that were opened (files_read.h). */
cJSON *prov_json(void);
/* The same as "key: value" lines, each prefixed by `prefix` (e.g. "# "),
 * malloc'd. */
char *prov_text(const char *prefix);
/* key/value pairs for PNG tEXt chunks; *n pairs, strings valid until
 * prov_reset. */
void prov_pairs(const char ***keys, const char ***values, int *n);
/* forget everything (tests; also frees the memory at exit) */
void prov_reset(void);

#endif
