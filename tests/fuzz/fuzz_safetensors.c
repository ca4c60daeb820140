/* fuzz_safetensors.c - libFuzzer harness: st_open on arbitrary bytes, then read every
 * tensor with every reader. Anything st_open accepts must be safe to read in full. */
#include "fuzz_common.h"

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    st_file f;
    ms_err err;
    if (st_open(&f, fuzz_file(data, size), &err)) return 0;
    for (int i = 0; i < f.ntensors; i++) {
        const st_tensor *t = &f.tensors[i];
        // validated: numel * elemsize == end - begin <= data_size, so numel is small here
        size_t n = t->numel ? (size_t)t->numel : 1;
        float *a = ms_malloc(n * sizeof(float));
        double *b = ms_malloc(n * sizeof(double));
        int64_t *c = ms_malloc(n * sizeof(int64_t));
        st_read_f32(&f, t, a, &err);
        st_read_f64(&f, t, b, &err);
        st_read_i64(&f, t, c, &err);
        st_read_f32_shape(&f, t->name, t->ndim, t->shape, a, &err);
        free(a);
        free(b);
        free(c);
        if (st_find(&f, t->name) == NULL) abort(); // every listed tensor can be found
    }
    for (int i = 0; i < f.nmeta; i++)
        if (st_meta(&f, f.meta_keys[i]) == NULL) abort();
    st_close(&f);
    return 0;
}
