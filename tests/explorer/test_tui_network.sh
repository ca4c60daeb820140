#!/usr/bin/env bash
# test_tui_network.sh - the explorer on a network (a GPT-2 folder pair with MoE at
# blocks 0 and 2, tests/lib/gen_gpt2.py), in tmux with every CPU busy:
#   - the title says the loss is the network's and which MoE block;
#   - the orders table fills in with the network barriers `landscape` computes (the
#     best row's order and barrier, the expert choice's rank);
#   - l lists the MoE blocks, Enter on block 2 switches to it: the title names block
#     2, its table is block 2's landscape;
#   - q quits with status 0;
#   - a Qwen3-MoE decoder pair with MoE at blocks 0 and 2 (tests/lib/gen_decoders.py, B
#     another seed's MoE blocks on A's backbone): the title names the family and block
#     0's layer; l, Enter switches to block 2, the title then names its layer;
#   - the committed Qwen3-MoE pool (sample-checkpoints/qwen3moe) opens out of the box:
#     its title names the family, the MoE layer and the network loss, and its table
#     is the network landscape `landscape` computes.
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
gpt2_pair "$P" "moe_layers=[0, 2]" "gen_gpt2.teacher_ids(cfg, {**back, **m1}, 2, N=8, T=10)"
A=$P/seed1; B=$P/seed2; E=$P/eval.safetensors
network_landscapes "$A" "$B" "$E" 0 2

cpu_load_start
tui_explore 130 40 "$A" "$B" "$E"
check "the title: network loss, block 0" wait_for "network loss, MoE block 0"
check_network_table "$WORK/l0.json" "block 0"
check_block_switch "transformer.h.2.mlp" "network loss, MoE block 2"
check_network_table "$WORK/l2.json" "block 2"
# p: the curves figure says the loss is the network's, and of block 2
tm send-keys -t t p
check "p: the export directory asked" wait_for "export directory for p, e and x"
tm send-keys -t t Enter
check "p: the figure saved" wait_re "saved .*\.png"
png=$(ls "$WORK"/*.png 2>/dev/null | head -1)
title=$("$PYTHON" -c "import sys; sys.path.insert(0, sys.argv[2]); import testutil; print(testutil.png_info(sys.argv[1])[2].get('Title', ''))" "$png" "$TESTS_DIR/lib" 2>/dev/null)
check "p: its title names the network loss and block 2 ($title)" grep -q "^network loss, MoE block 2 " <<<"$title"
check_quit

Q=$ROOT/sample-checkpoints/qwen3moe
network_landscapes "$Q/seed1" "$Q/seed2" "$Q/eval.safetensors" 1
tui_explore 130 40 "$Q/seed1" "$Q/seed2" "$Q/eval.safetensors"
check "qwen3moe: the title names the family" wait_for "qwen3_moe n=4 d=64"
check "qwen3moe: and the MoE layer" wait_for "layer model.layers.1.mlp"
check "qwen3moe: the loss is the network's, block 1" wait_for "network loss, MoE block 1"
check_network_table "$WORK/l1.json" "qwen3moe block 1"
check_quit

# a decoder family of two MoE blocks: the title names the family and the layer; l switches
QD=$WORK/qdec
"$PYTHON" - "$QD" "$TESTS_DIR" <<'PY'
import os, sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import family_fixtures as ff, gen_decoders
out = sys.argv[1]
gen_decoders.generate("qwen3_moe", out + "/a", dtype="BF16", shards=2)
gen_decoders.generate("qwen3_moe", out + "/o", dtype="BF16", shards=2, seed=2)
os.makedirs(out + "/b")
for f in os.listdir(out + "/a"):
    src = os.path.join(out, "a", f)
    if not f.startswith("model-"):
        open(os.path.join(out, "b", f), "wb").write(open(src, "rb").read())
        continue
    ra, meta = ff.read_safetensors(src)
    ro = ff.read_safetensors(os.path.join(out, "o", f))[0]
    moe = lambda k: ".mlp.experts." in k or ".mlp.gate." in k
    ff.write_safetensors(os.path.join(out, "b", f), [(k,) + (ro[k] if moe(k) else ra[k]) for k in ra], meta)
PY
tui_explore 130 40 "$QD/a" "$QD/b" "$QD/a/eval.safetensors"
check "qwen3_moe decoder: the title names the family" wait_for "qwen3_moe n=4 d=32"
check "qwen3_moe decoder: and block 0's layer" wait_for "layer model.layers.0.mlp"
check_block_switch "model.layers.2.mlp" "network loss, MoE block 2"
check "qwen3_moe decoder: the title names block 2's layer" wait_for "layer model.layers.2.mlp"
check_quit
summary
