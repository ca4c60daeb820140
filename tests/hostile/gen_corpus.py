#!/usr/bin/python3
"""gen_corpus.py - writes tests/hostile/corpus/*.safetensors: one valid file and malformed ones.

Run with Debian's python3 (numpy):  /usr/bin/python3 tests/hostile/gen_corpus.py
The output is deterministic; the files are committed. Besides the files it writes
tests/hostile/corpus/expected.tsv, read by tests/unit/test_safetensors.c:

    file <TAB> stage <TAB> substring

stage "open" means st_open must fail, "read" means st_open succeeds and reading every
tensor (st_read_f32 for float dtypes, st_read_i64 for integer ones) must fail, "ok"
means everything must succeed. The substring must appear in the error message.
Files found by fuzzing (tests/fuzz) are added to FUZZ_FOUND below by hand.
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")

# (file, stage, substring, description) - also the source of README.md
ENTRIES = []


def pad8(header: bytes) -> bytes:
    """Pad the header with spaces to a multiple of 8, as the reference implementation."""
    return header + b" " * ((8 - len(header) % 8) % 8)


def raw(name, data: bytes, stage, expect, what):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    ENTRIES.append((name, stage, expect, what))


def from_header(name, header, data: bytes, stage, expect, what, hlen=None):
    """header: a dict (dumped compactly) or already-encoded bytes/str."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    if isinstance(header, str):
        header = header.encode()
    header = pad8(header)
    n = len(header) if hlen is None else hlen
    raw(name, struct.pack("<Q", n) + header + data, stage, expect, what)


DT = {np.float32: "F32", np.float16: "F16", np.float64: "F64", np.int64: "I64", np.int32: "I32"}


def tensors(items, meta=None):
    """items: list of (name, ndarray or (dtype_str, shape, bytes)). Returns (header, data)."""
    header = {}
    if meta is not None:
        header["__metadata__"] = meta
    data = b""
    for name, arr in items:
        if isinstance(arr, tuple):
            dtype, shape, b = arr
        else:
            dtype, shape, b = DT[arr.dtype.type], list(arr.shape), arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    return header, data


def bf16(values):
    """float32 -> bfloat16 bytes by truncation (the test values are exact in bf16)."""
    a = np.asarray(values, dtype=np.float32).view(np.uint32) >> 16
    return a.astype("<u2").tobytes()


