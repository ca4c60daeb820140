"""tests/oracle/test_symmetry.py - `moescope scramble` keeps the function and moves
the parameters, and its metadata says exactly what it did.

For dense, top-k, silu_glu, shared experts and headless layers, with and
without --translate: the scrambled checkpoint's outputs and logits (eval
--dump-outputs) equal the original's (max abs diff < 1e-4), loss equal; the
parameters really moved; slot i of the output holds input expert pi[i] where
pi = moescope.scramble.order (checked on the multiset of hidden units, which
hidden permutations do not change), the gate rows are the original rows
pi[i] plus one common shift (zero without --translate); same seed, same bytes;
OUT == A is refused.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check  # noqa: E402


def run(args):
    return testutil.run(*args)


VARIANTS = [
    ("dense relu", dict(n=4, d=8, h=16)),
    ("top-2 gelu", dict(n=6, d=8, h=12, router="topk", k=2, act="gelu")),
    ("top-1 relu", dict(n=4, d=8, h=16, router="topk", k=1)),
    ("dense silu_glu", dict(n=4, d=8, h=16, act="silu_glu")),
    ("top-2 shared=2 silu_glu", dict(n=5, d=8, h=10, router="topk", k=2, shared=2,
                                     act="silu_glu")),
    ("headless dense shared=1", dict(n=3, d=8, h=16, head=False, shared=1)),
]


def sorted_rows(e):
    """The hidden units of an expert as a sorted set of rows (fc1 row, b1, fc2 column
    [, fc3 row, b3]) - invariant to hidden permutations."""
    parts = [e["w1"], e["b1"][:, None], e["w2"].T]
    if "w3" in e:
        parts += [e["w3"], e["b3"][:, None]]
    U = np.concatenate(parts, axis=1)
    return U[np.lexsort(U.T[::-1])]


def same_expert(a, b):
    return (np.array_equal(sorted_rows(a), sorted_rows(b)) and np.array_equal(a["b2"], b["b2"]))


def one(tmp, idx, name, lk):
    t, meta = gen_ckpt.make_layer(seed=40 + idx, **lk)
    ev = gen_ckpt.make_evalset(seed=40 + idx, layer_tensors=t, meta=meta, N=400)
    a = os.path.join(tmp, "a%d.safetensors" % idx)
    evp = os.path.join(tmp, "e%d.safetensors" % idx)
    oracle.write_safetensors(a, t, meta)
    oracle.write_safetensors(evp, ev)
    da = os.path.join(tmp, "da%d.safetensors" % idx)
    ja = os.path.join(tmp, "ja%d.json" % idx)
    r = run(["eval", a, "--eval", evp, "--dump-outputs", da, "--json", ja])
    check(r.returncode == 0, "%s: eval A: %s" % (name, r.stderr))
    if r.returncode:
        return
    A = oracle.load_layer(a)
    outA, _ = oracle.read_safetensors(da)
    for translate in (False, True):
        tag = "%s%s" % (name, " +translate" if translate else "")
        b = os.path.join(tmp, "b%d%d.safetensors" % (idx, translate))
        args = ["scramble", a, "-o", b, "--seed", str(100 + idx)]
        if translate:
            args.append("--translate")
        r = run(args)
        check(r.returncode == 0, "%s: scramble exit %d: %s" % (tag, r.returncode, r.stderr))
        if r.returncode:
            continue
        check("expert order" in r.stdout and "wrote" in r.stdout, "%s: scramble says what it did" % tag)
        db = os.path.join(tmp, "db%d%d.safetensors" % (idx, translate))
        jb = os.path.join(tmp, "jb%d%d.json" % (idx, translate))
        r = run(["eval", b, "--eval", evp, "--dump-outputs", db, "--json", jb])
        check(r.returncode == 0, "%s: eval B: %s" % (tag, r.stderr))
        if r.returncode:
            continue
        outB, _ = oracle.read_safetensors(db)
        dz = np.abs(outA["outputs"] - outB["outputs"]).max()
        check(dz < 1e-4, "%s: same outputs, max |dZ| = %g" % (tag, dz))
        if "logits" in outA:
            dl = np.abs(outA["logits"] - outB["logits"]).max()
            check(dl < 1e-4, "%s: same logits, max |d| = %g" % (tag, dl))
        with open(ja) as f:
            la = json.load(f)["loss"]
        with open(jb) as f:
            lb = json.load(f)["loss"]
        check(abs(la - lb) <= 1e-5 * max(1, abs(la)), "%s: same loss %g vs %g" % (tag, la, lb))

        B = oracle.load_layer(b)
        pi = [int(x) for x in B["meta"]["moescope.scramble.order"].split()]
        n = A["n"]
        check(sorted(pi) == list(range(n)), "%s: order is a permutation: %s" % (tag, pi))
        check(B["meta"].get("moescope.scramble.seed") == str(100 + idx), "%s: seed recorded" % tag)
        check(B["meta"].get("moescope.scramble.translate") == ("1" if translate else "0"),
              "%s: translate recorded" % tag)
        check(B["meta"].get("seed") == A["meta"].get("seed"), "%s: other metadata kept" % tag)
        # slot i of B holds A's expert pi[i] (up to its hidden permutation)
        check(all(same_expert(B["experts"][i], A["experts"][pi[i]]) for i in range(n)),
              "%s: slot i holds expert pi[i]" % tag)
        # and the hidden units really were permuted somewhere
        moved = any(not np.array_equal(B["experts"][i]["w1"], A["experts"][pi[i]]["w1"])
                    for i in range(n))
        check(moved, "%s: hidden units permuted" % tag)
        # gate: rows pi[i] plus one common shift
        dW = B["gate_w"] - A["gate_w"][pi]
        db_ = B["gate_b"] - A["gate_b"][pi]
        common = np.abs(dW - dW[0]).max() < 1e-5 and np.abs(db_ - db_[0]).max() < 1e-5
        check(common, "%s: gate rows are A's rows pi[i] plus a common shift" % tag)
        shift = np.abs(dW[0]).max() + abs(db_[0])
        check((shift > 1e-3) if translate else (shift == 0.0), "%s: shift %g" % (tag, shift))
        if A["s"]:
            sp = [int(x) for x in B["meta"]["moescope.scramble.shared_order"].split()]
            check(all(same_expert(B["shared"][j], A["shared"][sp[j]]) for j in range(A["s"])),
                  "%s: shared slot j holds shared expert sp[j]" % tag)
        # gate weights of the output follow pi
        check(np.abs(outB["gates"] - outA["gates"][:, pi]).max() < 1e-5, "%s: gates permuted by pi" % tag)
    # determinism: the same seed gives the same bytes
    b1 = os.path.join(tmp, "s1.safetensors")
    b2 = os.path.join(tmp, "s2.safetensors")
    run(["scramble", a, "-o", b1, "--seed", "5", "--translate"])
    run(["scramble", a, "-o", b2, "--seed", "5", "--translate"])
    with open(b1, "rb") as f1, open(b2, "rb") as f2:
        check(f1.read() == f2.read(), "%s: same seed, same file" % name)


def test_cli(tmp):
    t, meta = gen_ckpt.make_layer(seed=3)
    a = os.path.join(tmp, "cli.safetensors")
    oracle.write_safetensors(a, t, meta)
    before = open(a, "rb").read()
    r = run(["scramble", a, "-o", a])
    check(r.returncode == 1 and open(a, "rb").read() == before, "scramble refuses OUT == A")
    link = os.path.join(tmp, "link.safetensors")
    shutil.copy(a, os.path.join(tmp, "copy.safetensors"))
    os.link(a, link)
    r = run(["scramble", a, "-o", link])
    check(r.returncode == 1, "scramble refuses a hard link to A")
    r = run(["scramble", a])
    check(r.returncode == 2, "scramble without -o exits 2")
    r = run(["scramble", a, "-o", os.path.join(tmp, "x.safetensors"), "--seed", "abc"])
    check(r.returncode == 2, "scramble --seed abc exits 2")
    r = run(["scramble", "--help"])
    check(r.returncode == 0 and "usage" in r.stdout, "scramble --help")
    r = run(["scramble", a, "-o", os.path.join(tmp, "y.safetensors"), "--layer", "nope"])
    check(r.returncode == 1 and "nope" in r.stderr and "moe" in r.stderr,
          "scramble --layer nope names the layers there are")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for idx, (name, lk) in enumerate(VARIANTS):
            one(tmp, idx, name, lk)
        test_cli(tmp)
    return testutil.summary("test_symmetry")


if __name__ == "__main__":
    sys.exit(main())
