# tests/lib/lib.sh - sourced by every tests/*/test_*.sh. $MOESCOPE is the binary under test.
# check NAME CMD...   passes when CMD exits 0
# summary             prints "N passed, N failed" and sets the exit code
: "${MOESCOPE:?MOESCOPE must point at the binary}"
: "${PYTHON:=/usr/bin/python3}"
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)   # tests/
ROOT=$(cd "$TESTS_DIR/.." && pwd)
MOESCOPE=$(cd "$(dirname "$MOESCOPE")" && pwd)/$(basename "$MOESCOPE")
T_PASSED=0
T_FAILED=0
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

pass() { T_PASSED=$((T_PASSED + 1)); }
fail() { T_FAILED=$((T_FAILED + 1)); echo "FAIL: $*"; }
check() {
    local name=$1; shift
    if "$@" >"$WORK/out" 2>&1; then pass; else fail "$name"; sed 's/^/    /' "$WORK/out" | tail -20; fi
}
# expect_fail NAME PATTERN CMD...: CMD exits non-zero (not a crash) and its stderr matches PATTERN
expect_fail() {
    local name=$1 pat=$2; shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -eq 0 ]; then fail "$name: exit 0, expected failure"
    elif [ $rc -ge 128 ]; then fail "$name: crashed (exit $rc)"; sed 's/^/    /' "$WORK/err" | tail -20
    elif grep -q "Sanitizer\|runtime error" "$WORK/err"; then fail "$name: sanitizer report"; sed 's/^/    /' "$WORK/err" | tail -20
    elif ! grep -Eq -- "$pat" "$WORK/err"; then fail "$name: message does not match /$pat/:"; sed 's/^/    /' "$WORK/err" | tail -5
    else pass; fi
}
summary() {
    echo "$(basename "$0" .sh): $T_PASSED passed, $T_FAILED failed"
    [ "$T_FAILED" -eq 0 ]
}
