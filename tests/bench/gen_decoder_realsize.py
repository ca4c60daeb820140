"""tests/bench/gen_decoder_realsize.py - a real-sized Hugging Face MoE decoder with
random weights, for tests/bench/bench_decoder.py (written at bench time, never
committed): Granite-3.0-1B-A400M's shape (granitemoe: 24 layers, d 1024, 16 heads
of 64 with 8 key/value heads, 32 experts of 512, top-8, vocab 49155, tied head,
Granite's multipliers), BF16 in transformers' layout, one shard per 4 layers plus
the index; and an evaluation set of input_ids [N, T].

  gen_decoder_realsize.py OUT [--layers 24] [--N 4] [--T 512] [--seed 1] [--moe-seed S]
                           [--family qwen2_moe [--experts 60] [--vocab 151936]]

--family qwen2_moe: Qwen1.5-MoE-A2.7B's shape instead (d 2048, 16 heads of 128 with q/k/v
biases, 60 experts of 1408, top-4, a gated shared expert of 5632, vocab 151936, untied
head), --experts and --vocab making a smaller one of the same widths.

Weights are drawn N(0, 1/fan_in) in float32 a tensor at a time and rounded to
BF16 (round to nearest even), so the script holds one tensor, never the model.
--moe-seed S: the MoE blocks' tensors (router and experts) drawn from seed S instead,
every other tensor and the evaluation set as --seed makes them (B of a pair of
fine-tunes of one backbone: `landscape A B` needs no --interpolate-backbone)."""
import argparse
import json
import os
import struct

import numpy as np

SHAPE = dict(d=1024, heads=16, kv=8, n=32, h=512, k=8, vocab=49155, layers=24)


def config(layers):
    s = SHAPE
    return {"architectures": ["GraniteMoeForCausalLM"], "model_type": "granitemoe",
            "hidden_size": s["d"], "num_hidden_layers": layers, "num_attention_heads": s["heads"],
            "num_key_value_heads": s["kv"], "intermediate_size": s["h"], "num_local_experts": s["n"],
            "num_experts_per_tok": s["k"], "vocab_size": s["vocab"], "max_position_embeddings": 4096,
            "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": True,
            "embedding_multiplier": 12.0, "attention_multiplier": 0.015625, "residual_multiplier": 0.22,
            "logits_scaling": 6.0, "attention_bias": False, "torch_dtype": "bfloat16"}


QWEN2 = dict(d=2048, heads=16, kv=16, n=60, h=1408, hs=5632, k=4, vocab=151936)


def qwen2_config(layers, n, vocab):
    q = QWEN2
    return {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": q["d"],
            "num_hidden_layers": layers, "num_attention_heads": q["heads"], "num_key_value_heads": q["kv"],
            "intermediate_size": 5632, "moe_intermediate_size": q["h"], "shared_expert_intermediate_size": q["hs"],
            "num_experts": n, "num_experts_per_tok": q["k"], "norm_topk_prob": False, "decoder_sparse_step": 1,
            "mlp_only_layers": [], "vocab_size": vocab, "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "hidden_act": "silu", "tie_word_embeddings": False,
            "use_sliding_window": False, "sliding_window": None, "max_window_layers": layers, "qkv_bias": True,
            "torch_dtype": "bfloat16"}


def qwen2_tensors_of_layer(i, n):
    """(name, shape, fan_in or 0 for a norm's ones) of a Qwen2-MoE block i with n experts"""
    q = QWEN2
    d, h, hs = q["d"], q["h"], q["hs"]
    P = "model.layers.%d." % i
    t = [(P + "input_layernorm.weight", (d,), 0)]
    for w in ("q", "k", "v"):
        t += [(P + "self_attn.%s_proj.weight" % w, (d, d), d), (P + "self_attn.%s_proj.bias" % w, (d,), d)]
    t += [(P + "self_attn.o_proj.weight", (d, d), d), (P + "post_attention_layernorm.weight", (d,), 0),
          (P + "mlp.gate.weight", (n, d), d)]
    for e in range(n):
        E = P + "mlp.experts.%d." % e
        t += [(E + "gate_proj.weight", (h, d), d), (E + "up_proj.weight", (h, d), d), (E + "down_proj.weight", (d, h), h)]
    S = P + "mlp.shared_expert."
    t += [(S + "gate_proj.weight", (hs, d), d), (S + "up_proj.weight", (hs, d), d), (S + "down_proj.weight", (d, hs), hs),
          (P + "mlp.shared_expert_gate.weight", (1, d), d)]
    return t


