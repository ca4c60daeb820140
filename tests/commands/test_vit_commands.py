"""tests/commands/test_vit_commands.py - every command on ViT folders (Hugging Face's ViT
layout with MoE blocks, tests/lib/gen_vit.py), as a user runs them on a pool laid out as
sample-checkpoints/vit/POOL/ is: backbone.safetensors and eval.safetensors (pixel_values,
labels) beside seed folders whose backbone shard links to it, and a teacher. MoE at the
first and the last block; seed3 is seed1 with every block scrambled.

  - info: the ViT's architecture (text and JSON), its MoE blocks;
  - cost, align --layer all (the scramble aligned back to seed1's tensors), merge --eval
    (the soup's network loss is what `eval` gives the written soup);
  - curve and landscape on the network's class loss, at the first and the last block;
  - study DIR: the seeds are the pool (backbone file and teacher left out); each pair's
    numbers are what `landscape` gives; the scrambled pair's expert barrier ~0;
  - diagnose (the backbone agrees, the block named), lesson --print (the network's class
    loss, its naive barrier as `curve` gives it);
  - usage: a --layer that is no MoE block, a GPT-2's evaluation set on a ViT pair.
"""
import functools
import json
import os
import re
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import gen_vit  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP, T = tempfile.mkdtemp(prefix="moescope_vitcmd_"), 5
p = functools.partial(os.path.join, TMP)  # a path under TMP


def make_pool():
    cfg = gen_vit.config(moe_layers=[0, 1], layers=2, shared=1)
    back = gen_vit.backbone(cfg, 9)
    m1 = gen_vit.moe_blocks(cfg, 1)
    seeds = {"seed1": m1, "seed2": gen_vit.moe_blocks(cfg, 2), "teacher": gen_vit.moe_blocks(cfg, 8)}
    px, labels = gen_vit.images(cfg, 2, 24, {**back, **m1})
    gen_vit.write_pool(p("pool"), cfg, back, seeds, px, labels)
    shard = p("pool", "teacher", "model-00002-of-00002.safetensors")
    t, _ = oracle.read_safetensors(shard)
    oracle.write_safetensors(shard, t, {"role": "teacher (not a seed)"})
    r = run("scramble", p("pool", "seed1"), "-o", p("pool", "seed3"), "--layer", "all", "--seed", 3, "--translate")
    check(r.returncode == 0 and r.stdout.count("layer vit.encoder.layer.") == 2, "scramble --layer all: %s"
          % r.stderr.strip())


def ev():
    return p("pool", "eval.safetensors")


def test_info():
    r = run("info", p("pool", "seed1"), "--json", p("info.json"))
    check(r.returncode == 0 and "network     vit: 2 blocks, d = 16" in r.stdout and "5 classes" in r.stdout
          and "16 patches of 2 x 2 + CLS = 17 tokens" in r.stdout, "info on a ViT: %s %s" % (r.stdout[:400], r.stderr))
    if r.returncode == 0:
        J = json.load(open(p("info.json")))
        n = J.get("network", {})
        check(n.get("model_type") == "vit" and n.get("image_size") == 8 and n.get("patch_size") == 2 and
              [b["layer"] for b in n.get("blocks", []) if b["moe"]] == ["vit.encoder.layer.0.moe", "vit.encoder.layer.1.moe"],
              "info --json: %s" % n)
    r = run("info", p("pool", "seed1"), "--layer", 1)
    check(r.returncode == 0 and "layer       vit.encoder.layer.1.moe" in r.stdout and "family      vit" in r.stdout,
          "info --layer 1: the last block's MoE layer, family vit")


def test_layer_commands():
    a, s = p("pool", "seed1"), p("pool", "seed3")
    r = run("cost", a, p("pool", "seed2"), "--layer", "vit.encoder.layer.1.moe")
    check(r.returncode == 0 and "4" in r.stdout, "cost on the last block: %s" % r.stderr.strip())
    r = run("align", a, s, "-o", p("back"), "--layer", "all")
    check(r.returncode == 0, "align --layer all: %s" % r.stderr.strip())
    if r.returncode == 0:
        ta, tb = gen_gpt2.read_folder(a)[1], gen_gpt2.read_folder(p("back"))[1]
        worst = max(np.abs(ta[k] - tb[k]).max() for k in ta if ".moe." in k and ".gate." not in k)
        check(worst < 1e-6, "the scramble aligned back: every block's experts seed1's (%.3g; the gate keeps "
              "its translation)" % worst)
    r = run("merge", a, p("pool", "seed2"), "--alpha", 0.5, "-o", p("soup"), "--eval", ev(), "--alpha-sweep", 3)
    check(r.returncode == 0 and "the network's class loss" in r.stdout, "merge --eval on a ViT: %s" % r.stderr.strip())
    m = re.search(r"soup \(1 - 0.5\) A \+ 0.5 B'\s+loss ([0-9.]+)", r.stdout)
    j = testutil.eval_json(p("soup.json"), p("soup"), ev())
    check(m and j and abs(float(m.group(1)) - j["loss"]) < 1e-6, "the soup's network loss is the written one's: %s"
          % (m and m.group(1)))


