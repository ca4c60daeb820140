#!/usr/bin/env bash
# test_tui_large.sh - the TUI at many experts, driven in tmux with every CPU
# busy: a synthetic OLMoE-like pair of two-layer checkpoint folders
# (tests/lib/gen_tui_family.py; 64 experts, or the most the explorer takes) whose
# evaluation set was captured at layer 0. The cost matrix scrolls (its labels
# move) and zooms out with the assignment marked, the orders table says it is
# a sample and gives the chosen order's confidence interval, keys are
# answered while the landscape computes, and l switches A and B to layer 1
# (no curves there: the set belongs to layer 0) and back, loading them off the
# UI thread: keys are answered while a load is held (MOESCOPE_TEST_LOAD_GATE),
# Enter on the shown layer cancels a load, a B without the layer leaves layer 0
# with the reason, and q during a load exits cleanly. Every wait polls
# the screen until a deadline (tests/explorer/tui_lib.sh); nothing is timed here (the
# key latency is measured by tests/bench/bench_tui.sh).
source "$(dirname "$0")/../lib/lib.sh"

need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
MAXN=$(grep -oE 'define LS_MAX_N +[0-9]+' "$ROOT/include/landscape/curve.h" | grep -oE '[0-9]+$')
[ -n "$MAXN" ] || { fail "LS_MAX_N not found in include/landscape/curve.h"; summary; exit; }
N=$(( MAXN < 64 ? MAXN : 64 ))
S=$WORK/pair
# tokens: enough that the landscape runs while keys are answered, few enough that
# its first rows come soon under load (64 experts: 4096 pairs to prepare)
TOK=$(( N >= 64 ? 64 : 512 ))
if ! "$PYTHON" "$TESTS_DIR/lib/gen_tui_family.py" "$S" --n "$N" --d 32 --h 16 --layers 2 --N "$TOK" >"$WORK/gen.log" 2>&1; then
    fail "gen_tui_family.py"; cat "$WORK/gen.log"; summary; exit
fi
start() { # start W H ENV...: the TUI on the pair
    local w=$1 h=$2; shift 2
    tui_session "$w" "$h" "cd '$WORK' && env $* '$MOESCOPE' '$S/A' '$S/B' --eval '$S/eval.safetensors'; sleep 600"
}
# the heat map's rows: left of the pane separator
_heat_has_re() { screen | sed 's/[│|].*//' | grep -qE -- "$1"; }
heat_re() { _poll _heat_has_re "$1" || { _last_screen "heat map never matched /$1/"; return 1; }; }
_heat_lacks_re() { ! screen | sed 's/[│|].*//' | grep -qE -- "$1"; }
heat_gone_re() { _poll _heat_lacks_re "$1" || { _last_screen "heat map kept /$1/"; return 1; }; }
# one screen with both: the key was answered while the worker was busy
_both() { local s; s=$(screen); grep -qF -- "$1" <<<"$s" && grep -qF -- "$2" <<<"$s"; }
# one screen without the first and with the second
_both_lacks() { local s; s=$(screen); ! grep -qF -- "$1" <<<"$s" && grep -qF -- "$2" <<<"$s"; }

cpu_load_start
L=$((N - 1))

# --- UTF-8, colour: title, sampled table, keys while busy, zoom ---
# The landscape's orders past its first block wait for $LSGATE
# (MOESCOPE_TEST_LS_GATE), so the keys below are answered while it is busy.
GATE=$WORK/gate LSGATE=$WORK/lsgate
start 100 30 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color MOESCOPE_TEST_LOAD_GATE="'$GATE'" \
    MOESCOPE_TEST_LS_GATE="'$LSGATE'"
# the title's shortest wording drops the word "router" once the losses join it
check "title: family, n and router" wait_re "olmoe n=$N d=32 h=16 (router )?softmax top-"
check "orders: a sample of all the orders" wait_re "expert orders [0-9]+/2000 sampled of about 10\^[0-9]+"
check "busy computing the landscape" wait_for "busy:"
tm send-keys -t t Tab Down Down Right
check "Tab, arrows: the cursor's readout, answered while busy" _poll _both "A2 B1 " "busy:"
touch "$LSGATE"
tm send-keys -t t z
check "z: the title says what a cell is" wait_re "([0-9]+x[0-9]+ block mean|[0-9]+x mean)"
check "z: the assignment marked in the overview" heat_re "◆"
check "z: the block readout" wait_re "A[0-9]+-[0-9]+ B[0-9]+-[0-9]+ mean "
for i in 1 2 3 4 5 6 7 8; do tm send-keys -t t z; done
check "z again: the whole matrix (message)" wait_for "all of it shows"
tm send-keys -t t Z Z Z Z Z Z Z Z
check "Z: back to every cell" wait_for "every cell shown"
tm send-keys -t t Escape
check "orders: the chosen order's percentile with its 95% CI" wait_re "(top|bottom) [0-9.e-]+% \(95% CI [0-9.e-]+-[0-9.e-]+%\)"
if [ "$N" -ge 64 ]; then # the orders abbreviated, the selected one in full under the table
    check "orders: the selected order in full below" wait_re "│ *order [0-9]+ [0-9]+ [0-9]+"
fi

