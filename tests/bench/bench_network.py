"""tests/bench/bench_network.py - the network evaluator and the network landscape.

1. Throughput (tokens/s, higher is better): `moescope eval` of a GPT-2-layout network
   with MoE blocks against PyTorch's CPU forward of the same network
   (tests/bench/peer_gpt2_torch.py: float32, inference mode, routed tokens gathered per
   expert), in one run, on the same K cores: each process started by
   benchlib.run_on_cores, pinned to the first K CPUs (sched_setaffinity) with its BLAS and
   OpenMP pools K threads (OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS set
   before torch loads); moescope with --threads K, PyTorch with K intra-op threads and one
   inter-op thread (benchlib.torch_threads; its line of the table says what it got).
   Without the pinning PyTorch "on 1 thread" used 4.3 CPU s in 2.5 s wall (its inter-op
   and oneDNN pools), a wall-clock race of 1 core against more.
   moescope: `eval --repeat 3`, whole evaluations (the frozen prefix included), best of 3
   processes; the peer: best of 5 forwards after a warm-up. Both wall clock and the
   process's CPU time per evaluation are shown: on a machine shared with others the
   wall time is the share of the cores each got, the CPU time what each cost. The
   ratio (target >= 2) is moescope's tokens/s over the peer's. Both losses are printed
   (they agree to float32 rounding).
   Networks: the sample's size (sample-checkpoints/gpt/topk4 when present, else the
   same dimensions generated: d 64, 3 blocks, 4 heads, V 256, MoE at block 0 with 4
   experts of 64, top-2; 64 x 129 tokens) and a larger one (d 256, 6 blocks, 8 heads,
   V 4096, MoE at blocks 1, 3, 5 with 8 experts of 512, top-2; 32 x 256 tokens).
2. The 4-expert landscape on the network's loss: 24 orders x 25 points, >= 8192 tokens,
   on that sample pair (or the generated one), with the time split the JSON records
   (alignments, prefix, end points, orders) and the layer-only proxy's time.
3. The paper's size: GPT-2 small (d 768, 12 blocks, 12 heads, V 50257, 1024 positions,
   tied head) with block 0 a 4-expert top-2 MoE of width 3072, random weights in the
   samples' layout (tests/lib/gen_gpt2.py, written to a temporary folder: about 0.5 GB,
   3 minutes), 8 x 1024 tokens: one `eval` beside PyTorch's forward (one run each, the
   same cores as in 1: every CPU, at most 8), its CPU time against the floor (its arithmetic,
   2.26 TFLOP, at benchlib.gemm_rate: the one-core SGEMM rate measured in this run; the
   floor of every benchmark), targets >= 1.5x PyTorch's CPU time and <= 1.5x the floor;
   a `curve` of 3 orders (naive, skip-order, the expert method's) at 3 points; the
   explorer on the pair in tmux: its first screen and its cost matrix with the assignment
   (targets < 1 s each) and q while it
   computes (target < 100 ms; q sent while it reads the backbones, in an end point's
   evaluation and in a curve's, the worst reported). BENCH_PAPER=0 leaves this part out
   (the long one); BENCH_PAPER_DIR=D writes the network to D once and reuses it;
   `bench_network.py --explorer` runs the explorer's part alone.
Needs python3-torch for the peers (skipped with a note when missing)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE] + [os.path.join(HERE, "..", d) for d in ("lib", "oracle")]
import benchlib  # noqa: E402
import gen_gpt2  # noqa: E402

MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", "./moescope"))
PYTHON = os.environ.get("PYTHON", sys.executable)
SAMPLE = os.path.join(ROOT, "sample-checkpoints", "gpt", "topk4")


def make_pool(out, small):
    if small:
        cfg = gen_gpt2.config(d=64, layers=3, heads=4, vocab=256, positions=160, moe_layers=[0], n=4, k=2, h=64)
        N, T = 64, 129
    else:
        cfg = gen_gpt2.config(d=256, layers=6, heads=8, vocab=4096, positions=256, moe_layers=[1, 3, 5], n=8,
                              k=2, h=512)
        N, T = 32, 256
    back = gen_gpt2.backbone(cfg, 9)
    m1 = gen_gpt2.moe_blocks(cfg, 1)
    gen_gpt2.write_pool(out, cfg, back, {"seed1": m1, "seed2": gen_gpt2.perturbed_copy(cfg, m1, 2)[0]},
                        gen_gpt2.eval_ids(cfg, 3, N, T))
    return os.path.join(out, "seed1"), os.path.join(out, "seed2"), os.path.join(out, "eval.safetensors")


def c_rate(ck, ev, threads, tokens, reps=3):
    best, cpu, loss = float("inf"), float("inf"), None
    for _ in range(reps):
        r = benchlib.run_on_cores([MOESCOPE, "eval", ck, "--eval", ev, "--repeat", "3", "--threads", str(threads)],
                                  threads, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("moescope eval failed: " + r.stderr)
        m = re.search(r"([0-9.]+) s per run, [0-9]+ tokens/s \(CPU ([0-9.]+) s per run\)", r.stderr)
        best, cpu = min(best, float(m.group(1))), min(cpu, float(m.group(2)))
        loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    return tokens / best, cpu, loss


def torch_rate(ck, ev, threads, tokens):
    r = benchlib.run_on_cores([PYTHON, os.path.join(HERE, "peer_gpt2_torch.py"), ck, ev, str(threads), "5"], threads,
                              capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("peer_gpt2_torch.py failed: " + r.stderr)
    m = re.search(r"PEER_NET_SECONDS (\S+) CPU (\S+) LOSS (\S+)", r.stdout)
    return tokens / float(m.group(1)), float(m.group(2)), float(m.group(3)), benchlib.peer_threads(r.stdout)


def throughput(tmp):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("bench_network: PyTorch is not installed (apt-get install python3-torch): no peer, part 1 skipped")
        return
    cases = []
    if os.path.isdir(os.path.join(SAMPLE, "seed1")):
        cases.append(("sample gpt/topk4", os.path.join(SAMPLE, "seed1"), os.path.join(SAMPLE, "eval.safetensors")))
    else:
        a, _, e = make_pool(os.path.join(tmp, "small"), True)
        cases.append(("sample-sized (generated)", a, e))
    a, _, e = make_pool(os.path.join(tmp, "large"), False)
    cases.append(("d 256, 6 blocks, 3 MoE", a, e))
    print("bench_network: evaluation throughput, tokens/s (higher is better), wall clock best of runs; "
          "CPU s per evaluation; load average %.2f %.2f %.2f" % os.getloadavg())
    print("%-26s %-7s %10s %10s %7s %9s %9s %7s   %s" % ("network", "threads", "moescope", "pytorch", "ratio",
                                                     "CPU ms", "torch ms", "ratio", "loss (moescope, pytorch)"))
    kern = "%s; PyTorch %s" % (benchlib.kernel_text(), torch_kernels())
    for name, ck, ev in cases:
        ids = gen_gpt2.oracle.read_safetensors(ev)[0]["input_ids"]
        tokens = ids.shape[0] * ids.shape[1]
        for threads in (1, 2):
            cr, ccpu, cl = c_rate(ck, ev, threads, tokens)
            tr, tcpu, tl, tth = torch_rate(ck, ev, threads, tokens)
            print("%-26s %-7d %10.0f %10.0f %6.2fx %9.1f %9.1f %6.2fx   %.6f %.6f   (%s; %s)" %
                  (name, threads, cr, tr, cr / tr, 1e3 * ccpu, 1e3 * tcpu, tcpu / ccpu, cl, tl,
                   benchlib.pinned_text(threads), tth))
            benchlib.result("network %s, %d thread%s" % (name, threads, "s" if threads > 1 else ""),
                            "%.0f tokens/s (%.0f CPU ms)" % (cr, 1e3 * ccpu),
                            "PyTorch CPU forward %.0f tokens/s (%.0f CPU ms)" % (tr, 1e3 * tcpu),
                            "%.2fx (CPU %.2fx)" % (cr / tr, tcpu / ccpu), ">= 2x", cr / tr >= 2, kern)


def torch_kernels():
    """PyTorch's CPU capability and oneDNN's version, as it reports them"""
    r = subprocess.run([PYTHON, "-c", "import torch; print(torch.__config__.show())"], capture_output=True, text=True)
    cap = re.search(r"CPU capability usage: (\S+)", r.stdout)
    dnn = re.search(r"MKL-DNN (v[0-9.]+)", r.stdout)
    return "%s%s" % (cap.group(1) if cap else "?", ", oneDNN " + dnn.group(1) if dnn else "")


def landscape(tmp):
    if os.path.isdir(os.path.join(SAMPLE, "seed1")):
        a, b, e = (os.path.join(SAMPLE, s) for s in ("seed1", "seed2", "eval.safetensors"))
        what = "sample gpt/topk4 seed1/seed2"
    else:
        a, b, e = make_pool(os.path.join(tmp, "ls"), True)
        what = "sample-sized pair (generated)"
    out = os.path.join(tmp, "ls.json")
    t0 = time.time()
    r = subprocess.run([MOESCOPE, "landscape", a, b, "--eval", e, "--points", "25", "--json", out, "-q"],
                       capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode:
        raise SystemExit("moescope landscape failed: " + r.stderr)
    J = json.load(open(out))
    sec = J["provenance"]["seconds"]
    ids = gen_gpt2.oracle.read_safetensors(e)[0]["input_ids"]
    print("\nbench_network: the %d-expert landscape on the network's loss, %s: %d orders x %d points, %d "
          "tokens (%d positions)" % (J["n"], what, J["norders"], J["points"], ids.size,
                                     ids.shape[0] * (ids.shape[1] - 1)))
    m = re.search(r"ranks known after ([0-9.]+) s, all orders after ([0-9.]+) s", r.stdout)
    print("  wall %.2f s (process); ranks after %s s, all orders after %s s" % (wall, m.group(1), m.group(2)))
    print("  split: " + ", ".join("%s %.3f s" % (k, v) for k, v in sec.items()))
    if "proxy" in J:
        print("  layer-only proxy %.3f s: Spearman rho %.3f, its best order ranks %d of %d" %
              (J["proxy"]["seconds"], J["proxy"]["spearman"], J["proxy"]["best_network_rank"], J["norders"]))
    evals = J["norders"] * (J["points"] - 2) + 4 * (J["points"] - 2)
    print("  at most %d network evaluations (every order's interior points and the 4 named curves): %.1f ms each"
          % (evals, 1e3 * sec["orders"] / evals))
    benchlib.result("network landscape, %d orders x %d points" % (J["norders"], J["points"]),
                    "all orders after %s s (ranks %s s)" % (m.group(2), m.group(1)),
                    "none: each order is whole network evaluations (%.1f ms each)" % (1e3 * sec["orders"] / evals),
                    "-", "", None, benchlib.kernel_text())


# ---- 3. the paper's size: GPT-2 small with an MoE block ----

PAPER = dict(d=768, layers=12, heads=12, vocab=50257, positions=1024, moe_layers=[0], n=4, k=2, h=3072)


def gpt2_flops(cfg, N, T):
    """The forward's arithmetic (2 FLOPs per multiply-add of its products): per token
    and block q|k|v and the output projection (8 d^2), causal attention (q k^T and the
    weights times v over the p + 1 tokens a token sees: 4 d (p + 1)), the dense MLP
    (4 d ff) or the MoE block's router and top-k experts (2 d n + 4 k d h); the LM head
    (2 d V) at every position."""
    d, L, V = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"]
    ff = cfg.get("n_inner") or 4 * d
    m = cfg["moe"]
    moe = set(m["layers"])
    per_tok = 2 * d * V
    for b in range(L):
        per_tok += 8 * d * d
        if b in moe:
            per_tok += 2 * d * m["num_experts"] + 4 * m["top_k"] * d * m["expert_intermediate_size"]
        else:
            per_tok += 4 * d * ff
    attn = L * 4 * d * T * (T + 1) / 2  # per sequence
    return N * (T * per_tok + attn)


def paper_size(tmp):
    """One evaluation at 8 x 1024 tokens beside PyTorch's forward at the same threads, a
    curve of 3 orders at 3 points, the floor; the explorer's first screen and q in tmux."""
    threads = min(8, os.cpu_count() or 1)
    a, b, e, made = paper_pair(tmp)
    cfg = json.load(open(os.path.join(a, "config.json")))
    fl = gpt2_flops(cfg, 8, 1024)
    print("\nbench_network: the paper's size, GPT-2 small (d 768, 12 blocks, V 50257, tied head) with "
          "block 0 a 4-expert top-2 MoE of width 3072, random weights, 8 x 1024 tokens (%s); "
          "%d threads; load average %.1f" % (made, threads, os.getloadavg()[0]))
    print("  floor: %s" % benchlib.floor_text(fl))
    r = benchlib.run_on_cores([MOESCOPE, "eval", a, "--eval", e, "--threads", str(threads), "--repeat", "1"], threads,
                              capture_output=True, text=True)
    m = re.search(r"([0-9.]+) s per run, [0-9]+ tokens/s \(CPU ([0-9.]+) s per run\)", r.stderr)
    if r.returncode or not m:
        raise SystemExit("moescope eval failed: " + r.stderr)
    wall, cpu = float(m.group(1)), float(m.group(2))
    loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    pr = benchlib.run_on_cores([PYTHON, os.path.join(HERE, "peer_gpt2_torch.py"), a, e, str(threads), "1"], threads,
                               capture_output=True, text=True)
    pm = re.search(r"PEER_NET_SECONDS (\S+) CPU (\S+) LOSS (\S+)", pr.stdout)
    kern = "%s; PyTorch %s" % (benchlib.kernel_text(), torch_kernels())
    floor = benchlib.gemm_floor(fl)
    print("  moescope eval: %.1f s wall, %.1f CPU s (%.2fx the floor), loss %.8f" % (wall, cpu, cpu / floor, loss))
    if pm:
        pw, pc, pl = float(pm.group(1)), float(pm.group(2)), float(pm.group(3))
        print("  PyTorch forward: %.1f s wall, %.1f CPU s, loss %.8f: moescope %.2fx faster (CPU %.2fx); both %s; %s"
              % (pw, pc, pl, pw / wall, pc / cpu, benchlib.pinned_text(threads), benchlib.peer_threads(pr.stdout)))
        benchlib.result("GPT-2 small, 8 x 1024 tokens, %d threads, vs PyTorch" % threads,
                        "%.1f s (%.1f CPU s)" % (wall, cpu), "PyTorch CPU forward %.1f s (%.1f CPU s)" % (pw, pc),
                        "%.2fx faster (CPU %.2fx)" % (pw / wall, pc / cpu), ">= 1.5x", pc / cpu >= 1.5, kern)
    else:
        print("  PyTorch peer failed or missing: " + pr.stderr[-300:])
    benchlib.result("GPT-2 small, 8 x 1024 tokens, one evaluation", "%.1f CPU s" % cpu, benchlib.floor_text(fl),
                    "%.2fx" % (cpu / floor), "<= 1.5x", cpu / floor <= 1.5, kern)
    c0 = time.time()
    r = subprocess.run([MOESCOPE, "curve", a, b, "--eval", e, "--points", "3"], capture_output=True, text=True)
    cw = time.time() - c0
    if r.returncode:
        print("  moescope curve failed: " + r.stderr[-300:])
    else:
        # naive, skip-order and the expert method's order at t = 0.5, and the end points
        print("  curve of 3 orders at 3 points (5 evaluations: A, B and each order's middle; the prefix "
              "shared; every CPU): %.1f s wall = %.2f evaluations' time" % (cw, cw / wall))
        benchlib.result("GPT-2 small, curve of 3 orders x 3 points", "%.1f s" % cw,
                        "5 x PyTorch's forward %.1f s" % (5 * pw) if pm else "-",
                        "%.2fx faster" % (5 * pw / cw) if pm else "-", ">= 1.5x", 5 * pw / cw >= 1.5 if pm else None,
                        kern)
    explorer_at_size(a, b, e)


