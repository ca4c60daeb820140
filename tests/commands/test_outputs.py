"""tests/commands/test_outputs.py - every output path is checked before the work, and
no output ever replaces or joins a file of an input checkpoint.

  * Inside an input: an output that is a file inside a checkpoint folder given as
    input (a directory argument, an index's folder) or any input file - by its own
    name, through a symlink or a hard link, the config.json read beside a single
    file - is refused with exit 1 by every command (info, eval --json and
    --dump-outputs, cost, curve, landscape, diagnose, study, align, merge,
    scramble), and the file is byte for byte unchanged. Beside a single-file input
    an output is fine.
  * Before the work: a missing directory, a directory where a file is meant, a
    parent that is a file, an output directory that is not empty: refused naming
    the option, before any input is read (here the evaluation set is not even a
    safetensors file, and that is not what the message is about).
  * One file or a directory: -o NAME.safetensors from a checkpoint whose layer is
    one file (a folder holding model.safetensors) writes one file, with the
    folder's config.json copied beside it when none is there (one already there
    is kept, with a note when it differs); a directory-like -o (OUT/) writes a
    folder holding the file under its own name and config.json; a sharded input
    writes a sharded directory (test_families checks its contents).
  * Linked shards: a Hugging Face cache snapshot (every file a relative symlink to
    ../../blobs/<sha>) aligned into a directory: the untouched shard in the output
    is the resolved file (a hard link), never a symlink left dangling there; a
    shard that is a FIFO is refused by name, never linked, nothing left behind."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
S = os.path.join(ROOT, "sample-checkpoints")
TMP = tempfile.mkdtemp(prefix="moescope_outputs_")


def p(*names):
    return os.path.join(TMP, *names)


def digest(path):
    """sha256 of a file, or of every file of a folder (name and bytes)."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for f in sorted(os.listdir(path)):
            h.update(f.encode())
            h.update(digest(os.path.join(path, f)).encode())
    else:
        h.update(open(path, "rb").read())
    return h.hexdigest()


def make_inputs():
    """A: sharded mixtral folder; B: the same family as one file in a folder with
    config.json; E: its evaluation set (inputs only); F: a single file with a
    config.json beside it."""
    rng = np.random.default_rng(3)
    W, cfg = ff.random_layer("mixtral", rng)
    ff.write_checkpoint(p("A"), "mixtral", W, cfg, shards=2)
    os.makedirs(p("B"))
    W2 = ff.scramble(W, [1, 0, 3, 2], [rng.permutation(W["w1"].shape[1]) for _ in range(4)])
    ff.write_checkpoint(p("B", "model.safetensors"), "mixtral", W2, cfg)
    json.dump(cfg, open(p("B", "config.json"), "w"))
    d = W["gate"].shape[1]
    x = rng.standard_normal((64, d)).astype(np.float32)
    ff.write_safetensors(p("E.safetensors"), [("inputs", "F32", [64, d], x.tobytes())])
    os.makedirs(p("F"))
    shutil.copy(p("B", "model.safetensors"), p("F", "one.safetensors"))
    shutil.copy(p("B", "config.json"), p("F", "config.json"))
    return cfg


def refused_inside(tag, args, victim, pattern="inside the folder"):
    """args refused with exit 1, the message matching, victim unchanged."""
    before = digest(victim) if os.path.exists(victim) else None
    r = run(*args)
    check(r.returncode == 1 and pattern in r.stderr,
          "%s: refused (exit %d, %s)" % (tag, r.returncode, r.stderr.strip()[-300:]))
    check("Sanitizer" not in r.stderr and "runtime error" not in r.stderr, "%s: sanitizer report" % tag)
    after = digest(victim) if os.path.exists(victim) else None
    check(before == after, "%s: %s changed" % (tag, victim))


