"""tests/oracle/test_eval_oracle.py - `moescope eval` against the numpy oracle.

For every variant (dense, top-1/2/3, shared experts, relu/gelu/gelu_new/silu_glu, with
and without head / LayerNorm / biases / residual, regression, another layer
prefix, F64 and F16 files) the C loss and accuracy (--json) must match the
float64 oracle to 1e-4 relative, the routing load must match, and the block
outputs, gates and logits (--dump-outputs) must match elementwise.
"""
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


def rel_close(a, b, tol=1e-4):
    return abs(a - b) <= tol * max(1.0, abs(b))


VARIANTS = [
    # name, make_layer kwargs, evalset kwargs, extra
    ("dense relu", dict(n=4, d=8, h=16), {}),
    ("dense gelu", dict(n=4, d=8, h=16, act="gelu"), {}),
    ("top-2 gelu_new (tanh form)", dict(n=4, d=8, h=16, router="topk", k=2, act="gelu_new"), {}),
    ("dense silu_glu", dict(n=4, d=8, h=16, act="silu_glu"), {}),
    ("top-1 relu", dict(n=4, d=8, h=16, router="topk", k=1), {}),
    ("top-2 relu", dict(n=4, d=8, h=16, router="topk", k=2), {}),
    ("top-2 gelu 8 experts", dict(n=8, d=12, h=20, router="topk", k=2, act="gelu"), {}),
    ("top-3 silu_glu", dict(n=6, d=8, h=12, router="topk", k=3, act="silu_glu"), {}),
    ("dense shared=2", dict(n=4, d=8, h=16, shared=2), {}),
    ("top-2 shared=1 silu_glu", dict(n=4, d=8, h=16, router="topk", k=2, shared=1,
                                     act="silu_glu"), {}),
    ("no biases", dict(n=4, d=8, h=16, biases=False), {}),
    ("no layernorm", dict(n=4, d=8, h=16, norm=False), {}),
    ("no residual", dict(n=4, d=8, h=16, residual=False), {}),
    ("10 classes", dict(n=4, d=8, h=16, classes=10), {}),
    ("regression", dict(n=4, d=8, h=16, classes=5), dict(regression=True)),
    ("headless dense", dict(n=4, d=8, h=16, head=False), {}),
    ("headless top-2 gelu", dict(n=4, d=8, h=16, head=False, router="topk", act="gelu"), {}),
    ("prefix block3", dict(n=4, d=8, h=16, prefix="block3.moe"), {}),
    ("F64 file", dict(n=4, d=8, h=16, router="topk", k=2), dict(_dtype=np.float64)),
    ("F16 file", dict(n=4, d=8, h=16, act="gelu"), dict(_dtype=np.float16)),
]


def run(args):
    return testutil.run(*args)


