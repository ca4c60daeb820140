/* mem_budget.c - the machine's memory limit (mem_budget.h). */
#include "core/mem_budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/env.h"

const char *ms_bytes_str(char *buf, size_t cap, double bytes) {
    static const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) bytes /= 1024, u++;
    if (u == 0) snprintf(buf, cap, "%.0f bytes", bytes);
    else snprintf(buf, cap, "%.1f %s", bytes, unit[u]);
    return buf;
}

/* MOESCOPE_MAX_MEMORY: a positive decimal number of bytes, optionally followed by one
 * of the suffixes below (powers of 1024, as the manual lists them); nothing else. */
int ms_mem_env(double *bytes, ms_err *err) {
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1}, {"B", 1}, {"K", 1024.0}, {"KB", 1024.0}, {"KiB", 1024.0},
                 {"M", 1048576.0}, {"MB", 1048576.0}, {"MiB", 1048576.0}, {"G", 1073741824.0},
                 {"GB", 1073741824.0}, {"GiB", 1073741824.0}, {"T", 1099511627776.0},
                 {"TB", 1099511627776.0}, {"TiB", 1099511627776.0}};
    const char *env = env_get(ENV_MAX_MEMORY);
    *bytes = 0;
    if (!env) return 0;
    const char *p = env;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    double v = digits ? strtod(env, NULL) : 0;
    for (size_t u = 0; digits && u < sizeof units / sizeof units[0]; u++)
        if (!strcasecmp(p, units[u].suffix) && v * units[u].scale >= 1 && isfinite(v * units[u].scale)) {
            *bytes = v * units[u].scale;
            return 0;
        }
    return ms_fail(err, "MOESCOPE_MAX_MEMORY = '%.64s' is not a memory size: a positive number of "
                        "bytes, optionally followed by K, M, G or T (or KB, KiB, ...: powers of 1024), "
                        "as in 512M or 2G", env);
}

double ms_mem_machine(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    double m = pages > 0 && psz > 0 ? (double)pages * (double)psz : 1e300;
    // a container's memory limit (cgroup v2) is the machine as far as we are concerned
    FILE *fp = fopen("/sys/fs/cgroup/memory.max", "r");
    if (fp) {
        double v;
        if (fscanf(fp, "%lf", &v) == 1 && v > 0 && v < m) m = v; // "max" reads as no number
        fclose(fp);
    }
    double v; // a malformed value was refused at the start (cli_front)
    if (ms_mem_env(&v, NULL) == 0 && v > 0 && v < m) m = v;
    return m;
}

int ms_mem_fits(double bytes, const char *what, ms_err *err) {
    double machine = ms_mem_machine();
    if (bytes <= machine) return 0;
    char nb[32], mb[32];
    return ms_fail(err, "%s: needs %s, over the memory limit of %s here (the machine's memory or "
                        "MOESCOPE_MAX_MEMORY)",
                   what, ms_bytes_str(nb, sizeof nb, bytes), ms_bytes_str(mb, sizeof mb, machine));
}
