/* diagnose.c - the genericity conditions, assignment margins, slot residuals,
 * routing load and the rest of the diagnostics, as numbers with a verdict in words.
 * See diagnose.h for the exact definitions of every number. */
#include "analysis/diagnose.h"
#include "model/symmetry.h"

#include <cJSON.h>
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model/evaluator.h"
#include "io/json_file.h"
#include "io/provenance.h"
#include "align/lap.h"
#include "model/moe_kernels.h"
#include "core/progress.h"
#include "model/symmetry.h"
#include "align/weight_matching.h"

static cJSON *json_ckpt(const diag_ckpt *s); /* below, with the JSON report */

/* ---- findings ---- */

void dg_list_free(dg_list *l) {
    free(l->items);
    memset(l, 0, sizeof *l);
}

const char *dg_severity_name(dg_severity s) {
    switch (s) {
    case DG_OK: return "ok";
    case DG_INFO: return "info";
    case DG_WARN: return "warn";
    default: return "bad";
    }
}

int dg_count(const dg_list *l, dg_severity min) {
    int c = 0;
    for (int i = 0; i < l->n; i++) c += l->items[i].severity >= min;
    return c;
}

const dg_finding *dg_find(const dg_list *l, const char *code, const char *who) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->items[i].code, code) && (!who || !strcmp(l->items[i].who, who)))
            return &l->items[i];
    return NULL;
}

void dg_add(dg_list *l, dg_severity sev, const char *code, const char *who, double number,
            const char *fmt, ...) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->items = ms_realloc(l->items, (size_t)l->cap * sizeof(dg_finding));
    }
    dg_finding *f = &l->items[l->n++];
    memset(f, 0, sizeof *f);
    f->severity = sev;
    snprintf(f->code, sizeof f->code, "%s", code);
    snprintf(f->who, sizeof f->who, "%s", who ? who : "");
    f->number = number;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
}

void dg_print(FILE *fp, const dg_list *l, const char *title) {
    if (title) fprintf(fp, "%s\n", title);
    for (int i = 0; i < l->n; i++)
        fprintf(fp, "  [%-4s] %s\n", dg_severity_name(l->items[i].severity), l->items[i].text);
}

/* " of B" or "" */
static const char *of_who(const char *who, char *buf, size_t n) {
    if (who && who[0]) snprintf(buf, n, " of %s", who);
    else buf[0] = 0;
    return buf;
}

/* "1, 3" (slots where a and b differ) */
static int fmt_diff_slots(char *buf, size_t n, const int *a, const int *b, int len) {
    size_t used = 0;
    int cnt = 0;
    buf[0] = 0;
    for (int i = 0; i < len && used + 1 < n; i++) {
        if (a[i] == b[i]) continue;
        int w = snprintf(buf + used, n - used, "%s%d", cnt ? ", " : "", i);
        if (w < 0) break;
        used += (size_t)w;
        cnt++;
    }
    return cnt;
}

/* ---- expert parameters ---- */

static double vec_sq(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

static double vec_sq_d(const double *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

static double expert_sqnorm(const moe_expert *e, const moe_config *c) {
    size_t d = (size_t)c->d, h = (size_t)c->h;
    double s = vec_sq(e->fc1_w, h * d) + vec_sq(e->fc1_b, h) + vec_sq(e->fc2_w, d * h) +
               vec_sq(e->fc2_b, d);
    if (moe_act_glu(c->act)) s += vec_sq(e->fc3_w, h * d) + vec_sq(e->fc3_b, h);
    return s;
}

/* |theta_a - P theta_b| for the hidden permutation P (unit u of aligned b = unit P[u]). */
static double expert_perm_dist(const moe_expert *a, const moe_expert *b, const moe_config *c,
                               const int *P) {
    int d = c->d, h = c->h;
    double s = 0;
    for (int u = 0; u < h; u++) {
        int v = P[u];
        const float *ra = a->fc1_w + (size_t)u * d, *rb = b->fc1_w + (size_t)v * d;
        for (int q = 0; q < d; q++) s += ((double)ra[q] - rb[q]) * ((double)ra[q] - rb[q]);
        double db = (double)a->fc1_b[u] - b->fc1_b[v];
        s += db * db;
        if (moe_act_glu(c->act)) {
            ra = a->fc3_w + (size_t)u * d, rb = b->fc3_w + (size_t)v * d;
            for (int q = 0; q < d; q++) s += ((double)ra[q] - rb[q]) * ((double)ra[q] - rb[q]);
            db = (double)a->fc3_b[u] - b->fc3_b[v];
            s += db * db;
        }
        // column u of W2 (d,h)
        for (int r = 0; r < d; r++) {
            double x = (double)a->fc2_w[(size_t)r * h + u] - b->fc2_w[(size_t)r * h + v];
            s += x * x;
        }
    }
    for (int r = 0; r < d; r++) {
        double x = (double)a->fc2_b[r] - b->fc2_b[r];
        s += x * x;
    }
    return sqrt(s);
}

/* min over hidden permutations of |theta_a - P theta_b|: weight matching is exact
 * here because |a - Pb|^2 = |a|^2 + |b|^2 - 2 sum_u S[u][P[u]] - 2 b2a.b2b. */
static int expert_wm_dist(const moe_expert *a, const moe_expert *b, const moe_config *c,
                          int *P, double *S, double *dist, ms_err *err) {
    if (wm_match_into(a, b, c, P, NULL, S, err)) return -1;
    *dist = expert_perm_dist(a, b, c, P);
    return 0;
}

/* ---- expert outputs and routing on the evaluation inputs ---- */

/* O (N,d) = E(X) for X (N,d); H, H3 are (N,h) workspaces. */
static int expert_outputs(const moe_expert *e, const moe_config *c, const float *X, int N,
                          float *O, float *H, float *H3) {
    // by chunks of rows, the explorer's quit polled between them (an expert of GPT-2
    // small's width on 2048 rows is 0.2 s)
    return moe_expert_forward_until(e, c, X, N, H, H3, O, progress_cancel_flag());
}

/* Two experts' floats (a mapped layer's decoded one at a time: moe_expert_floats) */
typedef struct {
    float *mem;
    moe_expert x[2];
} dg_pair_buf;

static void pbuf_init(dg_pair_buf *b, const moe_config *c) {
    b->mem = ms_malloc(2 * moe_expert_size(c) * sizeof(float));
}

/* m's expert e in floats, in slot k (0, 1) of b when m is mapped */
static const moe_expert *pbuf_get(dg_pair_buf *b, const moe_model *m, int e, int k) {
    return moe_expert_floats(m, e, &b->x[k], b->mem + (size_t)k * moe_expert_size(&m->cfg));
}

static void routing_load(const moe_model *m, const evalset *E, double *load_mean,
                         double *load_frac) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d, N = E->N;
    int k = c->router == ROUTER_TOPK ? c->k : 1; /* dense: "top" = the argmax */
    if (k > n) k = n;
    int *sel = ms_malloc((size_t)k * sizeof(int)); // (k)
    enum { CH = 1024 };
    float *S = ms_malloc((size_t)CH * n * sizeof(float)); // (B,n) scores
    float *G = ms_malloc((size_t)CH * n * sizeof(float)); // (B,n) gate weights
    for (int i = 0; i < n; i++) load_mean[i] = load_frac[i] = 0;
    for (int b0 = 0; b0 < N; b0 += CH) {
        int B = N - b0 < CH ? N - b0 : CH;
        moe_gate_logits(m, E->inputs + (size_t)b0 * d, B, S); // S (B,n)
        moe_route(c, S, B, G);
        for (int r = 0; r < B; r++) {
            for (int i = 0; i < n; i++) load_mean[i] += G[(size_t)r * n + i];
            // the top-k by the evaluator's rule (ties to the smaller index)
            moe_topk(S + (size_t)r * n, n, k, sel);
            for (int q = 0; q < k; q++) load_frac[sel[q]] += 1;
        }
    }
    for (int i = 0; i < n; i++) {
        load_mean[i] /= N;
        load_frac[i] /= N;
    }
    free(S);
    free(G);
    free(sel);
}

/* ---- singular values: one-sided Jacobi (Hestenes) on the columns of M^T ---- */

/* Singular values of M (rows, cols), row-major, descending, into sigma
 * (rows of them: zeros where rows > cols). */
static void jacobi_singular_values(const double *M, int rows, int cols, double *sigma) {
    // A = M^T (cols, rows): column p of A is row p of M; store the columns contiguously
    double *A = ms_malloc((size_t)rows * cols * sizeof(double));
    memcpy(A, M, (size_t)rows * cols * sizeof(double));
    for (int sweep = 0; sweep < 80; sweep++) {
        int rotated = 0;
        for (int p = 0; p < rows; p++)
            for (int q = p + 1; q < rows; q++) {
                double *ap = A + (size_t)p * cols, *aq = A + (size_t)q * cols;
                double al = 0, be = 0, ga = 0;
                for (int t = 0; t < cols; t++) {
                    al += ap[t] * ap[t];
                    be += aq[t] * aq[t];
                    ga += ap[t] * aq[t];
                }
                if (al == 0 || be == 0 || fabs(ga) <= 1e-15 * sqrt(al * be)) continue;
                rotated = 1;
                double zeta = (be - al) / (2 * ga);
                double tn = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double cs = 1 / sqrt(1 + tn * tn), sn = cs * tn;
                for (int t = 0; t < cols; t++) {
                    double x = ap[t], y = aq[t];
                    ap[t] = cs * x - sn * y;
                    aq[t] = sn * x + cs * y;
                }
            }
        if (!rotated) break;
    }
    for (int p = 0; p < rows; p++) sigma[p] = sqrt(vec_sq_d(A + (size_t)p * cols, (size_t)cols));
    free(A);
    // descending (insertion sort: rows is small)
    for (int i = 1; i < rows; i++) {
        double v = sigma[i];
        int j = i - 1;
        while (j >= 0 && sigma[j] < v) {
            sigma[j + 1] = sigma[j];
            j--;
        }
        sigma[j + 1] = v;
    }
    for (int i = cols; i < rows; i++) sigma[i] = 0; /* at most cols are non-zero */
}

/* ---- one checkpoint ---- */

void diag_ckpt_free(diag_ckpt *s) {
    free(s->expert_dist);
    free(s->output_dist);
    free(s->sigma);
    free(s->load_mean);
    free(s->load_frac);
    memset(s, 0, sizeof *s);
}

/* Pairwise WM-aligned distances between the experts of m. */
static int ckpt_expert_distances(const moe_model *m, diag_ckpt *s, ms_err *err) {
    const moe_config *c = &m->cfg;
    int n = c->n, h = c->h;
    s->expert_dist = ms_calloc((size_t)n * n, sizeof(double));
    dg_pair_buf pb;
    pbuf_init(&pb, c);
    double sq = 0;
    for (int i = 0; i < n; i++) sq += expert_sqnorm(pbuf_get(&pb, m, i, 0), c);
    s->expert_rms = sqrt(sq / n);
    s->expert_min = INFINITY;
    s->expert_pair[0] = s->expert_pair[1] = -1;
    if (h > DG_WM_MAX_H || (double)n * (n - 1) / 2 > DG_WM_MAX_PAIRS) {
        // n(n-1)/2 assignments of size h would be slow: use the hidden-permutation
        // invariant Gram distance of the expert cost instead, relative to its mean
        // off-diagonal value
        s->expert_gram = 1;
        free(pb.mem);
        expert_source src = moe_mapped_source(m); // a mapped layer's experts read one at a time
        if (cost_matrix_src(m, &src, m, &src, COST_EXPERT, 1, s->expert_dist, err))
            return ms_prefix(err, "expert distances");
        double mean = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (i == j) continue;
                mean += s->expert_dist[i * n + j] / ((double)n * (n - 1));
                if (j > i && s->expert_dist[i * n + j] < s->expert_min) {
                    s->expert_min = s->expert_dist[i * n + j];
                    s->expert_pair[0] = i, s->expert_pair[1] = j;
                }
            }
        for (int i = 0; i < n; i++) s->expert_dist[i * n + i] = 0;
        s->expert_min_rel = mean > 0 ? s->expert_min / mean : 0;
        return 0;
    }
    int *P = ms_malloc((size_t)h * sizeof(int));
    double *S = ms_malloc((size_t)h * h * sizeof(double)); // (h,h)
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const moe_expert *ei = pbuf_get(&pb, m, i, 0);
        for (int j = i + 1; j < n; j++) {
            double dist;
            if (progress_cancelled()) { // a listener's cancel (progress.h): the explorer stopping
                rc = ms_fail(err, "cancelled");
                break;
            }
            if (expert_wm_dist(ei, pbuf_get(&pb, m, j, 1), c, P, S, &dist, err)) {
                rc = ms_prefix(err, "experts %d and %d", i, j);
                break;
            }
            s->expert_dist[i * n + j] = s->expert_dist[j * n + i] = dist;
            if (dist < s->expert_min) {
                s->expert_min = dist;
                s->expert_pair[0] = i, s->expert_pair[1] = j;
            }
        }
    }
    free(P);
    free(S);
    free(pb.mem);
    s->expert_min_rel = s->expert_rms > 0 ? s->expert_min / s->expert_rms : 0;
    return rc;
}

