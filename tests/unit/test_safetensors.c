/* test_safetensors.c - reader, writer, half/bfloat16 conversion, the malformed-file
 * corpus (tests/hostile/corpus/expected.tsv) and atomic writes (disk-full simulation). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/atomic_file.h"
#include "io/outputs.h"
#include "io/safetensors.h"
#include "testlib.h"

static char tmpdir[256];

static char *tmp_path(const char *name) {
    static char buf[64][512]; // enough that a test's paths stay valid
    static int k;
    k = (k + 1) % 64;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* Whole file into a malloc'd buffer; *len set; NULL if unreadable. */
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, fp);
    fclose(fp);
    return b;
}

/* Number of entries in tmpdir whose name starts with prefix. */
static int count_prefix(const char *prefix) {
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------ half and bfloat16 */

/* Independent reference: the IEEE binary16 value from its fields with ldexp. */
static double half_ref(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp(m, -24);
    else v = ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void test_half(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float got = st_half_to_float((uint16_t)h);
        double want = half_ref((uint16_t)h);
        if (isnan(want) ? !isnan(got) : (got != want || !signbit(got) != !signbit(want))) {
            if (bad++ < 5) printf("half 0x%04x: got %.9g want %.9g\n", h, got, want);
        }
    }
    CHECK(bad == 0, "%d of 65536 half values converted wrongly", bad);
    // named values: 1, -2, max, smallest normal, smallest and largest subnormal, -0, inf, nan
    CHECK(st_half_to_float(0x3c00) == 1.0f, "half 1");
    CHECK(st_half_to_float(0xc000) == -2.0f, "half -2");
    CHECK(st_half_to_float(0x7bff) == 65504.0f, "half max");
    CHECK(st_half_to_float(0x0400) == 6.103515625e-05f, "half min normal");
    CHECK(st_half_to_float(0x0001) == 5.9604644775390625e-08f, "half min subnormal");
    CHECK(st_half_to_float(0x03ff) == 6.097555160522461e-05f, "half max subnormal");
    CHECK(st_half_to_float(0x8000) == 0.0f && signbit(st_half_to_float(0x8000)), "half -0");
    CHECK(isinf(st_half_to_float(0xfc00)) && st_half_to_float(0xfc00) < 0, "half -inf");
    CHECK(isnan(st_half_to_float(0x7e00)) && isnan(st_half_to_float(0x7c01)), "half nan");
    // bfloat16: top 16 bits of a float32
    CHECK(st_bf16_to_float(0x3f80) == 1.0f, "bf16 1");
    CHECK(st_bf16_to_float(0xc060) == -3.5f, "bf16 -3.5");
    CHECK(st_bf16_to_float(0x0001) == 0x1p-133f, "bf16 min subnormal");
    CHECK(isinf(st_bf16_to_float(0x7f80)), "bf16 inf");
    CHECK(isnan(st_bf16_to_float(0xffc0)), "bf16 nan");
}

/* ------------------------------------------------------ the valid file */

static void test_valid_file(void) {
    st_file f;
    ms_err err = {{0}};
    int rc = st_open(&f, "tests/hostile/corpus/valid.safetensors", &err);
    CHECK(rc == 0, "open valid: %s", err.msg);
    if (rc) return;
    CHECK(f.ntensors == 7, "ntensors %d", f.ntensors);
    CHECK(f.nmeta == 2 && st_meta(&f, "moescope.router") && !strcmp(st_meta(&f, "moescope.router"), "dense"),
          "metadata router");
    CHECK(st_meta(&f, "seed") && !strcmp(st_meta(&f, "seed"), "1"), "metadata seed");
    CHECK(st_meta(&f, "absent") == NULL, "absent metadata key");
    CHECK((f.data - f.map) % 8 == 0, "data section 8-aligned");

    // moe.gate.weight is (3, 4) F32: (arange(12) - 5.5) / 4
    float w[12];
    int64_t ws[2] = {3, 4};
    CHECK(st_read_f32_shape(&f, "moe.gate.weight", 2, ws, w, &err) == 0, "read w: %s", err.msg);
    int same = 1;
    for (int i = 0; i < 12; i++) same &= w[i] == ((float)i - 5.5f) / 4;
    CHECK(same, "moe.gate.weight values");

    // half is (7,) F16 at an odd offset: 1, -2, 0.5, 65504, min normal, min subnormal, 0
    const st_tensor *t = st_find(&f, "half");
    CHECK(t && t->dtype == ST_F16 && t->numel == 7, "half entry");
    float hv[7];
    if (t) CHECK(st_read_f32(&f, t, hv, &err) == 0, "read half: %s", err.msg);
    float hw[7] = {1, -2, 0.5f, 65504, 6.103515625e-05f, 5.9604644775390625e-08f, 0};
    same = 1;
    for (int i = 0; i < 7; i++) same &= hv[i] == hw[i];
    CHECK(same, "F16 values");
    double hd[7];
    if (t) CHECK(st_read_f64(&f, t, hd, &err) == 0 && hd[5] == 5.9604644775390625e-08, "F16 as f64");

    // brain is (2, 2) BF16
    t = st_find(&f, "brain");
    float bv[4];
    CHECK(t && t->dtype == ST_BF16 && st_read_f32(&f, t, bv, &err) == 0, "read brain: %s", err.msg);
    CHECK(bv[0] == 1.0f && bv[1] == -3.5f && bv[2] == 0.15625f && bv[3] == 0x1p100f, "BF16 values");

    // labels (5,) I64 at offset 70 (unaligned), labels32 (2,) I32
    int64_t lab[5], lab32[2];
    t = st_find(&f, "labels");
    CHECK(t && st_read_i64(&f, t, lab, &err) == 0, "read labels: %s", err.msg);
    CHECK(lab[0] == 0 && lab[1] == 3 && lab[2] == 1 && lab[3] == 2 && lab[4] == 2, "I64 values");
    t = st_find(&f, "labels32");
    CHECK(t && st_read_i64(&f, t, lab32, &err) == 0, "read labels32: %s", err.msg);
    CHECK(lab32[0] == -1 && lab32[1] == 7, "I32 values");
    float tmp[5];
    t = st_find(&f, "labels");
    CHECK(st_read_f32(&f, t, tmp, &err) == -1 && strstr(err.msg, "has dtype I64"),
          "f32 read of I64 refused: %s", err.msg);

    // cost (2, 2) F64: exact through st_read_f64, rounded through st_read_f32
    double cd[4];
    float cf[4];
    t = st_find(&f, "cost");
    CHECK(t && st_read_f64(&f, t, cd, &err) == 0, "read cost: %s", err.msg);
    CHECK(cd[0] == 0.1 && cd[1] == -1e-3 && cd[2] == 1e20 && cd[3] == 3.0, "F64 values");
    CHECK(st_read_f32(&f, t, cf, &err) == 0 && cf[0] == 0.1f && cf[2] == 1e20f, "F64 as f32");
    CHECK(st_read_i64(&f, t, lab, &err) == -1 && strstr(err.msg, "expected I32 or I64"),
          "i64 read of F64 refused: %s", err.msg);

    // empty (0, 4): zero elements, reading is a no-op
    t = st_find(&f, "empty");
    CHECK(t && t->numel == 0 && t->ndim == 2 && st_read_f32(&f, t, tmp, &err) == 0, "empty tensor");

    // st_read_f32_shape errors name the file, tensor and both shapes
    int64_t bad[2] = {3, 5};
    CHECK(st_read_f32_shape(&f, "moe.gate.weight", 2, bad, w, &err) == -1 &&
              strstr(err.msg, "valid.safetensors: tensor 'moe.gate.weight' has shape [3, 4], expected [3, 5]"),
          "shape mismatch message: %s", err.msg);
    CHECK(st_read_f32_shape(&f, "moe.experts.9.fc1.weight", 2, bad, w, &err) == -1 &&
              strstr(err.msg, "valid.safetensors: missing tensor 'moe.experts.9.fc1.weight'"),
          "missing tensor message: %s", err.msg);
    st_close(&f);
}

/* ------------------------------------------------------ the corpus */

/* Open, then read every tensor with the reader for its dtype; returns the failing stage. */
static const char *try_file(const char *path, ms_err *err) {
    st_file f;
    if (st_open(&f, path, err)) return "open";
    const char *stage = "ok";
    for (int i = 0; i < f.ntensors && !strcmp(stage, "ok"); i++) {
        const st_tensor *t = &f.tensors[i];
        size_t n = t->numel ? (size_t)t->numel : 1;
        if (t->dtype == ST_I64 || t->dtype == ST_I32) {
            int64_t *b = ms_malloc(n * sizeof(int64_t));
            if (st_read_i64(&f, t, b, err)) stage = "read";
            free(b);
        } else {
            float *b = ms_malloc(n * sizeof(float));
            if (st_read_f32(&f, t, b, err)) stage = "read";
            free(b);
        }
    }
    st_close(&f);
    return stage;
}

static void test_corpus(void) {
    FILE *fp = fopen("tests/hostile/corpus/expected.tsv", "r");
    CHECK(fp != NULL, "tests/hostile/corpus/expected.tsv missing (run from the repo root)");
    if (!fp) return;
    char line[1024];
    int nfiles = 0, nbad = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        char *file = strtok(line, "\t"), *stage = strtok(NULL, "\t"), *want = strtok(NULL, "\t");
        if (!file || !stage) continue;
        if (!want) want = "";
        char path[600];
        snprintf(path, sizeof path, "tests/hostile/corpus/%s", file);
        ms_err err = {{0}};
        const char *got = try_file(path, &err);
        nfiles++;
        CHECK(!strcmp(got, stage), "%s: expected stage '%s' to fail, got '%s' (%s)", file, stage,
              got, err.msg);
        if (strcmp(stage, "ok")) {
            CHECK(strstr(err.msg, want) != NULL, "%s: message '%s' lacks '%s'", file, err.msg, want);
            CHECK(strstr(err.msg, file) != NULL, "%s: message '%s' does not name the file", file,
                  err.msg);
            nbad++;
        }
    }
    fclose(fp);
    CHECK(nbad >= 16 && nfiles > nbad, "corpus has %d malformed of %d files", nbad, nfiles);
    // a directory and a missing file are errors too
    ms_err err = {{0}};
    st_file f;
    CHECK(st_open(&f, "tests/hostile/corpus", &err) == -1 && strstr(err.msg, "directory"), "dir: %s", err.msg);
    // a FIFO must be refused without blocking on open
    const char *fifo = tmp_path("fifo.safetensors");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    CHECK(st_open(&f, fifo, &err) == -1 && strstr(err.msg, "not a regular file"), "fifo: %s", err.msg);
    CHECK(st_open(&f, "tests/hostile/corpus/nope.safetensors", &err) == -1 &&
              strstr(err.msg, "nope.safetensors: cannot open: No such file"), "missing: %s", err.msg);
}

