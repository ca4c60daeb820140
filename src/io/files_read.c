/* files_read.c - the checkpoint files the loaders opened (files_read.h). Its own
 * file and lock: checkpoint.c notes here, and provenance.c, which opens
 * checkpoints to hash them, reads here, so neither needs the other both ways. */
#include "io/files_read.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ms_error.h"

static struct {
    pthread_mutex_t mu;
    file_id *ids;
    int n, cap;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

void files_read_note(const char *path) {
    struct stat sb;
    if (stat(path, &sb)) return;
    pthread_mutex_lock(&R.mu);
    int seen = 0;
    for (int i = R.n - 1; i >= 0 && i >= R.n - 8 && !seen; i--) // the recent ones
        seen = R.ids[i].dev == sb.st_dev && R.ids[i].ino == sb.st_ino;
    if (!seen) {
        if (R.n == R.cap) {
            R.cap = R.cap ? 2 * R.cap : 16;
            R.ids = ms_realloc(R.ids, (size_t)R.cap * sizeof(file_id));
        }
        R.ids[R.n++] = (file_id){sb.st_dev, sb.st_ino};
    }
    pthread_mutex_unlock(&R.mu);
}

static int cmp_file_id(const void *a, const void *b) {
    const file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

file_id *files_read_sorted(int *n) {
    pthread_mutex_lock(&R.mu);
    *n = R.n;
    file_id *ids = ms_malloc((size_t)(R.n ? R.n : 1) * sizeof(file_id));
    memcpy(ids, R.ids, (size_t)R.n * sizeof(file_id));
    pthread_mutex_unlock(&R.mu);
    qsort(ids, (size_t)*n, sizeof(file_id), cmp_file_id);
    return ids;
}

int files_read_in(const file_id *ids, int n, const char *path) {
    struct stat sb;
    if (stat(path, &sb)) return 0;
    file_id k = {sb.st_dev, sb.st_ino};
    return bsearch(&k, ids, (size_t)n, sizeof k, cmp_file_id) != NULL;
}

void files_read_reset(void) {
    pthread_mutex_lock(&R.mu);
    free(R.ids);
    R.ids = NULL;
    R.n = R.cap = 0;
    pthread_mutex_unlock(&R.mu);
}
