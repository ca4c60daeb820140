/* cost_method.c - the table of matching methods (cost_method.h): one row per
 * method, its cost function beside its names. */
#include <stdio.h>
#include <string.h>

#include "align/cost_method.h"
#include "align/cost_data.h"
#include "align/cost_matrix.h"

const cost_method_info cost_methods[COST_NMETHODS] = {
    [COST_GATE] = {"gate", "Gate", 'G', COST_NEEDS_NOTHING, 1, cost_gate, NULL, NULL},
    [COST_EXPERT] = {"expert", "Expert", 'E', COST_NEEDS_NOTHING, 0, cost_expert, cost_expert_offered, NULL},
    [COST_ACTIVATION] = {"activation", "Act.", 'A', COST_NEEDS_EVALSET, 0, cost_activation, NULL,
                         cost_activation_hidden},
    [COST_ROUTER] = {"router", "Router", 'R', COST_NEEDS_EVALSET, 1, cost_router, NULL, NULL},
};

const char *cost_method_name(cost_method m) {
    return m >= 0 && m < COST_NMETHODS ? cost_methods[m].name : "?";
}

int cost_method_parse(const char *s, cost_method *m) {
    for (int k = 0; s && k < COST_NMETHODS; k++)
        if (!strcmp(s, cost_methods[k].name)) {
            *m = (cost_method)k;
            return 0;
        }
    return -1;
}

int cost_method_offered(cost_method m, const moe_config *c, int na, int nb, int streamed, char *why,
                        size_t cap) {
    if (!cost_methods[m].offered) return 1;
    return cost_methods[m].offered(c, na, nb, streamed, why, cap);
}

int cost_method_available(cost_method m, int have_set) {
    return cost_methods[m].needs == COST_NEEDS_NOTHING || have_set;
}

const char *cost_method_choices(void) {
    static char buf[256]; // "gate, expert or ...", from the table
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < COST_NMETHODS; k++) {
        const char *sep = k == 0 ? "" : k == COST_NMETHODS - 1 ? " or " : ", ";
        if (len + strlen(sep) + strlen(cost_methods[k].name) + 1 > sizeof buf) break;
        len += (size_t)sprintf(buf + len, "%s%s", sep, cost_methods[k].name);
    }
    return buf;
}

/* The entry points of cost_matrix.h: every method through its row. */
int cost_matrix(const moe_model *A, const moe_model *B, cost_method method, int center, double *C,
                ms_err *err) {
    return cost_matrix_src(A, NULL, B, NULL, method, center, C, err);
}

int cost_matrix_src(const moe_model *A, const expert_source *sa, const moe_model *B,
                    const expert_source *sb, cost_method method, int center, double *C,
                    ms_err *err) {
    return cost_matrix_tuned(A, sa, B, sb, method, center, NULL, C, err);
}

int cost_matrix_tuned(const moe_model *A, const expert_source *sa, const moe_model *B,
                      const expert_source *sb, cost_method method, int center,
                      const cost_tuning *tuning, double *C, ms_err *err) {
    cost_input in = {.A = A, .B = B, .sa = sa, .sb = sb, .center = center, .tuning = tuning};
    return cost_matrix_in(method, &in, C, err);
}

int cost_matrix_in(cost_method m, const cost_input *in, double *C, ms_err *err) {
    if (cost_check_shapes(in->A, in->B, err)) return -1;
    if (in->X && in->N > 0 && in->d != in->A->cfg.d)
        return ms_fail(err, "the evaluation set's inputs have %d columns, the layer's width is %d", in->d,
                       in->A->cfg.d);
    return cost_methods[m].cost(in, C, err);
}