/* A file of the 8-byte header length hlen, the header text and data bytes. */
static void write_raw(const char *path, uint64_t hlen, const char *header, size_t ndata) {
    FILE *fp = fopen(path, "wb");
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(le, 1, 8, fp);
    fwrite(header, 1, strlen(header), fp);
    for (size_t i = 0; i < ndata; i++) fputc(0, fp);
    fclose(fp);
}

/* st_open of a file holding the header json (padded to 8 bytes) and ndata zero
 * bytes: its return code, the message in *err */
static int open_json(const char *name, const char *json, size_t ndata, ms_err *err) {
    char padded[512];
    snprintf(padded, sizeof padded, "%-*s", (int)((strlen(json) + 7) / 8 * 8), json);
    const char *p = tmp_path(name);
    write_raw(p, strlen(padded), padded, ndata);
    memset(err, 0, sizeof *err);
    st_file f;
    int rc = st_open(&f, p, err);
    if (rc == 0) st_close(&f);
    return rc;
}

#define ST_T(name, shape, b, e) "\"" name "\":{\"dtype\":\"F32\",\"shape\":[" shape "],\"data_offsets\":[" b "," e "]}"

/* Edges the corpus does not reach: a header length that ends inside the 8
 * bytes after the file, and tensors inside an earlier, longer one (an
 * overlap, unless the inner one is empty). */
