/* net_objective.c - the network's held-out loss as the landscape's objective
 * (net_objective.h). */
#include "network/net_objective.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/mem_budget.h"
#include "core/progress.h"
#include "align/cost_data.h"
#include "network/net_budget.h"
#include "model/moe_kernels.h"

/* The other blocks interpolated at (t, var), and the block pointers one
 * evaluation reads: a slot per concurrent caller (the explorer evaluates
 * curves and the landscape on two threads at once). */
typedef struct {
    moe_model *mix;           /* (nmoe), cloned on first use */
    const moe_model **blocks; /* (nmoe) */
    double t;
    int var, busy;
} obj_slot;

#define OBJ_SLOTS 2

struct net_objective {
    const net_model *A, *B;
    const net_evalset *E;
    net_obj_opts o;
    int nmoe;
    net_prefix prefix;     /* the frozen blocks' output (A's backbone, or M's at M_t) */
    moe_model *alt;        /* (3, nmoe) B's blocks aligned per variant (the chosen one's empty, unused);
                              mapped blocks: views of B's weights (align_models_mapped) */
    align_result *alt_res; /* (3, nmoe) the mapped views' permutations (kept while alt is) */
    obj_slot slot[OBJ_SLOTS];
    pthread_mutex_t mu;    /* the slots' busy flags */
    pthread_cond_t cv;
    pthread_mutex_t bb_mu; /* interp_backbone: M and the prefix, one evaluation at a time */
    net_model M;           /* interp_backbone: the backbone at M_t */
    double M_t;
    int ready;             /* net_objective_prepare finished */
    ls_objective view;
    double *seq_ab;        /* (2, N) the end points' per-sequence losses */
    float *inputs;         /* (ninputs, d) the chosen block's first inputs, A's (view.inputs) */
    float *other_inputs;   /* (nmoe, ninputs, d) every block's, when o.other's method reads them */
    char what[128];
    char prefix_what[128]; /* the prefix's phase: NET_PREP_PREFIX and the blocks it runs */
    double align_s, prefix_s, ends_s;
};

static double now_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the blocks of slot s at (t, variant), the chosen one given */
static void slot_blocks(net_objective *no, obj_slot *s, const moe_model *chosen_layer, double t, int variant) {
    if (!s->mix) {
        s->mix = ms_calloc((size_t)no->nmoe, sizeof(moe_model));
        s->blocks = ms_calloc((size_t)no->nmoe, sizeof(moe_model *));
        for (int i = 0; i < no->nmoe; i++)
            if (i != no->o.chosen) moe_clone(&s->mix[i], &no->A->moe[i]);
        s->var = -1;
    }
    if (s->var != variant || s->t != t) {
        for (int i = 0; i < no->nmoe; i++)
            if (i != no->o.chosen) moe_interpolate_routed(&s->mix[i], &no->A->moe[i], &no->alt[variant * no->nmoe + i], t);
        s->t = t, s->var = variant;
    }
    for (int i = 0; i < no->nmoe; i++) s->blocks[i] = i == no->o.chosen ? chosen_layer : &s->mix[i];
}

static obj_slot *slot_take(net_objective *no) {
    pthread_mutex_lock(&no->mu);
    obj_slot *s = NULL;
    while (!s) {
        for (int i = 0; i < OBJ_SLOTS && !s; i++)
            if (!no->slot[i].busy) s = &no->slot[i];
        if (!s) pthread_cond_wait(&no->cv, &no->mu);
    }
    s->busy = 1;
    pthread_mutex_unlock(&no->mu);
    return s;
}

static void slot_give(net_objective *no, obj_slot *s) {
    pthread_mutex_lock(&no->mu);
    s->busy = 0;
    pthread_cond_signal(&no->cv);
    pthread_mutex_unlock(&no->mu);
}

/* the backbone network at t: A's, or (interp_backbone) the interpolation, its
 * prefix recomputed when t moved */
