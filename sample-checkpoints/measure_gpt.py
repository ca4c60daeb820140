#!/usr/bin/env python3
"""measure_gpt.py - barriers of the network's held-out loss between the seeds of a
GPT pool (sample-checkpoints/gpt/POOL), measured in Python (PyTorch forward), used
to tune make_gpt.py's recipe. moescope's own `study` is the reference once it reads
these checkpoints; this script is the independent first measurement.

For each pair of seeds (A, B), B aligned to A by Algorithm 1:
  1. expert order: linear assignment on the data-free `expert` cost
     C_ij = sqrt(|A~_i^T A~_i - A~_j^T A~_j|_F^2 + |B~_i B~_i^T - B~_j B~_j^T|_F^2),
     A~ = [W1 | b1] (h x (d+1)), B~ = [W2 | b2] (d x (h+1));
  2. weight matching per matched pair: S = W1a W1b^T + b1a b1b^T + W2a^T W2b,
     the hidden permutation maximising trace; shared experts likewise;
then every MoE parameter is interpolated, theta(t) = (1-t) theta_A + t theta'_B, and
barrier = max_m [L(t_m) - ((1-t_m) L(0) + t_m L(1))] on the network's next-token loss.
naive = identity order, no weight matching; skip-order = identity order + weight
matching; full = the expert order + weight matching; the landscape = every order of
block `--layer` (with weight matching; other MoE blocks at their full alignment), its
rank 1 + #{orders with a lower barrier - 1e-6}. For n = 8 the landscape is a random
sample of orders (--sample) and the rank an estimate, said so.

usage: measure_gpt.py POOL_DIR [--points 11] [--no-landscape] [--pairs 1-2,3-4] [--json F]"""
import argparse
import itertools
import json
import math
import os
import sys

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gptlib as G  # noqa: E402

torch.set_num_threads(1)


# ------------------------------------------------------------ MoE parameters
def moe_of(t, L, n, s):
    """Block L's MoE as arrays in the maths' layout: gate W [n,d], b [n]; per expert
    (W1 [h,d], b1 [h], W2 [d,h], b2 [d]) — GPT-2's Conv1D weights transposed."""
    p = "transformer.h.%d.mlp." % L
    ex = lambda q: (t[q + "c_fc.weight"].T.astype(np.float64), t[q + "c_fc.bias"].astype(np.float64),
                    t[q + "c_proj.weight"].T.astype(np.float64), t[q + "c_proj.bias"].astype(np.float64))
    W = t[p + "gate.weight"].astype(np.float64)
    b = t[p + "gate.bias"].astype(np.float64) if p + "gate.bias" in t else np.zeros(n)
    return dict(W=W, b=b, experts=[ex(p + "experts.%d." % i) for i in range(n)],
                shared=[ex(p + "shared_experts.%d." % j) for j in range(s)], has_bias=p + "gate.bias" in t)


def moe_tensors(m, L):
    p = "transformer.h.%d.mlp." % L
    out = {p + "gate.weight": m["W"]}
    if m["has_bias"]:
        out[p + "gate.bias"] = m["b"]
    for kind, lst in (("experts", m["experts"]), ("shared_experts", m["shared"])):
        for i, (W1, b1, W2, b2) in enumerate(lst):
            q = p + "%s.%d." % (kind, i)
            out.update({q + "c_fc.weight": W1.T, q + "c_fc.bias": b1, q + "c_proj.weight": W2.T, q + "c_proj.bias": b2})
    return out


def grams(e):
    W1, b1, W2, b2 = e
    A = np.hstack([W1, b1[:, None]])
    B = np.hstack([W2, b2[:, None]])
    return A.T @ A, B @ B.T


def expert_cost(EA, EB):
    gA, gB = [grams(e) for e in EA], [grams(e) for e in EB]
    return np.array([[math.sqrt(((a[0] - b[0]) ** 2).sum() + ((a[1] - b[1]) ** 2).sum()) for b in gB] for a in gA])


def weight_match(ea, eb):
    """B's expert with its hidden units permuted to best match A's (one assignment)."""
    W1a, b1a, W2a, _ = ea
    W1b, b1b, W2b, b2b = eb
    S = W1a @ W1b.T + np.outer(b1a, b1b) + W2a.T @ W2b
    _, col = linear_sum_assignment(S, maximize=True)
    return (W1b[col], b1b[col], W2b[:, col], b2b)


