"""tests/commands/test_passthrough.py - scramble / align / merge keep the rest of the checkpoint.

A checkpoint may hold several MoE layers and tensors moescope does not read.
With --layer blocks.1.moe on a two-layer file (plus an F16 embedding, an I64 tensor, a
BF16 and a U8 tensor, a scalar), every tensor outside the chosen layer and the head
must come out byte-identical (same dtype, shape and bytes) -- from B for `align` and
`scramble`'s input, from A for `merge` -- the chosen layer and the head exactly as a
run on a one-layer file gives them, the source's metadata kept, and `eval --layer`
must work on both layers of the output. Unknown tensors inside the chosen layer's
namespace are dropped with a warning.
"""
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

L1 = "blocks.1.moe"
TMP = tempfile.mkdtemp(prefix="moescope_passthrough_")


def p(name):
    return os.path.join(TMP, name)


def write_raw(path, items, meta):
    """items: list of (name, dtype string, shape, bytes) written as they are."""
    header = {"__metadata__": dict(meta)}
    off = 0
    for name, dt, shape, b in items:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for it in items:
            f.write(it[3])


def read_raw(path):
    """{name: (dtype, shape, bytes)}, metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hl])
    meta = header.pop("__metadata__", {})
    data = raw[8 + hl:]
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], tuple(info["shape"]), data[b:e])
    return out, meta


def f32(name, a):
    a = np.ascontiguousarray(np.asarray(a, dtype="<f4"))
    return (name, "F32", a.shape, a.tobytes())


def two_layer(seed):
    """Layer 'moe' with the head, layer L1 (top-2, one shared expert), other tensors."""
    t0, meta = gen_ckpt.make_layer(seed, n=4, d=8, h=16, prefix="moe")
    # one frozen head shared by A and B (SPEC), so merge leaves it alone
    th, _ = gen_ckpt.make_layer(0, n=4, d=8, h=16, prefix="moe")
    t0.update({k: v for k, v in th.items() if k.startswith("head.")})
    t1, _ = gen_ckpt.make_layer(seed + 100, n=4, d=8, h=12, shared=1, head=False, prefix=L1)
    rng = np.random.default_rng(seed + 7)
    items = [f32(k, v) for k, v in t0.items() if not k.startswith("head.")]
    emb = (rng.standard_normal((10, 8))).astype("<f2")
    items.insert(0, ("embed.weight", "F16", emb.shape, emb.tobytes()))
    items += [f32(k, v) for k, v in t1.items()]
    ids = rng.integers(-5, 1 << 40, size=6).astype("<i8")
    items.append(("pos.ids", "I64", ids.shape, ids.tobytes()))
    bf = (rng.integers(0, 1 << 16, size=(3, 2)).astype("<u2") & 0x7F7F)  # finite BF16 bits
    items.append(("ln.bf16", "BF16", bf.shape, bf.tobytes()))
    u8 = rng.integers(0, 256, size=5).astype("u1")
    items.append(("mask.u8", "U8", u8.shape, u8.tobytes()))
    items.append(("step", "F32", (), np.array(seed, "<f4").tobytes()))
    items += [f32(k, v) for k, v in t0.items() if k.startswith("head.")]
    meta = dict(meta, note="two layers %d" % seed)
    meta["moescope.router"] = "dense"
    layer_t = dict(t1)
    layer_t.update({k: v for k, v in t0.items() if k.startswith("head.")})
    return items, meta, layer_t


def one_layer(layer_t, meta):
    return [f32(k, v) for k, v in layer_t.items()], meta


def in_layer(name):
    return name.startswith(L1 + ".gate.") or name.startswith(L1 + ".experts.") or \
        name.startswith(L1 + ".shared.")


def is_head(name):
    return name.startswith("head.")


# ---- fixtures: two-layer A and B, their one-layer versions, an evaluation set
itA, metaA, layA = two_layer(1)
itB, metaB, layB = two_layer(2)
write_raw(p("A.safetensors"), itA, metaA)
write_raw(p("B.safetensors"), itB, metaB)
os.mkdir(p("one"))
write_raw(p("one/A.safetensors"), *one_layer(layA, metaA))
write_raw(p("one/B.safetensors"), *one_layer(layB, metaB))
ev = gen_ckpt.make_evalset(3, layB, metaB, N=120, prefix=L1)
oracle.write_safetensors(p("E.safetensors"), ev)

# the fixtures are what the tests think they are
rawA, _ = read_raw(p("A.safetensors"))
rawB, _ = read_raw(p("B.safetensors"))
check(rawA["embed.weight"][0] == "F16" and rawA["pos.ids"][0] == "I64", "fixture dtypes")
check(rawA["embed.weight"][2] != rawB["embed.weight"][2], "fixture: A and B differ outside the layer")


def loss_of(path, layer):
    r = run("eval", path, "--eval", p("E.safetensors"), "--layer", layer, "--json", p("ev.json"))
    if r.returncode != 0:
        print("    eval %s --layer %s: %s" % (path, layer, r.stderr.strip()))
        return None
    with open(p("ev.json")) as f:
        return json.load(f)["loss"]


E_moe = {}
for name in ("A", "B"):
    E_moe[name] = (loss_of(p(name + ".safetensors"), "moe"), loss_of(p(name + ".safetensors"), L1))
check(None not in E_moe["A"] + E_moe["B"], "eval works on both layers of the inputs")


def check_output(what, out, one_out, src_raw, src_meta, same_function_as=None):
    """out: the two-layer result; one_out: the same command on one-layer files."""
    raw, meta = read_raw(out)
    one, one_meta = read_raw(one_out)
    # everything outside the layer and the head: byte-identical to the source
    others = [k for k in src_raw if not in_layer(k) and not is_head(k)]
    for k in others:
        check(k in raw, "%s: tensor %s kept" % (what, k))
        if k in raw:
            check(raw[k] == src_raw[k], "%s: tensor %s byte-identical (dtype %s -> %s)" %
                  (what, k, src_raw[k][0], raw[k][0]))
    # the chosen layer and the head: exactly what the one-layer run wrote
    mine = sorted(k for k in raw if in_layer(k) or is_head(k))
    check(mine == sorted(one), "%s: layer + head names as the one-layer run (%s vs %s)" %
          (what, mine, sorted(one)))
    check(all(raw.get(k) == one[k] for k in one),
          "%s: layer + head values identical to the one-layer run" % what)
    check(set(raw) == set(others) | set(one), "%s: no tensor added or lost" % what)
    # the chosen layer did change
    changed = any(raw[k][2] != src_raw[k][2] for k in raw if in_layer(k) and k in src_raw)
    check(changed, "%s: the chosen layer was rewritten" % what)
    # metadata: the source's entries kept, the command's record as in the one-layer run
    for k, v in src_meta.items():
        check(meta.get(k) == v, "%s: metadata %s kept (%r vs %r)" % (what, k, meta.get(k), v))
    rec = {k for k in one_meta if k.startswith("moescope.") and k not in src_meta}
    check(rec and rec <= set(meta), "%s: the command's record %s in the metadata" %
          (what, sorted(rec)))
    # both layers still evaluate; the other layer is the source's
    lm, l1 = loss_of(out, "moe"), loss_of(out, L1)
    check(lm is not None and l1 is not None, "%s: eval --layer works on both layers" % what)
    src = "A" if src_raw is rawA else "B"
    if lm is not None:
        check(lm == E_moe[src][0], "%s: layer moe evaluates as in %s (%r vs %r)" %
              (what, src, lm, E_moe[src][0]))
    if same_function_as and l1 is not None:
        want = E_moe[same_function_as][1]
        check(abs(l1 - want) <= 1e-5 * max(1.0, abs(want)),
              "%s: the chosen layer computes %s's function (%r vs %r)" %
              (what, same_function_as, l1, want))


# ---- scramble: A's other tensors
r = run("scramble", p("A.safetensors"), "-o", p("S.safetensors"), "--seed", 5, "--translate",
        "--layer", L1)
check(r.returncode == 0, "scramble --layer: %s" % r.stderr)
r1 = run("scramble", p("one/A.safetensors"), "-o", p("one/S.safetensors"), "--seed", 5,
         "--translate", "--layer", L1)
check(r1.returncode == 0, "scramble one-layer: %s" % r1.stderr)
if r.returncode == 0 and r1.returncode == 0:
    check("warning" not in r.stderr, "scramble: no warning: %s" % r.stderr)
    check_output("scramble", p("S.safetensors"), p("one/S.safetensors"), rawA, metaA, "A")

# ---- align: B's other tensors
r = run("align", p("A.safetensors"), p("B.safetensors"), "-o", p("Bal.safetensors"),
        "--layer", L1)
check(r.returncode == 0, "align --layer: %s" % r.stderr)
r1 = run("align", p("one/A.safetensors"), p("one/B.safetensors"), "-o", p("one/Bal.safetensors"),
         "--layer", L1)
check(r1.returncode == 0, "align one-layer: %s" % r1.stderr)
if r.returncode == 0 and r1.returncode == 0:
    check_output("align", p("Bal.safetensors"), p("one/Bal.safetensors"), rawB, metaB, "B")

# ---- align the scrambled A back: the other layer still A's, bytes unchanged end to end
r = run("align", p("A.safetensors"), p("S.safetensors"), "-o", p("back.safetensors"),
        "--layer", L1)
check(r.returncode == 0, "align scrambled back: %s" % r.stderr)
if r.returncode == 0:
    back, _ = read_raw(p("back.safetensors"))
    check(all(back.get(k) == rawA[k] for k in rawA if not in_layer(k) and not is_head(k)),
          "scramble + align back: other tensors byte-identical to A")
    bl = oracle.load_layer(p("back.safetensors"), L1)
    al = oracle.load_layer(p("A.safetensors"), L1)
    err = max(np.max(np.abs(bl["experts"][i][w] - al["experts"][i][w]))
              for i in range(al["n"]) for w in ("w1", "b1", "w2", "b2"))
    check(err < 1e-5, "scramble + align back: the chosen layer's experts are A's (%g)" % err)

# ---- merge: A's other tensors (A is the reference basis)
r = run("merge", p("A.safetensors"), p("B.safetensors"), "-o", p("M.safetensors"),
        "--alpha", "0.3", "--layer", L1)
check(r.returncode == 0, "merge --layer: %s" % r.stderr)
r1 = run("merge", p("one/A.safetensors"), p("one/B.safetensors"), "-o", p("one/M.safetensors"),
         "--alpha", "0.3", "--layer", L1)
check(r1.returncode == 0, "merge one-layer: %s" % r1.stderr)
if r.returncode == 0 and r1.returncode == 0:
    check_output("merge", p("M.safetensors"), p("one/M.safetensors"), rawA, metaA)
    raw, _ = read_raw(p("M.safetensors"))
    check(raw["embed.weight"] != rawB["embed.weight"], "merge: the other tensors are not B's")
    check("differ" not in r.stderr, "merge: same heads, no warning: %s" % r.stderr)

# ---- the default layer of the same file: layer L1 passes through
r = run("align", p("A.safetensors"), p("B.safetensors"), "-o", p("Bal0.safetensors"))
check(r.returncode == 0, "align --layer moe: %s" % r.stderr)
if r.returncode == 0:
    raw, _ = read_raw(p("Bal0.safetensors"))
    check(all(raw.get(k) == rawB[k] for k in rawB if in_layer(k)),
          "align layer moe: layer %s byte-identical to B's" % L1)
    check(any(raw.get(k) != rawB[k] for k in rawB if k.startswith("moe.experts.")),
          "align layer moe: layer moe rewritten")

# ---- unknown tensors inside the chosen layer's namespace are dropped, with a warning
extra = np.arange(16, dtype="<f4")
itX = itA + [(L1 + ".experts.0.fc1.weight_scale", "F32", extra.shape, extra.tobytes()),
             (L1 + ".gate.temperature", "F32", (1,), np.array([2.0], "<f4").tobytes()),
             (L1 + "x.gate.weight", "F32", (1,), np.array([1.0], "<f4").tobytes())]
write_raw(p("X.safetensors"), itX, metaA)
r = run("scramble", p("X.safetensors"), "-o", p("XS.safetensors"), "--layer", L1)
check(r.returncode == 0, "scramble with unknown layer tensors: %s" % r.stderr)
if r.returncode == 0:
    raw, _ = read_raw(p("XS.safetensors"))
    check(L1 + ".experts.0.fc1.weight_scale" not in raw and L1 + ".gate.temperature" not in raw,
          "unknown tensors of the layer dropped")
    check(L1 + "x.gate.weight" in raw, "a tensor of a longer prefix is not the layer's: kept")
    check("warning" in r.stderr and "dropped 2 tensor" in r.stderr,
          "the drop is warned about: %r" % r.stderr)

# ---- a one-layer checkpoint gives the same bytes as before (no tensor added)
r = run("scramble", p("one/A.safetensors"), "-o", p("one/S2.safetensors"), "--seed", 5,
        "--translate", "--layer", L1)
check(r.returncode == 0, "scramble of the one-layer file: %s" % r.stderr)
if r.returncode == 0:
    with open(p("one/S.safetensors"), "rb") as f1, open(p("one/S2.safetensors"), "rb") as f2:
        check(f1.read() == f2.read(), "scramble is deterministic on a one-layer file")

shutil.rmtree(TMP, ignore_errors=True)
sys.exit(testutil.summary("test_passthrough"))