static const net_model *backbone_at(net_objective *no, double t, ms_err *err) {
    if (!no->o.interp_backbone) return no->A;
    if (no->M_t != t) {
        net_backbone_interpolate(&no->M, no->A, no->B, t);
        net_prefix_free(&no->prefix);
        no->M_t = NAN;
        if (net_prefix_compute(&no->M, no->E, &no->o.par, &no->prefix, err)) return NULL;
        no->M_t = t;
    }
    return &no->M;
}

/* each sequence's summed loss (N) into its mean: every sequence has the same
 * number of positions, so the mean of these is the loss */
static void seq_means(double *seq, int N, long positions) {
    for (int i = 0; seq && i < N; i++) seq[i] /= (double)positions / N;
}

/* Reentrant with a frozen backbone (the prefix is read-only; each caller its own
 * slot); with interp_backbone one evaluation at a time (M and its prefix move). */
static int obj_eval(void *ctx, const moe_model *layer, double t, int variant, double *loss,
                    double *acc, double *seq, ms_err *err) {
    net_objective *no = ctx;
    if (!no->ready) return ms_fail(err, "%s: the network is not prepared (net_objective_prepare)", no->A->path);
    if (no->o.interp_backbone) pthread_mutex_lock(&no->bb_mu);
    const net_model *net = backbone_at(no, t, err);
    int rc = -1;
    if (net) {
        obj_slot *s = slot_take(no);
        slot_blocks(no, s, layer, t, variant);
        net_run r = {.moe = s->blocks, .seq_loss = seq};
        net_eval_result res;
        rc = net_evaluate(net, no->E, &no->prefix, &r, &no->o.par, &res, err);
        slot_give(no, s);
        if (!rc) {
            *loss = res.loss;
            *acc = res.accuracy;
            seq_means(seq, no->E->N, res.positions);
            net_eval_result_free(&res);
        }
    }
    if (no->o.interp_backbone) pthread_mutex_unlock(&no->bb_mu);
    return rc;
}

/* B's MoE blocks aligned to A's for each variant: MAIN as o->other, NAIVE
 * identity without weight matching, SKIP identity with it */
static int align_variants(net_objective *no, ms_err *err) {
    for (int v = 0; v < 3; v++)
        for (int i = 0; i < no->nmoe; i++) {
            align_opts ao = no->o.other;
            if (v != LS_VAR_MAIN) {
                ao.order_stage = 0;
                ao.order = NULL;
                ao.wm_stage = v == LS_VAR_SKIP;
            }
            if (no->other_inputs) // a data-driven method: block i's own first inputs under A
                ao.X = no->other_inputs + (size_t)i * no->view.ninputs * no->A->cfg.d, ao.N = no->view.ninputs,
                ao.d = no->A->cfg.d;
            align_result res;
            moe_model *dst = &no->alt[v * no->nmoe + i];
            const moe_model *a = &no->A->moe[i], *b = &no->B->moe[i];
            if (i == no->o.chosen) continue; // the landscape aligns it: its slot stays empty, never read
            // mapped blocks stay where their files keep them: B's aligned as views, each
            // evaluation's interpolation formed per panel (moe_interpolate)
            int mapped = moe_is_mapped(a) && moe_is_mapped(b);
            if ((mapped ? align_models_mapped : align_models)(a, b, &ao, dst, &res, err))
                return ms_prefix(err, "aligning MoE block %d", no->A->cfg.moe_layers[i]);
            if (mapped) no->alt_res[v * no->nmoe + i] = res;
            else align_result_free(&res);
        }
    return 0;
}

/* where A's evaluation keeps MoE blocks' first inputs (rows of them): the chosen
 * block's, the data-driven matching methods' tokens (cost_data.h), and the other
 * blocks' too when their alignment reads them */