static void test_edges(void) {
    const char *hdr = "{" ST_T("a", "1", "0", "4") "}";
    size_t hl = (strlen(hdr) + 7) / 8 * 8;
    ms_err err;
    CHECK(open_json("edge_ok.safetensors", hdr, 4, &err) == 0, "header ending at the data: %s", err.msg);
    char padded[128];
    snprintf(padded, sizeof padded, "%-*s", (int)hl, hdr);
    for (uint64_t past = 1; past <= 8; past++) {
        // the length claims `past` bytes more than the file holds after the length field
        const char *p = tmp_path("edge_past.safetensors");
        write_raw(p, hl + 4 + past, padded, 4);
        memset(&err, 0, sizeof err);
        st_file f;
        int rc = st_open(&f, p, &err);
        CHECK(rc == -1 && strstr(err.msg, "runs past the end"), "header length %zu + %d past the end: rc %d %s",
              hl + 4, (int)past, rc, err.msg);
        if (rc == 0) st_close(&f);
    }
    int rc = open_json("nested.safetensors", "{" ST_T("a", "16", "0", "64") "," ST_T("b", "2", "8", "16") ","
                       ST_T("c", "2", "32", "40") "}", 64, &err);
    CHECK(rc == -1 && strstr(err.msg, "overlap"), "b and c inside an earlier longer a: rc %d %s", rc, err.msg);
    rc = open_json("nested2.safetensors", "{" ST_T("a", "16", "0", "64") "," ST_T("c", "2", "32", "40") "}", 64, &err);
    CHECK(rc == -1 && strstr(err.msg, "overlap"), "c inside a: rc %d %s", rc, err.msg);
    rc = open_json("empty_inside.safetensors", "{" ST_T("a", "16", "0", "64") "," ST_T("e", "0", "8", "8") "}", 64, &err);
    CHECK(rc == 0, "an empty tensor inside another holds no bytes, no overlap: %s", err.msg);
}

