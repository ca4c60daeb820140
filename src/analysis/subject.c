/* subject.c - what a command works on, loaded and checked once (subject.h). */
#include "analysis/subject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ms_limits.h"
#include "core/test_hooks.h"
#include "io/checkpoint.h"
#include "io/family.h"
#include "io/model_io.h"
#include "io/provenance.h"
#include "io/safetensors.h"
#include "model/evaluator.h"

/* does the file hold a layer's evaluation set ('inputs', a block's captured inputs)
 * or a capture of every MoE layer ('inputs.L' each, geometry's)? */
static int layer_evalset_is(const st_file *f) {
    int yes = st_find(f, "inputs") != NULL;
    for (int i = 0; i < f->ntensors && !yes; i++) yes = !strncmp(f->tensors[i].name, "inputs.", 7);
    return yes;
}

/* the kind from the open checkpoint a and set e (NULL: none, or not readable) */
static subject_kind detect_open(const ckpt *a, const st_file *e) {
    if (e && net_evalset_file_is(e)) return SUBJECT_NETWORK;
    // a set that is neither (empty, or another file): the checkpoint decides, so a
    // network's run says what its set lacks instead of asking for a layer's 'inputs'
    if (e && layer_evalset_is(e)) return SUBJECT_LAYER;
    int arch = a ? net_ckpt_arch(a) : -1; // a real decoder without token ids: its layers, one at a time
    return arch >= 0 && !net_arch_of((net_arch)arch)->eval_only ? SUBJECT_NETWORK : SUBJECT_LAYER;
}

/* A and E opened once, for the kind and then (a network's) for the loading */
typedef struct {
    ckpt a;
    st_file e;
    int has_a, has_e;
} subject_files;

static void files_open(subject_files *f, const char *pa, const char *e_path) {
    memset(f, 0, sizeof *f);
    f->has_a = pa && !ckpt_open(&f->a, pa, NULL);
    f->has_e = e_path && !st_open(&f->e, e_path, NULL);
}

static void files_close(subject_files *f) {
    if (f->has_a) ckpt_close(&f->a);
    if (f->has_e) st_close(&f->e);
    f->has_a = f->has_e = 0;
}

subject_kind subject_detect(const char *pa, const char *e_path) {
    subject_files f;
    files_open(&f, pa, e_path);
    subject_kind k = detect_open(f.has_a ? &f.a : NULL, f.has_e ? &f.e : NULL);
    files_close(&f);
    return k;
}

/* ---- a layer pair ---- */

/* a layer's evaluation set ('inputs' [N, d]) of another width beside a network:
 * the network's own set is what was meant */
static int layer_set_on_network(const subject *s, const subject_spec *sp, ms_err *err) {
    int a = net_path_arch(sp->pa);
    if (a < 0 || s->E.d == s->A.cfg.d) return 0;
    const net_arch_desc *D = net_arch_of((net_arch)a);
    return ms_fail(err, "%s: holds a single layer's inputs [N, %d], but %s is a %s network: its evaluation "
                        "set holds %s (a capture of its MoE layer's own inputs would have width d = %d)",
                   sp->e_path, s->E.d, sp->pa, D->model_type,
                   D->target == NET_TARGET_CLASS ? "pixel_values [N, C, H, W] and labels [N]" : "input_ids [N, T]",
                   s->A.cfg.d);
}

/* Without --layer: the layer of A the set was captured at (its capture.layer, a prefix
 * or a block number) when A has it, into pick; s->nlayers counts A's MoE layers. A
 * capture.layer A lacks is left to evalset_check_layer to say. */
static void layer_default(subject *s, const subject_spec *sp, char *pick, size_t cap) {
    family_layer *ls = NULL;
    int n = 0;
    ms_err ignored;
    pick[0] = 0;
    if (sp->layer || moe_find_layers(sp->pa, sp->ov ? sp->ov->family : -1, &ls, &n, &ignored)) return;
    s->nlayers = n;
    st_file f;
    if (n > 1 && sp->e_path && !sp->ignore_capture && !st_open(&f, sp->e_path, NULL)) {
        const char *cl = st_meta(&f, "capture.layer");
        for (int i = 0; cl && i < n && !pick[0]; i++) {
            char blk[32];
            snprintf(blk, sizeof blk, "%d", ls[i].block);
            if (!strcmp(cl, ls[i].prefix) || (ls[i].block >= 0 && !strcmp(cl, blk)))
                snprintf(pick, cap, "%s", ls[i].prefix);
        }
        st_close(&f);
    }
    family_layers_free(ls, n);
    s->layer_from_capture = pick[0] != 0;
}