/* -1 when cancelled (progress_cancelled) between chunks of rows */
static int ckpt_output_distances(const moe_model *m, const evalset *E, diag_ckpt *s) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d, h = c->h;
    int N = E->N < DG_OUTPUT_SAMPLES ? E->N : DG_OUTPUT_SAMPLES;
    double cap = DG_OUTPUT_WORK / ((double)n * (n - 1) / 2 * d); // n^2/2 pairs x N d each
    if (N > cap) N = cap < 16 ? (E->N < 16 ? E->N : 16) : (int)cap;
    s->has_outputs = 1;
    s->nsamples = N;
    float *O = ms_malloc((size_t)n * N * d * sizeof(float)); // (n, N, d)
    size_t hr = (size_t)(N < MOE_EXPERT_ROWS ? N : MOE_EXPERT_ROWS) * h;
    float *H = ms_malloc(hr * sizeof(float)); // (rows, h) a chunk's
    float *H3 = moe_act_glu(c->act) ? ms_malloc(hr * sizeof(float)) : NULL;
    dg_pair_buf pb;
    pbuf_init(&pb, c);
    // a phase of its own: the explorer's listener sees it, its cancel polled between chunks
    progress_begin("diagnose: expert outputs", n, "experts");
    int stopped = 0;
    for (int i = 0; i < n && !stopped; i++) {
        stopped = expert_outputs(pbuf_get(&pb, m, i, 0), c, E->inputs, N, O + (size_t)i * N * d, H, H3);
        progress_add(1);
    }
    progress_end();
    free(pb.mem);
    free(H);
    free(H3);
    if (stopped) {
        free(O);
        return -1;
    }
    size_t Nd = (size_t)N * d;
    double sq = 0;
    for (size_t q = 0; q < (size_t)n * Nd; q++) sq += (double)O[q] * O[q];
    s->output_rms = sqrt(sq / ((double)n * Nd));
    s->output_dist = ms_calloc((size_t)n * n, sizeof(double));
    s->output_min = INFINITY;
    s->output_pair[0] = s->output_pair[1] = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const float *a = O + (size_t)i * Nd, *b = O + (size_t)j * Nd;
            double ss = 0;
            for (size_t q = 0; q < Nd; q++) ss += ((double)a[q] - b[q]) * ((double)a[q] - b[q]);
            double dist = sqrt(ss / Nd);
            s->output_dist[i * n + j] = s->output_dist[j * n + i] = dist;
            if (dist < s->output_min) {
                s->output_min = dist;
                s->output_pair[0] = i, s->output_pair[1] = j;
            }
        }
    s->output_min_rel = s->output_rms > 0 ? s->output_min / s->output_rms : 0;
    free(O);
    return 0;
}

/* Gate rows r_i = [W_i | b_i] (n, d+1) and the two "distinct" statistics. */
/* One unordered pair i < j of gate rows, by |projection of r_i - r_j|. */
typedef struct {
    float key;
    uint16_t i, j;
} gd_pair;

static int gd_cmp(const void *a, const void *b) {
    float x = ((const gd_pair *)a)->key, y = ((const gd_pair *)b)->key;
    return (x > y) - (x < y);
}

/* The smallest |(r_i - r_j) - (r_k - r_l)| for large n, without the n^4 loop:
 * both (r_i - r_j) - (r_k - r_l) and (r_i - r_j) + (r_k - r_l) (that is, the pair
 * (l, k)) are at least ||a| - |b|| where a, b are the projections of the two
 * differences on a fixed direction u (|u| = 1). So sorted by |projection|, a pair of
 * pairs further apart than the best found so far is never examined. Exact; the work
 * is bounded by DG_GATE_DIFF_WORK distance evaluations, beyond which the minimum
 * found so far is reported as an upper bound (s->gate_diff_exhaustive = 0). */
