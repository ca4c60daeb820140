/* cost_method.c - the table of matching methods (cost_method.h): one row per
 * method, its cost function beside its names. */
#include <stdio.h>
#include <string.h>

#include "align/cost_method.h"
#include "align/cost_matrix.h"

const cost_method_info cost_methods[COST_NMETHODS] = {
    [COST_GATE] = {"gate", "Gate", 'G', COST_NEEDS_NOTHING, 1, cost_gate, NULL},
    [COST_EXPERT] = {"expert", "Expert", 'E', COST_NEEDS_NOTHING, 0, cost_expert, cost_expert_offered},
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
    if (cost_check_shapes(A, B, err)) return -1;
    cost_input in = {.A = A, .B = B, .sa = sa, .sb = sb, .center = center, .tuning = tuning};
    return cost_methods[method].cost(&in, C, err);
}