/* the layer at path into m: mapped (*map its files) when sp says so and the layout
 * allows, else in floats */
static int load_one_layer(moe_model *m, const char *path, const char *layer, const subject_spec *sp, ckpt **map,
                          ms_err *err) {
    if (sp->layer_mapped && !test_hook_get(HOOK_FLOATS)) {
        int rc = (sp->chosen_shared_mapped ? moe_load_mapped_shared : moe_load_mapped)(m, path, layer, sp->ov, map,
                                                                                         err);
        if (rc <= 0) return rc; // 1: not a family layout that maps (moe_load says why not, or loads it)
    }
    return moe_load(m, path, layer, sp->ov, err);
}

static int load_layer(subject *s, const subject_spec *sp, ms_err *err) {
    char pick[512];
    layer_default(s, sp, pick, sizeof pick);
    const char *layer = pick[0] ? pick : sp->layer;
    if (load_one_layer(&s->A, sp->pa, layer, sp, &s->map_a, err)) return -1;
    if (sp->pb && load_one_layer(&s->B, sp->pb, layer, sp, &s->map_b, err)) return -1;
    if (sp->pb && moe_is_mapped(&s->A) != moe_is_mapped(&s->B)) { // two layouts: both in floats
        moe_model f;
        moe_clone_floats(&f, moe_is_mapped(&s->A) ? &s->A : &s->B);
        moe_free(moe_is_mapped(&s->A) ? &s->A : &s->B);
        *(moe_is_mapped(&s->A) ? &s->A : &s->B) = f;
    }
    // shared experts mapped in one and not the other, or more than one of them: both in floats
    int sa = moe_shared_mapped(&s->A), sb = sp->pb ? moe_shared_mapped(&s->B) : sa;
    if ((sa || sb) && (sa != sb || s->A.cfg.s > 1)) {
        moe_shared_to_floats(&s->A);
        if (sp->pb) moe_shared_to_floats(&s->B);
    }
    if (sp->pb && moe_check_compatible(&s->A, &s->B, err)) return -1;
    if (sp->e_path && evalset_load(&s->E, sp->e_path, err)) return -1;
    if (sp->e_path && layer_set_on_network(s, sp, err)) return -1;
    // what the commands derive (weight matching, expert costs, forward passes),
    // bounded from the shapes before any of it is allocated; said first, since a
    // layer too large to work on is the answer whatever its set holds
    unsigned uses = sp->e_path ? sp->uses : sp->uses & ~(unsigned)(MS_USE_EVAL | MS_USE_DIAG);
    if (ms_limits_check(&s->A, sp->pb ? &s->B : NULL, sp->e_path ? &s->E : NULL, uses, err)) return -1;
    if (!sp->e_path) return 0;
    if (!sp->ignore_capture && evalset_check_layer(&s->E, &s->A, err)) return -1;
    // the head is optional, but its labels or targets must fit it when present
    return moe_eval_check(&s->A, &s->E, err);
}

/* ---- a network pair ---- */

/* the network at path from c, its checkpoint opened by the caller */
static int load_net_ckpt(ckpt *c, const char *path, net_model *m, const family_overrides *ov, int later,
                         ms_err *err) {
    if (net_is_network(c)) return (later ? net_load_ckpt_later : net_load_ckpt)(m, c, path, ov, err);
    const char *mt = ckpt_config_str(c, "model_type");
    int a = net_arch_find(mt);
    int rc;
    if (a >= 0)
        rc = ms_fail(err, "%s: not a network checkpoint: config.json says model_type \"%s\", but the tensor "
                          "'%s' is missing",
                     path, mt, net_arch_of((net_arch)a)->probe);
    else {
        char said[640] = "";
        const char *why = net_arch_layer_only_why(mt);
        if (mt)
            snprintf(said, sizeof said, "; %.200s's key 'model_type' is \"%.64s\"%s%s%s", c->config_path, mt,
                     *why ? ": " : "", why, *why ? " (its MoE layers still open one at a time, as layers)" : "");
        rc = ms_fail(err, "%s: not a network checkpoint: a network's evaluation set (input_ids or "
                          "pixel_values) needs config.json with a model_type moescope computes as a "
                          "network (%s)%s",
                     path, net_arch_names(), said);
    }
    return rc;
}

