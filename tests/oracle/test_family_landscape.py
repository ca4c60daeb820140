"""tests/oracle/test_family_landscape.py - `moescope landscape` for every router the
evaluator supports, against an independent numpy computation and against
`moescope curve --order`.

For every real family (F32 checkpoints written by tests/lib/family_fixtures.py, two
random layers A and B, an inputs-only evaluation set, so the layer-output loss):
  * the landscape runs (sigmoid scores, selection-only bias, group-limited top-k,
    no renormalisation, routed scale, gated or wider shared experts, output bias,
    top-1 scaled by its probability, clamped SwiGLU);
  * for a few orders its barrier and AUC equal tests/oracle/family_ref.py's: B reordered
    and weight-matched by scipy (family_fixtures.weight_match), every tensor of
    the block interpolated in the family's own layout, the block's forward and the
    layer-output loss computed in float64;
  * every row equals `curve --order` for that order (the evaluator's path);
  * group-limited routers (DeepSeek): the orders are exactly the group-preserving
    ones, (m!)^g g! of them, the output says so and the ranks are among them.
A native layer with a head and a group-limited sigmoid router: `--all-orders`
ranges over all n! orders, each order's curve ending at its own L(1) (those that
split a group change B's function), and agrees with `curve --order` on orders
that split groups and with the group-order landscape on those that do not;
without a head each order's chord ends at its own output D_B'(x), as `curve
--order` computes it.
"""
import csv
import itertools
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_family_landscape_")
T = 5
N = 48


def landscape(a, b, e, tag, *extra):
    out = os.path.join(TMP, tag + ".json")
    r = run("landscape", a, b, "--eval", e, "--points", T, "--json", out, "-q", *extra)
    check(r.returncode == 0, "%s: landscape failed: %s" % (tag, r.stderr.strip()[-400:]))
    if r.returncode:
        return None, r.stdout
    with open(out) as f:
        return json.load(f), r.stdout


def curve_barriers(a, b, e, orders, tag):
    """{order: (barrier, auc)} from `curve --order` (8 orders per run)."""
    got = {}
    for s in range(0, len(orders), 8):
        chunk = orders[s:s + 8]
        out = os.path.join(TMP, "%s_curve%d.csv" % (tag, s))
        args = ["curve", a, b, "--eval", e, "--points", T, "--csv", out]
        for o in chunk:
            args += ["--order", ",".join(map(str, o))]
        r = run(*args)
        check(r.returncode == 0, "%s: curve failed: %s" % (tag, r.stderr.strip()[-400:]))
        if r.returncode:
            continue
        with open(out) as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
        for q, o in enumerate(chunk):
            loss = np.array([float(row["order%d_loss" % (q + 1)]) for row in rows])
            got[tuple(o)] = family_ref.barrier(loss)
    return got