def one(tmp, idx, name, lk, ek):
    ek = dict(ek)
    dtype = ek.pop("_dtype", None)
    prefix = lk.get("prefix", "moe")
    t, meta = gen_ckpt.make_layer(seed=10 + idx, **lk)
    if dtype is not None:
        # the file holds dtype; the oracle must use the same rounded numbers
        t = {k: v.astype(dtype).astype(np.float64) for k, v in t.items()}
    ev = gen_ckpt.make_evalset(seed=10 + idx, layer_tensors=t, meta=meta, N=300, prefix=prefix,
                               **ek)
    ck = os.path.join(tmp, "c%d.safetensors" % idx)
    evp = os.path.join(tmp, "e%d.safetensors" % idx)
    js = os.path.join(tmp, "r%d.json" % idx)
    dump = os.path.join(tmp, "d%d.safetensors" % idx)
    oracle.write_safetensors(ck, t, meta, dtype=dtype)
    oracle.write_safetensors(evp, ev)
    args = ["eval", ck, "--eval", evp, "--json", js, "--dump-outputs", dump]
    if prefix != "moe":
        args += ["--layer", prefix]
    r = run(args)
    check(r.returncode == 0, "%s: eval exit %d: %s" % (name, r.returncode, r.stderr.strip()))
    if r.returncode != 0:
        return
    with open(js) as f:
        got = json.load(f)
    check(set(["loss", "accuracy", "load"]) <= set(got), "%s: JSON keys %s" % (name, list(got)))
    L = oracle.load_layer(ck, prefix)
    evo = oracle.load_evalset(evp)
    want = oracle.eval(L, evo)
    check(rel_close(got["loss"], want["loss"]),
          "%s: loss %.9g vs oracle %.9g" % (name, got["loss"], want["loss"]))
    if want["accuracy"] is None:
        check(got["accuracy"] is None, "%s: accuracy should be null, is %r" % (name, got["accuracy"]))
    else:
        # near-tied logits may flip an argmax between float32 and float64
        Z, _ = oracle.forward(L, evo["inputs"])
        lg = np.sort(oracle.head(L, Z), axis=1)
        ties = int((lg[:, -1] - lg[:, -2] < 1e-4).sum())
        N = evo["inputs"].shape[0]
        check(abs(got["accuracy"] - want["accuracy"]) <= max(1e-4, ties / N),
              "%s: accuracy %.6f vs oracle %.6f" % (name, got["accuracy"], want["accuracy"]))
        check(0.0 < want["accuracy"] <= 1.0, "%s: accuracy is informative" % name)
    load = got["load"]
    check(len(load) == L["n"] and all(set(o) == {"expert", "mean_gate", "fraction_routed"}
                                      for o in load), "%s: load entries" % name)
    mg = np.array([o["mean_gate"] for o in load])
    fr = np.array([o["fraction_routed"] for o in load])
    check(np.allclose(mg, want["load_mean"], atol=1e-5), "%s: mean gate %s vs %s"
          % (name, mg, want["load_mean"]))
    check(np.allclose(fr, want["load_frac"], atol=1.5 / 300), "%s: fraction routed %s vs %s"
          % (name, fr, want["load_frac"]))
    if L["router"] == "topk":
        check(abs(fr.sum() - L["k"]) < 1e-9, "%s: fractions sum to k" % name)
    # elementwise outputs
    out, _ = oracle.read_safetensors(dump)
    Zo, Go = oracle.forward(L, evo["inputs"])
    dz = np.abs(out["outputs"] - Zo).max()
    dg = np.abs(out["gates"] - Go).max()
    check(dz < 1e-4, "%s: outputs max |dZ| = %g" % (name, dz))
    check(dg < 1e-5, "%s: gates max |dG| = %g" % (name, dg))
    if L["C"]:
        dl = np.abs(out["logits"] - oracle.head(L, Zo)).max()
        check(dl < 1e-4, "%s: logits max |d| = %g" % (name, dl))
    else:
        check("logits" not in out, "%s: no logits without a head" % name)


def test_help_and_usage(tmp):
    r = run(["eval", "--help"])
    check(r.returncode == 0 and "usage" in r.stdout, "eval --help exits 0 with usage on stdout")
    r = run(["eval", "x.safetensors", "--bogus"])
    check(r.returncode == 2, "eval unknown option exits 2 (got %d)" % r.returncode)
    r = run(["eval", "x.safetensors"])
    check(r.returncode == 2 and "--eval" in r.stderr, "eval without --eval exits 2")
    r = run(["eval", "x.safetensors", "--eval"])
    check(r.returncode == 2, "eval --eval without argument exits 2")
    r = run(["eval", os.path.join(tmp, "missing.safetensors"), "--eval", "y"])
    check(r.returncode == 1 and "missing.safetensors" in r.stderr, "missing file exits 1")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for idx, (name, lk, ek) in enumerate(VARIANTS):
            one(tmp, idx, name, lk, ek)
        test_help_and_usage(tmp)
    return testutil.summary("test_eval_oracle")


if __name__ == "__main__":
    sys.exit(main())