/* ------------------------------------------------------ writer round trip */

/* w1 (2, 3) F32, cost (3,) F64, idx (4,) I64, lab (2, 2) I32, scalar () F32. */
static float w1[6] = {0.1f, -2.5f, 3e-39f /* subnormal */, 1e30f, -0.0f, 7};
static double cost[3] = {0.1, -1e-300, 1e300};
static int64_t idx[4] = {INT64_MIN, -1, 0, INT64_MAX};
static int32_t lab[4] = {INT32_MIN, -1, 5, INT32_MAX};
static float scalar = 42.0f;

static int write_sample(const char *path, int meta_reversed, ms_err *err) {
    st_writer *w = st_writer_new();
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s4[1] = {4}, s22[2] = {2, 2};
    if (meta_reversed) {
        st_writer_meta(w, "seed", "7");
        st_writer_meta(w, "moescope.router", "topk");
    } else {
        st_writer_meta(w, "moescope.router", "dense");
        st_writer_meta(w, "seed", "7");
        st_writer_meta(w, "moescope.router", "topk"); // last wins
    }
    st_writer_add_f32(w, "moe.gate.weight", 2, s23, w1);
    st_writer_add_f64(w, "cost", 1, s3, cost);
    st_writer_add_i64(w, "idx", 1, s4, idx);
    st_writer_add_i32(w, "labels", 2, s22, lab);
    st_writer_add_f32(w, "scalar \"quoted\"\n", 0, NULL, &scalar);
    int rc = st_writer_write(w, path, err);
    st_writer_free(w);
    return rc;
}

