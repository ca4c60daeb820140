#!/usr/bin/env bash
# test_lesson.sh - `moescope lesson`: every step's live numbers agree with the
# commands that the step says reproduce them (run here on the same inputs); the
# files the steps build stay in the lesson's directory (--dir, default
# moescope-lesson) and every printed command runs as printed after the lesson
# exits; the lesson runs end to end on every bundled sample, mixtral4's sharded
# folders too; the interactive screen, driven in tmux, walks through every step
# showing the same numbers, goes back, opens a step's pair in the explorer and
# returns, and walks mixtral4's steps too.
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS_DIR/explorer/tui_lib.sh"
S=$ROOT/sample-checkpoints/teacher4
A=$S/seed1.safetensors B=$S/seed2.safetensors E=$S/eval.safetensors
cd "$WORK"

out=$("$MOESCOPE" lesson "$A" "$B" --eval "$E" --print --dir "$WORK/L" 2>&1)
check "--print: exit 0" test $? -eq 0
check "--print: 7 steps" test "$(grep -c '^step [1-7]/7: ' <<<"$out")" -eq 7
check "--print: says where its files are" grep -qF "checkpoints it builds to $WORK/L (kept" <<<"$out"

# first float after a phrase in the printed lesson
NUM='-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?'
num_after() { grep -oE -- "$1 $NUM" <<<"$out" | head -1 | awk '{print $NF}'; }
# field of a row of `curve` (name, the 4 entries of the order, barrier, ...)
curve_bar() { awk -v r="$2" '$1 == r {print $6; exit}' <<<"$1"; }
close() { "$PYTHON" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-5 * max(abs(a), abs(b), 1e-12))" "$1" "$2"; }

# step 1 and step 5: naive, skip-order and full barriers as `curve` has them
cv=$("$MOESCOPE" curve "$A" "$B" --eval "$E")
check "step 1: naive barrier = curve's" close "$(num_after 'the barrier is')" "$(curve_bar "$cv" naive)"
check "step 5: naive = curve's" close "$(num_after 'takes the barrier from')" "$(curve_bar "$cv" naive)"
skip=$(grep -oE "takes the barrier from $NUM to $NUM" <<<"$out" | awk '{print $NF}')
check "step 5: skip-order = curve's" close "$skip" "$(curve_bar "$cv" skip_order)"
full=$(num_after 'then the hidden units, takes it to')
check "step 5: full alignment = curve's expert row" close "$full" "$(curve_bar "$cv" expert)"

# steps 2 and 3: the scramble (seed 7, translated) and the order that undoes it
"$MOESCOPE" scramble "$A" -o S.safetensors --seed 7 --translate >scr.txt
pi=$(sed -nE 's/^  expert order  ([0-9 ]+)  .*/\1/p' scr.txt)
check "step 2: pi = scramble's order ($pi)" grep -qF "(pi = $pi)" <<<"$out"
found=$("$MOESCOPE" cost "$A" S.safetensors --json cost.json >/dev/null && "$PYTHON" -c "import json; print(*json.load(open('cost.json'))['order'])")
check "step 3: the order found = cost's ($found)" grep -qF "The assignment picks the order $found." <<<"$out"
check "step 3: said to be the inverse" grep -qF "the order found is its inverse" <<<"$out"
mx=$(num_after 'the outputs differ by at most')
check "step 2: same function (max diff $mx)" "$PYTHON" -c "import sys; sys.exit(not float('$mx') < 1e-4)"

# step 4: the orders of both gate costs, and their barriers, as the commands give them
"$MOESCOPE" scramble "$B" -o T.safetensors --seed 2 --translate-scale 10 >/dev/null
for c in no-center center; do
    extra=(); [ $c = no-center ] && extra=(--no-center)
    "$MOESCOPE" cost "$A" T.safetensors --method gate "${extra[@]}" --json "$c.json" >/dev/null
    o=$("$PYTHON" -c "import json; print(*json.load(open('$c.json'))['order'])")
    eval "o_${c//-/_}=\"$o\""
