"""tests/oracle/test_stream.py - layers read expert by expert (what `cost` and `align` do
when two layers in float32 would not fit comfortably: MOESCOPE_STREAM=1 forces it
here, =0 forbids it) give the same results bit for bit as layers held whole:

  - every family's layout (tests/lib/family_fixtures.py, not moescope's writer), F32
    and BF16, one file and sharded, transformers >= 5 packed experts, GPT-OSS
    (its MXFP4 experts are read whole, so the same path either way);
  - B a pure scramble of A (equal experts: the expert cost's exact zeros, which a
    streamed pair finds by hashes then floats) and B unrelated to A;
  - `cost --json` identical (provenance aside), `align`'s output identical byte for
    byte in every file, and the streamed run did read experts one at a time
    (MOESCOPE_TIMING's "expert reads") while the whole one did not;
  - align's notes identical (B a scramble of A: its experts equal A's once aligned);
  - a NaN or an overflowing value in a routed expert: the same refusal held and
    streamed, naming the shard and the file's own tensor and element (every layout);
  - Ctrl-C while a streamed align writes its second shard: exit 130, no output
    directory, no temporaries left."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_stream_")


def p(*names):
    return os.path.join(TMP, *names)


def files_of(path):
    """relative name -> bytes of a file or every file of a directory."""
    if os.path.isdir(path):
        return {f: open(os.path.join(path, f), "rb").read() for f in sorted(os.listdir(path))}
    return {"": open(path, "rb").read()}


def without_provenance(path):
    d = json.load(open(path))
    d.pop("provenance", None)
    return d


def pair(fam, dtype, shards, seed, related, packed=False):
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer(fam, rng, dtype)
    n, h = W["gate"].shape[0], W["w1"].shape[1]
    hs = W["s1"].shape[0] if "s1" in W else 0
    tag = "%s_%s_%d_%s%s" % (fam, dtype, shards, "scr" if related else "unrel", "_packed" if packed else "")
    ext = "" if shards > 1 else ".safetensors"
    a, b = p(tag + "_a" + ext), p(tag + "_b" + ext)
    ff.write_checkpoint(a, fam, W, cfg, dtype, shards, rng=np.random.default_rng(7), packed=packed)
    if related:
        groups = cfg.get("n_group", 1) if fam.startswith("deepseek") else 1
        pi = ff.group_perm(rng, n, groups)
        perms = [rng.permutation(h) for _ in range(n)] + ([rng.permutation(hs)] if hs else [])
        WB = ff.scramble(W, pi, perms)
    else:
        WB, _ = ff.random_layer(fam, np.random.default_rng(seed + 100), dtype)
    ff.write_checkpoint(b, fam, WB, cfg, dtype, shards, rng=np.random.default_rng(7), packed=packed)
    return tag, a, b, ext


def both_ways(tag, a, b, ext, streams=True, related=None):
    outs, costs, errs, says = {}, {}, {}, {}
    for mode in ("0", "1"):
        env = {"MOESCOPE_STREAM": mode, "MOESCOPE_TIMING": "1"}
        cj = p("%s_cost%s.json" % (tag, mode))
        r = run("cost", a, b, "--json", cj, env=env)
        check(r.returncode == 0, "%s: cost (stream %s) failed: %s" % (tag, mode, r.stderr[-300:]))
        costs[mode] = without_provenance(cj) if r.returncode == 0 else None
        out = p("%s_al%s%s" % (tag, mode, ext))
        r = run("align", a, b, "-o", out, env=env)
        check(r.returncode == 0, "%s: align (stream %s) failed: %s" % (tag, mode, r.stderr[-300:]))
        outs[mode] = files_of(out) if r.returncode == 0 else None
        errs[mode] = r.stderr
        says[mode] = [x for x in r.stdout.splitlines() if not x.startswith("wrote ")]
    check(costs["0"] is not None and costs["0"] == costs["1"], "%s: cost JSON differs when streamed" % tag)
    o0, o1 = outs["0"], outs["1"]
    check(o0 is not None and o1 is not None and sorted(o0) == sorted(o1), "%s: output files differ" % tag)
    if o0 and o1:
        bad = [f for f in o0 if o0[f] != o1.get(f)]
        check(not bad, "%s: align output differs when streamed: %s" % (tag, bad))
    # what align says (order, notes) is the same; B a scramble of A: the experts say so
    check(says["0"] == says["1"], "%s: align says other things when streamed: %s" % (tag, says))
    note = [any(x.startswith("experts: every aligned expert of B equals A's") for x in says[m]) for m in "01"]
    check(related is None or note == [related, related], "%s: the scramble note (held, streamed) %s, "
          "expected %s" % (tag, note, related))
    read1, read0 = "timing: expert reads" in errs["1"], "timing: expert reads" in errs["0"]
    check(read1 == streams and not read0,
          "%s: experts read one at a time: streamed %s (expected %s), whole %s" % (tag, read1, streams, read0))


def bad_values():
    """A routed expert of B with a NaN, or with values whose products overflow
    float32: held and streamed, cost and align refuse with the same message,
    naming the file and the tensor, and write nothing."""
    for kind, dtype, shards in (("nan", "F32", 2), ("big", "BF16", 2), ("big", "F32", 1)):
        rng = np.random.default_rng(5)
        W, cfg = ff.random_layer("mixtral", rng, dtype)
        WB, _ = ff.random_layer("mixtral", np.random.default_rng(6), dtype)
        if kind == "nan":
            WB["w1"][2][3, 5] = np.nan
            want = ["experts.2.w1.weight", "non-finite"]
        else:
            WB["w2"][1][4, 7] = 1e30  # one value: h |W2| |hidden| passes 1e30
            want = ["experts.1.w2.weight", "overflow"]
        tag = "bad_%s_%s_%d" % (kind, dtype, shards)
        ext = "" if shards > 1 else ".safetensors"
        a, b = p(tag + "_a" + ext), p(tag + "_b" + ext)
        ff.write_checkpoint(a, "mixtral", W, cfg, dtype, shards, rng=np.random.default_rng(7))
        ff.write_checkpoint(b, "mixtral", WB, cfg, dtype, shards, rng=np.random.default_rng(7))
        for cmd in (["cost", a, b], ["align", a, b, "-o", p(tag + "_out" + ext)]):
            got = {}
            for mode in ("0", "1"):
                r = run(*cmd, env={"MOESCOPE_STREAM": mode, "MOESCOPE_TIMING": "1"})
                got[mode] = (r.returncode, [x for x in r.stderr.splitlines() if not x.startswith("timing")])
                msg = " ".join(got[mode][1])
                check(r.returncode == 1 and os.path.basename(b) in msg and all(w in msg for w in want),
                      "%s %s (stream %s): refused naming the file and tensor: %s" % (tag, cmd[0], mode, msg[-300:]))
            check(got["0"] == got["1"], "%s %s: the same message held and streamed: %s" % (tag, cmd[0], got))
            check(not os.path.exists(p(tag + "_out" + ext)), "%s %s: nothing written" % (tag, cmd[0]))


def largest_in_files(path):
    """(file name, tensor, flat element) of the largest |value| in a checkpoint's
    files, read with our own reader: where the overflow message must point."""
    files = [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".safetensors")] \
        if os.path.isdir(path) else [path]
    best = (0, None)
    for f in files:
        tensors, _ = ff.read_safetensors(f)
        for name, (dt, shape, raw) in tensors.items():
            if dt not in ("F32", "BF16", "F16"):
                continue
            x = np.abs(ff.to_float(dt, shape, raw).ravel())
            if x.size and x.max() > best[0]:
                best = (x.max(), (os.path.basename(f), name, int(x.argmax())))
    return best[1]


def overflow_names():
    """An overflowing value in every family's layout (per-expert, stacked, packed
    halves, interleaved, transposed, a shared expert): the refusal names the
    shard and the file's own tensor and element that hold it, held and streamed."""
    cases = [("mixtral", "w2", False), ("olmoe", "w3", True), ("olmoe", "w2", True), ("switch", "w1", False),
             ("qwen2_moe", "s2", False), ("granitemoe", "w3", False), ("gpt_oss", "w1", False),
             ("gpt_oss", "w2", False), ("deepseek_v3", "w1", False)]
    for fam, key, packed in cases:
        W, cfg = ff.random_layer(fam, np.random.default_rng(11), "F32")
        WB, _ = ff.random_layer(fam, np.random.default_rng(12), "F32")
        x = WB[key] if key.startswith("s") else WB[key][2]
        x[1, 3] = 1e30
        tag = "names_%s_%s%s" % (fam, key, "_packed" if packed else "")
        a, b = p(tag + "_a"), p(tag + "_b")
        ff.write_checkpoint(a, fam, W, cfg, "F32", 2, rng=np.random.default_rng(7), packed=packed)
        ff.write_checkpoint(b, fam, WB, cfg, "F32", 2, rng=np.random.default_rng(7), packed=packed)
        shard, name, k = largest_in_files(b)
        want = "%s: tensor '%s' holds values up to 1e+30 (element %d)" % (os.path.join(b, shard), name, k)
        got = []
        for mode in ("0", "1"):
            r = run("cost", a, b, env={"MOESCOPE_STREAM": mode})
            got.append(r.stderr.strip())
            check(r.returncode == 1 and want in r.stderr, "%s (stream %s): names %s: %s" % (tag, mode, want,
                                                                                          r.stderr[-300:]))
        check(got[0] == got[1], "%s: the same message held and streamed" % tag)


