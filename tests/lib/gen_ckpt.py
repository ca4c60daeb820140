"""tests/lib/gen_ckpt.py - synthetic moescope checkpoints and evaluation sets.

Importable:
    t, meta = make_layer(seed, n=4, d=8, h=16, router="dense", k=2, act="relu",
                         shared=0, head=True, classes=3, biases=True, norm=True,
                         residual=True, prefix="moe")
    ev = make_evalset(seed, layer_tensors=t, meta=meta, N=200, regression=False)
    write_layer(path, ...) / write_evalset(path, ...)

CLI:
    gen_ckpt.py ckpt OUT [--seed S] [--n 4] [--d 8] [--h 16] [--router dense|topk]
                [--k 2] [--act relu|gelu|silu_glu] [--shared 0] [--no-head]
                [--classes 3] [--no-biases] [--no-norm] [--no-residual] [--prefix moe]
    gen_ckpt.py evalset OUT --ckpt CKPT [--seed S] [--N 200] [--regression] [--prefix moe]
    gen_ckpt.py bad KIND OUT [EVAL_OUT]   a deliberately broken file (see BAD_KINDS)
"""
import argparse
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402


def _expert(rng, d, h, act, biases):
    e = {
        "fc1.weight": rng.standard_normal((h, d)) / np.sqrt(d),
        "fc1.bias": 0.1 * rng.standard_normal(h),
        "fc2.weight": rng.standard_normal((d, h)) / np.sqrt(h),
        "fc2.bias": 0.1 * rng.standard_normal(d),
    }
    if act == "silu_glu":
        e["fc3.weight"] = rng.standard_normal((h, d)) / np.sqrt(d)
        e["fc3.bias"] = 0.1 * rng.standard_normal(h)
    if not biases:
        e = {k: v for k, v in e.items() if not k.endswith(".bias")}
    return e


def make_layer(seed, n=4, d=8, h=16, router="dense", k=2, act="relu", shared=0, head=True,
               classes=3, biases=True, norm=True, residual=True, prefix="moe"):
    """(tensors, metadata) of a random layer; values already float32-representable."""
    rng = np.random.default_rng(seed)
    t = {}
    t[prefix + ".gate.weight"] = 2.0 * rng.standard_normal((n, d)) / np.sqrt(d)
    if biases:
        t[prefix + ".gate.bias"] = 0.3 * rng.standard_normal(n)
    for i in range(n):
        for key, v in _expert(rng, d, h, act, biases).items():
            t["%s.experts.%d.%s" % (prefix, i, key)] = v
    for j in range(shared):
        for key, v in _expert(rng, d, h, act, biases).items():
            t["%s.shared.%d.%s" % (prefix, j, key)] = v
    if head:
        if norm:
            t["head.norm.weight"] = 1.0 + 0.1 * rng.standard_normal(d)
            t["head.norm.bias"] = 0.1 * rng.standard_normal(d)
        t["head.out.weight"] = rng.standard_normal((classes, d)) / np.sqrt(d)
        if biases:
            t["head.out.bias"] = 0.1 * rng.standard_normal(classes)
    # round through float32 so the file and the oracle hold the same numbers
    t = {key: v.astype(np.float32).astype(np.float64) for key, v in t.items()}
    meta = {"moescope.router": router, "moescope.top_k": str(k), "moescope.activation": act,
            "moescope.residual": "1" if residual else "0", "seed": str(seed),
            "dataset": "synthetic"}
    return t, meta


def make_evalset(seed, layer_tensors, meta, N=200, regression=False, prefix="moe"):
    """Inputs (N, d) and labels drawn from the layer's own logits plus noise (so
    accuracy is well above chance), or regression targets near the outputs."""
    rng = np.random.default_rng(seed + 1000003)
    L = oracle.layer_from_tensors(layer_tensors, meta, prefix)
    X = rng.standard_normal((N, L["d"])).astype(np.float32).astype(np.float64)
    ev = {"inputs": X}
    if L["C"] == 0:
        ev["labels"] = rng.integers(0, 3, size=N).astype(np.int64)
        return ev
    Z, _ = oracle.forward(L, X)
    logits = oracle.head(L, Z)
    if regression:
        ev["targets"] = (logits + 0.3 * rng.standard_normal(logits.shape)).astype(np.float32)
    else:
        ev["labels"] = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1).astype(np.int64)
    return ev


def write_layer(path, **kw):
    t, meta = make_layer(**kw)
    oracle.write_safetensors(path, t, meta)
    return t, meta


def write_evalset(path, t, meta, **kw):
    ev = make_evalset(layer_tensors=t, meta=meta, **kw)
    oracle.write_safetensors(path, ev)
    return ev