static int gate_diff_sweep(const double *r, int n, int D, diag_ckpt *s) {
    size_t M = (size_t)n * (n - 1) / 2;
    double *u = ms_malloc((size_t)D * sizeof(double));
    double un = 0;
    for (int q = 0; q < D; q++) u[q] = sin(1.0 + 2.718281828 * q), un += u[q] * u[q]; // fixed, generic
    for (int q = 0; q < D; q++) u[q] /= sqrt(un);
    double *proj = ms_malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        proj[i] = 0;
        for (int q = 0; q < D; q++) proj[i] += r[(size_t)i * D + q] * u[q];
    }
    gd_pair *P = ms_malloc(M * sizeof(gd_pair));
    size_t m = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) P[m++] = (gd_pair){(float)fabs(proj[i] - proj[j]), (uint16_t)i, (uint16_t)j};
    qsort(P, M, sizeof *P, gd_cmp);
    double best = INFINITY, work = 0;
    // a phase of its own: the explorer's listener sees it and its cancel is polled
    progress_begin("diagnose: gate differences", DG_GATE_DIFF_WORK, "distances");
    int cancelled = progress_cancelled();
    s->gate_diff_exhaustive = 1;
    if (cancelled) goto stop;
    for (size_t a = 0; a < M && best > 0; a++) {
        for (size_t b = a; b < M; b++) {
            // the float keys are rounded: a margin keeps the pruning exact
            if ((double)P[b].key - P[a].key > best * (1 + 1e-5) + 1e-30) break;
            if (++work > DG_GATE_DIFF_WORK) {
                s->gate_diff_exhaustive = 0;
                goto stop;
            }
            // up to 5e7 distances of d + 1 (seconds at n = 256): the explorer's quit waits on it
            if (fmod(work, 65536.0) == 0) {
                progress_add(65536.0);
                if ((cancelled = progress_cancelled())) goto stop;
            }
            int i = P[a].i, j = P[a].j, k = P[b].i, l = P[b].j;
            const double *ri = r + (size_t)i * D, *rj = r + (size_t)j * D, *rk = r + (size_t)k * D,
                         *rl = r + (size_t)l * D;
            // same pair (a == b): only its sum 2(r_i - r_j); else both signs
            double sm = 0, sp = 0;
            for (int q = 0; q < D; q++) {
                double x = ri[q] - rj[q], y = rk[q] - rl[q];
                sm += (x - y) * (x - y);
                sp += (x + y) * (x + y);
            }
            if (a != b && sqrt(sm) < best) {
                best = sqrt(sm);
                s->gate_diff_pairs[0] = i, s->gate_diff_pairs[1] = j;
                s->gate_diff_pairs[2] = k, s->gate_diff_pairs[3] = l;
            }
            if (sqrt(sp) < best) {
                best = sqrt(sp);
                s->gate_diff_pairs[0] = i, s->gate_diff_pairs[1] = j;
                s->gate_diff_pairs[2] = l, s->gate_diff_pairs[3] = k;
            }
        }
    }
stop:
    progress_end();
    s->gate_diff_min = best;
    free(u);
    free(proj);
    free(P);
    return cancelled ? -1 : 0;
}

/* -1 when cancelled (progress_cancelled) in the sweep */
static int ckpt_gate(const moe_model *m, diag_ckpt *s) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d, D = d + 1;
    double *r = ms_malloc((size_t)n * D * sizeof(double)); // (n, d+1)
    double *mean = ms_calloc((size_t)D, sizeof(double));   // (d+1)
    for (int i = 0; i < n; i++) {
        for (int q = 0; q < d; q++) r[(size_t)i * D + q] = m->gate_w[(size_t)i * d + q];
        r[(size_t)i * D + d] = m->gate_b[i];
        for (int q = 0; q < D; q++) mean[q] += r[(size_t)i * D + q] / n;
    }
    double scale = 0;
    for (int i = 0; i < n; i++) {
        double ss = 0;
        for (int q = 0; q < D; q++) {
            double x = r[(size_t)i * D + q] - mean[q];
            ss += x * x;
        }
        scale += sqrt(ss) / n;
    }
    s->gate_scale = scale;
    s->gate_row_min = INFINITY;
    s->gate_row_pair[0] = s->gate_row_pair[1] = -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double ss = 0;
            for (int q = 0; q < D; q++) {
                double x = r[(size_t)i * D + q] - r[(size_t)j * D + q];
                ss += x * x;
            }
            if (sqrt(ss) < s->gate_row_min) {
                s->gate_row_min = sqrt(ss);
                s->gate_row_pair[0] = i, s->gate_row_pair[1] = j;
            }
        }
    // |(r_i - r_j) - (r_k - r_l)| over ordered pairs (i,j) != (k,l); the expression is
    // symmetric under (i,j,k,l) -> (l,k,j,i) and (k,l,i,j), so half the loops would do,
    // but n is small (n^4 (d+1) flops) and the plain form is easy to check.
    s->gate_diff_min = INFINITY;
    s->gate_diff_exhaustive = 1;
    for (int q = 0; q < 4; q++) s->gate_diff_pairs[q] = -1;
    int rc = n > DG_GATE_DIFF_PLAIN_N ? gate_diff_sweep(r, n, D, s) : 0;
    for (int i = 0; i < n && n <= DG_GATE_DIFF_PLAIN_N; i++)
        for (int j = 0; j < n; j++) {
            if (i == j) continue;
            for (int k = 0; k < n; k++)
                for (int l = 0; l < n; l++) {
                    if (k == l || (k == i && l == j)) continue;
                    if (k * n + l < i * n + j) continue; /* each unordered pair of pairs once */
                    const double *ri = r + (size_t)i * D, *rj = r + (size_t)j * D,
                                 *rk = r + (size_t)k * D, *rl = r + (size_t)l * D;
                    double ss = 0;
                    for (int q = 0; q < D && ss < s->gate_diff_min * s->gate_diff_min; q++) {
                        double x = ri[q] - rj[q] - rk[q] + rl[q];
                        ss += x * x;
                    }
                    if (sqrt(ss) < s->gate_diff_min) {
                        s->gate_diff_min = sqrt(ss);
                        s->gate_diff_pairs[0] = i, s->gate_diff_pairs[1] = j;
                        s->gate_diff_pairs[2] = k, s->gate_diff_pairs[3] = l;
                    }
                }
        }
    s->gate_row_min_rel = scale > 0 ? s->gate_row_min / scale : 0;
    s->gate_diff_min_rel = scale > 0 ? s->gate_diff_min / scale : 0;
    free(r);
    free(mean);
    return rc;
}

static void ckpt_topk_rank(const moe_model *m, diag_ckpt *s) {
    const moe_config *c = &m->cfg;
    int n = c->n, d = c->d, rows = n - 1;
    s->nsigma = rows;
    if (rows < 1) return;
    double *M = ms_malloc((size_t)rows * d * sizeof(double)); // (n-1, d)
    for (int i = 1; i < n; i++)
        for (int q = 0; q < d; q++)
            M[(size_t)(i - 1) * d + q] =
                (double)m->gate_w[(size_t)(i - 1) * d + q] - m->gate_w[(size_t)i * d + q];
    s->sigma = ms_malloc((size_t)rows * sizeof(double));
    jacobi_singular_values(M, rows, d, s->sigma);
    free(M);
    s->sigma_max = s->sigma[0];
    s->sigma_min = s->sigma[rows - 1];
    double tol = s->sigma_max * (rows > d ? rows : d) * FLT_EPSILON;
    s->rank = 0;
    for (int i = 0; i < rows; i++) s->rank += s->sigma[i] > tol;
}

/* The top-k conditions of the theory (k >= 2, n - 1 <= d, full-rank gate
 * differences), or that dense routing is inside it. */
