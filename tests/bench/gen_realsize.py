#!/usr/bin/env python3
"""gen_realsize.py - a pair of real-sized synthetic MoE checkpoints in a family's
Hugging Face layout, BF16, written tensor by tensor (memory: a few tensors).

  gen_realsize.py OUT --family mixtral|olmoe|deepseek_v3 --n 8 --d 4096 --h 14336 [--shards 2] [--eval N]

writes OUT/A and OUT/B, each a directory with the shards
(model-0000i-of-0000k.safetensors and model.safetensors.index.json when
--shards > 1, else model.safetensors) and config.json. B is A with its experts
reordered, every expert's hidden units permuted and noise added (a stand-in for
a second fine-tune): the assignments then have a real answer to find.
--eval N also writes OUT/eval.safetensors, a layer-only evaluation set: inputs
[N, d] float32, standard normal rows (the scale of hidden states after the
block's RMS norm), standing in for captured tokens (capture_inputs.py).
"""
import argparse
import json
import os
import struct

import numpy as np

LAYOUT = {
    # family: (layer prefix, (gate, up, down) names), config
    "mixtral": ("model.layers.0.block_sparse_moe", ("w1", "w3", "w2"),
                {"model_type": "mixtral", "num_experts_per_tok": 2}),
    "olmoe": ("model.layers.0.mlp", ("gate_proj", "up_proj", "down_proj"),
              {"model_type": "olmoe", "num_experts_per_tok": 8, "norm_topk_prob": False}),
    # DeepSeek-V3: sigmoid scores, a selection-only correction bias (F32), 8 groups of
    # which 4 are kept, one shared expert of the routed experts' width
    "deepseek_v3": ("model.layers.0.mlp", ("gate_proj", "up_proj", "down_proj"),
                    {"model_type": "deepseek_v3", "num_experts_per_tok": 8, "n_group": 8,
                     "topk_group": 4, "norm_topk_prob": True, "routed_scaling_factor": 2.5,
                     "scoring_func": "sigmoid", "topk_method": "noaux_tc", "n_shared_experts": 1}),
}


