"""tests/bench/bench_mpi.py - moescope-mpi's strong scaling on this machine and
what it projects for a cluster.

  1. orders: dense8, all 40320 orders x 9 points (the order blocks dominate);
  2. pairs: a wide layer (n = 4, d = 256, h = 1024, N = 2048, 5 points: the pair
     outputs dominate, as at real sizes);
each with P = 1 and P = 2 ranks of one thread (best of two runs each):
  - the speed-up T1/T2 and the parallel efficiency T1 / (2 T2) in wall time
    (on a shared 2-core machine this depends on what else runs: the load
    average is printed);
  - the work efficiency CPU1 / (CPU of both ranks less their time in the
    exchanges): what splitting costs in redundant work, whatever the load
    (OpenMPI spins while a rank waits for the other, which would count as work);
  - the serial fraction s the work efficiency implies (work every rank does:
    CPU2 = CPU1 (1 + s)) and the
    bytes each rank sent (MOESCOPE_MPI_STATS), so the efficiency at 64 ranks can
    be estimated: T_64 = T1 (s + (1 - s)/64) + (bytes sent at 64) / (5 GB/s).
  3. a network: the sample gpt/topk4's landscape on the network's loss (24 orders x 9
     points: every (point, order) evaluation an item), the same P = 1 / P = 2 runs; its
     work efficiency against the target 0.8;
  4. an exhaustive n = 10 landscape (3628800 orders) on dense8's dimensions
     (d = h = 32, 10 classes, N = 360; random layers, the cost does not depend
     on the weights), 3 points, on 2 ranks; projected to 64 ranks with case 1's
     serial fraction, and to 25 points by the interior points (23 instead of 1);
  5. the paper's size: a GPT-2-small pair (bench_network.py's, BENCH_PAPER_DIR reused or
     written; BENCH_PAPER=0 leaves this out) on the first sequence of its set (1 x 1024
     tokens), 3 points: 28 evaluations (both end points, 24 orders and the naive and
     skip-order curves at t = 0.5), at P = 2 and 4 ranks of one thread (one run each).
     Each rank prints the evaluations it made (MOESCOPE_MPI_STATS) and the JSON rank 0's
     CPU per step: the two runs' rank 0 give the CPU s per evaluation r, per pair's
     weight matching w and what a rank spends besides, o (loading, the frozen prefix,
     the cost matrices), the exchanges left out; they project the 25-point landscape
     (600 evaluations, 20 pairs) at 64 ranks: T1 = 600 r + 20 w + o, T64 = 10 r + w + o
     (a rank evaluates at most ceil(600 / 64) and matches at most one pair), efficiency
     T1 / (64 T64); at 8 x 1024 tokens r is 8 times as long, o at most 8 times.
Prints times and ratios; no targets (MPI is for clusters; this machine has 2 cores)."""
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]
import benchlib  # noqa: E402
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
MPI = os.environ.get("MOESCOPE_MPI", "")
SC = os.path.join(ROOT, "sample-checkpoints")
NET = 5e9  # bytes/s each rank can send on a cluster's interconnect (assumed)