def test_inside_inputs():
    A, B, E = p("A"), p("B"), p("E.safetensors")
    shard = p("A", "model-00001-of-00002.safetensors")
    bm = p("B", "model.safetensors")
    refused_inside("info DIR --json DIR/model.safetensors", ["info", B, "--json", bm], bm)
    refused_inside("info A --json A/new.json (a new file in the folder)", ["info", A, "--json", p("A", "new.json")],
                   A)
    refused_inside("cost A B --json A/shard", ["cost", A, B, "--json", shard], shard)
    refused_inside("eval B --json B/config.json", ["eval", B, "--eval", E, "--json", p("B", "config.json")],
                   p("B", "config.json"))
    refused_inside("eval A --dump-outputs A/shard", ["eval", A, "--eval", E, "--dump-outputs", shard], shard)
    refused_inside("landscape --png B/model.safetensors",
                   ["landscape", A, B, "--eval", E, "--points", 3, "--png", bm], bm)
    refused_inside("curve --csv A/config.json", ["curve", A, B, "--eval", E, "--points", 3, "--csv",
                                                 p("A", "config.json")], p("A", "config.json"))
    refused_inside("diagnose --json B/model.safetensors", ["diagnose", A, B, "--eval", E, "--json", bm], bm)
    refused_inside("study --json A/config.json", ["study", A, B, "--eval", E, "--points", 3, "--json",
                                                  p("A", "config.json")], p("A", "config.json"))
    refused_inside("align A_dir B_dir -o B_dir/model.safetensors", ["align", A, B, "-o", bm], bm)
    refused_inside("align B A -o A/sub (a sharded output inside A)", ["align", B, A, "-o", p("A", "sub")], A)
    refused_inside("merge B A -o B/model.safetensors", ["merge", B, A, "-o", bm], bm)
    refused_inside("merge --eval E -o E", ["merge", B, B, "--eval", E, "-o", E], E, "refusing to overwrite the input")
    refused_inside("scramble B -o B/model.safetensors", ["scramble", B, "-o", bm], bm)
    refused_inside("index argument: info INDEX --json FOLDER/x.json",
                   ["info", p("A", "model.safetensors.index.json"), "--json", p("A", "x.json")], A)
    # another name for a file of the folder: a symlink, a hard link
    os.symlink(shard, p("link.safetensors"))
    refused_inside("a symlink to a shard", ["info", A, "--json", p("link.safetensors")], shard,
                   "of the input checkpoint")
    os.link(bm, p("hard.safetensors"))
    refused_inside("a hard link to the model file", ["eval", B, "--eval", E, "--json", p("hard.safetensors")], bm,
                   "of the input checkpoint")
    # a single file: itself and the config.json read beside it; its neighbours are the user's
    one = p("F", "one.safetensors")
    refused_inside("scramble F -o F (the input itself)", ["scramble", one, "-o", one], one,
                   "refusing to overwrite the input")
    refused_inside("info F --json config.json beside it", ["info", one, "--json", p("F", "config.json")],
                   p("F", "config.json"), "read with the input")
    r = run("info", one, "--json", p("F", "info.json"))
    check(r.returncode == 0 and os.path.exists(p("F", "info.json")), "beside a single file: written (%s)" % r.stderr)


