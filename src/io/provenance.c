/* provenance.c - the process-wide record of how reports are made (see
 * provenance.h). Inputs are hashed once, the first time a report needs them. */
#include "io/provenance.h"

#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/env.h"
#include "io/checkpoint.h"
#include "io/files_read.h"
#include "core/ms_error.h"
#include "core/progress.h"
#include "io/sha256.h"

#define PROV_MAX_INPUTS 64

typedef struct {
    char *path;
    int hashed, ok;
    long long bytes;
    char hex[65];
    int nfiles;   /* a checkpoint folder (or index): the files its digest covers */
    char **files; /* (nfiles) their names beside the index, sorted */
} prov_input;

static struct {
    pthread_mutex_t mu;
    char *command;
    char date[32];
    prov_input in[PROV_MAX_INPUTS];
    int nin;
    int threads, points, ranks;
    /* prov_pairs storage */
    char *pv[8];
    const char *pk[8];
    int registered;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .threads = 1, .ranks = 1};

const char *ms_version(void) {
#ifdef MS_GIT_VERSION
    if (MS_GIT_VERSION[0]) return MS_GIT_VERSION;
#endif
    return MS_VERSION_FALLBACK;
}

/* The CPU ("model name" of /proc/cpuinfo, with its family and model numbers,
 * which say more than a virtual machine's name) and the BLAS with the kernels
 * it runs: a float32 result differs in its last bits between kernels (AVX2 vs
 * AVX-512, and OpenBLAS falls back to SSE3 ones on a CPU it does not know). */
static struct {
    pthread_once_t once;
    char cpu[160], blas[200], kernel[40];
} M = {.once = PTHREAD_ONCE_INIT};

static void machine_read(void) {
    char name[96] = "", fam[16] = "", model[16] = "", line[512];
    FILE *fp = fopen("/proc/cpuinfo", "r");
    while (fp && fgets(line, sizeof line, fp) && !(name[0] && fam[0] && model[0])) {
        char *colon = strchr(line, ':'), *v = colon ? colon + 1 : NULL;
        if (!v) continue;
        v += strspn(v, " \t");
        v[strcspn(v, "\n")] = 0;
        if (!name[0] && !strncmp(line, "model name", 10)) snprintf(name, sizeof name, "%s", v);
        else if (!fam[0] && !strncmp(line, "cpu family", 10)) snprintf(fam, sizeof fam, "%s", v);
        else if (!model[0] && !strncmp(line, "model\t", 6)) snprintf(model, sizeof model, "%s", v);
    }
    if (fp) fclose(fp);
    if (!name[0]) snprintf(M.cpu, sizeof M.cpu, "unknown");
    else if (fam[0] && model[0]) snprintf(M.cpu, sizeof M.cpu, "%s (family %s, model %s)", name, fam, model);
    else snprintf(M.cpu, sizeof M.cpu, "%s", name);
    const char *core = openblas_get_corename(), *cfg = openblas_get_config();
    snprintf(M.kernel, sizeof M.kernel, "%s", core ? core : "unknown");
    snprintf(M.blas, sizeof M.blas, "%s", cfg ? cfg : "OpenBLAS");
    for (char *c = M.cpu; *c; c++) // one printable line, whatever /proc says
        if ((unsigned char)*c < 32 || *c == 127) *c = '?';
}

const char *prov_cpu(void) {
    pthread_once(&M.once, machine_read);
    return M.cpu;
}

const char *prov_blas(void) {
    pthread_once(&M.once, machine_read);
    return M.blas;
}

const char *prov_blas_kernel(void) {
    pthread_once(&M.once, machine_read);
    return M.kernel;
}

static void prov_atexit(void) { prov_reset(); }

static void register_exit(void) {
    if (!P.registered) {
        P.registered = 1;
        atexit(prov_atexit);
    }
}

