"""tests/commands/test_capture.py - sample-checkpoints/capture_inputs.py without torch.

The forward pre-hook (InputCapture) is fed what PyTorch would hand it: numpy
arrays and an object with torch's .detach().float().cpu().numpy() chain, batches
of [B, T, d] hidden states; find_moe_block walks stand-in model trees shaped like
Mixtral, Qwen-MoE and Switch; the written file is read back with the tests' own
reader and used as an inputs-only evaluation set by `moescope eval` on the
Mixtral-layout sample. --layers: moe_layers finds the MoE layers of a stand-in
tree (dense ones left out), write_layers writes inputs.L for each and refuses
layers that captured different numbers of tokens, and `moescope geometry` on the
one-layer Mixtral sample says there is nothing to compare. A decoder of several MoE
layers with a layer's captured set: the layer its capture.layer names, else the first
(both said on stderr), --layer as given."""
import os
import re
import shutil
import sys
import tempfile
from types import SimpleNamespace as NS

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
sys.path.insert(0, os.path.join(HERE, "..", "..", "sample-checkpoints"))
import capture_inputs as ci  # noqa: E402
import family_fixtures as ff  # noqa: E402
import gen_decoders  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

SAMPLE = os.path.join(HERE, "..", "..", "sample-checkpoints", "mixtral4")


class FakeTorch:
    """Just the calls as_numpy makes on a torch tensor."""

    def __init__(self, a):
        self.a = a

    def detach(self):
        return self

    def float(self):
        return FakeTorch(self.a.astype(np.float32))

    def cpu(self):
        return self

    def numpy(self):
        return self.a


def main():
    tmp = tempfile.mkdtemp(prefix="moescope_capture_")
    rng = np.random.default_rng(3)
    d = 32
    b1 = rng.standard_normal((2, 5, d)).astype(np.float32)
    b2 = rng.standard_normal((1, 7, d)).astype(np.float64)  # another dtype, like bf16 activations
    cap = ci.InputCapture()
    block = object()
    check(cap(block, (b1,)) is None, "the hook must not replace the block's input")
    cap(block, (FakeTorch(b2),))
    X = cap.inputs()
    want = np.concatenate([b1.reshape(-1, d), b2.reshape(-1, d).astype(np.float32)])
    check(X.shape == (17, d) and np.array_equal(X, want), "captured rows: %s" % (X.shape,))
    cap2 = ci.InputCapture(max_rows=12)
    cap2(block, (b1,))
    cap2(block, (b1,))
    cap2(block, (), {"hidden_states": b1})
    check(cap2.inputs().shape == (12, d), "max_rows: %s" % (cap2.inputs().shape,))
    try:
        ci.InputCapture().inputs()
        check(False, "an empty capture must be an error")
    except ValueError:
        check(True, "")

    # the module the hook goes on, per family layout
    moe = object()
    mixtral = NS(model=NS(layers=[NS(block_sparse_moe=None), NS(block_sparse_moe=moe, mlp="dense")]))
    qwen = NS(model=NS(layers=[NS(mlp=None), NS(mlp=moe)]))
    switch = NS(encoder=NS(block=[None, NS(layer=[NS(mlp="attn"), NS(mlp=moe)])]))
    for name, m in (("mixtral", mixtral), ("qwen", qwen), ("switch", switch)):
        check(ci.find_moe_block(m, 1) is moe, "find_moe_block(%s)" % name)

    # the file: our reader sees exactly the rows; moescope evaluates the sample on it
    out = os.path.join(tmp, "inputs.safetensors")
    ci.write_inputs(out, X, {"capture.model": "test"})
    t, meta = ff.read_safetensors(out)
    check(set(t) == {"inputs"} and t["inputs"][0] == "F32" and t["inputs"][1] == (17, d),
          "written tensors: %s" % {k: v[:2] for k, v in t.items()})
    check(np.array_equal(np.frombuffer(t["inputs"][2], np.float32).reshape(17, d), X), "written values")
    check(meta.get("capture.model") == "test", "metadata: %s" % meta)
    check(not [f for f in os.listdir(tmp) if ".tmp" in f], "temporary file left behind")
    r = run("eval", os.path.join(SAMPLE, "seed1"), "--eval", out)
    check(r.returncode == 0, "moescope eval on captured inputs: %s" % r.stderr)
    ci.write_inputs(out, X[:, :16])
    r = run("eval", os.path.join(SAMPLE, "seed1"), "--eval", out)
    check(r.returncode == 1 and "16" in r.stderr and "32" in r.stderr,
          "a capture of the wrong width: %s" % r.stderr.strip())

    # --layers: every MoE layer's hook in one pass, one tensor each
    experts = NS(experts=[1, 2])
    tree = NS(model=NS(layers=[NS(mlp=NS(c_fc=1)), NS(mlp=experts), NS(block_sparse_moe=experts)]))
    check(ci.moe_layers(tree, "all") == [1, 2], "moe_layers(all): %s" % ci.moe_layers(tree, "all"))
    check(ci.moe_layers(tree, "0,2") == [0, 2], "moe_layers(0,2)")
    caps = {0: ci.InputCapture(), 3: ci.InputCapture()}
    caps[0](block, (b1,))
    caps[3](block, (b1 * 2,))
    multi = os.path.join(tmp, "layers.safetensors")
    ci.write_layers(multi, caps, {"capture.model": "test"})
    t, meta = ff.read_safetensors(multi)
    check(set(t) == {"inputs.0", "inputs.3"} and meta.get("capture.layers") == "0,3",
          "write_layers: %s %s" % (sorted(t), meta))
    check(np.array_equal(np.frombuffer(t["inputs.3"][2], np.float32).reshape(10, d), 2 * b1.reshape(-1, d)),
          "write_layers: the values")
    caps[3](block, (b1,))
    try:
        ci.write_layers(multi + ".2", caps)
        check(False, "layers with different token counts must be refused")
    except ValueError as e:
        check("different numbers of tokens" in str(e), "different token counts: %s" % e)
    mix = {0: ci.InputCapture()}
    mix[0](block, (rng.standard_normal((1, 9, d)).astype(np.float32),))
    ci.write_layers(multi, mix)
    r = run("geometry", os.path.join(SAMPLE, "seed1"), "--eval", multi)
    check(r.returncode == 1 and "the only MoE layer" in r.stderr and "two or more" in r.stderr,
          "geometry on a one-layer model: %s" % r.stderr.strip())
    decoder_captures(tmp, rng)
    shutil.rmtree(tmp)
    return testutil.summary("test_capture")


