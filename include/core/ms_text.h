/* ms_text.h - text from a file made safe to print on a terminal.
 *
 * Tensor names, metadata keys and values, layer prefixes and file names come
 * from files a user may not trust: printed raw, an ESC sequence in a name sets
 * the terminal's title, clears the screen or forges a line ("\r\n" followed by
 * a fake message). ms_escape keeps valid UTF-8 text as it is and writes every
 * C0 control character, DEL, C1 control (U+0080..U+009F, which terminals read as
 * CSI, OSC, ...) and every byte that is not part of valid UTF-8 as \xHH (\n, \r
 * and \t as such). The result is printable UTF-8 without control characters,
 * and escaping it again changes nothing. Every error message is escaped when it
 * is formed (ms_fail), and `info` escapes what it prints from the file. */
#ifndef MS_TEXT_H
#define MS_TEXT_H

#include <stddef.h>

/* s escaped into out (cap > 0: always terminated, cut at a character boundary
 * when it does not fit); returns the length the whole escape needs (as
 * snprintf does), so a caller can size out. */
size_t ms_escape(char *out, size_t cap, const char *s);
/* s escaped, malloc'd (ms_malloc). */
char *ms_escaped(const char *s);
/* Does s need escaping (a control character or invalid UTF-8 in it)? */
int ms_text_unsafe(const char *s);

/* Shorten a message in place to fewer than cap bytes by cutting the middle of
 * its longest space-free runs (paths, names) to "a/b/...y/z", so the words
 * around them - the reason - stay whole; only when no run is long enough is
 * the end cut. Cuts fall on UTF-8 character boundaries. */
void ms_text_fit(char *s, size_t cap);

#endif