def landscape(a, b, *extra):
    out = p("ls_%d.json" % abs(hash((a, b, extra))))
    r = run("landscape", a, b, "--eval", ev(), "--points", T, "--json", out, "-q", *extra)
    check(r.returncode == 0, "landscape %s %s %s: %s" % (a, b, extra, r.stderr.strip()))
    return json.load(open(out)) if r.returncode == 0 else None


def test_curve_landscape():
    a, b = p("pool", "seed1"), p("pool", "seed2")
    for L in (0, 1):
        J = landscape(a, b, "--layer", L)
        if J:
            check("network loss, MoE block %d (mean class cross-entropy)" % L in J.get("objective", ""),
                  "block %d's landscape on the class loss: %s" % (L, J.get("objective")))
            check(J["naive"]["barrier"] >= 0 and J["methods"]["expert"]["rank"] >= 1, "block %d's numbers" % L)
    r = run("curve", a, b, "--eval", ev(), "--points", T, "--layer", 1)
    check(r.returncode == 0 and "objective: network loss, MoE block 1" in r.stdout, "curve at the last block: %s"
          % r.stderr.strip())


def test_study():
    r = run("study", p("pool"), "--points", T, "--json", p("study.json"))
    check(r.returncode == 0, "study: %s" % r.stderr.strip())
    if r.returncode:
        return
    S = json.load(open(p("study.json")))
    names = [os.path.basename(c) for c in S["checkpoints"]]
    check(names == ["seed1", "seed2", "seed3"], "the pool is the seeds: %s" % names)
    check("backbone.safetensors" in r.stdout and "teacher" in r.stdout, "what was left out is said")
    check("class cross-entropy" in S.get("objective", ""), "the objective: %s" % S.get("objective"))
    for pr in S["pairs"]:
        L = landscape(pr["a"], pr["b"])
        if not L:
            continue
        check(abs(pr["naive"]["barrier"] - L["naive"]["barrier"]) < 1e-12 and
              pr["methods"]["expert"]["rank"] == L["methods"]["expert"]["rank"],
              "study pair %s-%s = landscape's" % (os.path.basename(pr["a"]), os.path.basename(pr["b"])))
        if os.path.basename(pr["a"]) == "seed1" and os.path.basename(pr["b"]) == "seed3":
            e = pr["methods"]["expert"]
            check(e["barrier"] < 1e-5 and e["rank"] == 1, "the scrambled pair aligns back: %s" % e)


def test_diagnose_lesson():
    a, b = p("pool", "seed1"), p("pool", "seed2")
    r = run("diagnose", a, b, "--eval", ev(), "--json", p("diag.json"), "--points", T)
    check(r.returncode == 0 and "MoE block 0" in r.stdout, "diagnose on a ViT: %s" % r.stderr.strip())
    if r.returncode == 0:
        codes = {f["code"]: f for f in json.load(open(p("diag.json")))["findings"]}
        check(codes.get("backbone", {}).get("severity") == "ok", "the backbone agrees: %s" % codes.get("backbone"))
    r = run("lesson", a, b, "--eval", ev(), "--print", "--dir", p("lesson"))  # not into the checkout
    check(r.returncode == 0 and "step 7/7" in r.stdout and "network's class loss" in r.stdout,
          "the lesson on a ViT: %s %s" % (r.returncode, r.stderr.strip()))
    c = run("curve", a, b, "--eval", ev(), "--points", 25)
    naive = [ln.split()[5] for ln in c.stdout.splitlines() if ln.startswith("naive ") and len(ln.split()) > 5]  # the curve table, not the intervals
    m = re.search(r"the barrier is ([0-9.e-]+) above the chord", r.stdout)
    check(naive and m and abs(float(m.group(1)) - float(naive[0])) < 1e-5,
          "the lesson's naive barrier is the network's (curve): %s vs %s" % (m and m.group(1), naive))


def test_usage():
    a, b = p("pool", "seed1"), p("pool", "seed2")
    r = run("landscape", a, b, "--eval", ev(), "--layer", 5)
    check(r.returncode == 1 and "MoE blocks are 0, 1" in r.stderr and "vit.encoder.layer.L.moe" in r.stderr,
          "a block that is not MoE refused, the MoE ones listed: %s" % r.stderr.strip())
    oracle.write_safetensors(p("ids.safetensors"), {"input_ids": np.zeros((2, 5), np.int64)})
    r = run("landscape", a, b, "--eval", p("ids.safetensors"))
    check(r.returncode == 1 and "input_ids" in r.stderr and "pixel_values" in r.stderr,
          "a GPT-2's evaluation set on a ViT pair refused: %s" % r.stderr.strip())


if __name__ == "__main__":
    sys.exit(testutil.run_tests("test_vit_commands", (make_pool, test_info, test_layer_commands,
                                                      test_curve_landscape, test_study, test_diagnose_lesson,
                                                      test_usage), TMP))
