#!/usr/bin/python3
"""gen_hostile.py - hostile checkpoints that are valid safetensors but lie about the
model: they declare far more than they hold, so a loader that allocates before it has
checked every shape would reserve memory out of proportion to the file.

Run with Debian's python3:  /usr/bin/python3 tests/hostile/corpus/gen_hostile.py
Deterministic. Writes the files below into tests/hostile/corpus/, appends their rows to
expected.tsv (safetensors-level stage, read by tests/unit/test_safetensors.c) when missing,
and writes models.tsv (file <TAB> command <TAB> substring of the expected message),
read by tests/hostile/test_faults.sh, which runs `moescope COMMAND FILE` on each and also checks,
under AddressSanitizer, that no single allocation exceeds a few MiB.
(tests/hostile/gen_corpus.py rewrites expected.tsv: run this script after it.)

Round two (issue 17): `gen_hostile.py make OUTDIR` writes larger hostile files into
OUTDIR at test time (tests/hostile/test_hostile.sh), so none is checked in:
  many_experts      99,000 'moe.experts.<i>.fc1.weight' names, gate of n = 2
  meta_400k         a valid checkpoint with 400,000 metadata keys (over the cap)
  meta_90k, meta_90k_b  valid checkpoints (seeds 1, 2) with 90,000 metadata keys
  nul_raw           metadata key "m<NUL>oescope.activation" (a raw NUL byte)
  nul_escaped       metadata key "moescope.activation\u0000x"
  h_2_15            n = 2, d = 1, h = 2^15 (262 KB): an h x h matrix would be 8 GiB
  h_2_20            n = 2, d = 1, h = 2^20, F16 (8 MB)
  n4096_a, n4096_b  n = 4096, d = 2, h = 1 (seeds 1, 2), and n4096_eval
  n1024_a, n1024_b  the same with n = 1024; n80: n = 80, d = 3, h = 2
  big_1e18, big_3e38 and big_b, big_eval   fc1 of expert 2 scaled to 1e18 / 3.4e38
  big_head          a head whose weights reach 3.4e38
  lap_1e308         a 3 x 3 F64 cost of 1e308 (the optimal total overflows)
  lap_sparse        cost [20000, 20000] F32 of zeros, 1.6 GB, sparse (holes)
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_st(name, tensors, meta=None):
    """tensors: list of (name, dtype, shape, bytes). Returns the path."""
    header, data, off = {}, b"", 0
    for tn, dt, shape, raw in tensors:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def f32(vals):
    return struct.pack("<%df" % len(vals), *vals)


def declared(name, kind, n, h):
    """Gate of n rows (d = 1) and one real expert of width h; the other n - 1 experts
    (kind "experts") or n shared experts (kind "shared") are 1x1 stubs."""
    t = [("moe.gate.weight", "F32", [n if kind == "experts" else 1, 1], f32([0.5] * (n if kind == "experts" else 1)))]
    t.append(("moe.experts.0.fc1.weight", "F32", [h, 1], f32([0.25] * h)))
    t.append(("moe.experts.0.fc2.weight", "F32", [1, h], f32([0.125] * h)))
    stubs = range(1, n) if kind == "experts" else range(n)
    for i in stubs:
        for w in ("fc1", "fc2"):
            t.append(("moe.%s.%d.%s.weight" % (kind, i, w), "F32", [1, 1], f32([1.0])))
    write_st(name, t)


# (file, safetensors stage, its substring, moescope command, model-level substring, what)
ENTRIES = [
    ("model_declared_experts.safetensors", "ok", "", "info",
     "tensor 'moe.experts.1.fc1.weight' has shape [1, 1], expected [4096, 1]",
     "gate [256, 1] and expert 0 of h = 4096, experts 1..255 are 1x1 stubs: "
     "256 full experts would be 12 MiB from a 79 KiB file"),
    ("model_declared_shared.safetensors", "ok", "", "info",
     "tensor 'moe.shared.0.fc1.weight' has shape [1, 1], expected [4096, 1]",
     "one expert of h = 4096 and 256 shared experts that are 1x1 stubs"),
    ("gate_2_40.safetensors", "open", "needs 4398046511104 bytes", "info",
     "needs 4398046511104 bytes",
     "gate shape [1, 2^40] F32 in a 100-byte file: refused before any allocation"),
    ("eval_2_40.safetensors", "open", "needs 4398046511104 bytes", "eval",
     "needs 4398046511104 bytes",
     "evaluation set with inputs [2^40, 1] in a tiny file"),
]


def main():
    declared("model_declared_experts.safetensors", "experts", 256, 4096)
    declared("model_declared_shared.safetensors", "shared", 256, 4096)
    write_st("gate_2_40.safetensors", [("moe.gate.weight", "F32", [1, 1 << 40], f32([1.0] * 4))])
    write_st("eval_2_40.safetensors", [("inputs", "F32", [1 << 40, 1], f32([1.0] * 4)),
                                       ("labels", "I64", [1], struct.pack("<q", 0))])
    exp = os.path.join(HERE, "expected.tsv")
    have = set()
    with open(exp) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                have.add(line.split("\t")[0])
    with open(exp, "a") as f:
        for name, stage, sub, _, _, _ in ENTRIES:
            if name not in have:
                f.write("%s\t%s\t%s\n" % (name, stage, sub))
    with open(os.path.join(HERE, "models.tsv"), "w") as f:
        f.write("# file\tcommand\texpected substring (written by tests/hostile/corpus/gen_hostile.py)\n")
        for name, _, _, cmd, sub, _ in ENTRIES:
            f.write("%s\t%s\t%s\n" % (name, cmd, sub))


def write_to(path, tensors, meta=None, raw_header=None):
    """Like write_st, to any path; raw_header replaces the JSON text (bytes)."""
    header, data, off = {}, [], 0
    for tn, dt, shape, raw in tensors:
        header[tn] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data.append(raw)
        off += len(raw)
    if meta:
        header["__metadata__"] = meta
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for raw in data:
            f.write(raw)


def layer(n, d, h, seed, scale=None):
    """A dense MoE layer (no head) with biases; scale=(expert, value) multiplies that
    expert's fc1.weight so its values reach value."""
    import random
    rnd = random.Random(seed)
    vals = lambda k: [rnd.uniform(-1, 1) for _ in range(k)]
    t = [("moe.gate.weight", "F32", [n, d], f32(vals(n * d))),
         ("moe.gate.bias", "F32", [n], f32(vals(n)))]
    for i in range(n):
        w1 = vals(h * d)
        if scale and scale[0] == i:
            w1 = [scale[1] * (0.5 + abs(v) / 2) for v in w1]
        t += [("moe.experts.%d.fc1.weight" % i, "F32", [h, d], f32(w1)),
              ("moe.experts.%d.fc1.bias" % i, "F32", [h], f32(vals(h))),
              ("moe.experts.%d.fc2.weight" % i, "F32", [d, h], f32(vals(d * h))),
              ("moe.experts.%d.fc2.bias" % i, "F32", [d], f32(vals(d)))]
    return t


