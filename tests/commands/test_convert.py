"""tests/commands/test_convert.py - a PyTorch checkpoint is no dead end: moescope
recognises a torch.save file (zip, and the legacy pickle) by its first bytes and
names the command that converts it; sample-checkpoints/torch_to_safetensors.py
turns a state dict (under "state_dict", with DataParallel's "module.") into the
safetensors file moescope loads, every tensor byte for byte; refuses to overwrite, and
never writes over its input (--force, a symlink) or a directory."""
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


tmp = tempfile.mkdtemp()
try:
    main(tmp)
finally:
    shutil.rmtree(tmp)
sys.exit(testutil.summary("test_convert"))