def align(A, B, order, wm=True):
    """B re-expressed with slot i holding B's expert order[i] (and its gate row),
    each hidden layer weight-matched to A's slot i when wm; shared experts ordered by
    the expert cost, then matched."""
    ex = [B["experts"][j] for j in order]
    sh = list(B["shared"])
    if sh and wm:
        r, c = linear_sum_assignment(expert_cost(A["shared"], B["shared"]))
        sh = [B["shared"][j] for j in c]
    if wm:
        ex = [weight_match(a, e) for a, e in zip(A["experts"], ex)]
        sh = [weight_match(a, e) for a, e in zip(A["shared"], sh)]
    return dict(W=B["W"][list(order)], b=B["b"][list(order)], experts=ex, shared=sh, has_bias=B["has_bias"])


def expert_order(A, B):
    r, c = linear_sum_assignment(expert_cost(A["experts"], B["experts"]))
    return tuple(int(x) for x in c)


def lerp(A, B, t):
    f = lambda x, y: (1 - t) * x + t * y
    return dict(W=f(A["W"], B["W"]), b=f(A["b"], B["b"]), has_bias=A["has_bias"],
                experts=[tuple(f(x, y) for x, y in zip(a, b)) for a, b in zip(A["experts"], B["experts"])],
                shared=[tuple(f(x, y) for x, y in zip(a, b)) for a, b in zip(A["shared"], B["shared"])])


# ------------------------------------------------------------ the network
class Net:
    """One torch GPT whose MoE tensors are swapped per evaluation; the residual
    stream after block L0's attention (L0 = the first MoE block) is computed once."""

    def __init__(self, folder, eval_path):
        self.model, self.tensors = G.model_from_folder(folder)
        self.cfg = self.model.cfg
        self.ids = torch.from_numpy(G.st_read(eval_path)[0]["input_ids"].astype(np.int64))
        self.L0 = min(self.cfg["moe"]["layers"])
        with torch.no_grad():
            h = self.model.embed(self.ids)
            for b in self.model.transformer.h[:self.L0]:
                h = b(h)
            b = self.model.transformer.h[self.L0]
            self.x1 = h + b.attn(b.ln_1(h))

    @torch.no_grad()
    def loss(self, moes):
        """moes: {L: MoE dict}. (loss, accuracy) on the evaluation set."""
        sd = self.model.state_dict()
        for L, m in moes.items():
            for k, v in moe_tensors(m, L).items():
                sd[k].copy_(torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)))
        tr = self.model.transformer
        b = tr.h[self.L0]
        h = self.x1 + b.mlp(b.ln_2(self.x1))
        for blk in tr.h[self.L0 + 1:]:
            h = blk(h)
        logits = tr.ln_f(h) @ tr.wte.weight.T
        loss = G.lm_loss(logits, self.ids).item()
        acc = (logits[:, :-1].argmax(-1) == self.ids[:, 1:]).float().mean().item()
        return loss, acc


def curve(net, A, Bal, ts):
    """Loss along the path; A, Bal: {L: MoE}; B's MoEs already aligned."""
    return [net.loss({L: lerp(A[L], Bal[L], t) for L in A})[0] for t in ts]


def barrier(Ls, ts):
    return max(l - ((1 - t) * Ls[0] + t * Ls[-1]) for l, t in zip(Ls, ts))


