#!/usr/bin/env bash
# tests/bench/bench_realsize.sh - real-sized layers from BF16 checkpoints in their
# family's layout, written at bench time (tests/bench/gen_realsize.py, deleted
# afterwards): `cost` (both methods) and `align`, each against its floor, and
# peak RSS (/usr/bin/time -v) against the two layers in float32.
#
#   floor(cost)  = the expert cost's GEMM flops (5 h d^2 per expert for SiLU-GLU:
#                  W1'W1, W3'W3 on their upper triangles, W1'W3, W2 W2')
#   floor(align) = those + weight matching's GEMMs (3 x 2 h^2 d per slot)
# each at the one floor every benchmark states (tests/bench/benchlib.py gemm_rate:
# one core's plain SGEMM rate measured in this run, in CPU time), in CPU seconds,
# against the command's CPU time (user + system, every thread); the assignments'
# own time (MOESCOPE_TIMING) is printed beside, not in the floor.
# Targets: the quarter-size Mixtral (n 8, d 1024, h 3584, BF16, two shards) align
# <= 1.5x the floor; Mixtral-sized (n 8, d 4096, h 14336) align <= 1.5x and <= 1.5x
# the layers in RSS; OLMoE-sized (n 64, d 2048, h 1024) cost and align <= 2x, RSS <= 2x. A pair whose float32 layers exceed a quarter of the
# machine's memory (Mixtral-sized here) is read expert by expert (streamed).
# DeepSeek-V3-sized (n 256, d 7168, h 2048, 8 groups, sigmoid, 8 shards): only with
# BENCH_DEEPSEEK=1 - it writes 45 GB of inputs and a 22.5 GB output, so it first
# checks the free space and refuses, saying how much is missing. There `align
# --method gate` runs (the exact expert cost is 2.4e16 flops: not offered), its floor
# = weight matching's GEMMs + assignments.
#
#   REALSIZE="mixtral-q olmoe mixtral"   the sizes (default these; BENCH_DEEPSEEK=1 adds deepseek);
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
SIZES=${REALSIZE:-mixtral-q olmoe mixtral}
[ "${BENCH_DEEPSEEK:-0}" = 1 ] && [ -z "${REALSIZE:-}" ] && SIZES="$SIZES deepseek"
STREAMS=${REALSIZE_STREAM:-default}
if [ -n "${REALSIZE_DIR:-}" ]; then DIR=$REALSIZE_DIR
elif [ -d /work/scratch ]; then DIR=/work/scratch/realsize
else DIR=$(mktemp -d); fi
mkdir -p "$DIR" || exit 1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ "${REALSIZE_KEEP:-0}" = 1 ] || rm -rf "$DIR"/bench-*' EXIT
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
    CPU=$(awk -F': ' '/(User|System) time \(seconds\)/ {s += $2} END {print s}' "$TMP/$name.time")
}
# summary NAME CPU_S FLOOR_S RSS_KB LAYERS_KB [TARGET]: the time and memory lines of the
# summary (tests/bench/benchlib.py's form); the floor is the GEMMs at the one-core
# SGEMM rate of this run, in CPU seconds
summary() {
    awk -v n="$1" -v w="$2" -v f="$3" -v r="$4" -v l="$5" -v k="$KERNELS" -v ld="$(cut -d' ' -f1 /proc/loadavg)" \
        -v rate="$RATE" -v tg="${6:-}" \
        'BEGIN { printf "bench: %s | %.1f CPU s | floor: its GEMMs at the one-core SGEMM rate %.1f GFLOP/s %.1f CPU s | ratio %.2fx | target %s | kernels: %s | load %s\n", n, w, rate, f, w / f, tg == "" ? "-" : "<= " tg "x" (w / f <= tg + 0 ? ": PASS" : ": MISS"), k, ld;
                 printf "bench: %s, peak memory | %.2f GiB | floor: the two layers in float32 %.2f GiB | ratio %.2fx | target - | kernels: - | load %s\n", n, r / 1048576, l / 1048576, r / l, ld }'
}
timing() { awk -v w="$2" '$1 == "timing:" { k = $2; for (i = 3; i < NF; i++) k = k " " $i;
    if (k == w) s += $NF } END { printf "%.3f", s + 0 }' "$TMP/$1.err"; }

