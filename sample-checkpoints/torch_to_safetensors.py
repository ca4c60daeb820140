#!/usr/bin/env python3
"""torch_to_safetensors.py - a PyTorch checkpoint (torch.save: a state dict, a
pytorch_model.bin, or a dict holding one under "state_dict" / "model") as the
safetensors file moescope reads.

    python3 sample-checkpoints/torch_to_safetensors.py model.pt -o model.safetensors
    python3 sample-checkpoints/torch_to_safetensors.py hf_folder/pytorch_model.bin \\
        -o hf_folder/model.safetensors

Needs only PyTorch (Debian's python3-torch, with the numpy it brings; it has no
safetensors module, so the writer is stlib.py beside this script, the one the samples
are written with: an 8-byte little-endian header length, the JSON header with each
tensor's dtype, shape and byte offsets, then the raw bytes). The file is loaded with
torch.load(weights_only=True): no code from the checkpoint runs.

Names: DataParallel's "module." prefix is dropped; every other name is kept, so
Hugging Face names (model.layers.3.block_sparse_moe.experts.0.w1.weight) stay what
moescope's families read, and a layer of your own (blocks.0.moe.gate.weight, ...)
is then opened with `moescope info model.safetensors`, which lists the MoE layers it
finds and the --layer that opens each. A GPT-2 Conv1D weight is stored (in, out):
moescope reads the Hugging Face GPT-2 layout as it is (c_fc, c_proj), so keep its
names; a Linear of your own is (out, in). Written to a temporary file, renamed into
place; an existing output is refused unless --force, and the input (or another name
for it) always.
"""
import argparse
import os
import sys
import tempfile

import stlib

DTYPES = {  # torch dtype name -> safetensors dtype
    "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}


def state_dict_of(obj):
    """the tensor dict inside what torch.load returned"""
    import torch
    for key in ("state_dict", "model", "model_state_dict", "module"):
        if isinstance(obj, dict) and key in obj and isinstance(obj[key], dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict):
        raise ValueError("holds a %s, not a state dict (torch.save(model.state_dict(), ...) makes one)"
                         % type(obj).__name__)
    out = {}
    for k, v in obj.items():
        if isinstance(v, torch.Tensor):
            out[k[len("module."):] if k.startswith("module.") else k] = v
    if not out:
        raise ValueError("holds no tensors")
    return out


def safetensors_bytes(tensors, metadata):
    """the whole file: header length, JSON header, the tensors' bytes in name order"""
    import torch
    items = []
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        dt = DTYPES.get(str(t.dtype).replace("torch.", ""))
        if dt is None:
            raise ValueError("tensor '%s' has dtype %s, which safetensors cannot hold" % (name, t.dtype))
        # numpy has no bfloat16: its bytes through int16
        items.append((name, dt, tuple(t.shape), (t.view(torch.int16) if dt == "BF16" else t).numpy().tobytes()))
    return stlib.st_bytes(items, metadata)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="a torch.save file (.pt, .pth, .bin)")
    ap.add_argument("-o", "--output", required=True, help="the safetensors file to write")
    ap.add_argument("--force", action="store_true", help="replace an existing output")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch_to_safetensors.py: needs PyTorch (Debian: apt-get install python3-torch)", file=sys.stderr)
        return 1
    if os.path.isdir(a.output):
        print("torch_to_safetensors.py: %s is a directory; name the file to write" % a.output, file=sys.stderr)
        return 1
    if os.path.exists(a.output) and os.path.exists(a.input) and os.path.samefile(a.input, a.output):
        print("torch_to_safetensors.py: %s is the input %s (another name for it counts too); --force never "
              "replaces the checkpoint being converted: write elsewhere" % (a.output, a.input), file=sys.stderr)
        return 1
    if os.path.exists(a.output) and not a.force:
        print("torch_to_safetensors.py: %s exists; --force replaces it" % a.output, file=sys.stderr)
        return 1
    try:
        obj = torch.load(a.input, map_location="cpu", weights_only=True)
        data = safetensors_bytes(state_dict_of(obj), {"format": "pt", "converted_from": os.path.basename(a.input)})
    except Exception as e:  # noqa: BLE001 - one message naming the file
        print("torch_to_safetensors.py: %s: %s" % (a.input, e), file=sys.stderr)
        return 1
    d = os.path.dirname(os.path.abspath(a.output))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(a.output) + ".tmp", dir=d)
    except OSError as e:
        print("torch_to_safetensors.py: %s: cannot write there (%s)" % (a.output, e.strerror), file=sys.stderr)
        return 1
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, a.output)
    except OSError as e:  # a full disk: the temporary goes, an existing output stays as it was
        os.unlink(tmp)
        print("torch_to_safetensors.py: %s: %s" % (a.output, e.strerror), file=sys.stderr)
        return 1
    print("wrote %s" % a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