def decoder_captures(tmp, rng):
    """A decoder of several MoE layers (Qwen3-MoE at blocks 0 and 2) with a layer's
    captured set: without --layer, the layer its capture.layer names (as
    capture_inputs.py --layer writes it), said on stderr; with none, the first, and
    the note says how many there are; --layer still chooses."""
    ck = os.path.join(tmp, "qwen3")
    gen_decoders.generate("qwen3_moe", ck)
    d = gen_decoders.D
    X = rng.standard_normal((24, d)).astype(np.float32)
    plain, at2 = os.path.join(tmp, "plain.safetensors"), os.path.join(tmp, "at2.safetensors")
    ci.write_inputs(plain, X)
    ci.write_inputs(at2, X, {"capture.layer": "2"})
    losses = {}
    for name, ev, extra in (("first", plain, ()), ("captured", at2, ()), ("--layer 2", plain, ("--layer", "2")),
                            ("--layer 0", plain, ("--layer", "0"))):
        r = run("eval", ck, "--eval", ev, *extra)
        check(r.returncode == 0, "decoder, %s: eval on a captured set: %s" % (name, r.stderr.strip()))
        m = re.search(r"layer (model\.layers\.\d\.mlp)\)", r.stdout)
        losses[name] = (m.group(1) if m else None, re.search(r"loss +([0-9.]+)", r.stdout).group(1)
                        if r.returncode == 0 else None)
        if name == "first":
            check("2 MoE layers; this is the first, model.layers.0.mlp" in r.stderr,
                  "decoder: the note names the first of 2 layers: %s" % r.stderr.strip())
        if name == "captured":
            check("layer model.layers.2.mlp, the one the evaluation set was captured at" in r.stderr,
                  "decoder: the note names the captured layer: %s" % r.stderr.strip())
    check(losses["first"] == losses["--layer 0"] and losses["first"][0] == "model.layers.0.mlp",
          "decoder without --layer: the first MoE layer: %s" % losses)
    check(losses["captured"] == losses["--layer 2"] and losses["captured"][0] == "model.layers.2.mlp"
          and losses["captured"][1] != losses["first"][1], "decoder: the capture's layer 2: %s" % losses)
    r = run("eval", ck, "--eval", at2, "--layer", "0")
    check(r.returncode == 1 and "capture.layer" in r.stderr, "decoder: --layer 0 on a capture of layer 2 "
          "is refused: %s" % r.stderr.strip())


if __name__ == "__main__":
    sys.exit(main())
