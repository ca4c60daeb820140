"""tests/lib/gen_wide.py - synthetic wide MoE pairs in their Hugging Face family layouts,
small enough for tests and tmux sessions:

  olmoe        n = 64 experts, top-8, softmax, no renormalisation (OLMoE-1B-7B's router)
  deepseek_v3  n = 256 experts in 8 groups, 4 groups kept, top-8, sigmoid scores with
               a selection-only correction bias (F32), renormalised, routed scale 2.5,
               one shared expert (DeepSeek-V3's router)

with the real tensor names and config.json keys but tiny widths (default d = 16,
h = 8), and an evaluation set of N hidden states ("inputs" [N, d], standing in
for states captured at the MoE block's input). For each family OUT/<family>/
holds a/ and b/ (model.safetensors + config.json) and eval.safetensors.

  python3 tests/lib/gen_wide.py OUT [--family olmoe|deepseek_v3|both] [--d 16] [--h 8]
                                [--N 64] [--seed 1] [--dtype BF16|F32] [--layers 1]
                                [--scrambled]

--scrambled: B is A with its experts permuted (group-preserving for DeepSeek-V3:
whole groups onto groups) and every expert's hidden units permuted, so an exact
alignment exists (the chosen order should undo it: barrier ~ 0). The permutation
is written to OUT/<family>/scramble.json ({"order": pi}: slot i of B holds A's
expert pi[i]). --layers K writes K MoE layers (block indices 1..K), the same
experts in each, for layer switching.

Then e.g.:
  ./moescope tui OUT/olmoe/a OUT/olmoe/b --eval OUT/olmoe/eval.safetensors
  ./moescope landscape OUT/deepseek_v3/a OUT/deepseek_v3/b --eval \\
      OUT/deepseek_v3/eval.safetensors --samples 200 --points 5
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402


def config_of(fam, n, d, h):
    """config.json of the family at width d, expert width h (the real keys)."""
    if fam == "olmoe":
        return {"model_type": "olmoe", "hidden_size": d, "intermediate_size": h, "num_experts": n,
                "num_local_experts": n, "num_experts_per_tok": 8, "norm_topk_prob": False}
    return {"model_type": "deepseek_v3", "hidden_size": d, "moe_intermediate_size": h,
            "n_routed_experts": n, "num_local_experts": n, "num_experts_per_tok": 8,
            "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
            "norm_topk_prob": True, "routed_scaling_factor": 2.5, "n_shared_experts": 1}


def random_layer(fam, rng, n, d, h):
    """Logical arrays (family_fixtures' names) of one layer."""
    sc = 1 / np.sqrt(d)
    r = lambda *s: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    W = {"gate": r(n, d) * 4, "w1": r(n, h, d), "w3": r(n, h, d), "w2": r(n, d, h)}
    if fam == "deepseek_v3":
        W["corr"] = (rng.standard_normal(n) * 0.1).astype(np.float32)
        W["s1"], W["s3"], W["s2"] = r(h, d), r(h, d), r(d, h)
    return W


def rounded(W, dtype):
    """W with every tensor (but the F32 correction bias) as dtype stores it."""
    if dtype != "BF16":
        return W
    return {k: (v if k == "corr" else ff.bf16_round(v)) for k, v in W.items()}


def scrambled(fam, W, rng):
    """A permuted copy of W: (W', pi)."""
    n, h = W["gate"].shape[0], W["w1"].shape[1]
    pi = ff.group_perm(rng, n, 8) if fam == "deepseek_v3" else rng.permutation(n)
    perms = [rng.permutation(h) for _ in range(n)]
    if "s1" in W:
        perms.append(rng.permutation(W["s1"].shape[0]))
    return ff.scramble(W, pi, perms), [int(p) for p in pi]


def write_model(dirname, fam, W, cfg, dtype, layers):
    os.makedirs(dirname, exist_ok=True)
    tensors = []
    for L in range(1, layers + 1):
        tensors += ff.hf_tensors(fam, W, L=L, dtype=dtype)
    ff.write_safetensors(os.path.join(dirname, "model.safetensors"), tensors)
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def write_pair(out, fam, d=16, h=8, N=64, seed=1, dtype="BF16", layers=1, scramble=False):
    """OUT/<fam>/{a,b,eval.safetensors}; returns (dir, W_A, W_B, X, cfg, pi or None)."""
    n = 64 if fam == "olmoe" else 256
    rng = np.random.default_rng(seed)
    cfg = config_of(fam, n, d, h)
    WA = rounded(random_layer(fam, rng, n, d, h), dtype)
    pi = None
    if scramble:
        WB, pi = scrambled(fam, WA, rng)
    else:
        WB = rounded(random_layer(fam, rng, n, d, h), dtype)
    base = os.path.join(out, fam)
    write_model(os.path.join(base, "a"), fam, WA, cfg, dtype, layers)
    write_model(os.path.join(base, "b"), fam, WB, cfg, dtype, layers)
    X = rng.standard_normal((N, d)).astype(np.float32)
    ff.write_safetensors(os.path.join(base, "eval.safetensors"),
                         [("inputs", "F32", X.shape, X.tobytes())])
    if pi is not None:
        with open(os.path.join(base, "scramble.json"), "w") as f:
            json.dump({"order": pi}, f)
    return base, WA, WB, X, cfg, pi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", default="both", choices=["olmoe", "deepseek_v3", "both"])
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--h", type=int, default=8)
    ap.add_argument("--N", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", default="BF16", choices=["BF16", "F32"])
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--scrambled", action="store_true")
    a = ap.parse_args()
    fams = ["olmoe", "deepseek_v3"] if a.family == "both" else [a.family]
    for fam in fams:
        base = write_pair(a.out, fam, a.d, a.h, a.N, a.seed, a.dtype, a.layers, a.scrambled)[0]
        print(base)


if __name__ == "__main__":
    main()
