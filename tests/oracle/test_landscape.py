"""tests/oracle/test_landscape.py - `moescope landscape` and `moescope curve` against the
numpy oracle (tests/oracle/oracle.py: curve, curve_stats, landscape) and properties.

  * every order's barrier within 1e-4 of the oracle, the same sorted order where
    barriers differ by more than 1e-4, the same ranks and L-hat, the same named
    curves (naive, skip_order, gate, expert) and end points;
  * the landscape's entry for pi equals `curve --order pi`, and L(1) is B's loss
    for every order;
  * the barriers do not change when B's gate is translated, nor when B is
    scrambled (random element of G(n) + hidden permutations);
  * thread count and t-chunking (MOESCOPE_LS_MEM_MB) do not change a number;
  * sampled mode (n >= 10): distinct orders, correct barriers, a CI;
  * the JSON keys of the manual's formulas and the CSV.
Run with Debian's python3 (numpy, scipy); $MOESCOPE is the binary."""
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")


def run(*args, env=None, expect=0):
    r = testutil.run(*args, env=env)
    if expect is not None and r.returncode != expect:
        print("command:", " ".join(str(a) for a in args))
        print(r.stdout[-2000:], r.stderr[-2000:])
    return r


def landscape_json(tmp, a, b, e, name, *extra, env=None):
    out = os.path.join(tmp, name + ".json")
    r = run("landscape", a, b, "--eval", e, "--json", out, "-q", *extra, env=env)
    check(r.returncode == 0, "%s: landscape exits 0 (%s)" % (name, r.stderr.strip()[-300:]))
    if r.returncode:
        return None
    with open(out) as f:
        return json.load(f)


def close(a, b, tol):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol


def compare_oracle(name, J, O, N, T):
    """J: our JSON, O: oracle.landscape."""
    tol = 1e-4
    rows = {tuple(r["order"]): r for r in J["orders"]}
    check(len(rows) == len(O["rows"]) == len(J["orders"]), "%s: %d orders" % (name, len(O["rows"])))
    worst = 0.0
    acc_bad = 0
    for order, bar, accb, auc in O["rows"]:
        r = rows.get(order)
        if r is None:
            check(False, "%s: order %s missing" % (name, order))
            continue
        worst = max(worst, abs(r["barrier"] - bar), abs(r["loss_auc"] - auc))
        if accb is not None and abs(r["acc_barrier"] - accb) > 1.0 / N + 1e-9:
            acc_bad += 1
    check(worst <= tol, "%s: every order's barrier and AUC within 1e-4 (worst %.3g)" % (name, worst))
    check(acc_bad == 0, "%s: accuracy barriers within one sample (%d off)" % (name, acc_bad))
    # our sorted order agrees with the oracle's wherever barriers differ by > 1e-4
    ob = {o: b for o, b, _, _ in O["rows"]}
    seq = [ob[tuple(r["order"])] for r in J["orders"]]
    run_max, inv = -math.inf, 0.0
    for v in seq:
        inv = max(inv, run_max - v)
        run_max = max(run_max, v)
    check(inv <= tol, "%s: sorted by barrier like the oracle (worst inversion %.3g)" % (name, inv))
    # our sort: ascending, ties by order
    keys = [(r["barrier"], r["order"]) for r in J["orders"]]
    check(keys == sorted(keys), "%s: orders sorted by (barrier, order)" % name)
    # end points and named curves
    check(close(J["endpoints"]["loss_a"], O["naive"]["loss"][0], 1e-5), "%s: loss_a" % name)
    check(close(J["endpoints"]["loss_b"], O["naive"]["loss"][-1], 1e-5), "%s: loss_b" % name)
    for key in ("naive", "skip_order", "gate", "expert"):
        j = J[key] if key in ("naive", "skip_order") else J["methods"][key]
        o = O[key]
        check(tuple(j["order"]) == tuple(o["order"]), "%s: %s order %s vs %s" % (name, key, j["order"], o["order"]))
        err = max(abs(a - b) for a, b in zip(j["loss"], o["loss"]))
        check(len(j["loss"]) == T and err <= tol, "%s: %s loss curve within 1e-4 (%.3g)" % (name, key, err))
        check(close(j["barrier"], o["barrier"], tol), "%s: %s barrier %s vs %s" % (name, key, j["barrier"], o["barrier"]))
        check(close(j["loss_auc"], o["auc"], tol), "%s: %s auc" % (name, key))
        if o["acc"] is not None:
            e2 = max(abs(a - b) for a, b in zip(j["acc"], o["acc"]))
            check(e2 <= 1.0 / N + 1e-9, "%s: %s accuracy curve within one sample" % (name, key))
        else:
            check(j["acc"] is None and j["acc_barrier"] is None, "%s: %s no accuracy -> null" % (name, key))
    for m in ("gate", "expert"):
        j, o = J["methods"][m], O[m]
        # ranks are identical unless another order is within 1e-4 of the chosen barrier
        near = sum(1 for r in O["rows"] if abs(r[1] - o["barrier"]) <= tol and r[0] != o["order"])
        check(abs(j["rank"] - o["rank"]) <= near, "%s: %s rank %d vs oracle %d" % (name, m, j["rank"], o["rank"]))
        if near == 0:
            check(j["rank"] == o["rank"], "%s: %s rank identical" % (name, m))
        if o["l_hat"] is None:
            check(j["l_hat"] is None, "%s: %s l_hat null" % (name, m))
        else:
            den = O["naive"]["barrier"] - O["best"]
            check(j["l_hat"] is not None and abs(j["l_hat"] - o["l_hat"]) <= 100 * 3 * tol / den + 1e-6,
                  "%s: %s l_hat %s vs %s" % (name, m, j["l_hat"], o["l_hat"]))
        check(close(j["cost"], o["cost"], 1e-6 * max(1, abs(o["cost"]))), "%s: %s cost total" % (name, m))
    check(close(J["best"]["barrier"], O["best"], tol), "%s: best barrier" % name)


