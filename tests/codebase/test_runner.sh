#!/usr/bin/env bash
# test_runner.sh - tests/run.sh itself, on a scratch tree of small fake test
# programs: the total line comes last and adds up their counts; a program that
# says "name: skipped (why)" is counted as skipped (the count on the line before
# the total, each with its reason), as is each "SKIP: what" line of one that ran;
# a program that crashes, exits non-zero or prints no summary fails; each
# program's seconds are printed; a TESTS name that is no test fails; the numeric
# tests (named by folder) run a second time under another kernel set as
# "name[Kernel]", on MOESCOPE_REL when it is set; a test of another folder with the
# same name as a numeric one runs once.
source "$(dirname "$0")/../lib/lib.sh"
T=$WORK/tree
mkdir -p "$T/tests/unit" "$T/tests/commands" "$T/tests/golden" "$T/tests/lib" "$T/bin"
cp "$ROOT/tests/run.sh" "$T/tests/"
cp "$ROOT/tests/lib/blas_kernels.sh" "$ROOT/tests/lib/lib.sh" "$T/tests/lib/"
cat >"$T/tests/commands/test_ok.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
check "one" true; check "two" true
echo "kernel ${OPENBLAS_CORETYPE:-unset}"
summary
S
cat >"$T/tests/commands/test_part.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
check "one" true
skip_part "the device checks (mknod not permitted)"
summary
S
cat >"$T/tests/commands/test_cannot.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
skip_all "frobnicator is not installed"
S
cat >"$T/tests/commands/test_silent.sh" <<'S'
echo "I forgot the summary"
S
cat >"$T/tests/commands/test_crash.sh" <<'S'
echo "test_crash: 3 passed, 0 failed"
kill -SEGV $$
S
cat >"$T/tests/golden/test_golden.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
check "numbers" true
echo "golden under ${OPENBLAS_CORETYPE:-unset} with $(basename "$(dirname "$MOESCOPE")")"
summary
S
# the same name in another folder: not a numeric test
cat >"$T/tests/commands/test_golden.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
check "commands" true
echo "commands golden under ${OPENBLAS_CORETYPE:-unset}"
summary
S
# a C test without its binary fails
: >"$T/tests/unit/test_nobinary.c"
# the fake moescope reports its BLAS kernels as --version does
cat >"$T/bin/moescope" <<'S'
#!/bin/sh
echo "moescope test"; echo "blas: OpenBLAS x (${OPENBLAS_CORETYPE:-Prescott} kernels)"; echo "cpu: test"
S
chmod +x "$T/bin/moescope"
mkdir -p "$T/rel" && cp "$T/bin/moescope" "$T/rel/moescope"
# the scratch runner sees none of this run's selections (TESTS, SECOND_KERNEL, CI)
run_runner() { env -u CI -u TESTS -u SECOND_KERNEL MOESCOPE="$T/bin/moescope" MOESCOPE_REL="$T/rel/moescope" \
    TESTBIN="$T/bin" bash "$T/tests/run.sh" "$@"; }

run_runner >"$WORK/r1" 2>&1
rc=$?
last=$(tail -1 "$WORK/r1")
check "exits non-zero (failures)" test $rc -ne 0
# ok 2 + part 1 + crash 3 + golden 1 (twice when a second kernel runs) + commands' golden 1
second=$(grep -c '^time: test_golden\[' "$WORK/r1")
want_p=$((8 + second))
check "total line last: $want_p passed, 3 failed (got '$last')" test "$last" = "$want_p passed, 3 failed"
check "the skip count before the total and its two reasons" test "$(tail -4 "$WORK/r1" | head -1)" = "skipped: 2"
check "a whole skip with its reason" grep -q "  test_cannot: (frobnicator is not installed)" "$WORK/r1"
check "a part skip with its reason" grep -q "  test_part: the device checks (mknod not permitted)" "$WORK/r1"
check "no summary fails" grep -q "FAIL: test_silent printed no" "$WORK/r1"
check "a crash fails" grep -q "FAIL: test_crash exited with status" "$WORK/r1"
check "a C test without its binary fails" grep -q "FAIL: tests/unit/test_nobinary.c has no binary" "$WORK/r1"
check "each program's seconds and CPU seconds" test "$(grep -cE '^time: test_[a-z]+ [0-9]+\.[0-9] s \(cpu [0-9]+\.[0-9] s\)$' "$WORK/r1")" -eq 7
check "each program's output whole, before its time line" bash -c "grep -B3 '^time: test_ok ' '$WORK/r1' | grep -q '^kernel '"