def make(out):
    p = lambda name: os.path.join(out, name + ".safetensors")
    # 99,000 expert names: every command looked each index up linearly (O(n^2))
    write_to(p("many_experts"), [("moe.gate.weight", "F32", [2, 1], f32([0.5, -0.5]))] +
             [("moe.experts.%d.fc1.weight" % i, "F32", [1, 1], f32([1.0])) for i in range(99000)])
    small = layer(4, 8, 16, 1)
    write_to(p("meta_400k"), small, {"k%06d" % i: "v" for i in range(400000)})
    write_to(p("meta_90k"), small, {"k%06d" % i: "v%d" % i for i in range(90000)})
    write_to(p("meta_90k_b"), layer(4, 8, 16, 2), {"k%06d" % i: "w%d" % i for i in range(90000)})
    # NUL in a key: cJSON keeps it, C strings would read the key as "m"
    good = json.dumps({"moe.gate.weight": {"dtype": "F32", "shape": [1, 1],
                                           "data_offsets": [0, 4]}}, separators=(",", ":"))[:-1]
    raw = good.encode() + b',"__metadata__":{"m\x00oescope.activation":"gelu"}}'
    g1 = [("moe.gate.weight", "F32", [1, 1], f32([1.0]))]
    write_to(p("nul_raw"), g1, raw_header=raw)
    write_to(p("nul_escaped"), g1, raw_header=good.encode() +
             b',"__metadata__":{"moescope.activation\\u0000x":"gelu"}}')
    write_to(p("h_2_15"), layer(2, 1, 1 << 15, 3))
    h20 = 1 << 20
    half = struct.pack("<H", 0x3800) * h20  # 0.5 in F16
    t = [("moe.gate.weight", "F32", [2, 1], f32([0.5, -0.5]))]
    for i in range(2):
        t += [("moe.experts.%d.fc1.weight" % i, "F16", [h20, 1], half),
              ("moe.experts.%d.fc2.weight" % i, "F16", [1, h20], half)]
    write_to(p("h_2_20"), t)
    write_to(p("n1024_a"), layer(1024, 2, 1, 1))
    write_to(p("n1024_b"), layer(1024, 2, 1, 2))
    write_to(p("n80"), layer(80, 3, 2, 7))
    write_to(p("n4096_a"), layer(4096, 2, 1, 1))
    write_to(p("n4096_b"), layer(4096, 2, 1, 2))
    import random
    rnd = random.Random(5)
    zeros = lambda k: ("labels", "I64", [k], struct.pack("<%dq" % k, *([0] * k)))
    write_to(p("n4096_eval"), [("inputs", "F32", [64, 2], f32([rnd.uniform(-1, 1) for _ in range(128)])),
                               zeros(64)])
    write_to(p("big_1e18"), layer(4, 8, 16, 1, (2, 1e18)))
    write_to(p("big_3e38"), layer(4, 8, 16, 1, (2, 3.4e38)))
    write_to(p("big_b"), layer(4, 8, 16, 2))
    head = [("head.out.weight", "F32", [3, 8], f32([3.4e38 * (0.5 + (k % 5) / 10) for k in range(24)])),
            ("head.out.bias", "F32", [3], f32([0.0, 0.1, -0.1]))]
    write_to(p("big_head"), layer(4, 8, 16, 1) + head)
    write_to(p("big_eval"), [("inputs", "F32", [32, 8], f32([rnd.uniform(-1, 1) for _ in range(256)])),
                             zeros(32)])
    write_to(p("lap_1e308"), [("cost", "F64", [3, 3], struct.pack("<9d", *([1e308] * 9)))])
    # 20000 x 20000 F32 zeros without writing them: the header, then a hole to the end
    n = 20000
    hdr = json.dumps({"cost": {"dtype": "F32", "shape": [n, n], "data_offsets": [0, 4 * n * n]}},
                     separators=(",", ":")).encode()
    hdr += b" " * ((8 - len(hdr) % 8) % 8)
    with open(p("lap_sparse"), "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        f.truncate(8 + len(hdr) + 4 * n * n)


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        main()
