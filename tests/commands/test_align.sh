#!/usr/bin/env bash
# tests/commands/test_align.sh - the cost, align and merge commands: help, usage errors
# (exit 2), load errors and incompatible checkpoints (exit 1, clear message),
# refusing to overwrite an input, atomic JSON output, --layer.
source "$(dirname "$0")/../lib/lib.sh"
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"

# expect_rc NAME RC PATTERN CMD...: CMD exits with RC and stderr matches PATTERN
expect_rc() {
    local name=$1 want=$2 pat=$3; shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$WORK/err" | tail -5
    elif grep -q "Sanitizer\|runtime error" "$WORK/err"; then fail "$name: sanitizer report"; sed 's/^/    /' "$WORK/err" | tail -20
    elif ! grep -Eq -e "$pat" "$WORK/err"; then fail "$name: message does not match /$pat/:"; sed 's/^/    /' "$WORK/err" | tail -5
    else pass; fi
}

A=$WORK/a.st B=$WORK/b.st
$GEN ckpt "$A" --seed 1
$GEN ckpt "$B" --seed 2
$GEN ckpt "$WORK/n5.st" --seed 3 --n 5
$GEN ckpt "$WORK/d9.st" --seed 3 --d 9
$GEN ckpt "$WORK/h12.st" --seed 3 --h 12
$GEN ckpt "$WORK/topk.st" --seed 3 --router topk
$GEN ckpt "$WORK/glu.st" --seed 3 --act silu_glu
$GEN ckpt "$WORK/blk_a.st" --seed 1 --prefix blk
$GEN ckpt "$WORK/blk_b.st" --seed 2 --prefix blk
$GEN bad nan "$WORK/nan.st"

for c in cost align merge; do
    check "$c --help" "$MOESCOPE" $c --help
    "$MOESCOPE" $c --help | grep -q "usage: moescope $c" && pass || fail "$c --help shows usage"
done

# usage errors: exit 2
expect_rc "cost one file" 2 "expected two checkpoints" "$MOESCOPE" cost "$A"
expect_rc "cost bad method" 2 "expert, activation or router" "$MOESCOPE" cost "$A" "$B" --method foo
expect_rc "cost unknown option" 2 "usage" "$MOESCOPE" cost "$A" "$B" --bogus
expect_rc "cost missing argument" 2 "usage" "$MOESCOPE" cost "$A" "$B" --json
expect_rc "align without -o" 2 "-o OUT is required" "$MOESCOPE" align "$A" "$B"
expect_rc "align three files" 2 "expected two" "$MOESCOPE" align "$A" "$B" "$B" -o "$WORK/o.st"
expect_rc "align bad order" 2 "not a permutation" "$MOESCOPE" align "$A" "$B" -o "$WORK/o.st" --order 0,0,1,2
expect_rc "merge bad alpha" 2 "alpha" "$MOESCOPE" merge "$A" "$B" -o "$WORK/o.st" --alpha x
expect_rc "merge without -o" 2 "-o OUT" "$MOESCOPE" merge "$A" "$B"
[ ! -e "$WORK/o.st" ] && pass || fail "no output after usage errors"