static void ckpt_topk_findings(const moe_model *m, diag_ckpt *s, const char *W, const char *of, dg_list *out) {
    const moe_config *c = &m->cfg;
    int n = c->n;
    if (s->topk) {
        if (c->k < 2)
            dg_add(out, DG_WARN, "top1", W, c->k,
                   "top-1 routing%s is outside the theory: positive scaling of the gate scores "
                   "is an extra symmetry, so the expert order may not be identifiable",
                   of);
        else
            dg_add(out, DG_OK, "topk_k", W, c->k, "top-%d routing%s: k >= 2 as the theory needs",
                   c->k, of);
        if (n - 1 > c->d)
            dg_add(out, DG_WARN, "topk_n_d", W, n - 1,
                   "n - 1 = %d > d = %d%s%s%s: the %d consecutive gate differences cannot be "
                   "linearly independent, outside the top-k theory",
                   n - 1, c->d, W[0] ? " (" : "", W, W[0] ? ")" : "", n - 1);
        else
            dg_add(out, DG_OK, "topk_n_d", W, n - 1,
                   "n - 1 = %d <= d = %d%s%s%s, as the top-k theory needs", n - 1, c->d,
                   W[0] ? " (" : "", W, W[0] ? ")" : "");
        if (n >= 2) {
            ckpt_topk_rank(m, s);
            double rel = s->sigma_max > 0 ? s->sigma_min / s->sigma_max : 0;
            if (s->rank < n - 1)
                dg_add(out, DG_WARN, "topk_rank", W, s->sigma_min,
                       "consecutive gate differences W_{i-1} - W_i%s have rank %d < n - 1 = %d "
                       "(smallest singular value %.3g, %.3g of the largest; own Jacobi SVD): "
                       "outside the top-k theory",
                       of, s->rank, n - 1, s->sigma_min, rel);
            else
                dg_add(out, DG_OK, "topk_rank", W, s->sigma_min,
                       "consecutive gate differences W_{i-1} - W_i%s have full rank %d "
                       "(smallest singular value %.3g, %.3g of the largest; own Jacobi SVD)",
                       of, s->rank, s->sigma_min, rel);
        }
    } else {
        dg_add(out, DG_OK, "router", W, NAN,
               "dense softmax routing%s: inside the theory (the top-k conditions do not apply)",
               of);
    }
}

/* Routing load on the evaluation set, and the experts it never routes to. */
static void ckpt_routing_findings(const moe_model *m, const evalset *E, diag_ckpt *s, const char *W,
                                  const char *of, dg_list *out) {
    const moe_config *c = &m->cfg;
    int n = c->n;
    if (E && E->N > 0) {
        s->has_routing = 1;
        s->N = E->N;
        s->load_mean = ms_malloc((size_t)n * sizeof(double));
        s->load_frac = ms_malloc((size_t)n * sizeof(double));
        routing_load(m, E, s->load_mean, s->load_frac);
        char topname[32];
        if (s->topk) snprintf(topname, sizeof topname, "top-%d", c->k);
        else snprintf(topname, sizeof topname, "top-1 (argmax)");
        char lm[160] = "", lf[160] = "";
        size_t um = 0, uf = 0;
        double fmin = INFINITY;
        for (int i = 0; i < n; i++) {
            if (um + 8 < sizeof lm)
                um += (size_t)snprintf(lm + um, sizeof lm - um, " %.3f", s->load_mean[i]);
            if (uf + 8 < sizeof lf)
                uf += (size_t)snprintf(lf + uf, sizeof lf - uf, " %.3f", s->load_frac[i]);
            if (s->load_frac[i] < fmin) fmin = s->load_frac[i];
        }
        dg_add(out, DG_INFO, "routing", W, fmin,
               "routing load%s on %d %s: mean gate weight%s; %s share%s", of, E->N,
               E->row_unit ? E->row_unit : "samples", lm,
               topname, lf);
        int ndead = 0;
        for (int i = 0; i < n; i++) {
            int dead = s->topk ? s->load_frac[i] == 0 : s->load_mean[i] < 0.01 / n;
            if (!dead) continue;
            ndead++;
            if (s->topk)
                dg_add(out, DG_WARN, "dead_expert", W, s->load_frac[i],
                       "expert %d%s is never routed (in the top-%d for 0 of %d %s): dead, "
                       "its parameters do not change the output and its slot in any order is "
                       "arbitrary",
                       i, of, c->k, E->N, E->row_unit ? E->row_unit : "samples");
            else
                dg_add(out, DG_WARN, "dead_expert", W, s->load_mean[i],
                       "expert %d%s is practically never used (mean gate weight %.3g < 0.01/n): "
                       "dead, its slot in any order is arbitrary",
                       i, of, s->load_mean[i]);
        }
        if (!ndead)
            dg_add(out, DG_OK, "dead_expert", W, fmin, "every expert%s is routed to (lowest %s "
                   "share %.3g)", of, topname, fmin);
    }
}

int diag_checkpoint(const moe_model *m, const evalset *E, const char *who, diag_ckpt *s,
                    dg_list *out, ms_err *err) {
    memset(s, 0, sizeof *s);
    const moe_config *c = &m->cfg;
    int n = c->n;
    s->n = n, s->d = c->d, s->h = c->h, s->k = c->k, s->topk = c->router == ROUTER_TOPK;
    s->expert_min = s->output_min = s->gate_row_min = s->gate_diff_min = NAN;
    s->expert_min_rel = s->output_min_rel = s->gate_row_min_rel = s->gate_diff_min_rel = NAN;
    s->sigma_min = s->sigma_max = NAN;
    if (E && E->d != c->d)
        return ms_fail(err, "%s: inputs have width %d but %s has d = %d",
                       E->path ? E->path : "evaluation set", E->d,
                       m->path ? m->path : "the layer", c->d);
    char of[16];
    of_who(who, of, sizeof of);
    const char *W = who && who[0] ? who : "";

    // 1. experts pairwise distinct (parameters, up to hidden permutations)
    if (n >= 2) {
        if (ckpt_expert_distances(m, s, err)) return -1;
        int i = s->expert_pair[0], j = s->expert_pair[1];
        if (s->expert_min_rel < DG_REL_TINY)
            dg_add(out, DG_WARN, "experts_distinct", W, s->expert_min,
                   "experts %d and %d%s are nearly identical (distance %.3g, %.3g %s): their "
                   "order cannot be identified",
                   i, j, of, s->expert_min, s->expert_min_rel,
                   s->expert_gram ? "of the mean Gram distance"
                                  : "of the expert norm, even after matching hidden units");
        else if (s->expert_gram)
            dg_add(out, DG_OK, "experts_distinct", W, s->expert_min,
                   "experts%s are pairwise distinct: the closest pair, %d and %d, has Gram "
                   "distance %.3g (%.3g of the mean; n = %d, h = %d: Gram matrices instead of "
                   "weight matching every pair)",
                   of, i, j, s->expert_min, s->expert_min_rel, c->n, c->h);
        else
            dg_add(out, DG_OK, "experts_distinct", W, s->expert_min,
                   "experts%s are pairwise distinct: the closest pair, %d and %d, is %.3g apart "
                   "(%.3g of the expert norm) after matching hidden units",
                   of, i, j, s->expert_min, s->expert_min_rel);
    }
    // 2. expert outputs on the evaluation inputs (collapsed experts)
    if (E && n >= 2) {
        if (ckpt_output_distances(m, E, s)) return ms_fail(err, "cancelled");
        int i = s->output_pair[0], j = s->output_pair[1];
        if (s->output_min_rel < DG_REL_TINY)
            dg_add(out, DG_WARN, "outputs_distinct", W, s->output_min,
                   "experts %d and %d%s give nearly the same outputs on the %d evaluation "
                   "inputs (RMS difference %.3g, %.3g of the output RMS): collapsed, their order "
                   "cannot be identified",
                   i, j, of, s->nsamples, s->output_min, s->output_min_rel);
        else
            dg_add(out, DG_OK, "outputs_distinct", W, s->output_min,
                   "expert outputs%s differ on the evaluation inputs: the closest pair, %d and "
                   "%d, differs by %.3g RMS (%.3g of the output RMS)",
                   of, i, j, s->output_min, s->output_min_rel);
    }
    // 3./4. gate rows and gate differences
    if (n >= 2) {
        if (ckpt_gate(m, s)) return ms_fail(err, "cancelled");
        int i = s->gate_row_pair[0], j = s->gate_row_pair[1];
        if (s->gate_row_min_rel < DG_REL_TINY)
            dg_add(out, DG_WARN, "gate_rows_distinct", W, s->gate_row_min,
                   "gate rows %d and %d%s are nearly equal (distance %.3g, %.3g of the gate "
                   "scale): the gate cannot tell experts %d and %d apart",
                   i, j, of, s->gate_row_min, s->gate_row_min_rel, i, j);
        else
            dg_add(out, DG_OK, "gate_rows_distinct", W, s->gate_row_min,
                   "gate rows%s are distinct: the closest, %d and %d, are %.3g apart (%.3g of "
                   "the gate scale)",
                   of, i, j, s->gate_row_min, s->gate_row_min_rel);
        const int *g = s->gate_diff_pairs;
        if (s->gate_diff_min_rel < DG_REL_TINY)
            dg_add(out, DG_WARN, "gate_diffs_distinct", W, s->gate_diff_min,
                   "gate differences%s are not pairwise distinct: W%d - W%d and W%d - W%d are "
                   "%.3g apart (%.3g of the gate scale): outside the theorems' conditions",
                   of, g[0], g[1], g[2], g[3], s->gate_diff_min, s->gate_diff_min_rel);
        else
            dg_add(out, DG_OK, "gate_diffs_distinct", W, s->gate_diff_min,
                   "gate differences W_i - W_j%s are pairwise distinct: the closest two, W%d - "
                   "W%d and W%d - W%d, are %.3g apart (%.3g of the gate scale)%s",
                   of, g[0], g[1], g[2], g[3], s->gate_diff_min, s->gate_diff_min_rel,
                   s->gate_diff_exhaustive ? "" : " or less (the search was cut short)");
    }
    // 5. top-k conditions
    ckpt_topk_findings(m, s, W, of, out);
    // 6. routing load on the evaluation set
    ckpt_routing_findings(m, E, s, W, of, out); /* only with an evaluation set */
    return 0;
}

