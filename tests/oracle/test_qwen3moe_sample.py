"""tests/oracle/test_qwen3moe_sample.py - the committed Qwen3-MoE pool
(sample-checkpoints/qwen3moe/, make_qwen3moe.py) is what it says it is:

  - four seeds in Qwen3MoeForCausalLM's layout: config.json with model_type qwen3_moe,
    every tensor name transformers' (and no other), each seed's first shard the pool's
    backbone (one file), its MoE shard's metadata naming the recipe;
  - each seed's next-token loss and accuracy on the pool's evaluation set, by
    tests/lib/decoder_ref.py (numpy float64, written from transformers' modelling
    code), equal moescope's (`eval --json`, 1e-5 relative) and the loss PyTorch
    recorded when it made the seed (1e-4);
  - the loss is the same bits with one thread and with eight, run six at once (fewer
    sequences per thread than threads: idle threads take the items' MLP panels, and
    a gated MLP's panels must not share hidden rows);
  - `study seed1 seed2` (11 points, as measure.py --qwen3moe runs it) reproduces the
    committed README table's row 1-2: losses, naive, skip-order, both methods' barriers
    and ranks, best and worst (to the table's 4 decimals).

moescope runs as its release build (MOESCOPE_REL): the data path is the one
test_decoder_oracle checks under the sanitizers on small generated models.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import decoder_ref  # noqa: E402
import family_fixtures as ff  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

POOL = os.path.join(testutil.ROOT, "sample-checkpoints", "qwen3moe")
README = os.path.join(testutil.ROOT, "sample-checkpoints", "README.md")
SEEDS = ["seed%d" % s for s in (1, 2, 3, 4)]
TMP = tempfile.mkdtemp(prefix="moescope_qwen3moe_")


def expected_names(c):
    """Qwen3MoeForCausalLM's state_dict names for config c (experts one by one)."""
    names = {"model.embed_tokens.weight", "model.norm.weight"}
    if not c["tie_word_embeddings"]:
        names.add("lm_head.weight")
    for i in range(c["num_hidden_layers"]):
        P = "model.layers.%d." % i
        names |= {P + "input_layernorm.weight", P + "post_attention_layernorm.weight"}
        names |= {P + "self_attn.%s.weight" % k for k in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")}
        if decoder_ref.is_moe(c, i):
            names.add(P + "mlp.gate.weight")
            names |= {P + "mlp.experts.%d.%s.weight" % (e, k) for e in range(c["num_experts"])
                      for k in ("gate_proj", "up_proj", "down_proj")}
        else:
            names |= {P + "mlp.%s.weight" % k for k in ("gate_proj", "up_proj", "down_proj")}
    return names


def check_layout(seed):
    d = os.path.join(POOL, seed)
    c = json.load(open(os.path.join(d, "config.json")))
    check(c.get("model_type") == "qwen3_moe" and c.get("architectures") == ["Qwen3MoeForCausalLM"],
          "%s: config.json is Qwen3-MoE's (%s, %s)" % (seed, c.get("model_type"), c.get("architectures")))
    wm = json.load(open(os.path.join(d, "model.safetensors.index.json")))["weight_map"]
    want = expected_names(c)
    check(set(wm) == want, "%s: the tensor names are Qwen3MoeForCausalLM's (extra %s, missing %s)"
          % (seed, sorted(set(wm) - want)[:4], sorted(want - set(wm))[:4]))
    s1 = os.path.join(d, "model-00001-of-00002.safetensors")
    check(os.path.realpath(s1) == os.path.realpath(os.path.join(POOL, "backbone.safetensors")),
          "%s: its first shard is the pool's backbone" % seed)
    moe_shard = os.path.join(d, "model-00002-of-00002.safetensors")
    raw, meta = ff.read_safetensors(moe_shard)
    check(all(k.startswith("model.layers.1.mlp.") for k in raw) and len(raw) == 1 + 3 * c["num_experts"],
          "%s: the second shard holds the MoE block alone" % seed)
    check("paper's recipe" in meta.get("recipe", ""), "%s: its metadata names the recipe (%r)" % (seed, meta.get("recipe")))
    return meta


def check_losses(seed, meta, ev):
    d = os.path.join(POOL, seed)
    loss, acc, _ = decoder_ref.evaluate(d, ev)
    out = os.path.join(TMP, "eval.json")
    r = run("eval", d, "--eval", ev, "--json", out, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "%s: eval: %s" % (seed, r.stderr.strip()))
    if r.returncode:
        return None
    j = json.load(open(out))
    check(abs(j["loss"] - loss) <= 1e-5 * loss, "%s: moescope's loss %.8f is numpy's %.8f" % (seed, j["loss"], loss))
    check(abs(j["accuracy"] - acc) <= 2.0 / 4096, "%s: accuracy %.6f vs numpy %.6f" % (seed, j["accuracy"], acc))
    rec = float(meta["test_loss"])
    check(abs(rec - loss) < 1e-4, "%s: the loss PyTorch recorded (%.6f) is numpy's (%.6f)" % (seed, rec, loss))
    return loss


def check_threads(ev):
    """eval --threads 1 against six concurrent eval --threads 8: the same loss, bit for bit"""
    d = os.path.join(POOL, "seed1")

    def cmd(k, out):
        return [testutil.MOESCOPE_REL, "eval", d, "--eval", ev, "--threads", str(k), "--json", out]
    one = os.path.join(TMP, "t1.json")
    r = run(*cmd(1, one)[1:], binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "eval --threads 1: %s" % r.stderr.strip())
    outs = [os.path.join(TMP, "t8_%d.json" % i) for i in range(6)]
    procs = [subprocess.Popen(cmd(8, o), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for o in outs]
    codes = [p.wait() for p in procs]
    check(r.returncode == 0 and codes == [0] * 6, "six concurrent eval --threads 8 exit 0 (%s)" % codes)
    if r.returncode or any(codes):
        return
    want = json.load(open(one))["loss"]
    got = [json.load(open(o))["loss"] for o in outs]
    check(all(g == want for g in got), "8 threads, six at once: loss %s, one thread's %r" % (sorted(set(got)), want))


def readme_row():
    """The committed table's row 1-2 as a list of cells (None when absent)."""
    text = open(README).read()
    m = re.search(r"<!-- qwen3moe study table begin -->(.*?)<!-- qwen3moe study table end -->", text, re.S)
    if not m:
        return None
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "1–2":
            return cells
    return None


def num_rank(cell):
    """'0.1234 (2/24)' -> (0.1234, 2)"""
    m = re.match(r"([0-9.]+) \((\d+)/\d+\)", cell)
    return (float(m.group(1)), int(m.group(2))) if m else (None, None)


def check_study(ev):
    row = readme_row()
    check(row is not None, "README.md: the qwen3moe table has a row 1–2")
    if row is None:
        return
    out = os.path.join(TMP, "study.json")
    r = run("study", os.path.join(POOL, "seed1"), os.path.join(POOL, "seed2"), "--eval", ev, "--points", 11,
            "--no-proxy", "-q", "--json", out, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "study seed1 seed2: %s" % r.stderr.strip())
    if r.returncode:
        return
    p = json.load(open(out))["pairs"][0]
    e, g = p["methods"]["expert"], p["methods"]["gate"]
    got = [p["endpoints"]["loss_a"], p["endpoints"]["loss_b"], p["naive"]["barrier"], p["skip_order"]["barrier"],
           e["barrier"], g["barrier"], p["best"]["barrier"], p["worst"]["barrier"]]
    want = [float(row[i]) for i in (1, 2, 3, 4)] + [num_rank(row[5])[0], num_rank(row[6])[0]] + \
        [float(row[i]) for i in (7, 8)]
    what = ["loss A", "loss B", "naive", "skip-order", "expert", "gate", "best", "worst"]
    for w, a, b in zip(what, got, want):
        check(b is not None and abs(a - b) <= 6e-5, "study 1–2: %s %.6f, the README says %s" % (w, a, b))
    check((e["rank"], g["rank"]) == (num_rank(row[5])[1], num_rank(row[6])[1]),
          "study 1–2: ranks expert %d, gate %d as the README's %s, %s" % (e["rank"], g["rank"], row[5], row[6]))


def main():
    if not all(os.path.isdir(os.path.join(POOL, s)) for s in SEEDS):
        check(False, "%s: seed1..seed4 are committed" % POOL)
        return
    ev = os.path.join(POOL, "eval.safetensors")
    ids = decoder_ref.read_tensors(ev)["input_ids"]
    check(ids.ndim == 2 and ids.shape[0] * (ids.shape[1] - 1) >= 4096,
          "the evaluation set holds input_ids [N, T] of >= 4096 positions (%s)" % (ids.shape,))
    losses = [check_losses(s, check_layout(s), ev) for s in SEEDS]
    if all(x is not None for x in losses):
        check(max(losses) - min(losses) < 0.05, "the seeds end near one another (%s)" % losses)
    check_threads(ev)
    check_study(ev)


if __name__ == "__main__":
    main()
    sys.exit(testutil.summary("test_qwen3moe_sample"))
