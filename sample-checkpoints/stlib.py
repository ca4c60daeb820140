"""stlib.py - the one safetensors reader and writer of the sample scripts (gptlib,
vitlib, convert_digits.py, to_mixtral.py, torch_to_safetensors.py; numpy only).

A file is an 8-byte little-endian header length, the JSON header (compact, padded
with spaces to a multiple of 8) and the tensors' bytes in the header's order. The
scripts differ only in where the header puts "__metadata__" and whether its keys are
sorted; each keeps the layout its committed files were written with, so a remake is
byte for byte the same.

    items: [(name, dtype, shape, raw bytes)] in file order
    st_bytes(items, metadata=None, meta_first=False, sort_keys=False) -> bytes
    st_write(path, items, ...)        the same, through a temporary file renamed into place
    arrays(tensors, sort=True)        {name: ndarray} (or pairs) -> items (F32/F16/F64/I32/I64/U8)
    st_read(path)                     -> ({name: ndarray}, metadata)
"""
import json
import os
import struct

import numpy as np

DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32, "I64": np.int64,
      "U8": np.uint8}
NAME = {np.dtype(v): k for k, v in DT.items()}


def arrays(tensors, sort=True):
    """items of numpy arrays: a dict (names sorted unless sort=False) or (name, array) pairs
    in their order; little-endian, C order"""
    pairs = sorted(tensors.items()) if isinstance(tensors, dict) and sort else \
        list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    out = []
    for name, a in pairs:
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        out.append((name, NAME[a.dtype], a.shape, a.tobytes()))
    return out


def st_bytes(items, metadata=None, meta_first=False, sort_keys=False):
    """The whole file. metadata None: no "__metadata__"; else its values as given (str
    them first where they are not strings), placed first (meta_first), or last, or
    where sorting puts it (sort_keys: every key of the header sorted)."""
    header, off = {}, 0
    if metadata is not None and meta_first:
        header["__metadata__"] = metadata
    for name, dt, shape, raw in items:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    if metadata is not None and not meta_first:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":"), sort_keys=sort_keys).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(it[3] for it in items)


def st_write(path, items, metadata=None, meta_first=False, sort_keys=False):
    """st_bytes into path.tmp, then renamed onto path"""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(st_bytes(items, metadata, meta_first, sort_keys))
    os.replace(tmp, path)


def st_read(path):
    """{name: ndarray} (a copy, native order) and the metadata of one file"""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for k, v in header.items():
        a, b = v["data_offsets"]
        dt = np.dtype(DT[v["dtype"]]).newbyteorder("<")
        out[k] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=dt).reshape(v["shape"]).astype(DT[v["dtype"]])
    return out, meta