void diag_info_print(FILE *fp, const moe_model *m, cJSON *json) {
    dg_list l = {0};
    diag_ckpt s;
    ms_err err;
    fprintf(fp, "genericity  (the theorems' conditions for this checkpoint)\n");
    if (diag_checkpoint(m, NULL, "", &s, &l, &err)) {
        fprintf(fp, "  cannot compute the diagnostics: %s\n", err.msg);
    } else {
        dg_print(fp, &l, NULL);
        int nw = dg_count(&l, DG_WARN);
        if (nw) fprintf(fp, "  %d condition%s flagged\n", nw, nw == 1 ? "" : "s");
        else fprintf(fp, "  every condition holds\n");
        if (json) {
            cJSON *g = cJSON_AddObjectToObject(json, "genericity");
            cJSON_AddItemToObject(g, "findings", dg_list_json(&l));
            cJSON_AddNumberToObject(g, "flags", nw);
            cJSON_AddItemToObject(g, "numbers", json_ckpt(&s));
        }
    }
    diag_ckpt_free(&s);
    dg_list_free(&l);
}

/* ---- a pair ---- */

void diag_opts_default(diag_opts *o) {
    memset(o, 0, sizeof *o);
    o->method = COST_EXPERT;
    o->center = 1;
    o->landscape = -1;
    o->T = 25;
}

void diag_report_free(diag_report *r) {
    diag_ckpt_free(&r->a);
    diag_ckpt_free(&r->b);
    for (int m = 0; m < COST_NMETHODS; m++) {
        free(r->order[m]);
        free(r->second_order[m]);
    }
    free(r->slot_resid);
    free(r->slot_rel);
    free(r->cost_expert);
    free(r->best_order);
    dg_list_free(&r->findings);
    memset(r, 0, sizeof *r);
}

/* Rank of the chosen order among all orders, from a finished landscape. */
static void pair_from_landscape(diag_report *r, const landscape *L, cost_method method) {
    int n = r->n;
    r->have_landscape = 1;
    r->rank = L->rank[method];
    r->tied = L->tied[method];
    r->rank_auc = L->rank_auc[method];
    r->norders = L->norders;
    r->exhaustive = L->exhaustive;
    r->barrier_chosen = L->methods[method].barrier;
    cost_method other = method == COST_GATE ? COST_EXPERT : COST_GATE;
    r->rank_other = L->rank[other];
    r->barrier_other = L->methods[other].barrier;
    r->best_order = ms_malloc((size_t)n * sizeof(int));
    const ls_row *best = &L->rows[L->best];
    ls_order_get(L->orders, n, best->id, r->best_order);
    r->barrier_best = best->barrier;
    r->barrier_worst = L->rows[L->worst].barrier;
    // barriers closer than float noise of the loss are ties, not a worse order
    double scale = fmax(1.0, fmax(fabs(L->loss_a), fabs(L->loss_b)));
    r->barrier_tie = r->barrier_chosen - r->barrier_best <= 1e-6 * scale;
    // the landscape's own chosen order (it solved the same assignment)
    memcpy(r->order[method], L->methods[method].order, (size_t)n * sizeof(int));
}

/* B made by `scramble` from A: say whether the chosen order undoes it. */
static void diag_scramble_record(const moe_model *A, const moe_model *B, const diag_report *r,
                                 dg_list *out) {
    char msg[320];
    int k = moe_scramble_check(A, B, r->order[r->method], msg, sizeof msg);
    if (k) dg_add(out, k == 1 ? DG_OK : DG_WARN, "scramble_record", "A,B", NAN, "%s", msg);
}

/* Are the heads the same (a frozen backbone)? */
static void pair_heads(const moe_model *A, const moe_model *B, diag_report *r, dg_list *out) {
    r->heads_equal = moe_heads_equal(A, B);
    if (!A->cfg.has_head)
        dg_add(out, DG_OK, "heads", "A,B", 1, "no head: the layer-output loss is used");
    else if (r->heads_equal)
        dg_add(out, DG_OK, "heads", "A,B", 1, "the heads of A and B are identical (frozen backbone)");
    else
        dg_add(out, DG_WARN, "heads", "A,B", 0,
               "the heads of A and B differ: the backbone was not frozen, so the head is "
               "interpolated too and a barrier mixes both effects");

}

/* Each method's assignment, its second-best and the margin between them (the
 * data-driven methods on E's inputs; without E their orders stay NULL). */
static int pair_margins(const moe_model *A, const moe_model *B, const evalset *E, const diag_opts *o,
                        diag_report *r, dg_list *out, ms_err *err) {
    int n = A->cfg.n;
    double *C = ms_malloc((size_t)n * n * sizeof(double)); // (n,n)
    expert_source sa = moe_mapped_source(A), sb = moe_mapped_source(B); // mapped: read one at a time
    cost_input in = {.A = A, .B = B, .sa = &sa, .sb = &sb, .center = o->center, .X = E ? E->inputs : NULL, .N = E ? E->N : 0,
                     .d = E ? E->d : 0};
    for (int m = 0; m < COST_NMETHODS; m++) {
        r->total[m] = r->second[m] = r->margin[m] = r->margin_rel[m] = r->cost_mean[m] = NAN;
        if (!cost_method_available((cost_method)m, E != NULL)) continue;
        r->order[m] = ms_malloc((size_t)n * sizeof(int));
        r->second_order[m] = ms_malloc((size_t)n * sizeof(int));
        int known = m == COST_EXPERT && o->cost_expert; // the caller's, the same numbers
        if (known) memcpy(C, o->cost_expert, (size_t)n * n * sizeof(double));
        if ((!known && cost_matrix_in((cost_method)m, &in, C, err)) ||
            align_order(&A->cfg, C, r->order[m], &r->total[m], err)) {
            free(C);
            return ms_prefix(err, "%s cost", cost_method_name((cost_method)m));
        }
        double mean = 0;
        for (int q = 0; q < n * n; q++) mean += C[q] / ((double)n * n);
        r->cost_mean[m] = mean;
        if (m == COST_EXPERT) { // the slots' measure when weight matching is too slow (pair_slots)
            r->cost_expert = ms_malloc((size_t)n * n * sizeof(double));
            memcpy(r->cost_expert, C, (size_t)n * n * sizeof(double));
        }
        char ord[200];
        moe_order_format(ord, sizeof ord, r->order[m], n);
        const char *mname = cost_method_name((cost_method)m);
        char code[32];
        snprintf(code, sizeof code, "margin_%s", mname);
        if (n < 2) {
            for (int i = 0; i < n; i++) r->second_order[m][i] = r->order[m][i];
            continue;
        }
        if (align_second_best(&A->cfg, C, r->order[m], r->second_order[m], &r->second[m], err)) {
            free(C);
            return ms_prefix(err, "%s cost: second-best assignment", mname);
        }
        r->margin[m] = r->second[m] - r->total[m];
        r->margin_rel[m] = mean > 0 ? r->margin[m] / mean : 0;
        char ord2[200], slots[200];
        const char *grp = moe_groups_active(&A->cfg) ? " group-preserving" : "";
        moe_order_format(ord2, sizeof ord2, r->second_order[m], n);
        fmt_diff_slots(slots, sizeof slots, r->order[m], r->second_order[m], n);
        if (r->margin_rel[m] < DG_MARGIN_TINY)
            dg_add(out, DG_WARN, code, "A,B", r->margin[m],
                   "%s cost: the order %s (total %.4g) is ambiguous: the best different%s order "
                   "%s costs only %.3g more (%.2g%% of the mean cost; slots %s)",
                   mname, ord, r->total[m], grp, ord2, r->margin[m], 100 * r->margin_rel[m], slots);
        else
            dg_add(out, DG_OK, code, "A,B", r->margin[m],
                   "%s cost: order %s (total %.4g) wins by a margin of %.3g (%.3g%% of the mean "
                   "cost) over the next%s order %s",
                   mname, ord, r->total[m], r->margin[m], 100 * r->margin_rel[m], grp, ord2);
    }
    free(C);
    return 0;
}

