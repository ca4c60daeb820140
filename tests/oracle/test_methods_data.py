"""tests/oracle/test_methods_data.py - the data-driven matching methods (activation,
router) against a numpy oracle written from their definitions (cost_data.c):

* activation: each expert's outputs on the evaluation set's inputs, every output
  column centred over the tokens, r_ij the cosine of A's expert i and B's expert j
  (flattened), C = 1 - r; router: the gate logits (centred over the experts for a
  softmax router, unless --no-center), r_ij the Pearson correlation of A's column i
  and B's column j over the tokens, C = 1 - r. `cost --json` matrices to 1e-4;
* the order against brute force over every permutation (n <= 6);
* align --method activation: the order, and each slot's hidden units matched by
  the correlation of their activations on the set (scipy's assignment as the
  independent solver): the aligned B parameter for parameter;
* landscape --method activation matches every pair's hidden units as align --method
  activation does: the activation order's barrier is the oracle's curve of the
  oracle's activation-aligned B, and `curve --method activation`'s; the default
  (weight matching) keeps the activation order's row where the table has it;
* property: a scrambled copy of A (translated gate too) aligns back to A with each
  new method, and its curve's barrier is ~0.
"""
import itertools
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check  # noqa: E402

CONFIGS = [
    dict(n=4, d=8, h=16, act="relu"),
    dict(n=5, d=7, h=12, act="gelu", router="topk", k=2, shared=1),
    dict(n=6, d=6, h=10, act="silu_glu", router="topk", k=3, biases=False),
]


def run(*args):
    p = testutil.run(*args)
    if p.returncode != 0:
        print("command failed (%d): %s\n%s" % (p.returncode, " ".join(map(str, args)), p.stderr))
    return p


def hidden(e, act, X):
    a = X @ e["w1"].T + e["b1"]
    if act == "silu_glu":
        return a / (1.0 + np.exp(-a)) * (X @ e["w3"].T + e["b3"])
    return oracle._act(act, a)


def column_corr(Za, Zb):
    """R (La, Lb): Pearson correlation of each column of Za with each of Zb over the rows."""
    a, b = Za - Za.mean(axis=0), Zb - Zb.mean(axis=0)
    na, nb = np.linalg.norm(a, axis=0), np.linalg.norm(b, axis=0)
    den = np.outer(na, nb)
    return np.where(den > 0, (a.T @ b) / np.where(den > 0, den, 1), 0.0)


def activation_cost(A, B, X):
    ya = [oracle.expert_apply(e, A["act"], X) for e in A["experts"]]
    yb = [oracle.expert_apply(e, B["act"], X) for e in B["experts"]]
    ya = [y - y.mean(axis=0) for y in ya]
    yb = [y - y.mean(axis=0) for y in yb]
    R = np.array([[(p * q).sum() / (np.linalg.norm(p) * np.linalg.norm(q)) for q in yb] for p in ya])
    return np.clip(1.0 - R, 0.0, 2.0)


def router_cost(A, B, X, center=True):
    sa, sb = X @ A["gate_w"].T + A["gate_b"], X @ B["gate_w"].T + B["gate_b"]
    if center:
        sa, sb = sa - sa.mean(axis=1, keepdims=True), sb - sb.mean(axis=1, keepdims=True)
    return np.clip(1.0 - column_corr(sa, sb), 0.0, 2.0)


def brute_order(C):
    """The permutation minimising sum_i C[i, p(i)], and the runner-up's total."""
    n = C.shape[0]
    tot = sorted((C[np.arange(n), list(p)].sum(), p) for p in itertools.permutations(range(n)))
    return list(tot[0][1]), tot[0][0], tot[1][0]


def oracle_align_activation(A, B, X):
    from scipy.optimize import linear_sum_assignment
    order, _, _ = brute_order(activation_cost(A, B, X))
    out = dict(B)
    out["gate_w"], out["gate_b"] = B["gate_w"][order], np.asarray(B["gate_b"])[order]
    experts = []
    for i in range(A["n"]):
        eb = B["experts"][order[i]]
        S = column_corr(hidden(A["experts"][i], A["act"], X), hidden(eb, B["act"], X))
        _, P = linear_sum_assignment(S, maximize=True)
        experts.append(oracle.permute_expert(eb, P))
    out["experts"] = experts
    return order, out