def measure_pair(net, A, B, layers, ts, landscape, layer, sample, rng):
    ident = {L: tuple(range(len(A[L]["experts"]))) for L in layers}
    full_o = {L: expert_order(A[L], B[L]) for L in layers}
    res = {}
    res["naive"] = barrier(curve(net, A, {L: align(A[L], B[L], ident[L], wm=False) for L in layers}, ts), ts)
    res["skip"] = barrier(curve(net, A, {L: align(A[L], B[L], ident[L]) for L in layers}, ts), ts)
    full_al = {L: align(A[L], B[L], full_o[L]) for L in layers}
    Ls = curve(net, A, full_al, ts)
    res["full"], res["loss_a"], res["loss_b"], res["mid_full"] = barrier(Ls, ts), Ls[0], Ls[-1], Ls[len(Ls) // 2]
    res["order"] = {L: full_o[L] for L in layers}
    res["cost_total"] = float(expert_cost(A[layer]["experts"], B[layer]["experts"])[range(len(full_o[layer])), full_o[layer]].sum())
    if landscape:
        n = len(A[layer]["experts"])
        orders = list(itertools.permutations(range(n)))
        exhaustive = len(orders) <= 24 or not sample
        if not exhaustive:
            idx = rng.choice(len(orders), size=sample, replace=False)
            orders = [orders[i] for i in idx]
        bars = []
        for o in orders:
            al = dict(full_al)
            al[layer] = align(A[layer], B[layer], o)
            bars.append(barrier(curve(net, A, al, ts), ts))
        bars = np.array(bars)
        below = int((bars < res["full"] - 1e-6).sum())
        res["best"], res["worst"] = float(bars.min()), float(bars.max())
        res["orders"] = len(orders)
        res["rank"] = 1 + below if exhaustive else 1 + below * math.factorial(n) / len(orders)
        res["percentile"] = 100.0 * below / len(orders)
        res["exhaustive"] = exhaustive
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pool")
    ap.add_argument("--points", type=int, default=11)
    ap.add_argument("--no-landscape", action="store_true")
    ap.add_argument("--layer", type=int, default=None, help="the block whose orders the landscape ranks")
    ap.add_argument("--sample", type=int, default=300, help="orders sampled when n! > 24")
    ap.add_argument("--pairs", default=None, help="e.g. 1-2,3-4 (default: every pair)")
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    folders = {s: os.path.join(a.pool, "seed%d" % s) for s in seeds}
    net = Net(folders[seeds[0]], os.path.join(a.pool, "eval.safetensors"))
    m = net.cfg["moe"]
    layers = m["layers"]
    layer = layers[0] if a.layer is None else a.layer
    moes = {}
    for s in seeds:
        _, t = G.read_folder(folders[s])
        moes[s] = {L: moe_of(t, L, m["num_experts"], m["num_shared_experts"]) for L in layers}
    # the frozen features alone: every MoE block switched off (D = 0)
    off = {L: dict(moes[seeds[0]][L]) for L in layers}
    for L in layers:
        z = lambda e: tuple(np.zeros_like(x) for x in e)
        off[L] = dict(off[L], experts=[z(e) for e in off[L]["experts"]], shared=[z(e) for e in off[L]["shared"]])
    off_loss = net.loss(off)[0]
    print("%s: n=%d k=%d %s shared=%d layers=%s; MoE switched off: loss %.4f" % (
        a.pool, m["num_experts"], m["top_k"], m["router"], m["num_shared_experts"], layers, off_loss))
    pairs = list(itertools.combinations(seeds, 2)) if not a.pairs else \
        [tuple(int(x) for x in p.split("-")) for p in a.pairs.split(",")]
    ts = [i / (a.points - 1) for i in range(a.points)]
    rng = np.random.default_rng(0)
    rows = []
    print("| seeds | loss A | loss B | naive | skip-order | full (expert order) | rank | best | worst | skip/full |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i, j in pairs:
        r = measure_pair(net, moes[i], moes[j], layers, ts, not a.no_landscape, layer, a.sample, rng)
        r["pair"] = [i, j]
        rows.append(r)
        rk = "-" if "rank" not in r else ("%d/%d" % (r["rank"], math.factorial(m["num_experts"])) if r["exhaustive"]
                                          else "~%.0f/%d (%d sampled)" % (r["rank"], math.factorial(m["num_experts"]), r["orders"]))
        print("| %d-%d | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %s | %s | %.1f |" % (
            i, j, r["loss_a"], r["loss_b"], r["naive"], r["skip"], r["full"], rk,
            "%.4f" % r["best"] if "best" in r else "-", "%.4f" % r["worst"] if "worst" in r else "-",
            r["skip"] / max(r["full"], 1e-9)), flush=True)
    mean = lambda k: float(np.mean([r[k] for r in rows]))
    print("mean: naive %.4f skip %.4f full %.4f; skip/full %.1f naive/full %.1f%s" % (
        mean("naive"), mean("skip"), mean("full"), mean("skip") / max(mean("full"), 1e-9),
        mean("naive") / max(mean("full"), 1e-9), "; mean rank %.2f" % mean("rank") if rows and "rank" in rows[0] else ""))
    if a.json:
        json.dump({"pool": a.pool, "points": a.points, "moe_off_loss": off_loss, "pairs": rows}, open(a.json, "w"),
                  indent=1, default=lambda o: list(o) if isinstance(o, tuple) else str(o))


if __name__ == "__main__":
    main()
