/* subject.h - what a command works on, loaded and checked in one place.
 *
 * A subject is one MoE layer pair (A's and B's layer, an evaluation set of
 * inputs) or a whole network pair (a GPT-2- or ViT-layout network around MoE
 * blocks, an evaluation set of input_ids or pixel_values, the chosen block).
 * subject_load decides which once, from the files, and runs every check the
 * commands and the explorer share: A and B of one shape, the evaluation set
 * fitting A, the frozen backbones equal (or --interpolate-backbone), the
 * derived allocations within the memory budget. Its callers branch on kind for
 * what they compute, never to load. */
#ifndef MS_SUBJECT_H
#define MS_SUBJECT_H

#include "align/align.h"
#include "analysis/ms_limits.h"
#include "io/evalset.h"
#include "io/family.h"
#include "model/model.h"
#include "network/net_evalset.h"
#include "network/net_model.h"
#include "network/net_objective.h"

/* SUBJECT_DETECT: decided from the files (subject_detect) */
typedef enum { SUBJECT_DETECT, SUBJECT_LAYER, SUBJECT_NETWORK } subject_kind;

/* What subject_load returns for a request that cannot be met whatever the files
 * hold (--interpolate-backbone on layers): the command's usage error. */
enum { SUBJECT_USAGE = -2 };

typedef struct {
    subject_kind kind;          /* SUBJECT_DETECT, or what the caller knows it is */
    const char *pa, *pb;        /* the checkpoints; pb NULL: one (eval, geometry, a pool's first) */
    const char *e_path;         /* the evaluation set, NULL: none */
    const char *layer;          /* --layer: a layer's prefix (NULL: "moe"), a network's block */
    int interp_backbone;        /* --interpolate-backbone: a network's backbones may differ */
    unsigned uses;              /* MS_USE_* the command derives (analysis/ms_limits.h) */
    const family_overrides *ov; /* the router overrides of every load (family.h) */
    int ignore_capture;         /* a layer's set captured at another layer is taken anyway */
    int mapped;                 /* one network only evaluated: its MoE blocks' weights stay
                                   mapped in their dtype (net_load_mapped) */
    int mapped_pair;            /* a network pair whose other MoE blocks are only interpolated and
                                   evaluated (the network objective): A's and B's mapped in their
                                   dtype (aligned as views, mixed per panel), the chosen block in
                                   floats, one copy of an equal backbone */
    int chosen_mapped;          /* with mapped_pair: the chosen block stays mapped too (the caller
                                   aligns it with align_models_mapped and interpolates it per panel) */
    int chosen_shared_mapped;   /* with chosen_mapped (or layer_mapped): its shared expert too (one;
                                   the caller aligns it with align_shared and decodes its mixes),
                                   else read as floats */
    int values_later;           /* a network's backbones without their values (net_load_ckpt_later):
                                   the caller reads and checks them later (the explorer, off its
                                   screen); every shape, the MoE blocks and the set checked now;
                                   two frozen backbones in other files compared later too
                                   (subject_net.backbone_later) */
    int layer_mapped;           /* a family layout's layer pair: the routed experts' weights stay
                                   mapped in their dtype (moe_load_mapped), decoded one or two at
                                   a time by the caller; a native layer in floats */
    int blocks_later;           /* with values_later, a network pair: no MoE block read either
                                   (net_load_lazy: mapped, or a shell), nor their values checked;
                                   the caller fills them (net_block_fill) and checks them off its
                                   screen's thread */
} subject_spec;

/* A network pair: A and B whole, the token or image set, the chosen block. */
typedef struct {
    net_model A, B;          /* B zeroed when one checkpoint was loaded */
    net_evalset E;           /* zeroed without an evaluation set */
    int block;               /* the chosen MoE block: an index into cfg.moe_layers */
    int interp_backbone;     /* --interpolate-backbone */
    char backbone_diff[512]; /* how the backbones differ, "" when equal */
    int backbone_later;      /* values_later: the backbones' bytes not compared yet (the caller
                                does, subject_backbones_check: hundreds of MiB to read) */
    int ends_later;          /* its objectives leave the end points to the landscape
                                (net_obj_opts.ends_later: moescope-mpi's split landscapes) */
} subject_net;

/* Do the networks pa and pb share their frozen backbone (net_backbone_diff)? 0 yes;
 * 1 no but interp allows it (how they differ in what); -1 with err: no (the refusal,
 * naming the first tensor that differs), or the files could not be read. */
int subject_backbones_check(const char *pa, const char *pb, int interp, char *what, size_t cap, ms_err *err);

typedef struct {
    subject_kind kind;
    const char *pa, *pb, *e_path;
    moe_model A, B;     /* a layer pair (B zeroed without pb) */
    ckpt *map_a, *map_b; /* layer_mapped: the files A's and B's routed weights are the pages of */
    evalset E;          /* a layer's inputs, zeroed without an evaluation set */
    subject_net net;    /* a network pair */
    const moe_model *a, *b; /* the layer worked on: &A and &B, or the networks' chosen block (b NULL without pb) */
    int layer_from_capture; /* a layer pair without --layer: the set's capture.layer chose it */
    int nlayers;            /* a layer pair without --layer: A's MoE layers (the first taken unless captured) */
} subject;

/* The kind of run: a network when the evaluation set holds input_ids or
 * pixel_values, or (no set) when checkpoint pa is a network; a layer otherwise. */
subject_kind subject_detect(const char *pa, const char *e_path);

/* Load and check what sp names into s (a network's checkpoint loaded as a layer
 * when sp->kind says SUBJECT_LAYER; a layer's refused by name as a network's
 * when it says SUBJECT_NETWORK). 0; -1 with err set; SUBJECT_USAGE with
 * err set to the usage problem (without the command's name). Nothing is left
 * to free on failure, s->kind still saying what was tried. Every input is recorded for the reports' provenance. */
int subject_load(subject *s, const subject_spec *sp, ms_err *err);
/* Everything s holds freed, s zeroed but its kind. */
void subject_free(subject *s);

/* The network loss as the objective of block `block` (an index into
 * moe_layers) of n, the other blocks aligned by other (its order ignored: an
 * order names the chosen block's experts); par's threads and cancel flag. */
int subject_net_objective(const subject_net *n, int block, const align_opts *other, const net_par *par,
                          net_objective **out, ms_err *err);
/* The same on another evaluation set E of n's networks (a screening's subset;
 * borrowed: it must outlive the objective) */
int subject_net_objective_on(const subject_net *n, const net_evalset *E, int block, const align_opts *other,
                             const net_par *par, net_objective **out, ms_err *err);
/* The chosen block's prefix, "transformer.h.L.mlp" */
const char *subject_block_name(const subject *s);

#endif
