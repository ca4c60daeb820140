"""tests/oracle/test_align.py - cost, align and merge against the numpy/scipy oracle.

* cost --json matrices (gate centred / not, expert) agree with oracle.gate_cost /
  oracle.expert_cost to 1e-4 relative; orders and totals with scipy's
  linear_sum_assignment; margins with enumeration of all orders;
* align output equals oracle.align's aligned B, and computes B's function
  (`eval --json` loss/accuracy, `eval --dump-outputs` outputs);
* merge equals (1-a) A + a B';
* recovery: for S = `scramble A` (with and without --translate) both methods find
  the inverse of the scramble's expert order and the aligned S equals A parameter
  by parameter (gate rows up to a common shift when translated).
Generated checkpoints: dense, top-k, shared experts, relu/gelu/silu_glu, with and
without biases.
"""
import itertools
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
from testutil import check  # noqa: E402


def run(*args):
    p = testutil.run(*args)
    if p.returncode != 0:
        print("command failed (%d): %s\n%s" % (p.returncode, " ".join(map(str, args)), p.stderr))
    return p


def close_rel(x, y, tol):
    x, y = np.asarray(x, float), np.asarray(y, float)
    scale = max(np.abs(y).max(), 1e-12)
    return x.shape == y.shape and bool(np.all(np.abs(x - y) <= tol * np.maximum(np.abs(y), 1e-3 * scale)))


def layer_params(L):
    """Every MoE parameter of a layer dict, as (name, array) pairs."""
    out = [("gate_w", L["gate_w"]), ("gate_b", L["gate_b"])]
    for kind in ("experts", "shared"):
        for i, e in enumerate(L[kind]):
            for k in sorted(e):
                out.append(("%s.%d.%s" % (kind, i, k), e[k]))
    return out


def max_param_diff(L1, L2):
    p1, p2 = layer_params(L1), layer_params(L2)
    assert [a for a, _ in p1] == [b for b, _ in p2]
    return max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for (_, a), (_, b) in zip(p1, p2))


def brute_second(C, best_order):
    n = C.shape[0]
    best = None
    for p in itertools.permutations(range(n)):
        if list(p) == list(best_order):
            continue
        t = C[np.arange(n), list(p)].sum()
        best = t if best is None or t < best else best
    return best


CONFIGS = [
    dict(n=4, d=8, h=16, act="relu", biases=True),
    dict(n=4, d=8, h=16, act="relu", biases=False),
    dict(n=4, d=6, h=10, act="silu_glu", biases=True),
    dict(n=3, d=6, h=10, act="silu_glu", biases=False),
    dict(n=5, d=7, h=12, act="gelu", router="topk", k=2, shared=2),
    dict(n=4, d=6, h=9, act="silu_glu", router="topk", k=3, shared=1),
]


