#!/usr/bin/env bash
# test_tui_network_wait.sh - the explorer never waits for a network evaluation (a
# GPT-2 folder pair, 8 experts in blocks 0 and 2, 4 sequences of 256 tokens: an
# evaluation is 4 items). MOESCOPE_TEST_EVAL_GATE=FILE holds every item of an
# evaluation but its first until FILE exists, so an evaluation stays in flight as
# long as the test wants, on any machine, without timing:
#   - gate shut from the start: the first screen (cost matrix, assignment) is up
#     while the frozen prefix is still being computed, its rows on the screen;
#     q exits with status 0 (the prefix could never have finished: the cancel
#     reaches the evaluation in flight);
#   - gate open: the curves come; gate shut again and w (a new request): the
#     current curve's evaluation is in flight (its rows on the status line); q
#     exits with status 0 (it and the landscape's were cancelled mid-evaluation).
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
"$PYTHON" - "$P" "$TESTS_DIR" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = gen_gpt2.config(moe_layers=[0, 2], n=8, positions=256)
back = gen_gpt2.backbone(cfg, 9)
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, gen_gpt2.eval_ids(cfg, 3, 4, 256))
PY
A=$P/seed1; B=$P/seed2; E=$P/eval.safetensors
GATE=$WORK/gate

# explore_gated W H: the explorer on the pool with the gate, its exit status in $WORK/exit
explore_gated() {
    rm -f "$WORK/exit"
    tui_session "$1" "$2" "cd '$WORK' && MOESCOPE_TEST_EVAL_GATE='$GATE' '$MOESCOPE' '$A' '$B' --eval '$E' --points 9; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
}

cpu_load_start
# --- the gate shut: the screen before the frozen prefix ---
rm -f "$GATE"
explore_gated 160 40
check "the cost matrix and its assignment while the prefix computes" wait_re "^A7 .*[0-9]\*"
check "the frozen prefix's rows on the screen" wait_re "preparing the network: frozen prefix: rows [0-9]+/1024"
check "the curves wait for it (no curve yet)" _lacks "barrier="
check_quit

# --- the gate open, then shut again: a new request's curve in flight ---
touch "$GATE"
explore_gated 160 40
check "the gate open: the curves come" wait_re "current barrier=[0-9.]+"
rm -f "$GATE"
tm send-keys -t t w
check "w: weight matching off" wait_for "wm:OFF"
check "w: the current curve's evaluation in flight, its rows on the status line" \
    wait_re "curve current: rows [0-9]+/1024"
check_quit
summary
