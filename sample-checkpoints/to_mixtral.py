#!/usr/bin/env python3
"""to_mixtral.py - write a bias-free SiLU-GLU top-k layer trained by `moescope train
--no-bias` in the layout of a Hugging Face Mixtral checkpoint.

    to_mixtral.py NATIVE.safetensors OUT_DIR         a sharded Mixtral checkpoint
    to_mixtral.py --inputs EVAL.safetensors OUT.safetensors   inputs only

OUT_DIR gets what `MixtralForCausalLM.save_pretrained` writes for the MoE block
of layer 0: model-00001-of-00002.safetensors and model-00002-of-00002.safetensors
(BF16, rounded to nearest even), model.safetensors.index.json and config.json;
tensor names model.layers.0.block_sparse_moe.gate.weight [n, d] and
...experts.e.w1.weight (gate) [h, d], w3.weight (up) [h, d], w2.weight (down) [d, h].
moescope's fc1 / fc3 / fc2 are Mixtral's w1 / w3 / w2; the frozen LayerNorm and head
of the digits classifier are left out (a real checkpoint's block is evaluated layer-
only, on the hidden states that enter it). Deterministic: the same input gives the
same bytes. Needs numpy only.
"""
import json
import os
import sys

import numpy as np

import stlib

PREFIX = "model.layers.0.block_sparse_moe."


read = stlib.st_read


def bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def shard_meta(meta):
    """The first shard's (the gate's) metadata: what the layer is, as moescope's
    metadata "recipe" says, in Mixtral's layout."""
    out = {"format": "pt"}
    if "recipe" in meta:
        out["recipe"] = meta["recipe"] + "; converted to Mixtral's layout (BF16) by to_mixtral.py"
    return out


def write(path, items, meta):
    """items (name, dtype, shape, bytes) after the metadata, as the committed files are"""
    stlib.st_write(path, items, meta, meta_first=True)


def convert(src, out_dir):
    t, meta = read(src)
    if meta.get("moescope.activation") != "silu_glu" or meta.get("moescope.router") != "topk":
        sys.exit("%s: needs a silu_glu top-k layer" % src)
    for k, v in t.items():
        if ".bias" in k and k.startswith("moe.") and np.any(v != 0):
            sys.exit("%s: %s is not zero: train with --no-bias" % (src, k))
    n, d = t["moe.gate.weight"].shape
    h = t["moe.experts.0.fc1.weight"].shape[0]
    k = int(meta.get("moescope.top_k", "2"))

    def item(name, x):
        return (PREFIX + name, "BF16", x.shape, bf16(x).tobytes())

    shards = [[item("gate.weight", t["moe.gate.weight"])], []]
    for e in range(n):
        s = shards[0 if e < n // 2 else 1]
        for ours, theirs in (("fc1", "w1"), ("fc2", "w2"), ("fc3", "w3")):
            s.append(item("experts.%d.%s.weight" % (e, theirs), t["moe.experts.%d.%s.weight" % (e, ours)]))
    os.makedirs(out_dir, exist_ok=True)
    names = ["model-%05d-of-%05d.safetensors" % (i + 1, len(shards)) for i in range(len(shards))]
    wm, total = {}, 0
    for nm, items in zip(names, shards):
        write(os.path.join(out_dir, nm), items, shard_meta(meta) if nm == names[0] else {"format": "pt"})
        for it in items:
            wm[it[0]] = nm
            total += len(it[3])
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(wm.items()))}, f,
                  indent=2)
        f.write("\n")
    config = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": int(d),
              "intermediate_size": int(h), "num_local_experts": int(n), "num_experts_per_tok": k,
              "num_hidden_layers": 1, "hidden_act": "silu", "torch_dtype": "bfloat16",
              "router_aux_loss_coef": 0.0, "output_router_logits": False}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def inputs_only(src, out):
    t, _ = read(src)
    x = np.ascontiguousarray(t["inputs"], np.float32)
    write(out, [("inputs", "F32", x.shape, x.tobytes())], {"format": "pt"})


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--inputs":
        inputs_only(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        convert(sys.argv[1], sys.argv[2])
    else:
        sys.exit(__doc__)