def test_before_work():
    """Refused before anything is read: the evaluation set here is not a safetensors
    file, and the checkpoint arguments do not exist for the one-input commands."""
    bad_e = p("garbage.safetensors")
    open(bad_e, "w").write("not a safetensors file")
    open(p("plain.txt"), "w").write("a file")
    os.makedirs(p("full"), exist_ok=True)
    open(p("full", "keep.txt"), "w").write("x")
    a, b = os.path.join(S, "dense8", "seed1.safetensors"), os.path.join(S, "dense8", "seed2.safetensors")
    e = os.path.join(S, "dense8", "eval.safetensors")
    missing = "/nonexistent-moescope/x.json"
    cases = [
        ("landscape --json", ["landscape", a, b, "--eval", bad_e, "--json", missing], "--json"),
        ("landscape --csv", ["landscape", a, b, "--eval", bad_e, "--csv", missing], "--csv"),
        ("landscape --png", ["landscape", a, b, "--eval", bad_e, "--png", missing], "--png"),
        ("landscape --curves-png", ["landscape", a, b, "--eval", bad_e, "--curves-png", missing], "--curves-png"),
        ("curve --png", ["curve", a, b, "--eval", bad_e, "--png", missing], "--png"),
        ("curve --csv", ["curve", a, b, "--eval", bad_e, "--csv", missing], "--csv"),
        ("study --json", ["study", a, b, "--eval", bad_e, "--json", missing], "--json"),
        ("study --latex", ["study", a, b, "--eval", bad_e, "--latex", missing], "--latex"),
        ("diagnose --json", ["diagnose", a, b, "--eval", bad_e, "--json", missing], "--json"),
        ("eval --json", ["eval", a, "--eval", bad_e, "--json", missing], "--json"),
        ("eval --dump-outputs", ["eval", a, "--eval", bad_e, "--dump-outputs", missing], "--dump-outputs"),
        ("cost --json", ["cost", "/nonexistent-a", "/nonexistent-b", "--json", missing], "--json"),
        ("info --json", ["info", "/nonexistent-a", "--json", missing], "--json"),
        ("align -o", ["align", "/nonexistent-a", "/nonexistent-b", "-o", missing], "-o"),
        ("merge -o", ["merge", "/nonexistent-a", "/nonexistent-b", "-o", missing], "-o"),
        ("scramble -o", ["scramble", "/nonexistent-a", "-o", missing], "-o"),
    ]
    for tag, args, opt in cases:
        r = run(*args)
        check(r.returncode == 1 and ("%s %s: the directory" % (opt, missing)) in r.stderr and "does not exist" in r.stderr,
              "%s: a missing directory refused first (exit %d: %s)" % (tag, r.returncode, r.stderr.strip()[-200:]))
    # a directory where a file is meant, a parent that is a file, a full output directory
    r = run("landscape", a, b, "--eval", bad_e, "--json", TMP)
    check(r.returncode == 1 and "is a directory; a file name is needed" in r.stderr, "a directory for --json: %s" % r.stderr)
    r = run("cost", a, b, "--json", p("plain.txt", "c.json"))
    check(r.returncode == 1 and "is not a directory" in r.stderr, "a file as the directory: %s" % r.stderr)
    r = run("align", p("A"), p("A"), "-o", p("full"))
    check(r.returncode == 1 and "not empty" in r.stderr and os.listdir(p("full")) == ["keep.txt"],
          "a full output directory: %s" % r.stderr)
    r = run("align", p("A"), p("A"), "-o", p("plain.txt"))
    check(r.returncode == 1 and "is not a directory" in r.stderr and open(p("plain.txt")).read() == "a file",
          "a file where a sharded directory is meant: %s" % r.stderr)
    # a read-only directory (permission bits do not bind root)
    if os.getuid() != 0:
        os.makedirs(p("ro"))
        os.chmod(p("ro"), 0o555)
        r = run("landscape", a, b, "--eval", bad_e, "--json", p("ro", "l.json"))
        check(r.returncode == 1 and "cannot create files in" in r.stderr, "a read-only directory: %s" % r.stderr)
    else:
        testutil.skip_part("a read-only directory (running as root: permission bits do not apply)")
    # two outputs, one file: still a usage error
    r = run("landscape", a, b, "--eval", e, "--json", p("same"), "--csv", p("same"))
    check(r.returncode == 2 and "same" in r.stderr, "two outputs one file: exit %d %s" % (r.returncode, r.stderr))
    # /dev/null is fine (written in place)
    r = run("cost", a, b, "--json", "/dev/null")
    check(r.returncode == 0, "--json /dev/null: %s" % r.stderr)


def test_one_file_or_dir(cfg):
    B = p("B")
    os.makedirs(p("out"))
    r = run("align", p("A"), B, "-o", p("out", "al.safetensors"))
    check(r.returncode == 0 and os.path.isfile(p("out", "al.safetensors")),
          "folder holding one file -> -o NAME.safetensors is one file (%s)" % r.stderr)
    check(os.path.exists(p("out", "config.json")) and
          open(p("out", "config.json"), "rb").read() == open(p("B", "config.json"), "rb").read(),
          "config.json copied beside the one-file output")
    r2 = run("info", p("out", "al.safetensors"), "--json", p("info_al.json"))
    check(r2.returncode == 0 and json.load(open(p("info_al.json")))["moe_layers"][0].get("family") == "mixtral",
          "the one-file output loads as its family: %s" % r2.stderr)
    # a config.json already there is kept, with a note when it differs
    os.makedirs(p("out2"))
    open(p("out2", "config.json"), "w").write('{"model_type": "mixtral", "other": 1}')
    r = run("scramble", B, "-o", p("out2", "s.safetensors"))
    check(r.returncode == 0 and os.path.isfile(p("out2", "s.safetensors")), "scramble: one file (%s)" % r.stderr)
    check(open(p("out2", "config.json")).read() == '{"model_type": "mixtral", "other": 1}',
          "an existing config.json is kept")
    check("config.json beside it is not the input's" in r.stderr, "the note on the kept config.json: %s" % r.stderr)
    r = run("merge", B, B, "-o", p("out2", "m.safetensors"))
    check(r.returncode == 0 and os.path.isfile(p("out2", "m.safetensors")), "merge: one file (%s)" % r.stderr)
    # a directory-like -o: the folder with the file under its own name and config.json
    r = run("align", p("A"), B, "-o", p("asdir") + "/")
    check(r.returncode == 0 and sorted(os.listdir(p("asdir"))) == ["config.json", "model.safetensors"],
          "-o OUT/: a folder %s (%s)" % (os.listdir(p("asdir")) if os.path.isdir(p("asdir")) else None, r.stderr))
    # a folder to a name without the file suffix: a folder again
    r = run("scramble", B, "-o", p("asdir2"))
    check(r.returncode == 0 and os.path.isdir(p("asdir2")) and
          sorted(os.listdir(p("asdir2"))) == ["config.json", "model.safetensors"],
          "folder -o NAME: a folder %s (%s)" % (os.listdir(p("asdir2")) if os.path.isdir(p("asdir2")) else None,
                                               r.stderr))
    # a native single file into a directory-like -o
    r = run("align", os.path.join(S, "dense4", "seed1.safetensors"), os.path.join(S, "dense4", "seed2.safetensors"),
            "-o", p("native") + "/")
    check(r.returncode == 0 and os.listdir(p("native")) == ["seed2.safetensors"],
          "native -o OUT/: OUT/seed2.safetensors (%s)" % r.stderr)
    # sharded: a directory
    r = run("align", B, p("A"), "-o", p("sh.safetensors"))
    check(r.returncode == 0 and os.path.isdir(p("sh.safetensors")), "a sharded input: a directory (%s)" % r.stderr)