def cancel_streamed():
    """SIGINT while a streamed align writes the second shard: nothing left behind."""
    tag, a, b, _ = pair("mixtral", "BF16", 2, 91, True)
    d = p("cancel")
    os.makedirs(d)
    env = dict(os.environ, MOESCOPE_STREAM="1", MOESCOPE_TEST_STALL="write model-00002")
    proc = subprocess.Popen([testutil.MOESCOPE, "align", a, b, "-o", os.path.join(d, "out")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 120  # generous: the temporary exists once writing began
    while time.time() < deadline and proc.poll() is None and not os.listdir(d):
        time.sleep(0.05)
    # the stall holds the second shard: wait until its phase began (a temporary file in it)
    while time.time() < deadline and proc.poll() is None and \
            not any("model-00002" in f for _, _, fs in os.walk(d) for f in fs):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    check(proc.returncode == 130, "cancel: streamed align exit %s (expected 130): %s" % (proc.returncode, err[-200:]))
    check(os.listdir(d) == [], "cancel: left behind %s" % os.listdir(d))


def main():
    seed = 1
    for fam in ff.FAMILIES:
        for dtype, shards in (("F32", 2), ("BF16", 1)):
            for related in (True, False):
                tag, a, b, ext = pair(fam, dtype, shards, seed, related)
                both_ways(tag, a, b, ext, streams=True, related=related)
                seed += 1
    for fam in ("mixtral", "olmoe"):
        tag, a, b, ext = pair(fam, "BF16", 2, seed, False, packed=True)
        both_ways(tag, a, b, ext)
        seed += 1
    # GPT-OSS MXFP4: read whole either way (its blocks are decoded whole)
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer("gpt_oss", rng, "BF16", mx=True)
    WB, _ = ff.random_layer("gpt_oss", np.random.default_rng(seed + 1), "BF16", mx=True)
    ff.write_checkpoint(p("mx_a"), "gpt_oss", W, cfg, "BF16", 2)
    ff.write_checkpoint(p("mx_b"), "gpt_oss", WB, cfg, "BF16", 2)
    both_ways("mxfp4", p("mx_a"), p("mx_b"), "", streams=False)
    bad_values()
    overflow_names()
    cancel_streamed()


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(testutil.summary("test_stream"))
