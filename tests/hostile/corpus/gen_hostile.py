#!/usr/bin/python3
"""gen_hostile.py - hostile checkpoints that are valid safetensors but lie about the
model: they declare far more than they hold, so a loader that allocates before it has
checked every shape would reserve memory out of proportion to the file.

Run with Debian's python3:  /usr/bin/python3 tests/hostile/corpus/gen_hostile.py
Deterministic. Writes the files below into tests/hostile/corpus/, appends their rows to
expected.tsv (safetensors-level stage, read by tests/unit/test_safetensors.c) when missing,
and writes models.tsv (file <TAB> command <TAB> substring of the expected message),
read by tests/hostile/test_faults.sh, which runs `moescope COMMAND FILE` on each and also checks,
under AddressSanitizer, that no single allocation exceeds a few MiB.
(tests/hostile/gen_corpus.py rewrites expected.tsv: run this script after it.)

Round two (issue 17): `gen_hostile.py make OUTDIR` writes larger hostile files into
OUTDIR at test time (tests/hostile/test_hostile.sh), so none is checked in:
  many_experts      99,000 'moe.experts.<i>.fc1.weight' names, gate of n = 2
  meta_400k         a valid checkpoint with 400,000 metadata keys (over the cap)
  meta_90k, meta_90k_b  valid checkpoints (seeds 1, 2) with 90,000 metadata keys
  nul_raw           metadata key "m<NUL>oescope.activation" (a raw NUL byte)
  nul_escaped       metadata key "moescope.activation\u0000x"
  h_2_15            n = 2, d = 1, h = 2^15 (262 KB): an h x h matrix would be 8 GiB
  h_2_20            n = 2, d = 1, h = 2^20, F16 (8 MB)
  n4096_a, n4096_b  n = 4096, d = 2, h = 1 (seeds 1, 2), and n4096_eval
  n1024_a, n1024_b  the same with n = 1024; n80: n = 80, d = 3, h = 2
  big_1e18, big_3e38 and big_b, big_eval   fc1 of expert 2 scaled to 1e18 / 3.4e38
  big_head          a head whose weights reach 3.4e38
  lap_1e308         a 3 x 3 F64 cost of 1e308 (the optimal total overflows)
  lap_sparse        cost [20000, 20000] F32 of zeros, 1.6 GB, sparse (holes)
Networks (a GPT-2 whose feed-forward blocks are MoE layers: config.json model_type gpt2
with a "moe" object, evaluation sets of input_ids) are checked in as folders net_<case>/
(config.json beside a symlink to net_model.safetensors, a 2-block network of n_embd 8)
and net_eval_<case>.safetensors (NETWORKS below): n_embd not a multiple of n_head,
n_layer 1e9 or more than the file holds, n_embd and vocab_size that would be 4 TiB, a
moe.layers block that holds a dense MLP or no MLP at all, a NaN in a backbone tensor,
token ids past vocab_size or negative, sequences longer than n_positions; and config.json's
numbers (net_cfg_<case>/: moe.top_k 0, true, 1.5 or 1e9, n_embd 1e300, moe.layers [0, 0] or
["0"], layer_norm_epsilon 0, moe.num_experts 0, a moe.router with terminal escapes). ViT
folders vit_<case>/ (beside vit_model.safetensors, tests/lib/gen_vit.py's layout): image_size
1e300, a patch_size that does not divide it, num_labels against id2label, num_channels 0,
moe.top_k "1".
Round three (issue 30): `gen_hostile.py make3 OUTDIR` writes these directories:
  shards_60k/, shards_80k/   an index whose layer lies in one real shard and which
                    names 60,000 / 80,000 other (absent) shards, one per tensor: numbering
                    the shards was quadratic; 80,000 is over the 65,536-shard cap
  unread_a/, unread_b/  a Mixtral layer in the first of three shards (the test makes the
                    other two a FIFO and a link to /dev/zero)
  passthrough_big   a native layer and 16 KiB + 64 MiB (sparse) of other tensors, with
                    passthrough_big.offsets (the gate's end, the layer's end, the big
                    tensor's start): truncated while it is read
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_st(name, tensors, meta=None):
    """tensors: list of (name, dtype, shape, bytes). Returns the path."""
    header, data, off = {}, b"", 0
    for tn, dt, shape, raw in tensors:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def declared(name, kind, n, h):
    """Gate of n rows (d = 1) and one real expert of width h; the other n - 1 experts
    (kind "experts") or n shared experts (kind "shared") are 1x1 stubs."""
    t = [("moe.gate.weight", "F32", [n if kind == "experts" else 1, 1], f32([0.5] * (n if kind == "experts" else 1)))]
    t.append(("moe.experts.0.fc1.weight", "F32", [h, 1], f32([0.25] * h)))
    t.append(("moe.experts.0.fc2.weight", "F32", [1, h], f32([0.125] * h)))
    stubs = range(1, n) if kind == "experts" else range(n)
    for i in stubs:
        for w in ("fc1", "fc2"):
            t.append(("moe.%s.%d.%s.weight" % (kind, i, w), "F32", [1, 1], f32([1.0])))
    write_st(name, t)


# (file, safetensors stage, its substring, moescope command, model-level substring, what)
ENTRIES = [
    ("model_declared_experts.safetensors", "ok", "", "info",
     "tensor 'moe.experts.1.fc1.weight' has shape [1, 1], expected [4096, 1]",
     "gate [256, 1] and expert 0 of h = 4096, experts 1..255 are 1x1 stubs: "
     "256 full experts would be 12 MiB from a 79 KiB file"),
    ("model_declared_shared.safetensors", "ok", "", "info",
     "tensor 'moe.shared.0.fc1.weight' has shape [1, 1], expected [4096, 1]",
     "one expert of h = 4096 and 256 shared experts that are 1x1 stubs"),
    ("gate_2_40.safetensors", "open", "needs 4398046511104 bytes", "info",
     "needs 4398046511104 bytes",
     "gate shape [1, 2^40] F32 in a 100-byte file: refused before any allocation"),
    ("eval_2_40.safetensors", "open", "needs 4398046511104 bytes", "eval",
     "needs 4398046511104 bytes",
     "evaluation set with inputs [2^40, 1] in a tiny file"),
    # round three (issue 30)
    ("mxfp4_overflow.safetensors", "read", "unsupported dtype U8", "info",
     "model.layers.0.mlp.experts.down_proj_blocks' (MXFP4, decoded with its _scales) holds values up to 1.7e+38",
     "GPT-OSS MXFP4 experts, expert 0's down_proj scales 2^127: the overflow refusal names "
     "the file's blocks tensor (it named moescope's experts.0.fc2.weight)"),
    ("mxfp4_and_dense.safetensors", "read", "unsupported dtype U8", "info",
     "'model.layers.0.mlp.experts.down_proj' is there both dense and as MXFP4 (down_proj_blocks)",
     "GPT-OSS experts in MXFP4 and a dense down_proj too: ambiguous, refused (the dense one was ignored)"),
    ("meta_routed_scale_3e38.safetensors", "ok", "", "info",
     "moescope.routed_scale = '3e38' is not a positive number of at most 1e+06",
     "native metadata routed_scale 3e38 (it said 'is not a positive number')"),
    # text from the file reaches the terminal escaped
    ("inject_layer.safetensors", "ok", "", "info",
     "x\\x1B]0;owned\\x07\\x1B[2J\\r\\nmoescope: forged",
     "the only layer's prefix holds an OSC title, ESC[2J and a forged \\r\\n line: the "
     "refusal (no layer 'moe') lists it escaped"),
]

# config.json values held to the native metadata's rules (issue 30.7): directories
# cfg_<case>/ with config.json and model.safetensors (a symlink to one of the shared
# cfg_model_<family>.safetensors); listed in models.tsv only (they are not files)
CONFIGS = [
    ("cfg_k_zero", "qwen3", {"num_experts_per_tok": 0},
     "key 'num_experts_per_tok' = 0 is not an integer in 1..4"),
    ("cfg_k_negative", "qwen3", {"num_experts_per_tok": -1},
     "key 'num_experts_per_tok' = -1 is not an integer in 1..4"),
    ("cfg_k_true", "qwen3", {"num_experts_per_tok": True},
     "key 'num_experts_per_tok' = true is not an integer in 1..4"),
    ("cfg_k_1e9", "qwen3", {"num_experts_per_tok": 1e9},
     "key 'num_experts_per_tok' = 1000000000 is not an integer in 1..4"),
    ("cfg_k_1e300", "qwen3", {"num_experts_per_tok": 1e300},
     "key 'num_experts_per_tok' = 1e+300 is not an integer in 1..4"),
    ("cfg_k_fraction", "qwen3", {"num_experts_per_tok": 2.7},
     "key 'num_experts_per_tok' = 2.7 is not an integer in 1..4"),
    ("cfg_k_string", "qwen3", {"num_experts_per_tok": "2"},
     "key 'num_experts_per_tok' = \"2\" is not an integer in 1..4"),
    ("cfg_norm_number", "qwen3", {"norm_topk_prob": 2},
     "key 'norm_topk_prob' = 2 is not true or false"),
    ("cfg_groups_not_dividing", "deepseek_v3", {"n_group": 3, "topk_group": 2},
     "n_group = 3 (config.json) and topk_group = 2 (config.json) are not a grouping of the 8 experts"),
    ("cfg_topk_group_over", "deepseek_v3", {"n_group": 4, "topk_group": 5},
     "n_group = 4 (config.json) and topk_group = 5 (config.json) are not a grouping"),
    ("cfg_groups_fraction", "deepseek_v3", {"n_group": 2.5},
     "key 'n_group' = 2.5 is not an integer in 1..8"),
    ("cfg_k_over_groups", "deepseek_v3", {"n_group": 4, "topk_group": 1, "num_experts_per_tok": 3},
     "top_k = 3 is more than the 2 experts of the topk_group = 1 kept groups"),
    ("cfg_scale_zero", "deepseek_v3", {"routed_scaling_factor": 0},
     "key 'routed_scaling_factor' = 0 is not a positive number of at most 1e+06"),
    ("cfg_scale_1e39", "deepseek_v3", {"routed_scaling_factor": 1e39},
     "key 'routed_scaling_factor' = 1e+39 is not a positive number"),
    ("cfg_scale_1e30", "deepseek_v3", {"routed_scaling_factor": 1e30},
     "key 'routed_scaling_factor' = 1e+30 is not a positive number"),
    ("cfg_method_unknown", "deepseek_v3", {"topk_method": "gready"},
     "key 'topk_method' = \"gready\" is not one of"),
    ("cfg_limit_zero", "gpt_oss", {"swiglu_limit": 0},
     "key 'swiglu_limit' = 0 is not a positive number"),
    ("cfg_limit_negative", "gpt_oss", {"swiglu_limit": -7},
     "key 'swiglu_limit' = -7 is not a positive number"),
]


def family_layer(fam, n=4, d=4, h=4, seed=31):
    """A small layer of a model family in its own names (block 0)."""
    import random
    rnd = random.Random(seed)
    vals = lambda k: f32([rnd.uniform(-1, 1) for _ in range(k)])
    P = "model.layers.0.mlp"
    if fam == "gpt_oss":
        return [(P + ".router.weight", "F32", [n, d], vals(n * d)),
                (P + ".router.bias", "F32", [n], vals(n)),
                (P + ".experts.gate_up_proj", "F32", [n, d, 2 * h], vals(n * d * 2 * h)),
                (P + ".experts.gate_up_proj_bias", "F32", [n, 2 * h], vals(n * 2 * h)),
                (P + ".experts.down_proj", "F32", [n, h, d], vals(n * h * d)),
                (P + ".experts.down_proj_bias", "F32", [n, d], vals(n * d))]
    t = [(P + ".gate.weight", "F32", [n, d], vals(n * d))]
    if fam == "deepseek_v3":
        t.append((P + ".gate.e_score_correction_bias", "F32", [n], vals(n)))
    for e in range(n):
        t += [(P + ".experts.%d.gate_proj.weight" % e, "F32", [h, d], vals(h * d)),
              (P + ".experts.%d.up_proj.weight" % e, "F32", [h, d], vals(h * d)),
              (P + ".experts.%d.down_proj.weight" % e, "F32", [d, h], vals(d * h))]
    return t


def configs():
    sizes = {"qwen3": 4, "deepseek_v3": 8, "gpt_oss": 4}
    types = {"qwen3": "qwen3_moe", "deepseek_v3": "deepseek_v3", "gpt_oss": "gpt_oss"}
    for fam, n in sizes.items():
        write_st("cfg_model_%s.safetensors" % fam, family_layer(fam, n=n))
    for name, fam, cfg, _ in CONFIGS:
        d = os.path.join(HERE, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(dict({"model_type": types[fam]}, **cfg), f)
        link = os.path.join(d, "model.safetensors")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink("../cfg_model_%s.safetensors" % fam, link)


# network checkpoints (folders net_<case>/: config.json beside a symlink to MODEL, the
# base config NET_CFG with EDIT applied) and evaluation sets (net_eval_<case>.safetensors,
# run on net_ok); listed in models.tsv only:
# (name, model file, config edit or input_ids edit, command, substring)
NET_CFG = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 8, "n_layer": 2,
           "n_head": 2, "n_positions": 8, "vocab_size": 16, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "tie_word_embeddings": True,
           "moe": {"layers": [0], "num_experts": 2, "top_k": 1, "router": "topk",
                   "num_shared_experts": 0, "expert_activation": "relu",
                   "expert_intermediate_size": 4}}


def _set(path, value):
    def edit(c):
        o = c
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return edit


def _model(name):
    """the folder links to another model file"""
    def edit(c):
        c["__model__"] = name
    return edit


def _dup(key, first, second):
    """config.json's text holds `"key": first` and then `"key": second` in one object
    (json.dump cannot write it: the folder's writer replaces the marker)"""
    def edit(c):
        c["__dup__"] = (key, first, second)
    return edit


def _many(*edits):
    def edit(c):
        for e in edits:
            e(c)
    return edit


NETWORKS = [
    ("net_ok", "net_model", None, None, None),
    ("net_head_not_dividing", "net_model", _set(["n_head"], 3), "info",
     "net_head_not_dividing/config.json: n_embd = 8 is not a multiple of n_head = 3"),
    ("net_layers_1e9", "net_model", _set(["n_layer"], 10 ** 9), "info",
     "net_layers_1e9/config.json: key 'n_layer' = 1000000000 is not an integer in 1..256"),
    ("net_layers_256", "net_model", _set(["n_layer"], 256), "info",
     "net_layers_256: config.json's n_layer = 256, but the checkpoint has no block 2 (no tensor "
     "'transformer.h.2....')"),
    ("net_embd_huge", "net_model", _many(_set(["n_embd"], 65536), _set(["n_head"], 1),
                                         _set(["vocab_size"], 1 << 24)), "info",
     "net_embd_huge/model.safetensors: tensor 'transformer.wte.weight' has shape [16, 8], "
     "expected [16777216, 65536] (from config.json)"),
    ("net_moe_dense_block", "net_model", _set(["moe", "layers"], [0, 1]), "info",
     "net_moe_dense_block: block 1 is an MoE block by config.json's moe.layers, but the checkpoint "
     "has no "
     "tensor 'transformer.h.1.mlp.gate.weight' (block is a dense MLP"),
    ("net_moe_no_mlp", "net_no_mlp_model", _set(["moe", "layers"], [0, 1]), "info",
     "net_moe_no_mlp: block 1 is an MoE block by config.json's moe.layers, but the checkpoint has no "
     "tensor 'transformer.h.1.mlp.gate.weight'"),
    ("net_moe_no_experts", "net_no_experts_model", None, "info",
     "net_moe_no_experts: block 0 is in moe.layers but its MoE tensors are incomplete (no "
     "'transformer.h.0.mlp.experts.0.c_fc.weight')"),
    ("net_nan_backbone", "net_nan_model", None, "info",
     "net_nan_backbone/model.safetensors: tensor 'transformer.h.1.attn.c_attn.weight': "
     "non-finite value nan at element 53 [2, 5]"),
    # config.json's numbers on a network (issue 30.7): never cast, clamped or dropped
    ("net_cfg_k_zero", "net_model", _set(["moe", "top_k"], 0), "info",
     "net_cfg_k_zero/config.json: key 'moe.top_k' = 0 is not an integer in 1..2"),
    ("net_cfg_k_true", "net_model", _set(["moe", "top_k"], True), "info",
     "net_cfg_k_true/config.json: key 'moe.top_k' = true is not an integer in 1..2"),
    ("net_cfg_k_fraction", "net_model", _set(["moe", "top_k"], 1.5), "info",
     "net_cfg_k_fraction/config.json: key 'moe.top_k' = 1.5 is not an integer in 1..2"),
    ("net_cfg_k_1e9", "net_model", _set(["moe", "top_k"], 10 ** 9), "info",
     "net_cfg_k_1e9/config.json: key 'moe.top_k' = 1000000000 is not an integer in 1..2"),
    ("net_cfg_embd_1e300", "net_model", _set(["n_embd"], 1e300), "info",
     "net_cfg_embd_1e300/config.json: key 'n_embd' = 1e+300 is not an integer in 1..65536"),
    ("net_cfg_layers_twice", "net_model", _set(["moe", "layers"], [0, 0]), "info",
     "net_cfg_layers_twice/config.json: key 'moe.layers' = [0,0] is not a list of distinct integers in 0..1"),
    ("net_cfg_layers_string", "net_model", _set(["moe", "layers"], ["0"]), "info",
     "net_cfg_layers_string/config.json: key 'moe.layers' = [\"0\"] is not a list of distinct integers"),
    ("net_cfg_eps_zero", "net_model", _set(["layer_norm_epsilon"], 0), "info",
     "net_cfg_eps_zero/config.json: key 'layer_norm_epsilon' = 0 is not a number in 1e-30..1"),
    ("net_cfg_experts_zero", "net_model", _set(["moe", "num_experts"], 0), "info",
     "net_cfg_experts_zero gate.weight has 2 rows (under 'transformer.h.0.mlp.')"),
    ("net_cfg_router_inject", "net_model", _set(["moe", "router"], "\x1b]0;owned\x07\x1b[2J"), "info",
     "net_cfg_router_inject/config.json: key 'moe.router' = \"\\u001b]0;owned\\u0007\\u001b[2J\" is not one of"),
    # round four (issue 41): finite values whose forward overflows (loss nan or 0, exit 0)
    ("net_big_attn", "net_big_attn_model", None, "eval_on",
     "net_big_attn/model.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' holds values up to 1e+19: the network's "
     "attention scores in block 0 would reach"),
    ("net_big_wte", "net_big_wte_model", None, "eval_on",
     "net_big_wte/model.safetensors: tensor 'transformer.wte.weight' holds values up to 3e+38: the network's embeddings would reach"),
    # round four (issue 41): tensors no part of the network reads (they were dropped)
    ("net_dense_with_moe", "net_stray_moe_model", None, "info",
     "net_dense_with_moe: tensor 'transformer.h.1.mlp.experts.0.c_fc.bias' (and 9 more) is not part of "
     "the network config.json describes: nothing reads it (block 1 is dense by config.json's moe.layers, "
     "so nothing reads MoE tensors there)"),
    ("net_expert_9", "net_expert9_model", None, "info",
     "net_expert_9: tensor 'transformer.h.0.mlp.experts.9.c_fc.bias' (and 3 more) is not part of the network"),
    # round four (issue 41): a key twice in one object; cJSON kept the first, Python the last
    ("net_cfg_dup_top_k", "net_model", _many(_set(["moe", "top_k"], 1), _dup("top_k", 1, 2)), "info",
     "net_cfg_dup_top_k/config.json: key 'moe.top_k' is given twice"),
    ("net_cfg_dup_n_embd", "net_model", _dup("n_embd", 8, 16), "info",
     "net_cfg_dup_n_embd/config.json: key 'n_embd' is given twice"),
    ("net_eval_id_vocab", None, (1, 4, 16), "eval_net",
     "net_eval_id_vocab.safetensors: tensor 'input_ids': id 16 at [1, 4] is not below the "
     "vocab_size = 16 of"),
    ("net_eval_id_negative", None, (2, 0, -1), "eval_net",
     "net_eval_id_negative.safetensors: tensor 'input_ids': id -1 at [2, 0] is not a token id"),
    ("net_eval_T_over", None, "T9", "eval_net",
     "net_eval_T_over.safetensors: tensor 'input_ids' has T = 9 tokens per sequence, more than "
     "the n_positions = 8 of"),
]


# ViT folders (vit_<case>/: config.json beside a symlink to vit_model.safetensors, the
# base VIT_CFG with EDIT applied; tests/lib/gen_vit.py's layout): the ViT reader's keys
VIT_CFG = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 8,
           "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16, "image_size": 4,
           "patch_size": 2, "num_channels": 1, "layer_norm_eps": 1e-12, "hidden_act": "gelu", "qkv_bias": True,
           "id2label": {"0": "a", "1": "b", "2": "c"},
           "moe": {"layers": [0], "num_experts": 2, "top_k": 1, "router": "topk", "num_shared_experts": 0,
                   "expert_activation": "gelu", "expert_intermediate_size": 4}}
