#!/usr/bin/env bash
# tests/bench/run.sh - every benchmark (tests/bench/bench_*.sh and *.py), side by side with its
# peer or its arithmetic floor; at the end, the summary: each result's "bench:" line
# (tests/bench/benchlib.py: the floor it is measured against, the ratio, the kernels that ran).
set -u
cd "$(dirname "$0")/../.."
: "${MOESCOPE:?}" "${PYTHON:=/usr/bin/python3}"
export MOESCOPE PYTHON
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "make bench on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$MOESCOPE" --version | sed 's/^/  /'
for b in tests/bench/bench_*.sh; do [ -f "$b" ] && bash "$b"; done 2>&1 | tee -a "$log"
for b in tests/bench/bench_*.py; do [ -f "$b" ] && "$PYTHON" "$b"; done 2>&1 | tee -a "$log"
echo
echo "== summary (name | moescope | the floor it is measured against | ratio | target | kernels | load)"
grep '^bench: ' "$log" | sed 's/^bench: /  /'
