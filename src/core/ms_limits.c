/* ms_limits.c - the derived-memory budget (see ms_limits.h). */
#include "core/ms_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align/cost_matrix.h"
#include "analysis/diagnose.h"
#include "io/family.h"

const char *ms_bytes_str(char *buf, size_t cap, double bytes) {
    static const char *unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) bytes /= 1024, u++;
    if (u == 0) snprintf(buf, cap, "%.0f bytes", bytes);
    else snprintf(buf, cap, "%.1f %s", bytes, unit[u]);
    return buf;
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
    const char *env = getenv("MOESCOPE_MAX_MEMORY");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == 'K' || *end == 'k') v *= 1024.0, end++;
        else if (*end == 'M' || *end == 'm') v *= 1048576.0, end++;
        else if (*end == 'G' || *end == 'g') v *= 1073741824.0, end++;
        if (end != env && (*end == 0 || *end == 'B' || *end == 'b') && v > 0 && v < m) m = v;
    }
    return m;
}

/* The largest derived allocation found so far, and what causes it. */
typedef struct {
    double bytes;
    char why[320];
} need;

static void consider(need *w, double bytes, const char *why) {
    if (bytes <= w->bytes) return;
    w->bytes = bytes;
    snprintf(w->why, sizeof w->why, "%s", why);
}

static double model_bytes(const moe_model *m) { return m ? 4.0 * (double)m->nparams : 0; }

/* A layer read expert by expert (moe_alloc_shell: its routed experts not held):
 * their float32 bytes, which are inputs too though never all in memory. */
static double streamed_bytes(const moe_model *m) {
    if (!m || m->cfg.n <= 0 || !m->experts || m->experts[0].fc1_w) return 0;
    return 4.0 * (double)m->cfg.n * (double)moe_expert_size(&m->cfg);
}

static void model_needs(need *w, const moe_model *m, unsigned uses) {
    const moe_config *c = &m->cfg;
    const char *p = m->path ? m->path : "(model)", *L = m->layer ? m->layer : "moe";
    double n = c->n, h = c->h;
    char why[320];
    if (uses & MS_USE_WM) {
        snprintf(why, sizeof why, "%s: h = %d (tensor '%.100s.experts.0.fc1.weight') needs an "
                 "h x h weight-matching matrix", p, c->h, L);
        consider(w, 8.0 * h * h + 8.0 * h, why);
    }
    if (uses & MS_USE_COST) {
        snprintf(why, sizeof why, "%s: n = %d experts of width d = %d (tensor '%.100s.gate.weight') "
                 "need Gram blocks for the expert cost", p, c->n, c->d, L);
        consider(w, cost_expert_bytes(c, c->n, c->n) + 8.0 * n * n, why);
    }
}

static void eval_needs(need *w, const moe_model *m, const evalset *E, unsigned uses) {
    const moe_config *c = &m->cfg;
    double N = E->N, n = c->n, d = c->d, C = c->has_head ? c->C : 0;
    char why[320];
    if (uses & MS_USE_EVAL) {
        snprintf(why, sizeof why, "%s: N = %d samples (tensor 'inputs') with n = %d experts, "
                 "C = %d outputs and d = %d (from %s) need per-sample scores, logits and outputs",
                 E->path ? E->path : "(eval)", E->N, c->n, c->C, c->d, m->path ? m->path : "?");
        consider(w, 4.0 * N * (2 * n + C + 3 * d), why);
    }
    if (uses & MS_USE_DIAG) {
        double Ns = N < DG_OUTPUT_SAMPLES ? N : DG_OUTPUT_SAMPLES;
        snprintf(why, sizeof why, "%s: every one of n = %d experts' outputs (d = %d) on %.0f "
                 "samples of %s", m->path ? m->path : "?", c->n, c->d, Ns,
                 E->path ? E->path : "(eval)");
        consider(w, 4.0 * n * Ns * d + 4.0 * Ns * c->h * 2, why);
    }
}


/* ---- value ranges: finite inputs whose products overflow float32 ---- */

/* 1 when p[0..k) holds a larger |value| than m had (m then says where) */
static int scan(ms_vmax *m, const float *p, size_t k, const char *file, const char *fmt,
                const char *L, int i) {
    if (!p) return 0;
    double best = 0;
    size_t at = 0;
    for (size_t q = 0; q < k; q++)
        if (fabs(p[q]) > best) best = fabs(p[q]), at = q;
    if (!(best > m->v)) return 0;
    char name[160];
    snprintf(name, sizeof name, fmt, L, i);
    m->v = best;
    m->expert = 0;
    m->at = at;
    snprintf(m->where, sizeof m->where, "%s: tensor '%s' holds values up to %.3g (element %zu)",
             file, name, best, at);
    return 1;
}