VITS = [
    ("vit_ok", None, None, None),
    ("vit_image_1e300", _set(["image_size"], 1e300), "info",
     "vit_image_1e300/config.json: key 'image_size' = 1e+300 is not an integer in 1..16384"),
    ("vit_patch_not_dividing", _set(["patch_size"], 3), "info",
     "vit_patch_not_dividing/config.json: image_size = 4 is not a multiple of patch_size = 3"),
    ("vit_labels_differ", _set(["num_labels"], 7), "info",
     "vit_labels_differ/config.json: key 'num_labels' = 7, but 'id2label' names 3 classes"),
    ("vit_channels_zero", _set(["num_channels"], 0), "info",
     "vit_channels_zero/config.json: key 'num_channels' = 0 is not an integer in 1..4096"),
    ("vit_k_string", _set(["moe", "top_k"], "1"), "info",
     "vit_k_string/config.json: key 'moe.top_k' = \"1\" is not an integer in 1..2"),
    ("vit_qkv_bias_false", _set(["qkv_bias"], False), "info",
     "vit_qkv_bias_false: tensor 'vit.encoder.layer.0.attention.attention.key.bias' (and 5 more) is not part "
     "of the network config.json describes: nothing reads it (config.json's qkv_bias is false"),
    ("vit_big_classifier", _model("vit_big_head_model"), "eval_vit",
     "vit_big_classifier/model.safetensors: tensor 'classifier.weight' holds values up to 3e+38: the network's logits would reach"),
    ("vit_dup_label", _dup("0", "\"a\"", "\"z\""), "info",
     "vit_dup_label/config.json: key 'id2label.0' is given twice"),
]