done
check "step 4: uncentred order = cost --no-center's ($o_no_center)" grep -qF "picks the order $o_no_center (barrier" <<<"$out"
check "step 4: centred order = cost's ($o_center)" grep -qF "shift), it picks $o_center (barrier" <<<"$out"
cv4=$("$MOESCOPE" curve "$A" T.safetensors --eval "$E" --order "${o_center// /,}")
b4=$(grep -oE "shift\), it picks $o_center \(barrier $NUM" <<<"$out" | awk '{print $NF}')
check "step 4: centred barrier = curve's" close "$b4" "$(curve_bar "$cv4" order1)"

# steps 6 and 7: the symmetries hold (or break) as said
t1=$(num_after 'the function does not change: the outputs differ by at most')
check "step 6: top-1 scaled copy, same function ($t1)" "$PYTHON" -c "import sys; sys.exit(not float('$t1') < 1e-5)"
w7=$(num_after 'Swap two experts of the same group: the outputs differ by at most')
x7=$(num_after 'across the groups: they differ by up to')
check "step 7: a swap inside a group keeps the function ($w7)" "$PYTHON" -c "import sys; sys.exit(not float('$w7') < 1e-5)"
check "step 7: a swap across groups changes it ($x7)" "$PYTHON" -c "import sys; sys.exit(not float('$x7') > 1e-2)"
# the files stay, and every step's commands run as printed after the lesson has exited
check "the lesson's files are kept in --dir" test -f "$WORK/L/scrambled_A.safetensors" -a -f "$WORK/L/top1_A_scaled.safetensors" \
    -a -f "$WORK/L/grouped_A_across.safetensors"
run_reproduce() { # run_reproduce TAG OUT: every "reproduce:" line of OUT, in $WORK, exits 0
    local tag=$1 line k=0
    while IFS= read -r line; do
        k=$((k + 1))
        (cd "$WORK" && bash -c "$line") >"$WORK/rep.out" 2>&1 && pass ||
            { fail "$tag: step $k's commands fail as printed: $line"; tail -3 "$WORK/rep.out" | sed 's/^/    /'; }
    done < <(sed -n 's/^  reproduce: //p' <<<"$2")
    [ "$k" -eq 7 ] && pass || fail "$tag: $k reproduce lines, expected 7"
}
run_reproduce teacher4 "$out"
# step 6: the gate cost's total is the text's; step 7: eval's three losses are the text's
g6=$("$MOESCOPE" cost "$WORK/L/top1_A.safetensors" "$WORK/L/top1_A_scaled.safetensors" --method gate |
     sed -nE 's/^gate \(centred\) +order 0 1 2 3 +total ([^ ]+).*/\1/p')
check "step 6: the gate cost total as cost prints it ($g6)" close "$(num_after 'slot by slot, totals')" "$g6"
l7=()
for f in grouped_A grouped_A_within grouped_A_across; do
    l7+=("$("$MOESCOPE" eval "$WORK/L/$f.safetensors" --eval "$E" | awk '$1 == "loss" {print $2}')")
done
check "step 7: the loss before the swaps is eval's (${l7[0]})" grep -qF "as before the swap: ${l7[0]})" <<<"$out"
check "step 7: a swap inside a group keeps eval's loss (${l7[1]})" test "${l7[0]}" = "${l7[1]}"
check "step 7: a swap across the groups changes it (${l7[2]})" grep -qF "loss ${l7[2]})" <<<"$out"
# the default directory: moescope-lesson in the working directory
(cd "$WORK" && "$MOESCOPE" lesson "$A" "$B" --eval "$E" --print --step 7 >/dev/null 2>&1)
check "without --dir: moescope-lesson in the working directory" test -f "$WORK/moescope-lesson/grouped_A.safetensors"
# every bundled sample, end to end, its commands as printed; the 8-expert ones (40320
# orders a landscape) on the release build: the same steps ran under the sanitizers above
for s in dense4 topk4 shared4 dense8 teacher8 mixtral4; do
    D=$ROOT/sample-checkpoints/$s
    a=$D/seed1.safetensors b=$D/seed2.safetensors
    [ -d "$D/seed1" ] && a=$D/seed1 b=$D/seed2
    bin=$MOESCOPE; case $s in *8) bin=$MOESCOPE_REL ;; esac
    o=$("$bin" lesson "$a" "$b" --eval "$D/eval.safetensors" --print --dir "$WORK/L_$s" 2>&1)
    check "$s: --print runs every step" test $? -eq 0 -a "$(grep -c '^step [1-7]/7: ' <<<"$o")" -eq 7
    run_reproduce "$s" "$o"
