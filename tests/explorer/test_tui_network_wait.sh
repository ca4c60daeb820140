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
#     exits with status 0 (it and the landscape's were cancelled mid-evaluation);
#   - the backbone's values are read by the worker, after the first screen: a NaN in a
#     backbone tensor is reported on the status line (the file, the tensor) under the
#     cost matrix, which came without it; q exits 0 with the terminal restored;
#   - many experts (128 in each of 3 blocks: q once took 4-11 s to end the process
#     there, 55-64 s at 256): q while a block switch is in flight (the new block's
#     prefix held by the gate) and after a re-alignment (m: the other cost; the
#     landscape it restarts held by the gate) ends the process, exit 0, the
#     terminal's settings as they were before (stty -g) and the explorer's screen gone.
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
gpt2_pair "$P" "moe_layers=[0, 2], n=8, positions=256" "gen_gpt2.eval_ids(cfg, 3, 4, 256)"
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
check "the frozen prefix's rows on the screen" wait_re "preparing the network: frozen prefix[^:]*: rows [0-9]+/1024"
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

# --- a NaN in the backbone: the screen first, then the reader's error on it ---
NP=$WORK/nanpool
"$PYTHON" - "$NP" "$TESTS_DIR" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = gen_gpt2.config(moe_layers=[0, 2], n=8, positions=256)
back = gen_gpt2.backbone(cfg, 9)
back["transformer.h.1.attn.c_proj.weight"][3, 5] = float("nan")
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, gen_gpt2.eval_ids(cfg, 3, 4, 256))
PY
rm -f "$WORK/exit" "$WORK/stty0" "$WORK/stty1"
tui_session 200 40 "cd '$WORK' && stty -g > '$WORK/stty0'; '$MOESCOPE' '$NP/seed1' '$NP/seed2' --eval '$NP/eval.safetensors' --points 5; echo EXIT=\$? > '$WORK/exit'; stty -g > '$WORK/stty1'; echo EXIT_SHOWN; sleep 600"
check "NaN in the backbone: the cost matrix and its assignment" wait_re "^A7 .*[0-9]\*"
check "NaN in the backbone: the reader's error on the status line" wait_re "preparing the network: .*c_proj\.weight.*non-finite value nan"
check "NaN in the backbone: no curve" _lacks "barrier="
tm send-keys -t t q
check "NaN in the backbone: q ends the process" wait_for "EXIT_SHOWN"
check "NaN in the backbone: exit status 0" grep -q "EXIT=0" "$WORK/exit"
check "NaN in the backbone: the terminal's settings restored" cmp -s "$WORK/stty0" "$WORK/stty1"

# --- backbones in two files: compared by the worker after the first screen ---
# copies of the pool with seed2's backbone shard a file of its own (not the link to
# seed1's): equal bytes, then one value changed
for kind in same other; do
    cp -R "$P" "$WORK/two_$kind"
    "$PYTHON" - "$WORK/two_$kind" "$TESTS_DIR" "$kind" <<'PY'
import os, sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import oracle
d, kind = sys.argv[1], sys.argv[3]
shard = os.path.join(d, "seed2", "model-00001-of-00002.safetensors")
assert os.path.islink(shard), "the pool's backbone shard is a link"
t = oracle.read_safetensors(os.path.join(d, "backbone.safetensors"))[0]
if kind == "other":
    t["transformer.h.1.attn.c_proj.weight"][3, 5] += 0.25
os.remove(shard)
oracle.write_safetensors(shard, t)
PY
done
explore_two() {
    rm -f "$WORK/exit"
    tui_session 200 40 "cd '$WORK' && '$MOESCOPE' '$WORK/two_$1/seed1' '$WORK/two_$1/seed2' --eval '$E' --points 5; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
}
explore_two same
check "two equal backbone files: the cost matrix and its assignment" wait_re "^A7 .*[0-9]\*"
check "two equal backbone files: compared, then the curves come" wait_re "current barrier=[0-9.]+"
check_quit
explore_two other
check "two backbone files that differ: the cost matrix and its assignment" wait_re "^A7 .*[0-9]\*"
check "two backbone files that differ: the refusal on the status line, naming the tensor" \
    wait_re "do not share their frozen backbone: tensor 'transformer\.h\.1\.attn\.c_proj\.weight'"
check "two backbone files that differ: no curve" _lacks "barrier="
check_quit

# --- many experts: q with a block switch or a re-alignment in flight ---
M=$WORK/many
"$PYTHON" - "$M" "$TESTS_DIR" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = gen_gpt2.config(d=8, moe_layers=[0, 1, 2], n=128, h=4, positions=512)
back = gen_gpt2.backbone(cfg, 9)
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, gen_gpt2.eval_ids(cfg, 3, 2, 512))
PY
# explore_many: the explorer on it with the gate, stty's settings before and after it
explore_many() {
    rm -f "$WORK/exit" "$WORK/stty0" "$WORK/stty1"
    tui_session 160 40 "cd '$WORK' && stty -g > '$WORK/stty0'; MOESCOPE_TEST_EVAL_GATE='$GATE' '$MOESCOPE' '$M/seed1' '$M/seed2' --eval '$M/eval.safetensors' --points 5; echo EXIT=\$? > '$WORK/exit'; stty -g > '$WORK/stty1'; echo EXIT_SHOWN; sleep 600"
}
# check_quit_restored WHAT: q ends the process, exit 0, the terminal restored
check_quit_restored() {
    tm send-keys -t t q
    check "$1: q ends the process" wait_for "EXIT_SHOWN"
    check "$1: exit status 0" grep -q "EXIT=0" "$WORK/exit"
    check "$1: the terminal's settings restored" cmp -s "$WORK/stty0" "$WORK/stty1"
    check "$1: the explorer's screen has gone" _lacks "q quit"
}
touch "$GATE"
explore_many
check "128 experts: the curves come" wait_re "current barrier=[0-9.]+"
rm -f "$GATE"
tm send-keys -t t l
check "128 experts: l lists the blocks" wait_for "transformer.h.1.mlp"
tm send-keys -t t j Enter
check "128 experts: block 1's prefix in flight" wait_re "frozen prefix[^:]*: rows [0-9]+/1024"
check_quit_restored "a block switch in flight"
touch "$GATE"
explore_many
check "128 experts again: the curves come" wait_re "current barrier=[0-9.]+"
rm -f "$GATE"
tm send-keys -t t m m m # expert -> activation -> router -> gate (expert -> gate -> expert -> gate without a set)
check "m: the gate cost, B re-aligned by it" wait_for "m cost:gate"
check "m: the re-aligned landscape's evaluation in flight" wait_re "computing landscape .*rows [0-9]+/1024"
check_quit_restored "a re-alignment's evaluation in flight"
summary