def _folder(name, model, cfg):
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    dup = cfg.pop("__dup__", None)
    model = cfg.pop("__model__", model)
    text = json.dumps(cfg)
    if dup:  # the key's one place in the text, written twice
        key, first, second = dup
        one = '"%s": %s' % (key, first)
        assert text.count(one) == 1, one
        text = text.replace(one, '%s, "%s": %s' % (one, key, second))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(text)
    link = os.path.join(d, "model.safetensors")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../%s.safetensors" % model, link)


def vits():
    import copy
    import sys
    sys.path[:0] = [os.path.join(HERE, "..", "..", d) for d in ("lib", "oracle")]
    import gen_vit
    import numpy as np
    import oracle
    t = {**gen_vit.backbone(VIT_CFG, 4), **gen_vit.moe_blocks(VIT_CFG, 4)}
    oracle.write_safetensors(os.path.join(HERE, "vit_model.safetensors"),
                             {k: v.astype(np.float32) for k, v in sorted(t.items())})
    big = {k: v.astype(np.float32) for k, v in sorted(t.items())}
    big["classifier.weight"] = np.full_like(big["classifier.weight"], 3e38)
    oracle.write_safetensors(os.path.join(HERE, "vit_big_head_model.safetensors"), big)
    px, labels = gen_vit.images(VIT_CFG, 6, N=3)
    oracle.write_safetensors(os.path.join(HERE, "vit_eval.safetensors"), {"pixel_values": px, "labels": labels})
    px[1, 0, 2, 3] = 3e38
    oracle.write_safetensors(os.path.join(HERE, "vit_eval_big_pixels.safetensors"),
                             {"pixel_values": px, "labels": labels})
    for name, edit, _, _ in VITS:
        cfg = copy.deepcopy(VIT_CFG)
        if edit:
            edit(cfg)
        _folder(name, "vit_model", cfg)


