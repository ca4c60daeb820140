/* fuzz_config.c - libFuzzer harness: a model family's config.json on arbitrary bytes.
 * The input is written as config.json beside each of the three small family layers of
 * tests/hostile/corpus (cfg_model_qwen3, _deepseek_v3, _gpt_oss: top-k, grouped and
 * scaled routers, the activation limit) and each folder is loaded (moe_load), and beside
 * the corpus' small network (net_model: a GPT-2 whose block 0 is an MoE layer), loaded
 * whole (net_load): every value is read through the validated readers
 * (io/config_json.h), so a config is refused with a message or gives a usable router
 * and network, never a cast of a huge double, an allocation the files do not back or a
 * hang. Seeds: the cfg_* and net_* folders' config.json under tests/hostile/corpus. */
#include "fuzz_common.h"

#include <string.h>

#include "io/model_io.h"
#include "network/net_model.h"

#define NDIRS 4
static const char *const MODELS[NDIRS] = {"cfg_model_qwen3", "cfg_model_deepseek_v3", "cfg_model_gpt_oss",
                                          "net_model"};
static char dirs[NDIRS][64];

static void setup(void) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) abort();
    for (int i = 0; i < NDIRS; i++) {
        snprintf(dirs[i], sizeof dirs[i], "/tmp/fuzz_config.XXXXXX");
        if (!mkdtemp(dirs[i])) abort();
        char src[4200], dst[128];
        snprintf(src, sizeof src, "%s/tests/hostile/corpus/%s.safetensors", cwd, MODELS[i]);
        snprintf(dst, sizeof dst, "%s/model.safetensors", dirs[i]);
        if (symlink(src, dst)) abort();
    }
}

/* A network that loads is one the evaluator can run: heads dividing n_embd, its MoE
 * blocks at their place with a usable router of n_embd wide experts. */
static void check_network(const char *dir) {
    net_model net;
    ms_err err;
    if (net_load(&net, dir, NULL, &err)) return;
    const net_config *c = &net.cfg;
    if (c->nhead < 1 || c->d % c->nhead || c->nlayer < 1 || c->nlayer > NET_MAX_LAYERS) abort();
    for (int i = 0; i < c->nmoe; i++) {
        const moe_config *mc = &net.moe[i].cfg;
        if (c->moe_of[c->moe_layers[i]] != i || mc->d != c->d || mc->k < 1 || mc->k > mc->n) abort();
    }
    net_free(&net);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dirs[0][0]) setup();
    for (int i = 0; i < NDIRS; i++) {
        char cfg[128];
        snprintf(cfg, sizeof cfg, "%s/config.json", dirs[i]);
        FILE *f = fopen(cfg, "wb");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
        if (i == NDIRS - 1) {
            check_network(dirs[i]);
            continue;
        }
        moe_model m;
        ms_err err;
        if (moe_load(&m, dirs[i], NULL, NULL, &err) == 0) {
            // a router that loads is usable: k in 1..n, groups dividing n
            const moe_config *c = &m.cfg;
            if (c->k < 1 || c->k > c->n || (c->n_group > 1 && c->n % c->n_group) ||
                !(c->scale > 0) || c->scale > 1e6)
                abort();
            moe_free(&m);
        }
    }
    return 0;
}
