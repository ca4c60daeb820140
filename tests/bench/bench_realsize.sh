#!/usr/bin/env bash
# tests/bench/bench_realsize.sh - real-sized layers from BF16 checkpoints in their
# family's layout, written at bench time (tests/bench/gen_realsize.py, deleted
# afterwards): `cost` (both methods) and `align`, each against its floor, and
# peak RSS (/usr/bin/time -v) against the two layers in float32.
#
#   floor(cost)  = the expert cost's GEMM flops (5 h d^2 per expert for SiLU-GLU:
#                  W1'W1, W3'W3 on their upper triangles, W1'W3, W2 W2') over the
#                  machine's SGEMM rate (tests/bench/sgemm_rate.c, a plain sgemm, on
#                  the OpenBLAS kernels moescope runs)
#   floor(align) = floor(cost) + weight matching's GEMMs (3 x 2 h^2 d per slot) over
#                  the same rate + the assignments' own time (the h x h solves,
#                  as align measured them: MOESCOPE_TIMING)
# Targets: Mixtral-sized (n 8, d 4096, h 14336, two shards) align <= 1.5x its
# floor and <= 1.5x the layers in RSS; OLMoE-sized (n 64, d 2048, h 1024) cost
# and align <= 2x, RSS <= 2x. A pair whose float32 layers exceed a quarter of the
# machine's memory (Mixtral-sized here) is read expert by expert (streamed).
# DeepSeek-V3-sized (n 256, d 7168, h 2048, 8 groups, sigmoid, 8 shards): only with
# BENCH_DEEPSEEK=1 - it writes 45 GB of inputs and a 22.5 GB output, so it first
# checks the free space and refuses, saying how much is missing. There `align
# --method gate` runs (the exact expert cost is 2.4e16 flops: not offered), its floor
# = weight matching's GEMMs + assignments.
#
#   REALSIZE="olmoe mixtral"   the sizes (default both; BENCH_DEEPSEEK=1 adds deepseek);
#                              "name:n:d:h:shards" for others, e.g.
#                              REALSIZE="mixtral:8:1024:3584:2" (a quarter-size Mixtral)
#   REALSIZE_STREAM="1 0"      also run with MOESCOPE_STREAM set to each value (streamed /
#                              held whole); default: as moescope decides
#   REALSIZE_DIR=...           where the checkpoints go (default /work/scratch/realsize
#                              when it exists, else a temporary directory)
#   REALSIZE_KEEP=1            keep them for the next run
# A size whose run would not fit this machine's available memory is skipped, with a
# message. Memory is read from /proc/meminfo just before each run.
set -u
cd "$(dirname "$0")/../.."
: "${PYTHON:=/usr/bin/python3}"
if [ -z "${MOESCOPE:-}" ] || [ "$MOESCOPE" = build/rel/moescope ]; then
    make -s build/rel/moescope || exit 1
    MOESCOPE=build/rel/moescope
fi
SIZES=${REALSIZE:-olmoe mixtral}
[ "${BENCH_DEEPSEEK:-0}" = 1 ] && [ -z "${REALSIZE:-}" ] && SIZES="$SIZES deepseek"
STREAMS=${REALSIZE_STREAM:-default}
if [ -n "${REALSIZE_DIR:-}" ]; then DIR=$REALSIZE_DIR
elif [ -d /work/scratch ]; then DIR=/work/scratch/realsize
else DIR=$(mktemp -d); fi
mkdir -p "$DIR" || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ "${REALSIZE_KEEP:-0}" = 1 ] || rm -rf "$DIR"/bench-*' EXIT
PKGS="openblas"
cc -std=gnu11 -O2 -march=x86-64-v2 -Wall -Wextra $(pkg-config --cflags $PKGS) \
    -o "$TMP/sgemm_rate" tests/bench/sgemm_rate.c $(pkg-config --libs $PKGS) || exit 1
# the floors' SGEMM rate on the OpenBLAS kernels moescope runs (it may choose them
# itself where OpenBLAS does not know the CPU: --version says)
CORE=$("$MOESCOPE" --version | sed -n 's/^blas: .*(\([A-Za-z0-9]*\) kernels)$/\1/p')
KERNELS="moescope $("$MOESCOPE" --version | sed -n 's/^simd: \([^(]*\) (.*/\1/p' | sed 's/ *$//'), OpenBLAS ${CORE:-?}"

