#!/usr/bin/env bash
# test_tui_network.sh - the explorer on a network (a GPT-2 folder pair with MoE at
# blocks 0 and 2, tests/lib/gen_gpt2.py), in tmux with every CPU busy:
#   - the title says the loss is the network's and which MoE block;
#   - the orders table fills in with the network barriers `landscape` computes (the
#     best row's order and barrier, the expert choice's rank);
#   - l lists the MoE blocks, Enter on block 2 switches to it: the title names block
#     2, its table is block 2's landscape;
#   - q quits with status 0.
source "$(dirname "$0")/../lib/lib.sh"
if ! command -v tmux >/dev/null; then
    fail "tmux not installed"
    summary; exit
fi
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
"$PYTHON" - "$P" "$TESTS_DIR" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = gen_gpt2.config(moe_layers=[0, 2])
back = gen_gpt2.backbone(cfg, 9)
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2},
                    gen_gpt2.teacher_ids(cfg, {**back, **m1}, 2, N=8, T=10))
PY
A=$P/seed1; B=$P/seed2; E=$P/eval.safetensors
for L in 0 2; do
    "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 9 --layer $L -q --json "$WORK/l$L.json" >/dev/null ||
        fail "landscape of block $L"
done
# the best row (order and barrier) and the expert choice's rank, as the table shows them
best() { "$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(map(str, j['best']['order'])), '%.4f' % j['best']['barrier'])" "$1"; }
rank() { "$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['methods']['expert']['rank'])" "$1"; }
read -r -a B0 <<<"$(best "$WORK/l0.json")"
read -r -a B2 <<<"$(best "$WORK/l2.json")"

cpu_load_start
tui_session 130 40 "cd '$WORK' && '$MOESCOPE' '$A' '$B' --eval '$E' --points 9; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "the title: network loss, block 0" wait_for "network loss, MoE block 0"
check "the table is complete" wait_re "expert orders 24/24"
# (ties at barrier 0 share rank 1=; the JSON's best is one of them)
check "the best row's barrier is the landscape's (${B0[4]})" wait_re "│\*[^│]* 1=? +[0-9 ]+ +${B0[4]} "
check "the landscape's best order ranks first (${B0[*]})" wait_re " 1=? +${B0[0]} ${B0[1]} ${B0[2]} ${B0[3]} +${B0[4]} "
check "the expert choice's rank" wait_re "expert order rank $(rank "$WORK/l0.json") of 24"
tm send-keys -t t l
check "l lists the MoE blocks" wait_for "transformer.h.2.mlp"
tm send-keys -t t j Enter
check "Enter switches to block 2" wait_for "network loss, MoE block 2"
check "block 2's table" wait_re "expert orders 24/24"
check "block 2's best barrier (${B2[4]})" wait_re "│\*[^│]* 1=? +[0-9 ]+ +${B2[4]} "
check "block 2's best order ranks first (${B2[*]})" wait_re " 1=? +${B2[0]} ${B2[1]} ${B2[2]} ${B2[3]} +${B2[4]} "
check "block 2's expert rank" wait_re "expert order rank $(rank "$WORK/l2.json") of 24"
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"
check "exit status 0" grep -q "EXIT=0" "$WORK/exit"
summary
