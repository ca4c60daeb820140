"""tests/commands/test_newcomer.py - the command line as a new user meets it
(round three): one rule for a left-out evaluation set (eval.safetensors beside
A) in eval, curve, landscape, diagnose and study; hints for swapped arguments
(an evaluation set where the checkpoint goes, a command after the checkpoint);
`info DIR` naming what each entry of a directory is and suggesting a path that
is one checkpoint; the cost table in one precision; a landscape's split of its
time only with -v or MOESCOPE_TIMING."""
import os
import re
import shutil
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

SC = os.path.join(testutil.ROOT, "sample-checkpoints")
D4, D8, MX = (os.path.join(SC, d) for d in ("dense4", "dense8", "mixtral4"))
A, B, C, E = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed2.safetensors", "seed3.safetensors",
                                             "eval.safetensors"))
NOTE = "using the evaluation set %s (beside %s"


def eval_default(work):
    # eval, curve, landscape, diagnose: the set beside A, said on stderr, the same numbers as --eval
    r0, r1 = run("eval", A, "--eval", E), run("eval", A)
    check(r1.returncode == 0 and r1.stdout == r0.stdout, "eval A: the set beside A, the same report: %s" % r1.stderr)
    check(NOTE % (E, A) in r1.stderr, "eval A: says which set it used: %r" % r1.stderr)
    check(NOTE % (E, A) not in r0.stderr, "eval A --eval E: no note")
    r = run("curve", A, B)
    check(r.returncode == 0 and NOTE % (E, A) in r.stderr, "curve A B: the set beside A: %s" % r.stderr[-300:])
    r = run("landscape", A, B, "-q")
    check(r.returncode == 0 and NOTE % (E, A) in r.stderr and "rank" in r.stdout, "landscape A B: %s" % r.stderr[-300:])
    r = run("diagnose", A, B, "--no-landscape")
    check(r.returncode == 0 and "evaluation set %s" % E in r.stdout, "diagnose A B: looks beside A: %s" % r.stdout[:300])
    r = run("diagnose", A, B, "--no-landscape", "--no-eval")
    check(r.returncode == 0 and "evaluation set none" in r.stdout, "diagnose --no-eval: none: %s" % r.stdout[:300])
    r = run("study", A, B, C, "-q")
    check(r.returncode == 0 and NOTE % (E, A) in r.stderr, "study A B C: beside the first: %s" % r.stderr[-300:])
    # a checkpoint folder and its index: beside the folder
    me = os.path.join(MX, "eval.safetensors")
    for a in (os.path.join(MX, "seed1"), os.path.join(MX, "seed1") + "/",
              os.path.join(MX, "seed1", "model.safetensors.index.json")):
        r = run("eval", a)
        check(r.returncode == 0 and (NOTE % (me, a)) in r.stderr, "eval %s: the set beside the folder: %s"
              % (a, r.stderr[-300:]))
    # none beside A: a usage error that says where it looked
    lone = os.path.join(work, "lone")
    os.makedirs(lone)
    shutil.copy(A, lone)
    la = os.path.join(lone, "seed1.safetensors")
    for cmd in (["eval", la], ["curve", la, la], ["landscape", la, la]):
        r = run(*cmd)
        check(r.returncode == 2 and "no eval.safetensors beside %s" % la in r.stderr,
              "%s without a set beside A: exit 2, says so: %s" % (cmd[0], r.stderr.strip()))