static void test_roundtrip(void) {
    ms_err err = {{0}};
    const char *p1 = tmp_path("rt1.safetensors"), *p2 = tmp_path("rt2.safetensors");
    CHECK(write_sample(p1, 0, &err) == 0, "write: %s", err.msg);
    CHECK(write_sample(p2, 1, &err) == 0, "write again: %s", err.msg);
    size_t n1 = 0, n2 = 0;
    unsigned char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "same content gives identical bytes");
    if (b1 && n1 >= 8) {
        uint64_t hl;
        memcpy(&hl, b1, 8);
        CHECK(hl % 8 == 0, "header length %llu multiple of 8", (unsigned long long)hl);
        CHECK(!memcmp(b1 + 8, "{\"__metadata__\":{\"moescope.router\":\"topk\",\"seed\":\"7\"},", 52),
              "metadata first, sorted: %.60s", b1 + 8);
    }
    free(b1);
    free(b2);

    st_file f;
    CHECK(st_open(&f, p1, &err) == 0, "reopen: %s", err.msg);
    if (f.map == NULL) return;
    CHECK(f.ntensors == 5 && f.nmeta == 2, "counts %d %d", f.ntensors, f.nmeta);
    CHECK(!strcmp(f.tensors[0].name, "moe.gate.weight") && !strcmp(f.tensors[4].name, "scalar \"quoted\"\n"),
          "insertion order and escaped name");
    CHECK(st_meta(&f, "moescope.router") && !strcmp(st_meta(&f, "moescope.router"), "topk"), "meta last wins");
    float fw[6], fs;
    int64_t s23[2] = {2, 3};
    CHECK(st_read_f32_shape(&f, "moe.gate.weight", 2, s23, fw, &err) == 0 && !memcmp(fw, w1, sizeof w1),
          "F32 exact");
    double fc[3];
    CHECK(st_read_f64(&f, st_find(&f, "cost"), fc, &err) == 0 && !memcmp(fc, cost, sizeof cost), "F64 exact");
    int64_t fi[4], fl[4];
    CHECK(st_read_i64(&f, st_find(&f, "idx"), fi, &err) == 0 && !memcmp(fi, idx, sizeof idx), "I64 exact");
    CHECK(st_read_i64(&f, st_find(&f, "labels"), fl, &err) == 0, "I32 read");
    int same = 1;
    for (int i = 0; i < 4; i++) same &= fl[i] == lab[i];
    CHECK(same, "I32 exact");
    const st_tensor *ts = st_find(&f, "scalar \"quoted\"\n");
    CHECK(ts && ts->ndim == 0 && ts->numel == 1 && st_read_f32(&f, ts, &fs, &err) == 0 && fs == 42.0f,
          "scalar");
    CHECK(f.tensors[1].begin == 24 && f.tensors[1].end == 48, "consecutive offsets");
    st_close(&f);

    // writer refusals leave an existing file alone
    size_t n0;
    unsigned char *before = slurp(p1, &n0);
    st_writer *w = st_writer_new();
    int64_t s2[1] = {2};
    float nanv[2] = {1, NAN};
    st_writer_add_f32(w, "x", 1, s2, nanv);
    CHECK(st_writer_write(w, p1, &err) == -1 && strstr(err.msg, "'x': non-finite value nan at element 1"),
          "NaN refused: %s", err.msg);
    st_writer_free(w);
    w = st_writer_new();
    st_writer_add_f32(w, "x", 1, s2, w1);
    st_writer_add_f32(w, "x", 1, s2, w1);
    CHECK(st_writer_write(w, p1, &err) == -1 && strstr(err.msg, "'x' added twice"), "dup: %s", err.msg);
    st_writer_free(w);
    size_t na;
    unsigned char *after = slurp(p1, &na);
    CHECK(na == n0 && !memcmp(before, after, n0), "refused writes leave the file alone");
    free(before);
    free(after);
    CHECK(count_prefix(".rt1") == 0, "no temporaries left");

    // an empty writer gives a valid, empty file
    w = st_writer_new();
    const char *pe = tmp_path("empty.safetensors");
    CHECK(st_writer_write(w, pe, &err) == 0, "empty write: %s", err.msg);
    st_writer_free(w);
    CHECK(st_open(&f, pe, &err) == 0 && f.ntensors == 0, "empty reopen: %s", err.msg);
    if (f.map) st_close(&f);
}