avail_gib() { awk '/^MemAvailable:/ {printf "%.1f", $2 / 1048576}' /proc/meminfo; }
total_gib() { awk '/^MemTotal:/ {printf "%.1f", $2 / 1048576}' /proc/meminfo; }
disk_gib() { df -Pk "$1" | awk 'NR == 2 {printf "%.1f", $4 / 1048576}'; }

# run NAME CMD...: /usr/bin/time -v around CMD, timings to $TMP/NAME.err; sets WALL and RSS_KB
run() {
    local name=$1; shift
    MOESCOPE_TIMING=1 /usr/bin/time -v -o "$TMP/$name.time" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
    local rc=$?
    [ $rc -eq 0 ] || { echo "  $name failed (exit $rc):"; tail -5 "$TMP/$name.err"; return 1; }
    WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
        for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$TMP/$name.time")
    RSS_KB=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/$name.time")
}
# summary NAME SECONDS FLOOR_S RSS_KB LAYERS_KB: the time and memory lines of the
# summary (tests/bench/benchlib.py's form); the floor is the GEMMs at the SGEMM rate
# of this run (and the assignments' own time, for align)
summary() {
    awk -v n="$1" -v w="$2" -v f="$3" -v r="$4" -v l="$5" -v k="$KERNELS" -v ld="$(cut -d' ' -f1 /proc/loadavg)" \
        'BEGIN { printf "bench: %s | %.1f s | floor: its GEMMs at the SGEMM rate %.1f s | ratio %.2fx | target - | kernels: %s | load %s\n", n, w, f, w / f, k, ld;
                 printf "bench: %s, peak memory | %.2f GiB | floor: the two layers in float32 %.2f GiB | ratio %.2fx | target - | kernels: - | load %s\n", n, r / 1048576, l / 1048576, r / l, ld }'
}
timing() { awk -v w="$2" '$1 == "timing:" { k = $2; for (i = 3; i < NF; i++) k = k " " $i;
    if (k == w) s += $NF } END { printf "%.3f", s + 0 }' "$TMP/$1.err"; }