def main():
    os.makedirs(OUT, exist_ok=True)  # files are overwritten, fuzz-found ones kept

    # ---- the valid file: every readable dtype, metadata, an unaligned data section is
    # avoided by padding but the tensors themselves sit at odd offsets (F16 after 3 F16s)
    w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5) / 4  # exact in F32
    h16 = np.array([1.0, -2.0, 0.5, 65504.0, 6.103515625e-05, 5.960464477539063e-08, 0.0],
                   dtype=np.float16)  # max, min normal, min subnormal
    b16 = ("BF16", [2, 2], bf16([1.0, -3.5, 0.15625, 2.0**100]))
    lab = np.array([0, 3, 1, 2, 2], dtype=np.int64)
    lab32 = np.array([-1, 7], dtype=np.int32)
    d64 = np.array([[0.1, -1e-3], [1e20, 3.0]], dtype=np.float64)
    h, d = tensors([("moe.gate.weight", w), ("half", h16), ("brain", b16), ("labels", lab),
                    ("labels32", lab32), ("cost", d64), ("empty", np.zeros((0, 4), np.float32))],
                   meta={"moescope.router": "dense", "seed": "1"})
    from_header("valid.safetensors", h, d, "ok", "", "valid: F32, F16 (incl. subnormal), BF16, "
                "I64, I32, F64, an empty tensor, metadata")

    # ---- tiny valid inputs for the loaders (also fuzzing seeds, see tests/fuzz/run.sh)
    rng = np.random.default_rng(5)
    n, d, hdim, C = 2, 3, 4, 2
    items = [("moe.gate.weight", rng.standard_normal((n, d)).astype(np.float32)),
             ("moe.gate.bias", np.zeros(n, np.float32))]
    for i in range(n):
        items += [(f"moe.experts.{i}.fc1.weight", rng.standard_normal((hdim, d)).astype(np.float32)),
                  (f"moe.experts.{i}.fc1.bias", rng.standard_normal(hdim).astype(np.float32)),
                  (f"moe.experts.{i}.fc2.weight", rng.standard_normal((d, hdim)).astype(np.float32)),
                  (f"moe.experts.{i}.fc2.bias", rng.standard_normal(d).astype(np.float32))]
    items += [("head.out.weight", rng.standard_normal((C, d)).astype(np.float32)),
              ("head.out.bias", np.zeros(C, np.float32))]
    h, dd = tensors(items, meta={"moescope.router": "dense", "moescope.activation": "relu"})
    from_header("seed_model.safetensors", h, dd, "ok", "",
                "valid tiny model: n=2 experts, d=3, h=4, C=2 head (a fuzzing seed)")
    h, dd = tensors([("inputs", rng.standard_normal((5, d)).astype(np.float32)),
                     ("labels", np.array([0, 1, 1, 0, 1], np.int64))])
    from_header("seed_eval.safetensors", h, dd, "ok", "",
                "valid tiny evaluation set: inputs [5, 3], labels [5] (a fuzzing seed)")
    h, dd = tensors([("cost", np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]], np.float64))])
    from_header("seed_cost.safetensors", h, dd, "ok", "", "valid 3x3 cost matrix for `lap`")

    # ---- header length and header text
    raw("empty.safetensors", b"", "open", "empty file", "0 bytes")
    raw("five_bytes.safetensors", b"\x08\x00\x00\x00\x00", "open", "too short",
        "5 bytes: not even the 8-byte header length")
    raw("header_past_end.safetensors", struct.pack("<Q", 1000) + b'{"a":1}', "open",
        "runs past the end of the file", "header length 1000 in a 15-byte file")
    raw("text_file.safetensors", b"# a README, not a checkpoint\n", "open",
        "not a safetensors file: it begins with text", "a text file named .safetensors")
    raw("header_huge.safetensors", struct.pack("<Q", 1 << 63) + b"{}      ", "open",
        "header length 9223372036854775808 runs past the end",
        "header length 2^63 (would overflow 8 + length)")
    raw("header_all_ones.safetensors", struct.pack("<Q", (1 << 64) - 1) + b"{}      ", "open",
        "runs past the end", "header length 2^64-1")
    from_header("header_not_json.safetensors", b'{"a": {"dtype": "F32", ', b"", "open",
                "not valid JSON", "header is cut-off JSON")
    from_header("header_garbage_after.safetensors", b'{} xyz', b"", "open",
                "not valid JSON", "bytes other than padding after the JSON object")
    from_header("header_not_object.safetensors", b"[1, 2, 3]", b"", "open", "not an object",
                "header JSON is an array")
    from_header("header_empty.safetensors", b"", b"", "open", "not valid JSON",
                "header length 0")

    # ---- tensor entries
    f32 = np.ones(4, np.float32).tobytes()  # 16 bytes
    one = lambda dt, shape, offs: {"dtype": dt, "shape": shape, "data_offsets": offs}
    from_header("truncated.safetensors", {"y": one("F32", [32], [0, 128])}, bytes(100), "open",
                "truncated: data section is 100 bytes, tensor 'y' ends at 128",
                "data section cut short (100 of 128 bytes)")
    from_header("offsets_outside.safetensors", {"w": one("F32", [4], [1000, 1016])}, f32, "open",
                "start outside the data section", "data_offsets point beyond the data")
    from_header("offsets_reversed.safetensors", {"w": one("F32", [0], [16, 0])}, f32, "open",
                "end before they begin", "data_offsets [16, 0]")
    from_header("offsets_arity.safetensors", {"w": one("F32", [4], [0])}, f32, "open",
                "data_offsets must be", "data_offsets with one entry")
    from_header("overlap.safetensors",
                {"a": one("F32", [4], [0, 16]), "b": one("F32", [4], [8, 24])}, bytes(24),
                "open", "overlap", "tensors a [0,16] and b [8,24] share bytes")
    from_header("shape_mismatch.safetensors", {"moe.gate.weight": one("F32", [4, 8], [0, 64])},
                bytes(64), "open",
                "data_offsets [0, 64] but shape [4, 8] of F32 needs 128 bytes",
                "shape [4,8] F32 needs 128 bytes, offsets give 64")
    from_header("unknown_dtype.safetensors", {"w": one("F33", [4], [0, 16])}, f32, "open",
                "unknown dtype 'F33'", "dtype F33")
    from_header("dtype_not_string.safetensors", {"w": one(4, [4], [0, 16])}, f32, "open",
                "dtype is not a string", "dtype is a number")
    from_header("negative_dim.safetensors", {"w": one("F32", [-4], [0, 16])}, f32, "open",
                "negative dimension", "shape [-4]")
    from_header("fractional_dim.safetensors", {"w": one("F32", [2.5], [0, 10])}, bytes(10),
                "open", "not a non-negative integer", "shape [2.5]")
    from_header("dim_overflow.safetensors",
                {"w": one("F32", [4294967296, 4294967296, 4294967296], [0, 16])}, f32, "open",
                "overflow", "shape [2^32, 2^32, 2^32]: element count overflows 64 bits")
    from_header("dim_too_large.safetensors", b'{"w":{"dtype":"F32","shape":[1e300],'
                b'"data_offsets":[0,16]}}', f32, "open", "dimension 1e+300 in shape is too large",
                "shape [1e300] (beyond 2^53, not exact in JSON doubles)")
    from_header("too_many_dims.safetensors", {"w": one("F32", [1] * 9 + [4], [0, 16])}, f32,
                "open", "dimensions, at most 8", "10 dimensions")
    from_header("missing_shape.safetensors", {"w": {"dtype": "F32", "data_offsets": [0, 16]}},
                f32, "open", "no shape", "entry without shape")
    from_header("entry_not_object.safetensors", {"w": [1, 2]}, f32, "open",
                "not a JSON object", "tensor entry is an array")
    from_header("duplicate_name.safetensors",
                b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                b'"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}', f32, "open",
                "'w' appears twice", "two tensors named w")
    from_header("metadata_nonstring.safetensors",
                {"__metadata__": {"moescope.top_k": 2}, "w": one("F32", [4], [0, 16])}, f32,
                "open", "key 'moescope.top_k' has a non-string value",
                "__metadata__ value is a number")
    from_header("metadata_duplicate_key.safetensors",
                b'{"__metadata__":{"seed":"1","a":"x","seed":"2"},'
                b'"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', f32, "open",
                "key 'seed' appears twice", "__metadata__ key seed given twice")
    from_header("metadata_twice.safetensors",
                b'{"__metadata__":{},"__metadata__":{},'
                b'"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', f32, "open",
                "__metadata__ appears twice", "two __metadata__ objects")
    from_header("metadata_not_object.safetensors",
                {"__metadata__": "dense", "w": one("F32", [4], [0, 16])}, f32, "open",
                "__metadata__ is not a JSON object", "__metadata__ is a string")

    # ---- values: st_open succeeds, reading fails
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan  # flat index 6
    h, d = tensors([("moe.gate.weight", x)])
    from_header("nan_f32.safetensors", h, d, "read", "element 6 [1, 2]",
                "NaN in F32 at [1, 2] (flat 6)")
    y = np.ones((2, 3), np.float16)
    y[1, 0] = np.inf  # flat index 3
    h, d = tensors([("half", y)])
    from_header("inf_f16.safetensors", h, d, "read", "non-finite value inf at element 3 [1, 0]",
                "+Inf in F16 at [1, 0]")
    h, d = tensors([("b", ("BF16", [3], bf16([1.0, 2.0, 0.0])[:4] + b"\xc0\xff"))])
    from_header("nan_bf16.safetensors", h, d, "read", "element 2 [2]", "NaN in BF16 at [2]")
    z = np.array([1.0, 1e300], np.float64)
    h, d = tensors([("cost", z)])
    from_header("f64_overflow.safetensors", h, d, "read", "float32-overflowing",
                "F64 value 1e300 does not fit in float32")
    h, d = tensors([("mask", ("U8", [4], b"\x01\x00\x01\x01"))])
    from_header("unsupported_u8.safetensors", h, d, "read", "unsupported dtype U8",
                "known safetensors dtype that moescope does not read")

    # fuzz-found inputs, added by hand: (file, stage, substring, description)
    for e in FUZZ_FOUND:
        ENTRIES.append(e)

    with open(os.path.join(OUT, "expected.tsv"), "w") as f:
        f.write("# file\tstage\texpected substring (written by tests/hostile/gen_corpus.py)\n")
        for name, stage, expect, _ in ENTRIES:
            f.write(f"{name}\t{stage}\t{expect}\n")
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("# tests/hostile/corpus - safetensors files for the reader's tests\n\n"
                "Generated by `tests/hostile/gen_corpus.py` (deterministic; committed). "
                "`expected.tsv` holds, for each file, the stage that must fail (`open`: "
                "st_open; `read`: reading the tensors; `ok`: nothing fails) and a substring "
                "of the expected message; tests/unit/test_safetensors.c checks every line, and "
                "tests/fuzz uses the directory as its seed corpus.\n\n"
                "| file | stage | what is wrong |\n|---|---|---|\n")
        for name, stage, _, what in ENTRIES:
            f.write(f"| `{name}` | {stage} | {what} |\n")
        f.write(HOSTILE_README)
    print(f"gen_corpus: wrote {len(ENTRIES)} files to {OUT}", file=sys.stderr)