def max_diff(L1, L2, keys=("gate_w", "gate_b")):
    worst = max(float(np.abs(np.asarray(L1[k]) - np.asarray(L2[k])).max()) for k in keys)
    for e1, e2 in zip(L1["experts"], L2["experts"]):
        worst = max(worst, max(float(np.abs(e1[k] - e2[k]).max()) for k in e1))
    return worst


def cost_json(tmp, a, b, ev, method, *extra):
    js = os.path.join(tmp, "c.json")
    p = run("cost", a, b, "--eval", ev, "--method", method, "--json", js, *extra)
    if p.returncode:
        return None, p
    with open(js) as f:
        return json.load(f), p


def test_config(tmp, ci, cfg):
    a, b, ev = (os.path.join(tmp, "%s%d.st" % (x, ci)) for x in "abe")
    ta, meta = gen_ckpt.write_layer(a, seed=20 + ci, **cfg)
    gen_ckpt.write_layer(b, seed=60 + ci, **cfg)
    gen_ckpt.write_evalset(ev, ta, meta, seed=4, N=150)
    A, B = oracle.load_layer(a), oracle.load_layer(b)
    X = oracle.load_evalset(ev)["inputs"].astype(np.float64)
    tag = "config %d %s" % (ci, cfg)
    for method, center, want in (("activation", True, activation_cost(A, B, X)),
                                 ("router", True, router_cost(A, B, X)),
                                 ("router", False, router_cost(A, B, X, center=False))):
        j, p = cost_json(tmp, a, b, ev, method, *([] if center else ["--no-center"]))
        check(j is not None, "%s: cost --method %s: %s" % (tag, method, p.stderr))
        if j is None:
            continue
        got = np.array(j["matrix"])
        check(got.shape == want.shape and np.abs(got - want).max() < 1e-4,
              "%s: %s (centre %s) matrix differs from the oracle by %g" % (tag, method, center,
                                                                            np.abs(got - want).max()))
        order, best, second = brute_order(want)
        if second - best > 1e-3:  # a clear optimum: the same permutation
            check(j["order"] == order, "%s: %s order %s, brute force %s" % (tag, method, j["order"], order))
        check(abs(j["total"] - best) < 1e-3, "%s: %s total %g vs brute force %g" % (tag, method, j["total"], best))
        check(all(j["methods"][m] is not None for m in ("gate", "expert", "activation", "router")),
              "%s: every method reported with --eval" % tag)
    # without --eval the data-driven ones are not computed, and asking for one is a usage error
    js = os.path.join(tmp, "plain.json")
    p = run("cost", a, b, "--json", js)
    if p.returncode == 0:
        with open(js) as f:
            j = json.load(f)
        check(j["methods"]["activation"] is None and j["methods"]["router"] is None and
              "--eval E" in p.stdout, "%s: cost without --eval: %s" % (tag, p.stdout[-200:]))
    q = testutil.run("cost", a, b, "--method", "router")
    check(q.returncode == 2 and "--eval" in q.stderr, "%s: --method router without --eval: %d %s"
          % (tag, q.returncode, q.stderr))
    # align --method activation: order and hidden units by activations
    out = os.path.join(tmp, "al%d.st" % ci)
    p = run("align", a, b, "-o", out, "--method", "activation", "--eval", ev)
    check(p.returncode == 0, "%s: align --method activation" % tag)
    if p.returncode == 0:
        order, ref = oracle_align_activation(A, B, X)
        O = oracle.load_layer(out)
        check("order " + " ".join(map(str, order)) in p.stdout, "%s: align order %s" % (tag, order))
        d = max_diff(O, ref)
        check(d == 0.0, "%s: activation-aligned B differs from the oracle's by %g" % (tag, d))
        check(O["meta"].get("moescope.align.method") == "activation", "%s: align metadata" % tag)


