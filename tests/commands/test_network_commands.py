"""tests/commands/test_network_commands.py - study, diagnose and the options of the
network commands, as a user runs them on a pool of GPT-2-layout seed folders
(tests/lib/gen_gpt2.py) laid out as sample-checkpoints/gpt/POOL/ is: backbone.safetensors
and eval.safetensors beside seed folders whose backbone shard links to it, and a teacher.

  - `study DIR`: the seeds are the pool (the backbone file and the teacher left out, and
    said so); each pair's numbers are what `landscape` gives for that pair; the proxy's
    rho and rank per pair and in the summary; the objective named;
  - `diagnose`: the block's findings, the backbone agreement, the chosen order's rank on
    the network's loss; a pair with another backbone refused, and with
    --interpolate-backbone a flag;
  - `merge --eval` on a network: the soup's network loss is what `eval` gives the written soup;
    `merge --layer all`: each block as its own merge writes it, every other tensor A's;
  - `cost --eval` / `align --eval` with the network's token set: the data-driven methods
    read the block's inputs under A (the same matrix and aligned block as a layer set of
    numpy's block inputs gives), `--layer all` each block's own; `landscape --method
    activation` (pairs matched by their activations, the other block aligned by
    activation on its own inputs) agrees with `curve --method activation`;
  - `lesson --print` on a network: its barriers are the network's (as `curve` gives them);
  - the orders: n = 8 is sampled (500 orders by default; `--samples N`: N, in landscape
    and study alike; `--exhaustive`: all 40320 are not asked here), n = 4 exhaustive;
  - usage: --interpolate-backbone on layer checkpoints, a --layer that is no MoE block.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_netcmd_")
T = 5


def p(*names):
    return os.path.join(TMP, *names)


def make_pool():
    cfg = gen_gpt2.config(moe_layers=[0, 2])
    back = gen_gpt2.backbone(cfg, 9)
    m1 = gen_gpt2.moe_blocks(cfg, 1)
    seeds = {"seed1": m1, "seed2": gen_gpt2.perturbed_copy(cfg, m1, 2)[0],
             "seed3": gen_gpt2.perturbed_copy(cfg, m1, 3)[0], "teacher": gen_gpt2.moe_blocks(cfg, 8)}
    gen_gpt2.write_pool(p("pool"), cfg, back, seeds, gen_gpt2.teacher_ids(cfg, {**back, **m1}, 2, N=8, T=10))
    # the teacher's MoE shard says what it is, as make_gpt.py writes it
    shard = p("pool", "teacher", "model-00002-of-00002.safetensors")
    t, _ = oracle.read_safetensors(shard)
    oracle.write_safetensors(shard, t, {"role": "teacher (not a seed)"})
    return cfg


def test_study():
    r = run("study", p("pool"), "--points", T, "--json", p("study.json"), "--layer", 2)
    check(r.returncode == 0, "study: %s" % r.stderr.strip())
    if r.returncode:
        return
    check("layer-only proxy at the block's own inputs" in r.stdout and "objective: network loss" in r.stdout,
          "the table names the objective and the proxy")
    S = json.load(open(p("study.json")))
    names = [os.path.basename(c) for c in S["checkpoints"]]
    check(names == ["seed1", "seed2", "seed3"], "the pool is the seeds: %s" % names)
    check("backbone.safetensors" in r.stdout and "teacher" in r.stdout, "what was left out is said: %s" % r.stdout[-300:])
    check("network loss, MoE block 2" in S.get("objective", ""), "the objective: %s" % S.get("objective"))
    check(len(S["pairs"]) == 3, "3 pairs")
    for pr in S["pairs"]:
        a, b = pr["a"], pr["b"]
        out = p("ls_%s_%s.json" % (os.path.basename(a), os.path.basename(b)))
        r = run("landscape", a, b, "--eval", p("pool", "eval.safetensors"), "--points", T, "--layer", 2,
                "--json", out, "-q")
        check(r.returncode == 0, "landscape of the pair: %s" % r.stderr)
        if r.returncode:
            continue
        L = json.load(open(out))
        for key in ("naive", "skip_order"):
            check(abs(pr[key]["barrier"] - L[key]["barrier"]) < 1e-12, "study pair %s barrier = landscape's" % key)
        for m in ("gate", "expert"):
            check(pr["methods"][m]["rank"] == L["methods"][m]["rank"] and
                  abs(pr["methods"][m]["barrier"] - L["methods"][m]["barrier"]) < 1e-12,
                  "study pair %s rank and barrier = landscape's" % m)
        px = pr.get("proxy", {})
        check(px and abs(px["spearman"] - L["proxy"]["spearman"]) < 1e-12 and
              px["best_network_rank"] == L["proxy"]["best_network_rank"], "study pair proxy = landscape's: %s" % px)
    rho = [pr["proxy"]["spearman"] for pr in S["pairs"]]
    check(abs(S["summary"]["proxy.spearman"]["mean"] - sum(rho) / 3) < 1e-12, "proxy rho in the summary")


def test_diagnose():
    a, b, ev = p("pool", "seed1"), p("pool", "seed2"), p("pool", "eval.safetensors")
    r = run("diagnose", a, b, "--eval", ev, "--json", p("diag.json"), "--points", T)
    check(r.returncode == 0, "diagnose: %s" % r.stderr)
    if r.returncode == 0:
        D = json.load(open(p("diag.json")))
        codes = {f["code"]: f for f in D["findings"]}
        check(codes.get("backbone", {}).get("severity") == "ok", "the backbone agrees: %s" % codes.get("backbone"))
        check("MoE block 0" in r.stdout and "network" in r.stdout, "diagnose names the block and the network")
        check(any("rank" in f["text"] and "orders" in f["text"] for f in D["findings"]),
              "the chosen order ranked (on the network's loss)")
    # B with another backbone
    cfg = gen_gpt2.config(moe_layers=[0, 2])
    back = gen_gpt2.backbone(cfg, 9)
    back["transformer.ln_f.bias"] = back["transformer.ln_f.bias"] + 1.0
    gen_gpt2.write_folder(p("other"), cfg, back, gen_gpt2.moe_blocks(cfg, 2), single=True)
    r = run("diagnose", a, p("other"), "--eval", ev)
    check(r.returncode == 1 and "transformer.ln_f.bias" in r.stderr, "another backbone refused: %s" % r.stderr)
    r = run("diagnose", a, p("other"), "--eval", ev, "--interpolate-backbone", "--json", p("diag2.json"), "--no-landscape")
    check(r.returncode == 0, "--interpolate-backbone: %s" % r.stderr)
    if r.returncode == 0:
        D = json.load(open(p("diag2.json")))
        f = [x for x in D["findings"] if x["code"] == "backbone"]
        check(f and f[0]["severity"] == "warn" and "ln_f.bias" in f[0]["text"], "the backbone flagged: %s" % f)


def test_lesson():
    a, b, ev = p("pool", "seed1"), p("pool", "seed2"), p("pool", "eval.safetensors")
    r = run("lesson", a, b, "--eval", ev, "--print", "--dir", p("lesson"))
    check(r.returncode == 0 and "step 7/7" in r.stdout and "network's next-token loss" in r.stdout,
          "the lesson on a network: %s %s" % (r.returncode, r.stderr.strip()))
    # every printed command runs as printed (the steps' files are networks, kept in --dir)
    lines = [ln.split("reproduce:", 1)[1] for ln in r.stdout.splitlines() if "reproduce:" in ln]
    check(len(lines) >= 6, "the lesson prints its commands: %d lines" % len(lines))
    for ln in lines:
        sh = subprocess.run(["bash", "-e", "-c", ln], capture_output=True, text=True)
        check(sh.returncode == 0, "the lesson's command runs: %s -> %s" % (ln.strip()[:120], sh.stderr.strip()[-300:]))
    check(os.path.isdir(p("lesson", "scrambled_A")) and not os.path.exists(p("lesson", "grouped_A")),
          "a network lesson's files: network folders, none for the group step: %s" % os.listdir(p("lesson")))
    c = run("curve", a, b, "--eval", ev, "--points", 25)
    # the curve table's row (name, 4 experts, barrier), not the intervals' (4 fields)
    naive = [ln.split()[5] for ln in c.stdout.splitlines() if ln.startswith("naive ") and len(ln.split()) > 5]
    import re
    m = re.search(r"the barrier is ([0-9.e-]+) above the chord", r.stdout)
    check(naive and m and abs(float(m.group(1)) - float(naive[0])) < 1e-5,
          "the lesson's naive barrier is the network's (curve): %s vs %s" % (m and m.group(1), naive))


def test_merge():
    a, b, ev = p("pool", "seed1"), p("pool", "seed2"), p("pool", "eval.safetensors")
    r = run("merge", a, b, "--alpha", 0.5, "-o", p("soup"), "--eval", ev, "--alpha-sweep", 5)
    check(r.returncode == 0 and "the network's next-token loss" in r.stdout, "merge --eval on a network: %s"
          % r.stderr.strip())
    e = run("eval", p("soup"), "--eval", ev, "--json", p("soup.json"))
    import re
    m = re.search(r"soup \(1 - 0.5\) A \+ 0.5 B'\s+loss ([0-9.]+)", r.stdout)
    check(e.returncode == 0 and m and abs(float(m.group(1)) - json.load(open(p("soup.json")))["loss"]) < 1e-6,
          "the soup's network loss is the written checkpoint's: %s" % (m and m.group(1)))
    # --layer all: every MoE block merged as a merge of that block alone writes it, the rest A's
    r = run("merge", a, b, "-o", p("soup_all"), "--layer", "all")
    check(r.returncode == 0 and r.stdout.count("layer transformer.h.") == 2 and "in every MoE layer" in r.stdout,
          "merge --layer all: both blocks: %s %s" % (r.stdout, r.stderr.strip()))
    if r.returncode:
        return
    every, ta = gen_gpt2.read_folder(p("soup_all"))[1], gen_gpt2.read_folder(a)[1]
    for L in ("transformer.h.0.mlp", "transformer.h.2.mlp"):
        r = run("merge", a, b, "-o", p("soup_" + L), "--layer", L)
        one = gen_gpt2.read_folder(p("soup_" + L))[1] if r.returncode == 0 else {}
        keys = [k for k in one if k.startswith(L + ".")]
        check(keys and all((every[k] == one[k]).all() for k in keys), "merge --layer all: %s as its own merge" % L)
    rest = [k for k in ta if not k.startswith(("transformer.h.0.mlp.", "transformer.h.2.mlp."))]
    check(rest and all((every[k] == ta[k]).all() for k in rest), "merge --layer all: every other tensor A's")
    r = run("merge", a, b, "-o", p("soup_all2"), "--layer", "all", "--eval", ev)
    check(r.returncode == 2 and "--eval evaluates one layer's soup" in r.stderr, "merge --layer all --eval: %s" % r.stderr)


def test_methods_on_network():
    """cost / align --eval with a network's token set: the data-driven methods read the
    block's own inputs under A, as they read a layer's set holding those inputs (numpy's)"""
    import numpy as np
    import gpt2_ref
    a, b, ev = p("pool", "seed1"), p("pool", "seed2"), p("pool", "eval.safetensors")
    X = []
    gpt2_ref.logits(gpt2_ref.load(a), gpt2_ref.read_safetensors(ev)[0]["input_ids"],
                    hook=lambda i, x: X.append(x) or x)
    lay = p("block2_inputs.safetensors")  # block 2 is the second MoE block
    oracle.write_safetensors(lay, {"inputs": X[1].astype(np.float32)}, {})
    L = "transformer.h.2.mlp"
    got = {}
    for tag, e in (("network", ev), ("layer", lay)):
        r = run("cost", a, b, "--layer", L, "--eval", e, "--method", "activation", "--json", p("c_%s.json" % tag))
        check(r.returncode == 0 and "router" in r.stdout, "cost --eval (%s set): %s" % (tag, r.stderr.strip()))
        got[tag] = json.load(open(p("c_%s.json" % tag)))["matrix"] if r.returncode == 0 else None
        r = run("align", a, b, "-o", p("al_" + tag), "--layer", L, "--eval", e, "--method", "activation")
        check(r.returncode == 0, "align --method activation --eval (%s set): %s" % (tag, r.stderr.strip()))
    if got["network"] and got["layer"]:
        d = np.abs(np.array(got["network"]) - np.array(got["layer"])).max()
        check(d < 1e-4, "cost --eval on the network's tokens reads the block's inputs (max diff %.3g)" % d)
    if os.path.isdir(p("al_network")) and os.path.isdir(p("al_layer")):
        ta, tb = gen_gpt2.read_folder(p("al_network"))[1], gen_gpt2.read_folder(p("al_layer"))[1]
        check(all((ta[k] == tb[k]).all() for k in ta if k.startswith(L)), "align: the same aligned block either way")
    r = run("align", a, b, "-o", p("al_all"), "--layer", "all", "--eval", ev, "--method", "router")
    check(r.returncode == 0 and r.stdout.count("(router, centred)") == 2, "align --layer all --method router "
          "--eval on a network: each block's own inputs: %s %s" % (r.stdout, r.stderr.strip()))
    r = run("align", a, b, "-o", p("al_none"), "--method", "activation")
    check(r.returncode == 2 and "needs an evaluation set" in r.stderr, "without --eval: %s" % r.stderr.strip())
    # landscape and curve --method activation: the chosen block's pairs matched by their
    # activations, the other block aligned by activation on its own inputs (curve refused
    # it before: the other block had no inputs); the two agree
    r = run("landscape", a, b, "--eval", ev, "--layer", 2, "--method", "activation", "--points", T, "--no-proxy",
            "-q", "--json", p("lm.json"))
    c = run("curve", a, b, "--eval", ev, "--layer", 2, "--method", "activation", "--points", T, "--json",
            p("cm.json"))
    check(r.returncode == 0 and c.returncode == 0, "landscape, curve --method activation on a network: %s %s"
          % (r.stderr.strip(), c.stderr.strip()))
    if r.returncode == 0 and c.returncode == 0:
        J, C = json.load(open(p("lm.json"))), json.load(open(p("cm.json")))["curves"]
        for name, lb in (("activation", J["methods"]["activation"]["barrier"]), ("skip_order", J["skip_order"]["barrier"])):
            check(abs(lb - C[name]["barrier"]) < 1e-6, "network --method activation: %s barrier %.8g, curve's %.8g"
                  % (name, lb, C[name]["barrier"]))


def test_usage():
    import gen_ckpt
    lay = p("layer.safetensors")
    gen_ckpt.write_layer(lay, seed=1)
    gen_ckpt.write_evalset(p("lev.safetensors"), *gen_ckpt.make_layer(1), seed=1)
    for cmd in ("landscape", "curve", "diagnose"):
        r = run(cmd, lay, lay, "--eval", p("lev.safetensors"), "--interpolate-backbone")
        check(r.returncode == 2 and "networks" in r.stderr, "%s --interpolate-backbone on layers: usage error: %s"
              % (cmd, r.stderr.strip()))
    a, b, ev = p("pool", "seed1"), p("pool", "seed2"), p("pool", "eval.safetensors")
    r = run("landscape", a, b, "--eval", ev, "--layer", 1)
    check(r.returncode == 1 and "MoE blocks are 0, 2" in r.stderr, "a dense block refused, the MoE ones listed: %s"
          % r.stderr.strip())
    r = run("eval", a, "--eval", ev, "--layer", "transformer.h.7.mlp")
    check(r.returncode == 1 and "0, 2" in r.stderr, "a missing block refused: %s" % r.stderr.strip())
    r = run("landscape", a, lay, "--eval", ev)
    check(r.returncode == 1 and lay in r.stderr, "a network with a bare layer refused: %s" % r.stderr.strip())


def test_sampled_orders():
    """n = 8 experts: --samples N samples N orders (it enumerated all 40320 before)"""
    cfg = gen_gpt2.config(moe_layers=[0], n=8)
    back = gen_gpt2.backbone(cfg, 9)
    m1 = gen_gpt2.moe_blocks(cfg, 1)
    gen_gpt2.write_pool(p("eight"), cfg, back, {"seed1": m1, "seed2": gen_gpt2.perturbed_copy(cfg, m1, 2)[0]},
                        gen_gpt2.teacher_ids(cfg, {**back, **m1}, 2, N=4, T=8))
    a, b, ev = p("eight", "seed1"), p("eight", "seed2"), p("eight", "eval.safetensors")
    for cmd, args in (("landscape", (a, b, "--eval", ev)), ("study", (p("eight"),))):
        r = run(cmd, *args, "--points", 3, "--samples", 7, "--no-proxy", "-q", "--json", p("eight.json"))
        check(r.returncode == 0, "%s --samples 7 on n = 8: %s" % (cmd, r.stderr.strip()))
        if r.returncode == 0:
            J = json.load(open(p("eight.json")))
            got = (J["pairs"][0]["orders_ranked"], J["pairs"][0]["orders_in_set"], J["exhaustive"]) \
                if cmd == "study" else (J["norders"], J["orders_in_set"], J["exhaustive"])
            check(got == (7, 40320, False), "%s --samples 7: (ranked, of, exhaustive) %s" % (cmd, got))


def main():
    try:
        make_pool()
        test_sampled_orders()
        test_study()
        test_diagnose()
        test_lesson()
        test_merge()
        test_methods_on_network()
        test_usage()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_network_commands")


if __name__ == "__main__":
    sys.exit(main())
