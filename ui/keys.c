/* keys.c - the key-binding table (the documented keys stay). */
#include "keys.h"

#include <stddef.h>

const key_binding key_table[] = {
    {'o', ACT_TOGGLE_ORDER, "o", "expert-order stage on/off"},
    {'w', ACT_TOGGLE_WM, "w", "weight-matching stage on/off"},
    {'c', ACT_TOGGLE_CENTER, "c", "gate centring on/off"},
    {'m', ACT_TOGGLE_METHOD, "m", "cost method: gate, expert, activation, router"},
    {'a', ACT_TOGGLE_METRIC, "a", "plot loss / accuracy"},
    {K_ENTER, ACT_PLOT_SELECTED, "Enter", "plot the selected order"},
    {'/', ACT_FILTER, "/", "filter orders by prefix (e.g. 2 0), Esc clears"},
    {'s', ACT_SORT, "s", "sort by the next column"},
    {'S', ACT_SORT_REVERSE, "S", "reverse the sort"},
    {'p', ACT_PNG, "p", "write the figures (PNG)"},
    {'e', ACT_EXPORT, "e", "export the aligned B as a checkpoint"},
    {'O', ACT_OUT_DIR, "O", "export dir for p, e, x"},
    {'d', ACT_DIAG, "d", "diagnostics"},
    {'v', ACT_SCATTER, "v", "view: curves/scatter"},
    {'x', ACT_STATE, "x", "save state: .json/.csv"},
    {'b', ACT_SWAP, "b", "view: costs/swaps"},
    {'P', ACT_PIN, "P/U", "pin/unpin; U unpins all"},
    {'U', ACT_UNPIN_ALL, "U", NULL},
    {'?', ACT_HELP, "?", "this help"},
    {'q', ACT_QUIT, "q", "quit"},
    {K_DOWN, ACT_DOWN, "j/k", "move down / up (arrows)"},
    {'j', ACT_DOWN, "j", NULL},
    {K_UP, ACT_UP, "Up/k", NULL},
    {'k', ACT_UP, "k", NULL},
    {K_PGUP, ACT_PGUP, "PgUp/PgDn", "page up / down"},
    {K_PGDN, ACT_PGDN, "PgDn", NULL},
    {'g', ACT_TOP, "g/Home", "first row"},
    {K_HOME, ACT_TOP, "Home", NULL},
    {'G', ACT_BOTTOM, "G/End", "last row"},
    {K_END, ACT_BOTTOM, "End", NULL},
    {'[', ACT_HEAT_PREV, "[ ]", "scroll the cost matrix"},
    {']', ACT_HEAT_NEXT, "]", NULL},
    {'\t', ACT_HEAT_FOCUS, "Tab", "arrows: matrix / orders"},
    {'z', ACT_ZOOM_OUT, "z Z", "matrix zoom out / in"},
    {'Z', ACT_ZOOM_IN, "Z", NULL},
    {K_LEFT, ACT_LEFT, "Left", NULL},
    {K_RIGHT, ACT_RIGHT, "Right", NULL},
    {'l', ACT_LAYER, "l", "switch layer (A and B)"},
    {'r', ACT_GEOMETRY, "r", "routing geometry of A"},
    {12, ACT_REDRAW, "Ctrl-L", "redraw"},
    {'\n', ACT_PLOT_SELECTED, "Enter", NULL},
    {'\r', ACT_PLOT_SELECTED, "Enter", NULL},
};
const int key_table_len = (int)(sizeof key_table / sizeof key_table[0]);

ui_action keys_lookup(int key) {
    for (int i = 0; i < key_table_len; i++)
        if (key_table[i].key == key) return key_table[i].act;
    return ACT_NONE;
}

const key_binding *keys_for_action(ui_action a) {
    for (int i = 0; i < key_table_len; i++)
        if (key_table[i].act == a) return &key_table[i];
    return NULL;
}
