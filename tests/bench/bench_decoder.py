"""tests/bench/bench_decoder.py - a real-sized Hugging Face MoE decoder's evaluation:
`moescope eval` of a Granite-3.0-1B-A400M-shaped granitemoe checkpoint (random BF16
weights, tests/bench/gen_decoder_realsize.py: written at bench time, deleted after
unless BENCH_DECODER_DIR names where to keep it) on N x T = 4 x 512 = 2048 tokens,
beside PyTorch's CPU forward of the same checkpoint (tests/bench/peer_granitemoe_torch.py,
float32, the same tokens, the same cores: both started by benchlib.run_on_cores, pinned to
the first THREADS CPUs with their BLAS/OpenMP pools that size, PyTorch with one inter-op
thread; one forward each: at 1.75 TFLOP a warm-up
would double the bench), and against the arithmetic floor:

  floor = 2 x (the active parameters per token) x tokens / the SGEMM rate, in CPU seconds

the active parameters being q, k, v, o, the router, top-k of the experts (3 h d
each) and the head (V d) per block and token; the SGEMM rate one core's, in CPU time
(benchlib.gemm_rate): the times compared are CPU seconds, user + system, since other
work on a shared machine stretches the wall time, not the CPU time. Peak resident memory (/usr/bin/time -v) is
shown beside the BF16 weights' size (what a mapping of the shards holds: eval keeps the
experts there, converted a panel at a time inside the products).
Targets: moescope's CPU time <= PyTorch's and <= 2x the floor.

Then a landscape of one middle block (12) on the network's loss, B the same model with
its MoE blocks drawn from another seed (gen_decoder_realsize.py --moe-seed 2: A's
backbone, so no --interpolate-backbone): 2 sampled orders at 3 points on 2 x 128 tokens,
the layer-only proxy included. Every MoE block of A and B stays in the mapped shards (the
chosen block's orders as views of B's file, the interpolations mixed per panel), so the
peak resident memory beyond the two checkpoints' files is the backbone's norms (its
matrices stay mapped too), the proxy's pair outputs (at most MOESCOPE_LS_MEM_MB, 1024 MiB, over
the 32 x 32 pairs) and the activations. Target: beyond the files <= 1 GiB + the proxy's
pair outputs (the activations of the 1024 pairs' experts on the tokens).

  BENCH_DECODER_THREADS=2   threads for both (default: the online CPUs, at most 8)
  BENCH_DECODER_LAYERS=24   fewer blocks for a quick look (the shape otherwise kept)
  BENCH_DECODER_LANDSCAPE=0 no landscape (it writes B, another 2.5 GiB)"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]
import benchlib  # noqa: E402
import gen_decoder_realsize as gen  # noqa: E402

MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", "./moescope"))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")


def active_params(c):
    d, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = d // nh
    per_block = d * nh * hd * 2 + d * nkv * hd * 2 + d * c["num_local_experts"] + \
        c["num_experts_per_tok"] * 3 * c["intermediate_size"] * d
    return c["num_hidden_layers"] * per_block + c["vocab_size"] * d


def run_moescope(ck, ev, threads):
    """(s per evaluation, its CPU s, peak RSS KiB, loss): eval --repeat 1 times the
    evaluation alone (the load not counted, as the peer's is not)"""
    r = benchlib.run_on_cores(["/usr/bin/time", "-v", MOESCOPE, "eval", ck, "--eval", ev, "--threads", str(threads),
                               "--repeat", "1"], threads, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("moescope eval failed: " + r.stderr[-2000:])
    m = re.search(r"([0-9.]+) s per run, [0-9]+ tokens/s \(CPU ([0-9.]+) s per run\)", r.stderr)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    return float(m.group(1)), float(m.group(2)), rss, loss


def write_eval(path, ids):
    """an evaluation set of input_ids (N, T)"""
    hb = json.dumps({"input_ids": {"dtype": "I64", "shape": list(ids.shape), "data_offsets": [0, ids.nbytes]}}).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + ids.tobytes())


def read_ids(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        return np.frombuffer(f.read(), np.int64).reshape(h["input_ids"]["shape"])


def files_size(ck):
    return sum(os.path.getsize(os.path.join(ck, f)) for f in os.listdir(ck) if f.startswith("model-"))


def run_landscape(ck, layers, tmp, keep, threads):
    """(wall s, CPU s, peak RSS KiB, files of A and B in bytes, the proxy's pair outputs in
    bytes) of a 2-order landscape of block 12 on 2 x 128 tokens"""
    ckb = (keep.rstrip("/") + "_moe2") if keep else os.path.join(tmp, "granite_moe2")
    if not os.path.exists(os.path.join(ckb, "config.json")):
        subprocess.run([PYTHON, os.path.join(HERE, "gen_decoder_realsize.py"), ckb, "--layers", str(layers),
                        "--moe-seed", "2"], check=True)
    ev = os.path.join(tmp, "ls_eval.safetensors")
    ids = np.ascontiguousarray(read_ids(os.path.join(ck, "eval.safetensors"))[:2, :128])
    write_eval(ev, ids)
    block = min(12, layers - 1)
    r = subprocess.run(["/usr/bin/time", "-v", MOESCOPE, "landscape", ck, ckb, "--eval", ev, "--layer", str(block),
                        "--samples", "2", "--points", "3", "--threads", str(threads), "-q"],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("moescope landscape failed: " + r.stderr[-2000:])
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", r.stderr).group(1)
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
    cpu = float(re.search(r"User time \(seconds\): (\S+)", r.stderr).group(1)) + \
        float(re.search(r"System time \(seconds\): (\S+)", r.stderr).group(1))
    c = json.load(open(os.path.join(ck, "config.json")))
    n, d, tokens = c["num_local_experts"], c["hidden_size"], ids.size
    pairs = min(float(n * n + n) * tokens * d * 4, 1024.0 * 2**20)  # the proxy's budget, MOESCOPE_LS_MEM_MB
    return secs, cpu, rss, files_size(ck) + files_size(ckb), pairs


def main():
    threads = int(os.environ.get("BENCH_DECODER_THREADS", min(os.cpu_count() or 1, 8)))
    layers = int(os.environ.get("BENCH_DECODER_LAYERS", gen.SHAPE["layers"]))
    keep = os.environ.get("BENCH_DECODER_DIR")
    tmp = tempfile.mkdtemp(prefix="bench_decoder_")
    ck = keep or os.path.join(tmp, "granite")
    try:
        if not os.path.exists(os.path.join(ck, "config.json")):
            subprocess.run([PYTHON, os.path.join(HERE, "gen_decoder_realsize.py"), ck, "--layers", str(layers)],
                           check=True)
        c = json.load(open(os.path.join(ck, "config.json")))
        ev = os.path.join(ck, "eval.safetensors")
        tokens = 4 * 512
        weights = sum(os.path.getsize(os.path.join(ck, f)) for f in os.listdir(ck) if f.startswith("model-"))
        floor = benchlib.gemm_floor(2.0 * active_params(c) * tokens)  # CPU seconds
        rate = benchlib.gemm_rate()
        ms, mcpu, rss, mloss = run_moescope(ck, ev, threads)
        print("bench_decoder: granitemoe, Granite-3.0-1B-A400M's shape (%d blocks), %d tokens, %d thread(s); "
              "load average %.2f %.2f %.2f" % (c["num_hidden_layers"], tokens, threads, *os.getloadavg()))
        print("  active parameters %.3g per token; floor %.2f CPU s at the SGEMM rate %.1f GFLOP/s per core"
              % (active_params(c), floor, rate))
        print("  moescope eval: %.2f s wall, %.2f s CPU, peak RSS %.2f GiB (the BF16 weights: %.2f GiB, mapped; "
              "beyond them %.2f GiB), loss %.6f" % (ms, mcpu, rss / 2**20, weights / 2**30,
                                                    rss / 2**20 - weights / 2**30, mloss))
        peer = peer_cpu = None
        try:
            r = benchlib.run_on_cores([PYTHON, os.path.join(HERE, "peer_granitemoe_torch.py"), ck, ev, str(threads),
                                       "1"], threads, capture_output=True, text=True)
            m = re.search(r"PEER_DECODER_SECONDS (\S+) CPU (\S+) LOSS (\S+)", r.stdout)
            if m:
                peer, peer_cpu = float(m.group(1)), float(m.group(2))
                print("  PyTorch CPU forward (float32): %.2f s wall, %.2f s CPU, loss %.6f; both %s; %s"
                      % (peer, float(m.group(2)), float(m.group(3)), benchlib.pinned_text(threads),
                         benchlib.peer_threads(r.stdout)))
            else:
                print("  PyTorch peer failed: " + r.stderr[-500:])
        except OSError as e:
            print("  PyTorch peer not run: %s" % e)
        kern = benchlib.kernel_text()
        ls = None
        if os.environ.get("BENCH_DECODER_LANDSCAPE", "1") != "0":
            ls = run_landscape(ck, layers, tmp, keep, threads)
            print("  moescope landscape (block %d, 2 orders, 3 points, 256 tokens, proxy): %.1f s wall, %.1f s CPU, "
                  "peak RSS %.2f GiB (A's and B's files %.2f GiB, mapped; beyond them %.2f GiB; the proxy's pair "
                  "outputs %.2f GiB)" % (min(12, layers - 1), ls[0], ls[1], ls[2] / 2**20, ls[3] / 2**30,
                                         ls[2] / 2**20 - ls[3] / 2**30, ls[4] / 2**30))
        benchlib.result("decoder eval, Granite-1B-shaped, %d tokens" % tokens, "%.2f CPU s" % mcpu,
                        "2 x active params x tokens at the SGEMM rate %.2f CPU s" % floor, "%.2fx" % (mcpu / floor),
                        "<= 2x", mcpu / floor <= 2.0, kern)
        if peer_cpu:
            benchlib.result("decoder eval vs PyTorch, Granite-1B-shaped", "%.2f CPU s" % mcpu,
                            "PyTorch CPU forward %.2f CPU s" % peer_cpu, "%.2fx" % (mcpu / peer_cpu), "<= 1x",
                            mcpu <= peer_cpu, kern)
        benchlib.result("decoder eval memory, Granite-1B-shaped", "peak RSS %.2f GiB" % (rss / 2**20),
                        "the BF16 weights %.2f GiB + 1 GiB" % (weights / 2**30),
                        "%.2fx" % (rss / 2**20 / (weights / 2**30 + 1)), "<= 1x",
                        rss / 2**20 <= weights / 2**30 + 1, kern)
        if ls:
            beyond = ls[2] / 2**20 - ls[3] / 2**30
            benchlib.result("decoder landscape memory, Granite-1B-shaped", "%.2f GiB beyond the files" % beyond,
                            "1 GiB + the proxy's pair outputs %.2f GiB" % (ls[4] / 2**30),
                            "%.2fx" % (beyond / (1 + ls[4] / 2**30)), "<= 1x", beyond <= 1 + ls[4] / 2**30, kern)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
