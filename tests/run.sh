#!/usr/bin/env bash
# tests/run.sh - runs every test program and prints one total line,
# "N passed, N failed", last. The tests live in folders by kind: unit/ (C, the
# library), oracle/ (against numpy/scipy), commands/ (the CLI as a user runs
# it), explorer/ (the TUI: curses-free views and tmux), hostile/ (malformed
# files and I/O faults), golden/ (stored numbers), codebase/ (the code's own
# rules); lib/ holds what they share.
#
# Each program prints its own "name: N passed, N failed"; a program that
# crashes or exits non-zero without reporting a failure counts as one failure.
# A program that cannot run at all prints "name: skipped (why)" and exits 0; a
# part of one that cannot run prints "SKIP: what (why)". Skips are counted on
# the line before the total; a skip is for what this machine cannot do (a tool
# not installed, a kernel the CPU lacks, a mount it may not make); a part that
# must run (a committed sample, moescope-mpi where MPI is installed) fails
# instead, and with CI set (continuous integration, which runs `make deps`)
# a missing tool fails too (tests/lib: need_tool). After each program its
# seconds ("time: name 12.3 s").
#
# The numerical tests (NUMERIC below, named by folder: two tests may share a
# name) run twice: under the BLAS kernels of the environment (OPENBLAS_CORETYPE,
# or OpenBLAS's own choice) and under a second set the CPU can run
# (tests/lib/blas_kernels.sh), as "name[Kernel]": float32 results differ in
# their last bits between kernels, and the tests' tolerances must hold on every
# one. The second run is about the numbers alone (the first ran them under the
# sanitizers): it uses the release binary, MOESCOPE_REL, when there is one.
#
# Env: MOESCOPE (binary), MOESCOPE_REL (its release build, if MOESCOPE is not),
# TESTBIN (C test binaries), PYTHON; TESTS="test_a test_b" runs just those (a name
# that is no test fails); SECOND_KERNEL=none turns the second run off,
# SECOND_KERNEL=SkylakeX picks it.
set -u
cd "$(dirname "$0")/.."
: "${MOESCOPE:?}" "${TESTBIN:?}"
export MOESCOPE PYTHON="${PYTHON:-/usr/bin/python3}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/lib/lsan.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
source tests/lib/blas_kernels.sh
total_p=0; total_f=0; total_s=0; skipped=()
only="${TESTS:-}"   # TESTS="test_lap test_model" runs just those
# the tests that compare floats (against numpy, stored numbers, other paths)
NUMERIC="golden/test_golden oracle/test_eval_oracle oracle/test_landscape unit/test_realsize
    oracle/test_family_eval oracle/test_family_landscape unit/test_evaluator unit/test_kernels
    unit/test_landscape_api unit/test_align oracle/test_align oracle/test_study unit/test_geometry
    oracle/test_geometry oracle/test_geometry_network oracle/test_decoder_oracle"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The programs run JOBS at a time (TEST_JOBS, default one per CPU): each writes
# its output to a log of its own, printed whole when it ends, so the output of
# two programs never interleaves. The tests are written for a loaded machine
# (tmp files, tmux servers and ports of their own; deadlines, no sleeps).
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "TEST_JOBS must be a positive number, not '$JOBS'"; exit 2; }
# With a program per CPU, a BLAS thread pool in each (numpy's oracles, moescope's
# default) only oversubscribes the cores, and OpenBLAS's idle threads spin. One
# BLAS thread by default; moescope's threaded paths still ask for theirs (--threads).
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
declare -A running=()   # pid -> "name log result"

# cpu_seconds FILE: user + system seconds of the children line `times` wrote to FILE
cpu_seconds() {
    tail -1 "$1" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }'
}