/* the date: SOURCE_DATE_EPOCH when set (reproducible reports), else now */
static void set_date(void) {
    const char *sde = env_get(ENV_SOURCE_DATE_EPOCH);
    time_t t = sde ? (time_t)strtoll(sde, NULL, 10) : time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(P.date, sizeof P.date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* an argument as a shell would need it: bare when safe, else single-quoted */
static void append_arg(char **s, size_t *len, size_t *cap, const char *a) {
    int safe = *a != '\0';
    for (const char *p = a; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p))
            safe = 0;
    size_t need = *len + 4 * strlen(a) + 4;
    if (need > *cap) {
        *cap = need * 2;
        *s = ms_realloc(*s, *cap);
    }
    char *o = *s + *len;
    if (*len) *o++ = ' ';
    if (safe) o += sprintf(o, "%s", a);
    else {
        *o++ = '\'';
        for (const char *p = a; *p; p++) {
            if (*p == '\'') o += sprintf(o, "'\\''");
            else *o++ = (unsigned char)*p < 32 ? '?' : *p; // one line, always
        }
        *o++ = '\'';
    }
    *o = '\0';
    *len = (size_t)(o - *s);
}

void prov_date_now(void) {
    pthread_mutex_lock(&P.mu);
    set_date();
    pthread_mutex_unlock(&P.mu);
}

void prov_set_command(int argc, char **argv) {
    pthread_mutex_lock(&P.mu);
    register_exit();
    free(P.command);
    P.command = NULL;
    size_t len = 0, cap = 0;
    for (int i = 0; i < argc; i++) append_arg(&P.command, &len, &cap, argv[i]);
    set_date();
    pthread_mutex_unlock(&P.mu);
}

void prov_add_input(const char *path) {
    if (!path) return;
    pthread_mutex_lock(&P.mu);
    register_exit();
    int seen = 0;
    for (int i = 0; i < P.nin; i++) seen |= !strcmp(P.in[i].path, path);
    if (!seen && P.nin < PROV_MAX_INPUTS) {
        memset(&P.in[P.nin], 0, sizeof P.in[0]);
        P.in[P.nin++].path = ms_strdup(path);
    }
    pthread_mutex_unlock(&P.mu);
}

void prov_set_run(int threads, int points) {
    pthread_mutex_lock(&P.mu);
    P.threads = threads;
    P.points = points;
    pthread_mutex_unlock(&P.mu);
}

void prov_set_ranks(int ranks) {
    pthread_mutex_lock(&P.mu);
    P.ranks = ranks;
    pthread_mutex_unlock(&P.mu);
}

typedef struct {
    const char *name;
    char hex[65];
} file_sum;

static int cmp_file_sum(const void *a, const void *b) {
    return strcmp(((const file_sum *)a)->name, ((const file_sum *)b)->name);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The files of an opened folder checkpoint that its digest covers, by name (*n of
 * them): the index, config.json and the shards moescope opened - those holding
 * the layer (a shard never opened is not read to hash it either: a folder may
 * name shards that are FIFOs or links to /dev/zero, or hold 90 GB of other
 * layers). */
static file_sum *folder_files(const ckpt *c, int *n) {
    file_sum *fs = ms_calloc((size_t)c->nshards + 2, sizeof(file_sum));
    int nids;
    file_id *ids = files_read_sorted(&nids);
    *n = 0;
    for (int s = 0; s < c->nshards; s++)
        if (files_read_in(ids, nids, c->shard_paths[s])) fs[(*n)++].name = base_name(c->shard_names[s]);
    free(ids);
    if (c->index_path) fs[(*n)++].name = base_name(c->index_path);
    if (c->config_path) fs[(*n)++].name = base_name(c->config_path);
    qsort(fs, (size_t)*n, sizeof *fs, cmp_file_sum);
    return fs;
}

/* the progress line's count, in MiB */
static void hashed_bytes(size_t got) { progress_add((double)got / 1048576.0); }

/* A checkpoint folder (or its index) is many files, so its digest is that of
 * their "sha256sum" lines: for each file moescope read - the shards it opened
 * (those holding the layer), the index and config.json (a folder holding one
 * model.safetensors: it and config.json) - "<hex sha256>  <name>\n", the
 * lines in byte order of the names. It is what
 *   cd DIR && sha256sum FILES... | LC_ALL=C sort -k 2 | sha256sum
 * prints; bytes is the files' total size. -1 when any file cannot be read. */
static int hash_folder(prov_input *x) {
    ckpt c;
    if (ckpt_open(&c, x->path, NULL)) return -1;
    int n, rc = 0;
    file_sum *fs = folder_files(&c, &n);
    sha256_ctx all;
    sha256_init(&all);
    x->bytes = 0;
    for (int i = 0; i < n && !rc; i++) {
        char *path = ckpt_path_join(c.dir, fs[i].name);
        uint8_t d[32];
        long long sz = 0;
        rc = sha256_file_progress(path, d, &sz, hashed_bytes, NULL);
        free(path);
        if (rc) break;
        sha256_hex(d, fs[i].hex);
        x->bytes += sz;
        sha256_update(&all, fs[i].hex, 64);
        sha256_update(&all, "  ", 2);
        sha256_update(&all, fs[i].name, strlen(fs[i].name));
        sha256_update(&all, "\n", 1);
    }
    if (!rc) {
        uint8_t d[32];
        sha256_final(&all, d);
        sha256_hex(d, x->hex);
        x->files = ms_calloc((size_t)n, sizeof(char *));
        for (int i = 0; i < n; i++) x->files[i] = ms_strdup(fs[i].name);
        x->nfiles = n;
    }
    free(fs);
    ckpt_close(&c);
    return rc;
}

/* a checkpoint that is more than one file: a directory or a sharded index */
static int is_folder(const char *path) {
    struct stat sb;
    size_t len = strlen(path);
    if (stat(path, &sb)) return 0;
    return S_ISDIR(sb.st_mode) || (len > 5 && !strcmp(path + len - 5, ".json"));
}

/* bytes hash_inputs will read for x (0 when it cannot tell) */
static double input_bytes(const prov_input *x) {
    struct stat sb;
    if (!is_folder(x->path)) return stat(x->path, &sb) ? 0.0 : (double)sb.st_size;
    ckpt c;
    if (ckpt_open(&c, x->path, NULL)) return 0.0;
    int n;
    double total = 0.0;
    file_sum *fs = folder_files(&c, &n);
    for (int i = 0; i < n; i++) {
        char *path = ckpt_path_join(c.dir, fs[i].name);
        if (!stat(path, &sb)) total += (double)sb.st_size;
        free(path);
    }
    free(fs);
    ckpt_close(&c);
    return total;
}

/* A real checkpoint folder is gigabytes (a Mixtral-8x7B folder ~90 GB, a minute at
 * 1.7 GB/s): a progress phase of its own, which MOESCOPE_TIMING also reports. */
static void hash_inputs(void) {
    double total = 0.0;
    for (int i = 0; i < P.nin; i++)
        if (!P.in[i].hashed) total += input_bytes(&P.in[i]);
    if (total > 0.0) progress_begin("hash inputs", total / 1048576.0, "MiB");
    for (int i = 0; i < P.nin; i++) {
        prov_input *x = &P.in[i];
        if (x->hashed) continue;
        uint8_t d[32];
        x->hashed = 1;
        if (is_folder(x->path)) {
            x->ok = hash_folder(x) == 0;
            continue;
        }
        x->ok = sha256_file_progress(x->path, d, &x->bytes, hashed_bytes, NULL) == 0;
        if (x->ok) sha256_hex(d, x->hex);
    }
    if (total > 0.0) progress_end();
    if (!P.date[0]) set_date();
}

cJSON *prov_json(void) {
    pthread_mutex_lock(&P.mu);
    hash_inputs();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", ms_version());
    cJSON_AddStringToObject(o, "command", P.command ? P.command : "");
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (int i = 0; i < P.nin; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "path", P.in[i].path);
        if (P.in[i].ok) {
            cJSON_AddNumberToObject(e, "bytes", (double)P.in[i].bytes);
            cJSON_AddStringToObject(e, "sha256", P.in[i].hex);
            if (P.in[i].nfiles) {
                cJSON *fl = cJSON_AddArrayToObject(e, "files");
                for (int k = 0; k < P.in[i].nfiles; k++)
                    cJSON_AddItemToArray(fl, cJSON_CreateString(P.in[i].files[k]));
            }
        } else {
            cJSON_AddNullToObject(e, "bytes");
            cJSON_AddNullToObject(e, "sha256");
        }
        cJSON_AddItemToArray(in, e);
    }
    cJSON_AddNumberToObject(o, "threads", P.threads);
    cJSON_AddNumberToObject(o, "points", P.points);
    cJSON_AddStringToObject(o, "date", P.date);
    cJSON_AddNumberToObject(o, "ranks", P.ranks);
    cJSON_AddStringToObject(o, "cpu", prov_cpu());
    cJSON_AddStringToObject(o, "blas", prov_blas());
    cJSON_AddStringToObject(o, "blas_kernel", prov_blas_kernel());
    pthread_mutex_unlock(&P.mu);
    return o;
}

/* a path on one line of a "# " comment or a tEXt chunk: control characters
 * (a newline or ESC in a file name) shown as '?', as in the command line */
static void put_path(FILE *f, const char *p) {
    for (; *p; p++) fputc((unsigned char)*p < 32 || *p == 127 ? '?' : *p, f);
}

/* the inputs as "sha256 bytes path" lines joined by sep (malloc'd) */
static char *inputs_text(const char *sep) {
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f) return ms_strdup("");
    for (int i = 0; i < P.nin; i++) {
        fprintf(f, "%s%s %lld ", i ? sep : "", P.in[i].ok ? P.in[i].hex : "unreadable",
                P.in[i].ok ? P.in[i].bytes : -1LL);
        put_path(f, P.in[i].path);
    }
    fclose(f);
    return s;
}