RATE=$("$PYTHON" -c 'import sys; sys.path.insert(0, "tests/bench"); import benchlib; print(benchlib.gemm_rate())') || exit 1
echo "== bench_realsize: the floor's rate, one core's SGEMM (benchlib.gemm_rate): $RATE GFLOP/s"
for size in $SIZES; do
    target=
    case $size in
        mixtral-q) spec="mixtral:8:1024:3584:2" target=1.5 ;;
        mixtral) spec="mixtral:8:4096:14336:2" target=1.5 ;;
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
    rate=$RATE
    gram=$(awk -v n="$n" -v d="$d" -v h="$h" 'BEGIN { print 2 * n * 5 * h * d * d }')
    wmf=$(awk -v n="$n" -v d="$d" -v h="$h" 'BEGIN { print n * 3 * 2 * h * h * d }')
    layers_kb=$(awk -v l="$layer_gib" 'BEGIN { print 2 * l * 1048576 }')

    [ -f "$TMP/order" ] && cp "$TMP/order" "$ck/order"
    gate_only=0; method=()
    [ "$fam" = deepseek_v3 ] && gate_only=1 method=(--method gate) && gram=0
    for mode in $STREAMS; do
    if [ "$mode" = default ]; then unset MOESCOPE_STREAM; tag=""; else export MOESCOPE_STREAM=$mode; tag=" (MOESCOPE_STREAM=$mode)"; fi
    echo "  --${tag:- as moescope decides}"
    if [ $gate_only = 0 ]; then
    run cost "$MOESCOPE" cost "$ck/A" "$ck/B" --json "$TMP/cost.json" || continue
    floor=$(awk -v f="$gram" -v r="$rate" 'BEGIN { print f / r / 1e9 }')
    cw=$CPU crss=$RSS_KB
    awk -v w="$cw" -v f="$floor" -v r="$crss" -v l="$layers_kb" -v g="$(timing cost 'expert cost')" \
        -v x="$(timing cost 'expert reads')" \
        'BEGIN { printf "  cost (both methods) %8.1f CPU s  floor %7.1f s  time/floor %5.2f x   (expert cost %.1f s, of it reading experts %.1f s)   peak RSS %6.2f GiB = %4.2f x the layers\n", w, f, w / f, g, x, r / 1048576, r / l }'
    summary "cost $fam-sized$tag" "$cw" "$floor" "$crss" "$layers_kb"
    fi

    out=$DIR/bench-out-$fam
    rm -rf "$out"
    run align "$MOESCOPE" align "$ck/A" "$ck/B" -o "$out" "${method[@]}" || continue
    lap=$(timing align "wm assignment")
    floor=$(awk -v f="$gram" -v w="$wmf" -v r="$rate" 'BEGIN { print (f + w) / r / 1e9 }')
    awk -v w="$CPU" -v f="$floor" -v r="$RSS_KB" -v l="$layers_kb" -v lap="$lap" -v n="$n" -v h="$h" \
        -v sim="$(timing align 'wm similarity')" -v ec="$(timing align 'expert cost')" \
        -v x="$(timing align 'expert reads')" -v m="${method[*]}" -v wall="$WALL" \
        'BEGIN { printf "  align %-13s %8.1f CPU s  floor %7.1f s  time/floor %5.2f x   peak RSS %6.2f GiB = %4.3f x the layers\n", m, w, f, w / f, r / 1048576, r / l;
                 printf "    split: expert cost %.1f s, weight-matching GEMMs %.1f s, %d assignments of %dx%d %.1f s (%.2f s each), rest %.1f s (wall); reading streamed experts %.1f s in all (inside those and the writing)\n", ec, sim, n, h, h, lap, lap / n, wall - ec - sim - lap, x }'
    summary "align $fam-sized n=$n d=$d h=$h$tag" "$CPU" "$floor" "$RSS_KB" "$layers_kb" "$target"
    echo "    wall $WALL s"
    grep -q "^order $(cat "$ck/order" 2>/dev/null || echo x)" "$TMP/align.out" 2>/dev/null &&
        echo "    the order found undoes the generator's expert permutation"
    sed -n 's/^timing: /    timing: /p' "$TMP/align.err"
    rm -rf "$out"
    done
    unset MOESCOPE_STREAM
done
