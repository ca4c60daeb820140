#!/usr/bin/env bash
# test_tui_network_matrix.sh - a network pair's cost matrix and assignment in the
# explorer, block by block, without waiting for the network (a GPT-2 folder pair with
# MoE at blocks 0 and 2, tests/lib/gen_gpt2.py; 64 sequences of 10 tokens: an
# evaluation is 2 items, and MOESCOPE_TEST_EVAL_GATE=FILE holds the second until FILE
# exists, so no evaluation ends while the test looks, on any machine, without timing):
#   - the first screen's cost matrix is block 0's as `moescope cost --layer 0` gives it
#     (every entry to 2 decimals, the assigned ones marked *), with its assignment,
#     while the network's preparation is held;
#   - l, j, Enter switches to block 2: the title names its layer and the matrix becomes block
#     2's (`cost --layer 2`), still with the preparation held;
#   - q exits with status 0 and nothing of a sanitizer on stderr.
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
gpt2_pair "$P" "moe_layers=[0, 2]" "gen_gpt2.eval_ids(cfg, 3, 64, 10)"
A=$P/seed1; B=$P/seed2; E=$P/eval.safetensors
GATE=$WORK/gate

# matrix_rows L: block L's expert cost from the CLI, as the explorer's matrix pane
# prints it: one extended regex per row ("^A0 +12.50 +2.61\* ..."), the assigned
# entry of each row marked *
matrix_rows() {
    "$MOESCOPE" cost "$A" "$B" --layer "$1" --json "$WORK/cost$1.json" >/dev/null 2>&1 || { echo "cost failed"; return; }
    "$PYTHON" - "$WORK/cost$1.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
C, order = j["matrix"], j["order"]
for i, row in enumerate(C):
    cells = ["%.2f%s" % (v, "\\*" if order[i] == k else "") for k, v in enumerate(row)]
    print("^A%d +%s( |$)" % (i, " +".join(c.replace(".", "\\.") for c in cells)))
PY
}
# check_matrix L WHAT: every row of block L's matrix on the screen, and its assignment
check_matrix() {
    local re n=0
    while read -r re; do
        check "$2: row A$n of block $1's cost matrix ($re)" wait_re "$re"
        n=$((n + 1))
    done < <(matrix_rows "$1")
    [ "$n" -eq 4 ] && pass || fail "$2: block $1's cost matrix from the CLI has $n rows, not 4"
    check "$2: its assignment" wait_for "*assigned"
}

cpu_load_start
rm -f "$GATE"
rm -f "$WORK/exit"
tui_session 130 40 "cd '$WORK' && MOESCOPE_TEST_EVAL_GATE='$GATE' '$MOESCOPE' '$A' '$B' --eval '$E' --points 9 2>'$WORK/stderr'; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "the title: block 0's layer" wait_re "^ moescope .* layer transformer\.h\.0\.mlp "
check_matrix 0 "first screen"
check "block 0: the network still being prepared (the gate holds its evaluation)" _has "preparing the network"
tm send-keys -t t l
check "l lists the MoE blocks" wait_for "transformer.h.2.mlp"
tm send-keys -t t j Enter
check "Enter switches to block 2: the title names its layer" wait_re "^ moescope .* layer transformer\.h\.2\.mlp "
check_matrix 2 "after l"
check "block 2: the network still being prepared" _has "preparing the network"
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"
check "exit status 0" grep -q "EXIT=0" "$WORK/exit"
if grep -q "Sanitizer\|runtime error" "$WORK/stderr"; then fail "a sanitizer report"; tail -20 "$WORK/stderr"; else pass; fi
summary