static int load_net_one(const char *path, net_model *m, const family_overrides *ov, int later, ms_err *err) {
    ckpt c;
    if (ckpt_open(&c, path, err)) return -1;
    int rc = load_net_ckpt(&c, path, m, ov, later, err);
    ckpt_close(&c);
    return rc;
}

int subject_backbones_check(const char *pa, const char *pb, int interp, char *what, size_t cap, ms_err *err) {
    int d = net_backbone_diff(pa, pb, what, cap, err);
    if (d < 0) return -1;
    if (d > 0 && !interp)
        return ms_fail(err, "%s and %s do not share their frozen backbone: %s (every tensor outside "
                            "the MoE blocks must be equal; --interpolate-backbone interpolates them too)",
                       pa, pb, what);
    if (d == 0) what[0] = 0;
    return d;
}

/* A and B one architecture whose frozen backbones are equal, unless they may differ;
 * their bytes compared now, or by the caller that reads them later (values_later:
 * interpolated ones need no comparison) */
static int check_backbones(subject_net *n, const subject_spec *sp, ms_err *err) {
    if (net_check_compatible(&n->A, &n->B, err)) return -1;
    if (sp->values_later) {
        n->backbone_later = !sp->interp_backbone;
        return 0;
    }
    int d = subject_backbones_check(sp->pa, sp->pb, sp->interp_backbone, n->backbone_diff,
                                    sizeof n->backbone_diff, err);
    return d < 0 ? -1 : 0;
}

/* B of a pair loaded mapped, without its backbone's values: A's when the files hold
 * the same (one copy in floats, never two at once), else B's own read; then the
 * checks of every pair (check_backbones); a block mapped in one and not the other
 * (two layouts of a family) read into floats in both */
static int load_pair_b(subject_net *n, const subject_spec *sp, ms_err *err) {
    if (net_load_mapped_later(&n->B, sp->pb, sp->ov, err)) return -1;
    int d = net_backbone_diff(sp->pa, sp->pb, n->backbone_diff, sizeof n->backbone_diff, err);
    if (d < 0) return -1;
    if (d == 0) net_share_backbone(&n->B, &n->A);
    else if (net_load_backbone(&n->B, err)) return -1;
    if (check_backbones(n, sp, err)) return -1;
    for (int i = 0; i < n->A.cfg.nmoe; i++)
        if (moe_is_mapped(&n->A.moe[i]) != moe_is_mapped(&n->B.moe[i])) {
            net_block_floats(&n->A, i);
            net_block_floats(&n->B, i);
        } else if (moe_shared_mapped(&n->A.moe[i]) != moe_shared_mapped(&n->B.moe[i])) {
            moe_shared_to_floats(&n->A.moe[i]);
            moe_shared_to_floats(&n->B.moe[i]);
        }
    return 0;
}

/* A from f's checkpoint and E from f's set when they opened (else opened again,
 * for the message that says why they do not) */