static long inputs_wanted(net_objective *no, float **in) {
    long rows = (long)no->E->N * net_tokens(no->A, no->E);
    if (rows > COST_DATA_ROWS) rows = COST_DATA_ROWS;
    if (!no->inputs) no->inputs = ms_malloc((size_t)rows * no->A->cfg.d * sizeof(float));
    in[no->o.chosen] = no->inputs;
    if (align_method_reads_set(no->o.other.method)) { // the other blocks' too, for their alignment
        size_t one = (size_t)rows * no->A->cfg.d;
        // zeros where no evaluation writes: the blocks inside the frozen prefix (A's and B's
        // equal; the evaluations start after them), the same in every process
        if (!no->other_inputs) no->other_inputs = ms_calloc((size_t)no->nmoe * one, sizeof(float));
        for (int i = 0; i < no->nmoe; i++)
            if (i != no->o.chosen) in[i] = no->other_inputs + (size_t)i * one;
    }
    no->view.inputs = no->inputs, no->view.ninputs = (int)rows;
    return rows;
}

/* the end points: A and B each with their own blocks (and backbone) */
static int end_points(net_objective *no, ms_err *err) {
    net_eval_result ra, rb;
    int N = no->E->N;
    float *in[NET_MAX_LAYERS] = {0};
    long rows = inputs_wanted(no, in);
    net_run run_a = {.seq_loss = no->seq_ab, .block_inputs = in, .block_rows = rows},
            run_b = {.seq_loss = no->seq_ab + N};
    progress_inner(NET_PREP_A, 0, 0);
    if (net_evaluate(no->A, no->E, no->o.interp_backbone ? NULL : &no->prefix, &run_a, &no->o.par, &ra, err))
        return -1;
    progress_inner(NET_PREP_B, 0, 0);
    if (net_evaluate(no->B, no->E, no->o.interp_backbone ? NULL : &no->prefix, &run_b, &no->o.par, &rb, err))
        return -1;
    seq_means(no->seq_ab, N, ra.positions);
    seq_means(no->seq_ab + N, N, rb.positions);
    no->view.seq_a = no->seq_ab, no->view.seq_b = no->seq_ab + N;
    no->view.loss_a = ra.loss, no->view.acc_a = ra.accuracy;
    no->view.loss_b = rb.loss, no->view.acc_b = rb.accuracy;
    return 0;
}

/* ends_later: the MoE blocks' inputs A's evaluation would keep (inputs_wanted), by
 * running A's items only as far as the last block wanted and only those holding the
 * rows kept (net_run.inputs_only: the same steps, the same numbers) */
static int inputs_only(net_objective *no, ms_err *err) {
    float *in[NET_MAX_LAYERS] = {0};
    net_run r = {.block_inputs = in, .block_rows = inputs_wanted(no, in), .inputs_only = 1};
    net_eval_result res;
    progress_inner(NET_PREP_INPUTS, 0, 0);
    if (net_evaluate(no->A, no->E, no->o.interp_backbone ? NULL : &no->prefix, &r, &no->o.par, &res, err))
        return -1;
    net_eval_result_free(&res);
    return 0;
}

/* the view's end hook (ends_later): A's (b = 0) or B's evaluation as end_points makes it */
static int obj_end(void *ctx, int b, double *loss, double *acc, double *seq, ms_err *err) {
    net_objective *no = ctx;
    if (!no->ready) return ms_fail(err, "%s: the network is not prepared (net_objective_prepare)", no->A->path);
    net_run r = {.seq_loss = seq};
    net_eval_result res;
    progress_inner(b ? NET_PREP_B : NET_PREP_A, 0, 0);
    if (net_evaluate(b ? no->B : no->A, no->E, no->o.interp_backbone ? NULL : &no->prefix, &r, &no->o.par, &res,
                     err))
        return -1;
    seq_means(seq, no->E->N, res.positions);
    *loss = res.loss, *acc = res.accuracy;
    net_eval_result_free(&res);
    return 0;
}

/* the copies the objective keeps beside an evaluation: B's blocks aligned per variant
 * (alt), A's other blocks interpolated per slot, the interpolated network (M) */