static const char *file_of(const moe_model *m) { return m->path ? m->path : "(model)"; }
static const char *layer_of(const moe_model *m) { return m->layer ? m->layer : "moe"; }

/* one part (sfx "fc1.weight") of expert j of kind "experts" or "shared" into acc */
static void scan_part(ms_vmax *acc, const float *p, size_t k, const moe_model *m, const char *kind,
                      int j, const char *sfx) {
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%%s.%s.%%d.%s", kind, sfx);
    if (!scan(acc, p, k, file_of(m), fmt, layer_of(m), j)) return;
    acc->expert = 1, acc->shared = kind[0] == 's', acc->e = j;
    snprintf(acc->sfx, sizeof acc->sfx, "%s", sfx);
}

/* expert j's tensors into the fc1/fc3 and fc2 maxima */
static void scan_expert(ms_vmax *W1, ms_vmax *W2, const moe_model *m, const char *kind, int j,
                        const moe_expert *e) {
    const moe_config *c = &m->cfg;
    size_t hd = (size_t)c->h * c->d;
    scan_part(W1, e->fc1_w, hd, m, kind, j, "fc1.weight");
    scan_part(W1, e->fc1_b, (size_t)c->h, m, kind, j, "fc1.bias");
    scan_part(W1, e->fc3_w, e->fc3_w ? hd : 0, m, kind, j, "fc3.weight");
    scan_part(W1, e->fc3_b, e->fc3_b ? (size_t)c->h : 0, m, kind, j, "fc3.bias");
    scan_part(W2, e->fc2_w, hd, m, kind, j, "fc2.weight");
    scan_part(W2, e->fc2_b, (size_t)c->d, m, kind, j, "fc2.bias");
}

void ms_range_held(ms_range *r, const moe_model *m, const evalset *E) {
    const moe_config *c = &m->cfg;
    const char *f = file_of(m), *L = layer_of(m);
    memset(r, 0, sizeof *r);
    r->X.v = 1;
    scan(&r->G, m->gate_w, (size_t)c->n * c->d, f, "%s.gate.weight", L, 0);
    scan(&r->G, m->gate_b, (size_t)c->n, f, "%s.gate.bias", L, 0);
    for (int i = 0; i < c->n && m->experts; i++) scan_expert(&r->W1, &r->W2, m, "experts", i, &m->experts[i]);
    for (int j = 0; j < c->s; j++) scan_expert(&r->SW1, &r->SW2, m, "shared", j, &m->shared[j]);
    if (c->has_norm) {
        scan(&r->Ng, m->norm_w, (size_t)c->d, f, "head.norm.weight%.0s%.0d", "", 0);
        scan(&r->Nb, m->norm_b, (size_t)c->d, f, "head.norm.bias%.0s%.0d", "", 0);
    }
    if (c->has_head) {
        scan(&r->Hw, m->head_w, (size_t)c->C * c->d, f, "head.out.weight%.0s%.0d", "", 0);
        scan(&r->Hb, m->head_b, (size_t)c->C, f, "head.out.bias%.0s%.0d", "", 0);
    }
    if (E) {
        r->X.v = 0;
        scan(&r->X, E->inputs, (size_t)E->N * E->d, E->path ? E->path : "(eval)", "inputs%.0s%.0d",
             "", 0);
        if (r->X.v < 1) r->X.v = 1;
    }
}

void ms_range_expert(ms_range *r, const moe_model *m, int i, const moe_expert *e) {
    scan_expert(&r->W1, &r->W2, m, "experts", i, e);
}

/* the larger of the routed and shared maxima; the routed one on a tie (it was
 * scanned first when the layer is held whole) */
static ms_vmax larger(const ms_vmax *routed, const ms_vmax *shared) {
    return shared->v > routed->v ? *shared : *routed;
}

/* The magnitudes moescope computes with, bounded from the largest parameters
 * (X: the largest input, 1 without an evaluation set): gate scores
 * d X |G| + |g|; hidden units d X |W1| + |b1| (times the fc3 branch for
 * silu_glu); expert outputs h |H| |W2| + |b2| + X; the head's logits
 * d |Wh| z + |bh| (z: sqrt(d) |gamma| + |beta| after a LayerNorm), all below 1e30 (sums of
 * their squares must fit a double, and sums of them a float); the expert cost's
 * Gram entries (h + 1) |W|^2 below 1e36 (float32 ends at 3.4e38). Otherwise the
 * input whose values are largest is named. */