/* Do the gate and expert costs choose the same order? */
static void pair_methods(diag_report *r, dg_list *out) {
    int n = r->n;
    char og[200], oe[200], slots[200];
    moe_order_format(og, sizeof og, r->order[COST_GATE], n);
    moe_order_format(oe, sizeof oe, r->order[COST_EXPERT], n);
    int nd = fmt_diff_slots(slots, sizeof slots, r->order[COST_GATE], r->order[COST_EXPERT], n);
    r->methods_agree = nd == 0;
    if (nd == 0)
        dg_add(out, DG_OK, "methods_agree", "A,B", 0,
               "the gate and expert costs choose the same order %s", og);
    else
        dg_add(out, DG_WARN, "methods_agree", "A,B", nd,
               "the gate and expert costs disagree: gate %s, expert %s (%d slot%s differ: "
               "%s)",
               og, oe, nd, nd == 1 ? "" : "s", slots);
}

/* the methods whose order ranks first on L (ties at tau: rank.h), "gate, router" */
static int best_methods(const landscape *L, char *buf, size_t cap) {
    int k = 0;
    size_t len = 0;
    buf[0] = 0;
    for (int m = 0; m < COST_NMETHODS; m++)
        if (L->rank[m] == 1 && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", k++ ? ", " : "", cost_method_name((cost_method)m));
    return k;
}

/* What it says when the data-free costs disagree, from which methods find the best
 * order: activation matches experts by what they compute on the data, expert by
 * their weights, gate and router by how tokens are routed to them. */
static const char *methods_reading(const landscape *L) {
    int g = L->rank[COST_GATE] == 1, e = L->rank[COST_EXPERT] == 1;
    int a = L->rank[COST_ACTIVATION] == 1, ro = L->rank[COST_ROUTER] == 1;
    if (!e && a)
        return "the experts' outputs on the data match one to one where their weights look unlike: the "
               "expert cost is fooled";
    if (!e && !a && (g || ro))
        return "no one-to-one match of the experts' outputs finds it, the routing does: the seeds split "
               "the function among their experts differently";
    if (e && !g && !ro)
        return "the experts' weights correspond where the gate rows do not";
    return "";
}

/* Which of all the methods finds the best order (the landscape ranks each one's),
 * said when the data-free costs disagree, with what that says about A and B. */
static void pair_methods_ranked(const diag_report *r, const landscape *L, dg_list *out) {
    char list[600], best[160];
    size_t len = 0;
    for (int m = 0; m < COST_NMETHODS && len < sizeof list; m++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s rank %d (barrier %.4g)", m ? ", " : "",
                                cost_method_name((cost_method)m), L->rank[m], L->methods[m].barrier);
    int k = best_methods(L, best, sizeof best);
    dg_add(out, DG_INFO, "methods_ranked", "A,B", (double)k, "each method's order among the %ld%s orders: %s",
           L->norders, L->exhaustive ? "" : " sampled", list);
    if (r->methods_agree) return;
    const char *why = methods_reading(L);
    if (k == 0)
        dg_add(out, DG_INFO, "best_method", "A,B", 0, "the gate and expert costs disagree and no method's order "
               "is the best (best barrier %.4g): every method misses it", L->best_barrier);
    else
        dg_add(out, DG_INFO, "best_method", "A,B", (double)k, "the gate and expert costs disagree; the best "
               "order is found by %s (--method %.*s)%s%s", best, (int)strcspn(best, ","), best,
               why[0] ? ": " : "", why);
}

/* Residuals as large as the experts themselves in most slots: weight
 * matching found nothing to match, so B's experts are not A's experts in
 * another basis (two independently trained seeds give this: about 1x and
 * more, against near 0 for a scrambled copy), and no expert order can make
 * the pair correspond as weights. Whether the order still matters for the
 * barrier is the landscape's to say: with one, the verdict follows the spread
 * of its barriers (within DG_SPREAD_LOW of the worst: the order hardly
 * matters; else it does, and the residuals are only a note); without one, it
 * says the landscape would tell. */
static void pair_unrelated(const diag_report *r, int n, const char *mname, dg_list *out) {
    double *tmp = ms_malloc((size_t)n * sizeof(double));
    memcpy(tmp, r->slot_rel, (size_t)n * sizeof(double));
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
            double x = tmp[j];
            tmp[j] = tmp[j - 1];
            tmp[j - 1] = x;
        }
    double med = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    free(tmp);
    if (med < DG_REL_UNRELATED) return;
    char how[200]; // the slots' measure (pair_slots): 1x means as far apart as any two experts
    if (r->slot_gram)
        snprintf(how, sizeof how, "the median slot of the %s order has %.2gx the mean expert (Gram) cost of "
                 "all pairs", mname, med);
    else
        snprintf(how, sizeof how, "after weight matching the median slot of the %s order is still %.2gx the "
                 "experts' own norm", mname, med);
    if (!r->have_landscape) {
        dg_add(out, DG_WARN, "experts_unrelated", "A,B", med,
               "the experts do not correspond as weights: %s (a scrambled copy gives 0), so no "
               "expert order makes B's experts A's; whether the order still changes the barrier, "
               "the landscape says (diagnose --landscape)",
               how);
        return;
    }
    double lo = r->barrier_best, hi = r->barrier_worst, spread = hi - lo;
    const char *sampled = r->exhaustive ? "" : " sampled";
    if (spread <= DG_SPREAD_LOW * hi || spread <= 0)
        dg_add(out, DG_WARN, "experts_unrelated", "A,B", med,
               "the experts do not correspond: %s (a scrambled copy gives 0), and the order can "
               "hardly change the barrier: the %ld%s orders' barriers run from %.4g to %.4g (a spread "
               "of %.3g%% of the worst)",
               how, r->norders, sampled, lo, hi, hi > 0 ? 100 * spread / hi : 0.0);
    else
        dg_add(out, DG_INFO, "experts_unrelated", "A,B", med,
               "the experts differ as weights (%s; a scrambled copy gives 0), yet the order "
               "matters: the %ld%s orders' barriers run from %.4g (best) to %.4g (worst), the chosen "
               "order's is %.4g",
               how, r->norders, sampled, lo, hi, r->barrier_chosen);
}

/* Slot i's expert cost (a Gram distance, free of the hidden order), relative to its
 * mean over all pairs: for h > DG_WM_MAX_H, where n assignments of size h take
 * seconds (corresponding experts give ~0, unrelated ones ~1, as the residuals). */
static void slots_gram(diag_report *r, const int *ord) {
    int n = r->n;
    double mean = r->cost_mean[COST_EXPERT];
    for (int i = 0; i < n; i++) {
        r->slot_resid[i] = r->cost_expert[(size_t)i * n + ord[i]];
        r->slot_rel[i] = mean > 0 ? r->slot_resid[i] / mean : 0;
    }
}