def tensors_of_layer(i):
    """(name, shape, fan_in or 0 for a norm's ones) of block i"""
    s = SHAPE
    d, hd, n, h = s["d"], s["d"] // s["heads"], s["n"], s["h"]
    P = "model.layers.%d." % i
    return [(P + "input_layernorm.weight", (d,), 0),
            (P + "self_attn.q_proj.weight", (s["heads"] * hd, d), d),
            (P + "self_attn.k_proj.weight", (s["kv"] * hd, d), d),
            (P + "self_attn.v_proj.weight", (s["kv"] * hd, d), d),
            (P + "self_attn.o_proj.weight", (d, s["heads"] * hd), s["heads"] * hd),
            (P + "post_attention_layernorm.weight", (d,), 0),
            (P + "block_sparse_moe.router.layer.weight", (n, d), d),
            (P + "block_sparse_moe.input_linear.weight", (n, 2 * h, d), d),
            (P + "block_sparse_moe.output_linear.weight", (n, d, h), h)]


def bf16_bytes(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()


def write_shard(path, specs, rng, moe_rng=None):
    """specs: (name, shape, fan_in); the header first (sizes known), then each tensor;
    moe_rng: the MoE blocks' tensors from it (rng drawn as without it)"""
    header, off = {}, 0
    for name, shape, _ in specs:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + size]}
        off += size
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        for name, shape, fan in specs:
            if fan == 0:
                x = np.ones(shape, np.float32)
            else:
                x = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan))
                if moe_rng is not None and (".block_sparse_moe." in name or ".mlp." in name):
                    x = moe_rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fan))
            f.write(bf16_bytes(x))
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=SHAPE["layers"])
    ap.add_argument("--N", type=int, default=4)
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--moe-seed", type=int, default=None)
    ap.add_argument("--family", choices=("granitemoe", "qwen2_moe"), default="granitemoe")
    ap.add_argument("--experts", type=int, default=QWEN2["n"])
    ap.add_argument("--vocab", type=int, default=QWEN2["vocab"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    moe_rng = None if a.moe_seed is None else np.random.default_rng(a.moe_seed)
    qwen = a.family == "qwen2_moe"
    d, V = (QWEN2["d"], a.vocab) if qwen else (SHAPE["d"], SHAPE["vocab"])
    per = 2 if qwen else 4  # blocks per shard
    groups = [list(range(i, min(i + per, a.layers))) for i in range(0, a.layers, per)]
    shards = [[("model.embed_tokens.weight", (V, d), d)]]
    for g in groups:
        shards.append([t for i in g for t in (qwen2_tensors_of_layer(i, a.experts) if qwen else tensors_of_layer(i))])
    shards[-1].append(("model.norm.weight", (d,), 0))
    if qwen:
        shards[-1].append(("lm_head.weight", (V, d), d))
    wmap, total = {}, 0
    for j, specs in enumerate(shards):
        fn = "model-%05d-of-%05d.safetensors" % (j + 1, len(shards))
        write_shard(os.path.join(a.out, fn), specs, rng, moe_rng)
        for name, shape, _ in specs:
            wmap[name] = fn
            total += 2 * int(np.prod(shape))
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(qwen2_config(a.layers, a.experts, V) if qwen else config(a.layers), f, indent=1)
    ids = rng.integers(0, V, size=(a.N, a.T), dtype=np.int64)
    hb = json.dumps({"input_ids": {"dtype": "I64", "shape": [a.N, a.T], "data_offsets": [0, ids.nbytes]}}).encode()
    hb += b" " * (-len(hb) % 8)
    with open(os.path.join(a.out, "eval.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + ids.tobytes())


if __name__ == "__main__":
    main()
