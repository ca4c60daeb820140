/* atomic_file.c - temporary file beside the destination, fsync, rename.
 *
 * rename(2) within one directory is atomic, so a reader sees either the old
 * file or the complete new one. The temporary lives in the destination's
 * directory (same filesystem) as ".<base>.tmpXXXXXX".
 *
 * A rename would replace whatever node the name has, so an existing
 * destination that is not a regular file is never renamed over (as root,
 * `-o /dev/null` would otherwise swap the machine's /dev/null for a regular
 * file): character devices and FIFOs (/dev/null, a pipe, a terminal) and the
 * process's own descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N) are
 * written directly, as a stream; block devices, sockets and anything else are
 * refused. */
#define _GNU_SOURCE // fopencookie
#include "io/atomic_file.h"
#include "core/progress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The stream is a fopencookie over the temporary's fd so that the errno of the
 * first failed write(2) is kept (a plain FILE only keeps a sticky error flag,
 * and "write failed: No space left on device" is what the user needs to see). */
typedef struct {
    int fd;
    int err; // errno of the first failed write, 0 if none
    int cancel_slot; // the temporary's entry in the cancel table (progress.h), -1 if none
} af_stream;

/* One write(2) to a regular file runs to its end before a signal handler does:
 * a multi-GB write would hold off Ctrl-C or a supervisor's SIGTERM for seconds
 * (until its SIGKILL, which leaves the temporary). At most AF_WRITE_CHUNK bytes a
 * call, so the cancel handler (progress.h) runs within one chunk's time. */
#define AF_WRITE_CHUNK ((size_t)8 << 20)

static ssize_t stream_write(void *cookie, const char *buf, size_t len) {
    af_stream *s = cookie;
    size_t done = 0;
    while (done < len) {
        size_t n = len - done < AF_WRITE_CHUNK ? len - done : AF_WRITE_CHUNK;
        ssize_t k = write(s->fd, buf + done, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (!s->err) s->err = k < 0 ? errno : EIO;
            return 0; // fopencookie: 0 means error
        }
        done += (size_t)k;
    }
    return (ssize_t)len;
}

static int stream_close(void *cookie) {
    af_stream *s = cookie;
    if (close(s->fd) != 0 && !s->err) s->err = errno;
    s->fd = -1;
    return s->err ? -1 : 0;
}

/* A FILE writing to fd through the stream callbacks above, its cookie in
 * *cookie; NULL (errno set, fd left open, nothing allocated) on failure. */
static FILE *stream_open(int fd, af_stream **cookie) {
    af_stream *s = ms_calloc(1, sizeof *s);
    s->fd = fd;
    s->cancel_slot = -1;
    cookie_io_functions_t io = {.read = NULL, .write = stream_write, .seek = NULL,
                                .close = stream_close};
    FILE *fp = fopencookie(s, "wb", io);
    if (!fp) {
        int e = errno;
        free(s);
        errno = e;
        s = NULL;
    }
    *cookie = s;
    return fp;
}

/* The process umask without changing it (umask(2) is a read-modify-write that
 * would race with other threads creating files): Linux shows it in /proc. */
static mode_t current_umask(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    if (fp) {
        char line[256];
        unsigned int m;
        while (fgets(line, sizeof line, fp))
            if (sscanf(line, "Umask: %o", &m) == 1) {
                fclose(fp);
                return (mode_t)m;
            }
        fclose(fp);
    }
    mode_t m = umask(022);
    umask(m);
    return m;
}

/* The process's own descriptor a path names ("-" and /dev/stdout, /dev/stderr,
 * /dev/fd/N, /proc/self/fd/N), or -1. "-" is standard output, as in most tools:
 * `--json -` must not leave a file named "-" behind. Such an output is written through a
 * duplicate of that descriptor, exactly as the shell set it up (a redirection's
 * file at its offset, a pipe, a terminal), and never renamed over. */
static int named_descriptor(const char *path) {
    if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout")) return STDOUT_FILENO;
    if (!strcmp(path, "/dev/stderr")) return STDERR_FILENO;
    const char *num = !strncmp(path, "/dev/fd/", 8)         ? path + 8
                      : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                             : NULL;
    if (!num || *num < '0' || *num > '9') return -1;
    char *end;
    long v = strtol(num, &end, 10);
    return *end || v > 1 << 20 ? -1 : (int)v;
}

const char *af_node_kind(unsigned m) {
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISFIFO(m)) return "a FIFO";
    return "not a regular file";
}

/* Direct mode: write into the existing character device or FIFO, or the named
 * descriptor (see named_descriptor); no temporary, no rename. The fd is checked
 * again after opening: a node swapped for a regular file in between is not
 * written in place. */