# load errors and incompatible pairs: exit 1 with the reason
expect_rc "cost missing file" 1 "nope.st" "$MOESCOPE" cost "$A" "$WORK/nope.st"
expect_rc "cost non-finite" 1 "nan.st.*(NaN|non-finite|finite)" "$MOESCOPE" cost "$A" "$WORK/nan.st"
# cost A A runs, and says the comparison is empty (also through another name of the file)
expect_rc "cost A A: a note" 0 "A and B are the same checkpoint .*a.st.*different seeds" "$MOESCOPE" cost "$A" "$A"
ln -s "$A" "$WORK/a_link.st"
expect_rc "cost A and a link to A: a note" 0 "same checkpoint" "$MOESCOPE" cost "$A" "$WORK/a_link.st"
"$MOESCOPE" cost "$A" "$B" >/dev/null 2>"$WORK/err"
grep -q "same checkpoint" "$WORK/err" && fail "cost A B: no same-checkpoint note" || pass
expect_rc "cost different n" 1 "differ: n = 4 vs 5" "$MOESCOPE" cost "$A" "$WORK/n5.st"
expect_rc "align different d" 1 "differ: d = 8 vs 9" "$MOESCOPE" align "$A" "$WORK/d9.st" -o "$WORK/o.st"
expect_rc "align different h" 1 "differ: h = 16 vs 12" "$MOESCOPE" align "$A" "$WORK/h12.st" -o "$WORK/o.st"
expect_rc "merge different router" 1 "router = dense vs topk" "$MOESCOPE" merge "$A" "$WORK/topk.st" -o "$WORK/o.st"
expect_rc "cost different activation" 1 "activation = relu vs silu_glu" "$MOESCOPE" cost "$A" "$WORK/glu.st"
expect_rc "align missing layer" 1 "moe" "$MOESCOPE" align "$WORK/blk_a.st" "$WORK/blk_b.st" -o "$WORK/o.st"
[ ! -e "$WORK/o.st" ] && pass || fail "no output after failures"

# never overwrite an input (same inode, whatever the spelling)
sum_a=$(md5sum <"$A")
expect_rc "align onto A" 1 "refusing" "$MOESCOPE" align "$A" "$B" -o "$A"
expect_rc "align onto B" 1 "refusing" "$MOESCOPE" align "$A" "$B" -o "$WORK/../$(basename "$WORK")/b.st"
ln -s "$A" "$WORK/alink.st"
expect_rc "merge onto A via a link" 1 "refusing" "$MOESCOPE" merge "$A" "$B" -o "$WORK/alink.st"
[ "$(md5sum <"$A")" = "$sum_a" ] && pass || fail "A was modified"

# outputs
check "align writes" "$MOESCOPE" align "$A" "$B" -o "$WORK/al.st"
check "aligned file loads" "$MOESCOPE" info "$WORK/al.st"
"$MOESCOPE" info "$WORK/al.st" 2>&1 | grep -q "moescope.align.method" && pass || fail "info shows align metadata"
check "align overwrites its own output" "$MOESCOPE" align "$A" "$B" -o "$WORK/al.st" --method gate --no-center
"$MOESCOPE" align "$A" "$B" -o "$WORK/al2.st" --order 3,2,1,0 --no-wm | grep -q "order 3 2 1 0" && pass || fail "--order is used"
check "merge writes" "$MOESCOPE" merge "$A" "$B" -o "$WORK/m.st"
"$MOESCOPE" merge "$A" "$B" -o "$WORK/m.st" 2>&1 >/dev/null | grep -q "heads .* differ" && pass || fail "merge warns when heads differ"
check "cost --json" "$MOESCOPE" cost "$A" "$B" --json "$WORK/c.json"
$PYTHON - "$WORK/c.json" <<'EOF' && pass || fail "cost --json keys"
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("method", "centered", "matrix", "order", "total", "margin", "second_best", "methods", "agree"):
    assert k in j, k
assert j["method"] == "expert" and j["centered"] is True and len(j["matrix"]) == 4
assert sorted(j["order"]) == [0, 1, 2, 3]
EOF
expect_rc "cost --json into a missing directory" 1 "nodir" "$MOESCOPE" cost "$A" "$B" --json "$WORK/nodir/c.json"
ls -a "$WORK" | grep -q "tmp" && fail "temporary file left behind" || pass
"$MOESCOPE" cost "$A" "$B" | grep -q "methods agree" && pass || fail "cost reports agreement"
"$MOESCOPE" cost "$A" "$B" --method gate | grep -q "method gate, centred" && pass || fail "cost --method gate"
check "cost --layer" "$MOESCOPE" cost "$WORK/blk_a.st" "$WORK/blk_b.st" --layer blk
check "align --layer" "$MOESCOPE" align "$WORK/blk_a.st" "$WORK/blk_b.st" --layer blk -o "$WORK/blk_o.st"

summary
