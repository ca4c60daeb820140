/* test_durability.c - atomic_file's durability, seen from the system calls:
 * the test defines fsync and rename itself (the library is linked statically,
 * so its calls land here), records what reaches the disk and in which order,
 * and injects an fsync failure.
 *
 *   - the temporary file is fsynced, holding all of its bytes, before the
 *     rename that puts it in place (else a crash can leave an empty or short
 *     file under the destination's name);
 *   - the directory is fsynced after the rename (the rename itself durable);
 *   - an fsync error is a write error: af_commit fails, the old destination is
 *     intact, no temporary is left. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "testlib.h"

/* one recorded call: 'f' fsync of path (size bytes at the time), 'r' rename a -> b */
typedef struct {
    char kind;
    char a[PATH_MAX], b[PATH_MAX];
    long long size;
} event;
static event events[64];
static int nevents;
static int fail_fsync; /* inject: the next fsync of a regular file fails with EIO */

int fsync(int fd) {
    event *e = &events[nevents < 63 ? nevents++ : 63];
    memset(e, 0, sizeof *e);
    e->kind = 'f';
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, e->a, sizeof e->a - 1);
    if (k > 0) e->a[k] = 0;
    struct stat st;
    e->size = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
    if (fail_fsync && S_ISREG(st.st_mode)) {
        fail_fsync = 0;
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fsync, fd);
}

int rename(const char *from, const char *to) {
    event *e = &events[nevents < 63 ? nevents++ : 63];
    memset(e, 0, sizeof *e);
    e->kind = 'r';
    char *ra = realpath(from, NULL);
    snprintf(e->a, sizeof e->a, "%s", ra ? ra : from);
    free(ra);
    snprintf(e->b, sizeof e->b, "%s", to);
    return renameat(AT_FDCWD, from, AT_FDCWD, to);
}

static int count_temps(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] == '.' && strstr(de->d_name, ".tmp")) n++;
    if (d) closedir(d);
    return n;
}

/* the events of one commit of `len` bytes to dest (in dir): fsync of the
 * full temporary, then its rename onto dest, then an fsync of dir */
static void check_sequence(const char *what, const char *dir, const char *dest, long long len) {
    int ren = -1;
    for (int i = 0; i < nevents; i++)
        if (events[i].kind == 'r' && !strcmp(events[i].b, dest)) ren = i;
    CHECK(ren >= 0, "%s: the temporary is renamed onto %s", what, dest);
    if (ren < 0) return;
    const char *tmp = events[ren].a;
    size_t dl = strlen(dir);
    CHECK(!strncmp(tmp, dir, dl) && tmp[dl] == '/' && !strchr(tmp + dl + 1, '/'),
          "%s: the temporary %s is in the destination's directory %s", what, tmp, dir);
    int synced = -1;
    for (int i = 0; i < ren; i++)
        if (events[i].kind == 'f' && !strcmp(events[i].a, tmp)) synced = i;
    CHECK(synced >= 0, "%s: the temporary is fsynced before the rename", what);
    if (synced >= 0)
        CHECK(events[synced].size == len, "%s: fsynced with all %lld bytes written (had %lld)", what, len,
              events[synced].size);
    int dsync = -1;
    for (int i = ren + 1; i < nevents; i++)
        if (events[i].kind == 'f' && !strcmp(events[i].a, dir)) dsync = i;
    CHECK(dsync >= 0, "%s: the directory is fsynced after the rename", what);
}

static long long file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

int main(void) {
    char tmpl[] = "/tmp/moescope-durability-XXXXXX";
    char *made = mkdtemp(tmpl);
    if (!made) {
        printf("FAIL: mkdtemp\n");
        return 1;
    }
    char dir[PATH_MAX], dest[PATH_MAX + 16];
    if (!realpath(made, dir)) snprintf(dir, sizeof dir, "%s", made);
    snprintf(dest, sizeof dest, "%s/out.bin", dir);
    ms_err err;

    // af_write_all: a buffer of 100000 bytes
    static char buf[100000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)(i * 7);
    nevents = 0;
    CHECK(af_write_all(dest, buf, sizeof buf, &err) == 0, "af_write_all: %s", err.msg);
    check_sequence("af_write_all", dir, dest, (long long)sizeof buf);
    CHECK(file_size(dest) == (long long)sizeof buf, "af_write_all: the destination holds every byte");

    // af_open + stdio writes + af_commit, over the existing file
    atomic_file af;
    nevents = 0;
    CHECK(af_open(&af, dest, &err) == 0, "af_open: %s", err.msg);
    for (int i = 0; i < 5000; i++) fprintf(af.fp, "line %04d\n", i); // 10 bytes a line
    CHECK(af_commit(&af, &err) == 0, "af_commit: %s", err.msg);
    check_sequence("af_open/af_commit", dir, dest, 50000);

    // an fsync error fails the commit: old file intact, no temporary, no rename
    nevents = 0;
    fail_fsync = 1;
    int rc = af_write_all(dest, buf, 1234, &err);
    CHECK(rc != 0, "an fsync error makes af_write_all fail");
    CHECK(rc == 0 || strstr(err.msg, "out.bin") != NULL, "the message names the file: %s", err.msg);
    CHECK(file_size(dest) == 50000, "after the fsync error the old destination is intact (%lld bytes)",
          file_size(dest));
    int renamed = 0;
    for (int i = 0; i < nevents; i++) renamed += events[i].kind == 'r';
    CHECK(renamed == 0, "no rename after a failed fsync");
    CHECK(count_temps(dir) == 0, "no temporary left after a failed fsync");

    unlink(dest);
    rmdir(dir);
    return test_summary("test_durability");
}