int ms_range_judge(const ms_range *r, const moe_model *m, ms_err *err) {
    const moe_config *c = &m->cfg;
    ms_vmax W1 = larger(&r->W1, &r->SW1), W2 = larger(&r->W2, &r->SW2), all;
    memset(&all, 0, sizeof all);
    double d = c->d, h = c->h, X = r->X.v;
    double hid = d * X * W1.v + W1.v, hid2 = c->act == ACT_SILU_GLU ? hid * hid : hid;
    double out = h * hid2 * W2.v + W2.v + X;
    // the head: a LayerNorm's outputs are at most sqrt(d) |gamma| + |beta|
    double z = c->has_norm ? sqrt(d) * r->Ng.v + r->Nb.v : out;
    double logit = c->has_head ? d * r->Hw.v * z + r->Hb.v : 0;
    double act = fmax(fmax(d * X * r->G.v + r->G.v, hid2), fmax(out, logit));
    double gram = (h + 1) * fmax(W1.v * W1.v, W2.v * W2.v);
    if (act <= 1e30 && gram <= 1e36) return 0;
    double worst = act > 1e30 ? act : gram, lim = act > 1e30 ? 1e30 : 1e36;
    // blame the largest contributor
    const ms_vmax *cand[8] = {&r->G, &W1, &W2, &r->X, &r->Ng, &r->Nb, &r->Hw, &r->Hb};
    for (int k = 0; k < 8; k++)
        if (cand[k]->where[0] && cand[k]->v > all.v) all = *cand[k];
    // a model family's expert: the file's own tensor (and shard) rather than moescope's name
    char file[400];
    long long at;
    if (all.expert && !family_value_name(m, all.shared, all.e, all.sfx, all.at, file, sizeof file, &at))
        snprintf(all.where, sizeof all.where, "%s holds values up to %.3g (element %lld)", file, all.v, at);
    return ms_fail(err, "%s: with n = %d, d = %d, h = %d the layer's arithmetic would overflow "
                        "float32 (magnitudes up to %.3g; moescope needs them below %.0e)",
                   all.where[0] ? all.where : file_of(m), c->n, c->d, c->h, worst, lim);
}

int ms_range_check(const moe_model *m, const evalset *E, ms_err *err) {
    ms_range r;
    ms_range_held(&r, m, E);
    return ms_range_judge(&r, m, err);
}

int ms_limits_check(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses,
                    ms_err *err) {
    if (ms_range_check(A, E, err) || (B && ms_range_check(B, E, err))) return -1;
    need w = {0, ""};
    model_needs(&w, A, uses);
    if (B) model_needs(&w, B, uses);
    if (E) eval_needs(&w, A, E, uses);
    double input = model_bytes(A) + model_bytes(B);
    if (E) input += 4.0 * (double)E->N * (E->d + (E->targets ? E->C : 1));
    double machine = ms_mem_machine();
    double budget = MS_MEM_RATIO * (input + streamed_bytes(A) + streamed_bytes(B));
    if (budget < MS_MEM_FLOOR) budget = MS_MEM_FLOOR;
    if (budget > machine) budget = machine;
    char nb[32], bb[32], ib[32], fb[32], mb[32];
    if (w.bytes > budget)
        return ms_fail(err, "%s: %s, over the limit of %s here (%g times the %s of parameters and "
                            "samples, at least %s, at most this machine's %s; MOESCOPE_MAX_MEMORY "
                            "lowers it)",
                       w.why, ms_bytes_str(nb, sizeof nb, w.bytes), ms_bytes_str(bb, sizeof bb, budget),
                       MS_MEM_RATIO, ms_bytes_str(ib, sizeof ib, input),
                       ms_bytes_str(fb, sizeof fb, MS_MEM_FLOOR), ms_bytes_str(mb, sizeof mb, machine));
    // the inputs are held too: a real layer is gigabytes, and what it derives comes on top
    if (input + w.bytes > machine)
        return ms_fail(err, "%s: %s, on top of the %s the inputs take as float32: over this "
                            "machine's %s (MOESCOPE_MAX_MEMORY lowers it)",
                       w.bytes > 0 ? w.why : "the inputs alone", ms_bytes_str(nb, sizeof nb, w.bytes),
                       ms_bytes_str(ib, sizeof ib, input), ms_bytes_str(mb, sizeof mb, machine));
    return 0;
}
