#!/usr/bin/env bash
# tests/bench/run.sh - every benchmark (tests/bench/bench_*.sh and *.py), side by side with its peer.
set -u
cd "$(dirname "$0")/../.."
: "${MOESCOPE:?}" "${PYTHON:=/usr/bin/python3}"
export MOESCOPE PYTHON
for b in tests/bench/bench_*.sh; do [ -f "$b" ] && bash "$b"; done
for b in tests/bench/bench_*.py; do [ -f "$b" ] && "$PYTHON" "$b"; done