def mpirun(P, args, evals=False):
    """(wall s, [bytes sent per rank], [cpu s per rank], [s in exchanges per rank]) or None;
    evals: and [network evaluations per rank] (in rank order, as the others)."""
    cmd = ["mpirun", "--oversubscribe", "-np", str(P)]
    if os.getuid() == 0:
        cmd.append("--allow-run-as-root")
    env = dict(os.environ, MOESCOPE_MPI_STATS="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    t = time.perf_counter()
    r = subprocess.run(cmd + [MPI] + args, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if r.returncode:
        print("failed:", " ".join(cmd + [MPI] + args), r.stderr[-500:])
        return None
    sent = [int(m) for m in re.findall(r"sent (\d+) bytes", r.stderr)]
    cpu = [float(m) for m in re.findall(r"cpu ([0-9.]+) s", r.stderr)]
    xch = [float(m) for m in re.findall(r"([0-9.]+) s in MPI", r.stderr)]
    if evals:
        by = dict((int(a), (float(c), float(x), int(v))) for a, x, v, c in re.findall(
            r"rank (\d+) of \d+: .*?([0-9.]+) s in MPI exchanges; (\d+) network evaluations; cpu ([0-9.]+) s",
            r.stderr))
        rs = sorted(by)
        return dt, sent, [by[k][0] for k in rs], [by[k][1] for k in rs], [by[k][2] for k in rs]
    return dt, sent, cpu, xch


def best(P, args, reps=2):
    runs = [mpirun(P, args) for _ in range(reps)]
    if any(x is None for x in runs):
        return None
    return min(runs, key=lambda x: x[0])


def load():
    return os.getloadavg()[0]


def scaling(tag, args):
    l0 = load()
    r1, r2 = best(1, args + ["--threads", "1"]), best(2, args + ["--threads", "1"])
    if r1 is None or r2 is None:
        return None
    (t1, _, c1, _), (t2, sent, c2, x2) = r1, r2
    speed = t1 / t2
    useful = [max(0.0, c - x) for c, x in zip(c2, x2)]
    work = sum(c1) / sum(useful)
    # a share s of the work done by every rank: CPU2 = CPU1 (1 + s) at P = 2
    s = min(1.0, max(0.0, 1.0 / work - 1.0))
    print("%s (load average %.1f .. %.1f):" % (tag, l0, load()))
    print("  wall: P=1 %.2f s, P=2 %.2f s: speed-up %.2f, parallel efficiency %.0f%%"
          % (t1, t2, speed, 50 * speed))
    print("  cpu: P=1 %.2f s, P=2 %s s (%s s of it in the exchanges): work efficiency %.0f%%, "
          "serial fraction %.3f" % (sum(c1), " + ".join("%.2f" % c for c in c2),
                                     " + ".join("%.2f" % x for x in x2), 100 * work, s))
    sent2 = max(sent) if sent else 0
    # at 64 ranks a rank sends its 1/64 share to the 63 others: (63/64) / (1/2) of the P=2 bytes
    sent64 = sent2 * 2 * 63 / 64
    t64 = sum(c1) * (s + (1 - s) / 64) + sent64 / NET
    print("  each rank sent %.1f MB at P=2; at 64 ranks %.1f MB: projected %.2f s, efficiency %.0f%% "
          "(%.0f GB/s links)" % (sent2 / 1e6, sent64 / 1e6, t64, 100 * sum(c1) / (64 * t64), NET / 1e9))
    net = tag.startswith("network")
    benchlib.result("moescope-mpi %s, 2 ranks of 1 thread" % tag.split(":")[0], "%.2f CPU s of work (exchanges "
                    "left out; wall %.2f s)" % (sum(useful), t2), "1 rank's %.2f CPU s (wall %.2f s)" % (sum(c1), t1),
                    "work efficiency %.2f (wall %.2f)" % (work, speed / 2),
                    ">= 0.8" if net else "- (MPI is for clusters)", work >= 0.8 if net else None,
                    benchlib.kernel_text())
    return s


def write_pair(tmp, tag, n, d, h, N):
    import gen_ckpt
    import oracle
    paths = []
    for seed in (1, 2):
        t, meta = gen_ckpt.make_layer(seed, n=n, d=d, h=h, classes=10)
        p = os.path.join(tmp, "%s%d.safetensors" % (tag, seed))
        oracle.write_safetensors(p, t, meta)
        paths.append(p)
    e = os.path.join(tmp, tag + "_eval.safetensors")
    oracle.write_safetensors(e, gen_ckpt.make_evalset(3, layer_tensors=t, meta=meta, N=N))
    return paths + [e]


def paper_size():
    """case 5: r, w and o of a GPT-2-small landscape from P = 2 and P = 4, the 64-rank projection"""
    import json
    import bench_network
    import oracle
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench_mpi_paper_") as tmp:
        a, b, e, made = bench_network.paper_pair(tmp)
        t, meta = oracle.read_safetensors(e)
        e1 = os.path.join(tmp, "eval1.safetensors")
        oracle.write_safetensors(e1, {k: v[:1] for k, v in t.items()}, meta)
        l0 = load()
        for P in (2, 4):
            js = os.path.join(tmp, "p%d.json" % P)
            r = mpirun(P, ["landscape", a, b, "--eval", e1, "--points", "3", "-q", "--no-proxy", "--threads", "1",
                           "--json", js], evals=True)
            if r is None:
                return
            with open(js) as f:  # rank 0's CPU per step
                runs[P] = r + (json.load(f)["provenance"]["cpu_seconds"],)
    print("the paper's size: GPT-2 small (%s), 1 x 1024 tokens, 3 points, 28 evaluations (load average "
          "%.1f .. %.1f):" % (made, l0, load()))
    fit = []  # rank 0's (evaluations, CPU s less the exchanges and the weight matching), (pairs, its CPU s)
    for P, (t, _, cpu, xch, ev, steps) in sorted(runs.items()):
        print("  P=%d: %.1f s wall; cpu %s s (%s s of it in the exchanges); evaluations %s; rank 0's weight "
              "matching %.1f CPU s" % (P, t, " + ".join("%.1f" % c for c in cpu),
                                       " + ".join("%.1f" % x for x in xch), " + ".join(str(v) for v in ev),
                                       steps["weight_matching"]))
        pairs0 = -(-20 // P)  # ls_share of the 4 x 4 + 4 pairs: rank 0 the larger share
        fit.append((ev[0], cpu[0] - xch[0] - steps["weight_matching"], pairs0, steps["weight_matching"]))
    (e2, c2, p2, w2), (e4, c4, p4, w4) = fit
    r = (c2 - c4) / (e2 - e4)
    o = c4 - r * e4
    w = (w2 + w4) / (p2 + p4)
    print("  rank 0's CPU = o + r (its evaluations) + w (its pairs): r = %.2f CPU s per evaluation, w = %.2f "
          "CPU s per pair's weight matching, o = %.2f CPU s" % (r, w, o))
    for tag, rr, oo in (("1 x 1024 tokens", r, o), ("8 x 1024 tokens (r x 8, o x 8 at most)", 8 * r, 8 * o)):
        # 64 ranks: at most ceil(600 / 64) = 10 evaluations and ceil(20 / 64) = 1 pair each
        T1, T64 = 600 * rr + 20 * w + oo, 10 * rr + w + oo
        print("  25 points, 600 evaluations, %s: one rank %.0f CPU s, each of 64 ranks %.1f s: efficiency %.3f"
              % (tag, T1, T64, T1 / (64 * T64)))


def main():
    if not MPI or not os.path.exists(MPI):
        print("bench_mpi: moescope-mpi not built (no MPI installed)")
        return 0
    d8 = os.path.join(SC, "dense8")
    sc = scaling("orders: dense8, 40320 orders x 9 points",
                 ["landscape", os.path.join(d8, "seed1.safetensors"), os.path.join(d8, "seed2.safetensors"),
                  "--eval", os.path.join(d8, "eval.safetensors"), "--points", "9", "-q"])
    g = os.path.join(SC, "gpt", "topk4")
    scaling("network: gpt/topk4, 24 orders x 9 points",
            ["landscape", os.path.join(g, "seed1"), os.path.join(g, "seed2"), "--eval",
             os.path.join(g, "eval.safetensors"), "--points", "9", "-q", "--no-proxy"])
    with tempfile.TemporaryDirectory(prefix="bench_mpi_") as tmp:
        a, b, e = write_pair(tmp, "wide", 4, 256, 1024, 2048)
        scaling("pairs: n = 4, d = 256, h = 1024, N = 2048, 5 points",
                ["landscape", a, b, "--eval", e, "--points", "5", "-q"])
        a, b, e = write_pair(tmp, "n10_", 10, 32, 32, 360)
        r = mpirun(2, ["landscape", a, b, "--eval", e, "--points", "3", "--exhaustive", "-q",
                       "--threads", "1"])
        if r is None or sc is None:
            return 1
        t2, sent, cpu, _ = r
        s = sc
        t1 = sum(cpu) / (1 + s)  # one rank's work: the ranks' CPU less the duplicated share
        t64 = t1 * (s + (1 - s) / 64)
        print("exhaustive n = 10 (3628800 orders) on dense8's dimensions, 3 points: %.1f s on 2 ranks "
              "(cpu %s s; each rank sent %.1f MB)"
              % (t2, " + ".join("%.1f" % c for c in cpu), max(sent) / 1e6 if sent else 0))
        print("  projected on 64 ranks (case 1's serial fraction): %.1f s at 3 points, %.0f s at 25 "
              "points (23 interior points instead of 1)" % (t64, t64 * 23))
    if os.environ.get("BENCH_PAPER", "1") != "0":
        paper_size()
    return 0


if __name__ == "__main__":
    sys.exit(main())
