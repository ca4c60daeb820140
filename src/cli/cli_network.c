/* cli_network.c - what the commands share for network checkpoints (a GPT-2
 * whose feed-forward block(s) are MoE layers): when a run is a network's,
 * loading A, B and the token evaluation set with their checks, and the network
 * objective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/ms_text.h"
#include "io/provenance.h"
#include "io/safetensors.h"

/* does the file hold a layer's evaluation set ('inputs', a block's captured inputs)? */
static int layer_evalset_is(const char *path) {
    st_file f;
    if (st_open(&f, path, NULL)) return 0;
    int yes = st_find(&f, "inputs") != NULL;
    st_close(&f);
    return yes;
}

int cli_net_wanted(const char *path, const char *e_path) {
    if (e_path && net_evalset_is(e_path)) return 1;
    // a set that is neither (empty, or another file): the checkpoint decides, so a
    // network's run says what its set lacks instead of asking for a layer's 'inputs'
    if (e_path && layer_evalset_is(e_path)) return 0;
    int a = net_path_arch(path); // a real decoder without token ids: its layers, one at a time
    return a >= 0 && !net_arch_of((net_arch)a)->eval_only;
}

static int load_one(const char *path, net_model *m, ms_err *err) {
    if (!net_path_is_network(path)) {
        ckpt c;
        if (ckpt_open(&c, path, err)) return -1;
        const char *mt = ckpt_config_str(&c, "model_type");
        int a = net_arch_find(mt);
        int rc;
        if (a >= 0)
            rc = ms_fail(err, "%s: not a network checkpoint: config.json says model_type \"%s\", but the tensor "
                              "'%s' is missing",
                         path, mt, net_arch_of((net_arch)a)->probe);
        else {
            char said[320] = "";
            if (mt) snprintf(said, sizeof said, "; %.200s's key 'model_type' is \"%.64s\"", c.config_path, mt);
            rc = ms_fail(err, "%s: not a network checkpoint: a network's evaluation set (input_ids or "
                              "pixel_values) needs config.json with a model_type moescope computes as a "
                              "network (%s)%s",
                         path, net_arch_names(), said);
        }
        ckpt_close(&c);
        return rc;
    }
    return net_load(m, path, cli_overrides(), err);
}

int cli_net_load(const char *pa, const char *pb, const char *e_path, const char *layer,
                 int interp_backbone, cli_net *n) {
    memset(n, 0, sizeof *n);
    n->interp_backbone = interp_backbone;
    prov_add_input(pa);
    prov_add_input(pb);
    prov_add_input(e_path);
    ms_err err;
    int rc = load_one(pa, &n->A, &err);
    if (!rc && pb) rc = load_one(pb, &n->B, &err);
    if (!rc && pb) rc = net_check_compatible(&n->A, &n->B, &err);
    if (!rc && pb) {
        int d = net_backbone_diff(pa, pb, n->backbone_diff, sizeof n->backbone_diff, &err);
        if (d < 0) rc = -1;
        else if (d > 0 && !interp_backbone)
            rc = ms_fail(&err, "%s and %s do not share their frozen backbone: %s (every tensor outside "
                              "the MoE blocks must be equal; --interpolate-backbone interpolates "
                              "them too)",
                         pa, pb, n->backbone_diff);
        else if (d == 0)
            n->backbone_diff[0] = 0;
    }
    if (!rc && e_path) rc = net_evalset_load(&n->E, e_path, &err);
    if (!rc && e_path) rc = net_evalset_check(&n->E, &n->A, &err);
    if (!rc && (n->A.cfg.nmoe || pb || layer)) rc = net_pick_block(&n->A, layer, &n->block, &err);
    if (rc) {
        cli_net_free(n);
        return cli_error("%s", err.msg);
    }
    if (pb && interp_backbone && n->backbone_diff[0] && cli_reports_here()) {
        char *why = ms_escaped(n->backbone_diff); // it names a tensor of the file
        fprintf(stderr, "moescope: note: the backbones differ (%s): interpolating them too, as every "
                        "report says\n",
                why);
        free(why);
    }
    return 0;
}

void cli_net_free(cli_net *n) {
    net_free(&n->A);
    net_free(&n->B);
    net_evalset_free(&n->E);
}

int cli_net_objective(cli_net *n, const align_opts *other, int threads, atomic_int *cancel,
                      net_objective **out) {
    net_obj_opts o = {.chosen = n->block, .other = *other, .interp_backbone = n->interp_backbone,
                      .par = {.threads = threads, .cancel = cancel}};
    o.other.order = NULL; // --order names the chosen block's order, never the others'
    ms_err err;
    if (net_objective_new(&n->A, &n->B, &n->E, &o, out, &err)) return cli_error("%s", err.msg);
    return 0;
}

int cli_orders_given(int ch) { return ch == 'S' ? CLI_GIVEN_SAMPLES : ch == 'E' ? CLI_GIVEN_EXHAUSTIVE : 0; }

const char *cli_net_block_name(const cli_net *n) { return n->A.moe[n->block].layer; }

void cli_net_landscape_defaults(ls_opts *lo, int given) {
    if (!(given & CLI_GIVEN_EXHAUSTIVE)) lo->exhaustive_max = LS_OBJ_EXHAUSTIVE_MAX;
    if (!(given & CLI_GIVEN_SAMPLES)) lo->nsample = LS_OBJ_SAMPLES;
}