SPEC_KEYS = {"format", "a", "b", "eval", "layer", "n", "points", "t", "endpoints", "naive",
             "skip_order", "methods", "best", "orders"}


def check_keys(name, J):
    check(SPEC_KEYS <= set(J), "%s: top-level keys %s" % (name, sorted(SPEC_KEYS - set(J))))
    check(J["format"] == "moescope.landscape/1", "%s: format" % name)
    check(set(J["endpoints"]) >= {"loss_a", "loss_b", "acc_a", "acc_b"}, "%s: endpoint keys" % name)
    ck = {"order", "barrier", "acc_barrier", "loss_auc", "loss", "acc"}
    check(ck <= set(J["naive"]) and ck <= set(J["skip_order"]), "%s: curve keys" % name)
    for m in ("gate", "expert"):
        check(ck | {"cost", "rank", "l_hat"} <= set(J["methods"][m]), "%s: methods.%s keys" % (name, m))
    check({"order", "barrier"} <= set(J["best"]), "%s: best keys" % name)
    check(all({"order", "barrier", "acc_barrier", "loss_auc"} <= set(r) for r in J["orders"]),
          "%s: order row keys" % name)
    T = J["points"]
    check(len(J["t"]) == T and abs(J["t"][-1] - 1) < 1e-12 and J["t"][0] == 0, "%s: t grid" % name)


def make_pair(tmp, name, regression=False, same_head=True, N=150, **kw):
    a, b, e = (os.path.join(tmp, "%s_%s.safetensors" % (name, s)) for s in ("a", "b", "e"))
    ta, meta = gen_ckpt.make_layer(11, **kw)
    tb, _ = gen_ckpt.make_layer(12, **kw)
    if same_head:  # the backbone and head are frozen: B shares A's head
        for k in ta:
            if k.startswith("head."):
                tb[k] = ta[k]
        # B near A so the curves are interesting (small barriers), but not A
        rng = np.random.default_rng(3)
        for k in ta:
            if not k.startswith("head."):
                tb[k] = (0.6 * ta[k] + 0.4 * tb[k]).astype(np.float32).astype(np.float64)
        # and B's experts shuffled, so the identity is not the right order
        n = kw.get("n", 4)
        perm = rng.permutation(n)
        tb2 = dict(tb)
        for i in range(n):
            for k in list(tb):
                pre = "moe.experts.%d." % perm[i]
                if k.startswith(pre):
                    tb2["moe.experts.%d.%s" % (i, k[len(pre):])] = tb[k]
        tb2["moe.gate.weight"] = tb["moe.gate.weight"][perm]
        if "moe.gate.bias" in tb:
            tb2["moe.gate.bias"] = tb["moe.gate.bias"][perm]
        tb = tb2
    oracle.write_safetensors(a, ta, meta)
    oracle.write_safetensors(b, tb, meta)
    gen_ckpt.write_evalset(e, ta, meta, seed=5, N=N, regression=regression)
    return a, b, e