static int load_network(subject *s, const subject_spec *sp, subject_files *f, ms_err *err) {
    subject_net *n = &s->net;
    n->interp_backbone = sp->interp_backbone;
    int later = sp->values_later;
    int network = f->has_a && net_is_network(&f->a) && !test_hook_get(HOOK_FLOATS);
    int pair = sp->mapped_pair && sp->pb && network && !later; // both mapped, the chosen block in floats
    int lazy = sp->blocks_later && later && sp->pb && network;  // nothing of the blocks read (the explorer)
    if (lazy) {
        if (net_load_lazy(&n->A, sp->pa, sp->ov, err)) return -1;
    } else if (((sp->mapped && !sp->pb) || pair) && network) {
        if (net_load_mapped(&n->A, sp->pa, sp->ov, err)) return -1;
    } else if (f->has_a ? load_net_ckpt(&f->a, sp->pa, &n->A, sp->ov, later, err)
                        : load_net_one(sp->pa, &n->A, sp->ov, later, err)) {
        return -1;
    }
    if (lazy && (net_load_lazy(&n->B, sp->pb, sp->ov, err) || check_backbones(n, sp, err))) return -1;
    if (sp->pb && !lazy &&
        (pair ? load_pair_b(n, sp, err)
              : (load_net_one(sp->pb, &n->B, sp->ov, later, err) || check_backbones(n, sp, err))))
        return -1;
    if (sp->e_path && (f->has_e ? net_evalset_load_file(&n->E, &f->e, err) : net_evalset_load(&n->E, sp->e_path, err)))
        return -1;
    if (sp->e_path && (later ? net_evalset_check_shape : net_evalset_check)(&n->E, &n->A, err)) return -1;
    if (!n->A.cfg.nmoe && !sp->pb && !sp->layer) return 0; // a network without MoE block: eval alone
    if (net_pick_block(&n->A, sp->layer, &n->block, err)) return -1;
    if (pair && !sp->chosen_mapped) { // the chosen block is aligned and interpolated by the caller, in floats
        net_block_floats(&n->A, n->block);
        net_block_floats(&n->B, n->block);
    } else if (pair && !(sp->chosen_shared_mapped && n->A.moe[n->block].cfg.s <= 1)) {
        // its routed experts stay mapped; its shared ones (one layer's) are read as floats
        moe_shared_to_floats(&n->A.moe[n->block]);
        moe_shared_to_floats(&n->B.moe[n->block]);
    }
    s->a = &n->A.moe[n->block];
    s->b = sp->pb ? &n->B.moe[n->block] : NULL;
    // the chosen block's derived allocations (its inputs are the network's: made later)
    unsigned uses = sp->uses & ~(unsigned)(MS_USE_EVAL | MS_USE_DIAG);
    return (lazy ? ms_limits_memory : ms_limits_check)(s->a, s->b, NULL, uses, err);
}

int subject_load(subject *s, const subject_spec *sp, ms_err *err) {
    memset(s, 0, sizeof *s);
    s->pa = sp->pa, s->pb = sp->pb, s->e_path = sp->e_path;
    prov_add_input(sp->pa); // reports record each input's size and SHA-256
    prov_add_input(sp->pb);
    prov_add_input(sp->e_path);
    subject_files f; // each opened once: the kind, then a network's loading
    files_open(&f, sp->pa, sp->e_path);
    s->kind = sp->kind != SUBJECT_DETECT ? sp->kind : detect_open(f.has_a ? &f.a : NULL, f.has_e ? &f.e : NULL);
    if (s->kind == SUBJECT_LAYER && sp->interp_backbone) {
        files_close(&f);
        ms_fail(err, "--interpolate-backbone is for networks");
        return SUBJECT_USAGE;
    }
    int rc;
    if (s->kind == SUBJECT_NETWORK) {
        rc = load_network(s, sp, &f, err);
        files_close(&f);
    } else {
        files_close(&f); // a layer's loaders open their files themselves
        rc = load_layer(s, sp, err);
        s->a = &s->A;
        s->b = sp->pb ? &s->B : NULL;
    }
    if (rc) subject_free(s);
    return rc;
}

void subject_free(subject *s) {
    moe_free(&s->A);
    moe_free(&s->B);
    moe_map_close(s->map_a);
    moe_map_close(s->map_b);
    evalset_free(&s->E);
    net_free(&s->net.A);
    net_free(&s->net.B);
    net_evalset_free(&s->net.E);
    subject_kind kind = s->kind; // what was tried, for the caller's messages
    memset(s, 0, sizeof *s);
    s->kind = kind;
}

int subject_net_objective(const subject_net *n, int block, const align_opts *other, const net_par *par,
                          net_objective **out, ms_err *err) {
    return subject_net_objective_on(n, &n->E, block, other, par, out, err);
}

int subject_net_objective_on(const subject_net *n, const net_evalset *E, int block, const align_opts *other,
                             const net_par *par, net_objective **out, ms_err *err) {
    net_obj_opts o = {.chosen = block, .other = *other, .interp_backbone = n->interp_backbone, .par = *par,
                      .ends_later = n->ends_later};
    o.other.order = NULL; // --order names the chosen block's order, never the others'
    return net_objective_new(&n->A, &n->B, E, &o, out, err);
}

const char *subject_block_name(const subject *s) { return s->a ? s->a->layer : ""; }
