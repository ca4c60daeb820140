#!/usr/bin/python3
"""gen_hostile.py - hostile checkpoints that are valid safetensors but lie about the
model: they declare far more than they hold, so a loader that allocates before it has
checked every shape would reserve memory out of proportion to the file.

Run with Debian's python3:  /usr/bin/python3 tests/corpus/gen_hostile.py
Deterministic. Writes the files below into tests/corpus/, appends their rows to
expected.tsv (safetensors-level stage, read by tests/test_safetensors.c) when missing,
and writes models.tsv (file <TAB> command <TAB> substring of the expected message),
read by tests/test_faults.sh, which runs `moescope COMMAND FILE` on each and also checks,
under AddressSanitizer, that no single allocation exceeds a few MiB.
(tests/gen_corpus.py rewrites expected.tsv: run this script after it.)
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
        f.write("# file\tcommand\texpected substring (written by tests/corpus/gen_hostile.py)\n")
        for name, _, _, cmd, sub, _ in ENTRIES:
            f.write("%s\t%s\t%s\n" % (name, cmd, sub))


if __name__ == "__main__":
    main()
