# tests/lib/blas_kernels.sh - which OpenBLAS kernels this machine runs (sourced
# by tests/run.sh). OpenBLAS picks its kernels by CPU (OPENBLAS_CORETYPE forces
# a set); float32 results differ in their last bits between sets, so the
# numerical tests run under two of them. Needs $MOESCOPE.

# the kernel set OpenBLAS uses in this environment ("Haswell", "Prescott", ...),
# as `moescope --version` reports it
blas_kernel_now() {
    "$MOESCOPE" --version 2>/dev/null | sed -n 's/^blas: .*(\(.*\) kernels)$/\1/p'
}

# blas_cpu_can KERNEL: the CPU has the instructions of that set
blas_cpu_can() {
    local flags need f
    flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
    case ${1,,} in
        haswell | zen) need="avx2 fma" ;;
        skylakex | cooperlake) need="avx512f avx512dq avx512cd avx512bw avx512vl" ;;
        sandybridge) need="avx" ;;
        prescott) need="pni" ;;
        *) return 1 ;;
    esac
    for f in $need; do [[ $flags == *" $f "* ]] || return 1; done
}

# samples_kernels: what retraining the committed samples byte for byte needs, the
# OpenBLAS kernels they were made with (make_samples.sh, make_mixtral.sh: Haswell),
# whatever this environment chose; defines same NAME FILE1 FILE2, a byte-for-byte
# check, or a skip when the CPU cannot run those kernels (a bit-for-bit invariant of
# one kernel set, not of the CPU). Needs tests/lib/lib.sh.
samples_kernels() {
    if blas_cpu_can Haswell; then
        export OPENBLAS_CORETYPE=Haswell
        same() { check "$1" cmp "$2" "$3"; }
    else
        skip_part "byte-identical regeneration of the samples (made with OpenBLAS's Haswell kernels; this CPU has no AVX2)"
        same() { :; }
    fi
}

# the family a set belongs to (sets of one family share their sgemm kernels)
blas_family() {
    case ${1,,} in
        haswell | zen) echo Haswell ;;
        skylakex | cooperlake | sapphirerapids) echo SkylakeX ;;
        *) echo Prescott ;;
    esac
}

# blas_second_kernel FIRST: another family's set the CPU can run (AVX2, AVX-512,
# then SSE3), or nothing
blas_second_kernel() {
    local first k
    first=$(blas_family "${1:-}")
    for k in Haswell SkylakeX Prescott; do
        [ "$k" != "$first" ] && blas_cpu_can "$k" && { echo "$k"; return; }
    done
}
