/* test_plot_png.c - the PNG plots: render, write, decode back with libpng and
 * look at the pixels; atomic replacement; failures with clear messages; the
 * bitmap font lookup. Set PLOT_KEEP=DIR to keep the PNGs for viewing. */
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plot/bitmap_font.h"
#include "core/env.h"
#include "plot/plot_png.h"
#include "core/rng.h"
#include "plot/plot_write.h"
#include "testlib.h"

/* Pixels of buf (h,w,3) in rows [y0,y1) within RGB distance tol of rgb. */
static long count_near(const uint8_t *buf, int w, int y0, int y1, uint32_t rgb, int tol) {
    long n = 0;
    int r = (rgb >> 16) & 255, g = (rgb >> 8) & 255, b = rgb & 255;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = buf + ((size_t)y * w + x) * 3;
            int dr = p[0] - r, dg = p[1] - g, db = p[2] - b;
            if (dr * dr + dg * dg + db * db <= tol * tol) n++;
        }
    return n;
}

static long count_nonwhite(const uint8_t *buf, int w, int y0, int y1) {
    long n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = buf + ((size_t)y * w + x) * 3;
            if (p[0] < 250 || p[1] < 250 || p[2] < 250) n++;
        }
    return n;
}

/* Decode a PNG as RGB with libpng's simplified API. */
static uint8_t *read_png(const char *path, int *w, int *h) {
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path)) return NULL;
    im.format = PNG_FORMAT_RGB;
    uint8_t *buf = malloc(PNG_IMAGE_SIZE(im));
    if (!png_image_finish_read(&im, NULL, buf, 0, NULL)) {
        free(buf);
        png_image_free(&im);
        return NULL;
    }
    *w = (int)im.width;
    *h = (int)im.height;
    return buf;
}

