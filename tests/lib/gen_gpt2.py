"""tests/lib/gen_gpt2.py - small random GPT-2-layout networks with MoE blocks, in
Hugging Face's names and layout (Conv1D weights [in, out]), so the network tests
need no trained samples.

A pool is what sample-checkpoints/gpt/POOL/ holds: one frozen backbone shared by
every seed, each seed's MoE blocks drawn afresh, and an evaluation set:

    DIR/backbone.safetensors            every tensor outside the MoE blocks
    DIR/seedS/config.json               model_type gpt2 + the "moe" object
    DIR/seedS/model.safetensors.index.json
    DIR/seedS/model-00001-of-00002.safetensors -> ../backbone.safetensors
    DIR/seedS/model-00002-of-00002.safetensors  the MoE blocks
    DIR/eval.safetensors                input_ids [N, T] (I64, or I32)

(--single: DIR/seedS/model.safetensors holding everything, no index.)

Importable:
    cfg = config(d=16, layers=3, heads=2, vocab=24, positions=16, moe_layers=[0], n=4, ...)
    back = backbone(cfg, seed)              {name: float64 array, float32-representable}
    moe = moe_blocks(cfg, seed)             {name: array} of every MoE block
    ids = eval_ids(cfg, seed, N, T)        (or teacher_ids(cfg, {**back, **moe}, seed, N, T))
    write_pool(DIR, cfg, back, {"seed1": moe1, ...}, ids)
CLI:
    gen_gpt2.py DIR [--seeds 1,2] [--d 16] [--layers 3] [--heads 2] [--vocab 24]
                [--positions 16] [--moe 0 | --moe all] [--n 4] [--k 2] [--router topk|dense]
                [--shared 0] [--h 12] [--act relu|gelu|gelu_new] [--net-act gelu_new|gelu]
                [--untied] [--lm-bias] [--no-gate-bias] [--N 6] [--T 12] [--i32] [--single]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402


def config(d=16, layers=3, heads=2, vocab=24, positions=16, moe_layers=(0,), n=4, k=2,
           router="topk", shared=0, h=12, act="relu", net_act="gelu_new", tied=True, eps=1e-5,
           n_inner=None):
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": d,
           "n_layer": layers, "n_head": heads, "n_positions": positions, "vocab_size": vocab,
           "layer_norm_epsilon": eps, "activation_function": net_act,
           "tie_word_embeddings": tied,
           "moe": {"layers": list(moe_layers), "num_experts": n, "top_k": k, "router": router,
                   "num_shared_experts": shared, "expert_activation": act,
                   "expert_intermediate_size": h}}
    if n_inner:
        cfg["n_inner"] = n_inner
    return cfg


def _f32(t):
    """round through float32: the files and the oracle hold the same numbers"""
    return {k: np.asarray(v, np.float32).astype(np.float64) for k, v in t.items()}


def _ln(rng, pre, d):
    return {pre + ".weight": 1.0 + 0.1 * rng.standard_normal(d), pre + ".bias": 0.1 * rng.standard_normal(d)}


def _conv(rng, pre, nin, nout, scale=1.0):
    return {pre + ".weight": scale * rng.standard_normal((nin, nout)) / np.sqrt(nin),
            pre + ".bias": 0.1 * rng.standard_normal(nout)}


def backbone(cfg, seed, lm_bias=False):
    """Every tensor outside the MoE blocks; the dense MLPs at the other blocks."""
    rng = np.random.default_rng(seed)
    d, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    t = {"transformer.wte.weight": 0.5 * rng.standard_normal((V, d)),
         "transformer.wpe.weight": 0.3 * rng.standard_normal((P, d))}
    moe = set(cfg["moe"]["layers"])
    for L in range(cfg["n_layer"]):
        pre = "transformer.h.%d." % L
        t.update(_ln(rng, pre + "ln_1", d))
        t.update(_conv(rng, pre + "attn.c_attn", d, 3 * d, 1.5))
        t.update(_conv(rng, pre + "attn.c_proj", d, d, 0.5))
        t.update(_ln(rng, pre + "ln_2", d))
        if L not in moe:
            ff = cfg.get("n_inner") or 4 * d
            t.update(_conv(rng, pre + "mlp.c_fc", d, ff))
            t.update(_conv(rng, pre + "mlp.c_proj", ff, d, 0.5))
    t.update(_ln(rng, "transformer.ln_f", d))
    if not cfg.get("tie_word_embeddings", True):
        t["lm_head.weight"] = rng.standard_normal((V, d)) / np.sqrt(d) * 2.0
    if lm_bias:
        t["lm_head.bias"] = 0.1 * rng.standard_normal(V)
    return _f32(t)


def moe_blocks(cfg, seed, gate_bias=True, layout=None):
    """Every MoE block: a gate sharp enough that routing matters, experts of width h.
    layout (gen_vit's): the block prefix format, the width's key, the expert's two
    tensors and how one is drawn; default GPT-2's Conv1D c_fc / c_proj."""
    fmt, dkey, names, mlp = layout or ("transformer.h.%d.mlp.", "n_embd", ("c_fc", "c_proj"), _conv)
    rng = np.random.default_rng(seed + 7919)
    m, d = cfg["moe"], cfg[dkey]
    h = m["expert_intermediate_size"]
    t = {}
    for L in m["layers"]:
        pre = fmt % L
        t[pre + "gate.weight"] = 2.0 * rng.standard_normal((m["num_experts"], d)) / np.sqrt(d)
        if gate_bias:
            t[pre + "gate.bias"] = 0.3 * rng.standard_normal(m["num_experts"])
        for kind, cnt in (("experts", m["num_experts"]), ("shared_experts", m["num_shared_experts"])):
            for e in range(cnt):
                t.update(mlp(rng, pre + "%s.%d.%s" % (kind, e, names[0]), d, h, 1.5))
                t.update(mlp(rng, pre + "%s.%d.%s" % (kind, e, names[1]), h, d, 0.7))
    return _f32(t)


def perturbed_copy(cfg, moe, seed, noise=0.2):
    """Another seed's MoE blocks that compute nearly the first one's function: every
    block's experts in a random order (gate rows with them), hidden units permuted,
    plus Gaussian noise of noise x each tensor's RMS - as two fine-tunings that found
    the same experts would. Returns (tensors, {block: the order applied}), slot i of
    the copy holding the original's expert order[i]."""
    rng = np.random.default_rng(seed + 99991)
    m = cfg["moe"]
    out, orders = {}, {}
    for L in m["layers"]:
        pre = "transformer.h.%d.mlp." % L
        pi = rng.permutation(m["num_experts"])
        orders[L] = [int(x) for x in pi]
        out[pre + "gate.weight"] = moe[pre + "gate.weight"][pi]
        if pre + "gate.bias" in moe:
            out[pre + "gate.bias"] = moe[pre + "gate.bias"][pi]
        for kind, cnt in (("experts", m["num_experts"]), ("shared_experts", m["num_shared_experts"])):
            for e in range(cnt):
                src = "%s%s.%d." % (pre, kind, pi[e] if kind == "experts" else e)
                dst = "%s%s.%d." % (pre, kind, e)
                P = rng.permutation(moe[src + "c_fc.bias"].shape[0])
                out[dst + "c_fc.weight"] = moe[src + "c_fc.weight"][:, P]
                out[dst + "c_fc.bias"] = moe[src + "c_fc.bias"][P]
                out[dst + "c_proj.weight"] = moe[src + "c_proj.weight"][P]
                out[dst + "c_proj.bias"] = moe[src + "c_proj.bias"]
    for k, v in out.items():
        out[k] = v + noise * np.sqrt((v ** 2).mean()) * rng.standard_normal(v.shape)
    return _f32(out), orders


def eval_ids(cfg, seed, N=6, T=12):
    rng = np.random.default_rng(seed + 31337)
    return rng.integers(0, cfg["vocab_size"], size=(N, T)).astype(np.int64)


def teacher_ids(cfg, tensors, seed, N=6, T=12):
    """Sequences the network itself continues: a random first token, then each next one
    the argmax of its logits (gpt2_ref). A network then predicts its own evaluation set
    well, and a misaligned interpolation of it does not: barriers that mean something."""
    import gpt2_ref
    rng = np.random.default_rng(seed + 4242)
    ids = np.zeros((N, T), np.int64)
    ids[:, 0] = rng.integers(0, cfg["vocab_size"], N)
    ck = {"config": cfg, "tensors": tensors}
    for t in range(1, T):
        ids[:, t] = gpt2_ref.logits(ck, ids[:, :t])[:, -1].argmax(-1)
    return ids


def write_folder(folder, cfg, back, moe, single=False, backbone_rel="../backbone.safetensors"):
    """One seed's checkpoint folder: sharded with its backbone shard a relative
    symlink (when backbone_rel names an existing file), or one model.safetensors."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if single:
        oracle.write_safetensors(os.path.join(folder, "model.safetensors"), dict(sorted({**back, **moe}.items())))
        return
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    link = os.path.join(folder, s1)
    if os.path.lexists(link):
        os.remove(link)
    if backbone_rel and os.path.exists(os.path.join(folder, backbone_rel)):
        os.symlink(backbone_rel, link)
    else:
        oracle.write_safetensors(link, dict(sorted(back.items())))
    oracle.write_safetensors(os.path.join(folder, s2), dict(sorted(moe.items())), {"format": "pt"})
    wmap = {k: s1 for k in back}
    wmap.update({k: s2 for k in moe})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": dict(sorted(wmap.items()))}, f, indent=1)


def write_pool(out, cfg, back, seeds, ids, single=False, i32=False):
    os.makedirs(out, exist_ok=True)
    oracle.write_safetensors(os.path.join(out, "backbone.safetensors"), dict(sorted(back.items())))
    ev = ids.astype(np.int32 if i32 else np.int64)
    oracle.write_safetensors(os.path.join(out, "eval.safetensors"), {"input_ids": ev})
    for name, moe in seeds.items():
        write_folder(os.path.join(out, name), cfg, back, moe, single=single)


def read_folder(folder):
    """(config, {name: float64 array}) of a checkpoint folder, for the oracle."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    idx = os.path.join(folder, "model.safetensors.index.json")
    t = {}
    if os.path.exists(idx):
        for shard in sorted(set(json.load(open(idx))["weight_map"].values())):
            t.update(oracle.read_safetensors(os.path.join(folder, shard))[0])
    else:
        t.update(oracle.read_safetensors(os.path.join(folder, "model.safetensors"))[0])
    return cfg, t


def main(argv=None):
    ap = argparse.ArgumentParser(description="random GPT-2-layout MoE networks")
    ap.add_argument("out")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--backbone-seed", type=int, default=100)
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=24)
    ap.add_argument("--positions", type=int, default=16)
    ap.add_argument("--moe", default="0", help="MoE blocks: '0', '0,2' or 'all'")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--router", default="topk")
    ap.add_argument("--shared", type=int, default=0)
    ap.add_argument("--h", type=int, default=12)
    ap.add_argument("--act", default="relu")
    ap.add_argument("--net-act", default="gelu_new")
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--lm-bias", action="store_true")
    ap.add_argument("--no-gate-bias", action="store_true")
    ap.add_argument("--N", type=int, default=6)
    ap.add_argument("--T", type=int, default=12)
    ap.add_argument("--i32", action="store_true")
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--teacher", action="store_true")
    a = ap.parse_args(argv)
    layers = list(range(a.layers)) if a.moe == "all" else [int(x) for x in a.moe.split(",")]
    cfg = config(d=a.d, layers=a.layers, heads=a.heads, vocab=a.vocab, positions=a.positions,
                 moe_layers=layers, n=a.n, k=a.k, router=a.router, shared=a.shared, h=a.h,
                 act=a.act, net_act=a.net_act, tied=not a.untied)
    back = backbone(cfg, a.backbone_seed, lm_bias=a.lm_bias)
    seeds = {"seed%s" % s: moe_blocks(cfg, int(s), gate_bias=not a.no_gate_bias)
             for s in a.seeds.split(",")}
    first = seeds["seed" + a.seeds.split(",")[0]]
    ids = teacher_ids(cfg, {**back, **first}, a.backbone_seed, a.N, a.T) if a.teacher else \
        eval_ids(cfg, a.backbone_seed, a.N, a.T)
    write_pool(a.out, cfg, back, seeds, ids, single=a.single, i32=a.i32)
    return 0


if __name__ == "__main__":
    sys.exit(main())