def hints():
    r = run("eval", E, "--eval", A)
    check(r.returncode == 1 and "hint: %s is an evaluation set" % E in r.stderr and
          "(moescope eval %s --eval %s)" % (A, E) in r.stderr, "eval E --eval A: the swap named: %s" % r.stderr)
    r = run("curve", E, B, "--eval", A)
    check(r.returncode == 1 and "(moescope curve %s %s --eval %s)" % (A, B, E) in r.stderr,
          "curve E B --eval A: the swap named: %s" % r.stderr)
    r = run("landscape", A, E, "--eval", B)
    check(r.returncode == 1 and "(moescope landscape %s %s --eval %s)" % (A, B, E) in r.stderr,
          "landscape A E --eval B: the swap named: %s" % r.stderr)
    digits = os.path.join(SC, "digits.safetensors")
    r = run("eval", digits, "--eval", E)
    check(r.returncode == 1 and "hint: %s is a data set, not a checkpoint" % digits in r.stderr,
          "eval DATA: a data set, not a checkpoint: %s" % r.stderr)
    r = run(A, "info")
    check(r.returncode == 2 and "'info' is a command: it comes first (moescope info %s" % A in r.stderr,
          "moescope A info: the command comes first: %s" % r.stderr)
    r = run(A, B, "landscape")
    check(r.returncode == 2 and "'landscape' is a command" in r.stderr, "moescope A B landscape: %s" % r.stderr)
    # a right command line gets no hint
    r = run("eval", A, "--eval", E)
    check(r.returncode == 0 and "hint" not in r.stderr, "no hint when nothing is swapped")


def info_dir():
    r = run("info", SC + "/")
    err = r.stderr
    check(r.returncode == 1, "info sample-checkpoints/: not one checkpoint (%d)" % r.returncode)
    check("(file)" not in err, "no folder labelled '(file)': %s" % err)
    for want in ("dense4/ (4 checkpoints)", "teacher4/ (5 checkpoints)", "mixtral4/ (2 checkpoint folders)"):
        check(want in err, "labelled %r: %s" % (want, err))
    listed = err.split("passed over")[0]
    check("digits.safetensors" not in listed and "pretrained.safetensors" not in listed,
          "the data set and the one-expert model are not candidates: %s" % err)
    check("passed over" in err and "digits.safetensors" in err and "pretrained.safetensors" in err,
          "they are named as passed over: %s" % err)
    m = re.search(r"\(e\.g\. ([^)]+)\)", err)
    check(m is not None and "//" not in (m.group(1) if m else "//"), "a suggestion without '//': %s" % err)
    if m:
        r2 = run("info", m.group(1))
        check(r2.returncode == 0, "the suggested path is one checkpoint: %s" % r2.stderr)
    r = run("info", MX)
    check("seed1/ (sharded)" in r.stderr and "seed2/ (sharded)" in r.stderr, "mixtral4: its shards: %s" % r.stderr)
    m = re.search(r"\(e\.g\. ([^)]+)\)", r.stderr)
    check(m is not None and run("info", m.group(1)).returncode == 0, "mixtral4: the suggestion opens: %s" % r.stderr)


def cost_precision():
    for d, method in ((D4, "expert"), (D4, "gate"), (D8, "gate")):
        r = run("cost", os.path.join(d, "seed1.safetensors"), os.path.join(d, "seed2.safetensors"), "--method", method)
        rows = [l for l in r.stdout.splitlines() if re.match(r"^A[0-9]+ ", l)]
        cells = [c.rstrip("*") for l in rows for c in l.split()[1:]]
        decimals = {len(c.split(".")[1]) if "." in c else 0 for c in cells}
        check(r.returncode == 0 and len(rows) >= 4 and len(decimals) == 1,
              "cost %s %s: every cell in one precision (%s): %r" % (os.path.basename(d), method, decimals, rows[:2]))
        sig = [len(c.replace(".", "").lstrip("0")) for c in cells]
        check(max(sig) == 5, "cost %s %s: the largest cells with 5 significant digits (%r)" % (os.path.basename(d), method,
                                                                                           cells[:4]))


def timing():
    # dense4: dense8's 40320 orders would spend a minute each run resampling their
    # error bars under the sanitizers, for words that do not depend on the size
    args = ["landscape", os.path.join(D4, "seed1.safetensors"), os.path.join(D4, "seed2.safetensors"),
            "--eval", os.path.join(D4, "eval.safetensors"), "--points", "3"]
    r = run(*args)
    check(r.returncode == 0 and "landscape time" not in r.stderr and "CPU time" not in r.stderr,
          "landscape: no phase timings by default: %r" % r.stderr[-300:])
    r = run(*(args + ["-v"]))
    check(r.returncode == 0 and "landscape time: load " in r.stderr, "landscape -v: the split: %r" % r.stderr[-300:])
    r = run(*args, env={"MOESCOPE_TIMING": "1"})
    check(r.returncode == 0 and "landscape time: load " in r.stderr, "MOESCOPE_TIMING=1: the split too")