def in_group(o, G):
    m = len(o) // G
    return all(len({o[a * m + i] // m for i in range(m)}) == 1 for a in range(G))


def one_family(fam, seed):
    rng = np.random.default_rng(seed)
    WA, cfg = ff.random_layer(fam, rng)
    WB, _ = ff.random_layer(fam, rng)
    d = os.path.join(TMP, fam)
    paths = {}
    for nm, W in (("a", WA), ("b", WB)):
        os.makedirs(os.path.join(d, nm))
        ff.write_checkpoint(os.path.join(d, nm, "model.safetensors"), fam, W, cfg, others=False)
        with open(os.path.join(d, nm, "config.json"), "w") as f:
            json.dump(cfg, f)
        paths[nm] = os.path.join(d, nm)
    n, dm = WA["gate"].shape
    X = rng.standard_normal((N, dm)).astype(np.float32)
    e = os.path.join(d, "eval.safetensors")
    ff.write_safetensors(e, [("inputs", "F32", X.shape, X.tobytes())])
    J, out = landscape(paths["a"], paths["b"], e, fam)
    if J is None:
        return
    rows = {tuple(r["order"]): r for r in J["orders"]}
    G = cfg.get("n_group", 1) if fam.startswith("deepseek") else 1
    grouped = G > 1 and (fam == "deepseek_v3" or cfg.get("topk_group", G) < G)
    if grouped:
        m = n // G
        want = math.factorial(m) ** G * math.factorial(G)
        check(J["order_set"] == "group" and J["orders_in_set"] == want and len(rows) == want,
              "%s: %d group-preserving orders expected, got %s/%s/%d" %
              (fam, want, J["order_set"], J["orders_in_set"], len(rows)))
        check(all(in_group(o, G) for o in rows), "%s: an order splits a group" % fam)
        check("group-preserving" in out, "%s: the output names the order set" % fam)
        ranks_ok = all(1 <= J["methods"][k]["rank"] <= want for k in ("gate", "expert"))
        check(ranks_ok, "%s: ranks among the group's orders" % fam)
    else:
        check(J["order_set"] == "all" and len(rows) == math.factorial(n),
              "%s: all %d orders expected" % (fam, math.factorial(n)))
    # numpy, independently: a few orders
    keys = sorted(rows)
    pick = [tuple(range(n)), tuple(J["best"]["order"]), tuple(J["worst"]["order"])]
    pick += [keys[i] for i in rng.choice(len(keys), 2, replace=False)]
    for o in pick:
        bar, auc, tol = ff.order_barrier_ref(fam, WA, WB, o, cfg, X, T)
        r = rows[o]
        check(abs(r["barrier"] - bar) <= tol and abs(r["loss_auc"] - auc) <= tol,
              "%s: order %s: barrier %.8g / AUC %.8g, numpy %.8g / %.8g" %
              (fam, o, r["barrier"], r["loss_auc"], bar, auc))
    # the evaluator's path, order by order
    sub = keys if len(keys) <= 24 else [keys[i] for i in rng.choice(len(keys), 14, replace=False)]
    sub = list(dict.fromkeys(list(sub) + pick[1:3]))
    cb = curve_barriers(paths["a"], paths["b"], e, sub, fam)
    bad = [(o, rows[o]["barrier"], cb[o][0]) for o in cb
           if abs(rows[o]["barrier"] - cb[o][0]) > 2e-6 + 1e-5 * abs(cb[o][0])]
    check(len(cb) == len(sub) and not bad, "%s: landscape vs curve --order: %s" % (fam, bad[:3]))


def native_grouped(seed=3):
    """A native layer with a head, a sigmoid group-limited router with a selection
    bias and routed scale, and a gated shared expert: --all-orders."""
    n, d = 8, 12
    paths = {}
    for nm, s in (("a", seed), ("b", seed + 1)):
        t, meta = gen_ckpt.make_layer(s, n=n, d=d, h=8, router="topk", k=2, act="silu_glu",
                                      shared=1)
        rng = np.random.default_rng(s + 77)
        t["moe.gate.correction_bias"] = 0.05 * rng.standard_normal(n)
        t["moe.shared.gate.weight"] = rng.standard_normal(d) / np.sqrt(d)
        t["moe.output.bias"] = 0.1 * rng.standard_normal(d)
        t = {k: v.astype(np.float32).astype(np.float64) for k, v in t.items()}
        meta.update({"moescope.score": "sigmoid", "moescope.n_group": "4",
                     "moescope.topk_group": "2", "moescope.group_score": "top2_sum",
                     "moescope.routed_scale": "2.5"})
        paths[nm] = os.path.join(TMP, "native_%s.safetensors" % nm)
        oracle.write_safetensors(paths[nm], t, meta)
        if nm == "a":
            e = os.path.join(TMP, "native_eval.safetensors")
            gen_ckpt.write_evalset(e, t, meta, seed=s, N=64)
    a, b = paths["a"], paths["b"]
    Jg, _ = landscape(a, b, e, "native_group")
    Ja, out = landscape(a, b, e, "native_all", "--all-orders")
    if Jg is None or Ja is None:
        return
    check(Jg["order_set"] == "group" and len(Jg["orders"]) == 2 ** 4 * 24,
          "native: the group's 384 orders by default")
    check(Ja["order_set"] == "all" and len(Ja["orders"]) == math.factorial(n),
          "native --all-orders: all %d orders" % math.factorial(n))
    rows = {tuple(r["order"]): r for r in Ja["orders"]}
    grows = {tuple(r["order"]): r for r in Jg["orders"]}
    diff = max(abs(rows[o]["barrier"] - r["barrier"]) for o, r in grows.items())
    check(diff <= 1e-6, "native: group orders agree between the two sets (max diff %.3g)" % diff)
    rng = np.random.default_rng(seed)
    keys = sorted(rows)
    split = [o for o in keys if not in_group(o, 4)]
    sub = [split[i] for i in rng.choice(len(split), 6, replace=False)] + [keys[0], keys[-1]]
    cb = curve_barriers(a, b, e, sub, "native")
    bad = [(o, rows[o]["barrier"], cb[o][0]) for o in cb
           if abs(rows[o]["barrier"] - cb[o][0]) > 2e-6 + 1e-5 * abs(cb[o][0])]
    check(len(cb) == len(sub) and not bad, "native --all-orders vs curve --order: %s" % bad[:3])
    # without a head each group-splitting order's chord ends at its own output
    t, meta = gen_ckpt.make_layer(seed, n=n, d=d, h=8, router="topk", k=2, head=False)
    meta.update({"moescope.score": "sigmoid", "moescope.n_group": "4", "moescope.topk_group": "2",
                 "moescope.group_score": "top2_sum"})
    hl = os.path.join(TMP, "native_headless.safetensors")
    oracle.write_safetensors(hl, t, meta)
    X = np.random.default_rng(seed).standard_normal((32, d)).astype(np.float32)
    he = os.path.join(TMP, "native_headless_eval.safetensors")
    ff.write_safetensors(he, [("inputs", "F32", X.shape, X.tobytes())])
    t2, _ = gen_ckpt.make_layer(seed + 9, n=n, d=d, h=8, router="topk", k=2, head=False)
    hl2 = os.path.join(TMP, "native_headless2.safetensors")
    oracle.write_safetensors(hl2, t2, meta)
    Jh, _ = landscape(hl, hl2, he, "native_headless_all", "--all-orders")
    if Jh is None:
        return
    hrows = {tuple(r["order"]): r for r in Jh["orders"]}
    check(len(hrows) == math.factorial(n), "headless --all-orders: all %d orders" % math.factorial(n))
    hkeys = sorted(hrows)
    hsplit = [o for o in hkeys if not in_group(o, 4)]
    sub = [hsplit[i] for i in rng.choice(len(hsplit), 7, replace=False)] + [hkeys[0]]
    cb = curve_barriers(hl, hl2, he, sub, "native_headless")
    bad = [(o, hrows[o]["barrier"], cb[o][0]) for o in cb
           if abs(hrows[o]["barrier"] - cb[o][0]) > 2e-6 + 1e-5 * abs(cb[o][0])]
    check(len(cb) == len(sub) and not bad,
          "headless --all-orders vs curve --order (own chords): %s" % bad[:3])


def main():
    for s, fam in enumerate(ff.FAMILIES):
        one_family(fam, 100 + s)
    native_grouped()
    return testutil.summary("test_family_landscape")


if __name__ == "__main__":
    sys.exit(main())
