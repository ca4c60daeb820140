"""tests/commands/test_provenance.py - every report says how it was made: landscape,
diagnose and cost JSON carry "provenance" (version, command, inputs with size
and SHA-256, threads, points, date, ranks = processes); the landscape and curve CSVs start
with "# " lines; PNGs carry tEXt chunks. The SHA-256 of each input equals
sha256sum's; the version equals `moescope --version` and is not empty, also in
a copy of the sources without .git (a release tarball), where the Makefile
falls back to the constant in include/io/provenance.h."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
D4 = os.path.join(ROOT, "sample-checkpoints", "dense4")
A, B, E = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))


def sha256sum(path):
    out = subprocess.run(["sha256sum", path], capture_output=True, text=True, check=True).stdout
    return out.split()[0]


def version():
    r = run("--version")
    first = r.stdout.strip().split("\n")[0]  # then the BLAS and CPU lines
    return first.split(" ", 1)[1] if r.returncode == 0 and " " in first else ""


def machine():
    """(blas, kernel, cpu) as `moescope --version` prints them on its later lines."""
    lines = run("--version").stdout.split("\n")
    blas = next((x[6:] for x in lines if x.startswith("blas: ")), "")
    cpu = next((x[5:] for x in lines if x.startswith("cpu: ")), "")
    m = re.fullmatch(r"(.*) \((\S+) kernels\)", blas)
    return (m.group(1), m.group(2), cpu) if m else ("", "", cpu)


def check_prov(tag, P, inputs, points=None, cmd_word=None):
    v = version()
    check(v != "" and P["version"] == v, "%s: version %r vs --version %r" % (tag, P["version"], v))
    check(cmd_word is None or cmd_word in P["command"], "%s: command line %r" % (tag, P["command"]))
    got = {x["path"]: x for x in P["inputs"]}
    check(set(got) == set(inputs), "%s: inputs %s" % (tag, sorted(got)))
    for p in inputs:
        x = got.get(p)
        if x is None:
            continue
        check(x["bytes"] == os.path.getsize(p), "%s: size of %s" % (tag, p))
        check(x["sha256"] == sha256sum(p), "%s: SHA-256 of %s equals sha256sum" % (tag, os.path.basename(p)))
    check(isinstance(P["threads"], (int, float)) and P["threads"] >= 1, "%s: threads %s" % (tag, P["threads"]))
    check(points is None or P["points"] == points, "%s: points %s" % (tag, P["points"]))
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", P["date"]) is not None, "%s: date %r" % (tag, P["date"]))
    check(P["ranks"] == 1, "%s: ranks (processes) 1 for the plain binary" % tag)
    # the machine: float32 results differ in their last bits between BLAS kernels
    blas, kernel, cpu = machine()
    check(kernel != "" and (P.get("blas"), P.get("blas_kernel"), P.get("cpu")) == (blas, kernel, cpu),
          "%s: cpu/blas/blas_kernel %r as --version says %r" % (tag, [P.get(k) for k in ("cpu", "blas", "blas_kernel")],
                                                            (cpu, blas, kernel)))
    want = os.environ.get("OPENBLAS_CORETYPE")
    check(not want or P.get("blas_kernel", "").lower() == want.lower(),
          "%s: blas_kernel %r is OPENBLAS_CORETYPE=%s" % (tag, P.get("blas_kernel"), want))


def png_text(path):
    data = open(path, "rb").read()
    out, i = {}, 8
    while i + 8 <= len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        typ = data[i + 4:i + 8]
        body = data[i + 8:i + 8 + n]
        if typ == b"tEXt":
            k, _, v = body.partition(b"\0")
            out[k.decode("latin-1")] = v.decode("latin-1")
        elif typ == b"zTXt":
            k, _, rest = body.partition(b"\0")
            out[k.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        i += 12 + n
    return out


def test_reports(tmp):
    js, csv, png = (os.path.join(tmp, f) for f in ("l.json", "l.csv", "l.png"))
    r = run("landscape", A, B, "--eval", E, "--points", 7, "-q", "--json", js, "--csv", csv, "--png", png)
    check(r.returncode == 0, "landscape ran: %s" % r.stderr[-300:])
    if r.returncode:
        return
    check_prov("landscape json", json.load(open(js))["provenance"], [A, B, E], 7, "landscape")
    head = [l for l in open(csv).read().splitlines() if l.startswith("# ")]
    check(any(l == "# moescope: " + version() for l in head), "landscape CSV: version line")
    check(any(l.startswith("# input: %s %d %s" % (sha256sum(A), os.path.getsize(A), A)) for l in head),
          "landscape CSV: input line with SHA-256 and size")
    check(any(l == "# points: 7" for l in head) and any(l == "# ranks: 1" for l in head), "CSV: points, ranks")
    blas, kernel, cpu = machine()
    check("# cpu: " + cpu in head and "# blas: %s (%s kernels)" % (blas, kernel) in head, "CSV: cpu and blas lines")
    first = [l for l in open(csv).read().splitlines() if not l.startswith("#")][0]
    check(first.startswith("rank,order,barrier"), "CSV: the header follows the comments")
    t = png_text(png)
    check(t.get("Software") == "moescope " + version(), "PNG Software chunk %r" % t.get("Software"))
    check("landscape" in t.get("moescope.command", ""), "PNG command chunk")
    check(sha256sum(E) in t.get("moescope.inputs", ""), "PNG inputs chunk holds the eval set's SHA-256")
    check(t.get("moescope.points") == "7" and t.get("moescope.ranks") == "1", "PNG points and ranks chunks")
    check(t.get("moescope.machine") == "%s (%s kernels) on %s" % (blas, kernel, cpu),
          "PNG machine chunk %r" % t.get("moescope.machine"))
    dj, cj, ccsv = (os.path.join(tmp, f) for f in ("d.json", "c.json", "c.csv"))
    r = run("diagnose", A, B, "--eval", E, "--json", dj)
    check(r.returncode == 0 and "provenance" in json.load(open(dj)), "diagnose JSON has provenance")
    if r.returncode == 0:
        check_prov("diagnose json", json.load(open(dj))["provenance"], [A, B, E], None, "diagnose")
    r = run("cost", A, B, "--json", cj)
    check(r.returncode == 0, "cost ran")
    if r.returncode == 0:
        check_prov("cost json", json.load(open(cj))["provenance"], [A, B], None, "cost")
    r = run("curve", A, B, "--eval", E, "--points", 5, "--csv", ccsv)
    check(r.returncode == 0 and open(ccsv).readline().startswith("# moescope: "), "curve CSV starts with provenance")


def test_tarball(tmp):
    """A copy without .git: `make version` is the fallback constant, and the
    compiled version function returns it."""
    src = os.path.join(tmp, "tarball")
    os.mkdir(src)
    for d in ("src", "include", "ui"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(src, d))
    shutil.copy(os.path.join(ROOT, "Makefile"), src)
    r = subprocess.run(["make", "-s", "-C", src, "version"], capture_output=True, text=True)
    fallback = re.search(r'#define MS_VERSION_FALLBACK "(.*)"', open(os.path.join(ROOT, "include", "io", "provenance.h")).read())
    check(r.returncode == 0 and fallback and r.stdout.strip() == fallback.group(1) != "",
          "tarball: make version is the fallback (%r)" % r.stdout.strip())
    # provenance lists a checkpoint folder's files with the checkpoint reader
    objs = ["build/rel/src/%s.o" % m for m in ("io/provenance", "io/sha256", "core/ms_error", "core/ms_alloc",
                                                "core/ms_text", "io/checkpoint", "io/safetensors",
                                                "io/atomic_file", "io/files_read", "io/config_json", "core/progress",
                                                "core/env")]
    r = subprocess.run(["make", "-s", "-C", src] + objs, capture_output=True, text=True)
    check(r.returncode == 0, "tarball: provenance.o compiles (%s)" % r.stderr[-300:])
    if r.returncode:
        return
    stub = os.path.join(tmp, "v.c")
    open(stub, "w").write('#include <stdio.h>\nconst char *ms_version(void);\n'
                          'int main(void) { printf("[%s]\\n", ms_version()); return 0; }\n')
    exe = os.path.join(tmp, "v")
    libs = subprocess.run(["pkg-config", "--libs", "libcjson", "openblas"], capture_output=True, text=True).stdout.split()
    r = subprocess.run(["cc", "-o", exe, stub] + [os.path.join(src, o) for o in objs] + libs + ["-lpthread", "-lm"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "tarball: link the version stub (%s)" % r.stderr[-300:])
    if r.returncode == 0:
        out = subprocess.run([exe], capture_output=True, text=True).stdout.strip()
        check(out == "[%s]" % fallback.group(1), "tarball: ms_version() is %s" % out)
    # in this tree: --version is git describe when there is a .git, never empty
    v = version()
    check(v != "", "--version is not empty")
    if os.path.exists(os.path.join(ROOT, ".git")) and shutil.which("git"):
        g = subprocess.run(["git", "-C", ROOT, "describe", "--tags", "--always"], capture_output=True, text=True)
        if g.returncode == 0:
            check(v.startswith(g.stdout.strip()), "--version %r starts with git describe %r" % (v, g.stdout.strip()))


def test_kernel_pick():
    """Where OpenBLAS does not know the CPU and falls back to its SSE3 kernels on a
    CPU with AVX-512 or AVX2, moescope runs on the CPU's own (and --version says
    so); MOESCOPE_OPENBLAS_OWN=1 and a user's OPENBLAS_CORETYPE keep their choice."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "MOESCOPE_OPENBLAS_FALLBACK")}
    ver = lambda **kw: subprocess.run([testutil.MOESCOPE, "--version"], capture_output=True, text=True,  # noqa: E731
                                      env=dict(env, **kw)).stdout
    own = ver(MOESCOPE_OPENBLAS_OWN="1")
    flags = " " + next((ln.split(":", 1)[1] for ln in open("/proc/cpuinfo") if ln.startswith("flags")), "") + " "
    avx512 = all(" %s " % f in flags for f in ("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"))
    avx2 = " avx2 " in flags and " fma " in flags
    if "(Prescott kernels)" not in own or not (avx512 or avx2):
        testutil.skip_part("moescope's choice of BLAS kernels (OpenBLAS chooses well for this CPU)")
        return
    want = "SkylakeX" if avx512 else "Haswell"
    mine = ver()
    check("(%s kernels)" % want in mine and "OpenBLAS did not know this CPU and took its Prescott" in mine,
          "OpenBLAS fell back to Prescott on an %s CPU: moescope takes %s: %s" % (
              "AVX-512" if avx512 else "AVX2", want, mine))
    check("(Haswell kernels)" in ver(OPENBLAS_CORETYPE="Haswell") and "note:" not in ver(OPENBLAS_CORETYPE="Haswell"),
          "a user's OPENBLAS_CORETYPE is kept")


