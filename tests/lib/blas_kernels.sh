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