# how long a run waits for its moment: the curve's comes after both end points' evaluations
# (about 30 s idle; minutes on a machine shared with other work)
WAIT_S = 600


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock] + list(args), capture_output=True, text=True)


def explorer_run(a, b, e, sock, quit_when):
    """One explorer in tmux on the pair: seconds from its start to the first screen (its
    title and the cost matrix's pane drawn), to the cost matrix with its assignment, and
    from q (sent once quit_when(screen) holds, or after WAIT_S) to the process's end; the
    status line when q was sent; and the explorer's own account (MOESCOPE_TIMING, its
    stderr: the UI thread's CPU seconds to the first screen, which the machine's load
    does not stretch, and q's steps)."""
    done = os.path.join(os.path.dirname(e), "explorer.done")
    timing = os.path.join(os.path.dirname(e), "explorer.timing")
    for f in (done, timing):
        if os.path.exists(f):
            os.remove(f)
    cmd = "LANG=C.UTF-8 MOESCOPE_TIMING=1 '%s' '%s' '%s' --eval '%s' 2> '%s'; echo $? > '%s'; sleep 600" % (
        MOESCOPE, a, b, e, timing, done)
    first = matrix = quit_s = None
    status = ""
    try:
        t0 = time.time()
        tmux(sock, "new-session", "-d", "-s", "b", "-x", "160", "-y", "45", cmd)
        while time.time() - t0 < WAIT_S:
            scr = tmux(sock, "capture-pane", "-p", "-t", "b").stdout
            now = time.time() - t0
            if first is None and "moescope  A " in scr and "q quit" in scr:
                first = now
            if matrix is None and "assigned" in scr:
                matrix = now
            if first is not None and quit_when(scr):
                status = [ln.strip() for ln in scr.splitlines() if "busy:" in ln][-1:] or [""]
                status = status[0]
                break
            time.sleep(0.01)
        t1 = time.time()
        tmux(sock, "send-keys", "-t", "b", "q")
        while time.time() - t1 < 300:
            if os.path.exists(done) and open(done).read().strip():
                quit_s = time.time() - t1
                break
            time.sleep(0.002)
    finally:
        tmux(sock, "kill-server")
    own = dict(re.findall(r"^timing: (explorer [^\n]*?) ([0-9.]+)$", open(timing).read() if os.path.exists(timing)
                          else "", re.M))
    return first, matrix, quit_s, status, {k: float(v) for k, v in own.items()}


