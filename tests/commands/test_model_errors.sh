#!/usr/bin/env bash
# tests/commands/test_model_errors.sh - broken checkpoints and evaluation sets are refused
# with a non-zero exit, a message naming the problem, and no sanitizer report.
source "$(dirname "$0")/../lib/lib.sh"
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"

$GEN ckpt "$WORK/good.safetensors" --seed 7 --n 4 --d 8 --h 16
$GEN evalset "$WORK/eval.safetensors" --ckpt "$WORK/good.safetensors" --N 50
for k in missing_tensor inner_dim nan expert_count extra_expert unknown_router bad_topk; do
    $GEN bad $k "$WORK/$k.safetensors"
done
$GEN bad eval_width "$WORK/w.safetensors" "$WORK/eval_width.safetensors"
$GEN bad labels_range "$WORK/l.safetensors" "$WORK/labels_range.safetensors"

check "good checkpoint loads" "$MOESCOPE" info "$WORK/good.safetensors"
check "good eval runs" "$MOESCOPE" eval "$WORK/good.safetensors" --eval "$WORK/eval.safetensors"

expect_fail "missing tensor" "missing.*moe\.experts\.1\.fc2\.weight|moe\.experts\.1\.fc2\.weight.*missing" \
    "$MOESCOPE" info "$WORK/missing_tensor.safetensors"
expect_fail "wrong inner dimension" "moe\.experts\.2\.fc1\.weight.*(shape|\[16, 9\])" \
    "$MOESCOPE" info "$WORK/inner_dim.safetensors"
expect_fail "NaN weight" "moe\.experts\.0\.fc2\.weight.*([Nn]a[Nn]|finite)" \
    "$MOESCOPE" eval "$WORK/nan.safetensors" --eval "$WORK/eval.safetensors"
expect_fail "expert count" "4 rows.*3 expert" "$MOESCOPE" info "$WORK/expert_count.safetensors"
expect_fail "more experts than gate rows" "3 rows.*moe\.experts\.3\.fc1\.weight' exists" \
    "$MOESCOPE" info "$WORK/extra_expert.safetensors"
expect_fail "unknown router" "unknown router 'sparse'" \
    "$MOESCOPE" info "$WORK/unknown_router.safetensors"
expect_fail "unknown router names the file" "unknown_router\.safetensors" \
    "$MOESCOPE" info "$WORK/unknown_router.safetensors"
expect_fail "top_k beyond n" "top_k = 9 must be in 1\.\.n = 4" \
    "$MOESCOPE" info "$WORK/bad_topk.safetensors"
expect_fail "eval set of the wrong width" "inputs have width 16 but the layer has d = 8" \
    "$MOESCOPE" eval "$WORK/good.safetensors" --eval "$WORK/eval_width.safetensors"
expect_fail "label out of range" "label 3 .*out of range.*C = 3" \
    "$MOESCOPE" eval "$WORK/good.safetensors" --eval "$WORK/labels_range.safetensors"
expect_fail "layer that does not exist" "no MoE layer 'block9'.*layers in the file: moe" \
    "$MOESCOPE" info "$WORK/good.safetensors" --layer block9
expect_fail "eval: layer that does not exist" "no MoE layer 'x'" \
    "$MOESCOPE" eval "$WORK/good.safetensors" --eval "$WORK/eval.safetensors" --layer x
expect_fail "missing file" "nothere\.safetensors" "$MOESCOPE" info "$WORK/nothere.safetensors"
expect_fail "eval set is a checkpoint" "inputs" \
    "$MOESCOPE" eval "$WORK/good.safetensors" --eval "$WORK/good.safetensors"

# usage errors exit 2, --help exits 0
"$MOESCOPE" info --bogus "$WORK/good.safetensors" >/dev/null 2>&1
check "info: unknown option exits 2" test $? -eq 2
"$MOESCOPE" info >/dev/null 2>&1
check "info: missing checkpoint exits 2" test $? -eq 2
check "info --help" "$MOESCOPE" info --help
check "info --json" "$MOESCOPE" info "$WORK/good.safetensors" --json "$WORK/info.json"
check "info JSON has the architecture" grep -q '"router":' "$WORK/info.json"

# top-1 routing: info warns (outside the theory)
$GEN ckpt "$WORK/top1.safetensors" --router topk --k 1
"$MOESCOPE" info "$WORK/top1.safetensors" >"$WORK/o" 2>"$WORK/e"
check "top-1 info succeeds" test $? -eq 0
check "top-1 info warns" grep -q "outside the theory" "$WORK/e"
# eval's load table: the fraction routed only where routing selects (1 everywhere for dense)
S=sample-checkpoints
"$MOESCOPE" eval "$ROOT/$S/dense4/seed1.safetensors" --eval "$ROOT/$S/dense4/eval.safetensors" >"$WORK/o" 2>&1
check "eval dense: exit 0" test $? -eq 0
check "eval dense: no fraction-routed column" bash -c "grep -q 'mean gate' '$WORK/o' && ! grep -q 'fraction routed' '$WORK/o'"
"$MOESCOPE" eval "$ROOT/$S/topk4/seed1.safetensors" --eval "$ROOT/$S/topk4/eval.safetensors" >"$WORK/o" 2>&1
check "eval top-k: fraction-routed column" grep -q 'fraction routed' "$WORK/o"
summary