def layer_words():
    """a layer-only landscape's end points are 0 by definition: said so, not 'loss A 0, loss B 0'"""
    m = os.path.join(SC, "mixtral4")
    r = run("landscape", m + "/seed1", m + "/seed2", "--points", "3", "-q")
    ends = [x for x in r.stdout.splitlines() if x.startswith("end points")]
    check(r.returncode == 0 and ends and "loss A 0," not in ends[0] and "layer-output loss" in ends[0],
          "layer-only landscape: the end points explained: %s %s" % (ends, r.stderr[-300:]))


def network_words():
    """a network's MoE block has no head of its own: info says the network's, not
    'layer-only mode' under 'LM head tied to wte'"""
    r = run("info", os.path.join(SC, "gpt", "topk4", "seed1"))
    check(r.returncode == 0 and "LM head tied to wte" in r.stdout, "info gpt/topk4: %s" % r.stderr[-300:])
    check("layer-only" not in r.stdout and "the network's LM head" in r.stdout,
          "info on a network: the head line says the network's: %s" %
          [x for x in r.stdout.splitlines() if x.startswith("head")])
    r = run("info", A)
    check("head" in r.stdout and "network" not in r.stdout, "info on a layer: no network words")
    g = os.path.join(SC, "gpt", "topk4")
    r = run("landscape", g + "/seed1", g + "/seed2", "--points", "3", "-q")
    head = r.stdout.splitlines()[0] if r.stdout else ""
    check(r.returncode == 0 and "network loss" in head and "classification" not in head,
          "landscape on a GPT: its first line says network loss: %r %s" % (head, r.stderr[-300:]))
    png = os.path.join(tempfile.gettempdir(), "nc_curves_%d.png" % os.getpid())
    r = run("curve", g + "/seed1", g + "/seed2", "--points", "3", "--png", png, "--layer", "0")
    title = testutil.png_info(png)[2].get("Title", "") if r.returncode == 0 else r.stderr
    check("network loss, MoE block 0" in title, "curve --png on a GPT: its title says network loss and the block: %s" % title)
    if os.path.exists(png):
        os.remove(png)
    r = run("diagnose", g + "/seed1", g + "/seed2", "--no-landscape")
    check(r.returncode == 0 and re.search(r"routing load of A on \d+ tokens", r.stdout) and " samples" not in r.stdout,
          "diagnose on a GPT: its routing load counts tokens: %s" % [x for x in r.stdout.splitlines() if "routing" in x])


def study_width():
    """round four: study's tables fit 120 columns (the barriers, then the ranks)"""
    r = run("study", A, B, C, "--points", "3")
    wide = [ln for ln in r.stdout.splitlines() if len(ln) > 120]
    check(r.returncode == 0 and not wide and "ranks (of the gate and expert orders)" in r.stdout,
          "study's lines within 120 columns: %s %s" % (wide[:2], r.stderr[-300:]))


def mixups():
    """round four: two kinds of model, or a layer's set beside a network, said with both kinds"""
    vit, gpt = os.path.join(SC, "vit", "topk4", "seed1"), os.path.join(SC, "gpt", "topk4", "seed1")
    r = run("cost", vit, gpt)
    check(r.returncode == 1 and 'family vit' in r.stderr and 'gpt2' in r.stderr and "d = 32 vs 64" not in r.stderr,
          "cost ViT GPT: names both kinds: %s" % r.stderr.strip())
    r = run("curve", vit, gpt)
    check(r.returncode == 1 and 'model_type is "vit" vs "gpt2"' in r.stderr,
          "curve ViT GPT (networks): both model_types: %s" % r.stderr.strip())
    r = run("cost", A, os.path.join(SC, "gpt", "dense4", "seed1"))
    check(r.returncode == 1 and "a single MoE layer file" in r.stderr and "GPT-2 network" in r.stderr,
          "cost layer-file GPT: says which is which: %s" % r.stderr.strip())
    r = run("eval", gpt, "--eval", E)
    check(r.returncode == 1 and "is a gpt2 network: its evaluation set holds input_ids" in r.stderr,
          "eval GPT with a layer's set: the GPT needs input_ids: %s" % r.stderr.strip())
    r = run("info", os.path.join(SC, "vit", "topk4", "seed1"))
    check("the network's classifier" in r.stdout and "LM head" not in r.stdout,
          "info on a ViT: its head is a classifier: %s" % [x for x in r.stdout.splitlines() if "head" in x])


