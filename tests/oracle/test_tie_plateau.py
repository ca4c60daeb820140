"""tests/oracle/test_tie_plateau.py - ranks that survive ties, end to end: a pair built
so that 23 of its 120 expert orders have barrier exactly 0 and the chosen order
sits a hair (about 1e-9) above them. `landscape` (JSON, CSV, text) and `study`
must give the chosen order rank 1, tied 24 and the rank by AUC that the numpy
oracle (tests/oracle/oracle.py) gives.

The construction (n = 5, ReLU experts, dense routing, a regression head):
  * A: slots 0..3 hold four near-copies p_i = p + delta_i of one expert, with
    the same gate row and bias (so the router cannot tell them apart); slot 4
    holds a different expert.
  * E: the targets are the outputs of A with the four copies replaced by their
    parameter mean, so every path that averages copies dips below the chord:
    the 23 orders that keep slot 4 in place but exchange copies have barrier
    0 exactly (the barrier is clipped at 0).
  * B: A's experts scrambled by sigma, and in the copy that returns to slot 1
    one hidden unit u rescaled (first layer times alpha, second layer divided
    by alpha): the same function (ReLU is positively homogeneous), so the
    expert method recovers sigma's inverse exactly. Along the straight path the
    unit's two scales multiply to 1 + t(1-t)(alpha + 1/alpha - 2) > 1, so the
    recovered order's curve rises above the chord by about
    t(1-t)(alpha-1)^2 (r . c_u), r the residual and c_u the unit's
    contribution: u is the unit with r . c_u > 0 and alpha is set from the
    oracle's curve so that this barrier is about 1e-9, far below
    tau = 1e-6 * B(naive) and far above float noise.
The 96 orders that move slot 4 have barriers near 0.1."""
import csv
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

N_EXP, D, H, T = 5, 6, 6, 25
SIGMA = [3, 0, 4, 1, 2]  # B's expert j is A's expert SIGMA[j]
TARGET = 1e-9            # the chosen order's barrier, set through alpha


def f32(v):
    return np.asarray(v, np.float32).astype(np.float64)


def build_a():
    t, meta = gen_ckpt.make_layer(seed=3, n=N_EXP, d=D, h=H, router="dense", act="relu", classes=4)
    rng = np.random.default_rng(11)
    keys = [k[len("moe.experts.0."):] for k in t if k.startswith("moe.experts.0.")]
    for i in range(1, 4):
        for k in keys:
            base = t["moe.experts.0." + k]
            t["moe.experts.%d.%s" % (i, k)] = f32(base + 0.05 * rng.standard_normal(base.shape))
        t["moe.gate.weight"][i] = t["moe.gate.weight"][0]
        t["moe.gate.bias"][i] = t["moe.gate.bias"][0]
    avg = dict(t)
    for k in keys:
        m = f32(sum(t["moe.experts.%d.%s" % (i, k)] for i in range(4)) / 4)
        for i in range(4):
            avg["moe.experts.%d.%s" % (i, k)] = m
    L = oracle.layer_from_tensors(avg, meta)
    X = f32(np.random.default_rng(5).standard_normal((64, D)))
    Z, _ = oracle.forward(L, X)
    ev = {"inputs": X, "targets": oracle.head(L, Z).astype(np.float32)}
    return t, meta, keys, ev


def build_b(t, keys, u, alpha):
    """A scrambled by SIGMA; in B's copy of A's expert 1, unit u rescaled by alpha."""
    b = {k: v for k, v in t.items() if not k.startswith("moe.experts") and not k.startswith("moe.gate")}
    b["moe.gate.weight"] = t["moe.gate.weight"][SIGMA].copy()
    b["moe.gate.bias"] = t["moe.gate.bias"][SIGMA].copy()
    for j, s in enumerate(SIGMA):
        for k in keys:
            b["moe.experts.%d.%s" % (j, k)] = t["moe.experts.%d.%s" % (s, k)].copy()
    j = SIGMA.index(1)
    b["moe.experts.%d.fc1.weight" % j][u, :] = f32(b["moe.experts.%d.fc1.weight" % j][u, :] * alpha)
    b["moe.experts.%d.fc1.bias" % j][u] = f32(b["moe.experts.%d.fc1.bias" % j][u] * alpha)
    b["moe.experts.%d.fc2.weight" % j][:, u] = f32(b["moe.experts.%d.fc2.weight" % j][:, u] / alpha)
    return b


def chosen_barrier(t, meta, keys, ev, u, alpha):
    A = oracle.layer_from_tensors(t, meta)
    B = oracle.layer_from_tensors(build_b(t, keys, u, alpha), meta)
    inv = [SIGMA.index(i) for i in range(N_EXP)]
    return oracle.curve(A, oracle.align(A, B, order=inv)["layer"], ev, T)["barrier"]


