"""tests/commands/test_mpi.py - moescope-mpi (the landscape and the study split over MPI
processes) against the plain binary: the JSON equals the single-process run's
key for key (provenance aside, whose "ranks" is P; the error bars included: rank 0
gathers every order's per-sample losses, or where they are streamed what each rank's
orders gave the error bars) on every sample set (P = 1,
2, 3 on dense4 under the sanitizers, 2 and 3 on dense8, the uneven 3 on the others,
these on the release builds; the 8-expert and teacher sets on their first 100
evaluation samples) and on two real-family routers (group-limited, gated shared experts), with
the points and the samples in chunks (a small memory budget), on an n = 9 landscape (its
JSON) and an exhaustive n = 9 one (--exhaustive; its text report, as the JSON would list
363 k orders), on sampled n = 10 landscapes (2000 of the 10! orders, the JSON and the CSV,
the rank percentiles' intervals included: a layer's and a network's); the study
likewise; a rank killed mid-run (SIGKILL, the test hook MOESCOPE_MPI_TEST_KILL)
ends the job with an error naming the rank and no report; an error on the ranks
names them and stops the job; rank 0's progress lines count every rank's rows.

Under the sanitizers, LeakSanitizer needs the slow unwinder to see (and suppress)
OpenMPI's own allocations, which costs each process seconds at MPI_Init and exit:
the leak check is on for the runs marked leaks=True (dense4 at every P, the
families, the chunks, the study: every code path of the ranks), the other ranks
keep AddressSanitizer and UBSan without it. The exhaustive n = 9 landscape (363 k
orders, the same code as dense8's 40320) runs on the release binaries.

Env: MOESCOPE (the plain binary), MOESCOPE_MPI (moescope-mpi; empty when MPI is
not installed: then the test only says so), MOESCOPE_REL and MOESCOPE_MPI_REL (their
release builds, defaults MOESCOPE and MOESCOPE_MPI)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SC = os.path.join(ROOT, "sample-checkpoints")
MPI = os.environ.get("MOESCOPE_MPI", "")
MPI_REL = os.environ.get("MOESCOPE_MPI_REL") or MPI
PLAIN_REL = os.environ.get("MOESCOPE_REL") or testutil.MOESCOPE


def mpi_env(leaks):
    e = dict(os.environ)
    # OpenMPI keeps memory until exit; with the slow unwinder LeakSanitizer sees its
    # progress thread's frames and tests/lib/lsan.supp suppresses them (our own leaks still
    # fail); without MPI_Init/MPI_Finalize's allocations (mpi_main.c). Without leaks,
    # no leak check and the fast unwinder (AddressSanitizer and UBSan stay on).
    if "ASAN_OPTIONS" in e:
        e["ASAN_OPTIONS"] += ":fast_unwind_on_malloc=0" if leaks else ":detect_leaks=0"
    # containers often forbid the cross-process memory copy OpenMPI's shared-memory
    # transport tries first; plain copies work everywhere
    e["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    # a rank waiting for the others yields its core (the suite runs a test per CPU)
    # instead of spinning on it
    e["OMPI_MCA_mpi_yield_when_idle"] = "1"
    return e


def mpirun(P, *args, env=None, leaks=False, binary=None):
    cmd = ["mpirun", "--oversubscribe", "-np", str(P)]
    if os.getuid() == 0:  # CI runs as root
        cmd.append("--allow-run-as-root")
    e = mpi_env(leaks)
    if env:
        e.update(env)
    cmd += [binary or MPI] + [str(a) for a in args]
    # a hang guard only: a lost rank must end the job, not leave it waiting
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=900)


def report(path):
    """The JSON without its provenance, and the provenance."""
    with open(path) as f:
        d = json.load(f)
    return d, d.pop("provenance", {})


def first_diff(a, b, path=""):
    """The first key path where a and b differ (for the failure message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return path + "." + k
            d = first_diff(a[k], b[k], path + "." + k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path + " (length %d vs %d)" % (len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


MPI_STDERR = {}  # P: the stderr of same_as_plain's last run on P ranks


def evaluations(stderr, P):
    """Each rank's network evaluations (MOESCOPE_MPI_STATS's line), rank by rank."""
    got = {int(m.group(1)): int(m.group(2)) for m in
           re.finditer(r"moescope-mpi rank (\d+) of \d+: sent .*?; (\d+) network evaluations", stderr)}
    return [got.get(r) for r in range(P)]


def csv_rows(path):
    """A CSV's rows without its provenance comments."""
    with open(path) as f:
        return [x for x in f.read().splitlines() if not x.startswith("#")]


def same_as_plain(tag, plain_json, tmp, Ps, args, env=None, leaks=False, rel=False, plain_csv=None):
    ref, prov = report(plain_json)
    check(prov.get("ranks") == 1, "%s: the plain binary's provenance has ranks 1" % tag)
    for P in Ps:
        out = os.path.join(tmp, "mpi%d.json" % P)
        csv = os.path.join(tmp, "mpi%d.csv" % P)
        more = ["--csv", csv] if plain_csv else []
        r = mpirun(P, *(args + ["--json", out] + more), env=env, leaks=leaks, binary=MPI_REL if rel else None)
        MPI_STDERR[P] = r.stderr
        ok = r.returncode == 0 and os.path.exists(out)
        check(ok, "%s P=%d: exit %d: %s" % (tag, P, r.returncode, r.stderr[-600:]))
        if not ok:
            continue
        got, gprov = report(out)
        # the error bars too: rank 0 gathers every order's per-sample losses (or intervals)
        d = first_diff(untimed(ref), untimed(got))
        check(d is None, "%s P=%d: JSON differs from the plain run at %s" % (tag, P, d))
        check(gprov.get("ranks") == P, "%s P=%d: provenance ranks %r" % (tag, P, gprov.get("ranks")))
        os.unlink(out)
        if plain_csv:
            rows = csv_rows(plain_csv)
            check(csv_rows(csv) == rows and len(rows) > 1, "%s P=%d: CSV rows differ from the plain run's" % (tag, P))
            os.unlink(csv)


def landscape_case(tag, tmp, a, b, e, extra, Ps, env=None, leaks=False, rel=False, csv=False):
    """rel: both runs on the release builds (a case about the numbers alone); csv: the
    CSV's rows compared too. The plain run's JSON (its path)."""
    plain = os.path.join(tmp, "plain.json")
    pcsv = os.path.join(tmp, "plain.csv") if csv else None
    args = ["landscape", a, b, "--eval", e, "-q"] + extra
    r = run(*(args + ["--json", plain] + (["--csv", pcsv] if csv else [])), env=env,
            binary=PLAIN_REL if rel else None)
    check(r.returncode == 0, "%s: plain run: %s" % (tag, r.stderr[-400:]))
    if r.returncode == 0:
        same_as_plain(tag, plain, tmp, Ps, args + ["--threads", "1"], env=env, leaks=leaks, rel=rel, plain_csv=pcsv)
    return plain


def head_eval(src, dst, N):
    """The first N samples of an evaluation set (the sets' checkpoints stay whole)."""
    t, meta = oracle.read_safetensors(src)
    oracle.write_safetensors(dst, {k: v[:N] for k, v in t.items()}, meta)


def pair_of(s):
    d = os.path.join(SC, s)
    if os.path.isdir(os.path.join(d, "seed1")):
        return os.path.join(d, "seed1"), os.path.join(d, "seed2")
    return os.path.join(d, "seed1.safetensors"), os.path.join(d, "seed2.safetensors")


def test_sample_sets(tmp):
    for s in ("dense4", "topk4", "shared4", "mixtral4", "teacher4", "dense8", "teacher8"):
        a, b = pair_of(s)
        e = os.path.join(SC, s, "eval.safetensors")
        if s.startswith("teacher") or s == "dense8":
            e = os.path.join(tmp, s + "_eval.safetensors")
            head_eval(os.path.join(SC, s, "eval.safetensors"), e, 100)
        # every split on the small set under the sanitizers; the others are about the
        # numbers alone (the same code): the uneven three-way split on the release builds
        Ps = {"dense4": (1, 2, 3), "dense8": (2, 3)}.get(s, (3,))
        landscape_case(s, tmp, a, b, e, ["--points", "5" if s.endswith("4") else "3"], Ps,
                       leaks=s == "dense4", rel=s != "dense4")


def family_pair(tmp, fam, seed):
    """Two random layers of a real family (tests/lib/family_fixtures.py) and 48 inputs."""
    import family_fixtures as ff
    import numpy as np
    rng = np.random.default_rng(seed)
    WA, cfg = ff.random_layer(fam, rng)
    WB, _ = ff.random_layer(fam, rng)
    out = []
    for nm, W in (("a", WA), ("b", WB)):
        d = os.path.join(tmp, fam, nm)
        os.makedirs(d)
        ff.write_checkpoint(os.path.join(d, "model.safetensors"), fam, W, cfg, others=False)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        out.append(d)
    X = rng.standard_normal((48, WA["gate"].shape[1])).astype(np.float32)
    e = os.path.join(tmp, fam, "eval.safetensors")
    ff.write_safetensors(e, [("inputs", "F32", X.shape, X.tobytes())])
    return out[0], out[1], e


def test_families(tmp):
    """Routers beyond softmax top-k: group-limited sigmoid with a selection bias
    (deepseek_v3: the group-preserving orders), gated shared experts (qwen2_moe)."""
    for seed, fam in enumerate(("deepseek_v3", "qwen2_moe")):
        a, b, e = family_pair(tmp, fam, 40 + seed)
        landscape_case(fam, tmp, a, b, e, ["--points", "5"], (3,), leaks=True)


def test_progress(tmp):
    """Progress on stderr (a pipe: lines, not a bar) from rank 0 alone, counting the
    rows of every rank: it reaches 40320/40320 though rank 0 sweeps half of them."""
    a, b = pair_of("dense8")
    e = os.path.join(tmp, "progress_eval.safetensors")
    head_eval(os.path.join(SC, "dense8", "eval.safetensors"), e, 16)
    r = mpirun(2, "landscape", a, b, "--eval", e, "--points", "3", "--threads", "1")
    lines = [x for x in r.stderr.splitlines() if " over 2 ranks" in x]
    check(r.returncode == 0 and lines, "progress lines: %s" % r.stderr[-400:])
    check(all(x.startswith("moescope-mpi rank 0 of 2: landscape ") for x in lines),
          "progress from rank 0 only: %s" % lines)
    check(any("landscape 40320/40320 (100%)" in x for x in lines),
          "progress reaches every rank's rows: %s" % lines[-3:])
    r = mpirun(2, "landscape", a, b, "--eval", e, "--points", "3", "--threads", "1", "-q")
    check(r.returncode == 0 and " over 2 ranks" not in r.stderr, "-q: no progress: %s" % r.stderr[-300:])


def test_chunked(tmp):
    """A memory budget that splits the points (2.5 MB) or even one point's samples
    (0.5 MB) into chunks: the orders' sums are carried across them on every rank."""
    a, b = pair_of("dense4")
    e = os.path.join(SC, "dense4", "eval.safetensors")
    for mb in ("2.5", "0.5"):
        landscape_case("dense4 in chunks of %s MB" % mb, tmp, a, b, e, ["--points", "7"], (2,),
                       env={"MOESCOPE_LS_MEM_MB": mb}, leaks=True)


def train_pair(tmp, n=9, samples=80):
    """A teacher with n experts (d = h = 4) and two students: samples / 5 test samples
    (N = 16 by default)."""
    t = os.path.join(tmp, "teacher%d.safetensors" % n)
    ev = os.path.join(tmp, "eval%d.safetensors" % n)
    r = run("train", "--make-teacher", "-o", t, "--embed-dim", "4", "--classes", "4", "--n", n,
            "--h", "4", "--samples", samples, "--seed", "3", "--quiet")
    check(r.returncode == 0, "train the n = %d teacher: %s" % (n, r.stderr[-300:]))
    out = []
    for s in (1, 2):
        p = os.path.join(tmp, "student%d_%d.safetensors" % (n, s))
        r = run("train", "--head", t, "-o", p, "--seed", s, "--n", n, "--h", "4", "--epochs",
                "20", "--quiet", "--eval-out", ev)
        check(r.returncode == 0, "train student %d: %s" % (s, r.stderr[-300:]))
        out.append(p)
    return out[0], out[1], ev


def text_without_timing(s):
    return [line for line in s.splitlines() if not line.startswith("ranks known after")]


def test_n9(tmp):
    a, b, e = train_pair(tmp)
    if not os.path.exists(e):
        return
    # every one of the 9! orders (n = 9 is exhaustive), on the release builds: the whole
    # JSON, error bars included, the same at 3 ranks. One process resamples each order's
    # losses as its row comes, and so does each rank for its orders: rank 0 gathers each
    # order's interval (16 bytes) and each rank's counts below the methods (4 x 1000
    # longs), not the 3 x 16 losses of each order (MOESCOPE_MPI_STATS: the bytes sent)
    MPI_STDERR.pop(3, None)
    landscape_case("n = 9, JSON", tmp, a, b, e, ["--points", "3"], (3,), rel=True, env={"MOESCOPE_MPI_STATS": "1"})
    sent = [int(x) for x in re.findall(r"per-sample losses (\d+)\)", MPI_STDERR.get(3, ""))]
    check(len(sent) == 3 and sum(sent) <= 16 * 362880 + 2 * 4 * 1000 * 8,
          "n = 9 at 3 ranks: the error bars' bytes sent %s (the losses: %d)" % (sent, 8 * 3 * 16 * 362880))
    # exhaustive: 362880 orders, on the release binaries
    args = ["landscape", a, b, "--eval", e, "--points", "3", "--exhaustive", "-q"]
    plain = subprocess.run([PLAIN_REL] + [str(x) for x in args], capture_output=True, text=True)
    check(plain.returncode == 0 and "all 362880 expert orders" in plain.stdout,
          "exhaustive n = 9, plain: %s%s" % (plain.stdout[:200], plain.stderr[-300:]))
    r = mpirun(2, *(args + ["--threads", "1"]), binary=MPI_REL)
    check(r.returncode == 0, "exhaustive n = 9, P=2: exit %d: %s" % (r.returncode, r.stderr[-400:]))
    check(text_without_timing(r.stdout) == text_without_timing(plain.stdout),
          "exhaustive n = 9: P=2's report differs from the plain one:\n%s\n---\n%s"
          % (r.stdout, plain.stdout))
    check("/362880" in plain.stdout, "exhaustive n = 9: ranks among 362880 orders")


def sampled_checks(tag, plain, nsampled):
    """The plain report of a sampled landscape: not exhaustive, every order's and each
    method's error bars, the rank percentile's interval (what the split must equal)."""
    d, _ = report(plain)
    check(d.get("exhaustive") is False and d.get("nsampled") == nsampled and d.get("norders") == nsampled,
          "%s: a sample of %d orders: %r" % (tag, nsampled, {k: d.get(k) for k in ("exhaustive", "nsampled", "norders")}))
    ms = list(d.get("methods", {}).values())
    check(ms and all(len(m.get("rank_percentile_ci95") or []) == 2 and len(m.get("rank_ci95") or []) == 2
                     for m in ms), "%s: each method's rank percentile and rank intervals" % tag)
    check(all(len(o.get("barrier_ci95") or []) == 2 for o in d.get("orders", [])),
          "%s: every sampled order's error bars" % tag)


def test_sampled(tmp):
    """n = 10: 2000 of the 10! orders sampled (seed 1), ranked with a confidence interval
    on the rank percentile. The whole JSON and the CSV as the plain run's at 2 and 3
    ranks, on the release builds: 2000 orders x 7 points x 80 samples are more
    per-sample losses than the plain landscape keeps as a table (it resamples each
    order's as its row is done, and so does each rank for its orders); the error bars
    are the same. A network whose MoE blocks have 10 experts (40 orders sampled) likewise,
    under the sanitizers."""
    a, b, e = train_pair(tmp, n=10, samples=400)
    if os.path.exists(e):
        plain = landscape_case("sampled n = 10", tmp, a, b, e, ["--points", "7"], (2, 3), rel=True, csv=True)
        sampled_checks("sampled n = 10", plain, 2000)
    import gen_gpt2
    cfg = gen_gpt2.config(layers=2, moe_layers=[0, 1], n=10, k=2, h=4)
    pool = os.path.join(tmp, "net10")
    gen_gpt2.write_pool(pool, cfg, gen_gpt2.backbone(cfg, 1),
                        {"seed%d" % s: gen_gpt2.moe_blocks(cfg, s) for s in (1, 2)}, gen_gpt2.eval_ids(cfg, 3, 6, 12))
    a, b, e = (os.path.join(pool, x) for x in ("seed1", "seed2", "eval.safetensors"))
    plain = landscape_case("network, sampled n = 10", tmp, a, b, e, ["--points", "3", "--samples", "40"], (3,),
                           csv=True)
    sampled_checks("network, sampled n = 10", plain, 40)


def test_killed_rank(tmp):
    """SIGKILL on rank 1 at its first pair-output exchange: the job ends, mpirun names
    the rank, and neither the report nor a temporary file of it is left."""
    a, b = pair_of("dense4")
    out = os.path.join(tmp, "killed", "report.json")
    os.makedirs(os.path.dirname(out))
    r = mpirun(3, "landscape", a, b, "--eval", os.path.join(SC, "dense4", "eval.safetensors"),
               "--points", "5", "-q", "--threads", "1", "--json", out,
               env={"MOESCOPE_MPI_TEST_KILL": "1"})
    check(r.returncode != 0, "killed rank: exit status %d" % r.returncode)
    err = r.stderr + r.stdout
    check("rank 1" in err and ("signal 9" in err or "Killed" in err),
          "killed rank: the error names rank 1 and the signal: %s" % err[-600:])
    check(os.listdir(os.path.dirname(out)) == [],
          "killed rank: no report: %s" % os.listdir(os.path.dirname(out)))


def test_errors(tmp):
    """An input error on every rank: the message names the rank and the file, the job
    stops, nothing hangs. (Every rank meets the error; the first to abort stops the
    others, so on a loaded machine only one of them may have printed it.)"""
    a, b = pair_of("dense4")
    r = mpirun(2, "landscape", a, b, "--eval", os.path.join(tmp, "missing.safetensors"), "-q")
    check(r.returncode != 0, "missing eval set: exit status %d" % r.returncode)
    check(re.search(r"moescope-mpi rank [01] of 2: \S*missing\.safetensors: cannot open", r.stderr),
          "missing eval set: the message names a rank and the file: %s" % r.stderr[-600:])
    r = mpirun(1, "info", a)
    check(r.returncode != 0 and "landscape and study" in r.stderr,
          "moescope-mpi info: a usage error: %s" % r.stderr[-300:])
    # above 11 experts --exhaustive refuses (12! orders), in the plain binary too
    import gen_ckpt
    big = os.path.join(tmp, "n12.safetensors")
    ev = os.path.join(tmp, "n12_eval.safetensors")
    t, meta = gen_ckpt.make_layer(5, n=12, d=4, h=4, classes=4)
    oracle.write_safetensors(big, t, meta)
    oracle.write_safetensors(ev, gen_ckpt.make_evalset(6, layer_tensors=t, meta=meta, N=16))
    r = run("landscape", big, big, "--eval", ev, "--exhaustive", "-q")
    check(r.returncode != 0 and "--exhaustive goes up to 11 experts" in r.stderr,
          "n = 12 --exhaustive: %s" % r.stderr[-300:])


def test_study(tmp):
    d4 = os.path.join(SC, "dense4")
    plain = os.path.join(tmp, "study_plain.json")
    pcsv = os.path.join(tmp, "study_plain.csv")
    r = run("study", d4, "--points", "5", "-q", "--json", plain, "--csv", pcsv)
    check(r.returncode == 0, "study plain: %s" % r.stderr[-300:])
    if r.returncode:
        return
    ref, _ = report(plain)
    for P in (2, 3):
        out = os.path.join(tmp, "study%d.json" % P)
        csv = os.path.join(tmp, "study%d.csv" % P)
        r = mpirun(P, "study", d4, "--points", "5", "-q", "--threads", "1", "--json", out, "--csv", csv,
                   leaks=True)
        check(r.returncode == 0, "study P=%d: %s" % (P, r.stderr[-400:]))
        if r.returncode:
            continue
        got, prov = report(out)
        d = first_diff(ref, got)  # the error bars included
        check(d is None, "study P=%d: JSON differs at %s" % (P, d))
        check(prov.get("ranks") == P, "study P=%d: provenance ranks %r" % (P, prov.get("ranks")))
        body = [open(f).read().splitlines() for f in (pcsv, csv)]
        body = [[x for x in b if not x.startswith("#")] for b in body]
        check(body[0] == body[1] and len(body[0]) > 6, "study P=%d: CSV rows differ" % P)


def untimed(d):
    """A report without what the clock says (the proxy's seconds)."""
    if isinstance(d, dict):
        return {k: untimed(v) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [untimed(v) for v in d]
    return d


def test_network(tmp):
    """A network's landscape and study split over 2 ranks, every (point, order) evaluation
    an item of its own: the same JSON (and CSV) as the plain binary's, the layer-only
    proxy and the error bars included (rank 0 gathers every value's per-sequence
    losses); the progress from rank 0 alone, over every rank's evaluations; a study of
    three networks (three pairs) over 3 ranks likewise."""
    a, b = pair_of("gpt/topk4")
    e = os.path.join(tmp, "gpt_eval.safetensors")
    head_eval(os.path.join(SC, "gpt", "topk4", "eval.safetensors"), e, 4)
    args = ["landscape", a, b, "--eval", e, "--points", "4", "-q"]
    plain, out = os.path.join(tmp, "net_plain.json"), os.path.join(tmp, "net2.json")
    r = run(*(args + ["--json", plain]))
    r2 = mpirun(2, *(args + ["--threads", "1", "--json", out]))
    check(r.returncode == 0 and r2.returncode == 0, "network landscape: plain %s; P=2 %s"
          % (r.stderr[-300:], r2.stderr[-300:]))
    if r.returncode or r2.returncode:
        return
    ref, got = (untimed(report(f)[0]) for f in (plain, out))
    check("none" not in got.get("bootstrap", {"none": "missing"}), "network landscape P=2: error bars: %s"
          % got.get("bootstrap"))
    d = first_diff(ref, got)
    check(d is None and "proxy" in got, "network landscape P=2: JSON differs from the plain run at %s" % d)
    plain, pcsv = os.path.join(tmp, "netstudy_plain.json"), os.path.join(tmp, "netstudy_plain.csv")
    args = ["study", a, b, "--eval", e, "--points", "4"]
    r = run(*(args + ["-q", "--json", plain, "--csv", pcsv]))
    check(r.returncode == 0, "network study plain: %s" % r.stderr[-300:])
    if r.returncode:
        return
    out, csv = os.path.join(tmp, "netstudy2.json"), os.path.join(tmp, "netstudy2.csv")
    r = mpirun(2, *(args + ["--threads", "1", "--json", out, "--csv", csv]))
    check(r.returncode == 0, "network study P=2: %s" % r.stderr[-400:])
    if r.returncode:
        return
    ref, got = (untimed(report(f)[0]) for f in (plain, out))
    d = first_diff(ref, got)
    check(d is None, "network study P=2: JSON differs at %s (the error bars included)" % d)
    body = [[x for x in open(f).read().splitlines() if not x.startswith("#")] for f in (pcsv, csv)]
    check(body[0] == body[1] and len(body[0]) > 1, "network study P=2: CSV rows differ (the intervals included)")
    lines = [x for x in r.stderr.splitlines() if " over 2 ranks" in x]
    check(lines and all(x.startswith("moescope-mpi rank 0 of 2: ") for x in lines),
          "network study P=2: progress lines from rank 0 only: %s" % r.stderr[-600:])
    # 24 orders and the named curves (naive, skip-order, each method's order) at 2
    # interior points, and the two end points (each on one rank)
    total = 2 * (24 + 2 + len(got["pairs"][0]["methods"])) + 2
    check(any("study pair 1/1 %d/%d (100%%)" % (total, total) in x for x in lines),
          "network study P=2: every rank's %d evaluations counted: %s" % (total, lines))
    # three checkpoints, three pairs one after another, each split unevenly over 3 ranks
    # (each pair's end points evaluated once, on the ranks whose shares hold them)
    c = os.path.join(os.path.dirname(a), "seed3")
    args = ["study", a, b, c, "--eval", e, "--points", "4", "-q"]
    plain, pcsv = os.path.join(tmp, "netstudy3_plain.json"), os.path.join(tmp, "netstudy3_plain.csv")
    out, csv = os.path.join(tmp, "netstudy3.json"), os.path.join(tmp, "netstudy3.csv")
    r = run(*(args + ["--json", plain, "--csv", pcsv]))
    r3 = mpirun(3, *(args + ["--threads", "1", "--json", out, "--csv", csv]))
    check(r.returncode == 0 and r3.returncode == 0, "network study of 3: plain %s; P=3 %s"
          % (r.stderr[-300:], r3.stderr[-300:]))
    if r.returncode or r3.returncode:
        return
    ref, got = (untimed(report(f)[0]) for f in (plain, out))
    d = first_diff(ref, got)
    check(d is None and len(got["pairs"]) == 3, "network study of 3 P=3: JSON differs at %s" % d)
    body = [[x for x in open(f).read().splitlines() if not x.startswith("#")] for f in (pcsv, csv)]
    check(body[0] == body[1] and len(body[0]) > 3, "network study of 3 P=3: CSV rows differ")


def test_network_ranks(tmp):
    """A 2-expert network (two MoE blocks) whose landscape at 3 points is 6 evaluations:
    the two end points, the naive and skip-order curves and the 2 orders (the methods'
    orders among them, rows and curves at once). On 8 ranks two get none, and the
    report is the plain one still. The end points are two of the items, each evaluated
    by one rank (MOESCOPE_MPI_STATS: the ranks' evaluations add up to 6, at most
    ceil(6 / P) each) whatever comes before the split needs of A: with block 1 chosen
    the frozen prefix ends at block 0 (A and B differ there), so the chosen block's
    inputs come from A's blocks run that far; with --method activation or router
    every block's inputs (the other blocks are aligned on theirs); with
    --interpolate-backbone there is no prefix (on the release builds, where cloning
    the backbone for it once read a block's matrices uninitialised)."""
    import gen_gpt2
    cfg = gen_gpt2.config(layers=3, moe_layers=[0, 1], n=2, k=1)
    pool = os.path.join(tmp, "net2")
    back = gen_gpt2.backbone(cfg, 1)
    ids = gen_gpt2.eval_ids(cfg, 3, 4, 12)
    gen_gpt2.write_pool(pool, cfg, back, {"seed%d" % s: gen_gpt2.moe_blocks(cfg, s) for s in (1, 2)}, ids)
    a, b, e = (os.path.join(pool, x) for x in ("seed1", "seed2", "eval.safetensors"))
    other = os.path.join(tmp, "net2_backbone2")  # B on another backbone
    gen_gpt2.write_pool(other, cfg, gen_gpt2.backbone(cfg, 2), {"seed2": gen_gpt2.moe_blocks(cfg, 2)}, ids)
    stats = {"MOESCOPE_MPI_STATS": "1"}
    for tag, bb, extra, P, rel in (("2 experts, 8 ranks", b, [], 8, False),
                                   ("2 experts, block 1", b, ["--layer", "1"], 3, False),
                                   ("2 experts, --method activation", b, ["--method", "activation"], 2, False),
                                   ("2 experts, block 1, --method router", b, ["--layer", "1", "--method", "router"], 3,
                                    False),
                                   ("2 experts, --interpolate-backbone", os.path.join(other, "seed2"),
                                    ["--interpolate-backbone"], 3, True)):
        MPI_STDERR.pop(P, None)
        landscape_case(tag, tmp, a, bb, e, ["--points", "3", "--no-proxy"] + extra, (P,), env=stats, rel=rel)
        ev = evaluations(MPI_STDERR.get(P, ""), P)
        check(None not in ev and sum(ev) == 6 and max(ev) <= -(-6 // P),
              "%s: the 6 evaluations, the end points among them, made once over %d ranks: %s" % (tag, P, ev))


def main():
    if not MPI:
        # MPI installed means make check builds moescope-mpi: not testing it is a failure
        if shutil.which("mpicc") or os.environ.get("CI"):
            check(False, "moescope-mpi not built although %s" %
                  ("mpicc is installed" if shutil.which("mpicc") else "CI is set (make deps installs OpenMPI)"))
            return testutil.summary("test_mpi")
        return testutil.skip_all("test_mpi", "MPI is not installed: make deps installs OpenMPI")
    check(os.path.exists(MPI), "moescope-mpi built at %s" % MPI)
    check(shutil.which("mpirun") is not None, "mpirun on PATH")
    if testutil.failed:
        return testutil.summary("test_mpi")
    tmp = tempfile.mkdtemp(prefix="moescope_mpi_")
    try:
        for t in (test_sample_sets, test_families, test_progress, test_chunked, test_n9, test_sampled,
                  test_killed_rank, test_errors, test_study, test_network, test_network_ranks):
            t(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return testutil.summary("test_mpi")


if __name__ == "__main__":
    sys.exit(main())
