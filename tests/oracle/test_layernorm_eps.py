"""tests/oracle/test_layernorm_eps.py - the LayerNorm eps (1e-5) where it matters.

Block outputs with a per-sample variance near eps (no residual, experts whose
output is scaled down to ~3e-3): there LayerNorm divides by sqrt(var + eps),
so eps moves every logit by tens of percent. eval (loss and dumped logits),
curve and landscape (the fused kernel has its own LayerNorm) must match the
numpy oracle with eps = 1e-5, and the oracle with eps = 0.5e-5 or 2e-5 must be
far outside the tolerance (so the check can fail)."""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TOL = 1e-4
SCALE = 3e-3  # expert output scale: per-sample variance of z ~ 1e-5


def tiny_layer(seed):
    t, meta = gen_ckpt.make_layer(seed=seed, n=3, d=8, h=8, residual=False, classes=3)
    for k in t:
        if ".experts." in k and ".fc2." in k:
            t[k] = (t[k] * SCALE).astype(np.float32).astype(np.float64)
    return t, meta


def with_eps(eps, fn, *args, **kw):
    """fn(*args) computed by the oracle with LayerNorm eps = eps"""
    old = oracle.LN_EPS
    oracle.LN_EPS = eps
    try:
        return fn(*args, **kw)
    finally:
        oracle.LN_EPS = old


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ta, meta = tiny_layer(31)
        tb, _ = tiny_layer(32)
        tb = {k: (tb[k] if ".experts." in k or k.startswith("moe.") else ta[k]) for k in ta}  # one head
        ev = gen_ckpt.make_evalset(seed=33, layer_tensors=ta, meta=meta, N=120)
        a, b, e = (os.path.join(tmp, x) for x in ("a.safetensors", "b.safetensors", "e.safetensors"))
        oracle.write_safetensors(a, ta, meta)
        oracle.write_safetensors(b, tb, meta)
        oracle.write_safetensors(e, ev)
        A, B = oracle.load_layer(a), oracle.load_layer(b)
        evo = oracle.load_evalset(e)

        Z, _ = oracle.forward(A, evo["inputs"])
        var = Z.var(axis=1)
        check(np.median(var) < 1e-4 and np.median(var) > 1e-7,
              "the fixture's block outputs have variance near eps (median %.3g)" % np.median(var))

        # eval: loss and logits
        want = oracle.eval(A, evo)
        js, dump = os.path.join(tmp, "r.json"), os.path.join(tmp, "d.safetensors")
        r = run("eval", a, "--eval", e, "--json", js, "--dump-outputs", dump)
        check(r.returncode == 0, "eval exits 0: %s" % r.stderr)
        for eps in (0.5e-5, 2e-5):
            other = with_eps(eps, oracle.eval, A, evo)["loss"]
            check(abs(other - want["loss"]) > 20 * TOL * max(1.0, abs(want["loss"])),
                  "eps %g gives a loss (%.6g) far from eps 1e-5's (%.6g)" % (eps, other, want["loss"]))
        if r.returncode == 0:
            got = json.load(open(js))
            check(abs(got["loss"] - want["loss"]) <= TOL * max(1.0, abs(want["loss"])),
                  "eval loss %.9g vs oracle %.9g" % (got["loss"], want["loss"]))
            out, _ = oracle.read_safetensors(dump)
            lg = oracle.head(A, Z)
            dl = np.abs(out["logits"] - lg).max()
            dl_other = min(np.abs(with_eps(eps, oracle.head, A, Z) - lg).max() for eps in (0.5e-5, 2e-5))
            check(dl < TOL, "eval logits max |d| = %g" % dl)
            check(dl_other > 100 * TOL, "eps 0.5e-5 / 2e-5 move the logits by %g" % dl_other)

        # curve (evaluator path) and landscape (fused kernel): every order of n = 3
        T = 5
        O = oracle.landscape(A, B, evo, T=T)
        O_other = [with_eps(eps, oracle.landscape, A, B, evo, T=T) for eps in (0.5e-5, 2e-5)]
        spread = min(max(abs(x[1] - y[1]) for x, y in zip(O["rows"], Oo["rows"])) for Oo in O_other)
        check(spread > 20 * TOL, "eps 0.5e-5 / 2e-5 move some barrier by %g" % spread)
        lj = os.path.join(tmp, "l.json")
        r = run("landscape", a, b, "--eval", e, "--points", T, "--json", lj, "-q")
        check(r.returncode == 0, "landscape exits 0: %s" % r.stderr)
        if r.returncode == 0:
            J = json.load(open(lj))
            rows = {tuple(x["order"]): x for x in J["orders"]}
            worst = max(abs(rows[o]["barrier"] - bar) for o, bar, _, _ in O["rows"])
            check(len(rows) == 6 and worst <= TOL, "landscape barriers vs oracle: worst %.3g" % worst)
            err = max(abs(x - y) for x, y in zip(J["naive"]["loss"], O["naive"]["loss"]))
            check(err <= TOL, "landscape naive loss curve vs oracle: %.3g" % err)
        csv = os.path.join(tmp, "c.csv")
        r = run("curve", a, b, "--eval", e, "--points", T, "--order", "2,0,1", "--csv", csv)
        check(r.returncode == 0, "curve exits 0: %s" % r.stderr)
        if r.returncode == 0:
            ncomment = sum(1 for l in open(csv) if l.startswith("#"))  # provenance lines
            data = np.genfromtxt(csv, delimiter=",", names=True, skip_header=ncomment)
            want_c = oracle.curve(A, oracle.align(A, B, order=[2, 0, 1])["layer"], evo, T)
            err = np.abs(data["order1_loss"] - want_c["loss"]).max()
            check(err <= TOL, "curve --order 2,0,1 loss vs oracle: %.3g" % err)
    return testutil.summary("test_layernorm_eps")


if __name__ == "__main__":
    sys.exit(main())