def test_against_oracle(tmp):
    T = 9
    cases = [
        ("dense_relu", {}, dict(n=4)),
        ("topk_gelu_shared", {}, dict(n=4, router="topk", k=2, act="gelu", shared=2)),
        ("dense_gelu_new", {}, dict(n=4, act="gelu_new")),
        ("glu_regression", {"regression": True}, dict(n=4, act="silu_glu")),
        ("layer_only", {}, dict(n=4, head=False)),
        ("heads_differ_no_norm", {"same_head": False}, dict(n=3, norm=False, residual=False)),
    ]
    for name, pk, kw in cases:
        a, b, e = make_pair(tmp, name, **pk, **kw)
        J = landscape_json(tmp, a, b, e, name, "--points", T)
        if J is None:
            continue
        check_keys(name, J)
        A, B, ev = oracle.load_layer(a), oracle.load_layer(b), oracle.load_evalset(e)
        O = oracle.landscape(A, B, ev, T=T)
        compare_oracle(name, J, O, len(ev["inputs"]), T)
        if name == "layer_only":
            check(J["kind"] == "layer" and J["endpoints"]["loss_a"] == 0, "layer-only kind and zero end points")
        if name == "dense_relu":
            consistency(tmp, name, a, b, e, J, T)
            invariances(tmp, name, a, b, e, J, T)


