"""tests/oracle/test_family_eval.py - moescope's forward of every family, read from the
family's own checkpoint layout, against tests/oracle/family_ref.py.

For every family and for F32 (one file, config.json beside it), BF16 (two shards,
index, config.json) and GPT-OSS MXFP4, tests/lib/family_fixtures.py writes a random
block; tests/oracle/family_ref.py computes its output from the tensors as the fixture
reader decodes them (MXFP4 dequantised as transformers' convert_moe_packed_tensors
does: [n, out, in] transposed to gate_up_proj's [n, d, 2h] / down_proj's [n, h, d]).
`moescope eval --dump-outputs` on an inputs-only evaluation set must agree to 1e-4
relative; so must a copy scrambled by a random element of the router's group
(written by the fixtures, not by moescope) and `align`'s output of that copy. For
DeepSeek's group-limited routers, swapping two experts of different groups changes
the output. The experts packed as transformers >= 5 holds them compute the same. PhiMoE (whose
fixtures are Mixtral's tensors with its sparsemixer router) refuses a --top-k other
than 2. diagnose of a layer pair with its experts mapped gives the float path's report.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_family_eval_")
N = 96


def decoded_tensors(path):
    """HF name -> float32, as a loader hands them to the module (MXFP4 dequantised)."""
    files = []
    if os.path.isdir(path):
        idx = json.load(open(os.path.join(path, "model.safetensors.index.json")))
        files = [os.path.join(path, s) for s in sorted(set(idx["weight_map"].values()))]
    else:
        files = [path]
    raw = {}
    for f in files:
        raw.update(ff.read_safetensors(f)[0])
    out = {}
    for k, (dt, shape, b) in raw.items():
        if k.endswith("_blocks"):
            base = k[: -len("_blocks")]
            blocks = np.frombuffer(b, np.uint8).reshape(shape)
            st = raw[base + "_scales"]
            scales = np.frombuffer(st[2], np.uint8).reshape(st[1])
            out[base] = ff.mx_decode(blocks, scales).transpose(0, 2, 1).copy()
        elif dt != "U8":
            out[k] = ff.to_float(dt, shape, b)
    return out


def dump(ckpt, evalset, tag):
    o = os.path.join(TMP, "out_%s.safetensors" % tag)
    r = run("eval", ckpt, "--eval", evalset, "--dump-outputs", o)
    check(r.returncode == 0, "%s: eval --dump-outputs failed: %s" % (tag, r.stderr.strip()))
    if r.returncode:
        return None
    t = ff.read_safetensors(o)[0]["outputs"]
    return ff.to_float(*t).astype(np.float64)


def close(got, want, tag, tol=1e-4):
    if got is None:
        return
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    check(got.shape == want.shape and err <= tol, "%s: relative error %.3g (shape %s)" %
          (tag, err, got.shape))


def one(fam, dtype, shards, mx, seed):
    tag = "%s/%s%s" % (fam, "MXFP4" if mx else dtype, "/sharded" if shards > 1 else "")
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer(fam, rng, dtype, mx=mx)
    name = tag.replace("/", "_")
    d = os.path.join(TMP, name)
    os.makedirs(d)
    if shards > 1:
        a = os.path.join(d, "a")
        ff.write_checkpoint(a, fam, W, cfg, dtype, shards)
    else:  # one file, with config.json beside it
        a = os.path.join(d, "a.safetensors")
        ff.write_checkpoint(a, fam, W, cfg, dtype, 1)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    n, dm = W["gate"].shape
    X = (rng.standard_normal((N, dm)) * 1.5).astype(np.float32)
    e = os.path.join(d, "eval.safetensors")
    ff.write_safetensors(e, [("inputs", "F32", X.shape, X.tobytes())])
    prefix = ff.prefix_of(fam, 1) + "."
    want = family_ref.forward(fam, decoded_tensors(a), cfg, prefix, X)
    close(dump(a, e, name + "_a"), want, tag + ": eval vs family_ref")
    # a copy scrambled by an element of the router's group, written by the fixtures
    h = W["w1"].shape[1]
    hs = W["s1"].shape[0] if "s1" in W else 0
    groups = cfg.get("n_group", 1) if fam.startswith("deepseek") else 1
    pi = ff.group_perm(rng, n, groups)
    if mx:
        bps = [rng.permutation(h // 32) for _ in range(n)]
        S = ff.scramble_mx(W, pi, bps)
    else:
        perms = [rng.permutation(h) for _ in range(n)] + ([rng.permutation(hs)] if hs else [])
        S = ff.scramble(W, pi, perms)
    b = os.path.join(d, "b" if shards > 1 else "b.safetensors")
    ff.write_checkpoint(b, fam, S, cfg, dtype, shards)
    close(dump(b, e, name + "_b"), want, tag + ": scrambled copy vs family_ref")
    if groups > 1 and shards > 1:
        # swapping two experts of different groups (gate rows moving with them) is a
        # symmetry of an ungrouped router, not of a group-limited one
        m = n // groups
        pi2 = np.arange(n)
        pi2[0], pi2[m] = m, 0
        g = os.path.join(d, "g")
        ff.write_checkpoint(g, fam, ff.scramble(W, pi2, [np.arange(h)] * n + ([np.arange(hs)] if hs else [])),
                            cfg, dtype, shards)
        got = dump(g, e, name + "_g")
        if got is not None:
            rel = np.abs(got - want).max() / np.abs(want).max()
            check(rel > 1e-3, "%s: a group-breaking permutation left the output unchanged (%.3g)" % (tag, rel))
    out = os.path.join(d, "al" if shards > 1 else "al.safetensors")
    r = run("align", a, b, "-o", out)
    check(r.returncode == 0, "%s: align failed: %s" % (tag, r.stderr.strip()))
    if r.returncode == 0:
        close(dump(out, e, name + "_al"), want, tag + ": aligned copy vs family_ref")


def phimoe_top_k():
    """PhiMoE's sparsemixer picks two experts by construction: another --top-k is
    refused by name, 2 is taken."""
    d = os.path.join(TMP, "phimoe_F32")
    a, e = os.path.join(d, "a.safetensors"), os.path.join(d, "eval.safetensors")
    r = run("eval", a, "--eval", e, "--top-k", "3")
    check(r.returncode == 1 and "sparsemixer" in r.stderr and "--top-k 3" in r.stderr and a in r.stderr,
          "phimoe --top-k 3: refused naming the file and the router (%d: %s)" % (r.returncode, r.stderr.strip()))
    r = run("eval", a, "--eval", e, "--top-k", "2")
    check(r.returncode == 0, "phimoe --top-k 2 taken: %s" % r.stderr.strip())


def packed(fam, seed):
    """transformers >= 5 packs the experts (experts.gate_up_proj [n,2h,d], gate rows
    first; experts.down_proj [n,d,h]) and names Mixtral's block mlp: the same
    function as the per-expert layout of the same weights."""
    tag = "%s/packed" % fam
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer(fam, rng, "BF16")
    a = os.path.join(TMP, fam + "_packed")
    ff.write_checkpoint(a, fam, W, cfg, "BF16", 2, packed=True)
    X = (rng.standard_normal((N, W["gate"].shape[1])) * 1.5).astype(np.float32)
    e = os.path.join(TMP, fam + "_packed_eval.safetensors")
    ff.write_safetensors(e, [("inputs", "F32", X.shape, X.tobytes())])
    per_expert = {nm: ff.to_float(dt, shape, raw) for nm, dt, shape, raw in ff.hf_tensors(fam, W, dtype="BF16")}
    want = family_ref.forward(fam, per_expert, cfg, ff.prefix_of(fam, 1) + ".", X)
    close(dump(a, e, fam + "_packed"), want, tag + ": eval vs family_ref (per-expert names)")


def mapped_diagnose():
    """diagnose of a layer pair in a family's layout reads the routed experts where the
    files map them (decoded one or two at a time): the float path's report and JSON
    (MOESCOPE_TEST_FLOATS), F32 and BF16 shards, shared experts, MXFP4."""
    for tag in ("mixtral/F32", "qwen2_moe/BF16/sharded", "deepseek_v3/BF16/sharded", "gpt_oss/MXFP4/sharded"):
        d = os.path.join(TMP, tag.replace("/", "_"))
        a, b = [os.path.join(d, x if "sharded" in tag else x + ".safetensors") for x in ("a", "b")]
        texts, js = [], []
        for env in (None, {"MOESCOPE_TEST_FLOATS": "1"}):
            out = os.path.join(d, "diag_%s.json" % ("floats" if env else "mapped"))
            r = run("diagnose", a, b, "--eval", os.path.join(d, "eval.safetensors"), "--json", out, env=env)
            check(r.returncode == 0, "%s: diagnose (%s): %s" % (tag, "floats" if env else "mapped", r.stderr.strip()))
            texts.append(r.stdout + r.stderr)
            j = json.load(open(out)) if r.returncode == 0 else {}
            j.pop("provenance", None)
            js.append(j)
        check(texts[0] == texts[1] and js[0] == js[1] and js[0],
              "%s: diagnose of the layer mapped gives the float path's report and JSON" % tag)


def main():
    try:
        seed = 300
        for fam in ff.FAMILIES + ["phimoe"]:
            for dtype, shards in (("F32", 1), ("BF16", 2)):
                one(fam, dtype, shards, False, seed)
                seed += 1
        phimoe_top_k()
        one("gpt_oss", "BF16", 2, True, seed)
        for fam in ff.PACKABLE:
            seed += 1
            packed(fam, seed)
        mapped_diagnose()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_family_eval")


if __name__ == "__main__":
    sys.exit(main())