def test_config(tmp, ci, cfg):
    a, b = os.path.join(tmp, "a%d.st" % ci), os.path.join(tmp, "b%d.st" % ci)
    ev = os.path.join(tmp, "e%d.st" % ci)
    ta, meta = gen_ckpt.write_layer(a, seed=10 + ci, **cfg)
    gen_ckpt.write_layer(b, seed=50 + ci, **cfg)
    gen_ckpt.write_evalset(ev, ta, meta, seed=3, N=120)
    A, B = oracle.load_layer(a), oracle.load_layer(b)
    n = A["n"]
    tag = "config %d %s" % (ci, cfg)

    # --- cost matrices, both methods, centred or not
    for method, center in (("expert", True), ("gate", True), ("gate", False)):
        js = os.path.join(tmp, "c.json")
        args = ["cost", a, b, "--method", method, "--json", js] + ([] if center else ["--no-center"])
        p = run(*args)
        check(p.returncode == 0, "%s: cost %s exit %d" % (tag, method, p.returncode))
        if p.returncode:
            continue
        with open(js) as f:
            j = json.load(f)
        want = oracle.expert_cost(A, B) if method == "expert" else oracle.gate_cost(A, B, center)
        got = np.array(j["matrix"])
        check(close_rel(got, want, 1e-4), "%s: %s centre=%s matrix differs from the oracle by %g"
              % (tag, method, center, np.abs(got - want).max()))
        check(j["method"] == method and j["centered"] == center, "%s: json method/centered" % tag)
        from scipy.optimize import linear_sum_assignment
        _, col = linear_sum_assignment(want)
        check(list(col) == j["order"], "%s: %s order %s vs scipy %s" % (tag, method, j["order"], list(col)))
        tot = want[np.arange(n), col].sum()
        check(abs(j["total"] - tot) <= 1e-4 * abs(tot), "%s: total %g vs %g" % (tag, j["total"], tot))
        sb = brute_second(want, col)
        check(abs(j["second_best"] - sb) <= 1e-4 * abs(sb) and abs(j["margin"] - (sb - tot)) <= 1e-4 * abs(sb),
              "%s: second best %g vs %g" % (tag, j["second_best"], sb))
        other = "gate" if method == "expert" else "expert"
        check(j["methods"][method]["order"] == j["order"] and other in j["methods"],
              "%s: both methods reported" % tag)
        check(j["agree"] == (j["methods"]["gate"]["order"] == j["methods"]["expert"]["order"]),
              "%s: agree flag" % tag)

    # --- align against oracle.align, and same function as B
    for method in ("expert", "gate"):
        out = os.path.join(tmp, "al%d_%s.st" % (ci, method))
        p = run("align", a, b, "-o", out, "--method", method)
        check(p.returncode == 0, "%s: align exit" % tag)
        if p.returncode:
            continue
        O = oracle.load_layer(out)
        ref = oracle.align(A, B, method=method)
        check("order " + " ".join(map(str, ref["order"])) in p.stdout,
              "%s: align printed order %r vs %s" % (tag, p.stdout.splitlines()[:1], ref["order"]))
        dd = max_param_diff(O, ref["layer"])
        check(dd == 0.0, "%s: align %s differs from the oracle's aligned B by %g" % (tag, method, dd))
        X = oracle.load_evalset(ev)["inputs"]
        zo, _ = oracle.forward(O, X)
        zb, _ = oracle.forward(B, X)
        check(np.abs(zo - zb).max() < 1e-6, "%s: aligned B is another function (oracle)" % tag)
        check(O["meta"].get("moescope.align.method") == method and
              O["meta"].get("moescope.align.order") == " ".join(map(str, ref["order"])) and
              O["meta"].get("seed") == str(50 + ci), "%s: align metadata %s" % (tag, O["meta"]))
        if method == "expert":
            # the C evaluator agrees: same loss/accuracy, same outputs
            res = {}
            for name, path in (("b", b), ("al", out)):
                js, dump = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".dump")
                q = run("eval", path, "--eval", ev, "--json", js, "--dump-outputs", dump)
                check(q.returncode == 0, "%s: eval exit" % tag)
                if q.returncode:
                    break
                with open(js) as f:
                    res[name] = (json.load(f), oracle.read_safetensors(dump)[0])
            if len(res) == 2:
                jb, ja = res["b"][0], res["al"][0]
                check(abs(jb["loss"] - ja["loss"]) < 1e-5 and jb["accuracy"] == ja["accuracy"],
                      "%s: eval of aligned B differs: %s vs %s" % (tag, ja, jb))
                diff = np.abs(res["b"][1]["outputs"] - res["al"][1]["outputs"]).max()
                check(diff < 1e-4, "%s: dumped outputs differ by %g" % (tag, diff))

    # --- stages off
    out = os.path.join(tmp, "naive%d.st" % ci)
    p = run("align", a, b, "-o", out, "--no-order", "--no-wm")
    if p.returncode == 0:
        O = oracle.load_layer(out)
        check(max_param_diff(O, B) == 0.0, "%s: --no-order --no-wm must copy B" % tag)
    check(p.returncode == 0, "%s: align --no-order --no-wm" % tag)
    p = run("align", a, b, "-o", out, "--no-order")
    if p.returncode == 0:
        ref = oracle.align(A, B, order_stage=False)
        check(max_param_diff(oracle.load_layer(out), ref["layer"]) == 0.0, "%s: skip_order" % tag)
    check(p.returncode == 0, "%s: align --no-order" % tag)

    # --- merge
    out = os.path.join(tmp, "m%d.st" % ci)
    p = run("merge", a, b, "--alpha", "0.3", "-o", out)
    check(p.returncode == 0, "%s: merge exit" % tag)
    if p.returncode == 0:
        M = oracle.load_layer(out)
        Bp = oracle.align(A, B)["layer"]
        worst = 0.0
        for (_, x), (_, y), (_, z) in zip(layer_params(M), layer_params(A), layer_params(Bp)):
            worst = max(worst, float(np.abs(np.asarray(x) - (0.7 * np.asarray(y) + 0.3 * np.asarray(z))).max()))
        check(worst < 1e-6, "%s: merge differs from 0.7 A + 0.3 B' by %g" % (tag, worst))
        check(M["meta"].get("moescope.merge.alpha") == "0.3", "%s: merge metadata" % tag)

    # --- recovery from a scramble
    for translate in (False, True):
        s = os.path.join(tmp, "s%d_%d.st" % (ci, translate))
        p = run("scramble", a, "-o", s, "--seed", 7 + ci, *(["--translate"] if translate else []))
        check(p.returncode == 0, "%s: scramble exit" % tag)
        if p.returncode:
            continue
        S = oracle.load_layer(s)
        sigma = [int(x) for x in S["meta"]["moescope.scramble.order"].split()]
        inv = list(np.argsort(sigma))
        js = os.path.join(tmp, "cs.json")
        p = run("cost", a, s, "--json", js)
        check(p.returncode == 0, "%s: cost of the scrambled pair: %s" % (tag, p.stderr))
        if p.returncode == 0:
            with open(js) as f:
                j = json.load(f)
            for m in ("gate", "expert"):
                check(j["methods"][m]["order"] == inv, "%s translate=%d: %s order %s is not the inverse "
                      "of the scramble %s" % (tag, translate, m, j["methods"][m]["order"], sigma))
            check(j["total"] < 1e-3 * j["margin"], "%s: recovered order should cost ~0 (%g, margin %g)"
                  % (tag, j["total"], j["margin"]))
        for method in ("expert", "gate"):
            out = os.path.join(tmp, "r%d_%d_%s.st" % (ci, translate, method))
            p = run("align", a, s, "-o", out, "--method", method)
            check(p.returncode == 0, "%s: align scrambled" % tag)
            if p.returncode:
                continue
            O = oracle.load_layer(out)
            exact = all(np.array_equal(x, y) for (nx, x), (_, y) in zip(layer_params(O), layer_params(A))
                        if not nx.startswith("gate"))
            check(exact, "%s translate=%d %s: aligned experts differ from A" % (tag, translate, method))
            gw = np.hstack([O["gate_w"], O["gate_b"][:, None]]) - np.hstack([A["gate_w"], A["gate_b"][:, None]])
            if translate:
                dev = np.abs(gw - gw[0]).max()
                check(np.abs(gw).max() > 1e-3, "%s: translation expected" % tag)
            else:
                dev = np.abs(gw).max()
            check(dev < 1e-5, "%s translate=%d %s: gate rows off by %g" % (tag, translate, method, dev))
            if translate and method == "gate":
                # centring is what makes the gate cost blind to the translation
                c0 = run("cost", a, s.replace("_1.st", "_0.st"), "--method", "gate", "--json", js + "0")
                c1 = run("cost", a, s, "--method", "gate", "--json", js + "1")
                u1 = run("cost", a, s, "--method", "gate", "--no-center", "--json", js + "2")
                for name, q in (("centred", c0), ("centred, translated", c1), ("uncentred", u1)):
                    check(q.returncode == 0, "%s: gate cost (%s): %s" % (tag, name, q.stderr))
                if c0.returncode == 0 and c1.returncode == 0 and u1.returncode == 0:
                    m0, m1, m2 = (np.array(json.load(open(js + k))["matrix"]) for k in "012")
                    check(close_rel(m1, m0, 1e-4), "%s: centred gate cost moved under translation" % tag)
                    check(not close_rel(m2, m0, 1e-2), "%s: uncentred gate cost should move" % tag)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for ci, cfg in enumerate(CONFIGS):
            test_config(tmp, ci, cfg)
    return testutil.summary("test_align_py")


if __name__ == "__main__":
    sys.exit(main())
