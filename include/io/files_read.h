/* files_read.h - the checkpoint files the loaders opened, by device and inode
 * (checkpoint.c notes each shard it maps): a report's digest of a folder input
 * covers those (provenance.c), never the folder's other files. Process-wide,
 * thread-safe. */
#ifndef MS_FILES_READ_H
#define MS_FILES_READ_H

#include <sys/types.h>

typedef struct {
    dev_t dev;
    ino_t ino;
} file_id;

/* path was opened (a path stat cannot read is not noted) */
void files_read_note(const char *path);
/* the files noted so far, sorted (malloc'd; *n of them), for files_read_in */
file_id *files_read_sorted(int *n);
/* is path (by device and inode) one of ids? */
int files_read_in(const file_id *ids, int n, const char *path);
/* forget them (prov_reset) */
void files_read_reset(void);

#endif