def explorer_at_size(a, b, e):
    """The explorer on the pair in tmux: seconds from its start to the first screen, then
    q (to the process's end, the terminal restored) at three moments of the worker's
    preparation: while it reads the backbones, in the first end point's evaluation,
    and in a curve's or the landscape's evaluation (when one begins within WAIT_S)."""
    if not shutil.which("tmux"):
        print("  explorer: skipped (needs tmux)")
        return
    sock = "moescope-bench-%d" % os.getpid()
    moments = [("reading the backbones", lambda s: "backbone: MiB" in s),
               ("in end point A's evaluation", lambda s: "end point A: rows" in s),
               ("in a curve's evaluation", lambda s: "curve naive: rows" in s or "computing landscape" in s)]
    firsts, matrices, quits = [], [], []
    for k, (what, when) in enumerate(moments):
        # each run its own tmux server: one shutting down cannot swallow the next session
        first, matrix, quit_s, status, own = explorer_run(a, b, e, "%s-%d" % (sock, k), when)
        fs = "%.2f s" % first if first is not None else "none in %d s" % WAIT_S
        ms = "%.2f s" % matrix if matrix is not None else "not yet"
        qs = "%.0f ms" % (1e3 * quit_s) if quit_s is not None else "not in 300 s"
        print("  explorer in tmux, q %s: first screen after %s (the cost matrix with its assignment %s); q ended "
              "the process after %s (status line then: %s)" % (what, fs, ms, qs, status[:110] or "q sent at %d s" % WAIT_S))
        if own:
            print("    its own account: first screen %.2f s after its start, the UI thread's CPU to it %.2f s; "
                  "the MoE block's experts read into floats by the worker (after the matrix, whose expert cost reads the "
                  "files' pages) in %.2f s, the cost matrix with its assignment drawn at %.2f s (the process's CPU to it %.2f s); after q the terminal restored at %.0f ms, the "
                  "workers stopped at %.0f ms, memory freed at %.0f ms"
                  % tuple(own.get(key, float("nan")) * f for key, f in (
                      ("explorer first screen", 1), ("explorer first screen, UI thread CPU", 1),
                      ("explorer block read", 1), ("explorer cost matrix and assignment", 1),
                      ("explorer cost matrix and assignment, process CPU", 1),
                      ("explorer q: terminal restored", 1e3), ("explorer q: workers stopped", 1e3),
                      ("explorer q: memory freed", 1e3))))
        if first is not None:
            firsts.append(first)
        if matrix is not None:  # q may come first (the backbones' reading begins 2 s after the block's)
            matrices.append(matrix)
        quits.append(quit_s if quit_s is not None else float("inf"))
    kern = benchlib.kernel_text()
    fmax = max(firsts) if firsts else None
    qmax = max(quits) if quits else float("inf")
    benchlib.result("explorer at GPT-2 small, first screen", "%.2f s (worst of %d starts)" % (fmax, len(firsts))
                    if fmax is not None else "none in %d s" % WAIT_S, "none: a latency target", "-", "< 1 s",
                    fmax is not None and fmax < 1, kern)
    mmax = max(matrices) if matrices else None
    benchlib.result("explorer at GPT-2 small, cost matrix with its assignment", "%.2f s (worst of the %d starts "
                    "that showed it before q)" % (mmax, len(matrices)) if mmax is not None else "none before q",
                    "none: a latency target", "-", "< 1 s", mmax is not None and mmax < 1, kern)
    benchlib.result("explorer at GPT-2 small, q while computing", "%.0f ms (worst of %d moments)"
                    % (1e3 * qmax, len(quits)), "none: a latency target", "-", "< 100 ms", qmax < 0.1, kern)


