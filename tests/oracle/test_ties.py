"""tests/oracle/test_ties.py - exact ties in top-k routing, on every path, against the
numpy oracle (tests/oracle/oracle.py).

A gate without bias and evaluation inputs of which every other one is exactly
zero: on those inputs every gate score is 0, all n experts tie, and the rule
"ties go to the smaller index" picks slots 0..k-1. Reordering B's experts then
changes which of B's experts those inputs reach, so L(1) depends on the order
and the landscape cannot take B's loss for it. For top-k with k = 1, 2 and
n = 4, 8:

  * eval: loss, accuracy, routing load and the dumped gate weights;
  * curve --order: the loss curve of several orders (end points included);
  * landscape: every order's barrier and AUC (n = 8: a sample of orders), the
    named curves, the methods' ranks;
  * diagnose: routing shares and the landscape rank it reports.

The TUI is checked on the same fixture by tests/explorer/test_tui_ties.sh, which calls
`test_ties.py --fixture DIR N K` to write it."""
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

TOL = 2e-5  # float32 compute against float64, on losses of order 1


def fixture(work, n, k, seed=1, N=96, d=8, h=12):
    """A, B (same head, no gate bias) and E (every other input zero)."""
    paths = []
    tensors = []
    for s in (seed, seed + 1):
        t, meta = gen_ckpt.make_layer(seed=s, n=n, d=d, h=h, router="topk", k=k, classes=3)
        t.pop("moe.gate.bias", None)
        tensors.append((t, meta))
    ta, _ = tensors[0]
    tb, mb = tensors[1]
    for key in list(tb):
        if key.startswith("head."):
            tb[key] = ta[key]  # one frozen head, as in the paper's setting
    for i, (t, meta) in enumerate(tensors):
        p = os.path.join(work, "%s_n%d_k%d.safetensors" % ("AB"[i], n, k))
        oracle.write_safetensors(p, t, meta)
        paths.append(p)
    ev = gen_ckpt.make_evalset(seed + 7, layer_tensors=ta, meta=tensors[0][1], N=N)
    ev["inputs"][::2] = 0.0
    pe = os.path.join(work, "E_n%d_k%d.safetensors" % (n, k))
    oracle.write_safetensors(pe, ev)
    return paths[0], paths[1], pe


def run_ok(tag, *args):
    r = testutil.run(*args)
    check(r.returncode == 0, "%s: %s exits 0 (%s)" % (tag, args[0], r.stderr.strip()[-300:]))
    return r.returncode == 0


