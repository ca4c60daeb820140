/* axis.c - see axis.h. */
#include "axis.h"

#include "core/ms_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int axis_nice_ticks(double lo, double hi, int k, double *tick, int *dec) {
    if (!(hi > lo) || !isfinite(lo) || !isfinite(hi) || k < 2) return 0;
    double raw = (hi - lo) / k, mag = pow(10, floor(log10(raw))), f = raw / mag;
    static const double nice[4] = {1, 2, 5, 10};
    int i = f < 1.5 ? 0 : f < 3 ? 1 : f < 7 ? 2 : 3;
    for (;; i++) { /* a larger step while there would be more than k + 1 ticks */
        if (i == 4) i = 1, mag *= 10;
        double step = nice[i] * mag;
        if (floor(hi / step) - ceil(lo / step) + 1 > k + 1) continue;
        *dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        int nt = 0;
        for (double t = ceil(lo / step) * step; t <= hi + 1e-12 * fabs(hi) && nt < 8; t += step)
            tick[nt++] = fabs(t) < step * 1e-9 ? 0 : t;
        return nt;
    }
}

int axis_row(double y, double lo, double hi, int ph, int sub) {
    int H = sub * ph;
    double span = hi - lo > 0 ? hi - lo : 1;
    return (int)lround((hi - y) / span * (H - 1)) / sub;
}

void axis_format(double val, int dec, int w, char *out, int cap) {
    snprintf(out, (size_t)cap, "%.*f", dec, val);
    for (int p = 2; (int)strlen(out) > w && p >= 0; p--) snprintf(out, (size_t)cap, "%.*e", p, val);
}

void axis_y(grid *g, int x, int lw, int px, int py, int ph, double lo, double hi, int sub, const char *label) {
    for (int j = 0; j < ph; j++) grid_put(g, px - 1, py + j, g->utf8 ? 0x2502 : '|', ROLE_BORDER);
    double tick[8];
    int dec = 0, nt = axis_nice_ticks(lo, hi, ph >= 8 ? 4 : ph >= 5 ? 3 : 2, tick, &dec);
    int last_row = -2;
    char *used = ms_calloc((size_t)(ph > 0 ? ph : 1), 1);
    for (int k = 0; k < nt; k++) {
        int row = axis_row(tick[k], lo, hi, ph, sub);
        if (row < 0 || row >= ph || row == last_row) continue; /* one label a row */
        char lab[32];
        axis_format(tick[k], dec, lw - 1, lab, sizeof lab);
        grid_printf(g, x, py + row, lw, ROLE_DIM, "%*s", lw - 1, lab);
        grid_put(g, px - 1, py + row, g->utf8 ? 0x2524 : '+', ROLE_BORDER);
        used[row] = 1;
        last_row = row;
    }
    for (int j = 0; label && j < ph; j++)
        if (!used[j]) {
            grid_printf(g, x, py + j, lw, ROLE_DIM, "%*s", lw - 1, label);
            break;
        }
    free(used);
}
