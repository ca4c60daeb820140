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

Names: the wrappers' prefixes are dropped - DataParallel's and
DistributedDataParallel's "module.", torch.compile's "_orig_mod." (in any nesting),
and a "model." around a whole Hugging Face layout (a Lightning module's
model.transformer.h.0..., model.model.layers.0...); the script says what it dropped.
Every other name is kept, so Hugging Face names
(model.layers.3.block_sparse_moe.experts.0.w1.weight) stay what moescope's families
read. A layer of your own (blocks.0.moe.gate.weight, ...) is opened with --layer and
its prefix: the script lists the MoE layers it sees (a '*.gate.weight') with the
command that opens each. A GPT-2 Conv1D weight is stored (in, out):
moescope reads the Hugging Face GPT-2 layout as it is (c_fc, c_proj), so keep its
names; a Linear of your own is (out, in). The routing is metadata of the file
(moescope.router, moescope.top_k): --top-k K for a top-k router, --dense for a dense
softmax; without either moescope reads a layer of your own as dense (and says so at every
load), so a top-2 model would be evaluated as another function. Hugging Face layouts take
theirs from config.json. Written to a temporary file, renamed into
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


WRAPPERS = (("module.", "DataParallel / DistributedDataParallel"), ("_orig_mod.", "torch.compile"))
# what a Hugging Face layout's names begin with: a "model." around them is a wrapper's
HF_ROOTS = ("transformer.", "vit.", "model.", "lm_head.", "classifier.")


def unwrap_names(names):
    """{old: new} with the wrappers' prefixes dropped, and what was dropped (messages)"""
    cur, said = {k: k for k in names}, []
    while True:
        for p, why in WRAPPERS:
            hits = [k for k, v in cur.items() if v.startswith(p)]
            if hits:
                for k in hits:
                    cur[k] = cur[k][len(p):]
                said.append("'%s' (%s) from %d names" % (p, why, len(hits)))
                break
        else:
            vals = list(cur.values())
            if vals and all(v.startswith("model.") for v in vals) and \
                    any(v[len("model."):].startswith(HF_ROOTS) for v in vals):
                cur = {k: v[len("model."):] for k, v in cur.items()}
                said.append("'model.' around a Hugging Face layout from %d names" % len(vals))
                continue
            break
    seen = {}
    for k, v in cur.items():
        if v in seen:
            raise ValueError("'%s' and '%s' are both '%s' without their prefixes" % (seen[v], k, v))
        seen[v] = k
    return cur, said


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
    tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not tensors:
        raise ValueError("holds no tensors")
    names, said = unwrap_names(tensors)
    return {names[k]: v for k, v in tensors.items()}, said


def layers_of(names):
    """the prefixes of the MoE layers among names (each has a '<prefix>.gate.weight')"""
    return sorted(n[:-len(".gate.weight")] for n in names if n.endswith(".gate.weight"))


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


def routing_metadata(a, sd):
    """moescope.router / moescope.top_k for --top-k / --dense, checked against every
    MoE layer's n (the rows of its gate); raises ValueError"""
    if a.top_k is None and not a.dense:
        return {}
    if a.top_k is not None:
        for p in layers_of(sd):
            n = sd[p + ".gate.weight"].shape[0]
            if not 1 <= a.top_k <= n:
                raise ValueError("--top-k %d: layer %s has n = %d experts (K must be 1..n)" % (a.top_k, p, n))
        return {"moescope.router": "topk", "moescope.top_k": str(a.top_k)}
    return {"moescope.router": "dense"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="a torch.save file (.pt, .pth, .bin)")
    ap.add_argument("-o", "--output", required=True, help="the safetensors file to write")
    ap.add_argument("--force", action="store_true", help="replace an existing output")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--top-k", type=int, metavar="K", help="the layers route each input to their top K experts "
                   "(metadata moescope.router = topk, moescope.top_k = K)")
    g.add_argument("--dense", action="store_true", help="the layers are dense softmax routers (metadata "
                   "moescope.router = dense: moescope then reads them without a warning)")
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
        sd, said = state_dict_of(obj)
        meta = {"format": "pt", "converted_from": os.path.basename(a.input)}
        meta.update(routing_metadata(a, sd))
        data = safetensors_bytes(sd, meta)
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
    print("wrote %s (%d tensors)" % (a.output, len(sd)))
    for x in said:
        print("  dropped the prefix %s" % x)
    own = [p for p in layers_of(sd) if not p.startswith(("transformer.", "model.", "vit."))]
    for p in own:  # moescope's own layout: the prefix is the --layer
        print("  MoE layer %s: moescope info %s --layer %s" % (p, a.output, p))
    if a.top_k is not None:
        print("  routing: top-%d of each layer's experts (metadata moescope.router = topk, moescope.top_k = %d)"
              % (a.top_k, a.top_k))
    elif a.dense:
        print("  routing: dense softmax over every expert (metadata moescope.router = dense)")
    elif own:  # said here, where it can still be given: a top-k model read as dense is another function
        print("  routing: none given, so moescope reads %s as a dense softmax over every expert (and warns at "
              "each load); a top-k model: convert again with --top-k K" % ("it" if len(own) == 1 else "each layer"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