def bf16(x):
    """float32 -> bfloat16 bytes, round to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return u.astype(np.uint16).tobytes()


class Source:
    """A's tensors, regenerated on demand from (seed, expert) so B can be made
    from them without holding the layer."""

    def __init__(self, a):
        self.a = a
        rng = np.random.default_rng([a.seed, 999])
        self.pi = rng.permutation(a.n)                       # B's slot i holds A's expert pi[i]
        g = LAYOUT[a.family][2].get("n_group", 1)
        if g > 1:  # group-limited routing: a permutation that keeps the groups whole
            m, rho = a.n // g, rng.permutation(g)
            self.pi = np.concatenate([rho[b] * m + rng.permutation(m) for b in range(g)])
        self.hidden = [rng.permutation(a.h) for _ in range(a.n)]

    def expert(self, e):
        a = self.a
        rng = np.random.default_rng([a.seed, e])
        g = rng.standard_normal((a.h, a.d), dtype=np.float32) / np.float32(np.sqrt(a.d))
        u = rng.standard_normal((a.h, a.d), dtype=np.float32) / np.float32(np.sqrt(a.d))
        dn = rng.standard_normal((a.d, a.h), dtype=np.float32) / np.float32(np.sqrt(a.h))
        return g, u, dn

    def gate(self):
        rng = np.random.default_rng([self.a.seed, 100000])
        return rng.standard_normal((self.a.n, self.a.d), dtype=np.float32)


def fast_bf16(rng, shape):
    """Random BF16 bits at memory speed (the DeepSeek-sized layers are 11e9 values):
    random sign and 7-bit mantissa, magnitude in [2^-8, 2^-6), about 1/sqrt(d)."""
    r = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    return (r & np.uint16(0x807F)) | ((np.uint16(119) + ((r >> np.uint16(7)) & np.uint16(1))) << np.uint16(7))


def fast_tensors(src, which):
    """DeepSeek-sized layers, generated as BF16 bits directly: B's slot i is A's expert
    pi[i] with its hidden units permuted and the 3 low mantissa bits of every value
    redrawn (a relative change below 2^-4): the stand-in for a second fine-tune."""
    a = src.a
    pre, (gn, un, dn), _ = LAYOUT[a.family]

    def expert(e, k):
        rng = np.random.default_rng([a.seed, e, k])
        return fast_bf16(rng, (a.d, a.h) if k == 2 else (a.h, a.d))

    def gate():
        g = src.gate()
        return bf16(g if which == "A" else g[src.pi] + np.float32(a.noise) * g.std() *
                    np.random.default_rng([a.seed, 8]).standard_normal(g.shape, dtype=np.float32))

    def corr():
        c = np.random.default_rng([a.seed, 9]).standard_normal(a.n).astype(np.float32) * np.float32(0.01)
        return (c if which == "A" else c[src.pi]).tobytes()

    out = [(pre + ".gate.weight", (a.n, a.d), gate),
           (pre + ".gate.e_score_correction_bias", (a.n,), corr, "F32")]
    for i in range(a.n):
        def part(k, i=i):
            t = expert(i if which == "A" else src.pi[i], k)
            if which == "B":
                P = src.hidden[i]
                t = t[:, P] if k == 2 else t[P]
                low = np.random.default_rng([a.seed, 10 + i, k]).integers(0, 8, size=t.shape, dtype=np.uint16)
                t = (t & np.uint16(0xFFF8)) | low
            return np.ascontiguousarray(t).tobytes()
        for k, nm in enumerate((gn, un, dn)):
            shape = (a.d, a.h) if k == 2 else (a.h, a.d)
            out.append(("%s.experts.%d.%s.weight" % (pre, i, nm), shape, lambda k=k, part=part: part(k)))
    for k, nm in enumerate((gn, un, dn)):  # the shared expert: the same in A and B
        shape = (a.d, a.h) if k == 2 else (a.h, a.d)
        out.append(("%s.shared_experts.%s.weight" % (pre, nm), shape,
                    lambda k=k: expert(10 ** 6, k).tobytes()))
    return out


def tensors(src, which):
    """(name, shape, producer[, dtype]) in file order; producer() -> bytes."""
    a = src.a
    if a.family == "deepseek_v3":
        return fast_tensors(src, which)
    pre, (gn, un, dn), _ = LAYOUT[a.family]
    noise = np.random.default_rng([a.seed, 7])

    def jitter(x):
        return x + np.float32(a.noise) * noise.standard_normal(x.shape, dtype=np.float32) * np.float32(x.std())

    def gate():
        g = src.gate()
        return bf16(g if which == "A" else jitter(g[src.pi]))

    out = [(pre + ".gate.weight", (a.n, a.d), gate)]
    for i in range(a.n):
        def part(k, i=i):
            e = i if which == "A" else src.pi[i]
            t = src.expert(e)[k]
            if which == "B":
                P = src.hidden[i]
                t = jitter(t[:, P] if k == 2 else t[P])
            return bf16(t)
        for k, nm in enumerate((gn, un, dn)):
            shape = (a.d, a.h) if k == 2 else (a.h, a.d)
            out.append(("%s.experts.%d.%s.weight" % (pre, i, nm), shape, lambda k=k, part=part: part(k)))
    return out


def write_file(path, items, dtype="BF16"):
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for it in items:
        name, shape, dt = it[0], it[1], it[3] if len(it) > 3 else dtype
        nb = (2 if dt == "BF16" else 4) * int(np.prod(shape))
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for it in items:
            f.write(it[2]())
    return off


def write_checkpoint(src, which, out):
    a = src.a
    os.makedirs(out, exist_ok=True)
    items = tensors(src, which)
    cfg = dict(LAYOUT[a.family][2], hidden_size=a.d, intermediate_size=a.h,
               num_local_experts=a.n, num_experts=a.n, num_hidden_layers=1)
    if a.family == "deepseek_v3":
        cfg.update(n_routed_experts=a.n, moe_intermediate_size=a.h, first_k_dense_replace=0)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    if a.shards == 1:
        write_file(os.path.join(out, "model.safetensors"), items)
        return
    per = (len(items) + a.shards - 1) // a.shards
    wm, total = {}, 0
    for s in range(a.shards):
        nm = "model-%05d-of-%05d.safetensors" % (s + 1, a.shards)
        part = items[s * per:(s + 1) * per]
        total += write_file(os.path.join(out, nm), part)
        wm.update({t[0]: nm for t in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=1)


def write_eval(path, a):
    rng = np.random.default_rng([a.seed, 555])
    x = rng.standard_normal((a.eval, a.d), dtype=np.float32)
    write_file(path, [("inputs", x.shape, lambda: x.tobytes())], dtype="F32")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--family", choices=sorted(LAYOUT), default="mixtral")
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--d", type=int, default=4096)
    p.add_argument("--h", type=int, default=14336)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--noise", type=float, default=0.3)
    p.add_argument("--eval", type=int, default=0, help="also write OUT/eval.safetensors with N inputs")
    a = p.parse_args()
    src = Source(a)
    for which in ("A", "B"):
        write_checkpoint(src, which, os.path.join(a.out, which))
    if a.eval > 0:
        write_eval(os.path.join(a.out, "eval.safetensors"), a)
    print(" ".join(str(int(x)) for x in np.argsort(src.pi)))  # the order align should find


if __name__ == "__main__":
    main()
