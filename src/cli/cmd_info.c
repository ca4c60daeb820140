/* cmd_info.c - `moescope info CKPT`: architecture, parameter counts, metadata
 * and the other MoE layers in the file. */
#include <cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ms_text.h"
#include "io/atomic_file.h"
#include "cli/cli.h"
#include "io/checkpoint.h"
#include "analysis/diagnose.h"
#include "io/family.h"
#include "io/json_file.h"
#include "model/model.h"
#include "model/symmetry.h"
#include "analysis/ms_limits.h"
#include "io/model_io.h"

static const char *USAGE = "moescope info CKPT [--layer L] [--json F]";

static void help(void) {
    printf("usage: %s\n\n"
           "Architecture (n, d, h, k, s, C, router, activation, residual, biases, head),\n"
           "parameter counts, metadata and the MoE layers present in a checkpoint. For a\n"
           "network (a GPT-2, ViT or Hugging Face decoder whose feed-forward block(s) are MoE)\n"
           "first its blocks, which are MoE, and the parameters of the backbone and of the\n"
           "MoE blocks.\n\n"
           "  --layer L   layer prefix (default moe; a network's: the MoE block's index)\n"
           "  --json F    write the same facts as JSON to F\n"
           "  --help      this text\n",
           USAGE);
}

/* The router's values and where each came from (config.json, the family's
 * default, the command line). */
static void print_origins(const moe_config *c, cJSON *root) {
    const unsigned char *o = c->origin;
    printf("router from k = %d (%s), %s (%s), scores %s, routed scale %g (%s)", c->k,
           moe_origin_name(o[RP_K]), c->renorm == RENORM_YES ? "renormalised" : "not renormalised",
           moe_origin_name(o[RP_RENORM]), moe_score_name(c->score), c->scale,
           moe_origin_name(o[RP_SCALE]));
    if (c->n_group > 1)
        printf(", groups %d keep %d (%s)", c->n_group, c->topk_group, moe_origin_name(o[RP_GROUPS]));
    printf("\n");
    if (!root) return;
    cJSON *r = cJSON_AddObjectToObject(root, "router_origin");
    cJSON_AddStringToObject(r, "k", moe_origin_name(o[RP_K]));
    cJSON_AddStringToObject(r, "renormalise", moe_origin_name(o[RP_RENORM]));
    cJSON_AddStringToObject(r, "scale", moe_origin_name(o[RP_SCALE]));
    cJSON_AddStringToObject(r, "groups", moe_origin_name(o[RP_GROUPS]));
}

/* One MoE layer's line (and JSON object): family, block, n, d, h, k, router,
 * shared experts; lc NULL when its shards were not read (unread names one). */
static void info_layer_line(const family_layer *l, const moe_config *lc, const char *unread,
                            int chosen, cJSON *arr) {
    char router[96] = "";
    if (lc)
        snprintf(router, sizeof router, "%s top-%d%s%s", moe_score_name(lc->score), lc->k,
                 lc->renorm == RENORM_YES ? " renorm" : "", lc->n_group > 1 ? " grouped" : "");
    char *prefix = ms_escaped(l->prefix), *shard = unread ? ms_escaped(unread) : NULL;
    if (lc)
        printf("  %-44s %-11s L%-3d n %-4d d %-5d h %-5d %s, shared %s%s\n", prefix,
               family_name(l->family), l->block, lc->n, lc->d, lc->h, router,
               lc->s ? (lc->shared_gated ? "1 gated" : "1") : "none", chosen ? "  (this one)" : "");
    else
        printf("  %-44s %-11s L%-3d (in %s, not read)\n", prefix, family_name(l->family),
               l->block, shard);
    free(prefix);
    free(shard);
    if (!arr) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "prefix", l->prefix);
    cJSON_AddStringToObject(o, "family", family_name(l->family));
    cJSON_AddNumberToObject(o, "block", l->block);
    cJSON_AddBoolToObject(o, "read", lc != NULL);
    if (lc) {
        cJSON_AddNumberToObject(o, "n", lc->n);
        cJSON_AddNumberToObject(o, "d", lc->d);
        cJSON_AddNumberToObject(o, "h", lc->h);
        cJSON_AddNumberToObject(o, "k", lc->k);
        cJSON_AddStringToObject(o, "router", router);
        cJSON_AddNumberToObject(o, "shared", lc->s);
    } else {
        cJSON_AddStringToObject(o, "shard", unread);
    }
    cJSON_AddItemToArray(arr, o);
}