static int copies_fit(const net_model *A, const net_model *B, const net_evalset *E, const net_obj_opts *o,
                      ms_err *err) {
    double a = 0, b = 0, all = (double)A->nmem;
    for (int i = 0; i < A->cfg.nmoe; i++) {
        b += (double)B->moe[i].nparams, all += (double)A->moe[i].nparams;
        if (i != o->chosen) a += (double)A->moe[i].nparams;
    }
    double need = 4.0 * (3 * b + OBJ_SLOTS * a + (o->interp_backbone ? all : 0)) + net_eval_bytes(A, E);
    char what[900];
    snprintf(what, sizeof what, "%s and %s on %s: the network landscape's copies of the MoE blocks (B's "
             "aligned 3 ways, A's other %d interpolated for %d evaluations at once%s) beside an evaluation",
             A->path, B->path, E->path, A->cfg.nmoe - 1, OBJ_SLOTS, o->interp_backbone ? ", the network" : "");
    return ms_mem_fits(need, what, err);
}

int net_objective_create(const net_model *A, const net_model *B, const net_evalset *E,
                         const net_obj_opts *o, net_objective **out, ms_err *err) {
    *out = NULL;
    if (o->chosen < 0 || o->chosen >= A->cfg.nmoe)
        return ms_fail(err, "%s: MoE block %d of %d", A->path, o->chosen, A->cfg.nmoe);
    int (*check)(const net_evalset *, const net_model *, ms_err *) =
        o->values_later ? net_evalset_check_shape : net_evalset_check;
    if (check(E, A, err) || check(E, B, err) || copies_fit(A, B, E, o, err)) return -1;
    net_objective *no = ms_calloc(1, sizeof *no);
    no->A = A, no->B = B, no->E = E, no->o = *o, no->nmoe = A->cfg.nmoe;
    no->alt = ms_calloc((size_t)3 * no->nmoe, sizeof(moe_model));
    no->alt_res = ms_calloc((size_t)3 * no->nmoe, sizeof(align_result));
    no->M_t = NAN;
    pthread_mutex_init(&no->mu, NULL);
    pthread_cond_init(&no->cv, NULL);
    pthread_mutex_init(&no->bb_mu, NULL);
    if (o->interp_backbone && net_has_backbone(A)) net_clone(&no->M, A); // else once prepare has the values
    snprintf(no->what, sizeof no->what, "network loss, MoE block %d%s (mean %s cross-entropy)",
             A->cfg.moe_layers[o->chosen], o->interp_backbone ? ", backbone interpolated too" : "",
             net_loss_kind(A));
    no->view.eval = obj_eval;
    no->view.ctx = no;
    no->view.kind = LS_CLASSIFY;
    no->view.what = no->what;
    no->view.loss_a = no->view.loss_b = no->view.acc_a = no->view.acc_b = NAN;
    no->seq_ab = ms_calloc((size_t)2 * E->N, sizeof(double));
    no->view.nseq = E->N;
    no->view.unit = net_arch_of(A->cfg.arch)->target == NET_TARGET_CLASS ? "images" : "sequences";
    *out = no;
    return 0;
}

/* Where the frozen prefix ends: at the first MoE block whose A and B differ (bytes
 * of the floats and of the mapped weights), or the chosen one if that comes first.
 * Two fine-tunes of one base may share their first blocks whole: at every t those
 * are A's ((1-t) a + t a = a, to rounding), so they run once per evaluation set. */
static int prefix_end(const net_objective *no) {
    const net_config *c = &no->A->cfg;
    for (int i = 0; i < no->nmoe; i++)
        if (i == no->o.chosen || !moe_same(&no->A->moe[i], &no->B->moe[i])) return c->moe_layers[i];
    return c->moe_layers[no->o.chosen];
}