static int open_direct(atomic_file *af, const char *path, int desc, ms_err *err) {
    int fd;
    if (desc >= 0) {
        fflush(desc == STDERR_FILENO ? stderr : stdout); // keep what was printed first, first
        fd = fcntl(desc, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) return ms_fail(err, "%s: descriptor %d is not open", path, desc);
    } else {
        fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) return ms_fail(err, "%s: cannot open for writing: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode) ||
        S_ISSOCK(st.st_mode) || (S_ISREG(st.st_mode) && desc < 0)) {
        close(fd);
        return ms_fail(err, "%s: changed while being opened; not written", path);
    }
    af_stream *s;
    af->fp = stream_open(fd, &s);
    if (!af->fp) {
        int e = errno;
        close(fd);
        return ms_fail(err, "%s: %s", path, strerror(e));
    }
    af->path = ms_strdup(path);
    af->tmppath = NULL; // direct: nothing to rename or remove
    af->priv = s;
    return 0;
}

char *af_temp_template(const char *path, int hidden) {
    // a legal base name of 248 bytes plus ".tmpXXXXXX" would pass NAME_MAX (255): the
    // temporary keeps only the base's first AF_TEMP_BASE bytes (mkstemp makes it unique)
    enum { AF_TEMP_BASE = 200 };
    size_t n = strlen(path);
    while (!hidden && n > 1 && path[n - 1] == '/') n--; // a directory named "out/"
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    size_t keep = n - b > AF_TEMP_BASE ? AF_TEMP_BASE : n - b;
    while (keep > 0 && keep < n - b && ((unsigned char)path[b + keep] & 0xc0) == 0x80) keep--;
    size_t cap = b + keep + 16;
    char *tmp = ms_malloc(cap);
    snprintf(tmp, cap, hidden ? "%.*s.%.*s.tmpXXXXXX" : "%.*s%.*s.tmp-XXXXXX", (int)b, path,
             (int)keep, path + b);
    return tmp;
}

int af_open(atomic_file *af, const char *path, ms_err *err) {
    memset(af, 0, sizeof *af);
    if (!path || !*path) return ms_fail(err, "empty output file name");
    size_t n = strlen(path);
    if (path[n - 1] == '/') return ms_fail(err, "%s: is a directory, not a file name", path);

    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) return ms_fail(err, "%s: is a directory", path);
    int desc = named_descriptor(path);
    if (desc >= 0 || (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))))
        return open_direct(af, path, desc, err);
    if (exists && !S_ISREG(st.st_mode))
        return ms_fail(err, "%s: is %s; refusing to write into it (outputs are regular files, "
                            "character devices such as /dev/null, or FIFOs)",
                       path, af_node_kind(st.st_mode));

    // split into directory and base name
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    char *dir = ms_malloc(dirlen + 2);
    if (!slash) strcpy(dir, ".");
    else if (dirlen == 0) strcpy(dir, "/");
    else {
        memcpy(dir, path, dirlen);
        dir[dirlen] = 0;
    }

    char *tmp = af_temp_template(path, 1);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        struct stat ds;
        if (e == ENOENT || (e == ENOTDIR) || stat(dir, &ds) != 0)
            ms_fail(err, "%s: directory '%s' does not exist", path, dir);
        else
            ms_fail(err, "%s: cannot create a temporary file in '%s': %s", path, dir, strerror(e));
        free(dir);
        free(tmp);
        return -1;
    }
    free(dir);
    // mkstemp creates 0600: keep an existing file's permissions, else 0644 minus the umask
    mode_t mode = exists && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : (0644 & ~current_umask());
    (void)fchmod(fd, mode); // not fatal: the file is still written
    af_stream *s;
    af->fp = stream_open(fd, &s);
    if (!af->fp) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return ms_fail(err, "%s: %s", path, strerror(e));
    }
    s->cancel_slot = cancel_register(tmp, 0); // Ctrl-C removes it (progress.h)
    af->path = ms_strdup(path);
    af->tmppath = tmp;
    af->priv = s;
    return 0;
}

static void af_release(atomic_file *af) {
    af_stream *s = af->priv;
    if (s) cancel_unregister(s->cancel_slot);
    free(af->priv);
    af->priv = NULL;
    free(af->path);
    free(af->tmppath);
    af->path = af->tmppath = NULL;
    af->fp = NULL;
}

void af_abort(atomic_file *af) {
    if (!af) return;
    if (af->fp) fclose(af->fp); // direct mode: what was streamed stays streamed
    if (af->tmppath) unlink(af->tmppath);
    af_release(af);
}