/* ------------------------------------------------------ atomic writes */

static void test_atomic(void) {
    ms_err err = {{0}};
    const char *out = tmp_path("out.safetensors");
    const char *old = "old content that must survive\n";
    CHECK(af_write_all(out, old, strlen(old), &err) == 0, "af_write_all: %s", err.msg);
    struct stat st;
    mode_t um = umask(022);
    umask(um);
    CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == (0644 & ~um), "new file mode %o", st.st_mode & 0777);
    chmod(out, 0600);

    // a full disk, simulated: RLIMIT_FSIZE in a child, SIGXFSZ ignored so write() gets EFBIG
    static float big[1 << 16]; // 256 KiB
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = {4096, 4096};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        st_writer *w = st_writer_new();
        int64_t sh[1] = {1 << 16};
        st_writer_add_f32(w, "big", 1, sh, big);
        ms_err e2 = {{0}};
        int rc = st_writer_write(w, out, &e2);
        st_writer_free(w);
        int ok = rc == -1 && strstr(e2.msg, "out.safetensors: write failed: File too large");
        if (!ok) printf("child: rc %d msg '%s'\n", rc, e2.msg);
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "disk-full write fails with a message");
    size_t n;
    unsigned char *b = slurp(out, &n);
    CHECK(b && n == strlen(old) && !memcmp(b, old, n), "old file intact after failed write");
    free(b);
    CHECK(count_prefix(".out.safetensors.tmp") == 0, "no temporary left after failed write");

    // a successful replace keeps the existing permissions
    CHECK(af_write_all(out, "new", 3, &err) == 0, "replace: %s", err.msg);
    b = slurp(out, &n);
    CHECK(b && n == 3 && !memcmp(b, "new", 3), "replaced content");
    free(b);
    CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0600, "mode kept %o", st.st_mode & 0777);
    CHECK(count_prefix(".out.safetensors.tmp") == 0, "no temporary left after commit");

    // af_abort removes the temporary, leaves the destination
    atomic_file af;
    CHECK(af_open(&af, out, &err) == 0, "af_open: %s", err.msg);
    fputs("junk", af.fp);
    CHECK(count_prefix(".out.safetensors.tmp") == 1, "temporary exists while writing");
    af_abort(&af);
    CHECK(count_prefix(".out.safetensors.tmp") == 0, "abort removes the temporary");
    b = slurp(out, &n);
    CHECK(b && n == 3, "abort leaves the destination");
    free(b);

    // missing directory, directory as destination
    CHECK(af_write_all(tmp_path("no/such/dir/x.bin"), "a", 1, &err) == -1 && strstr(err.msg, "does not exist"),
          "missing dir: %s", err.msg);
    CHECK(af_write_all(tmpdir, "a", 1, &err) == -1 && strstr(err.msg, "is a directory"), "dir: %s", err.msg);

    // a relative path without a directory part
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    if (chdir(tmpdir) == 0) {
        CHECK(af_write_all("rel.bin", "r", 1, &err) == 0, "relative: %s", err.msg);
        CHECK(chdir(cwd) == 0, "chdir back");
    }
    CHECK(access(tmp_path("rel.bin"), F_OK) == 0, "relative file written");

    // outputs_check: the same file as an input by any name is refused, others are fine
    const char *in = tmp_path("in.safetensors"), *other = tmp_path("other.safetensors");
    CHECK(af_write_all(in, "i", 1, &err) == 0 && af_write_all(other, "o", 1, &err) == 0, "inputs");
    CHECK(link(in, tmp_path("hard.safetensors")) == 0, "link: %s", strerror(errno));
    CHECK(symlink(in, tmp_path("soft.safetensors")) == 0, "symlink: %s", strerror(errno));
    char dotted[600];
    snprintf(dotted, sizeof dotted, "%s/./in.safetensors", tmpdir);
    const char *inputs[2] = {other, in};
    CHECK(outputs_check_one(in, NULL, OUT_FILE, inputs, 2, &err) == -1 && strstr(err.msg, "refusing to overwrite the input"),
          "same path refused: %s", err.msg);
    CHECK(outputs_check_one(dotted, NULL, OUT_FILE, inputs, 2, &err) == -1, "other spelling refused");
    CHECK(outputs_check_one(tmp_path("hard.safetensors"), NULL, OUT_FILE, inputs, 2, &err) == -1, "hard link refused");
    CHECK(outputs_check_one(tmp_path("soft.safetensors"), NULL, OUT_FILE, inputs, 2, &err) == -1, "symlink refused");
    CHECK(outputs_check_one(out, NULL, OUT_FILE, inputs, 2, &err) == 0, "other file accepted");
    CHECK(outputs_check_one(tmp_path("new.safetensors"), NULL, OUT_FILE, inputs, 2, &err) == 0, "new file accepted");
}