/* Per-slot weight-matching residuals of the chosen order, and the worst slot. */
static int pair_slots(const moe_model *A, const moe_model *B, const diag_opts *o, diag_report *r,
                      dg_list *out, ms_err *err) {
    int n = r->n;
    const moe_config *c = &A->cfg;
    const int *ord = r->order[o->method];
    r->slot_resid = ms_malloc((size_t)n * sizeof(double));
    r->slot_rel = ms_malloc((size_t)n * sizeof(double));
    r->slot_gram = c->h > DG_WM_MAX_H && r->cost_expert;
    if (r->slot_gram) slots_gram(r, ord);
    int *P = ms_malloc((size_t)(r->slot_gram ? 1 : c->h) * sizeof(int));
    double *S = r->slot_gram ? NULL : ms_malloc((size_t)c->h * c->h * sizeof(double)); // (h,h)
    int rc = 0;
    dg_pair_buf pb;
    pbuf_init(&pb, c);
    for (int i = 0; i < n && !rc && !r->slot_gram; i++) {
        const moe_expert *ea = pbuf_get(&pb, A, i, 0), *eb = pbuf_get(&pb, B, ord[i], 1);
        if (progress_cancelled()) { // a listener's cancel: the explorer stopping
            rc = ms_fail(err, "cancelled");
            break;
        }
        if (expert_wm_dist(ea, eb, c, P, S, &r->slot_resid[i], err)) {
            rc = ms_prefix(err, "slot %d", i);
            break;
        }
        double sc = sqrt(0.5 * (expert_sqnorm(ea, c) + expert_sqnorm(eb, c)));
        r->slot_rel[i] = sc > 0 ? r->slot_resid[i] / sc : 0;
    }
    free(pb.mem);
    free(P);
    free(S);
    if (rc) return -1;
    int worst = 0;
    for (int i = 1; i < n; i++)
        if (r->slot_rel[i] > r->slot_rel[worst]) worst = i;
    r->worst_slot = worst;
    // median of the other slots
    double med = 0;
    if (n > 1) {
        double *tmp = ms_malloc((size_t)n * sizeof(double));
        int m2 = 0;
        for (int i = 0; i < n; i++)
            if (i != worst) tmp[m2++] = r->slot_rel[i];
        for (int i = 1; i < m2; i++)
            for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) {
                double x = tmp[j];
                tmp[j] = tmp[j - 1];
                tmp[j - 1] = x;
            }
        med = m2 % 2 ? tmp[m2 / 2] : 0.5 * (tmp[m2 / 2 - 1] + tmp[m2 / 2]);
        free(tmp);
    }
    char list[240] = "";
    size_t used = 0;
    for (int i = 0; i < n && used + 10 < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, " %.3g", r->slot_rel[i]);
    const char *mname = cost_method_name(o->method);
    if (r->slot_gram)
        dg_add(out, DG_INFO, "slot_residuals", "A,B", r->slot_rel[worst],
               "expert (Gram) cost of each slot of the %s order, relative to its mean over all pairs "
               "(h = %d: weight matching each slot would take seconds):%s",
               mname, c->h, list);
    else
        dg_add(out, DG_INFO, "slot_residuals", "A,B", r->slot_rel[worst],
               "weight-matching residual of each slot of the %s order (relative to the "
               "experts' norm):%s",
               mname, list);
    int stands_out = n > 2 && r->slot_rel[worst] > 3 * med && r->slot_rel[worst] > 0.05;
    char vs[64];
    if (med > 0) snprintf(vs, sizeof vs, "%.2gx the median of the other slots", r->slot_rel[worst] / med);
    else snprintf(vs, sizeof vs, "the other slots match exactly");
    dg_add(out, stands_out ? DG_WARN : DG_INFO, "worst_slot", "A,B", r->slot_resid[worst],
           "the worst-matched slot is %d (A's expert %d with B's expert %d): %s %.3g (%.3g relative, %s)%s",
           worst, worst, ord[worst], r->slot_gram ? "expert (Gram) cost" : "residual after weight matching",
           r->slot_resid[worst], r->slot_rel[worst], vs,
           stands_out ? ": this pair probably does not correspond" : "");
    pair_unrelated(r, n, mname, out);
    return 0;
}

/* The chosen cost's order is not the best: when the other cost's order ranks better,
 * name it, say what to run and, for dense routing, why the costs can part. */
static void other_method_advice(const moe_config *c, const diag_opts *o, const diag_report *r,
                                dg_list *out) {
    if (r->rank_other < 1 || r->rank_other >= r->rank) return;
    const char *other = cost_method_name(o->method == COST_GATE ? COST_EXPERT : COST_GATE);
    // why the costs part is said by best_method, from what the data-driven methods find
    dg_add(out, DG_WARN, "better_method", "A,B", (double)r->rank_other,
           "the %s cost's order ranks %ld of %ld (barrier %.4g against %.4g): align with --method %s",
           other, r->rank_other, r->norders, r->barrier_other, r->barrier_chosen, other);
}

/* Is the chosen order the best (from the landscape, when there is one)? */
static void pair_best_order(const moe_config *c, const evalset *E, const diag_opts *o,
                            diag_report *r, dg_list *out) {
    int n = r->n, grp = moe_groups_active(c);
    if (r->have_landscape) {
        char oc[200], ob[200], slots[200];
        moe_order_format(oc, sizeof oc, r->order[o->method], n);
        moe_order_format(ob, sizeof ob, r->best_order, n);
        fmt_diff_slots(slots, sizeof slots, r->order[o->method], r->best_order, n);
        const char *mname = cost_method_name(o->method);
        if (r->rank == 1 && r->tied > 1)
            dg_add(out, DG_OK, "best_order", "A,B", 1,
                   "the %s-cost order %s is among the best of %ld%s orders (barrier %.4g; rank 1, "
                   "tied: %ld within float noise; by AUC %ld)", mname, oc, r->norders,
                   r->exhaustive ? "" : " sampled", r->barrier_chosen, r->tied, r->rank_auc);
        else if (r->rank == 1)
            dg_add(out, DG_OK, "best_order", "A,B", 1,
                   "the %s-cost order %s is the best of %ld%s orders (barrier %.4g)", mname, oc,
                   r->norders, r->exhaustive ? "" : " sampled", r->barrier_chosen);
        else if (r->barrier_tie)
            dg_add(out, DG_OK, "best_order", "A,B", (double)r->rank,
                   "the %s-cost order %s ties with the best of %ld%s orders: barrier %.4g "
                   "against %.4g, the same within float precision (nominal rank %ld)",
                   mname, oc, r->norders, r->exhaustive ? "" : " sampled", r->barrier_chosen,
                   r->barrier_best, r->rank);
        else {
            /* a thin margin is what lets a poor order win: say so beside the rank */
            char why[96] = "";
            double mr = r->margin_rel[o->method];
            if (isfinite(mr) && mr < DG_MARGIN_LOW)
                snprintf(why, sizeof why, "; the cost chose it by a margin of only %.3g%%", 100 * mr);
            dg_add(out, DG_WARN, "best_order", "A,B", (double)r->rank,
                   "the %s-cost order %s ranks %ld of %ld%s orders: barrier %.4g against %.4g for "
                   "the best order %s (slots %s differ)%s",
                   mname, oc, r->rank, r->norders, r->exhaustive ? "" : " sampled",
                   r->barrier_chosen, r->barrier_best, ob, slots, why);
            other_method_advice(c, o, r, out);
        }
    } else if (!E) {
        dg_add(out, DG_INFO, "best_order", "A,B", NAN,
               "whether the chosen order is the best needs an evaluation set");
        out->items[out->n - 1].next = DG_NEXT_EVAL;
    } else {
        char nf[48];
        ls_factorial_format(nf, sizeof nf, n);
        if (grp > 1) { // (m!)^g g! group-preserving orders
            double lg = (grp * lgamma(n / grp + 1.0) + lgamma(grp + 1.0)) / log(10.0);
            if (lg < 15) snprintf(nf, sizeof nf, "%.0f", ls_wreath_count(grp, n / grp));
            else snprintf(nf, sizeof nf, "about 10^%.0f", floor(lg));
        }
        dg_add(out, DG_INFO, "best_order", "A,B", NAN,
               "landscape skipped (n = %d: %s%s orders): the rank of the chosen order is not known",
               n, nf, grp > 1 ? " group-preserving" : "");
        out->items[out->n - 1].next = DG_NEXT_LANDSCAPE;
    }
}

int diag_pair(const moe_model *A, const moe_model *B, const evalset *E, const diag_opts *o,
              diag_report *r, ms_err *err) {
    memset(r, 0, sizeof *r);
    diag_opts dflt;
    if (!o) {
        diag_opts_default(&dflt);
        o = &dflt;
    }
    if (moe_check_compatible(A, B, err)) return -1;
    int n = A->cfg.n;
    r->n = n;
    r->method = o->method;
    dg_list *out = &r->findings;
    if (diag_checkpoint(A, E, "A", &r->a, out, err)) return -1;
    if (diag_checkpoint(B, E, "B", &r->b, out, err)) return -1;

    pair_heads(A, B, r, out);
    if (!cost_method_available(o->method, E != NULL))
        return ms_fail(err, "the %s method needs an evaluation set", cost_method_name(o->method));
    if (pair_margins(A, B, E, o, r, out, err)) return -1;
    pair_methods(r, out);

    // landscape: is the chosen order the best?
    const landscape *L = o->L;
    landscape own;
    int own_used = 0;
    int want = o->landscape, exh;
    ls_opts lo;
    ls_opts_default(&lo);
    // by default only when small: n! orders, or a group-limited router's group-preserving ones
    if (want < 0) want = ls_orders_planned(&A->cfg, &lo, &exh, NULL) <= 5040 && exh;
    if (!L && want && E) {
        if (o->T >= 2) lo.T = o->T;
        lo.center = o->center;
        lo.progress = o->progress, lo.phase = o->phase, lo.ctx = o->ctx;
        if (landscape_compute(A, B, E, &lo, &own, err)) return ms_prefix(err, "landscape");
        L = &own;
        own_used = 1;
    }
    if (L) pair_from_landscape(r, L, o->method);
    if (L) pair_methods_ranked(r, L, out);

    int rc = pair_slots(A, B, o, r, out, err);
    if (!rc) {
        pair_best_order(&A->cfg, E, o, r, out);
        diag_scramble_record(A, B, r, out);
    }
    if (own_used) landscape_free(&own);
    return rc;
}