/* Every MoE layer of a real checkpoint. The layer names come from the index
 * alone; a layer's dimensions need its tensors' headers, so they are shown
 * for the chosen layer and every layer whose shards that already mapped (all
 * of them in a single file), and the others are listed with the shard that
 * holds them, unread: a large model's other shards are never opened. */
static int info_family_layers(const char *path, const moe_model *m, cJSON *root, ms_err *err) {
    ckpt c;
    if (ckpt_open(&c, path, err)) return -1;
    family_layer *ls = NULL;
    const family_overrides *fo = cli_overrides();
    int nl = 0, rc = family_find_layers(&c, fo->family, &ls, &nl, err), nread = 0;
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "moe_layers") : NULL;
    printf("family      %s%s\n", moe_family(&m->cfg), c.config ? " (config.json read)" : "");
    print_origins(&m->cfg, root);
    printf("MoE layers  %d\n", nl);
    moe_config *lc = ms_calloc((size_t)(nl ? nl : 1), sizeof(moe_config));
    char *got = ms_calloc((size_t)(nl ? nl : 1), 1);
    for (int i = 0; i < nl && !rc; i++) // the chosen layer first: its shards are the ones to map
        if (!strcmp(ls[i].prefix, m->layer) && !(rc = family_describe(&c, &ls[i], fo, &lc[i], err)))
            got[i] = 1;
    for (int i = 0; i < nl && !rc; i++) {
        const char *unread = got[i] ? NULL : ckpt_unmapped_under(&c, ls[i].prefix);
        if (!got[i] && !unread && !(rc = family_describe(&c, &ls[i], fo, &lc[i], err))) got[i] = 1;
        if (rc) break;
        nread += got[i];
        info_layer_line(&ls[i], got[i] ? &lc[i] : NULL, unread, !strcmp(ls[i].prefix, m->layer), arr);
    }
    if (!rc && nread < nl)
        printf("            (%d of %d layers read: the others lie in shards not opened; --layer "
               "names one)\n",
               nread, nl);
    free(lc);
    free(got);
    family_layers_free(ls, nl);
    ckpt_close(&c);
    return rc;
}

/* a decoder's attention, norms and head, in the terms of its config.json */
static void info_decoder(const net_config *c) {
    const net_arch_desc *A = net_arch_of(c->arch);
    static const char *const qkn[] = {"", ", q/k RMSNorms per head", ", q/k RMSNorms over the projection"};
    printf("network     %s: %d blocks, d = %d, %d heads of %d (%d key/value heads), V = %d, P = %d,\n"
           "            RMSNorm eps %g, rotary embeddings (theta %g, %d of %d dims%s%s)%s%s%s,\n"
           "            dense MLPs SiLU-gated (width %d), LM head %s%s\n",
           A->model_type, c->nlayer, c->d, c->nhead, c->hd, c->nkv, c->vocab, c->npos, c->eps, c->theta, c->rot,
           c->hd, strcmp(c->rope_kind, "default") ? ", scaling " : "", strcmp(c->rope_kind, "default") ? c->rope_kind : "", qkn[A->qk_norm],
           c->qkv_bias ? ", q/k/v biases" : "", c->window ? ", sliding window" : "", c->ff,
           c->tied ? "tied to embed_tokens" : "lm_head.weight",
           c->res_mult != 1.0 || c->emb_mult != 1.0 || c->logit_div != 1.0 ? " (Granite's multipliers)" : "");
    if (A->attn == NET_ATTN_MOA)
        printf("            attention a mixture of %d experts (each token's top %d: its queries, %d heads\n"
               "            each, and output projection), kv heads tiled; the blocks' RMSNorms eps %g\n",
               c->moa_n, c->moa_k, c->nkv, c->block_eps);
}

