"""tests/commands/test_families.py - real checkpoints: every family, sharded and single-file,
F32 / BF16 / MXFP4, written by tests/lib/family_fixtures.py (not by moescope).

For every family:
  - `info --json` recognises the family and the layer's n, d, h;
  - a copy scrambled by a random element of its router's group (permutations that
    keep DeepSeek's expert groups whole) is undone: `cost` finds the inverse order
    with total ~ 0, and `align`'s output equals the original tensor by tensor, bit
    for bit (a pure permutation), in the input's names, dtypes and shapes;
  - a sharded input gives a sharded output directory: the shards holding the layer
    rewritten, the other hard-linked to the input's (same inode, untouched),
    config.json and the index carried over, the rest of the model unchanged.
The same for transformers >= 5's packed experts (experts.gate_up_proj / down_proj).
Sharded error cases: a tensor missing from its shard, a missing shard, weight_map
entries outside the directory, malformed index / config, an unknown family. A
directory holding several checkpoints lists them; `info` never opens the shards
of layers it does not describe.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_families_")


def p(*names):
    return os.path.join(TMP, *names)


def tensors_of(path):
    """name -> (dtype, shape, bytes) of a file or a sharded directory."""
    if os.path.isdir(path):
        out = {}
        idx = json.load(open(os.path.join(path, "model.safetensors.index.json")))
        for shard in sorted(set(idx["weight_map"].values())):
            t, _ = ff.read_safetensors(os.path.join(path, shard))
            out.update(t)
        return out
    return ff.read_safetensors(path)[0]


def same_tensors(a, b, what):
    ta, tb = tensors_of(a), tensors_of(b)
    check(sorted(ta) == sorted(tb), "%s: tensor names differ: %s" % (what, sorted(set(ta) ^ set(tb))[:5]))
    bad = [k for k in ta if k in tb and ta[k] != tb[k]]
    check(not bad, "%s: %d tensor(s) differ (dtype, shape or bytes), e.g. %s" % (what, len(bad), bad[:3]))


def group_element(fam, cfg, rng, n, h, hs):
    groups = cfg.get("n_group", 1) if fam.startswith("deepseek") else 1
    pi = ff.group_perm(rng, n, groups)
    perms = [rng.permutation(h) for _ in range(n)]
    if hs:
        perms.append(rng.permutation(hs))
    return pi, perms


def roundtrip(fam, dtype, shards, seed, packed=False):
    tag = "%s/%s/%s%s" % (fam, dtype, "sharded" if shards > 1 else "file", "/packed" if packed else "")
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer(fam, rng, dtype)
    n, d, h = W["gate"].shape[0], W["gate"].shape[1], W["w1"].shape[1]
    hs = W["s1"].shape[0] if "s1" in W else 0
    ext = "" if shards > 1 else ".safetensors"
    a, b, out = p(tag.replace("/", "_") + "_a" + ext), p(tag.replace("/", "_") + "_b" + ext), \
        p(tag.replace("/", "_") + "_al" + ext)
    ff.write_checkpoint(a, fam, W, cfg, dtype, shards, rng=np.random.default_rng(7), packed=packed)
    pi, perms = group_element(fam, cfg, rng, n, h, hs)
    ff.write_checkpoint(b, fam, ff.scramble(W, pi, perms), cfg, dtype, shards,
                        rng=np.random.default_rng(7), packed=packed)
    if shards == 1:  # a single file has no config.json beside it: say the family's router
        pass
    r = run("info", a, "--json", p("info.json"))
    check(r.returncode == 0, "%s: info failed: %s" % (tag, r.stderr))
    if r.returncode == 0:
        j = json.load(open(p("info.json")))
        lay = j.get("moe_layers", [{}])
        fam_seen = lay[0].get("family") if lay else None
        want = fam if shards > 1 or fam not in ("olmoe",) else "qwen3_moe"  # no config: names alike
        check(fam_seen == want, "%s: info says family %s" % (tag, fam_seen))
        check((j.get("n"), j.get("d"), j.get("h")) == (n, d, h),
              "%s: info n, d, h = %s" % (tag, (j.get("n"), j.get("d"), j.get("h"))))
        # info counts what the layer's tensors hold: the router's biases, the shared
        # experts' gate and the output bias included
        want_n = sum(int(np.prod(shape)) for _, _, shape, _ in ff.hf_tensors(fam, W, dtype=dtype, packed=packed))
        got_n = j.get("parameters", {}).get("stored")
        check(got_n == want_n, "%s: info counts %s parameters in the layer, its tensors hold %d" % (tag, got_n, want_n))
    r = run("cost", a, b, "--json", p("cost.json"))
    check(r.returncode == 0, "%s: cost failed: %s" % (tag, r.stderr))
    if r.returncode == 0:
        c = json.load(open(p("cost.json")))
        check(c["order"] == list(np.argsort(pi)), "%s: cost order %s, expected %s" %
              (tag, c["order"], list(np.argsort(pi))))
        check(abs(c["total"]) < 1e-3, "%s: cost total %g, expected ~0" % (tag, c["total"]))
    r = run("align", a, b, "-o", out)
    check(r.returncode == 0, "%s: align failed: %s" % (tag, r.stderr))
    if r.returncode != 0:
        return
    same_tensors(a, out, tag + ": align output vs the original")
    if shards > 1:
        for f in ("config.json", "model.safetensors.index.json"):
            check(open(os.path.join(b, f), "rb").read() == open(os.path.join(out, f), "rb").read(),
                  "%s: %s not carried over" % (tag, f))
        last = "model-%05d-of-%05d.safetensors" % (shards, shards)
        sb, so = os.stat(os.path.join(b, last)), os.stat(os.path.join(out, last))
        if shards >= 3:  # the last shard holds none of the layer
            check(sb.st_ino == so.st_ino, "%s: the shard without the layer is not linked" % tag)
        else:
            check(sb.st_ino != so.st_ino, "%s: a shard holding the layer was linked" % tag)
        check(sorted(os.listdir(out)) == sorted(os.listdir(b)), "%s: output files %s" %
              (tag, sorted(os.listdir(out))))


def mxfp4_roundtrip(seed):
    """GPT-OSS MXFP4: an expert permutation and hidden permutations in whole 32-unit
    blocks keep every code exact, so align gives back the original bytes."""
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer("gpt_oss", rng, "BF16", mx=True)
    n, h = W["gate"].shape[0], W["w1"].shape[1]
    a, b, out = p("mx_a"), p("mx_b"), p("mx_al")
    ff.write_checkpoint(a, "gpt_oss", W, cfg, "BF16", 2)
    pi = rng.permutation(n)
    bps = [rng.permutation(h // 32) for _ in range(n)]
    while all((bp == np.arange(h // 32)).all() for bp in bps):
        bps = [rng.permutation(h // 32) for _ in range(n)]
    ff.write_checkpoint(b, "gpt_oss", ff.scramble_mx(W, pi, bps), cfg, "BF16", 2)
    t = tensors_of(a)
    check(t["model.layers.1.mlp.experts.down_proj_blocks"][0] == "U8", "mxfp4: fixture dtype")
    r = run("cost", a, b, "--json", p("cost.json"))
    check(r.returncode == 0 and json.load(open(p("cost.json")))["order"] == list(np.argsort(pi)),
          "mxfp4: cost order: %s" % r.stderr)
    r = run("align", a, b, "-o", out)
    check(r.returncode == 0, "mxfp4: align failed: %s" % r.stderr)
    if r.returncode == 0:
        same_tensors(a, out, "mxfp4: align output vs the original")
        check("requantised" not in r.stderr, "mxfp4: whole-block moves requantised: %s" % r.stderr)
    # moescope's own scramble moves hidden units across down_proj's blocks: requantised, said so
    r = run("scramble", a, "-o", p("mx_s"), "--seed", 3)
    check(r.returncode == 0, "mxfp4: scramble failed: %s" % r.stderr)
    check("requantised" in r.stderr, "mxfp4: scramble did not report the requantisation: %s" % r.stderr)
    if r.returncode == 0:
        ts = tensors_of(p("mx_s"))
        for k, v in t.items():
            check(ts[k][0] == v[0] and ts[k][1] == v[1], "mxfp4: %s dtype/shape changed" % k)


def write_index(d, wm, extra=None):
    j = {"metadata": {"total_size": 0}, "weight_map": wm}
    j.update(extra or {})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(j, f)


def sharded_errors():
    rng = np.random.default_rng(5)
    W, cfg = ff.random_layer("mixtral", rng, "BF16")
    base = p("err_base")
    ff.write_checkpoint(base, "mixtral", W, cfg, "BF16", 2)
    idx = json.load(open(os.path.join(base, "model.safetensors.index.json")))

    def variant(name, edit):
        d = p(name)
        shutil.copytree(base, d)
        edit(d)
        return d

    def expect(what, d, pattern, *extra, rc=1):
        r = run("info", d, *extra)
        check(r.returncode == rc and pattern in r.stderr and "Sanitizer" not in r.stderr,
              "%s: rc %d, stderr %r (want %r)" % (what, r.returncode, r.stderr.strip(), pattern))

    # a tensor the index puts in a shard that does not hold it
    wm = dict(idx["weight_map"])
    gate = "model.layers.1.block_sparse_moe.gate.weight"
    other = [s for s in set(wm.values()) if s != wm[gate]][0]
    wm2 = dict(wm, **{gate: other})
    expect("tensor missing from its shard", variant("e1", lambda d: write_index(d, wm2)), "does not hold it")
    expect("missing shard", variant("e2", lambda d: os.remove(os.path.join(d, wm[gate]))), "is missing")
    for i, bad in enumerate(("../x.safetensors", "/etc/passwd", "sub/x.safetensors", "..")):
        wm3 = dict(wm, **{gate: bad})
        expect("weight_map %s" % bad, variant("e3%d" % i, lambda d: write_index(d, wm3)), "outside")
    # only the shards holding the layer are read: a broken shard without it does not matter
    other_only = p("e10")
    W3, cfg3 = ff.random_layer("mixtral", rng, "BF16")
    ff.write_checkpoint(other_only, "mixtral", W3, cfg3, "BF16", 3)
    with open(os.path.join(other_only, "model-00003-of-00003.safetensors"), "wb") as f:
        f.write(b"not a safetensors file")
    r = run("cost", other_only, other_only)
    check(r.returncode == 0, "a broken shard that holds no layer tensor was read: %s" % r.stderr)
    # tolerated: extra keys in the index
    d = variant("e4", lambda d: write_index(d, wm, {"format": "x", "extra": [1, 2]}))
    check(run("info", d).returncode == 0, "index with extra keys refused")

    def bad_json(fname, text):
        def edit(d):
            with open(os.path.join(d, fname), "w") as f:
                f.write(text)
        return edit
    expect("malformed index", variant("e5", bad_json("model.safetensors.index.json", "{\"weight_map\": ")),
           "malformed index")
    expect("index without weight_map", variant("e6", bad_json("model.safetensors.index.json", "{}")),
           "weight_map")
    expect("index weight_map value not a string",
           variant("e7", bad_json("model.safetensors.index.json", '{"weight_map": {"a": 3}}')),
           "not a file name")
    expect("malformed config", variant("e8", bad_json("config.json", "[1, 2")), "malformed config.json")
    # the index file itself as the argument
    r = run("info", os.path.join(base, "model.safetensors.index.json"))
    check(r.returncode == 0, "index path as argument: %s" % r.stderr)
    # unknown family: MoE-looking tensors named after no family moescope knows
    unk = p("unknown.safetensors")
    x = np.zeros((4, 8), np.float32)
    ff.write_safetensors(unk, [("model.layers.0.moe_block.router_w", "F32", x.shape, x.tobytes()),
                               ("model.layers.0.moe_block.experts.0.fc_in", "F32", x.shape, x.tobytes())])
    expect("unknown family", unk, "model.layers.0.moe_block")
    # --family with a family whose layout is not there
    expect("forced absent family", base, "of family switch", "--family", "switch")
    expect("unknown --family", base, "unknown family", "--family", "nosuch", rc=2)
    # --layer: a block index, a full prefix (with or without the dot), a wrong one
    for arg in ("1", "model.layers.1.block_sparse_moe", "model.layers.1.block_sparse_moe."):
        r = run("info", base, "--layer", arg)
        check(r.returncode == 0, "--layer %s: %s" % (arg, r.stderr))
    expect("--layer absent", base, "no MoE layer '7'", "--layer", "7")
    # moescope's own names: a two-layer file, --layer by block index or prefix
    nat = p("native2.safetensors")
    items = []
    for L, h in ((0, 8), (1, 12)):
        q = "blocks.%d.moe." % L
        items.append((q + "gate.weight", "F32", (3, 8), np.ones((3, 8), np.float32).tobytes()))
        for e in range(3):
            items.append((q + "experts.%d.fc1.weight" % e, "F32", (h, 8),
                          rng.standard_normal((h, 8)).astype(np.float32).tobytes()))
            items.append((q + "experts.%d.fc2.weight" % e, "F32", (8, h),
                          rng.standard_normal((8, h)).astype(np.float32).tobytes()))
    ff.write_safetensors(nat, items)
    for arg in ("1", "blocks.1.moe"):
        r = run("info", nat, "--layer", arg, "--json", p("n.json"))
        check(r.returncode == 0 and json.load(open(p("n.json")))["h"] == 12,
              "native --layer %s: %s" % (arg, r.stderr))
    # olmoe and qwen3_moe name their tensors alike: --family decides
    r = run("info", base.replace("err_base", "olmoe_dir"), "--family", "olmoe")
    W, cfg = ff.random_layer("qwen3_moe", rng, "F32")
    f = p("q3.safetensors")
    ff.write_checkpoint(f, "qwen3_moe", W, cfg, "F32")
    r = run("info", f, "--family", "olmoe", "--json", p("o.json"))
    check(r.returncode == 0 and json.load(open(p("o.json")))["moe_layers"][0]["family"] == "olmoe",
          "--family olmoe: %s" % r.stderr)
    # router overrides and where values came from
    r = run("info", f, "--top-k", "3", "--json", p("o.json"))
    j = json.load(open(p("o.json"))) if r.returncode == 0 else {}
    check(j.get("k") == 3 and j.get("router_origin", {}).get("k") == "command line",
          "--top-k 3: %s %s" % (j.get("k"), j.get("router_origin")))


def output_dir_exists():
    """A sharded output lands in a new (or empty) directory; a non-empty one is refused
    and left as it was, with nothing left behind."""
    rng = np.random.default_rng(4)
    W, cfg = ff.random_layer("mixtral", rng, "BF16")
    a = p("od_a")
    ff.write_checkpoint(a, "mixtral", W, cfg, "BF16", 2)
    full = p("od_full")
    os.makedirs(full)
    with open(os.path.join(full, "keep.txt"), "w") as f:
        f.write("mine")
    r = run("align", a, a, "-o", full)
    check(r.returncode == 1 and "not empty" in r.stderr, "non-empty output directory: %s" % r.stderr)
    check(os.listdir(full) == ["keep.txt"], "non-empty output directory changed: %s" % os.listdir(full))
    check(not [x for x in os.listdir(TMP) if ".tmp-" in x], "temporary directory left behind")
    empty = p("od_empty")
    os.makedirs(empty)
    r = run("align", a, a, "-o", empty)
    check(r.returncode == 0 and os.path.exists(os.path.join(empty, "config.json")),
          "empty output directory: %s" % r.stderr)
    um = os.umask(0)
    os.umask(um)
    check(os.stat(empty).st_mode & 0o777 == 0o777 & ~um, "output directory mode %o" % os.stat(empty).st_mode)
    r = run("align", a, a, "-o", p("od_file.safetensors"))
    check(r.returncode == 0 and os.path.isdir(p("od_file.safetensors")), "a sharded output is a directory")


def directories_and_layers():
    """A directory holding several candidate checkpoints is named with all of them
    listed (evaluation sets passed over); `info` reads only the shards of the layers
    it describes: a layer in a shard it never opens is listed unread (the shard is
    garbage here, so opening it would fail)."""
    rng = np.random.default_rng(6)
    W, cfg = ff.random_layer("mixtral", rng, "F32")
    X = rng.standard_normal((8, W["gate"].shape[1])).astype(np.float32)
    pool = p("pool")
    ff.write_checkpoint(os.path.join(pool, "seed1"), "mixtral", W, cfg, "F32", 2)
    os.makedirs(os.path.join(pool, "seed2"))
    ff.write_checkpoint(os.path.join(pool, "seed2", "model.safetensors"), "mixtral", W, cfg, "F32")
    ff.write_safetensors(os.path.join(pool, "eval.safetensors"), [("inputs", "F32", X.shape, X.tobytes())])
    r = run("info", pool)
    check(r.returncode == 1 and "2 candidate checkpoints" in r.stderr and "seed1/ (sharded)" in r.stderr
          and "seed2/ (model.safetensors)" in r.stderr and "eval.safetensors" not in r.stderr,
          "a pool directory: the candidates listed: %s" % r.stderr.strip())
    one = p("one")
    os.makedirs(one)
    ff.write_checkpoint(os.path.join(one, "a.safetensors"), "mixtral", W, cfg, "F32")
    ff.write_safetensors(os.path.join(one, "eval.safetensors"), [("inputs", "F32", X.shape, X.tobytes())])
    r = run("info", one)
    check(r.returncode == 0, "one checkpoint beside an evaluation set is picked: %s" % r.stderr.strip())
    two = p("two")
    os.makedirs(two)
    for nm in ("x.safetensors", "y.safetensors"):
        ff.write_checkpoint(os.path.join(two, nm), "mixtral", W, cfg, "F32")
    r = run("info", two)
    check(r.returncode == 1 and "x.safetensors, y.safetensors" in r.stderr, "two files listed: %s" % r.stderr)
    evo = p("evonly")
    os.makedirs(evo)
    ff.write_safetensors(os.path.join(evo, "eval.safetensors"), [("inputs", "F32", X.shape, X.tobytes())])
    r = run("info", evo)
    check(r.returncode == 1 and "evaluation sets" in r.stderr, "only an evaluation set: %s" % r.stderr)
    # two MoE layers in two shards; the second shard is garbage
    ml = p("multilayer")
    os.makedirs(ml)
    l1, l3 = ff.hf_tensors("mixtral", W, L=1), ff.hf_tensors("mixtral", W, L=3)
    ff.write_safetensors(os.path.join(ml, "model-00001-of-00002.safetensors"), l1)
    with open(os.path.join(ml, "model-00002-of-00002.safetensors"), "wb") as f:
        f.write(b"\xff" * 64)
    wm = {t[0]: "model-00001-of-00002.safetensors" for t in l1}
    wm.update({t[0]: "model-00002-of-00002.safetensors" for t in l3})
    write_index(ml, wm)
    r = run("info", ml, "--json", p("ml.json"))
    lay = json.load(open(p("ml.json")))["moe_layers"] if r.returncode == 0 else []
    check(r.returncode == 0 and len(lay) == 2 and lay[0]["read"] and lay[0]["n"] == W["gate"].shape[0]
          and not lay[1]["read"] and lay[1]["shard"] == "model-00002-of-00002.safetensors"
          and "not read" in r.stdout,
          "info reads only the chosen layer's shards: %s %s" % (lay, r.stderr.strip()))
    r = run("info", ml, "--layer", "3")
    check(r.returncode == 1 and "model-00002-of-00002.safetensors" in r.stderr,
          "the garbage shard is named when its layer is asked for: %s" % r.stderr.strip())


def main():
    try:
        seed = 11
        for fam in ff.FAMILIES:
            for dtype, shards in (("F32", 1), ("BF16", 3)):
                roundtrip(fam, dtype, shards, seed)
                seed += 1
        roundtrip("mixtral", "F16", 1, 77)
        for fam in ff.PACKABLE:  # transformers >= 5's packed experts
            roundtrip(fam, "BF16", 2, seed, packed=True)
            seed += 1
        roundtrip("qwen2_moe", "F16", 2, 78)
        mxfp4_roundtrip(99)
        output_dir_exists()
        sharded_errors()
        directories_and_layers()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_families")


if __name__ == "__main__":
    sys.exit(main())