int diag_findings(const moe_model *A, const moe_model *B, const evalset *E, const diag_opts *o,
                  dg_list *out, ms_err *err) {
    diag_report r;
    int rc = diag_pair(A, B, E, o, &r, err);
    if (rc == 0) {
        *out = r.findings;
        memset(&r.findings, 0, sizeof r.findings);
    } else {
        memset(out, 0, sizeof *out);
    }
    diag_report_free(&r);
    return rc;
}

/* ---- JSON ---- */

static cJSON *json_num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static cJSON *json_darr(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; v && i < n; i++) cJSON_AddItemToArray(a, json_num(v[i]));
    return a;
}

static cJSON *json_iarr(const int *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; v && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *json_ckpt(const diag_ckpt *s) {
    cJSON *o = cJSON_CreateObject();
    int n = s->n;
    cJSON *e = cJSON_AddObjectToObject(o, "experts");
    cJSON_AddItemToObject(e, "min", json_num(s->expert_min));
    cJSON_AddItemToObject(e, "min_rel", json_num(s->expert_min_rel));
    cJSON_AddItemToObject(e, "pair", json_iarr(s->expert_pair, 2));
    cJSON_AddItemToObject(e, "rms", json_num(s->expert_rms));
    cJSON_AddStringToObject(e, "metric", s->expert_gram ? "gram" : "weight-matched");
    cJSON_AddItemToObject(e, "dist", json_darr(s->expert_dist, s->expert_dist ? n * n : 0));
    if (s->has_outputs) {
        cJSON *q = cJSON_AddObjectToObject(o, "outputs");
        cJSON_AddNumberToObject(q, "samples", s->nsamples);
        cJSON_AddItemToObject(q, "min", json_num(s->output_min));
        cJSON_AddItemToObject(q, "min_rel", json_num(s->output_min_rel));
        cJSON_AddItemToObject(q, "pair", json_iarr(s->output_pair, 2));
        cJSON_AddItemToObject(q, "rms", json_num(s->output_rms));
        cJSON_AddItemToObject(q, "dist", json_darr(s->output_dist, n * n));
    } else {
        cJSON_AddNullToObject(o, "outputs");
    }
    cJSON *g = cJSON_AddObjectToObject(o, "gate");
    cJSON_AddItemToObject(g, "scale", json_num(s->gate_scale));
    cJSON_AddItemToObject(g, "row_min", json_num(s->gate_row_min));
    cJSON_AddItemToObject(g, "row_min_rel", json_num(s->gate_row_min_rel));
    cJSON_AddItemToObject(g, "row_pair", json_iarr(s->gate_row_pair, 2));
    cJSON_AddItemToObject(g, "diff_min", json_num(s->gate_diff_min));
    cJSON_AddItemToObject(g, "diff_min_rel", json_num(s->gate_diff_min_rel));
    cJSON_AddItemToObject(g, "diff_pairs", json_iarr(s->gate_diff_pairs, 4));
    if (s->topk) {
        cJSON *t = cJSON_AddObjectToObject(o, "topk");
        cJSON_AddNumberToObject(t, "k", s->k);
        cJSON_AddNumberToObject(t, "rank", s->rank);
        cJSON_AddItemToObject(t, "sigma_min", json_num(s->sigma_min));
        cJSON_AddItemToObject(t, "sigma_max", json_num(s->sigma_max));
        cJSON_AddItemToObject(t, "sigma", json_darr(s->sigma, s->nsigma));
        cJSON_AddStringToObject(t, "svd", "one-sided Jacobi (own)");
    } else {
        cJSON_AddNullToObject(o, "topk");
    }
    if (s->has_routing) {
        cJSON *rt = cJSON_AddObjectToObject(o, "routing");
        cJSON_AddNumberToObject(rt, "samples", s->N);
        cJSON_AddItemToObject(rt, "load_mean", json_darr(s->load_mean, n));
        cJSON_AddItemToObject(rt, "load_frac", json_darr(s->load_frac, n));
    } else {
        cJSON_AddNullToObject(o, "routing");
    }
    return o;
}

cJSON *dg_list_json(const dg_list *l) {
    cJSON *fs = cJSON_CreateArray();
    for (int i = 0; i < l->n; i++) {
        const dg_finding *f = &l->items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "severity", dg_severity_name(f->severity));
        cJSON_AddStringToObject(o, "code", f->code);
        cJSON_AddStringToObject(o, "who", f->who);
        cJSON_AddStringToObject(o, "text", f->text);
        if (f->next) cJSON_AddStringToObject(o, "next", f->next == DG_NEXT_EVAL ? "eval" : "landscape");
        cJSON_AddItemToObject(o, "number", json_num(f->number));
        cJSON_AddItemToArray(fs, o);
    }
    return fs;
}


int diag_write_json(const diag_report *r, const char *a_path, const char *b_path,
                    const char *e_path, const char *path, ms_err *err) {
    int n = r->n;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moescope.diagnose/1");
    cJSON_AddStringToObject(root, "a", a_path ? a_path : "");
    cJSON_AddStringToObject(root, "b", b_path ? b_path : "");
    if (e_path) cJSON_AddStringToObject(root, "eval", e_path);
    else cJSON_AddNullToObject(root, "eval");
    cJSON_AddNumberToObject(root, "n", n);
    cJSON_AddItemToObject(root, "findings", dg_list_json(&r->findings));
    cJSON_AddNumberToObject(root, "flags", dg_count(&r->findings, DG_WARN));
    cJSON *ck = cJSON_AddObjectToObject(root, "checkpoints");
    cJSON_AddItemToObject(ck, "A", json_ckpt(&r->a));
    cJSON_AddItemToObject(ck, "B", json_ckpt(&r->b));
    cJSON *p = cJSON_AddObjectToObject(root, "pair");
    cJSON_AddBoolToObject(p, "heads_equal", r->heads_equal);
    cJSON *ms = cJSON_AddObjectToObject(p, "methods");
    for (int m = 0; m < COST_NMETHODS; m++) {
        if (!r->order[m]) { // a data-driven method without an evaluation set
            cJSON_AddNullToObject(ms, cost_method_name((cost_method)m));
            continue;
        }
        cJSON *o = cJSON_AddObjectToObject(ms, cost_method_name((cost_method)m));
        cJSON_AddItemToObject(o, "order", json_iarr(r->order[m], n));
        cJSON_AddItemToObject(o, "total", json_num(r->total[m]));
        cJSON_AddItemToObject(o, "second_order", json_iarr(r->second_order[m], n));
        cJSON_AddItemToObject(o, "second", json_num(r->second[m]));
        cJSON_AddItemToObject(o, "margin", json_num(r->margin[m]));
        cJSON_AddItemToObject(o, "margin_rel", json_num(r->margin_rel[m]));
        cJSON_AddItemToObject(o, "cost_mean", json_num(r->cost_mean[m]));
    }
    cJSON_AddBoolToObject(p, "methods_agree", r->methods_agree);
    cJSON_AddStringToObject(p, "method", cost_method_name(r->method));
    cJSON_AddItemToObject(p, "slot_residual", json_darr(r->slot_resid, n));
    cJSON_AddItemToObject(p, "slot_residual_rel", json_darr(r->slot_rel, n));
    cJSON_AddStringToObject(p, "slot_metric", r->slot_gram ? "gram" : "weight-matched");
    cJSON_AddNumberToObject(p, "worst_slot", r->worst_slot);
    if (r->have_landscape) {
        cJSON *l = cJSON_AddObjectToObject(p, "landscape");
        cJSON_AddNumberToObject(l, "rank", (double)r->rank);
        cJSON_AddNumberToObject(l, "tied", (double)r->tied);
        cJSON_AddNumberToObject(l, "rank_auc", (double)r->rank_auc);
        cJSON_AddNumberToObject(l, "orders", (double)r->norders);
        cJSON_AddBoolToObject(l, "exhaustive", r->exhaustive);
        cJSON_AddItemToObject(l, "barrier", json_num(r->barrier_chosen));
        cJSON_AddItemToObject(l, "best_barrier", json_num(r->barrier_best));
        cJSON_AddItemToObject(l, "worst_barrier", json_num(r->barrier_worst));
        cJSON_AddBoolToObject(l, "tie", r->barrier_tie);
        cJSON_AddItemToObject(l, "best_order", json_iarr(r->best_order, n));
    } else {
        cJSON_AddNullToObject(p, "landscape");
    }
    cJSON_AddItemToObject(root, "provenance", prov_json());
    return json_file_write(root, path, err);
}