def hf_cache(cfg):
    """models--x/snapshots/rev/ of symlinks to ../../blobs/<sha>, three shards."""
    rng = np.random.default_rng(5)
    W, _ = ff.random_layer("mixtral", rng)
    flat = p("flat")
    ff.write_checkpoint(flat, "mixtral", W, cfg, shards=3)
    root = p("hub", "models--x")
    os.makedirs(os.path.join(root, "blobs"))
    snap = os.path.join(root, "snapshots", "rev1")
    os.makedirs(snap)
    for f in os.listdir(flat):
        sha = hashlib.sha256(open(os.path.join(flat, f), "rb").read()).hexdigest()
        shutil.copy(os.path.join(flat, f), os.path.join(root, "blobs", sha))
        os.symlink(os.path.join("..", "..", "blobs", sha), os.path.join(snap, f))
    return snap


def test_linked_shards(cfg):
    snap = hf_cache(cfg)
    out = p("from_cache")
    r = run("align", snap, snap, "-o", out)
    check(r.returncode == 0, "align from a Hugging Face cache snapshot: %s" % r.stderr)
    last = os.path.join(out, "model-00003-of-00003.safetensors")
    check(os.path.exists(last) and not os.path.islink(last),
          "the untouched shard is the resolved file, not a symlink (%s)" %
          (os.readlink(last) if os.path.islink(last) else "missing" if not os.path.exists(last) else "ok"))
    if os.path.exists(last):
        check(os.stat(last).st_ino == os.stat(os.path.join(snap, "model-00003-of-00003.safetensors")).st_ino,
              "the untouched shard is hard-linked to the blob (no copy)")
    r = run("info", out, "--json", p("info_cache.json"))
    check(r.returncode == 0, "the output loads: %s" % r.stderr)
    # a shard that is a FIFO: refused by name, never linked (a hang guard, not a time limit)
    fifo_dir = p("fifo")
    shutil.copytree(p("flat"), fifo_dir)
    os.unlink(os.path.join(fifo_dir, "model-00003-of-00003.safetensors"))
    os.mkfifo(os.path.join(fifo_dir, "model-00003-of-00003.safetensors"))
    out = p("from_fifo")
    try:
        r = subprocess.run([testutil.MOESCOPE, "align", fifo_dir, fifo_dir, "-o", out], capture_output=True,
                           text=True, timeout=600)
        check(r.returncode == 1 and "model-00003-of-00003.safetensors: not a regular file" in r.stderr,
              "a FIFO shard is refused: exit %d %s" % (r.returncode, r.stderr.strip()[-200:]))
    except subprocess.TimeoutExpired:
        check(False, "align hangs on a FIFO shard")
    check(not os.path.exists(out) and not [x for x in os.listdir(TMP) if x.startswith("from_fifo")],
          "nothing left behind: %s" % [x for x in os.listdir(TMP) if x.startswith("from_fifo")])


def main():
    try:
        cfg = make_inputs()
        test_inside_inputs()
        test_before_work()
        test_one_file_or_dir(cfg)
        test_linked_shards(cfg)
    finally:
        subprocess.run(["chmod", "-R", "u+w", TMP])
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_outputs")


if __name__ == "__main__":
    sys.exit(main())