run_one() { # run_one NAME CMD...: start it in the background once a slot is free
    local name=$1; shift
    local base=${name%%\[*}
    if [ -n "$only" ] && [[ " $only " != *" $base "* ]]; then return; fi
    while ((${#running[@]} >= JOBS)); do reap_one; done
    local log res; log=$(mktemp); res=$(mktemp)
    (
        t0=$(now_ms)
        "$@" >"$log" 2>&1 </dev/null
        rc=$?
        times >"$res"   # in this subshell, not in a $(...): its children are the program
        echo "$rc $(($(now_ms) - t0)) $(cpu_seconds "$res")" >"$res"
    ) &
    running[$!]="$name $log $res"
}

reap_one() { # wait for any running program and report it
    local pid
    wait -n -p pid "${!running[@]}"
    [ -n "${pid:-}" ] || return 0
    report_one ${running[$pid]}
    unset "running[$pid]"
}
reap_all() { while ((${#running[@]} > 0)); do reap_one; done; }

report_one() { # report_one NAME LOG RESULT: print its output, count it
    local name=$1 log=$2 res=$3
    local base=${name%%\[*} rc ms cpu
    read -r rc ms cpu <"$res"
    cat "$log"
    local line p f s why
    line=$(grep -E '^([A-Za-z0-9_.-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$line" ]; then
        p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line")
        f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
    else p=0; f=0; fi
    s=$(grep -c '^SKIP: ' "$log")
    why=$(grep -E "^$base: skipped \(" "$log" | tail -1)
    if [ -n "$why" ] && [ -z "$line" ] && [ "$rc" -eq 0 ]; then
        s=$((s + 1)); skipped+=("$name: ${why#*: skipped }")
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL: $name exited with status $rc"
        f=1
    elif [ -z "$line" ]; then
        echo "FAIL: $name printed no 'N passed, N failed' line and no 'skipped (why)'"
        f=1
    fi
    while IFS= read -r x; do skipped+=("$name: ${x#SKIP: }"); done < <(grep '^SKIP: ' "$log")
    printf 'time: %s %d.%d s (cpu %s s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 100)) "$cpu"
    total_p=$((total_p + p)); total_f=$((total_f + f)); total_s=$((total_s + s))
    rm -f "$log" "$res"
}

# every program, as "name kind/name command..." lines: C tests (tests/KIND/test_x.c
# is built as $TESTBIN/KIND/test_x), shell, python
programs() {
    local t kind
    for src in tests/*/test_*.c tests/*/test_*.sh tests/*/test_*.py; do
        [ -f "$src" ] || continue
        t=${src#tests/}; t=${t%.*}; kind=${t%%/*}
        case $src in
            *.c) echo "${t#*/} $t $TESTBIN/$t $src" ;;
            *.sh) echo "${t#*/} $t bash $src" ;;
            *.py) echo "${t#*/} $t $PYTHON $src" ;;
        esac
    done
}

run_all() { # run_all SUFFIX: every selected program (SUFFIX "[Kernel]" for the numeric ones only)
    local suffix=$1 name key cmd rest
    while read -r name key cmd rest; do
        if [ -n "$suffix" ] && [[ " $NUMERIC " != *" $key "* ]]; then continue; fi
        if [[ $cmd == "$TESTBIN"/* ]]; then
            if [ -x "$cmd" ]; then run_one "$name$suffix" "$cmd"
            elif [ -z "$only" ] || [[ " $only " == *" $name "* ]]; then
                echo "FAIL: $rest has no binary $cmd (make check builds it)"; total_f=$((total_f + 1))
            fi
        else
            run_one "$name$suffix" "$cmd" $rest
        fi
    done < <(programs_longest_first)
}

# the longest programs start first, so that two slots end together rather than
# one long program running alone at the end
LONGEST="test_mpi test_samples test_hostile test_tui test_gpt_samples test_decoder_oracle
    test_faults test_tui_large test_lesson test_golden test_curve_adaptive test_input test_stream"
programs_longest_first() {
    local all name; all=$(programs)
    for name in $LONGEST; do grep "^$name " <<<"$all"; done
    grep -v -x -F -f <(for name in $LONGEST; do grep "^$name " <<<"$all"; done) <<<"$all"
}

# a TESTS name that selects nothing is a mistake (a renamed test), not a pass
for want in $only; do
    if ! programs | awk '{print $1}' | grep -qx -- "$want"; then
        echo "FAIL: TESTS names '$want', which is no test (tests/*/$want.{c,sh,py})"; total_f=$((total_f + 1))
    fi
done

any_numeric() { local t; for t in $only; do [[ " $NUMERIC " == *"/$t "* ]] && return 0; done; return 1; }

first=$(blas_kernel_now)
echo "BLAS kernels: ${first:-unknown} (OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset})"
run_all ""
second=${SECOND_KERNEL:-$(blas_second_kernel "$first")}
if [ "$second" = none ]; then
    :
elif [ -z "$second" ]; then
    skipped+=("numeric tests under a second kernel: (this CPU runs no kernel but ${first:-one})")
    total_s=$((total_s + 1))
elif [ -n "$only" ] && ! any_numeric; then
    :
else
    echo "BLAS kernels, second run: $second"
    keep=${OPENBLAS_CORETYPE-}; had=${OPENBLAS_CORETYPE+1}
    export OPENBLAS_CORETYPE=$second
    MOESCOPE=${MOESCOPE_REL:-$MOESCOPE} run_all "[$second]"
    if [ -n "$had" ]; then OPENBLAS_CORETYPE=$keep; else unset OPENBLAS_CORETYPE; fi
fi
reap_all
if [ "$total_s" -gt 0 ]; then
    echo "skipped: $total_s"
    for x in "${skipped[@]}"; do echo "  $x"; done
fi
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ] && [ "$total_p" -gt 0 ]
