"""tests/commands/test_translate_exact.py - claim C3 holds in float32: a gate
translation changes no barrier.

Softmax over the experts ignores a common shift of every gate row and of the bias,
so B scrambled with a translation 20 times the gate rows' size (`scramble
--translate-scale 20`) computes B's function. moescope routes from the gate centred
over the experts (the translation removed, in double, before any dot product), so
only the rounding of the stored weights remains: every order's barrier against the
same A agrees with the untranslated scramble's (same seed) within 1e-6.

  - the network sample gpt/topk4 (seed2 scrambled in every MoE block, seed1 as A):
    routed from the raw gate, two of its 24 orders moved by 4.4e-4 (a near-tied
    top-2 choice decided by float32 digits the translation swamped);
  - the layer samples topk4 and dense4 (seed2 scrambled, seed1 as A).

Only up to the rounding of the stored weights: scramble adds the translation in
float32, which moves a centred gate entry by up to ~2e-7 here, and a token whose top-2
margin is smaller than that changes its choice in any arithmetic (with --seed 7, one
token at the midpoint of two orders does so in float64 too: margin 3e-7, so those
barriers move by 4.4e-4 however the routing is computed). The seed here (3) has no
such token; routed from the raw gate it moved two barriers by 4.4e-4 all the same.

`landscape --points 3` (the midpoint: where the orders that moved differ) on the
release build (MOESCOPE_REL): the network's 24 orders take ~1 s each way.
"""
import json
import os
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

SAMPLES = os.path.join(testutil.ROOT, "sample-checkpoints")
TMP = tempfile.mkdtemp(prefix="moescope_c3_")


def landscape(a, b, ev, out):
    r = run("landscape", a, b, "--eval", ev, "--points", 3, "--no-proxy", "-q", "--json", out,
            binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "landscape %s: %s" % (b, r.stderr.strip()))
    if r.returncode:
        return None
    with open(out) as f:
        return {tuple(o["order"]): o["barrier"] for o in json.load(f)["orders"]}


def gate_shift(plain, moved, key):
    """how far the translated scramble moved the gate, against its rows' RMS"""
    a, b = oracle.read_safetensors(plain)[0][key], oracle.read_safetensors(moved)[0][key]
    return float(abs(b - a).mean() / (a ** 2).mean() ** 0.5)


def check_pair(name, a, b, ev, scramble_args, gate_file, gate_key):
    """b scrambled twice with one seed, with and without --translate-scale 20; every
    order's barrier against a: the same within 1e-6"""
    outs = []
    for tag, extra in (("plain", []), ("translated", ["--translate-scale", 20])):
        out = os.path.join(TMP, "%s-%s%s" % (name.replace("/", "-"), tag, "" if os.path.isdir(b) else ".safetensors"))
        r = run("scramble", b, "-o", out, "--seed", 3, *scramble_args, *extra, binary=testutil.MOESCOPE_REL)
        check(r.returncode == 0, "%s: scramble %s: %s" % (name, tag, r.stderr.strip()))
        if r.returncode:
            return
        outs.append(out)
    shift = gate_shift(gate_file(outs[0]), gate_file(outs[1]), gate_key)
    check(shift > 5, "%s: the translation swamps the gate rows (%.3g times their RMS)" % (name, shift))
    got = [landscape(a, o, ev, o + ".json") for o in outs]
    if None in got:
        return
    plain, moved = got
    worst = max(abs(plain[k] - moved[k]) for k in plain)
    check(set(plain) == set(moved) and len(plain) == 24, "%s: the 24 orders both ways" % name)
    check(worst <= 1e-6, "%s: every order's barrier unchanged by a 20x gate translation "
          "(max diff %.3g over %d orders)" % (name, worst, len(plain)))


def main():
    try:
        gpt = os.path.join(SAMPLES, "gpt", "topk4")
        check_pair("gpt/topk4", os.path.join(gpt, "seed1"), os.path.join(gpt, "seed2"),
                   os.path.join(gpt, "eval.safetensors"), ["--layer", "all"],
                   lambda d: os.path.join(d, "model-00002-of-00002.safetensors"), "transformer.h.0.mlp.gate.weight")
        for pool in ("topk4", "dense4"):
            p = os.path.join(SAMPLES, pool)
            check_pair(pool, os.path.join(p, "seed1.safetensors"), os.path.join(p, "seed2.safetensors"),
                       os.path.join(p, "eval.safetensors"), [], lambda f: f, "moe.gate.weight")
    finally:
        import shutil
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_translate_exact")


if __name__ == "__main__":
    sys.exit(main())