def fixture(work):
    """Write A, B, E; return (paths, the oracle's layers and evaluation set)."""
    t, meta, keys, ev = build_a()
    # the unit whose rescaling lifts the curve most (r . c_u > 0), then alpha
    # from the barrier's (alpha - 1)^2 law so that it is about TARGET
    probe = 1.05
    lifts = [chosen_barrier(t, meta, keys, ev, u, probe) for u in range(H)]
    u = int(np.argmax(lifts))
    alpha = 1.0 + (probe - 1.0) * np.sqrt(TARGET / lifts[u]) if lifts[u] > 0 else probe
    b = build_b(t, keys, u, alpha)
    paths = [os.path.join(work, f) for f in ("A.safetensors", "B.safetensors", "E.safetensors")]
    oracle.write_safetensors(paths[0], t, meta)
    oracle.write_safetensors(paths[1], b, meta)
    oracle.write_safetensors(paths[2], ev)
    return paths, oracle.layer_from_tensors(t, meta), oracle.layer_from_tensors(b, meta), ev


def main():
    with tempfile.TemporaryDirectory() as work:
        (pa, pb, pe), A, B, ev = fixture(work)
        js, cs = os.path.join(work, "l.json"), os.path.join(work, "l.csv")
        r = run("landscape", pa, pb, "--eval", pe, "--json", js, "--csv", cs)
        check(r.returncode == 0, "landscape ran (%s)" % r.stderr.strip()[-300:])
        if r.returncode:
            return testutil.summary("test_tie_plateau")
        J = json.load(open(js))
        rows = [(tuple(o["order"]), o["barrier"], o["acc_barrier"], o["loss_auc"]) for o in J["orders"]]
        e = J["methods"]["expert"]
        inv = [SIGMA.index(i) for i in range(N_EXP)]
        # the construction holds
        zeros = [o for o, b, _, _ in rows if b == 0.0]
        check(len(rows) == 120 and len(zeros) == 23, "23 of 120 orders at barrier exactly 0 (%d)" % len(zeros))
        check(all(o[4] == 2 for o in zeros), "the zero orders keep B's distinct expert in slot 4")
        check(e["order"] == inv, "expert method recovers sigma's inverse (%s)" % e["order"])
        check(0.3 * TARGET <= e["barrier"] <= 3 * TARGET and e["barrier"] < J["tau"],
              "chosen barrier about 1e-9 above 0 and within tau (%.3g, tau %.3g)" % (e["barrier"], J["tau"]))
        check(sum(1 for _, b, _, _ in rows if b < e["barrier"]) == 23,
              "without the tolerance the chosen order would rank 24")
        # the oracle (float64) sees the same plateau
        O = oracle.landscape(A, B, ev, T)
        ob = {o: b for o, b, _, _ in O["rows"]}
        worst = max(abs(ob[o] - b) for o, b, _, _ in rows)
        check(worst <= 2e-6, "every order's barrier within 2e-6 of the oracle's (worst %.3g)" % worst)
        check(sorted(o for o, b in ob.items() if b == 0.0) == sorted(zeros), "the oracle's orders at exactly 0 are the same 23")
        check(abs(O["expert"]["barrier"] - e["barrier"]) <= 2e-10,
              "chosen barrier %.4g vs oracle %.4g" % (e["barrier"], O["expert"]["barrier"]))
        # ranks with the tolerance: rank 1, tied 24, rank by AUC as the oracle
        want = oracle.rank_info(rows, e["barrier"], e["loss_auc"], e["order"], J["tau"])
        check(want["rank"] == 1 and want["tied"] == 24, "oracle on the rows: rank 1, tied 24 (%s)" % want)
        got = {k: e[k] for k in ("rank", "tied", "rank_auc")}
        check(got == want, "expert: landscape %s vs oracle %s" % (got, want))
        check(got == {k: O["expert"][k] for k in got},
              "expert: landscape %s vs the oracle's own landscape %s" % (got, {k: O["expert"][k] for k in got}))
        g = J["methods"]["gate"]
        wg = oracle.rank_info(rows, g["barrier"], g["loss_auc"], g["order"], J["tau"])
        check({k: g[k] for k in wg} == wg and g["tied"] == 24, "gate: %s vs oracle %s" % (g, wg))
        check("rank 1 (tied: 24 at 0.0000; by AUC %d)" % want["rank_auc"] in r.stdout,
              "text: rank 1 (tied: 24 at 0.0000; by AUC %d)" % want["rank_auc"])
        # CSV: the 24 tied orders share rank 1 and tied 24
        lines = [l for l in open(cs) if not l.startswith("#")]
        C = list(csv.DictReader(lines))
        top = [c for c in C if c["rank"] == "1"]
        check(len(top) == 24 and all(c["tied"] == "24" for c in top), "CSV: 24 rows of rank 1, tied 24")
        # study of the pair: the same numbers
        sj = os.path.join(work, "s.json")
        r = run("study", pa, pb, "--eval", pe, "-q", "--json", sj)
        check(r.returncode == 0, "study ran (%s)" % r.stderr.strip()[-300:])
        if r.returncode == 0:
            P = json.load(open(sj))["pairs"][0]
            check({k: P["methods"]["expert"][k] for k in got} == got and P["zero_tied"] == 24,
                  "study: expert rank/tied/rank_auc and 24 orders tied at 0 (%s)" % P["zero_tied"])
    return testutil.summary("test_tie_plateau")


if __name__ == "__main__":
    sys.exit(main())