/* A Hugging Face decoder's network from its config.json alone (its weights are
 * read only by a network command: eval with token ids, ...); a config moescope
 * cannot compute as a network is said, and the layer's facts follow. */
static int info_decoder_config(const char *path, cJSON *root) {
    ckpt ck;
    net_config c;
    ms_err e;
    if (ckpt_open(&ck, path, &e)) return 0;
    int rc = net_config_read(&ck, &c, &e);
    ckpt_close(&ck);
    if (rc) {
        printf("network     not computable as a network: %s\n\n", e.msg);
        return 0;
    }
    info_decoder(&c);
    printf("blocks      MoE at");
    for (int i = 0; i < c.nmoe; i++) printf("%s %d", i ? "," : "", c.moe_layers[i]);
    printf(" of %d; the others dense\n", c.nlayer);
    printf("            (a network with an evaluation set of input_ids: eval, landscape, curve, ... --eval E)\n");
    printf("\nthe chosen MoE block (--layer):\n");
    if (root) {
        cJSON *nj = cJSON_AddObjectToObject(root, "network");
        cJSON_AddStringToObject(nj, "model_type", net_arch_of(c.arch)->model_type);
        cJSON_AddNumberToObject(nj, "num_hidden_layers", c.nlayer);
        cJSON_AddNumberToObject(nj, "hidden_size", c.d);
        cJSON_AddNumberToObject(nj, "num_attention_heads", c.nhead);
        cJSON_AddNumberToObject(nj, "num_key_value_heads", c.nkv);
        cJSON_AddNumberToObject(nj, "head_dim", c.hd);
        cJSON_AddNumberToObject(nj, "vocab_size", c.vocab);
        cJSON *ml = cJSON_AddArrayToObject(nj, "moe_layers");
        for (int i = 0; i < c.nmoe; i++) cJSON_AddItemToArray(ml, cJSON_CreateNumber(c.moe_layers[i]));
    }
    return 0;
}

/* A network checkpoint's architecture: its blocks, which are MoE, the
 * parameter counts (printed before the chosen block's layer facts). */