def close(tag, got, want, tol=TOL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    check(got.shape == want.shape and err <= tol, "%s: within %g (worst %.3g)" % (tag, tol, err))


def check_eval(work, tag, pb, pe, B, ev):
    out, dump = os.path.join(work, "eval.json"), os.path.join(work, "dump.safetensors")
    if not run_ok(tag, "eval", pb, "--eval", pe, "--json", out, "--dump-outputs", dump):
        return
    js = json.load(open(out))
    O = oracle.eval(B, ev)
    close(tag + " eval loss", js["loss"], O["loss"])
    close(tag + " eval accuracy", js["accuracy"], O["accuracy"], 0)
    close(tag + " eval routed fraction", [e["fraction_routed"] for e in js["load"]], O["load_frac"], 0)
    t, _ = oracle.read_safetensors(dump)
    _, G = oracle.forward(B, ev["inputs"])
    zero = ~ev["inputs"].any(axis=1)
    close(tag + " eval gates on the tied inputs", t["gates"][zero], G[zero], 1e-6)
    check(np.all((t["gates"][zero] > 0).sum(axis=1) == B["k"]) and
          np.all(t["gates"][zero][:, :B["k"]] > 0),
          tag + " eval: tied inputs go to experts 0..k-1")


def check_curves(work, tag, pa, pb, pe, A, B, ev, orders, T):
    out = os.path.join(work, "curve.csv")
    args = ["curve", pa, pb, "--eval", pe, "--points", str(T), "--csv", out]
    for o in orders:
        args += ["--order", ",".join(str(v) for v in o)]
    if not run_ok(tag, *args):
        return
    ncomment = sum(1 for l in open(out) if l.startswith("#"))  # provenance lines
    cols = np.genfromtxt(out, delimiter=",", names=True, skip_header=ncomment)
    for j, o in enumerate(orders):
        want = oracle.curve(A, oracle.align(A, B, order=list(o))["layer"], ev, T)
        close("%s curve %s loss" % (tag, o), cols["order%d_loss" % (j + 1)], want["loss"])


def check_landscape(work, tag, pa, pb, pe, A, B, ev, T, sample):
    out = os.path.join(work, "landscape.json")
    if not run_ok(tag, "landscape", pa, pb, "--eval", pe, "-q", "--points", str(T),
                  "--json", out):
        return None
    J = json.load(open(out))
    rows = {tuple(r["order"]): r for r in J["orders"]}
    orders = sorted(rows) if sample is None else sample
    O = oracle.landscape(A, B, ev, T=T, orders=orders)
    got = [(rows[o]["barrier"], rows[o]["loss_auc"]) for o, _, _, _ in O["rows"]]
    want = [(b, auc) for _, b, _, auc in O["rows"]]
    close("%s landscape: %d orders' barrier and AUC" % (tag, len(want)), got, want)
    for name in ("naive", "skip_order"):
        close("%s landscape %s curve" % (tag, name), J[name]["loss"], O[name]["loss"])
    for m in ("gate", "expert"):
        close("%s landscape %s curve" % (tag, m), J["methods"][m]["loss"], O[m]["loss"])
        if sample is None:
            check(J["methods"][m]["rank"] == O[m]["rank"],
                  "%s landscape %s rank %s, oracle %s" % (tag, m, J["methods"][m]["rank"],
                                                          O[m]["rank"]))
    return J, O


def check_diagnose(work, tag, pa, pb, pe, A, B, ev, LO):
    out = os.path.join(work, "diag.json")
    if not run_ok(tag, "diagnose", pa, pb, "--eval", pe, "--json", out):
        return
    js = json.load(open(out))
    for who, L in (("A", A), ("B", B)):
        lm, lf = oracle.diag_routing(L, ev["inputs"])
        close("%s diagnose %s top-k shares" % (tag, who), js["checkpoints"][who]["routing"]["load_frac"],
              lf, 0)
        close("%s diagnose %s mean gate" % (tag, who), js["checkpoints"][who]["routing"]["load_mean"],
              lm, 1e-6)
    if LO is not None:
        J, O = LO
        land = js["pair"]["landscape"]
        m = js["pair"].get("method", "expert")
        m = m if m in ("gate", "expert") else "expert"
        check(land is not None and land["rank"] == O[m]["rank"],
              "%s diagnose: landscape rank %s, oracle %s" % (tag, land and land["rank"], O[m]["rank"]))
        close("%s diagnose: chosen barrier" % tag, land["barrier"], O[m]["barrier"])


def check_headless(work):
    """Without a head each order's chord ends at its own D_B'(x): with ties in B's
    routing (zero inputs tie every expert) a reordered B routes them to other
    experts, so the landscape ends every order's curve at its own output, and
    every row and named curve equals the oracle's (which interpolates to the
    reordered B and takes that B's output as the chord's end)."""
    paths = []
    for s in (3, 4):
        t, meta = gen_ckpt.make_layer(seed=s, n=4, d=8, h=12, router="topk", k=2, head=False)
        t.pop("moe.gate.bias", None)
        paths.append(os.path.join(work, "headless%d.safetensors" % s))
        oracle.write_safetensors(paths[-1], t, meta)
    ev = {"inputs": np.zeros((16, 8)), "targets": np.zeros((16, 8))}
    ev["inputs"][1::2] = np.random.default_rng(0).standard_normal((8, 8))
    pe = os.path.join(work, "headless_eval.safetensors")
    oracle.write_safetensors(pe, ev)
    A, B = oracle.load_layer(paths[0]), oracle.load_layer(paths[1])
    check_landscape(work, "headless with ties", paths[0], paths[1], pe, A, B,
                    oracle.load_evalset(pe), 5, None)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--fixture":
        print(" ".join(fixture(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return 0
    rng = np.random.default_rng(5)
    with tempfile.TemporaryDirectory() as work:
        for n, k in ((4, 1), (4, 2), (8, 1), (8, 2)):
            tag = "n=%d k=%d" % (n, k)
            pa, pb, pe = fixture(work, n, k, seed=10 * n + k)
            A, B = oracle.load_layer(pa), oracle.load_layer(pb)
            ev = oracle.load_evalset(pe)
            check_eval(work, tag, pb, pe, B, ev)
            orders = [tuple(rng.permutation(n)) for _ in range(3)]
            orders.append(tuple(range(n - 1, -1, -1)))
            check_curves(work, tag, pa, pb, pe, A, B, ev, orders, 5)
            sample = None if n == 4 else [tuple(int(v) for v in rng.permutation(n))
                                          for _ in range(12)]
            T = 9 if n == 4 else 5
            LO = check_landscape(work, tag, pa, pb, pe, A, B, ev, T, sample)
            if n == 4:  # diagnose ranks the chosen order for n! <= 5040 (25 points)
                LO = check_landscape(work, tag + " T=25", pa, pb, pe, A, B, ev, 25, None)
            check_diagnose(work, tag, pa, pb, pe, A, B, ev, LO if n == 4 else None)
        check_headless(work)
    return testutil.summary("test_ties")


if __name__ == "__main__":
    sys.exit(main())
