"""tests/commands/test_convert.py - a PyTorch checkpoint is no dead end: moescope
recognises a torch.save file (zip, and the legacy pickle) by its first bytes and
names the command that converts it; sample-checkpoints/torch_to_safetensors.py
turns a state dict (under "state_dict", with DataParallel's "module.", torch.compile's
"_orig_mod.", a "model." around a Hugging Face layout, each said) into the
safetensors file moescope loads, every tensor byte for byte; refuses to overwrite, and
never writes over its input (--force, a symlink) or a directory."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

CONV = os.path.join(testutil.ROOT, "sample-checkpoints", "torch_to_safetensors.py")


def main(tmp):
    try:
        import torch
    except ImportError:
        if os.environ.get("CI"):
            check(False, "python3-torch is installed under CI (make deps)")
            return
        testutil.skip_part("the PyTorch conversion (python3-torch is not installed: make deps installs it)")
        return
    g = torch.Generator().manual_seed(3)
    sd = {"module.moe.gate.weight": torch.randn(4, 8, generator=g), "module.moe.gate.bias": torch.randn(4, generator=g)}
    for i in range(4):
        sd["module.moe.experts.%d.fc1.weight" % i] = torch.randn(16, 8, generator=g)
        sd["module.moe.experts.%d.fc1.bias" % i] = torch.randn(16, generator=g)
        sd["module.moe.experts.%d.fc2.weight" % i] = torch.randn(8, 16, generator=g)
        sd["module.moe.experts.%d.fc2.bias" % i] = torch.randn(8, generator=g)
    pt, old = os.path.join(tmp, "model.pt"), os.path.join(tmp, "pytorch_model.bin")
    torch.save({"state_dict": sd}, pt)
    torch.save(sd, old, _use_new_zipfile_serialization=False)
    for path, kind in ((pt, "zip"), (old, "legacy pickle")):
        r = run("info", path)
        check(r.returncode == 1 and "a PyTorch checkpoint (torch.save, %s)" % kind in r.stderr
              and "torch_to_safetensors.py %s -o model.safetensors" % path in r.stderr,
              "info on a torch.save file (%s): the command that converts it: %s" % (kind, r.stderr.strip()))
    out = os.path.join(tmp, "model.safetensors")
    r = subprocess.run([sys.executable, CONV, pt, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0 and os.path.exists(out), "convert: %s" % r.stderr.strip())
    if r.returncode:
        return
    t, _ = oracle.read_safetensors(out)
    want = {k[len("module."):]: v.numpy() for k, v in sd.items()}
    check(sorted(t) == sorted(want), "convert: the names, 'module.' dropped: %s" % sorted(t)[:3])
    check(all((t[k] == want[k]).all() for k in want if k in t), "convert: every tensor byte for byte")
    r = run("info", out)
    check(r.returncode == 0 and "n = 4 experts, d = 8, h = 16" in r.stdout, "info on the converted file: %s" % r.stderr)
    check("no routing metadata" in r.stdout, "info: a layer without routing metadata says it is read as dense")
    routing(tmp, pt)
    r = subprocess.run([sys.executable, CONV, old, "-o", out], capture_output=True, text=True)
    check(r.returncode == 1 and "exists" in r.stderr, "convert: an existing output refused: %s" % r.stderr)
    # never over the input, --force or not, by its name or another (it replaced the .pt)
    before = open(pt, "rb").read()
    link = os.path.join(tmp, "link.pt")
    os.symlink(pt, link)
    for o in (pt, link):
        r = subprocess.run([sys.executable, CONV, pt, "-o", o, "--force"], capture_output=True, text=True)
        check(r.returncode == 1 and "is the input" in r.stderr, "convert: -o %s --force refused: %s" % (o, r.stderr))
    check(open(pt, "rb").read() == before, "convert: the input is as it was")
    r = subprocess.run([sys.executable, CONV, pt, "-o", tmp], capture_output=True, text=True)
    check(r.returncode == 1 and "is a directory" in r.stderr, "convert: a directory as -o refused: %s" % r.stderr)
    wrappers(tmp, sd)


def routing(tmp, pt):
    """the converter says when no routing was given; --top-k K writes it, checked against n"""
    out = os.path.join(tmp, "plain.safetensors")
    r = subprocess.run([sys.executable, CONV, pt, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0 and "routing: none given" in r.stdout and "--top-k K" in r.stdout,
          "convert without --top-k: says the layer will be read as dense: %s" % r.stdout)
    out = os.path.join(tmp, "top2.safetensors")
    r = subprocess.run([sys.executable, CONV, pt, "-o", out, "--top-k", "2"], capture_output=True, text=True)
    check(r.returncode == 0 and "top-2" in r.stdout, "convert --top-k 2: %s %s" % (r.stdout, r.stderr))
    _, meta = oracle.read_safetensors(out) if r.returncode == 0 else ({}, {})
    check(meta.get("moescope.router") == "topk" and meta.get("moescope.top_k") == "2",
          "convert --top-k 2: the routing metadata: %s" % meta)
    r = run("info", out, "--json", os.path.join(tmp, "top2.json"))
    j = json.load(open(os.path.join(tmp, "top2.json"))) if r.returncode == 0 else {}
    check(j.get("router") == "topk" and j.get("k") == 2 and "no routing metadata" not in r.stdout,
          "info on the --top-k 2 file: a top-2 router, no default: %s %s" % (j.get("router"), j.get("k")))
    r = subprocess.run([sys.executable, CONV, pt, "-o", os.path.join(tmp, "top5.safetensors"), "--top-k", "5"],
                       capture_output=True, text=True)
    check(r.returncode == 1 and "n = 4 experts" in r.stderr and not os.path.exists(os.path.join(tmp, "top5.safetensors")),
          "convert --top-k 5 of 4 experts refused, nothing written: %s" % r.stderr)
    out = os.path.join(tmp, "dense.safetensors")
    r = subprocess.run([sys.executable, CONV, pt, "-o", out, "--dense"], capture_output=True, text=True)
    r2 = run("info", out) if r.returncode == 0 else r
    check(r.returncode == 0 and "no routing metadata" not in r2.stdout and "warning" not in r2.stderr,
          "convert --dense: read as dense without a warning: %s" % r2.stderr)


def wrappers(tmp, sd):
    """torch.compile inside DDP, a layer of one's own names, a 'model.' around a GPT-2 layout"""
    import torch
    own = {"_orig_mod.module." + k.replace("module.moe.", "blocks.0.moe."): v for k, v in sd.items()}
    pt, out = os.path.join(tmp, "own.pt"), os.path.join(tmp, "own.safetensors")
    torch.save(own, pt)
    r = subprocess.run([sys.executable, CONV, pt, "-o", out], capture_output=True, text=True)
    check(r.returncode == 0, "convert compiled+DDP: %s" % r.stderr.strip())
    if r.returncode:
        return
    t, _ = oracle.read_safetensors(out)
    check(sorted(t) == sorted(k[len("_orig_mod.module."):] for k in own),
          "convert: '_orig_mod.' and 'module.' both dropped: %s" % sorted(t)[:2])
    check("'_orig_mod.' (torch.compile)" in r.stdout and "'module.' (DataParallel" in r.stdout,
          "convert: says which prefixes it dropped: %s" % r.stdout)
    check("moescope info %s --layer blocks.0.moe" % out in r.stdout,
          "convert: a layer of one's own names its --layer: %s" % r.stdout)
    r = run("info", out, "--layer", "blocks.0.moe")
    check(r.returncode == 0 and "n = 4 experts" in r.stdout, "info with that --layer: %s" % r.stderr)
    hf = {"model.transformer.wte.weight": torch.zeros(8, 4), "model.transformer.h.0.mlp.c_fc.weight": torch.zeros(4, 16)}
    pt, out = os.path.join(tmp, "hf.pt"), os.path.join(tmp, "hf.safetensors")
    torch.save(hf, pt)
    r = subprocess.run([sys.executable, CONV, pt, "-o", out], capture_output=True, text=True)
    t, _ = oracle.read_safetensors(out) if r.returncode == 0 else ({}, None)
    check(sorted(t) == ["transformer.h.0.mlp.c_fc.weight", "transformer.wte.weight"] and "'model.'" in r.stdout,
          "convert: a 'model.' around a GPT-2 layout dropped, said: %s %s" % (sorted(t), r.stderr))
    dec = {"model.layers.0.mlp.gate.weight": torch.zeros(4, 8), "model.embed_tokens.weight": torch.zeros(9, 8)}
    pt, out = os.path.join(tmp, "dec.pt"), os.path.join(tmp, "dec.safetensors")
    torch.save(dec, pt)
    r = subprocess.run([sys.executable, CONV, pt, "-o", out], capture_output=True, text=True)
    t, _ = oracle.read_safetensors(out) if r.returncode == 0 else ({}, None)
    check(sorted(t) == sorted(dec), "convert: a decoder's own 'model.' kept: %s %s" % (sorted(t), r.stderr))


tmp = tempfile.mkdtemp()
try:
    main(tmp)
finally:
    shutil.rmtree(tmp)
sys.exit(testutil.summary("test_convert"))
