/* csv.h - text fields of the CSV reports (RFC 4180).
 *
 * Names in a CSV row come from files and directories a user may not control
 * (a file name with a comma, a layer prefix with a quote or a line break): one
 * written raw splits its row into extra columns or rows. */
#ifndef MS_CSV_H
#define MS_CSV_H

#include <stdio.h>

/* s as one field: quoted, its quotes doubled, when it holds a comma, a quote or
 * a line break; else as it is. */
void csv_field(FILE *f, const char *s);

#endif