static int info_network(const char *path, cJSON *root, ms_err *err) {
    int a = net_path_arch(path);
    if (a >= 0 && net_arch_of((net_arch)a)->eval_only) return info_decoder_config(path, root);
    net_model net;
    if (net_load(&net, path, cli_overrides(), err)) return -1;
    const net_config *c = &net.cfg;
    const char *act = c->act == ACT_GELU ? "gelu (erf form)" : c->act == ACT_RELU ? "relu" : "gelu_new (tanh form)";
    const net_arch_desc *A = net_arch_of(c->arch);
    if (A->embed == NET_EMBED_PATCHES)
        printf("network     vit: %d blocks, d = %d, %d heads of %d, %d classes; %d x %d images of %d channel(s)\n"
               "            in %d patches of %d x %d + CLS = %d tokens, bidirectional attention,\n"
               "            LayerNorm eps %g, dense MLPs %s (width %d), classifier on the CLS token\n",
               c->nlayer, c->d, c->nhead, c->d / c->nhead, c->vocab, c->image, c->image, c->chans, c->npatch,
               c->patch, c->patch, c->npos, c->eps, act, c->ff);
    else if (A->embed == NET_EMBED_TOKENS)
        info_decoder(c);
    else
        printf("network     gpt2: %d blocks, d = %d, %d heads of %d, V = %d, P = %d, LayerNorm eps %g,\n"
               "            dense MLPs %s (width %d), LM head %s%s\n",
               c->nlayer, c->d, c->nhead, c->d / c->nhead, c->vocab, c->npos, c->eps, act, c->ff,
               c->tied ? "tied to wte" : "lm_head.weight", net.lm_b ? " + lm_head.bias" : "");
    size_t moe_total = 0;
    cJSON *nj = root ? cJSON_AddObjectToObject(root, "network") : NULL, *blocks = NULL;
    if (nj) {
        cJSON_AddStringToObject(nj, "model_type", A->model_type);
        cJSON_AddNumberToObject(nj, A->k_layers, c->nlayer);
        cJSON_AddNumberToObject(nj, A->k_d, c->d);
        cJSON_AddNumberToObject(nj, A->k_heads, c->nhead);
        if (A->target == NET_TARGET_CLASS) {
            cJSON_AddNumberToObject(nj, "num_labels", c->vocab);
            cJSON_AddNumberToObject(nj, "image_size", c->image);
            cJSON_AddNumberToObject(nj, "patch_size", c->patch);
            cJSON_AddNumberToObject(nj, "num_channels", c->chans);
            cJSON_AddNumberToObject(nj, "tokens", c->npos);
        } else {
            cJSON_AddNumberToObject(nj, "vocab_size", c->vocab);
            cJSON_AddNumberToObject(nj, A->k_pos, c->npos);
            cJSON_AddBoolToObject(nj, "tied", c->tied);
        }
        blocks = cJSON_AddArrayToObject(nj, "blocks");
    }
    printf("blocks     ");
    for (int L = 0; L < c->nlayer; L++) {
        int mi = c->moe_of[L];
        const moe_config *mc = mi >= 0 ? &net.moe[mi].cfg : NULL;
        if (mc) {
            size_t np = net_moe_params(&net.moe[mi]);
            moe_total += np;
            char rt[32] = "dense";
            if (mc->router == ROUTER_TOPK) snprintf(rt, sizeof rt, "top-%d", mc->k);
            printf(" %d MoE (n %d, h %d, %s%s, %zu parameters)%s", L, mc->n, mc->h, rt,
                   mc->s ? " + shared" : "", np, L + 1 < c->nlayer ? ";" : "");
        } else {
            printf(" %d dense%s", L, L + 1 < c->nlayer ? ";" : "");
        }
        if ((L + 1) % 3 == 0 && L + 1 < c->nlayer) printf("\n           ");
        if (!blocks) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "block", L);
        cJSON_AddBoolToObject(o, "moe", mc != NULL);
        if (mc) cJSON_AddStringToObject(o, "layer", net.moe[mi].layer);
        if (mc) cJSON_AddNumberToObject(o, "parameters", (double)net_moe_params(&net.moe[mi]));
        cJSON_AddItemToArray(blocks, o);
    }
    printf("\nparameters  network %zu: backbone %zu (frozen, shared by every seed), MoE blocks %zu\n",
           net_backbone_params(&net) + moe_total, net_backbone_params(&net), moe_total);
    if (nj) {
        cJSON_AddNumberToObject(nj, "backbone_parameters", (double)net_backbone_params(&net));
        cJSON_AddNumberToObject(nj, "moe_parameters", (double)moe_total);
    }
    printf("\nthe chosen MoE block (--layer):\n");
    net_free(&net);
    return 0;
}

/* The layer of path could not be loaded: a network's own checks name what is wrong
 * with it (a moe.layers block without its experts) better than the layer reader,
 * which only sees a gate without experts. 1 after the message. */
static int info_load_error(const char *path, const ms_err *layer_err) {
    net_model net;
    ms_err err;
    int a = net_path_arch(path); // a decoder's layers open without its network
    if (a < 0 || net_arch_of((net_arch)a)->eval_only) return cli_error("%s", layer_err->msg);
    if (net_load(&net, path, cli_overrides(), &err)) return cli_error("%s", err.msg);
    net_free(&net);
    return cli_error("%s", layer_err->msg);
}