int af_commit(atomic_file *af, ms_err *err) {
    if (!af->fp) return ms_fail(err, "%s: file was not opened", af->path ? af->path : "?");
    af_stream *s = af->priv;
    int direct = af->tmppath == NULL;
    int bad = fflush(af->fp) != 0 || ferror(af->fp) || s->err;
    // a device or pipe has nothing to sync (fsync fails with EINVAL there)
    if (!bad && !direct && fsync(s->fd) != 0 && !s->err) s->err = errno, bad = 1;
    if (fclose(af->fp) != 0) bad = 1; // closes the fd, may record an error
    af->fp = NULL;
    if (bad) {
        ms_fail(err, "%s: write failed: %s", af->path, s->err ? strerror(s->err) : "I/O error");
        if (!direct) unlink(af->tmppath);
        af_release(af);
        return -1;
    }
    if (direct) {
        af_release(af);
        return 0;
    }
    int e;
    if (rename(af->tmppath, af->path) != 0) {
        e = errno;
        ms_fail(err, "%s: cannot rename the temporary file into place: %s", af->path,
                strerror(e));
        unlink(af->tmppath);
        af_release(af);
        return -1;
    }
    // make the rename itself durable (best effort)
    const char *slash = strrchr(af->path, '/');
    char *dir = slash ? ms_strdup(af->path) : ms_strdup(".");
    if (slash) dir[slash == af->path ? 1 : slash - af->path] = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dir);
    af_release(af);
    return 0;
}

int af_writes_in_place(const char *path) {
    struct stat st;
    if (named_descriptor(path) >= 0) return 1;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

char *af_destination(const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    char *p = ms_malloc(n + 1);
    memcpy(p, path, n);
    p[n] = 0;
    const char *slash = strrchr(p, '/');
    const char *base = slash ? slash + 1 : p;
    char *dir;
    if (!slash) dir = ms_strdup(".");
    else if (slash == p) dir = ms_strdup("/");
    else {
        dir = ms_strdup(p);
        dir[slash - p] = 0;
    }
    char *real = realpath(dir, NULL);
    free(dir);
    if (!real) return p;
    size_t cap = strlen(real) + strlen(base) + 2;
    char *out = ms_malloc(cap);
    snprintf(out, cap, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(real);
    free(p);
    return out;
}

int af_check_distinct(const char *const *outs, const char *const *labels, int n, ms_err *err) {
    int rc = 0;
    char **res = ms_calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
    for (int i = 0; i < n; i++)
        if (outs[i]) res[i] = af_destination(outs[i]);
    for (int i = 0; i < n && rc == 0; i++) {
        if (!outs[i]) continue;
        struct stat si;
        int ei = stat(outs[i], &si) == 0;
        // two outputs into one character device (--json /dev/null --csv /dev/null) is fine
        if (ei && S_ISCHR(si.st_mode)) continue;
        for (int j = i + 1; j < n && rc == 0; j++) {
            if (!outs[j]) continue;
            struct stat sj;
            // an existing file by any name (symlink, hard link), else the same directory entry
            int same = !strcmp(res[i], res[j]);
            if (!same && ei && stat(outs[j], &sj) == 0)
                same = si.st_dev == sj.st_dev && si.st_ino == sj.st_ino;
            if (!same) continue;
            if (labels && !strcmp(outs[i], outs[j]))
                rc = ms_fail(err, "%s and %s both name '%s': one would replace the other (same file)",
                             labels[i], labels[j], outs[i]);
            else if (labels)
                rc = ms_fail(err, "%s and %s name the same file ('%s', '%s'): one would replace "
                                  "the other",
                             labels[i], labels[j], outs[i], outs[j]);
            else
                rc = ms_fail(err, "outputs '%s' and '%s' name the same file: one would replace "
                                  "the other",
                             outs[i], outs[j]);
        }
    }
    for (int i = 0; i < n; i++) free(res[i]);
    free(res);
    return rc;
}

int af_free_name(const char *want, char *out, size_t cap) {
    const char *dot = strrchr(want, '.'), *slash = strrchr(want, '/');
    if (!dot || (slash && dot < slash)) dot = want + strlen(want);
    for (int k = 1; k < 1000; k++) {
        if (k == 1) snprintf(out, cap, "%s", want);
        else snprintf(out, cap, "%.*s.%d%s", (int)(dot - want), want, k, dot);
        if (access(out, F_OK) != 0) return 0;
    }
    return -1;
}

int af_write_all(const char *path, const void *buf, size_t len, ms_err *err) {
    atomic_file af;
    if (af_open(&af, path, err)) return -1;
    // a short fwrite sets the stream's error flag, which af_commit reports
    if (len) (void)fwrite(buf, 1, len, af.fp);
    return af_commit(&af, err);
}
