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
