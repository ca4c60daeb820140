#!/usr/bin/env bash
# make_mixtral.sh [OUT] - the sample pair in a real family's layout (run by make_samples.sh).
#
# Two bias-free SiLU-GLU top-2 MoE layers (n = 4, d = 32, h = 32), trained like the
# other digits variants (seeds 1 and 2, frozen pretrained LayerNorm + head), then
# written by to_mixtral.py as Hugging Face Mixtral checkpoints: OUT/seed1/ and
# OUT/seed2/ each hold two BF16 shards, model.safetensors.index.json and config.json;
# OUT/eval.safetensors holds only `inputs` (the test split's hidden states entering
# the block), as a capture from a real model would. Deterministic.
# Env: MOESCOPE (default ../moescope), PYTHON (python3 with numpy).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MOESCOPE=${MOESCOPE:-$HERE/../moescope}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${1:-$HERE/mixtral4}
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export OPENBLAS_CORETYPE=Haswell # the kernels the committed files were made with
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
for seed in 1 2; do
    extra=()
    [ "$seed" = 1 ] && extra=(--eval-out "$tmp/eval.safetensors")
    "$MOESCOPE" train --data "$HERE/digits.safetensors" --head "$HERE/pretrained.safetensors" \
        --variant mixtral4 --seed "$seed" --n 4 --router topk --k 2 --h 32 --act silu_glu \
        --no-bias --epochs 60 --lr 0.003 --batch 32 "${extra[@]}" \
        -o "$tmp/seed$seed.safetensors" --quiet
    rm -rf "$OUT/seed$seed"
    "$PYTHON" "$HERE/to_mixtral.py" "$tmp/seed$seed.safetensors" "$OUT/seed$seed"
done
"$PYTHON" "$HERE/to_mixtral.py" --inputs "$tmp/eval.safetensors" "$OUT/eval.safetensors"
echo "make_samples: mixtral4 done"
