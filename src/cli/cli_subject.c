/* cli_subject.c - the commands' way in: what they work on (a layer pair or a
 * network pair, analysis/subject.h) loaded with the command line's overrides,
 * its problems said as every command says them; the network objective and a
 * network landscape's defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/ms_text.h"

int cli_subject_load(subject *s, subject_spec *sp, const char *cmd, const char *usage) {
    sp->ov = cli_overrides();
    sp->ignore_capture |= cli_ignore_capture();
    ms_err err;
    int rc = subject_load(s, sp, &err);
    if (rc == SUBJECT_USAGE) return cli_usage_error(usage, "%s%s%s", cmd, cmd[0] ? ": " : "", err.msg);
    if (rc) {
        cli_error("%s", err.msg);
        if (s->kind == SUBJECT_LAYER) // subject_load said which it was
            cli_hint_swapped(cmd, sp->pa, sp->pb, sp->e_path);
        return 1;
    }
    cli_note_router_defaults(s->a, s->b);
    if (s->kind == SUBJECT_LAYER && !sp->layer && sp->e_path && cli_reports_here() &&
        (s->layer_from_capture || s->nlayers > 1)) { // which layer a captured set is evaluated at
        char *l = ms_escaped(s->a->layer ? s->a->layer : "moe"); // it names a tensor prefix of the file
        if (s->layer_from_capture)
            fprintf(stderr, "moescope: note: layer %s, the one the evaluation set was captured at (its "
                            "capture.layer metadata)\n", l);
        else
            fprintf(stderr, "moescope: note: %d MoE layers; this is the first, %s (--layer L for another)\n",
                    s->nlayers, l);
        free(l);
    }
    if (s->kind == SUBJECT_NETWORK && s->net.backbone_diff[0] && cli_reports_here()) {
        char *why = ms_escaped(s->net.backbone_diff); // it names a tensor of the file
        fprintf(stderr, "moescope: note: the backbones differ (%s): interpolating them too, as every "
                        "report says\n",
                why);
        free(why);
    }
    return 0;
}

int cli_subject_objective(subject *s, const align_opts *other, int threads, atomic_int *cancel,
                          net_objective **out) {
    return cli_subject_objective_on(s, &s->net.E, other, threads, cancel, out);
}

int cli_subject_objective_on(subject *s, const net_evalset *E, const align_opts *other, int threads,
                             atomic_int *cancel, net_objective **out) {
    *out = NULL;
    if (s->kind != SUBJECT_NETWORK) return 0;
    net_par par = {.threads = threads, .cancel = cancel};
    ms_err err;
    if (subject_net_objective_on(&s->net, E, s->net.block, other, &par, out, &err)) return cli_error("%s", err.msg);
    return 0;
}

int cli_orders_given(int ch) { return ch == 'S' ? CLI_GIVEN_SAMPLES : ch == 'E' ? CLI_GIVEN_EXHAUSTIVE : 0; }

void cli_net_landscape_defaults(ls_opts *lo, int given) {
    if (!(given & CLI_GIVEN_EXHAUSTIVE)) lo->exhaustive_max = LS_OBJ_EXHAUSTIVE_MAX;
    if (!(given & CLI_GIVEN_SAMPLES)) lo->nsample = LS_OBJ_SAMPLES;
}
