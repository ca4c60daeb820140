/* line_edit.h - one line of text being typed (the explorer's prompts: the
 * export directory, the name to save the state as), edited with the keys of
 * readline and less (curses-free):
 *
 *   Left/Right, Ctrl-B/Ctrl-F   move a character      Home/Ctrl-A, End/Ctrl-E   to the ends
 *   Backspace/Ctrl-H, Delete/Ctrl-D   delete before / at the cursor
 *   Ctrl-U   delete to the start     Ctrl-K   delete to the end
 *   Ctrl-W   delete the word before the cursor (back to a space or a '/',
 *            so a path loses one component at a time)
 *
 * Printable ASCII is inserted at the cursor. */
#ifndef MS_UI_LINE_EDIT_H
#define MS_UI_LINE_EDIT_H

#define LINE_EDIT_CAP 512

typedef struct {
    char buf[LINE_EDIT_CAP];
    int len, cur; /* bytes; 0 <= cur <= len */
} line_edit;

/* Start with text, the cursor after it. */
void line_edit_set(line_edit *e, const char *text);
/* Apply one key (a character or K_*): 1 when it is an editing key, 0 when
 * not (Enter, Esc, ... are the caller's). */
int line_edit_key(line_edit *e, int key);
/* The part of the line that fits w columns with the cursor in view: the
 * first byte shown (*from) and the cursor's column in it. */
void line_edit_view(const line_edit *e, int w, int *from, int *cursor_col);

#endif
