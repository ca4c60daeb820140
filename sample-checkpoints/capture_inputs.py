#!/usr/bin/env python3
"""capture_inputs.py - capture the hidden states entering one MoE block of a real
model, for `moescope eval/landscape --eval`, or every MoE block's at once, for
`moescope geometry`.

    python3 capture_inputs.py --model mistralai/Mixtral-8x7B-v0.1 --layer 3 \\
        --text some.txt [--max-tokens 4096] -o inputs.safetensors
    python3 capture_inputs.py --model allenai/OLMoE-1B-7B-0924 --layers all \\
        --text some.txt -o capture.safetensors

Runs the model (Hugging Face transformers, PyTorch) on the text with a forward
pre-hook on the MoE block of decoder layer L (the module whose output moescope
evaluates: `block_sparse_moe` for Mixtral / Granite, `mlp` for Qwen-MoE, OLMoE,
DeepSeek, JetMoE, GPT-OSS, `layer[-1].mlp` of an encoder block for Switch). The
hook sees the block's input after the layer's norm; every token's vector becomes a
row of `inputs` [N, d] (float32), written as safetensors (a file with just that
tensor is a complete moescope evaluation set, layer-only). Use the same inputs for
both checkpoints of a pair: capture them once, from either model (or from the
base model both were fine-tuned from).

--layers all (or a list, "0,4,8") hooks every MoE block in one forward pass and
writes one tensor per block, `inputs.L` [N, d], all of the same N tokens (what
`moescope geometry CKPT --eval capture.safetensors` reads); the metadata
capture.layers lists them. "all" takes every decoder layer whose MoE module has
experts (dense layers, such as DeepSeek's first, are left out).

Only the capture needs torch and transformers; the hook and the writer below are
plain Python + numpy, so they can be tested without them (tests/commands/test_capture.py).
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def as_numpy(t):
    """A torch tensor (any dtype, any device) or an array -> float32 numpy."""
    if hasattr(t, "detach"):
        t = t.detach().float().cpu().numpy()
    return np.asarray(t, dtype=np.float32)


class InputCapture:
    """A forward pre-hook: `module.register_forward_pre_hook(InputCapture(...))`.
    Keeps the first positional argument (hidden states [..., d]) as rows, up to
    max_rows in all."""

    def __init__(self, max_rows=None):
        self.rows = []
        self.count = 0
        self.max_rows = max_rows

    def __call__(self, module, args, kwargs=None):
        x = args[0] if args else (kwargs or {}).get("hidden_states")
        if x is None:
            raise ValueError("the MoE block was called without hidden states")
        x = as_numpy(x)
        x = x.reshape(-1, x.shape[-1])
        if self.max_rows is not None:
            x = x[: max(0, self.max_rows - self.count)]
        if len(x):
            self.rows.append(x)
            self.count += len(x)
        return None  # the block's input is left as it is

    def inputs(self):
        if not self.rows:
            raise ValueError("nothing captured: the hook never ran")
        return np.concatenate(self.rows, axis=0)


def safetensors_bytes(tensors, metadata=None):
    """{name: float32 array} -> the bytes of a safetensors file."""
    header = {"__metadata__": dict(metadata or {})}
    blobs, off = [], 0
    for name, x in tensors.items():
        b = np.ascontiguousarray(x, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write_inputs(path, inputs, metadata=None):
    """`inputs` [N, d] to path, atomically (a temporary file renamed into place)."""
    write_tensors(path, {"inputs": inputs}, metadata)


def write_layers(path, captures, metadata=None):
    """{L: InputCapture} -> `inputs.L` [N, d] for every L, atomically; every layer must
    have captured the same number of tokens."""
    t = {"inputs.%d" % L: c.inputs() for L, c in sorted(captures.items())}
    counts = {k: len(v) for k, v in t.items()}
    if len(set(counts.values())) != 1:
        raise ValueError("the layers captured different numbers of tokens: %s" % counts)
    meta = dict(metadata or {})
    meta["capture.layers"] = ",".join(str(L) for L in sorted(captures))
    write_tensors(path, t, meta)


def write_tensors(path, tensors, metadata=None):
    data = safetensors_bytes(tensors, metadata)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def find_moe_block(model, layer):
    """The MoE module of decoder layer `layer` (see the module docstring)."""
    base = getattr(model, "model", model)
    layers = getattr(base, "layers", None)
    if layers is not None:
        blk = layers[layer]
        for name in ("block_sparse_moe", "mlp", "feed_forward"):
            if hasattr(blk, name):
                return getattr(blk, name)
        raise ValueError("layer %d has no block_sparse_moe / mlp / feed_forward module" % layer)
    enc = getattr(model, "encoder", None)
    if enc is not None and hasattr(enc, "block"):  # Switch: encoder.block.L.layer[-1].mlp
        return enc.block[layer].layer[-1].mlp
    raise ValueError("cannot find the decoder layers of %s" % type(model).__name__)


def is_moe(module):
    """an MoE module (experts, or Switch's router), not a dense MLP"""
    return hasattr(module, "experts") or hasattr(module, "router")


def moe_layers(model, spec):
    """the decoder layers --layers names: "all" (every layer with an MoE module) or "0,4,8"."""
    if spec != "all":
        return [int(x) for x in spec.split(",") if x.strip()]
    base = getattr(model, "model", model)
    layers = getattr(base, "layers", None)
    if layers is None:
        enc = getattr(model, "encoder", None)
        layers = enc.block if enc is not None and hasattr(enc, "block") else []
    out = []
    for L in range(len(layers)):
        try:
            if is_moe(find_moe_block(model, L)):
                out.append(L)
        except (ValueError, AttributeError, IndexError):
            pass
    if not out:
        raise ValueError("no MoE layer found in %s" % type(model).__name__)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a Hugging Face model name or directory")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--layer", type=int, help="the decoder layer L (writes `inputs`)")
    which.add_argument("--layers", help='"all" or "L,L,...": every named MoE layer in one pass (writes inputs.L)')
    ap.add_argument("--text", required=True, help="a UTF-8 text file to run the model on")
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    import torch  # only the capture itself needs them
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype="auto")
    model.eval()
    layers = [a.layer] if a.layers is None else moe_layers(model, a.layers)
    caps = {L: InputCapture(max_rows=a.max_tokens) for L in layers}
    handles = [find_moe_block(model, L).register_forward_pre_hook(caps[L]) for L in layers]
    with open(a.text, encoding="utf-8") as f:
        ids = tok(f.read(), return_tensors="pt").input_ids[:, : a.max_tokens]
    with torch.no_grad():
        model(ids)
    for h in handles:
        h.remove()
    meta = {"capture.model": a.model, "capture.text": os.path.basename(a.text)}
    if a.layers is None:
        meta["capture.layer"] = str(a.layer)
        write_inputs(a.output, caps[a.layer].inputs(), meta)
        print("wrote %s: inputs [%d, %d]" % ((a.output,) + caps[a.layer].inputs().shape))
    else:
        write_layers(a.output, caps, meta)
        print("wrote %s: inputs.L [%d, %d] for the %d MoE layers %s" % (
            (a.output,) + caps[layers[0]].inputs().shape + (len(layers), ",".join(map(str, layers)))))


if __name__ == "__main__":
    sys.exit(main())
