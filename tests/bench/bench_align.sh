#!/usr/bin/env bash
# tests/bench/bench_align.sh - align a random GPT-2-sized MoE layer (n=8, d=768,
# h=3072; generated in memory, nothing written): total time vs its GEMMs and
# assignments measured separately (target <= 2x), peak RSS vs the two layers
# (target < 2.5x), and the numpy/scipy peer on a layer of the same size.
#   ALIGN_BENCH_SIZE="8 128 512" bash tests/bench/bench_align.sh   (a quick run)
set -u
cd "$(dirname "$0")/../.."
: "${PYTHON:=/usr/bin/python3}"
SIZE=${ALIGN_BENCH_SIZE:-8 768 3072}
make -s build/rel/libmoescope.a || exit 1
BIN=$(mktemp -d)/bench_align
trap 'rm -rf "$(dirname "$BIN")"' EXIT
PKGS="openblas libcjson libpng"
cc -std=gnu11 -O2 -march=x86-64-v2 -Wall -Wextra -Iinclude $(pkg-config --cflags $PKGS) \
    -o "$BIN" tests/bench/bench_align.c build/rel/libmoescope.a $(pkg-config --libs $PKGS) \
    -lpthread -lm || exit 1
echo "== bench_align: $SIZE"
c_out=$("$BIN" $SIZE ${ALIGN_BENCH_REPS:-}) || { echo "$c_out"; exit 1; }
echo "$c_out" | grep -v '^C_ALIGN_SECONDS'
p_out=$("$PYTHON" tests/bench/peer_align.py $SIZE) || { echo "$p_out"; exit 1; }
echo "  $(echo "$p_out" | grep -v '^PEER_ALIGN_SECONDS')"
c=$(echo "$c_out" | awk '/^C_ALIGN_SECONDS/ {print $2}')
p=$(echo "$p_out" | awk '/^PEER_ALIGN_SECONDS/ {print $2}')
awk -v c="$c" -v p="$p" 'BEGIN { printf "  peer / moescope          %8.2f x (numpy/scipy time over ours)\n", p / c }'
# the summary lines (tests/bench/benchlib.py's form); the binary links OpenBLAS as it chooses
kern="OpenBLAS $(OPENBLAS_VERBOSE=2 "$PYTHON" -c 'import numpy' 2>&1 | sed -n 's/^Core: //p' | head -1) (its own choice)"
echo "$c_out" | awk -v c="$c" -v k="$kern" -v load="$(cut -d' ' -f1 /proc/loadavg)" -v size="n d h = $SIZE" '
    /GEMMs alone/ { g = $3 } /assignments alone/ { a = $3 }
    /peak RSS during align/ { r = $5 } /^ *two layers/ { l = $3 }
    END {
        printf "bench: align %s | %.3f s | floor: its GEMMs + assignments alone %.3f s | ratio %.2fx | target <= 2x: %s | kernels: %s | load %s\n",
            size, c, g + a, c / (g + a), c <= 2 * (g + a) ? "PASS" : "MISS", k, load
        printf "bench: align %s, peak memory | %.0f MB | floor: the two layers %.0f MB | ratio %.2fx | target < 2.5x: %s | kernels: - | load %s\n",
            size, r, l, r / l, r < 2.5 * l ? "PASS" : "MISS", load
    }'
echo "bench: align n d h = ${SIZE}, peer | $c s | floor: numpy/scipy $p s | ratio $(awk -v c="$c" -v p="$p" 'BEGIN{printf "%.2f", p / c}')x faster | target - | kernels: $kern | load $(cut -d' ' -f1 /proc/loadavg)"