/* The metadata and a native file's layers, as the file has them: escaped for the
 * terminal (an ESC sequence in a key would set the title or clear the screen). */
static void print_meta(const moe_model *m) {
    if (!m->nmeta) return;
    printf("metadata\n");
    for (int i = 0; i < m->nmeta; i++) {
        char *k = ms_escaped(m->meta[i].key), *v = ms_escaped(m->meta[i].value);
        printf("  %-32s %s\n", k, v);
        free(k);
        free(v);
    }
}

/* A sharded checkpoint's layer: the metadata of the shard holding its gate (where
 * the sample generators write what a seed is: its recipe, seed, losses), as
 * print_meta shows a native file's; into root's "metadata" too with --json. */
static void print_shard_meta(const char *path, const moe_model *m, cJSON *root) {
    ckpt c;
    if (m->nmeta || ckpt_open(&c, path, NULL)) return;
    const st_file *f = ckpt_layer_shard(&c, m->layer);
    if (f && f->nmeta) {
        char *sh = ms_escaped(f->path);
        printf("metadata    (of %s)\n", sh);
        free(sh);
        cJSON *mj = root ? cJSON_AddObjectToObject(root, "metadata") : NULL;
        for (int i = 0; i < f->nmeta; i++) {
            char *k = ms_escaped(f->meta_keys[i]), *v = ms_escaped(f->meta_vals[i]);
            printf("  %-32s %s\n", k, v);
            free(k);
            free(v);
            if (mj) cJSON_AddStringToObject(mj, f->meta_keys[i], f->meta_vals[i]);
        }
    }
    ckpt_close(&c);
}

static void print_native_layers(const moe_model *m, char **layers, int nlayers) {
    printf("MoE layers  ");
    for (int i = 0; i < nlayers; i++) {
        char *l = ms_escaped(layers[i]);
        printf("%s%s%s", i ? ", " : "", l, !strcmp(layers[i], m->layer) ? " (this one)" : "");
        free(l);
    }
    printf("\n");
}

/* "parameters  T total (B bytes as F32): gate G, experts E (e each), ..." - the
 * parts the layer has, the router's selection bias, the shared experts' gate and
 * the output bias among them */
static void print_layout(const moe_layout *l) {
    printf("parameters  %zu total (%zu bytes as F32): gate %zu", l->total, l->total * sizeof(float), l->gate);
    if (l->corr) printf(" + selection bias %zu", l->corr);
    printf(", experts %zu (%zu each), shared %zu", l->experts, l->expert, l->shared);
    if (l->shared_gate) printf(" + shared gate %zu", l->shared_gate);
    if (l->out_bias) printf(", output bias %zu", l->out_bias);
    printf(", head %zu\n", l->norm + l->head);
    if (l->stored != l->total)
        printf("            %zu in the file's tensors (the layout has no biases where moescope holds zeros)\n",
               l->stored);
}

static void layout_json(cJSON *par, const moe_layout *l) {
    cJSON_AddNumberToObject(par, "total", (double)l->total);
    cJSON_AddNumberToObject(par, "stored", (double)l->stored);
    cJSON_AddNumberToObject(par, "bytes", (double)(l->total * sizeof(float)));
    cJSON_AddNumberToObject(par, "gate", (double)l->gate);
    cJSON_AddNumberToObject(par, "selection_bias", (double)l->corr);
    cJSON_AddNumberToObject(par, "experts", (double)l->experts);
    cJSON_AddNumberToObject(par, "per_expert", (double)l->expert);
    cJSON_AddNumberToObject(par, "shared", (double)l->shared);
    cJSON_AddNumberToObject(par, "shared_gate", (double)l->shared_gate);
    cJSON_AddNumberToObject(par, "output_bias", (double)l->out_bias);
    cJSON_AddNumberToObject(par, "head", (double)(l->norm + l->head));
}

