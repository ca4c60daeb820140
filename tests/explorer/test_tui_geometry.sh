#!/usr/bin/env bash
# test_tui_geometry.sh - the explorer's routing-geometry view (r), in tmux:
#   - on a network with an MoE layer at every block: r opens the view, which fills in
#     with the report `moescope geometry` writes (its canonical R^2 and eta_share, the
#     same numbers), another key closes it and the explorer goes on, r shows it again;
#     in a short terminal j and G scroll it;
#   - on a network with one MoE block: the view says there is nothing to compare;
#   - q quits with status 0 while nothing else is left running.
source "$(dirname "$0")/../lib/lib.sh"
if ! command -v tmux >/dev/null; then
    fail "tmux not installed"
    summary; exit
fi
source "$TESTS_DIR/explorer/tui_lib.sh"
for p in every one; do
    "$PYTHON" - "$WORK/$p" "$TESTS_DIR" "$p" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = gen_gpt2.config(layers=3, moe_layers=[0, 1, 2] if sys.argv[3] == "every" else [1])
back = gen_gpt2.backbone(cfg, 9)
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, gen_gpt2.eval_ids(cfg, 2, N=20, T=12))
PY
done
P=$WORK/every
"$MOESCOPE" geometry "$P/seed1" --eval "$P/eval.safetensors" --no-transport --json "$WORK/g.json" >/dev/null ||
    fail "moescope geometry on the pool"
read -r SHARED ETA <<<"$("$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); c=j['transitions']['canonical']; print('%.4f %.3f' % (c['shared'], c['eta']))" "$WORK/g.json")"

tui_session 150 50 "cd '$WORK' && '$MOESCOPE' '$P/seed1' '$P/seed2' --eval '$P/eval.safetensors' --points 5; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "the explorer opens" wait_for "network loss, MoE block 0"
tm send-keys -t t r
check "r: the routing geometry view" wait_for "routing geometry of A across depth"
check "its routers" wait_for "transformer.h.2.mlp"
check "its canonical gauge's shared R^2 and eta_share are the command's ($SHARED, $ETA)" \
    wait_re "canonical gauge \(GPA\) +$SHARED +[-0-9.]+ +[-0-9.]+ +$ETA"
# at 120 columns the routers' table keeps each row on one line (it wrapped in a 90-column box)
tm resize-window -t t -x 120 -y 50
check "120 columns: the routers' header on one line" wait_re "layer +experts +rank +s_min/s_max .* top-r PCs"
check "120 columns: a router's row on one line" wait_re "transformer\.h\.2\.mlp +[0-9]+ +[0-9]+/[0-9]+ .*% +[0-9.]+%"
tm send-keys -t t x
check "another key closes it" wait_gone "routing geometry of A across depth"
tm send-keys -t t r
check "r again: the report at once" wait_for "canonical gauge (GPA over"
tm send-keys -t t Escape
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"
check "exit status 0" grep -q "EXIT=0" "$WORK/exit"

# a short terminal: the report scrolls
tui_session 150 24 "cd '$WORK' && '$MOESCOPE' '$P/seed1' '$P/seed2' --eval '$P/eval.safetensors' --points 5; echo EXIT_SHOWN; sleep 600"
check "a short terminal: the explorer opens" wait_for "network loss, MoE block 0"
tm send-keys -t t r
check "the report's first line" wait_for "routing geometry: 3 MoE layers"
tm send-keys -t t j
check "j scrolls the report" wait_gone "routing geometry: 3 MoE layers"
tm send-keys -t t G
check "G: its last line" wait_for "(the transport test: moescope geometry"
tm send-keys -t t Escape
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"

P=$WORK/one
tui_session 150 50 "cd '$WORK' && '$MOESCOPE' '$P/seed1' '$P/seed2' --eval '$P/eval.safetensors' --points 5; echo EXIT=\$? > '$WORK/exit2'; echo EXIT_SHOWN; sleep 600"
check "one MoE block: the explorer opens" wait_for "network loss, MoE block 1"
tm send-keys -t t r
check "one MoE block: nothing to compare" wait_for "one MoE block only"
tm send-keys -t t Escape
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"
check "exit status 0" grep -q "EXIT=0" "$WORK/exit2"
summary