check "the numeric test under the environment's kernels" grep -q "golden under ${OPENBLAS_CORETYPE:-unset} with bin" "$WORK/r1"
if [ "$second" -gt 0 ]; then
    k=$(sed -n 's/^time: test_golden\[\(.*\)\].*/\1/p' "$WORK/r1")
    check "the numeric test again under $k, on MOESCOPE_REL" grep -q "golden under $k with rel" "$WORK/r1"
    check "only the numeric tests run twice" test "$(grep -c '^kernel ' "$WORK/r1")" -eq 1
    check "a test named like a numeric one in another folder runs once" \
        test "$(grep -c '^commands golden under' "$WORK/r1")" -eq 1
else
    check "no second kernel: a skip says so" grep -q "second kernel" "$WORK/r1"
fi

check "SECOND_KERNEL=none: one run" bash -c "env -u TESTS SECOND_KERNEL=none MOESCOPE='$T/bin/moescope' TESTBIN='$T/bin' bash '$T/tests/run.sh' 2>&1 | grep -c '^golden under' | grep -qx 1"
run_sel() { local sel=$1; shift; env -u CI -u SECOND_KERNEL TESTS="$sel" MOESCOPE="$T/bin/moescope" TESTBIN="$T/bin" bash "$T/tests/run.sh" "$@"; }
run_sel "test_ok test_nosuch" >"$WORK/r3" 2>&1
check "TESTS: an unknown name fails" grep -q "FAIL: TESTS names 'test_nosuch', which is no test" "$WORK/r3"
check "TESTS: only the named one runs" test "$(grep -c '^time: ' "$WORK/r3")" -eq 1
check "TESTS: total" test "$(tail -1 "$WORK/r3")" = "2 passed, 1 failed"
run_sel "test_ok" >"$WORK/r4" 2>&1
check "TESTS: all good exits 0" test $? -eq 0
# programs run side by side (TEST_JOBS at a time): two that each wait for the
# other to start can only both pass when they do
for x in a b; do y=$([ $x = a ] && echo b || echo a)
cat >"$T/tests/commands/test_meet$x.sh" <<S
source "\$(dirname "\$0")/../lib/lib.sh"
: >"$WORK/meet.$x"
met() { for ((i = 0; i < 600; i++)); do [ -e "$WORK/meet.$y" ] && return 0; sleep 0.1; done; return 1; }
check "meets $y" met
summary
S
done
TEST_JOBS=2 run_sel "test_meeta test_meetb" >"$WORK/r7" 2>&1
check "TEST_JOBS=2: two programs at once" test "$(tail -1 "$WORK/r7")" = "2 passed, 0 failed"
TEST_JOBS=x run_sel "test_ok" >"$WORK/r8" 2>&1
check "TEST_JOBS must be a number" grep -q "TEST_JOBS must be a positive number" "$WORK/r8"
# under CI a missing tool fails instead of skipping
cat >"$T/tests/commands/test_tool.sh" <<'S'
source "$(dirname "$0")/../lib/lib.sh"
need_tool no-such-tool-here
check "ran" true
summary
S
run_sel "test_tool" >"$WORK/r5" 2>&1
check "need_tool: skipped on a user's machine" grep -q "^skipped: 1" "$WORK/r5"
env -u SECOND_KERNEL TESTS="test_tool" CI=1 MOESCOPE="$T/bin/moescope" TESTBIN="$T/bin" bash "$T/tests/run.sh" >"$WORK/r6" 2>&1
check "need_tool: fails under CI" grep -q "FAIL: no-such-tool-here is not installed (CI is set" "$WORK/r6"
summary