def networks():
    """The network cases' files: the models (numpy's generator of tests/lib/gen_gpt2.py,
    seeded), the folders and the evaluation sets."""
    import copy
    import sys
    sys.path[:0] = [os.path.join(HERE, "..", "..", d) for d in ("lib", "oracle")]
    import gen_gpt2
    import numpy as np
    import oracle
    back, moe = gen_gpt2.backbone(NET_CFG, 3), gen_gpt2.moe_blocks(NET_CFG, 3)
    t = {k: v.astype(np.float32) for k, v in sorted({**back, **moe}.items())}
    nan = dict(t)
    nan["transformer.h.1.attn.c_attn.weight"] = t["transformer.h.1.attn.c_attn.weight"].copy()
    nan["transformer.h.1.attn.c_attn.weight"][2, 5] = np.nan
    models = {"net_model": t, "net_nan_model": nan,
              "net_no_mlp_model": {k: v for k, v in t.items() if not k.startswith("transformer.h.1.mlp.")},
              "net_no_experts_model": {k: v for k, v in t.items() if ".mlp.experts." not in k},
              # round four: tensors the network would ignore (block 1 is dense; 2 experts)
              "net_stray_moe_model": {**t, **{k.replace("h.0.mlp.", "h.1.mlp."): v for k, v in t.items()
                                              if k.startswith("transformer.h.0.mlp.")}},
              "net_expert9_model": {**t, **{k.replace("experts.0.", "experts.9."): v for k, v in t.items()
                                            if k.startswith("transformer.h.0.mlp.experts.0.")}},
              # finite, but the forward would overflow (issue 41.1)
              "net_big_attn_model": {**t, "transformer.h.0.attn.c_attn.weight":
                                     np.full_like(t["transformer.h.0.attn.c_attn.weight"], 1e19)},
              "net_big_wte_model": {**t, "transformer.wte.weight": np.full_like(t["transformer.wte.weight"], 3e38)}}
    for name, tensors in models.items():
        oracle.write_safetensors(os.path.join(HERE, name + ".safetensors"), tensors)
    ids = gen_gpt2.eval_ids(NET_CFG, 5, N=3, T=6)
    oracle.write_safetensors(os.path.join(HERE, "net_eval.safetensors"), {"input_ids": ids})
    for name, model, edit, _, _ in NETWORKS:
        if model is None:  # an evaluation set: one id changed, or longer sequences
            x = gen_gpt2.eval_ids(NET_CFG, 5, N=2, T=9) if edit == "T9" else ids.copy()
            if edit != "T9":
                x[edit[0], edit[1]] = edit[2]
            oracle.write_safetensors(os.path.join(HERE, name + ".safetensors"), {"input_ids": x})
            continue
        cfg = copy.deepcopy(NET_CFG)
        if edit:
            edit(cfg)
        _folder(name, model, cfg)