done

# errors
expect_fail "A without B" "both A and B" "$MOESCOPE" lesson "$A"
# without --eval: the set beside A (the rule of every command), else a usage error
"$MOESCOPE" lesson "$A" "$B" --print --step 1 --dir "$WORK/L1" >"$WORK/l1.out" 2>"$WORK/l1.err"
check "no --eval: the set beside A, said on stderr" grep -qF "using the evaluation set $E" "$WORK/l1.err"
mkdir -p "$WORK/lone" && cp "$A" "$B" "$WORK/lone/"
expect_fail "no --eval, none beside A" "--eval E is required with A and B \(no eval.safetensors beside" \
    "$MOESCOPE" lesson "$WORK/lone/seed1.safetensors" "$WORK/lone/seed2.safetensors"
expect_fail "bad step" "--step needs" "$MOESCOPE" lesson --step 9
expect_fail "missing file" "nosuch" "$MOESCOPE" lesson nosuch.safetensors "$B" --eval "$E" --print

# the screen, step by step
if ! tui_session 100 32 "cd '$WORK' && '$MOESCOPE' lesson '$A' '$B' --eval '$E'; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"; then
    fail "tmux session did not start"; summary; exit
fi
# a number of each step as --print shows it (one word: it cannot be wrapped),
# which the screen must show too
marks=("$(num_after 'the barrier is')" "$mx" "$(num_after 'and at least')" "$b4" "$full" \
       "$(num_after 'slot by slot, totals')" "$x7")
for i in 0 1 2 3 4 5 6; do
    check "screen: step $((i + 1))/7" wait_for "step $((i + 1))/7:"
    check "screen: step $((i + 1)) shows '${marks[$i]}'" wait_for "${marks[$i]}"
    [ $i -lt 6 ] && tm send-keys -t t n
done
tm send-keys -t t n
check "n on the last step stays" wait_for "step 7/7:"
tm send-keys -t t b b b b
check "b goes back to step 3" wait_for "step 3/7:"
tm send-keys -t t x
# the title names each checkpoint with its folder (dense4/seed1 and topk4/seed1 differ)
check "x opens the explorer on A and the scramble" wait_re "B [^ ]*moescope-lesson/scrambled_A(\.safetensors)? "
tm send-keys -t t q
check "quitting the explorer returns to the lesson" wait_for "step 3/7:"
tm send-keys -t t q
check "q quits" wait_for "EXIT_SHOWN"
check "q exits 0" grep -qx "EXIT=0" "$WORK/exit"

# mixtral4 (sharded folders, no head) on the screen: every step computes, x opens one
M=$ROOT/sample-checkpoints/mixtral4
tui_session 100 32 "cd '$WORK' && '$MOESCOPE' lesson '$M/seed1' '$M/seed2' --eval '$M/eval.safetensors' --dir L_screen; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
for i in 1 2 3 4 5 6 7; do
    # the title gets ": <the step's title>" once the step is computed (a failure says so instead)
    check "mixtral4 screen: step $i/7 computed" wait_for "step $i/7:"
    [ $i -lt 7 ] && tm send-keys -t t n
done
tm send-keys -t t b b b b
check "mixtral4 screen: back to step 3" wait_for "step 3/7:"
tm send-keys -t t x
check "mixtral4 screen: x opens the explorer" wait_re "B [^ ]*L_screen/scrambled_A(\.safetensors)? "
tm send-keys -t t q
check "mixtral4 screen: back in the lesson" wait_for "step 3/7:"
tm send-keys -t t q
check "mixtral4 screen: q quits" wait_for "EXIT_SHOWN"
check "mixtral4 screen: q exits 0" grep -qx "EXIT=0" "$WORK/exit"

tui_session 30 8 "cd '$WORK' && '$MOESCOPE' lesson '$A' '$B' --eval '$E'; echo EXIT_SHOWN; sleep 600"
check "small terminal: says so" wait_for "terminal too small"
tm send-keys -t t q
check "small terminal: q quits" wait_for "EXIT_SHOWN"
summary