static void rm_tree(void) {
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(tmp_path(e->d_name));
    closedir(d);
    rmdir(tmpdir);
}

/* st_check_finite: an aligned F32 tensor scanned where it lies says a bad value's
 * element as the chunked read does (the first of several, past the first chunk),
 * and a clean one passes; an F16 one is read in chunks. */
static void test_check_finite(void) {
    enum { K = 40000 };
    const char *p = tmp_path("finite.safetensors");
    char json[512], padded[512];
    snprintf(json, sizeof json, "{" ST_T("a", "%d", "0", "%d") "," ST_T("b", "%d", "%d", "%d") "}", K, 4 * K, K,
             4 * K, 8 * K);
    snprintf(padded, sizeof padded, "%-*s", (int)((strlen(json) + 7) / 8 * 8), json);
    FILE *fp = fopen(p, "wb");
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)((uint64_t)strlen(padded) >> (8 * i));
    fwrite(le, 1, 8, fp);
    fwrite(padded, 1, strlen(padded), fp);
    float *v = calloc(2 * K, sizeof(float));
    for (int i = 0; i < 2 * K; i++) v[i] = (float)i * 0.5f - 3.0f;
    v[K + 20001] = NAN, v[K + 30000] = INFINITY; // b's elements 20001 and 30000
    fwrite(v, sizeof(float), 2 * K, fp);
    fclose(fp);
    free(v);
    st_file f;
    ms_err err;
    CHECK(st_open(&f, p, &err) == 0, "open: %s", err.msg);
    CHECK(st_check_finite(&f, st_find(&f, "a"), &err) == 0, "a is finite: %s", err.msg);
    CHECK(st_check_finite(&f, st_find(&f, "b"), &err) == -1 && strstr(err.msg, "'b': non-finite value nan at element 20001"),
          "b: %s", err.msg);
    st_close(&f);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_safetensors.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_half();
    test_valid_file();
    test_corpus();
    test_edges();
    test_roundtrip();
    test_atomic();
    test_check_finite();
    rm_tree();
    return test_summary("test_safetensors");
}
