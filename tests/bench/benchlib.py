"""tests/bench/benchlib.py - what every benchmark states beside its numbers, in
one form: the floor a result is measured against (the arithmetic at this
machine's measured peak for an instruction set, or a peer: scipy, numpy,
PyTorch), the kernels that ran, and the ratio. Each result is one line

  bench: NAME | MOESCOPE | floor: FLOOR | ratio R | target T: PASS | kernels: K

which tests/bench/run.sh collects into the summary at the end of `make bench`.

The peaks come from tests/bench/fma_peak.c (ten independent FMA chains per
register width, one core, CPU time, best of five); the kernels from
`moescope --version` (its own vector form and OpenBLAS's) and, for a numpy
peer, from OpenBLAS's own report (OPENBLAS_VERBOSE=2)."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", os.path.join(ROOT, "moescope")))
PYTHON = os.environ.get("PYTHON", sys.executable)

_peaks = None


def fma_peaks():
    """{'avx512': GFLOP/s, 'avx2': GFLOP/s} of one core, for the sets this CPU runs
    (fma_peak.c, compiled once per process)."""
    global _peaks
    if _peaks is None:
        _peaks = {}
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "fma_peak")
            r = subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "fma_peak.c")],
                               capture_output=True, text=True)
            if r.returncode == 0:
                out = subprocess.run([exe], capture_output=True, text=True).stdout
                for m in re.finditer(r"^FMA_PEAK (\w+) ([0-9.]+)", out, re.M):
                    _peaks[m.group(1)] = float(m.group(2))
    return _peaks


def moescope_kernels(env=None):
    """(vector form, OpenBLAS kernels) `moescope --version` reports in env."""
    r = subprocess.run([MOESCOPE, "--version"], capture_output=True, text=True, env=env)
    simd = re.search(r"^simd: ([^(\n]+)", r.stdout, re.M)
    blas = re.search(r"^blas: .*\((\w+) kernels\)", r.stdout, re.M)
    return (simd.group(1).strip() if simd else "?", blas.group(1) if blas else "?")


def kernel_text(env=None):
    simd, blas = moescope_kernels(env)
    return "moescope %s, OpenBLAS %s" % (simd, blas)


def simd_key(simd):
    """fma_peaks' key of a vector form's name ('AVX-512' -> 'avx512')"""
    return "avx512" if "512" in simd else "avx2" if "AVX2" in simd else "plain"


def numpy_blas(env=None):
    """the OpenBLAS kernels numpy gets in env ('?' when not OpenBLAS)"""
    e = dict(os.environ if env is None else env, OPENBLAS_VERBOSE="2")
    r = subprocess.run([PYTHON, "-c", "import numpy"], capture_output=True, text=True, env=e)
    m = re.search(r"Core: (\w+)", r.stdout + r.stderr)
    return m.group(1) if m else "?"


# the environment variables that size a process's BLAS and OpenMP pools (PyTorch's
# intra-op pool is OpenMP's; oneDNN and MKL follow it), read when the library loads
POOL_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cores(threads):
    """the first `threads` CPUs this process may run on (all of them when it may run
    on fewer)"""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[:max(1, min(threads, len(cpus)))]


def run_on_cores(cmd, threads, env=None, **kw):
    """subprocess.run(cmd) held to `threads` cores, moescope and every peer alike, so
    that "the same threads" is the same cores: its pools that size (POOL_VARS in its
    environment, set before numpy or torch is imported) and the process pinned to
    cores(threads) before it starts (sched_setaffinity in the child: every thread it
    makes, PyTorch's inter-op pool and oneDNN's included, stays on those CPUs). A
    peer's own count (torch.set_num_threads) is its business; this bounds what it can
    use, its CPU time included."""
    e = dict(os.environ if env is None else env)
    for k in POOL_VARS:
        e[k] = str(threads)
    cpus = cores(threads)
    return subprocess.run(cmd, env=e, preexec_fn=lambda: os.sched_setaffinity(0, cpus), **kw)


def torch_threads(torch, threads):
    """A PyTorch peer on `threads` threads, as run_on_cores holds it: its intra-op pool
    that size and one inter-op thread (set before any parallel work); its line
    "PEER_THREADS intra I interop J cpus C" says what it got."""
    torch.set_num_interop_threads(1)
    torch.set_num_threads(threads)
    print("PEER_THREADS intra %d interop %d cpus %d" % (torch.get_num_threads(), torch.get_num_interop_threads(),
                                                       len(os.sched_getaffinity(0))))


def peer_threads(out):
    """a peer's PEER_THREADS line as text ('?' when it printed none)"""
    m = re.search(r"PEER_THREADS intra (\d+) interop (\d+) cpus (\d+)", out)
    return "PyTorch %s intra-op + %s inter-op threads on %s CPU%s" % (
        m.group(1), m.group(2), m.group(3), "" if m.group(3) == "1" else "s") if m else "PyTorch threads ?"


def pinned_text(threads):
    """how run_on_cores held a run, for the report"""
    return "pinned to CPU %s, %s=%d" % (",".join(map(str, cores(threads))), "/".join(POOL_VARS), threads)


def load():
    return "load %.1f" % os.getloadavg()[0]


def result(name, mine, floor, ratio, target="", ok=None, kernels=""):
    """one summary line; ratio: moescope's time over the floor's (<= target is a
    PASS) or, for throughputs and peers, as the benchmark words it"""
    verdict = "" if ok is None else ": PASS" if ok else ": MISS"
    print("bench: %s | %s | floor: %s | ratio %s | target %s%s | kernels: %s | %s"
          % (name, mine, floor, ratio, target or "-", verdict, kernels or "-", load()))
    sys.stdout.flush()


_gemm = None


def gemm_rate():
    """The floor's rate, one definition for every benchmark and machine: GFLOP/s of one
    core's plain cblas_sgemm, C (1024, 1024) = A (1024, 1024) B^T, in CPU time (a shared
    machine's preemption left out), best of 20, OpenBLAS single-threaded on the kernels
    moescope runs (tests/bench/sgemm_rate.c; measured once per process, in the run it
    is used in). A benchmark's floor is its arithmetic (the FLOPs of its products) at
    this rate: gemm_floor(flops), seconds of CPU."""
    global _gemm
    if _gemm is None:
        with tempfile.TemporaryDirectory() as tmp:
            exe = os.path.join(tmp, "sgemm_rate")
            flags = subprocess.run(["pkg-config", "--cflags", "--libs", "openblas"], capture_output=True,
                                   text=True).stdout.split()
            r = subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "sgemm_rate.c")] + flags,
                               capture_output=True, text=True)
            if r.returncode:
                raise SystemExit("sgemm_rate.c: " + r.stderr)
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
            out = subprocess.run([exe, "1024", "1024", "1024", "20", "cpu"], capture_output=True, text=True,
                                 env=env).stdout
            _gemm = float(re.search(r"SGEMM_GFLOPS ([0-9.]+)", out).group(1))
    return _gemm


def gemm_floor(flops):
    """CPU seconds of flops at gemm_rate()"""
    return flops / (gemm_rate() * 1e9)


def floor_text(flops):
    return "%.2f TFLOP at the one-core SGEMM rate %.1f GFLOP/s: %.1f CPU s" % (flops / 1e12, gemm_rate(),
                                                                           gemm_floor(flops))
