"""tests/bench/bench_network.py - the network evaluator and the network landscape.

1. Throughput (tokens/s, higher is better): `moescope eval` of a GPT-2-layout network
   with MoE blocks against PyTorch's CPU forward of the same network
   (tests/bench/peer_gpt2_torch.py: float32, inference mode, routed tokens gathered per
   expert), in one run, with the same thread count (--threads K, torch.set_num_threads(K)).
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
Needs python3-torch for part 1 (a peer only; skipped with a note when missing)."""
import json
import os
import re
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
        r = subprocess.run([MOESCOPE, "eval", ck, "--eval", ev, "--repeat", "3", "--threads", str(threads)],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("moescope eval failed: " + r.stderr)
        m = re.search(r"([0-9.]+) s per run, [0-9]+ tokens/s \(CPU ([0-9.]+) s per run\)", r.stderr)
        best, cpu = min(best, float(m.group(1))), min(cpu, float(m.group(2)))
        loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    return tokens / best, cpu, loss


def torch_rate(ck, ev, threads, tokens):
    r = subprocess.run([PYTHON, os.path.join(HERE, "peer_gpt2_torch.py"), ck, ev, str(threads), "5"],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("peer_gpt2_torch.py failed: " + r.stderr)
    m = re.search(r"PEER_NET_SECONDS (\S+) CPU (\S+) LOSS (\S+)", r.stdout)
    return tokens / float(m.group(1)), float(m.group(2)), float(m.group(3))


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
            tr, tcpu, tl = torch_rate(ck, ev, threads, tokens)
            print("%-26s %-7d %10.0f %10.0f %6.2fx %9.1f %9.1f %6.2fx   %.6f %.6f" %
                  (name, threads, cr, tr, cr / tr, 1e3 * ccpu, 1e3 * tcpu, tcpu / ccpu, cl, tl))
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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        throughput(tmp)
        landscape(tmp)


if __name__ == "__main__":
    main()