def folder_digest(d, names):
    """bytes and SHA-256 of a checkpoint folder: the digest of the "sha256sum"
    lines ("<hex>  <name>\\n") of its files, sorted by name (hashlib here)."""
    lines = "".join("%s  %s\n" % (hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest(), f)
                    for f in sorted(names))
    return sum(os.path.getsize(os.path.join(d, f)) for f in names), hashlib.sha256(lines.encode()).hexdigest()


def read_files(d):
    """The files of folder d a report's digest covers: config.json, the index (if any)
    and the shards holding the MoE layer (for a single model.safetensors: it)."""
    idx = os.path.join(d, "model.safetensors.index.json")
    names = [f for f in ("config.json", "model.safetensors") if os.path.exists(os.path.join(d, f))]
    if os.path.exists(idx):
        wm = json.load(open(idx))["weight_map"]
        names += ["model.safetensors.index.json"] + sorted({s for t, s in wm.items() if ".block_sparse_moe." in t})
    return names


def test_folders(tmp):
    """A checkpoint folder (shards, index, config.json), given as the folder or
    its index, records its total size and the digest of the sha256sum lines of
    the files read: the index, config.json and the shards holding the layer (the
    other shards are never opened, so never hashed); a folder holding one
    model.safetensors covers it and config.json; a single file keeps its own
    SHA-256. Two folders differing only in a shard that is not read get the same
    digest; differing in a layer's shard, different ones."""
    import numpy as np
    import family_fixtures as ff
    W, cfg = ff.random_layer("mixtral", np.random.default_rng(3))
    a, b, one = (os.path.join(tmp, x) for x in ("fa", "fb", "fone"))
    ff.write_checkpoint(a, "mixtral", W, cfg, shards=3, rng=np.random.default_rng(1))
    ff.write_checkpoint(b, "mixtral", W, cfg, shards=3, rng=np.random.default_rng(2))  # other non-MoE tensors
    os.mkdir(one)
    ff.write_checkpoint(os.path.join(one, "model.safetensors"), "mixtral", W, cfg)
    with open(os.path.join(one, "config.json"), "w") as f:
        json.dump(cfg, f)
    single = os.path.join(tmp, "single.safetensors")
    ff.write_checkpoint(single, "mixtral", W, cfg)
    idx = os.path.join(b, "model.safetensors.index.json")
    cases = [(a, a), (idx, b), (one, one), (single, None)]
    for arg, d in cases:
        cj = os.path.join(tmp, "fc.json")
        r = run("cost", a, arg, "--json", cj)
        check(r.returncode == 0, "cost with %s ran: %s" % (os.path.basename(arg), r.stderr[-200:]))
        if r.returncode:
            continue
        got = {x["path"]: x for x in json.load(open(cj))["provenance"]["inputs"]}.get(arg, {})
        if d is None:
            want = (os.path.getsize(arg), sha256sum(arg))
        else:
            names = read_files(d)
            want = folder_digest(d, names)
            check(got.get("files") == sorted(names), "%s: files %s" % (os.path.basename(arg), got.get("files")))
        check((got.get("bytes"), got.get("sha256")) == want, "%s: bytes and sha256 %s vs hashlib %s"
              % (os.path.basename(arg), (got.get("bytes"), got.get("sha256")), want))
    js = [os.path.join(tmp, "f%d.json" % i) for i in range(2)]
    rs = [run("cost", a, b, "--json", j) for j in js]
    if all(x.returncode == 0 for x in rs):
        ins = [{x["path"]: x["sha256"] for x in json.load(open(j))["provenance"]["inputs"]} for j in js]
        check(ins[0] == ins[1] and ins[0][a] == ins[0][b],
              "folder digests: deterministic, the same when only an unread shard differs")
    # one value of B's layer changed (in its first shard): another digest
    shard1 = os.path.join(b, "model-00001-of-00003.safetensors")
    raw = bytearray(open(shard1, "rb").read())
    raw[-1] ^= 1
    open(shard1, "wb").write(bytes(raw))
    r = run("cost", a, b, "--json", js[0])
    if r.returncode == 0:
        ins = {x["path"]: x["sha256"] for x in json.load(open(js[0]))["provenance"]["inputs"]}
        check(ins[a] != ins[b], "folder digests differ when a layer's shard does")
    ev, ccsv = os.path.join(tmp, "fe.safetensors"), os.path.join(tmp, "fc.csv")
    ff.write_safetensors(ev, [("inputs", "F32", [8, W["gate"].shape[1]],
                               ff.encode(np.random.default_rng(4).standard_normal((8, W["gate"].shape[1])), "F32"))])
    r = run("curve", a, b, "--eval", ev, "--points", 3, "--csv", ccsv)
    want = folder_digest(a, read_files(a))
    line = "# input: %s %d %s" % (want[1], want[0], a)
    check(r.returncode == 0 and line in open(ccsv).read().splitlines(),
          "folder in the CSV's provenance lines (%s)" % r.stderr[-200:])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_reports(tmp)
        test_folders(tmp)
        test_tarball(tmp)
        test_kernel_pick()
    return testutil.summary("test_provenance")


if __name__ == "__main__":
    sys.exit(main())