def own_layer(work):
    """round four: a layer of one's own names and no routing metadata; a GPT-2 Conv1D stored as a Linear"""
    import numpy as np
    import oracle
    g = np.random.default_rng(0)
    t = {"blocks.0.moe.gate.weight": g.standard_normal((4, 8)), "blocks.0.moe.gate.bias": g.standard_normal(4)}
    for i in range(4):
        for w, shape in (("fc1.weight", (16, 8)), ("fc1.bias", (16,)), ("fc2.weight", (8, 16)), ("fc2.bias", (8,))):
            t["blocks.0.moe.experts.%d.%s" % (i, w)] = g.standard_normal(shape)
    f = os.path.join(work, "own.safetensors")
    oracle.write_safetensors(f, {k: v.astype(np.float32) for k, v in t.items()})
    r = run("info", f)
    check(r.returncode == 1 and "(open one with --layer blocks.0.moe)" in r.stderr,
          "info on custom names: the --layer to use: %s" % r.stderr.strip())
    r = run("info", f, "--layer", "blocks.0.moe")
    check(r.returncode == 0 and "no routing metadata moescope.router" in r.stdout and "--top-k K" in r.stdout,
          "info without routing metadata: says it is read as dense, and --top-k: %s" % r.stdout[:400])
    r = run("cost", f, f, "--layer", "blocks.0.moe")
    check(r.returncode == 0 and r.stderr.count("evaluated as a dense softmax over all 4 experts with a residual") == 1,
          "cost without routing metadata: one warning on stderr: %s" % r.stderr.strip())
    r = run("info", f, "--layer", "blocks.0.moe", "--top-k", "2")
    check(r.returncode == 0 and "top-2 of 4" in r.stdout and "no routing metadata" not in r.stdout,
          "--top-k on a layer of one's own: a top-2 router: %s" % r.stdout[:400])
    r = run("info", A)
    check("no routing metadata" not in r.stdout, "info on a sample (it has the metadata): no warning")
    # a GPT-2 whose dense c_fc was written as a torch Linear [out, in]
    gpt = os.path.join(work, "gpt")
    shutil.copytree(os.path.join(SC, "gpt", "topk4"), gpt, symlinks=False)
    shard = os.path.join(gpt, "seed1", "model-00001-of-00002.safetensors")
    t, _ = oracle.read_safetensors(shard)
    t["transformer.h.1.mlp.c_fc.weight"] = t["transformer.h.1.mlp.c_fc.weight"].T.copy()
    oracle.write_safetensors(shard, t)
    r = run("eval", os.path.join(gpt, "seed1"))
    check(r.returncode == 1 and "has shape [256, 64], expected [64, 256]" in r.stderr and "Conv1D" in r.stderr
          and "[in, out]" in r.stderr, "a Conv1D weight stored transposed: the hint: %s" % r.stderr.strip())


def main():
    if not os.path.exists(A) or not os.path.isdir(MX):
        check(False, "sample checkpoints present")
        return
    work = tempfile.mkdtemp()
    try:
        eval_default(work)
        hints()
        info_dir()
        cost_precision()
        timing()
        network_words()
        layer_words()
        mixups()
        study_width()
        own_layer(work)
    finally:
        shutil.rmtree(work)


main()
sys.exit(testutil.summary("test_newcomer"))
