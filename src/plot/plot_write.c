/* plot_write.c - a figure written as PNG or SVG by its file name (plot_write.h). */
#include "plot/plot_write.h"

#include "plot_int.h"

static int write_ex(const plot_spec *p, const plot_extra *ex, const char *path, ms_err *err) {
    if (plot_is_svg(path)) return plot_svg_file(&p, 1, ex ? ex->vlines : NULL, ex ? ex->nvlines : 0, path, err);
    return plot_png_file(p, ex, path, err);
}

int plot_write(const plot_spec *p, const char *path, ms_err *err) { return write_ex(p, NULL, path, err); }

int plot_write_stack(const plot_spec *const *panels, int np, const char *path, ms_err *err) {
    if (np < 1) return ms_fail(err, "%s: no plot", path);
    if (plot_is_svg(path)) return plot_svg_file(panels, np, NULL, 0, path, err);
    return plot_png_stack(panels, np, path, err);
}

int plot_landscape_write(const double *barriers_sorted, long n, const long *marked_idx,
                         const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                         const char *title, const plot_size *size, const char *path, ms_err *err) {
    return plot_landscape_write_ex(barriers_sorted, n, marked_idx, marked_labels, marked_rgb, nmarked, title, 0,
                                   size, path, err);
}

int plot_landscape_write_ex(const double *barriers_sorted, long n, const long *marked_idx,
                            const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                            const char *title, int log_rank, const plot_size *size, const char *path,
                            ms_err *err) {
    landscape_fig b;
    int rc = landscape_fig_build(barriers_sorted, n, marked_idx, marked_labels, marked_rgb, nmarked, title,
                                 size ? size->w : 0, size ? size->h : 0, log_rank, &b, err);
    if (!rc) {
        b.p.scale = size ? size->scale : 0;
        rc = write_ex(&b.p, &b.ex, path, err);
    }
    landscape_fig_free(&b);
    return rc;
}
