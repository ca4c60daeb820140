#!/usr/bin/env bash
# test_tui_vit.sh - the explorer on a ViT (a folder pair in Hugging Face's ViT layout
# with MoE at the first and the last block, tests/lib/gen_vit.py), in tmux with every
# CPU busy:
#   - the title names the network's class loss, the MoE block and the ViT's layer;
#   - the orders table fills in with the network barriers `landscape` computes;
#   - l lists the ViT's MoE blocks (vit.encoder.layer.L.moe), Enter on the last switches
#     to it: the title names block 1, its table is block 1's landscape;
#   - q quits with status 0.
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
"$PYTHON" - "$WORK/vit" "$TESTS_DIR" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_vit
cfg = gen_vit.config(moe_layers=[0, 1], layers=2)
back = gen_vit.backbone(cfg, 9)
m1, m2 = gen_vit.moe_blocks(cfg, 1), gen_vit.moe_blocks(cfg, 2)
px, labels = gen_vit.images(cfg, 2, 24, {**back, **m1})
gen_vit.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, px, labels)
PY
V=$WORK/vit
network_landscapes "$V/seed1" "$V/seed2" "$V/eval.safetensors" 0 1
cpu_load_start
tui_explore 150 40 "$V/seed1" "$V/seed2" "$V/eval.safetensors"
check "the title: the class loss of the network, block 0" wait_for "network loss, MoE block 0 (mean class cross-entropy)"
check "the title: the ViT's layer" wait_for "vit.encoder.layer.0.moe"
check_network_table "$WORK/l0.json" "block 0"
check_block_switch "vit.encoder.layer.1.moe" "network loss, MoE block 1 (mean class cross-entropy)"
check_network_table "$WORK/l1.json" "block 1"
check_quit
summary