# ---------------------------------------------------------------- broken files

BAD_KINDS = {
    "missing_tensor": "experts.1.fc2.weight removed",
    "inner_dim": "experts.2.fc1.weight has shape [h, d+1]",
    "nan": "a NaN in experts.0.fc2.weight",
    "expert_count": "gate has 4 rows, only experts 0..2 exist",
    "extra_expert": "gate has 3 rows, experts 0..3 exist",
    "unknown_router": "metadata moescope.router = 'sparse'",
    "bad_topk": "router topk with top_k = 9 > n",
    "eval_width": "evaluation inputs of width d+8",
    "labels_range": "a label equal to C",
}


def write_one_expert(src, dst):
    """src (a native checkpoint) with every expert expert 0 and every gate row row 0:
    all expert orders then compute one function, so no order can change a barrier."""
    t, meta = oracle.read_safetensors(src)
    for k in list(t):
        if k.startswith("moe.experts.") and not k.startswith("moe.experts.0."):
            t[k] = t["moe.experts.0." + k.split(".", 3)[3]].copy()
    t["moe.gate.weight"][:] = t["moe.gate.weight"][0]
    if "moe.gate.bias" in t:
        t["moe.gate.bias"][:] = t["moe.gate.bias"][0]
    oracle.write_safetensors(dst, t, meta)


def write_bad(kind, out, eval_out=None, seed=7):
    t, meta = make_layer(seed, n=4, d=8, h=16)
    ev = make_evalset(seed, t, meta, N=50)
    if kind == "missing_tensor":
        del t["moe.experts.1.fc2.weight"]
    elif kind == "inner_dim":
        t["moe.experts.2.fc1.weight"] = np.zeros((16, 9))
    elif kind == "nan":
        t["moe.experts.0.fc2.weight"][3, 5] = np.nan
    elif kind == "expert_count":
        for key in [k for k in t if k.startswith("moe.experts.3.")]:
            del t[key]
    elif kind == "extra_expert":
        t["moe.gate.weight"] = t["moe.gate.weight"][:3]
        t["moe.gate.bias"] = t["moe.gate.bias"][:3]
    elif kind == "unknown_router":
        meta["moescope.router"] = "sparse"
    elif kind == "bad_topk":
        meta["moescope.router"] = "topk"
        meta["moescope.top_k"] = "9"
    elif kind == "eval_width":
        ev["inputs"] = np.zeros((50, 16))
    elif kind == "labels_range":
        ev["labels"][7] = 3
    else:
        raise SystemExit("unknown kind %r; kinds: %s" % (kind, ", ".join(BAD_KINDS)))
    oracle.write_safetensors(out, t, meta)
    if eval_out:
        oracle.write_safetensors(eval_out, ev)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("ckpt")
    c.add_argument("out")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--n", type=int, default=4)
    c.add_argument("--d", type=int, default=8)
    c.add_argument("--h", type=int, default=16)
    c.add_argument("--router", default="dense")
    c.add_argument("--k", type=int, default=2)
    c.add_argument("--act", default="relu")
    c.add_argument("--shared", type=int, default=0)
    c.add_argument("--no-head", action="store_true")
    c.add_argument("--classes", type=int, default=3)
    c.add_argument("--no-biases", action="store_true")
    c.add_argument("--no-norm", action="store_true")
    c.add_argument("--no-residual", action="store_true")
    c.add_argument("--prefix", default="moe")
    e = sub.add_parser("evalset")
    e.add_argument("out")
    e.add_argument("--ckpt", required=True)
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--N", type=int, default=200)
    e.add_argument("--regression", action="store_true")
    e.add_argument("--prefix", default="moe")
    b = sub.add_parser("bad")
    b.add_argument("kind", choices=sorted(BAD_KINDS))
    b.add_argument("out")
    b.add_argument("eval_out", nargs="?")
    a = ap.parse_args(argv)
    if a.cmd == "ckpt":
        write_layer(a.out, seed=a.seed, n=a.n, d=a.d, h=a.h, router=a.router, k=a.k, act=a.act,
                    shared=a.shared, head=not a.no_head, classes=a.classes,
                    biases=not a.no_biases, norm=not a.no_norm, residual=not a.no_residual,
                    prefix=a.prefix)
    elif a.cmd == "evalset":
        t, meta = oracle.read_safetensors(a.ckpt)
        write_evalset(a.out, t, meta, seed=a.seed, N=a.N, regression=a.regression,
                      prefix=a.prefix)
    else:
        write_bad(a.kind, a.out, a.eval_out)


if __name__ == "__main__":
    main()