for size in $SIZES; do
    case $size in
        mixtral) spec="mixtral:8:4096:14336:2" ;;
        olmoe) spec="olmoe:64:2048:1024:1" ;;
        deepseek) spec="deepseek_v3:256:7168:2048:8" ;;
        *) spec=$size ;;
    esac
    IFS=: read -r fam n d h shards <<<"$spec"
    layer_gib=$(awk -v n="$n" -v d="$d" -v h="$h" 'BEGIN { printf "%.2f", n * 3 * h * d * 4 / 2^30 }')
    # held whole: the layers and what is derived; streamed (layers over a quarter of the
    # machine): a few experts, the h x h matrix and the Gram blocks
    need=$(awk -v l="$layer_gib" -v t="$(total_gib)" -v n="$n" -v d="$d" -v h="$h" 'BEGIN {
        if (2 * l > t / 4) printf "%.1f", 4 * l / n + 8 * h * h / 2^30 + 1.5; else printf "%.1f", 2 * l * 1.6 + 1 }')
    echo "== bench_realsize: $fam-sized n=$n d=$d h=$h, BF16, $shards shard(s); two layers in float32 = $(awk -v l="$layer_gib" 'BEGIN{printf "%.2f", 2*l}') GiB"
    if awk -v a="$(avail_gib)" -v nd="$need" 'BEGIN { exit !(a < nd) }'; then
        echo "  skipped: needs about $need GiB, $(avail_gib) GiB available now"
        continue
    fi
    ck=$DIR/bench-$fam-$n-$d-$h-$shards
    # disk: both inputs (BF16) unless written already, the output, and 2 GiB to spare
    disk_need=$(awk -v l="$layer_gib" -v have="$([ -f "$ck/B/config.json" ] && echo 1 || echo 0)" \
        'BEGIN { printf "%.1f", (have ? 0 : l) + l / 2 + 2 }')
    if awk -v a="$(disk_gib "$DIR")" -v nd="$disk_need" 'BEGIN { exit !(a < nd) }'; then
        echo "  refused: needs $disk_need GiB of disk in $DIR (inputs and output), $(disk_gib "$DIR") GiB free"
        continue
    fi
    if [ ! -f "$ck/B/config.json" ]; then
        t0=$(date +%s.%N)
        "$PYTHON" tests/bench/gen_realsize.py "$ck" --family "$fam" --n "$n" --d "$d" --h "$h" \
            --shards "$shards" >"$TMP/order" || exit 1
        echo "  wrote the pair in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s ($(du -sh "$ck" | cut -f1))"
    fi
    hh=$(( h < 4096 ? (h > 2048 ? h : 2048) : 4096 ))
    rate=$(OPENBLAS_CORETYPE=${CORE:-$OPENBLAS_CORETYPE} "$TMP/sgemm_rate" "$hh" "$hh" "$d" 2 | awk '{print $2}')
    gram=$(awk -v n="$n" -v d="$d" -v h="$h" 'BEGIN { print 2 * n * 5 * h * d * d }')
    wmf=$(awk -v n="$n" -v d="$d" -v h="$h" 'BEGIN { print n * 3 * 2 * h * h * d }')
    layers_kb=$(awk -v l="$layer_gib" 'BEGIN { print 2 * l * 1048576 }')
    echo "  SGEMM rate (plain sgemm ${hh}x${hh}x$d): $rate GFLOP/s"

    [ -f "$TMP/order" ] && cp "$TMP/order" "$ck/order"
    gate_only=0; method=()
    [ "$fam" = deepseek_v3 ] && gate_only=1 method=(--method gate) && gram=0
    for mode in $STREAMS; do
    if [ "$mode" = default ]; then unset MOESCOPE_STREAM; tag=""; else export MOESCOPE_STREAM=$mode; tag=" (MOESCOPE_STREAM=$mode)"; fi
    echo "  --${tag:- as moescope decides}"
    if [ $gate_only = 0 ]; then
    run cost "$MOESCOPE" cost "$ck/A" "$ck/B" --json "$TMP/cost.json" || continue
    floor=$(awk -v f="$gram" -v r="$rate" 'BEGIN { print f / r / 1e9 }')
    cw=$WALL crss=$RSS_KB
    awk -v w="$cw" -v f="$floor" -v r="$crss" -v l="$layers_kb" -v g="$(timing cost 'expert cost')" \
        -v x="$(timing cost 'expert reads')" \
        'BEGIN { printf "  cost (both methods) %8.1f s  floor %7.1f s  time/floor %5.2f x   (expert cost %.1f s, of it reading experts %.1f s)   peak RSS %6.2f GiB = %4.2f x the layers\n", w, f, w / f, g, x, r / 1048576, r / l }'
    summary "cost $fam-sized$tag" "$cw" "$floor" "$crss" "$layers_kb"
    fi

    out=$DIR/bench-out-$fam
    rm -rf "$out"
    run align "$MOESCOPE" align "$ck/A" "$ck/B" -o "$out" "${method[@]}" || continue
    lap=$(timing align "wm assignment")
    floor=$(awk -v f="$gram" -v w="$wmf" -v r="$rate" -v l="$lap" 'BEGIN { print (f + w) / r / 1e9 + l }')
    awk -v w="$WALL" -v f="$floor" -v r="$RSS_KB" -v l="$layers_kb" -v lap="$lap" -v n="$n" -v h="$h" \
        -v sim="$(timing align 'wm similarity')" -v ec="$(timing align 'expert cost')" \
        -v x="$(timing align 'expert reads')" -v m="${method[*]}" \
        'BEGIN { printf "  align %-13s %8.1f s  floor %7.1f s  time/floor %5.2f x   peak RSS %6.2f GiB = %4.3f x the layers\n", m, w, f, w / f, r / 1048576, r / l;
                 printf "    split: expert cost %.1f s, weight-matching GEMMs %.1f s, %d assignments of %dx%d %.1f s (%.2f s each), rest %.1f s; reading streamed experts %.1f s in all (inside those and the writing)\n", ec, sim, n, h, h, lap, lap / n, w - ec - sim - lap, x }'
    summary "align $fam-sized$tag" "$WALL" "$floor" "$RSS_KB" "$layers_kb"
    grep -q "^order $(cat "$ck/order" 2>/dev/null || echo x)" "$TMP/align.out" 2>/dev/null &&
        echo "    the order found undoes the generator's expert permutation"
    sed -n 's/^timing: /    timing: /p' "$TMP/align.err"
    rm -rf "$out"
    done
    unset MOESCOPE_STREAM
done