char *prov_text(const char *prefix) {
    pthread_mutex_lock(&P.mu);
    hash_inputs();
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    if (!f) {
        pthread_mutex_unlock(&P.mu);
        return ms_strdup("");
    }
    fprintf(f, "%smoescope: %s\n%scommand: %s\n", prefix, ms_version(), prefix,
            P.command ? P.command : "");
    for (int i = 0; i < P.nin; i++) {
        fprintf(f, "%sinput: %s %lld ", prefix, P.in[i].ok ? P.in[i].hex : "unreadable",
                P.in[i].ok ? P.in[i].bytes : -1LL);
        put_path(f, P.in[i].path);
        fputc('\n', f);
    }
    fprintf(f, "%sthreads: %d\n%spoints: %d\n%sranks: %d\n%sdate: %s\n", prefix, P.threads, prefix,
            P.points, prefix, P.ranks, prefix, P.date);
    fprintf(f, "%scpu: %s\n%sblas: %s (%s kernels)\n", prefix, prov_cpu(), prefix, prov_blas(),
            prov_blas_kernel());
    fclose(f);
    pthread_mutex_unlock(&P.mu);
    return s;
}

void prov_pairs(const char ***keys, const char ***values, int *n) {
    pthread_mutex_lock(&P.mu);
    hash_inputs();
    for (int i = 0; i < 8; i++) {
        free(P.pv[i]);
        P.pv[i] = NULL;
    }
    char buf[512];
    int k = 0;
    snprintf(buf, sizeof buf, "moescope %s", ms_version());
    P.pk[k] = "Software", P.pv[k++] = ms_strdup(buf);
    P.pk[k] = "moescope.command", P.pv[k++] = ms_strdup(P.command ? P.command : "");
    P.pk[k] = "moescope.inputs", P.pv[k++] = inputs_text("\n");
    snprintf(buf, sizeof buf, "%d", P.threads);
    P.pk[k] = "moescope.threads", P.pv[k++] = ms_strdup(buf);
    snprintf(buf, sizeof buf, "%d", P.points);
    P.pk[k] = "moescope.points", P.pv[k++] = ms_strdup(buf);
    snprintf(buf, sizeof buf, "%d", P.ranks);
    P.pk[k] = "moescope.ranks", P.pv[k++] = ms_strdup(buf);
    P.pk[k] = "Creation Time", P.pv[k++] = ms_strdup(P.date);
    snprintf(buf, sizeof buf, "%s (%s kernels) on %s", prov_blas(), prov_blas_kernel(), prov_cpu());
    P.pk[k] = "moescope.machine", P.pv[k++] = ms_strdup(buf);
    *keys = P.pk;
    *values = (const char **)P.pv;
    *n = k;
    pthread_mutex_unlock(&P.mu);
}

void prov_reset(void) {
    pthread_mutex_lock(&P.mu);
    free(P.command);
    P.command = NULL;
    for (int i = 0; i < P.nin; i++) {
        free(P.in[i].path);
        for (int k = 0; k < P.in[i].nfiles; k++) free(P.in[i].files[k]);
        free(P.in[i].files);
    }
    P.nin = 0;
    files_read_reset();
    for (int i = 0; i < 8; i++) {
        free(P.pv[i]);
        P.pv[i] = NULL;
    }
    P.threads = 1;
    P.points = 0;
    P.ranks = 1;
    P.date[0] = '\0';
    pthread_mutex_unlock(&P.mu);
}