def consistency(tmp, name, a, b, e, J, T):
    """landscape entry for pi == curve --order pi; L(1) is B's loss for every order"""
    rows = J["orders"]
    pick = [rows[0], rows[len(rows) // 2], rows[-1]]
    for r in pick:
        csv = os.path.join(tmp, "curve.csv")
        o = ",".join(str(v) for v in r["order"])
        res = run("curve", a, b, "--eval", e, "--order", o, "--points", T, "--csv", csv)
        check(res.returncode == 0, "curve --order %s exits 0" % o)
        if res.returncode:
            continue
        ncomment = sum(1 for l in open(csv) if l.startswith("#"))  # provenance lines
        data = np.genfromtxt(csv, delimiter=",", names=True, skip_header=ncomment)
        loss = data["order1_loss"]
        acc = data["order1_acc"] if "order1_acc" in data.dtype.names else None
        bar, accb, auc = oracle.curve_stats(loss, acc)
        check(abs(bar - r["barrier"]) <= 1e-5 and abs(auc - r["loss_auc"]) <= 1e-5,
              "%s: curve --order %s barrier %.9g equals the landscape's %.9g" % (name, o, bar, r["barrier"]))
        check(abs(loss[-1] - J["endpoints"]["loss_b"]) <= 1e-5,
              "%s: L(1) for order %s is B's loss" % (name, o))
        check(abs(loss[0] - J["endpoints"]["loss_a"]) <= 1e-6, "%s: L(0) is A's loss" % name)
        # the text table prints the same barrier
        line = [l for l in res.stdout.splitlines() if l.startswith("order1")]
        check(line and abs(float(line[0].split()[-3]) - r["barrier"]) <= 1e-5, "%s: curve table barrier" % name)


def barriers(J):
    return {tuple(r["order"]): r["barrier"] for r in J["orders"]}


def invariances(tmp, name, a, b, e, J, T):
    base = barriers(J)
    # gate translation of B (any c_W, c_b): same barriers
    tb, meta = oracle.read_safetensors(b)
    rng = np.random.default_rng(8)
    cw = rng.standard_normal(tb["moe.gate.weight"].shape[1]) * 0.7
    tb["moe.gate.weight"] = tb["moe.gate.weight"] + cw
    tb["moe.gate.bias"] = tb.get("moe.gate.bias", 0) + 1.3
    bt = os.path.join(tmp, "translated.safetensors")
    oracle.write_safetensors(bt, {k: v.astype(np.float32) for k, v in tb.items()}, meta)
    Jt = landscape_json(tmp, a, bt, e, name + "_translated", "--points", T)
    if Jt:
        d = max(abs(base[k] - v) for k, v in barriers(Jt).items())
        check(d <= 1e-4, "%s: barriers unchanged by a gate translation (max diff %.3g)" % (name, d))
        for m in ("gate", "expert"):
            check(Jt["methods"][m]["rank"] == J["methods"][m]["rank"], "%s: %s rank unchanged by translation" % (name, m))
    # scramble(B): same landscape up to relabelling of B's experts
    bs = os.path.join(tmp, "scrambled.safetensors")
    r = run("scramble", b, "-o", bs, "--seed", 21, "--translate")
    check(r.returncode == 0, "scramble exits 0")
    if r.returncode == 0:
        Js = landscape_json(tmp, a, bs, e, name + "_scrambled", "--points", T)
        if Js:
            x = np.sort(np.array(list(base.values())))
            y = np.sort(np.array(list(barriers(Js).values())))
            check(len(x) == len(y) and np.abs(x - y).max() <= 1e-4,
                  "%s: scramble(B) has the same barriers (max diff %.3g)" % (name, np.abs(x - y).max()))
            for m in ("gate", "expert"):
                check(abs(Js["methods"][m]["barrier"] - J["methods"][m]["barrier"]) <= 1e-4
                      and Js["methods"][m]["rank"] == J["methods"][m]["rank"],
                      "%s: %s barrier and rank survive scrambling" % (name, m))
    # threads and t-chunking change nothing (the same arithmetic per order and t)
    J1 = landscape_json(tmp, a, b, e, name + "_chunked", "--points", T, "--threads", 1,
                        env={"MOESCOPE_LS_MEM_MB": "0.001"})
    if J1:
        b1 = barriers(J1)
        check(all(b1[k] == v for k, v in base.items()), "%s: chunked single-thread run gives identical barriers" % name)
        check(J1["methods"]["expert"]["rank"] == J["methods"]["expert"]["rank"], "%s: chunked ranks" % name)


def test_samples(tmp):
    """the bundled sample checkpoints, a few points (the oracle is plain numpy)"""
    T = 5
    for s in ("dense4", "shared4"):
        d = os.path.join(ROOT, "sample-checkpoints", s)
        a, b, e = (os.path.join(d, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
        if not all(os.path.exists(p) for p in (a, b, e)):
            check(False, "sample-checkpoints/%s is missing (it is committed)" % s)
            continue
        J = landscape_json(tmp, a, b, e, s, "--points", T)
        if J is None:
            continue
        A, B, ev = oracle.load_layer(a), oracle.load_layer(b), oracle.load_evalset(e)
        O = oracle.landscape(A, B, ev, T=T)
        compare_oracle(s, J, O, len(ev["inputs"]), T)


def wilson(p, n, z=1.959963984540054):
    """Wilson score interval of a binomial fraction p observed over n trials."""
    den = 1 + z * z / n
    ctr = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (0.0 if p <= 0 else max(0.0, ctr - half)), (1.0 if p >= 1 else min(1.0, ctr + half))


def test_sampled(tmp):
    a, b, e = make_pair(tmp, "n10", N=60, n=10, d=6, h=4)
    J = landscape_json(tmp, a, b, e, "n10", "--points", 5, "--samples", 150, "--seed", 4)
    if J is None:
        return
    check(J["exhaustive"] is False and J["nsampled"] == 150 and len(J["orders"]) == 150, "n10: 150 sampled orders")
    orders = [tuple(r["order"]) for r in J["orders"]]
    check(len(set(orders)) == 150 and all(sorted(o) == list(range(10)) for o in orders), "n10: distinct permutations")
    A, B, ev = oracle.load_layer(a), oracle.load_layer(b), oracle.load_evalset(e)
    some = [orders[0], orders[75], orders[-1]]
    O = oracle.landscape(A, B, ev, T=5, orders=some)
    got = barriers(J)
    d = max(abs(got[o] - bar) for o, bar, _, _ in O["rows"])
    check(d <= 1e-4, "n10: sampled barriers match the oracle (%.3g)" % d)
    for m in ("gate", "expert"):
        j = J["methods"][m]
        lo, hi = j["rank_percentile_ci95"]
        better = sum(1 for r in J["orders"] if r["barrier"] < j["barrier"] - J["tau"])
        check(j["rank"] == 1 + better, "n10: %s rank among the sample (tolerance tau)" % m)
        check(0 <= lo <= 100 * better / 150 <= hi <= 100, "n10: %s CI %.2f..%.2f holds the estimate" % (m, lo, hi))
        # the estimate among all 10! orders: 1 + (fraction of the sample below) * 10!,
        # and the Wilson score interval (95%) of that fraction, in percent
        want = 1 + better / 150 * math.factorial(10)
        check(abs(j["rank_estimate"] - want) <= 1e-9 * want,
              "n10: %s rank_estimate %s, expected %s" % (m, j["rank_estimate"], want))
        wl, wh = wilson(better / 150, 150)
        check(abs(lo - 100 * wl) <= 1e-9 and abs(hi - 100 * wh) <= 1e-9,
              "n10: %s CI %.6f..%.6f, Wilson's is %.6f..%.6f" % (m, lo, hi, 100 * wl, 100 * wh))
        check(close(j["barrier"], O[m]["barrier"], 1e-4), "n10: %s barrier vs oracle" % m)
    # same seed, same sample
    J2 = landscape_json(tmp, a, b, e, "n10b", "--points", 5, "--samples", 150, "--seed", 4)
    check(J2 is not None and barriers(J2) == got, "n10: the same seed gives the same sample")


def test_cli(tmp):
    a, b, e = make_pair(tmp, "cli", n=3)
    r = run("landscape", a, b, expect=2)
    check(r.returncode == 2 and "--eval" in r.stderr, "landscape without --eval is a usage error")
    r = run("landscape", a, b, "--eval", e, "--points", "2", expect=2)
    check(r.returncode == 2, "landscape --points 2 is a usage error")
    r = run("curve", a, b, "--eval", e, "--order", "0,0,1", expect=2)
    check(r.returncode == 2 and "permutation" in r.stderr, "curve --order must be a permutation")
    r = run("landscape", a, b, "--eval", e, "--json", a, expect=1)
    check(r.returncode == 1, "landscape refuses to write over an input")
    csv = os.path.join(tmp, "l.csv")
    r = run("landscape", a, b, "--eval", e, "--csv", csv, "-q", "--points", 5)
    check(r.returncode == 0, "landscape --csv")
    if r.returncode == 0:
        lines = [l for l in open(csv).read().splitlines() if not l.startswith("#")]
        check(lines[0] == "rank,order,barrier,acc_barrier,loss_auc,tied,tie_class,barrier_ci95_lo,barrier_ci95_hi"
              and len(lines) == 7,
              "landscape CSV: header + 6 orders")
        for name in ("naive", "skip-order", "gate", "expert", "best", "worst"):
            check(any(l.startswith(name) for l in r.stdout.splitlines()), "summary table has %s" % name)
    png, cpng, cv = (os.path.join(tmp, f) for f in ("l.png", "lc.png", "c.png"))
    r = run("landscape", a, b, "--eval", e, "-q", "--points", 5, "--png", png, "--curves-png", cpng)
    r2 = run("curve", a, b, "--eval", e, "--points", 5, "--order", "2,0,1", "--png", cv)
    for f, rr in ((png, r), (cpng, r), (cv, r2)):
        ok = rr.returncode == 0 and os.path.exists(f) and open(f, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        check(ok, "%s is a PNG" % os.path.basename(f))
    r = run("landscape", "--help")
    check(r.returncode == 0 and "usage" in r.stdout, "landscape --help")
    r = run("curve", "--help")
    check(r.returncode == 0 and "usage" in r.stdout, "curve --help")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_cli(tmp)
        test_against_oracle(tmp)
        test_sampled(tmp)
        test_samples(tmp)
    return testutil.summary("test_landscape")


if __name__ == "__main__":
    sys.exit(main())
