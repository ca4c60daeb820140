/* keys.h - the one key-binding table: the input loop looks keys up here and the
 * help screen prints it. Key codes are curses-free: printable keys are their
 * character, special keys the K_* values below (tui.c translates). */
#ifndef MS_UI_KEYS_H
#define MS_UI_KEYS_H

enum {
    K_UP = 0x110001, K_DOWN, K_LEFT, K_RIGHT, K_PGUP, K_PGDN, K_HOME, K_END,
    K_ENTER, K_ESC, K_BACKSPACE, K_RESIZE, K_MOUSE, K_DELETE,
};

typedef enum {
    ACT_NONE = 0,
    ACT_TOGGLE_ORDER,   /* o */
    ACT_TOGGLE_WM,      /* w */
    ACT_TOGGLE_CENTER,  /* c */
    ACT_TOGGLE_METHOD,  /* m */
    ACT_TOGGLE_METRIC,  /* a: loss / accuracy */
    ACT_PLOT_SELECTED,  /* Enter */
    ACT_FILTER,         /* / */
    ACT_SORT,           /* s */
    ACT_SORT_REVERSE,   /* S */
    ACT_PNG,            /* p */
    ACT_EXPORT,         /* e */
    ACT_DIAG,           /* d */
    ACT_HELP,           /* ? */
    ACT_QUIT,           /* q */
    ACT_UP, ACT_DOWN, ACT_PGUP, ACT_PGDN, ACT_TOP, ACT_BOTTOM,
    ACT_HEAT_PREV,      /* [ : scroll the cost matrix (n > what fits) */
    ACT_HEAT_NEXT,      /* ] */
    ACT_REDRAW,         /* Ctrl-L */
    ACT_SCATTER,        /* v: the scatter of cost against barrier in the curves' place */
    ACT_STATE,          /* x: save the state (JSON) or the table (CSV) */
    ACT_SWAP,           /* b: barrier change of each two-slot swap, in the cost matrix's place */
    ACT_PIN,            /* P: pin / unpin the plotted order's curve */
    ACT_UNPIN_ALL,      /* U: unpin every order */
    ACT_HEAT_FOCUS,     /* Tab: the cursor keys move in the cost matrix / the orders */
    ACT_ZOOM_OUT,       /* z: the cost matrix zoomed out (block means) */
    ACT_ZOOM_IN,        /* Z */
    ACT_LEFT, ACT_RIGHT,/* cost matrix cursor (with the keys) */
    ACT_LAYER,          /* l: the layers of the checkpoint, switch A and B to one */
    ACT_GEOMETRY,       /* r: the routing geometry of A's MoE layers across depth */
    ACT_OUT_DIR,        /* O: the directory p, e and x write into */
    ACT_COUNT
} ui_action;

typedef struct {
    int key;            /* K_* or a character */
    ui_action act;
    const char *name;   /* as shown: "o", "Enter", "PgUp" */
    const char *help;   /* one line; NULL for aliases not listed separately */
} key_binding;

extern const key_binding key_table[];
extern const int key_table_len;

ui_action keys_lookup(int key);
/* The first binding of an action (for the footer's key names). */
const key_binding *keys_for_action(ui_action a);

#endif
