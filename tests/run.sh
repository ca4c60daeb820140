#!/usr/bin/env bash
# tests/run.sh - runs every test program and prints one total line,
# "N passed, N failed". The tests live in folders by kind: unit/ (C, the
# library), oracle/ (against numpy/scipy), commands/ (the CLI as a user runs
# it), explorer/ (the TUI: curses-free views and tmux), hostile/ (malformed
# files and I/O faults), golden/ (stored numbers), codebase/ (the code's own
# rules); lib/ holds what they share. Each program prints its own "name: N passed, N failed";
# a program that crashes or exits non-zero without reporting a failure counts
# as one failure.  Env: MOESCOPE (binary), TESTBIN (C test binaries), PYTHON.
set -u
cd "$(dirname "$0")/.."
: "${MOESCOPE:?}" "${TESTBIN:?}"
export MOESCOPE PYTHON="${PYTHON:-/usr/bin/python3}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/lib/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
total_p=0; total_f=0
only="${TESTS:-}"   # TESTS="test_lap test_model" runs just those

run_one() {
    local name=$1; shift
    if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then return; fi
    local log; log=$(mktemp)
    "$@" >"$log" 2>&1
    local rc=$?
    cat "$log"
    local line p f
    line=$(grep -E '^([A-Za-z0-9_.-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$line" ]; then
        p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line")
        f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
    else p=0; f=0; fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL: $name exited with status $rc"
        f=1
    fi
    total_p=$((total_p + p)); total_f=$((total_f + f))
    rm -f "$log"
}

# C tests: tests/KIND/test_x.c is built as $TESTBIN/KIND/test_x
for src in tests/*/test_*.c; do
    t=$TESTBIN/${src#tests/}; t=${t%.c}
    if [ -x "$t" ]; then run_one "$(basename "$t")" "$t"
    elif [ -z "$only" ] || [[ " $only " == *" $(basename "$t") "* ]]; then
        echo "FAIL: $src has no binary $t (make check builds it)"; total_f=$((total_f + 1))
    fi
done
for t in tests/*/test_*.sh; do
    [ -f "$t" ] && run_one "$(basename "$t" .sh)" bash "$t"
done
for t in tests/*/test_*.py; do
    [ -f "$t" ] && run_one "$(basename "$t" .py)" "$PYTHON" "$t"
done
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ] && [ "$total_p" -gt 0 ]
