"""tests/lib/gen_tui_family.py - a pair of Hugging Face-style checkpoint folders with
several MoE layers, for driving the explorer's layer list (l) and large-n views.

    gen_tui_family.py OUT [--family olmoe|deepseek_v3] [--n 16] [--d 32] [--h 16]
                          [--layers 2] [--N 256] [--seed 1]

writes OUT/A and OUT/B (one shard per layer: model-0000L-of-0000K.safetensors,
model.safetensors.index.json, config.json) and OUT/eval.safetensors: `inputs`
[N, d] with the metadata capture.layer = "0", as sample-checkpoints/
capture_inputs.py records it (the set belongs to layer 0 only). B is A with its
experts permuted (group-preserving for deepseek_v3) and its hidden units
shuffled, plus noise, so an alignment has something to find.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402


def layer(rng, fam, n, d, h):
    sc = 1 / np.sqrt(d)
    r = lambda *s: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    W = {"gate": r(n, d) * 4, "w1": r(n, h, d), "w3": r(n, h, d), "w2": r(n, d, h)}
    if fam == "deepseek_v3":
        W["corr"] = (rng.standard_normal(n) * 0.1).astype(np.float32)
    return W


def config(fam, n, d, h, groups):
    cfg = {"model_type": fam, "hidden_size": d, "num_experts_per_tok": 8 if n >= 32 else 2}
    if fam == "olmoe":
        cfg.update({"num_experts": n, "norm_topk_prob": False})
    else:
        cfg.update({"n_routed_experts": n, "n_group": groups, "topk_group": max(1, groups // 2),
                    "norm_topk_prob": True, "routed_scaling_factor": 2.5, "moe_intermediate_size": h,
                    "n_shared_experts": 0})
    return cfg


def write(target, fam, layers, cfg):
    os.makedirs(target, exist_ok=True)
    k = len(layers)
    wm, total = {}, 0
    for L, W in enumerate(layers):
        name = "model-%05d-of-%05d.safetensors" % (L + 1, k)
        t = ff.hf_tensors(fam, W, L=L)
        ff.write_safetensors(os.path.join(target, name), t)
        for x in t:
            wm[x[0]] = name
            total += len(x[3])
    with open(os.path.join(target, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f)
    with open(os.path.join(target, "config.json"), "w") as f:
        json.dump(cfg, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", default="olmoe", choices=["olmoe", "deepseek_v3"])
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--h", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--N", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    A = [layer(rng, a.family, a.n, a.d, a.h) for _ in range(a.layers)]
    B = []
    for W in A:
        pi = (ff.group_perm(rng, a.n, a.groups) if a.family == "deepseek_v3" else rng.permutation(a.n))
        perms = [rng.permutation(a.h) for _ in range(a.n)]
        S = ff.scramble(W, pi, perms)
        for key in ("gate", "w1", "w3", "w2"):
            S[key] = (S[key] + 0.5 * rng.standard_normal(S[key].shape) / np.sqrt(a.d)).astype(np.float32)
        B.append(S)
    cfg = config(a.family, a.n, a.d, a.h, a.groups)
    write(os.path.join(a.out, "A"), a.family, A, cfg)
    write(os.path.join(a.out, "B"), a.family, B, cfg)
    X = rng.standard_normal((a.N, a.d)).astype(np.float32)
    ff.write_safetensors(os.path.join(a.out, "eval.safetensors"),
                         [("inputs", "F32", X.shape, X.tobytes())],
                         {"capture.model": "synthetic", "capture.layer": "0"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