int cmd_info(int argc, char **argv) {
    const char *layer = NULL, *json = NULL;
    static const struct option opts[] = {{"layer", required_argument, 0, 'l'},
                                         {"json", required_argument, 0, 'j'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":l:j:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'l': layer = optarg; break;
        case 'j': json = optarg; break;
        case 'h': help(); return 0;
        case ':': return cli_option_error(USAGE, "info", ch, argc, argv);
        default: return cli_option_error(USAGE, "info", ch, argc, argv);
        }
    }
    if (optind >= argc) return cli_usage_error(USAGE, "info: missing the checkpoint");
    if (optind + 1 < argc) return cli_usage_error(USAGE, "info: unexpected argument '%s'", argv[optind + 1]);
    const char *path = argv[optind];

    ms_err err;
    const out_spec outs[1] = {{json, "--json", OUT_FILE}};
    int orc = cli_check_outputs("info", USAGE, outs, 1, &path, 1);
    if (orc) return orc;
    moe_model m;
    if (moe_load(&m, path, layer, cli_overrides(), &err)) return info_load_error(path, &err);
    if (ms_limits_check(&m, NULL, NULL, MS_USE_COST, &err)) { // the genericity diagnostics
        moe_free(&m);
        return cli_error("%s", err.msg);
    }
    char **layers = NULL;
    int nlayers = 0;
    if (strcmp(moe_family(&m.cfg), "native") == 0 && moe_list_layers(path, &layers, &nlayers, &err)) {
        moe_free(&m);
        return cli_error("%s", err.msg);
    }
    const moe_config *c = &m.cfg;
    moe_layout pl; // the counts of the allocation itself, every part the layer holds
    moe_layout_of(c, &pl);
    struct stat sb;
    long long fsize = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    int is_net = net_path_is_network(path);
    if (is_net && info_network(path, root, &err)) {
        moe_free(&m);
        cJSON_Delete(root);
        return cli_error("%s", err.msg);
    }
    const char *warning = NULL;
    if (c->router == ROUTER_TOPK && c->k == 1)
        warning = "top-1 routing is outside the theory: positive scaling of the gate scores is an "
                  "extra symmetry, so expert orders may not be identifiable";

    // names, keys and values come from the file: escaped for the terminal (ms_text.h)
    char *epath = ms_escaped(path), *elayer = ms_escaped(m.layer);
    if (fsize >= 0 && S_ISDIR(sb.st_mode)) printf("file        %s (a directory)\n", epath);
    else printf("file        %s (%lld bytes)\n", epath, fsize);
    printf("layer       %s\n", elayer);
    free(epath);
    free(elayer);
    printf("shape       n = %d experts, d = %d, h = %d, s = %d shared\n", c->n, c->d, c->h, c->s);
    char rdesc[512];
    moe_router_describe(c, rdesc, sizeof rdesc);
    moe_symmetry sym;
    moe_symmetry_group(c, &sym);
    printf("router      %s\n", rdesc);
    if (moe_router_defaulted(c)) // said loudly: a top-k model read this way is another function
        printf("            (no routing metadata moescope.router: read as this default; a top-k model\n"
               "            needs --top-k K, or the metadata moescope.router = topk, moescope.top_k = K)\n");
    printf("symmetry    %s\n            %s\n", sym.name, sym.why);
    printf("activation  %s%s\n", moe_act_name(c->act),
           c->act == ACT_GELU ? " (exact erf form)" : c->act == ACT_GELU_TANH ? " (GPT-2's tanh form)" : "");
    printf("residual    %s\n", c->residual ? "yes (z = x + D(x))" : "no (z = D(x))");
    printf("biases      gate %s, experts %s\n", c->has_gate_bias ? "yes" : "no (zeros)",
           c->has_expert_bias ? "yes" : "no (zeros)");
    if (c->has_head)
        printf("head        %sLinear to C = %d outputs\n", c->has_norm ? "LayerNorm, " : "", c->C);
    else if (is_net) // the loss is the network's: its LM head or classifier, after the other blocks
        printf("head        none of the block's own (the network's %s, above)\n",
               !strcmp(moe_family(c), "vit") ? "classifier" : "LM head");
    else
        printf("head        none (layer-only mode)\n");
    print_layout(&pl);
    print_meta(&m);
    print_shard_meta(path, &m, root);
    if (nlayers) {
        print_native_layers(&m, layers, nlayers);
    } else if (info_family_layers(path, &m, root, &err)) {
        moe_free(&m);
        cJSON_Delete(root);
        return cli_error("%s", err.msg);
    }
    // genericity diagnostics, printed and, with --json, kept for the JSON
    diag_info_print(stdout, &m, root);
    if (warning) fprintf(stderr, "moescope: warning: %s\n", warning);

    int rc = 0;
    if (json) {
        cJSON_AddStringToObject(root, "file", path);
        cJSON_AddNumberToObject(root, "file_bytes", (double)fsize);
        cJSON_AddStringToObject(root, "layer", m.layer);
        cJSON_AddNumberToObject(root, "n", c->n);
        cJSON_AddNumberToObject(root, "d", c->d);
        cJSON_AddNumberToObject(root, "h", c->h);
        if (c->router == ROUTER_TOPK) cJSON_AddNumberToObject(root, "k", c->k);
        else cJSON_AddNullToObject(root, "k");
        cJSON_AddNumberToObject(root, "s", c->s);
        cJSON_AddNumberToObject(root, "C", c->C);
        cJSON_AddStringToObject(root, "router", moe_router_name(c->router));
        cJSON_AddStringToObject(root, "router_description", rdesc);
        cJSON *so = cJSON_AddObjectToObject(root, "symmetry");
        cJSON_AddStringToObject(so, "group", sym.name);
        cJSON_AddStringToObject(so, "why", sym.why);
        cJSON_AddBoolToObject(so, "translation", sym.translation);
        cJSON_AddNumberToObject(so, "groups", sym.groups);
        cJSON_AddBoolToObject(so, "top1", sym.top1);
        cJSON_AddStringToObject(root, "activation", moe_act_name(c->act));
        cJSON_AddBoolToObject(root, "residual", c->residual);
        cJSON *bias = cJSON_AddObjectToObject(root, "biases");
        cJSON_AddBoolToObject(bias, "gate", c->has_gate_bias);
        cJSON_AddBoolToObject(bias, "experts", c->has_expert_bias);
        if (c->has_head) {
            cJSON *head = cJSON_AddObjectToObject(root, "head");
            cJSON_AddBoolToObject(head, "layernorm", c->has_norm);
            cJSON_AddNumberToObject(head, "classes", c->C);
        } else {
            cJSON_AddNullToObject(root, "head");
        }
        layout_json(cJSON_AddObjectToObject(root, "parameters"), &pl);
        if (m.nmeta || !cJSON_GetObjectItem(root, "metadata")) {
            cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
            for (int i = 0; i < m.nmeta; i++) cJSON_AddStringToObject(meta, m.meta[i].key, m.meta[i].value);
        }
        cJSON *ls = cJSON_AddArrayToObject(root, "layers");
        for (int i = 0; i < nlayers; i++) cJSON_AddItemToArray(ls, cJSON_CreateString(layers[i]));
        cJSON *warn = cJSON_AddArrayToObject(root, "warnings");
        if (warning) cJSON_AddItemToArray(warn, cJSON_CreateString(warning));
        if (json_file_write(root, json, &err)) rc = cli_error("%s", err.msg);
    }
    for (int i = 0; i < nlayers; i++) free(layers[i]);
    free(layers);
    moe_free(&m);
    return rc;
}