def test_scramble(tmp):
    """A scrambled copy comes back with each new method: parameters and barrier."""
    a, ev = os.path.join(tmp, "sa.st"), os.path.join(tmp, "se.st")
    ta, meta = gen_ckpt.write_layer(a, seed=5, n=5, d=8, h=12, act="gelu", router="topk", k=2)
    gen_ckpt.write_evalset(ev, ta, meta, seed=6, N=160)
    A = oracle.load_layer(a)
    for translate in (False, True):
        s = os.path.join(tmp, "s%d.st" % translate)
        p = run("scramble", a, "-o", s, "--seed", 11, *(["--translate"] if translate else []))
        check(p.returncode == 0, "scramble exit")
        if p.returncode:
            continue
        for method in ("activation", "router"):
            out = os.path.join(tmp, "back.st")
            p = run("align", a, s, "-o", out, "--method", method, "--eval", ev)
            check(p.returncode == 0, "align the scramble back with %s" % method)
            if p.returncode:
                continue
            O = oracle.load_layer(out)
            keys = ("gate_w",) if not translate else ()
            d = max_diff(O, A, keys=keys) if keys else max(
                float(np.abs(e1[k] - e2[k]).max()) for e1, e2 in zip(O["experts"], A["experts"]) for k in e1)
            check(d < 1e-6, "%s (translate %s): aligned scramble differs from A by %g" % (method, translate, d))
            js = os.path.join(tmp, "cv.json")
            p = run("curve", a, s, "--eval", ev, "--method", method, "--points", 5, "--json", js)
            check(p.returncode == 0, "curve of the scramble with %s" % method)
            if p.returncode == 0:
                with open(js) as f:
                    j = json.load(f)
                bar = j["curves"].get(method, {}).get("barrier")
                check(bar is not None and abs(bar) < 1e-5, "%s (translate %s): barrier %s, want ~0"
                      % (method, translate, bar))


def test_landscape_method(tmp, ci, cfg):
    """landscape --method M: the hidden units of every pair matched as align --method M"""
    a, b, ev = (os.path.join(tmp, "%s%d.st" % (x, ci)) for x in "abe")  # test_config's
    A, B = oracle.load_layer(a), oracle.load_layer(b)
    E = oracle.load_evalset(ev)
    X = E["inputs"].astype(np.float64)
    tag, T = "config %d landscape" % ci, 5
    got = {}
    for method in ("expert", "activation"):
        js = os.path.join(tmp, "lm.json")
        p = run("landscape", a, b, "--eval", ev, "--points", T, "--method", method, "-q", "--json", js)
        check(p.returncode == 0, "%s --method %s" % (tag, method))
        if p.returncode == 0:
            with open(js) as f:
                got[method] = json.load(f)
        js = os.path.join(tmp, "cm.json")
        p = run("curve", a, b, "--eval", ev, "--points", T, "--method", method, "--json", js)
        if p.returncode == 0 and method in got:
            with open(js) as f:
                cv = json.load(f)["curves"]
            for name, key in ((method, None), ("skip_order", "skip_order")):
                lb = got[method]["methods"][method]["barrier"] if key is None else got[method][key]["barrier"]
                check(abs(lb - cv[name]["barrier"]) < 1e-6, "%s --method %s: %s barrier %.8g, curve's %.8g"
                      % (tag, method, name, lb, cv[name]["barrier"]))
    if "activation" in got:
        order, ref = oracle_align_activation(A, B, X)
        want = oracle.curve(A, ref, E, T=T)["barrier"]
        lb = got["activation"]["methods"]["activation"]
        check(lb["order"] == order and abs(lb["barrier"] - want) < 1e-4 * max(1.0, abs(want)),
              "%s: activation order %s barrier %.8g, the oracle's %s %.8g" % (tag, lb["order"], lb["barrier"],
                                                                             order, want))
        row = [r for r in got["activation"]["orders"] if r["order"] == lb["order"]]
        check(row and abs(row[0]["barrier"] - lb["barrier"]) < 1e-9, "%s: its row in the table is its curve" % tag)


def main():
    tmp = tempfile.mkdtemp(prefix="ms_methods_")
    tests = [lambda ci=ci, cfg=cfg: test_config(tmp, ci, cfg) for ci, cfg in enumerate(CONFIGS)]
    tests += [lambda ci=ci, cfg=cfg: test_landscape_method(tmp, ci, cfg) for ci, cfg in enumerate(CONFIGS[:2])]
    tests.append(lambda: test_scramble(tmp))
    return testutil.run_tests("test_methods_data", tests, tmp)


if __name__ == "__main__":
    sys.exit(main())