def paper_pair(tmp):
    """the GPT-2-small pair (written once, or reused from BENCH_PAPER_DIR): a, b, e, how it was made"""
    cfg = gen_gpt2.config(**PAPER)
    out = os.environ.get("BENCH_PAPER_DIR") or os.path.join(tmp, "paper")
    t0, made = time.time(), "reused from BENCH_PAPER_DIR"
    if not os.path.exists(os.path.join(out, "seed2", "config.json")):
        back = gen_gpt2.backbone(cfg, 9)
        m1 = gen_gpt2.moe_blocks(cfg, 1)
        gen_gpt2.write_pool(out, cfg, back, {"seed1": m1, "seed2": gen_gpt2.perturbed_copy(cfg, m1, 2)[0]},
                            gen_gpt2.eval_ids(cfg, 3, 8, 1024))
        del back, m1
        made = "written in %.0f s" % (time.time() - t0)
    a, b, e = (os.path.join(out, s) for s in ("seed1", "seed2", "eval.safetensors"))
    return a, b, e, made


def main():
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1:] == ["--explorer"]:  # the explorer's part of 3 alone
            a, b, e, made = paper_pair(tmp)
            print("bench_network: the explorer at the paper's size (GPT-2 small, 8 x 1024 tokens; %s); load "
                  "average %.1f" % (made, os.getloadavg()[0]))
            explorer_at_size(a, b, e)
            return
        throughput(tmp)
        landscape(tmp)
        if os.environ.get("BENCH_PAPER", "1") != "0":
            paper_size(tmp)


if __name__ == "__main__":
    main()