/* Files in dir other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static char outdir[512];
static const char *keep;

static void out_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", keep ? keep : outdir, name);
}

#define T 25

static void test_curves(void) {
    // a typical curve plot: naive (high bump), skip-order, aligned, selected (markers), chord
    double t[T], naive[T], skip[T], aligned[T], sel[T], chord[T];
    for (int m = 0; m < T; m++) {
        t[m] = m / (double)(T - 1);
        double bump = 4 * t[m] * (1 - t[m]);
        chord[m] = 0.42 + 0.03 * t[m];
        naive[m] = chord[m] + 1.3 * bump;
        skip[m] = chord[m] + 0.8 * bump;
        aligned[m] = chord[m] + 0.05 * bump;
        sel[m] = chord[m] + 0.3 * bump;
    }
    sel[12] = NAN; /* a gap */
    plot_series s[] = {
        {.label = "naive", .x = t, .y = naive, .n = T, .rgb = PLOT_RGB_NAIVE},
        {.label = "skip order", .x = t, .y = skip, .n = T, .rgb = PLOT_RGB_SKIP},
        {.label = "expert cost + WM", .x = t, .y = aligned, .n = T, .rgb = PLOT_RGB_ALIGNED},
        {.label = "order 2 0 3 1", .x = t, .y = sel, .n = T, .rgb = PLOT_RGB_SELECTED,
         .markers = 1},
        {.label = "chord", .x = t, .y = chord, .n = T, .rgb = PLOT_RGB_CHORD, .dashed = 1},
    };
    plot_spec p;
    plot_spec_init(&p, NULL);
    p.title = "Loss along the path from A to aligned B";
    p.xlabel = "t";
    p.ylabel = "cross-entropy loss";
    p.series = s;
    p.nseries = 5;

    ms_err err = {{0}};
    uint8_t *rgb = NULL;
    int w = 0, h = 0;
    int rc = plot_render_rgb(&p, &rgb, &w, &h, &err);
    CHECK(rc == 0, "render: %s", err.msg);
    if (rc) return;
    CHECK(w == 960 && h == 600, "size %dx%d", w, h);
    long nonwhite = count_nonwhite(rgb, w, 0, h);
    CHECK(nonwhite > (long)w * h / 50, "only %ld non-white pixels", nonwhite);
    CHECK(nonwhite < (long)w * h / 2, "%ld non-white pixels: mostly painted?", nonwhite);
    for (int i = 0; i < 5; i++) {
        long c = count_near(rgb, w, 0, h, s[i].rgb, 24);
        CHECK(c > 60, "series '%s' colour %06X: %ld pixels", s[i].label, s[i].rgb, c);
    }
    // title: dark text pixels in the top band, centred
    long title_px = 0;
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *q = rgb + ((size_t)y * w + x) * 3;
            if (q[0] < 80 && q[1] < 80 && q[2] < 80) title_px++;
        }
    CHECK(title_px > 150, "title area: %ld dark pixels", title_px);
    // anti-aliasing: intermediate shades of the aligned blue exist (not only pure colour)
    long pure = count_near(rgb, w, 0, h, PLOT_RGB_ALIGNED, 2);
    long near = count_near(rgb, w, 0, h, PLOT_RGB_ALIGNED, 120);
    CHECK(near > pure + 50, "no anti-aliasing: %ld pure, %ld near", pure, near);

    // write, decode, compare pixel by pixel (PNG is lossless)
    char path[600];
    out_path(path, sizeof path, "curves.png");
    rc = plot_write(&p, path, &err);
    CHECK(rc == 0, "write: %s", err.msg);
    int rw = 0, rh = 0;
    uint8_t *back = read_png(path, &rw, &rh);
    CHECK(back != NULL, "cannot decode %s", path);
    if (back) {
        CHECK(rw == w && rh == h, "decoded size %dx%d", rw, rh);
        CHECK(rw == w && rh == h && !memcmp(back, rgb, (size_t)w * h * 3),
              "decoded pixels differ from the rendered buffer");
        free(back);
    }
    free(rgb);

    // a big one (scale 2 automatically) for slides
    p.width = 1920;
    p.height = 1200;
    out_path(path, sizeof path, "curves_big.png");
    rc = plot_write(&p, path, &err);
    CHECK(rc == 0, "write big: %s", err.msg);
    back = read_png(path, &rw, &rh);
    CHECK(back && rw == 1920 && rh == 1200, "big: decoded %dx%d", rw, rh);
    free(back);

    // fixed y range and all-NaN series do not break anything
    double nanv[T];
    for (int m = 0; m < T; m++) nanv[m] = NAN;
    plot_series s2[] = {{.label = "empty", .x = t, .y = nanv, .n = T, .rgb = PLOT_RGB_NAIVE},
                        {.label = "flat", .x = t, .y = chord, .n = 1, .rgb = PLOT_RGB_SKIP}};
    plot_spec q;
    plot_spec_init(&q, NULL);
    q.series = s2;
    q.nseries = 2;
    q.ymin = 0;
    q.ymax = 1;
    rc = plot_render_rgb(&q, &rgb, &w, &h, &err);
    CHECK(rc == 0, "degenerate plot: %s", err.msg);
    if (!rc) free(rgb);
    // zero-initialised spec: defaults
    plot_spec z = {0};
    z.series = s;
    z.nseries = 1;
    rc = plot_render_rgb(&z, &rgb, &w, &h, &err);
    CHECK(rc == 0 && w == 960 && h == 600, "zero spec: %s", err.msg);
    if (!rc) free(rgb);
    z.width = 10;
    rc = plot_render_rgb(&z, &rgb, &w, &h, &err);
    CHECK(rc == -1 && strstr(err.msg, "size"), "tiny size accepted: %s", err.msg);
}

/* Dashed lines of every length and angle, and points far outside a fixed range
 * (a dash walk that stalls on rounding or walks 1e12 pixels would hang here). */