FUZZ_FOUND = []

# the section for the files of corpus/gen_hostile.py (run at the end of main)
HOSTILE_README = """
## Hostile models and limits (`gen_hostile.py`)

Written by `tests/hostile/corpus/gen_hostile.py` (run it after `tests/hostile/gen_corpus.py`, which
rewrites `expected.tsv`; it appends its rows when missing). `models.tsv` holds, for each,
the `moescope` command that must refuse it and a substring of the message;
`tests/hostile/test_faults.sh` runs them (under ASan also with every allocation capped at 4 MiB).

| file | stage | what is wrong |
|---|---|---|
| `model_declared_experts.safetensors` | ok (model: refused) | gate [256, 1] and one real expert of h = 4096; experts 1..255 are 1x1 stubs (256 full experts would be 12 MiB from a 79 KiB file) |
| `model_declared_shared.safetensors` | ok (model: refused) | one expert of h = 4096 and 256 shared experts that are 1x1 stubs |
| `gate_2_40.safetensors` | open | gate shape [1, 2^40] F32 in a 112-byte file |
| `eval_2_40.safetensors` | open | evaluation set with inputs [2^40, 1] in a tiny file |
"""


if __name__ == "__main__":
    main()
    # expected.tsv was just rewritten: add back the rows of the hostile-model corpus
    import runpy
    runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "gen_hostile.py"),
                   run_name="__main__")