def gpt_oss_mx(n=2, d=32, h=32, big=False, dense_down=False, seed=61):
    """A GPT-OSS layer with MXFP4 experts (blocks U8 [n, rows, in/32, 16], scales U8
    [n, rows, in/32]; every FP4 value 1.0 or -0.5, scales 2^0); big: expert 0's
    down_proj scales 2^127 (values 1.7e38: finite, but the arithmetic overflows);
    dense_down: a dense experts.down_proj too."""
    import random
    rnd = random.Random(seed)
    vals = lambda k: f32([rnd.uniform(-1, 1) for _ in range(k)])
    P = "model.layers.0.mlp"
    def mx(rows, cols, scale_of):
        nb = cols // 32
        blocks = bytes(rnd.choice([0x22, 0x9a, 0x2a]) for _ in range(n * rows * nb * 16))
        scales = bytes(scale_of(e) for e in range(n) for _ in range(rows * nb))
        return blocks, scales, nb
    t = [(P + ".router.weight", "F32", [n, d], vals(n * d)), (P + ".router.bias", "F32", [n], vals(n))]
    b, s, nb = mx(2 * h, d, lambda e: 127)
    t += [(P + ".experts.gate_up_proj_blocks", "U8", [n, 2 * h, nb, 16], b),
          (P + ".experts.gate_up_proj_scales", "U8", [n, 2 * h, nb], s),
          (P + ".experts.gate_up_proj_bias", "F32", [n, 2 * h], vals(n * 2 * h))]
    b, s, nb = mx(d, h, lambda e: 254 if big and e == 0 else 127)
    t += [(P + ".experts.down_proj_blocks", "U8", [n, d, nb, 16], b),
          (P + ".experts.down_proj_scales", "U8", [n, d, nb], s),
          (P + ".experts.down_proj_bias", "F32", [n, d], vals(n * d))]
    if dense_down:
        t.append((P + ".experts.down_proj", "F32", [n, h, d], vals(n * h * d)))
    return t