static void test_dashes(void) {
    rng_t r;
    rng_seed(&r, 11);
    enum { NS = 12, NP = 7 };
    double xs[NS][NP], ys[NS][NP];
    plot_series s[NS + 1];
    memset(s, 0, sizeof s);
    for (int k = 0; k < NS; k++) {
        for (int i = 0; i < NP; i++) {
            xs[k][i] = rng_uniform(&r);
            ys[k][i] = (k % 3 == 0 ? 1e12 : 1.0) * (rng_uniform(&r) - 0.5);
        }
        s[k] = (plot_series){.x = xs[k], .y = ys[k], .n = NP, .rgb = PLOT_RGB_CHORD, .dashed = 1};
    }
    // the chord of `moescope curve`: two points, a long dashed segment
    double cx[2] = {0.0, 1.0}, cy[2] = {0.6931471805599453, 0.7083421290881273};
    s[NS] = (plot_series){.label = "chord", .x = cx, .y = cy, .n = 2, .rgb = PLOT_RGB_CHORD,
                          .dashed = 1};
    plot_spec p;
    plot_spec_init(&p, NULL);
    p.series = s;
    p.nseries = NS + 1;
    p.ymin = -1;
    p.ymax = 1;
    ms_err err = {{0}};
    uint8_t *rgb = NULL;
    int w, h;
    int rc = plot_render_rgb(&p, &rgb, &w, &h, &err);
    CHECK(rc == 0, "dashes: %s", err.msg);
    if (!rc) {
        CHECK(count_near(rgb, w, 0, h, PLOT_RGB_CHORD, 24) > 500, "dashed lines missing");
        free(rgb);
    }
    // the chord alone over its own (auto) range, at both scales
    for (int big = 0; big < 2; big++) {
        plot_spec q;
        plot_spec_init(&q, NULL);
        q.series = &s[NS];
        q.nseries = 1;
        q.width = big ? 1920 : 960;
        q.height = big ? 1200 : 600;
        rc = plot_render_rgb(&q, &rgb, &w, &h, &err);
        CHECK(rc == 0, "chord: %s", err.msg);
        if (!rc) {
            // dashed: along the chord's row band, colour and background alternate
            CHECK(count_near(rgb, w, 0, h, PLOT_RGB_CHORD, 24) > 200, "chord missing");
            free(rgb);
        }
    }
}

