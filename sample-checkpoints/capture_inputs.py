#!/usr/bin/env python3
"""capture_inputs.py - capture the hidden states entering one MoE block of a real
model, for `moescope eval/landscape --eval`.

    python3 capture_inputs.py --model mistralai/Mixtral-8x7B-v0.1 --layer 3 \\
        --text some.txt [--max-tokens 4096] -o inputs.safetensors

Runs the model (Hugging Face transformers, PyTorch) on the text with a forward
pre-hook on the MoE block of decoder layer L (the module whose output moescope
evaluates: `block_sparse_moe` for Mixtral / Granite, `mlp` for Qwen-MoE, OLMoE,
DeepSeek, JetMoE, GPT-OSS, `layer[-1].mlp` of an encoder block for Switch). The
hook sees the block's input after the layer's norm; every token's vector becomes a
row of `inputs` [N, d] (float32), written as safetensors (a file with just that
tensor is a complete moescope evaluation set, layer-only). Use the same inputs for
both checkpoints of a pair: capture them once, from either model (or from the
base model both were fine-tuned from).

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
    data = safetensors_bytes({"inputs": inputs}, metadata)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a Hugging Face model name or directory")
    ap.add_argument("--layer", type=int, required=True, help="the decoder layer L")
    ap.add_argument("--text", required=True, help="a UTF-8 text file to run the model on")
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    import torch  # only the capture itself needs them
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, torch_dtype="auto")
    model.eval()
    cap = InputCapture(max_rows=a.max_tokens)
    handle = find_moe_block(model, a.layer).register_forward_pre_hook(cap)
    with open(a.text, encoding="utf-8") as f:
        ids = tok(f.read(), return_tensors="pt").input_ids[:, : a.max_tokens]
    with torch.no_grad():
        model(ids)
    handle.remove()
    write_inputs(a.output, cap.inputs(), {"capture.model": a.model, "capture.layer": str(a.layer),
                                          "capture.text": os.path.basename(a.text)})
    print("wrote %s: inputs [%d, %d]" % ((a.output,) + cap.inputs().shape))


if __name__ == "__main__":
    sys.exit(main())