# --- l: the layers, loaded off the UI thread; layer 1 has no evaluation set, layer 0 comes back ---
# Each load waits for $GATE between A and B (MOESCOPE_TEST_LOAD_GATE): while the
# file is absent a load cannot end, so a key answered then was answered during it.
tm send-keys -t t l
check "l: the layer list, the set's layer marked" wait_for "model.layers.0.mlp  (shown)  [eval set]"
check "l: layer 1 listed" wait_for "model.layers.1.mlp"
tm send-keys -t t j Enter
check "layer 1 loads in the background, its progress on the status line" \
    wait_re "loading layer model.layers.1.mlp\.\.\. [0-9]+%"
tm send-keys -t t '?'
check "?: the help opens while layer 1 loads" _poll _both "keys (any key closes)" "loading layer model.layers.1.mlp"
check "the load has not ended: layer 0 still shown" wait_re "layer model.layers.0.mlp"
tm send-keys -t t Escape
check "Esc: the help closes, the load goes on" _poll _both_lacks "keys (any key closes)" "loading layer model.layers.1.mlp"
tm send-keys -t t l
check "l during the load: the list marks the loading layer" wait_re "model.layers.1.mlp  \(loading [0-9]+%\)"
tm send-keys -t t j Enter
check "Enter on the loading layer: said so" wait_for "is loading already"
touch "$GATE"
check "layer 1: the title names it" wait_re "layer model.layers.1.mlp"
check "layer 1: the loading line has gone" wait_gone "loading layer"
check "layer 1: no curves or landscape, and why" wait_for "captured at layer 0, not this one"
check "layer 1: the title says no set" wait_for "no eval set for this layer"
check "layer 1: the cost matrix of the new layer" wait_re "expert +(gate )?centring on +total"
rm -f "$GATE"
tm send-keys -t t l k Enter
check "layer 0 loading" wait_re "loading layer model.layers.0.mlp\.\.\. [0-9]+%"
tm send-keys -t t l Enter
check "Enter on the shown layer cancels the load" wait_for "cancelled: layer model.layers.1.mlp stays"
check "cancelled: no loading line" wait_gone "loading layer"
tm send-keys -t t l k Enter
check "layer 0 loading again" wait_re "loading layer model.layers.0.mlp\.\.\. [0-9]+%"
touch "$GATE"
check "layer 0 again: reloaded, the landscape restarts" wait_for "A and B reloaded, the landscape restarts"
check "layer 0 again: a sample again" wait_re "expert orders [0-9]+/2000 sampled"

# --- ASCII without colour: scrolling moves the labels, zoom marks '@' ---
start 80 24 LANG=C LC_ALL=C NO_COLOR=1
check "ASCII: the matrix" heat_re "^A0 "
check "ASCII: rows past the pane not shown yet" heat_gone_re "^A$L "
tm send-keys -t t Tab
for ((i = 0; i < L; i++)); do tm send-keys -t t Down; done
for ((i = 0; i < L; i++)); do tm send-keys -t t Right; done
check "ASCII: scrolled to the last row (its label)" heat_re "^A$L "
check "ASCII: the first row's label has left" heat_gone_re "^A0 "
check "ASCII: the last column's label" heat_re "B$L"
check "ASCII: readout of the last cell" wait_re "A$L B$L [0-9]"
tm send-keys -t t z z z z z z z z
check "ASCII: zoomed out, assigned blocks '@'" heat_re "^A[0-9]+ +[^ ]*@"
tm send-keys -t t Escape
check "ASCII: the ramp in the legend" wait_for ".:-=+*#%"
tm send-keys -t t q

# --- a B without layer 1: the load fails, layer 0 stays with the reason; then q while a
# layer loads: the load is cancelled, nothing hangs or leaks (ASan's exit status) ---
rm -f "$GATE"
if ! "$PYTHON" "$TESTS_DIR/lib/gen_tui_family.py" "$WORK/one" --n "$N" --d 32 --h 16 --layers 1 --N 16 >"$WORK/gen1.log" 2>&1; then
    fail "gen_tui_family.py --layers 1"; cat "$WORK/gen1.log"
fi
tui_session 80 24 "cd '$WORK' && env LANG=C LC_ALL=C MOESCOPE_TEST_LOAD_GATE='$GATE' '$MOESCOPE' '$S/A' '$WORK/one/B' \
    --eval '$S/eval.safetensors'; echo \"moescope exited \$?\"; sleep 600"
check "one-layer B: the screen" wait_for "expert orders"
tm send-keys -t t l j Enter
check "one-layer B: layer 1 loading" wait_re "loading layer model.layers.1.mlp\.\.\. [0-9]+%"
touch "$GATE"
check "B lacks layer 1: not loaded, the reason names B" \
    wait_re "layer model.layers.1.mlp not loaded: one/B: no MoE layer 'model.layers.1.mlp'"
check "B lacks layer 1: the title keeps layer 0" wait_re "layer model.layers.0.mlp"
check "B lacks layer 1: no loading line" wait_gone "loading layer"
rm -f "$GATE"
tm send-keys -t t l j Enter
check "quit test: layer 1 loading" wait_re "loading layer model.layers.1.mlp\.\.\. [0-9]+%"
tm send-keys -t t q
check "q during a load: exits with status 0" wait_for "moescope exited 0"
cpu_load_stop
summary
