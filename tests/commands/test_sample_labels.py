"""tests/commands/test_sample_labels.py - every committed sample says what it is.

Each seed's metadata "recipe" (shown by `info`, and in `info --json`'s "metadata",
for a sharded network the shard holding the MoE block's gate) names how it was
made: the teacher-student students (teacher4/8 and the distilled gpt/ pools) say
they approximate one teacher's function and, for gpt/, that this is not the paper's
recipe; seeds trained on the task's own loss (the digits layers, mixtral4, vit/,
gpt/paper4, qwen3moe) say so. The README and the manual label every gpt/ pool the same way
and never call the distilled pools the paper's own experiment.
"""
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import ROOT, check, run  # noqa: E402

S = os.path.join(ROOT, "sample-checkpoints")
TMP = tempfile.mkdtemp(prefix="moescope_labels_")
DISTILLED = ("teacher-student distillation", "not the paper's recipe", "LM loss never used",
             "all seeds approximate one function")


def recipe(path):
    out = os.path.join(TMP, "info.json")
    if os.path.exists(out):
        os.remove(out)
    r = run("info", path, "--json", out)
    check(r.returncode == 0, "info %s: exit 0 (%s)" % (path, r.stderr.strip()[-200:]))
    if r.returncode:
        return ""
    got = json.load(open(out)).get("metadata", {}).get("recipe", "")
    check(got and got in r.stdout, "info %s: prints the recipe, --json holds it" % path)
    return got


def want(path, *needles):
    got = recipe(path)
    for n in needles:
        check(n in got, "%s: recipe says '%s' (it says '%s')" % (os.path.relpath(path, S), n, got))


def test_layers():
    for s in sorted(glob.glob(os.path.join(S, "teacher[48]", "seed*.safetensors"))):
        want(s, "teacher-student", "all seeds approximate one function")
    for t in sorted(glob.glob(os.path.join(S, "teacher[48]", "teacher.safetensors"))):
        want(t, "random teacher")
    for v in ("dense4", "topk4", "shared4", "dense8"):
        for s in sorted(glob.glob(os.path.join(S, v, "seed*.safetensors"))):
            want(s, "class loss alone", "no teacher")
    for s in sorted(glob.glob(os.path.join(S, "mixtral4", "seed*"))):
        want(s, "class loss alone", "Mixtral")
    r = run("info", os.path.join(S, "topk4", "seed1.safetensors"))
    check("recipe" in r.stdout and "class loss alone" in r.stdout, "info prints the recipe")


def test_networks():
    pools = sorted(d for d in glob.glob(os.path.join(S, "gpt", "*")) if os.path.isdir(d))
    check(len(pools) >= 5, "gpt/ pools found")
    for pool in pools:
        seeds = sorted(glob.glob(os.path.join(pool, "seed*")))
        check(len(seeds) == 4, "%s: 4 seeds" % pool)
        for s in seeds:
            if os.path.basename(pool) == "paper4":
                want(s, "the paper's recipe", "LM) loss alone", "no teacher")
            else:
                want(s, *DISTILLED)
    r = run("info", os.path.join(S, "gpt", "topk4", "seed1"))
    check("teacher-student distillation" in r.stdout and "model-00002-of-00002" in r.stdout,
          "info on a network folder prints its MoE shard's metadata")
    for s in sorted(glob.glob(os.path.join(S, "vit", "*", "seed*"))):
        want(s, "the paper's recipe", "class loss", "no teacher")
    seeds = sorted(glob.glob(os.path.join(S, "qwen3moe", "seed*")))
    check(len(seeds) == 4, "qwen3moe/: 4 seeds")
    for s in seeds:
        want(s, "the paper's recipe", "LM) loss alone", "no teacher")


def test_docs():
    readme = open(os.path.join(S, "README.md")).read()
    manual = open(os.path.join(ROOT, "assets", "moescope.1")).read()
    for name, text in (("sample-checkpoints/README.md", readme), ("the manual", manual)):
        flat = " ".join(text.replace("\\-", "-").split())
        check("the paper's own experiment" not in flat, "%s: gpt/ is not called the paper's own experiment" % name)
        check("teacher-student distillation" in flat or "teacher–student distillation" in flat,
              "%s: says the gpt/ pools are teacher-student distillation" % name)
        if os.path.isdir(os.path.join(S, "gpt", "paper4")):
            check("paper4" in flat, "%s: names gpt/paper4" % name)
        check("qwen3moe" in flat, "%s: names the qwen3moe pool" % name)


def main():
    sys.exit(testutil.run_tests("test_sample_labels", [test_layers, test_networks, test_docs], TMP))


if __name__ == "__main__":
    main()
