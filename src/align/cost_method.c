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