# valid files whose text is hostile (stage ok; the test runs info on them)
INJECT = [
    ("inject_meta.safetensors",
     "metadata keys and values with an OSC title, ESC[2J, a forged line, a C1 CSI and "
     "invalid UTF-8; a second layer whose prefix holds ESC[31m"),
]


def inject():
    """ESC sequences in metadata and layer prefixes (JSON escapes them as \\u001b, which
    the reader decodes to the byte); raw invalid UTF-8 in a metadata value."""
    write_st("inject_layer.safetensors", layer(2, 3, 4, 11, prefix="x\x1b]0;owned\x07\x1b[2J\r\nmoescope: forged"))
    t = layer(2, 3, 4, 12) + layer(2, 3, 4, 13, prefix="evil\x1b[31m")
    meta = {"\x1b]0;owned\x07key": "\x1b[2J\r\nmoescope: forged line",
            "c1": "\u009b31mred", "moescope.router": "dense"}
    header, data, off = {}, b"", 0
    for tn, dt, shape, raw in t:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h = h[:-2] + b',"bad_utf8":"\xff\xfe\xc0\xaf"}}'  # raw bytes json.dumps cannot write
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(HERE, "inject_meta.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    declared("model_declared_experts.safetensors", "experts", 256, 4096)
    declared("model_declared_shared.safetensors", "shared", 256, 4096)
    write_st("gate_2_40.safetensors", [("moe.gate.weight", "F32", [1, 1 << 40], f32([1.0] * 4))])
    write_st("eval_2_40.safetensors", [("inputs", "F32", [1 << 40, 1], f32([1.0] * 4)),
                                       ("labels", "I64", [1], struct.pack("<q", 0))])
    inject()
    configs()
    networks()
    vits()
    write_st("mxfp4_overflow.safetensors", gpt_oss_mx(big=True))
    write_st("mxfp4_and_dense.safetensors", gpt_oss_mx(dense_down=True))
    write_st("meta_routed_scale_3e38.safetensors", layer(2, 3, 4, 71),
             {"moescope.router": "topk", "moescope.top_k": "1", "moescope.routed_scale": "3e38"})
    exp = os.path.join(HERE, "expected.tsv")
    have = set()
    with open(exp) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                have.add(line.split("\t")[0])
    with open(exp, "a") as f:
        for name, stage, sub, _, _, _ in ENTRIES:
            if name not in have:
                f.write("%s\t%s\t%s\n" % (name, stage, sub))
        for name, _ in INJECT:
            if name not in have:
                f.write("%s\tok\t\n" % name)
        for fam in ("qwen3", "deepseek_v3", "gpt_oss"):
            if "cfg_model_%s.safetensors" % fam not in have:
                f.write("cfg_model_%s.safetensors\tok\t\n" % fam)
        net_files = [("net_model", "ok", ""), ("net_no_mlp_model", "ok", ""), ("net_no_experts_model", "ok", ""),
                     ("net_stray_moe_model", "ok", ""), ("net_expert9_model", "ok", ""),
                     ("net_big_attn_model", "ok", ""), ("net_big_wte_model", "ok", ""),
                     ("vit_big_head_model", "ok", ""), ("vit_eval", "ok", ""), ("vit_eval_big_pixels", "ok", ""),
                     ("vit_model", "ok", ""),
                     ("net_nan_model", "read", "element 53 [2, 5]"), ("net_eval", "ok", "")]
        net_files += [(name, "ok", "") for name, model, _, _, _ in NETWORKS if model is None]
        for name, stage, sub in net_files:
            if name + ".safetensors" not in have:
                f.write("%s.safetensors\t%s\t%s\n" % (name, stage, sub))
    with open(os.path.join(HERE, "models.tsv"), "w") as f:
        f.write("# file\tcommand\texpected substring (written by tests/hostile/corpus/gen_hostile.py)\n")
        for name, _, _, cmd, sub, _ in ENTRIES:
            f.write("%s\t%s\t%s\n" % (name, cmd, sub))
        for name, _, _, sub in CONFIGS:
            f.write("%s\tinfo\t%s\n" % (name, sub))
        for name, model, _, cmd, sub in NETWORKS:
            if cmd:
                f.write("%s%s\t%s\t%s\n" % (name, "" if model else ".safetensors", cmd, sub))
        for name, _, cmd, sub in VITS:
            if cmd:
                f.write("%s\t%s\t%s\n" % (name, cmd, sub))
        f.write("vit_eval_big_pixels.safetensors\teval_vit_set\tvit_eval_big_pixels.safetensors: tensor "
                "'pixel_values' holds values up to 3e+38: the network's patch embeddings would reach\n")


def write_to(path, tensors, meta=None, raw_header=None):
    """Like write_st, to any path; raw_header replaces the JSON text (bytes)."""
    header, data, off = {}, [], 0
    for tn, dt, shape, raw in tensors:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data.append(raw)
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for raw in data:
            f.write(raw)


def layer(n, d, h, seed, scale=None, prefix="moe"):
    """A dense MoE layer (no head) with biases; scale=(expert, value) multiplies that
    expert's fc1.weight so its values reach value."""
    import random
    rnd = random.Random(seed)
    vals = lambda k: [rnd.uniform(-1, 1) for _ in range(k)]
    P = prefix
    t = [(P + ".gate.weight", "F32", [n, d], f32(vals(n * d))),
         (P + ".gate.bias", "F32", [n], f32(vals(n)))]
    for i in range(n):
        w1 = vals(h * d)
        if scale and scale[0] == i:
            w1 = [scale[1] * (0.5 + abs(v) / 2) for v in w1]
        t += [(P + ".experts.%d.fc1.weight" % i, "F32", [h, d], f32(w1)),
              (P + ".experts.%d.fc1.bias" % i, "F32", [h], f32(vals(h))),
              (P + ".experts.%d.fc2.weight" % i, "F32", [d, h], f32(vals(d * h))),
              (P + ".experts.%d.fc2.bias" % i, "F32", [d], f32(vals(d)))]
    return t


def mixtral_layer(n, d, h, seed, block=0):
    """A Mixtral block's MoE layer (gate, experts.e.w1/w3 [h, d], w2 [d, h]), no biases."""
    import random
    rnd = random.Random(seed)
    vals = lambda k: f32([rnd.uniform(-1, 1) for _ in range(k)])
    P = "model.layers.%d.block_sparse_moe" % block
    t = [(P + ".gate.weight", "F32", [n, d], vals(n * d))]
    for e in range(n):
        t += [(P + ".experts.%d.w1.weight" % e, "F32", [h, d], vals(h * d)),
              (P + ".experts.%d.w2.weight" % e, "F32", [d, h], vals(d * h)),
              (P + ".experts.%d.w3.weight" % e, "F32", [h, d], vals(h * d))]
    return t


def sharded_many(out, name, nshards):
    """out/name/: model-real.safetensors holding a small layer, and an index that also
    maps one tensor to each of nshards absent shard files."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    t = mixtral_layer(2, 3, 4, 21)
    write_to(os.path.join(d, "model-real.safetensors"), t)
    wm = {tn: "model-real.safetensors" for tn, _, _, _ in t}
    for i in range(nshards):
        wm["junk.%d.weight" % i] = "shard-%06d.safetensors" % i
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f)


def unread_shards(out, name, seed):
    """out/name/: a Mixtral layer in model-00001-of-00003, tensors of the rest of the
    model in model-00002 and -00003 (the test makes those a FIFO and a link to
    /dev/zero: reports must not read them)."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    t = mixtral_layer(4, 8, 8, seed)
    names = ["model-%05d-of-00003.safetensors" % i for i in (1, 2, 3)]
    write_to(os.path.join(d, names[0]), t)
    rest = [[("model.embed_tokens.weight", "F32", [4, 8], f32([0.25] * 32))],
            [("lm_head.weight", "F32", [4, 8], f32([0.5] * 32))]]
    for nm, part in zip(names[1:], rest):
        write_to(os.path.join(d, nm), part)
    wm = {tn: names[0] for tn, _, _, _ in t}
    wm.update({part[0][0]: nm for nm, part in zip(names[1:], rest)})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": wm}, f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "mixtral", "num_experts_per_tok": 2}, f)


def make3(out):
    sharded_many(out, "shards_60k", 60000)
    sharded_many(out, "shards_80k", 80000)
    unread_shards(out, "unread_a", 51)
    unread_shards(out, "unread_b", 52)
    # a native layer, then tensors moescope passes through: 16 KiB, then 64 MiB of
    # zeros (sparse); tests truncate it while it is read
    t = layer(4, 8, 16, 41) + [("extra.small", "F32", [4096], f32([0.5] * 4096))]
    path = os.path.join(out, "passthrough_big.safetensors")
    header, off = {}, 0
    for tn, dt, shape, raw in t:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    header["extra.big"] = {"dtype": "F32", "shape": [1 << 24], "data_offsets": [off, off + (4 << 24)]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, _, raw in t:
            f.write(raw)
        f.truncate(8 + len(h) + off + (4 << 24))
    with open(os.path.join(out, "passthrough_big.offsets"), "w") as f:
        # byte offsets in the file: the gate's end, the layer's end (extra.small's
        # start), extra.big's start
        base = 8 + len(h)
        f.write("%d %d %d\n" % (base + header["moe.gate.bias"]["data_offsets"][1],
                                base + header["extra.small"]["data_offsets"][0],
                                base + header["extra.big"]["data_offsets"][0]))


def make(out):
    p = lambda name: os.path.join(out, name + ".safetensors")
    # 99,000 expert names: every command looked each index up linearly (O(n^2))
    write_to(p("many_experts"), [("moe.gate.weight", "F32", [2, 1], f32([0.5, -0.5]))] +
             [("moe.experts.%d.fc1.weight" % i, "F32", [1, 1], f32([1.0])) for i in range(99000)])
    small = layer(4, 8, 16, 1)
    write_to(p("meta_400k"), small, {"k%06d" % i: "v" for i in range(400000)})
    write_to(p("meta_90k"), small, {"k%06d" % i: "v%d" % i for i in range(90000)})
    write_to(p("meta_90k_b"), layer(4, 8, 16, 2), {"k%06d" % i: "w%d" % i for i in range(90000)})
    # NUL in a key: cJSON keeps it, C strings would read the key as "m"
    good = json.dumps({"moe.gate.weight": {"dtype": "F32", "shape": [1, 1],
                                           "data_offsets": [0, 4]}}, separators=(",", ":"))[:-1]
    raw = good.encode() + b',"__metadata__":{"m\x00oescope.activation":"gelu"}}'
    g1 = [("moe.gate.weight", "F32", [1, 1], f32([1.0]))]
    write_to(p("nul_raw"), g1, raw_header=raw)
    write_to(p("nul_escaped"), g1, raw_header=good.encode() +
             b',"__metadata__":{"moescope.activation\\u0000x":"gelu"}}')
    write_to(p("h_2_15"), layer(2, 1, 1 << 15, 3))
    h20 = 1 << 20
    half = struct.pack("<H", 0x3800) * h20  # 0.5 in F16
    t = [("moe.gate.weight", "F32", [2, 1], f32([0.5, -0.5]))]
    for i in range(2):
        t += [("moe.experts.%d.fc1.weight" % i, "F16", [h20, 1], half),
              ("moe.experts.%d.fc2.weight" % i, "F16", [1, h20], half)]
    write_to(p("h_2_20"), t)
    write_to(p("n1024_a"), layer(1024, 2, 1, 1))
    write_to(p("n1024_b"), layer(1024, 2, 1, 2))
    write_to(p("n80"), layer(80, 3, 2, 7))
    write_to(p("n4096_a"), layer(4096, 2, 1, 1))
    write_to(p("n4096_b"), layer(4096, 2, 1, 2))
    import random
    rnd = random.Random(5)
    zeros = lambda k: ("labels", "I64", [k], struct.pack("<%dq" % k, *([0] * k)))
    write_to(p("n4096_eval"), [("inputs", "F32", [64, 2], f32([rnd.uniform(-1, 1) for _ in range(128)])),
                               zeros(64)])
    write_to(p("big_1e18"), layer(4, 8, 16, 1, (2, 1e18)))
    write_to(p("big_3e38"), layer(4, 8, 16, 1, (2, 3.4e38)))
    write_to(p("big_b"), layer(4, 8, 16, 2))
    head = [("head.out.weight", "F32", [3, 8], f32([3.4e38 * (0.5 + (k % 5) / 10) for k in range(24)])),
            ("head.out.bias", "F32", [3], f32([0.0, 0.1, -0.1]))]
    write_to(p("big_head"), layer(4, 8, 16, 1) + head)
    write_to(p("big_eval"), [("inputs", "F32", [32, 8], f32([rnd.uniform(-1, 1) for _ in range(256)])),
                             zeros(32)])
    write_to(p("lap_1e308"), [("cost", "F64", [3, 3], struct.pack("<9d", *([1e308] * 9)))])
    # 20000 x 20000 F32 zeros without writing them: the header, then a hole to the end
    n = 20000
    hdr = json.dumps({"cost": {"dtype": "F32", "shape": [n, n], "data_offsets": [0, 4 * n * n]}},
                     separators=(",", ":")).encode()
    hdr += b" " * ((8 - len(hdr) % 8) % 8)
    with open(p("lap_sparse"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        f.truncate(8 + len(hdr) + 4 * n * n)


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "make3":
        make3(sys.argv[2])
    else:
        main()