/* each step named to the thread's listener (progress_inner; the explorer shows it with the rows) */
int net_objective_prepare(net_objective *no, ms_err *err) {
    if (no->ready) return 0;
    if (!net_has_backbone(no->A) || !net_has_backbone(no->B))
        return ms_fail(err, "the backbones' values are not read yet");
    if (no->o.interp_backbone && !no->M.mem) net_clone(&no->M, no->A);
    double t0 = now_secs();
    // the magnitudes once, A's and B's: every network evaluated lies between them (the
    // other blocks and an interpolated backbone are convex combinations of theirs)
    progress_inner(NET_PREP_CHECK, 0, 0);
    if (!no->o.par.checked) {
        if (net_evalset_check(no->E, no->A, err) || net_evalset_check(no->E, no->B, err)) return -1;
        no->o.par.checked = 1;
    }
    // a data-driven method aligns the other blocks on their inputs, which A's end point
    // evaluation captures: then they are aligned after it
    int late = align_method_reads_set(no->o.other.method);
    progress_inner(NET_PREP_ALIGN, 0, 0);
    int rc = late ? 0 : align_variants(no, err);
    no->align_s = now_secs() - t0, t0 = now_secs();
    int L0 = no->o.interp_backbone ? no->A->cfg.moe_layers[0] : prefix_end(no);
    snprintf(no->prefix_what, sizeof no->prefix_what, "%s up to block %d%s", NET_PREP_PREFIX, L0,
             L0 > no->A->cfg.moe_layers[0] ? " (A and B equal below it)" : "");
    progress_inner(no->prefix_what, 0, 0);
    if (!rc && !no->o.interp_backbone) rc = net_prefix_compute_to(no->A, no->E, &no->o.par, L0, &no->prefix, err);
    no->prefix_s = now_secs() - t0, t0 = now_secs();
    // ends_later: the landscape evaluates the end points (a split one, each on one process);
    // what comes before it needs only A's blocks' inputs
    if (!rc && no->o.ends_later) {
        rc = inputs_only(no, err);
        no->view.end = obj_end;
    } else if (!rc) {
        rc = end_points(no, err);
    }
    no->ends_s = now_secs() - t0, t0 = now_secs();
    if (!rc && late) {
        progress_inner(NET_PREP_ALIGN, 0, 0);
        rc = align_variants(no, err);
        no->align_s += now_secs() - t0;
    }
    if (rc) {
        for (int i = 0; i < 3 * no->nmoe; i++) {
            moe_free(&no->alt[i]);
            align_result_free(&no->alt_res[i]);
        }
        memset(no->alt, 0, (size_t)3 * no->nmoe * sizeof(moe_model));
        memset(no->alt_res, 0, (size_t)3 * no->nmoe * sizeof(align_result));
        net_prefix_free(&no->prefix);
        return -1;
    }
    no->ready = 1;
    return 0;
}

int net_objective_new(const net_model *A, const net_model *B, const net_evalset *E,
                      const net_obj_opts *o, net_objective **out, ms_err *err) {
    if (net_objective_create(A, B, E, o, out, err)) return -1;
    if (net_objective_prepare(*out, err)) {
        net_objective_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

const ls_objective *net_objective_view(const net_objective *no) { return &no->view; }

void net_objective_times(const net_objective *no, double *align_s, double *prefix_s, double *ends_s) {
    *align_s = no->align_s, *prefix_s = no->prefix_s, *ends_s = no->ends_s;
}

void net_objective_free(net_objective *no) {
    if (!no) return;
    for (int i = 0; no->alt && i < 3 * no->nmoe; i++) {
        moe_free(&no->alt[i]);
        align_result_free(&no->alt_res[i]);
    }
    free(no->alt_res);
    for (int k = 0; k < OBJ_SLOTS; k++) {
        for (int i = 0; no->slot[k].mix && i < no->nmoe; i++) moe_free(&no->slot[k].mix[i]);
        free(no->slot[k].mix);
        free(no->slot[k].blocks);
    }
    free(no->alt);
    pthread_mutex_destroy(&no->mu);
    pthread_cond_destroy(&no->cv);
    pthread_mutex_destroy(&no->bb_mu);
    net_prefix_free(&no->prefix);
    if (no->o.interp_backbone) net_free(&no->M);
    free(no->seq_ab);
    free(no->inputs);
    free(no->other_inputs);
    free(no);
}
