# tests/lib/lib.sh - sourced by every tests/*/test_*.sh. $MOESCOPE is the binary under test.
# check NAME CMD...   passes when CMD exits 0
# summary             prints "N passed, N failed" and sets the exit code
# skip_part WHAT      a part this machine cannot run ("SKIP: WHAT"; tests/run.sh counts it)
# skip_all WHY        the whole test cannot run here: "name: skipped (WHY)", exit 0
# need_tool TOOL      0 when TOOL is installed, else a skip (a failure under CI)
: "${MOESCOPE:?MOESCOPE must point at the binary}"
: "${PYTHON:=/usr/bin/python3}"
TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)   # tests/
ROOT=$(cd "$TESTS_DIR/.." && pwd)
MOESCOPE=$(cd "$(dirname "$MOESCOPE")" && pwd)/$(basename "$MOESCOPE")
# the release build (make check builds it too), for the few data-heavy parts where the
# same code runs under the sanitizers on smaller inputs; else $MOESCOPE
MOESCOPE_REL=${MOESCOPE_REL:-$MOESCOPE}
MOESCOPE_REL=$(cd "$(dirname "$MOESCOPE_REL")" && pwd)/$(basename "$MOESCOPE_REL")
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
skip_part() { echo "SKIP: $*"; }
skip_all() { echo "$(basename "$0" .sh): skipped ($*)"; exit 0; }
# need_tool TOOL [WHAT]: a missing tool skips WHAT (default: the whole test) on a
# user's machine and fails under CI (CI set: continuous integration runs make deps)
need_tool() {
    command -v "$1" >/dev/null && return 0
    if [ -n "${CI:-}" ]; then fail "$1 is not installed (CI is set: make deps installs it)"; summary; exit; fi
    [ -n "${2:-}" ] && { skip_part "$2 ($1 is not installed: make deps installs it)"; return 1; }
    skip_all "$1 is not installed: make deps installs it"
}
summary() {
    echo "$(basename "$0" .sh): $T_PASSED passed, $T_FAILED failed"
    [ "$T_FAILED" -eq 0 ]
}