static void test_atomic(void) {
    double x[2] = {0, 1}, y[2] = {0, 1};
    plot_series s = {.label = "line", .x = x, .y = y, .n = 2, .rgb = PLOT_RGB_ALIGNED};
    plot_spec p;
    plot_spec_init(&p, NULL);
    p.title = "atomic";
    p.series = &s;
    p.nseries = 1;
    ms_err err = {{0}};
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/atomic", outdir);
    mkdir(dir, 0755);

    // a directory that does not exist: clear message, nothing created
    snprintf(path, sizeof path, "%s/no/such/dir/plot.png", dir);
    int rc = plot_write(&p, path, &err);
    CHECK(rc == -1, "write into a missing directory succeeded");
    CHECK(strstr(err.msg, "does not exist") && strstr(err.msg, "plot.png"),
          "message: %s", err.msg);
    CHECK(count_entries(dir) == 0, "entries left in %s: %d", dir, count_entries(dir));

    // the destination is a directory: fails, no temporary left beside it
    snprintf(path, sizeof path, "%s/sub", dir);
    mkdir(path, 0755);
    rc = plot_write(&p, path, &err);
    CHECK(rc == -1 && strstr(err.msg, "directory"), "write over a directory: %s", err.msg);
    CHECK(count_entries(dir) == 1, "temporaries left in %s: %d entries", dir,
          count_entries(dir));
    rmdir(path);

    // an existing file is replaced by rename: new inode, complete PNG, no temporary left
    snprintf(path, sizeof path, "%s/plot.png", dir);
    FILE *fp = fopen(path, "w");
    fputs("old contents\n", fp);
    fclose(fp);
    struct stat st0, st1;
    stat(path, &st0);
    rc = plot_write(&p, path, &err);
    CHECK(rc == 0, "replace: %s", err.msg);
    stat(path, &st1);
    CHECK(st0.st_ino != st1.st_ino, "file rewritten in place (same inode), not renamed");
    int w, h;
    uint8_t *back = read_png(path, &w, &h);
    CHECK(back && w == 960 && h == 600, "replaced file is not the PNG");
    free(back);
    CHECK(count_entries(dir) == 1, "temporaries left: %d entries", count_entries(dir));
    unlink(path);
    rmdir(dir);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_landscape(void) {
    long n = 40320;
    double *bar = malloc(n * sizeof(double));
    rng_t r;
    rng_seed(&r, 7);
    for (long i = 0; i < n; i++) {
        double u = rng_uniform(&r);
        bar[i] = 0.02 + 0.9 * u * u + 0.05 * rng_normal(&r) * 0.1;
    }
    qsort(bar, n, sizeof(double), cmp_double);
    long idx[3] = {0, 2, 1517};
    const char *labels[3] = {"best order", "expert cost (rank 3)", "gate cost (rank 1518)"};
    uint32_t cols[3] = {PLOT_RGB_BEST, PLOT_RGB_EXPERT, PLOT_RGB_GATE};
    ms_err err = {{0}};
    uint8_t *rgb = NULL;
    int rc = plot_landscape_render_rgb(bar, n, idx, labels, cols, 3,
                                       "Barrier of every expert order (8 experts)", 960, 600,
                                       &rgb, &err);
    CHECK(rc == 0, "landscape: %s", err.msg);
    if (!rc) {
        CHECK(count_near(rgb, 960, 0, 600, PLOT_RGB_OTHER, 24) > 300, "landscape line missing");
        CHECK(count_near(rgb, 960, 0, 600, PLOT_RGB_GATE, 24) > 40, "gate mark missing");
        CHECK(count_near(rgb, 960, 0, 600, PLOT_RGB_EXPERT, 24) > 40, "expert mark missing");
        free(rgb);
    }
    char path[600];
    out_path(path, sizeof path, "landscape.png");
    rc = plot_landscape_write(bar, n, idx, labels, cols, 3, "Barrier of every expert order",
                              NULL, path, &err);
    CHECK(rc == 0, "landscape write: %s", err.msg);
    int w, h;
    uint8_t *back = read_png(path, &w, &h);
    CHECK(back && w == 960 && h == 600, "landscape PNG not readable");
    free(back);

    // 24 orders, with markers on every order
    out_path(path, sizeof path, "landscape24.png");
    long idx2[2] = {0, 5};
    const char *l2[2] = {"expert cost (rank 1)", "gate cost (rank 6)"};
    uint32_t c2[2] = {PLOT_RGB_EXPERT, PLOT_RGB_GATE};
    double b24[24];
    for (int i = 0; i < 24; i++) b24[i] = bar[i * 1680];
    rc = plot_landscape_write(b24, 24, idx2, l2, c2, 2, "Barrier of the 24 expert orders", NULL,
                              path, &err);
    CHECK(rc == 0, "landscape 24: %s", err.msg);

    // bad marked index
    long bad = n;
    rc = plot_landscape_render_rgb(bar, n, &bad, labels, cols, 1, "x", 960, 600, &rgb, &err);
    CHECK(rc == -1 && strstr(err.msg, "outside"), "bad index accepted: %s", err.msg);
    free(bar);
}

static void test_font(void) {
    ms_err err = {{0}};
    bm_font *f = malloc(sizeof *f);
    int rc = bm_font_open(f, "9x15.bdf", &err);
    CHECK(rc == 0, "font: %s", err.msg);
    if (!rc) {
        CHECK(f->ascent + f->descent == 15, "9x15 line height %d", f->ascent + f->descent);
        CHECK(bm_text_width(f, "abc", 1) == 27 && bm_text_width(f, "abc", 2) == 54,
              "width %d", bm_text_width(f, "abc", 1));
        CHECK(bm_text_width(f, "\xC3\x97", 1) == 9, "UTF-8 times sign is one glyph");
        CHECK(f->glyph['A'].present && f->glyph['A'].rows[5] != 0, "glyph A empty");
    }
    // not found: the message says what and where
    const char *dirs[2] = {"/nonexistent/one", "/nonexistent/two"};
    char out[256];
    rc = bm_font_find_in("9x15.bdf", dirs, 2, out, sizeof out, &err);
    CHECK(rc == -1 && strstr(err.msg, "9x15.bdf") && strstr(err.msg, "not found") &&
              strstr(err.msg, "/nonexistent/two") && strstr(err.msg, "MOESCOPE_ASSETS"),
          "message: %s", err.msg);
    rc = bm_font_open(f, "no-such-font.bdf", &err);
    CHECK(rc == -1 && strstr(err.msg, "not found"), "missing font: %s", err.msg);
    // a file that is not BDF
    char path[600];
    snprintf(path, sizeof path, "%s/bad.bdf", outdir);
    FILE *fp = fopen(path, "w");
    fputs("hello\n", fp);
    fclose(fp);
    rc = bm_font_load(f, path, &err);
    CHECK(rc == -1 && strstr(err.msg, "not a BDF"), "bad font: %s", err.msg);
    unlink(path);
    // MOESCOPE_ASSETS pointing at the assets works
    char cwd[400];
    if (getcwd(cwd, sizeof cwd)) {
        char a[500];
        snprintf(a, sizeof a, "%s/assets", cwd);
        setenv("MOESCOPE_ASSETS", a, 1);
        env_refresh();
        rc = bm_font_open(f, "7x13.bdf", &err);
        CHECK(rc == 0 && f->ascent + f->descent == 13, "MOESCOPE_ASSETS: %s", err.msg);
        unsetenv("MOESCOPE_ASSETS");
        env_refresh();
    }
    free(f);
}

static void test_ticks(void) {
    CHECK_CLOSE(plot_nice_step(0, 1, 5), 0.2, 1e-12, "step 0..1");
    CHECK_CLOSE(plot_nice_step(0, 0.37, 6), 0.05, 1e-12, "step 0..0.37");
    CHECK_CLOSE(plot_nice_step(1, 40320, 8), 5000, 1e-12, "step 1..40320");
    CHECK_CLOSE(plot_nice_step(-3e-5, 2e-5, 5), 1e-5, 1e-12, "step tiny");
    CHECK_CLOSE(plot_nice_step(1, 1, 5), 1, 1e-12, "step degenerate");
}

/* the rows of [0, y1) that hold a non-white pixel, as bands of consecutive
 * rows; and whether any text pixel lies within margin of the left or right
 * edge */
static int text_bands(const uint8_t *buf, int w, int y1, int margin, int *at_edge) {
    int bands = 0, in = 0;
    *at_edge = 0;
    for (int y = 0; y < y1; y++) {
        int any = 0;
        for (int x = 0; x < w; x++) {
            const uint8_t *p = buf + ((size_t)y * w + x) * 3;
            if (p[0] < 200 || p[1] < 200 || p[2] < 200) {
                any = 1;
                if (x < margin || x >= w - margin) *at_edge = 1;
            }
        }
        if (any && !in) bands++;
        in = any;
    }
    return bands;
}

/* A title too long for 960 pixels ("layer-output loss from mixtral4/seed1 ...
 * weight matching on") goes on two lines inside the canvas instead of being
 * cut at both edges; a short one stays on one line. */
static void test_title_fit(void) {
    double t[2] = {0, 1}, y[2] = {0.2, 0.3};
    plot_series s = {.label = "naive [0 1 2 3] (barrier 0.1)", .x = t, .y = y, .n = 2, .rgb = PLOT_RGB_NAIVE};
    const char *titles[2] = {"loss from dense4/seed1 (t = 0) to dense4/seed2 aligned (t = 1)",
                             "layer-output loss from sample-checkpoints/mixtral4/seed1 (t = 0) to "
                             "sample-checkpoints/mixtral4/seed2 aligned (t = 1): order expert, weight matching on"};
    for (int k = 0; k < 2; k++) {
        plot_spec p;
        plot_spec_init(&p, NULL);
        p.title = titles[k];
        p.series = &s;
        p.nseries = 1;
        ms_err err = {{0}};
        uint8_t *rgb = NULL;
        int w = 0, h = 0;
        if (plot_render_rgb(&p, &rgb, &w, &h, &err)) {
            CHECK(0, "render: %s", err.msg);
            continue;
        }
        /* the frame's top edge (a grey line across the plot) lies under the title's lines */
        int top = -1;
        for (int yy = 0; yy < h / 2 && top < 0; yy++)
            if (count_near(rgb, w, yy, yy + 1, 0x555555u, 40) > w / 2) top = yy;
        CHECK(k ? top > 50 : top > 30 && top < 50, "title %d: the frame starts at row %d", k, top);
        int edge, bands = text_bands(rgb, w, top > 0 ? top : 1, 6, &edge);
        CHECK(!edge, "title %d: nothing drawn within 6 px of the edges", k);
        CHECK(bands == k + 1, "title %d: %d lines of text above the frame", k, bands);
        free(rgb);
    }
}

int main(void) {
    keep = getenv("PLOT_KEEP");
    snprintf(outdir, sizeof outdir, "/tmp/test_plot_png.XXXXXX");
    if (!mkdtemp(outdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_ticks();
    test_font();
    test_curves();
    test_dashes();
    test_atomic();
    test_landscape();
    test_title_fit();
    // clean up
    const char *names[] = {"curves.png", "curves_big.png", "landscape.png", "landscape24.png"};
    for (int i = 0; i < 4; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", outdir, names[i]);
        unlink(p);
    }
    CHECK(rmdir(outdir) == 0, "files left in %s", outdir);
    return test_summary("test_plot_png");
}
