#!/usr/bin/env bash
# make_samples.sh - regenerate sample-checkpoints/ (run by `make samples`).
#
# Same binary, same seeds -> byte-identical files (training is single-threaded).
# Env: MOESCOPE (the binary, default ./moescope), PYTHON (Debian python3 with
# numpy, only to rebuild digits.safetensors from digits.csv.gz).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MOESCOPE=${MOESCOPE:-$HERE/../moescope}
MOESCOPE=$(cd "$(dirname "$MOESCOPE")" && pwd)/$(basename "$MOESCOPE")
PYTHON=${PYTHON:-/usr/bin/python3}
cd "$HERE"
# OpenBLAS picks its sgemm kernels by CPU; different kernels round differently.
# Pin the Haswell (AVX2) kernels, which the committed files were made with, on
# every CPU that has AVX2 (tests/commands/test_samples.sh does the same).
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export OPENBLAS_CORETYPE=Haswell
fi

# 1. the data: the UCI digits as shipped by Debian's python3-sklearn
if "$PYTHON" -c 'import numpy' 2>/dev/null; then
    "$PYTHON" convert_digits.py digits.csv.gz digits.safetensors
fi

# 2. the pretrained dense model: embedding (d = 32, seed 0) -> FFN block (h = 32)
#    -> LayerNorm -> head, all trained; its LayerNorm + head are then frozen
"$MOESCOPE" train --data digits.safetensors --pretrain --h 32 --epochs 60 --lr 0.003 \
    --batch 32 --embed-dim 32 --embed-seed 0 --embed-scale 1 --seed 0 \
    -o pretrained.safetensors --quiet

# 3. the MoE variants: a fresh MoE layer per seed, only the MoE trained
variant() { # name, then the options of the variant
    local name=$1; shift
    mkdir -p "$name"
    for seed in 1 2 3 4; do
        local extra=()
        [ "$seed" = 1 ] && extra=(--eval-out "$name/eval.safetensors")
        "$MOESCOPE" train --data digits.safetensors --head pretrained.safetensors \
            --variant "$name" --seed "$seed" "$@" "${extra[@]}" \
            -o "$name/seed$seed.safetensors" --quiet
    done
    echo "make_samples: $name done"
}
variant dense4  --n 4 --router dense --h 32 --act relu --epochs 60 --lr 0.003 --batch 32
variant topk4   --n 4 --router topk --k 2 --h 32 --act relu --epochs 60 --lr 0.003 --batch 32
variant shared4 --n 4 --router topk --k 2 --shared 1 --h 32 --act relu --epochs 60 --lr 0.003 --batch 32
variant dense8  --n 8 --router dense --h 32 --act relu --epochs 60 --lr 0.003 --batch 32

# 4. the teacher-student sets: a random teacher MoE (sharp gate, strong experts)
#    with a frozen LayerNorm + head; students of the same routing (n experts,
#    top-2) learn its head outputs from x ~ N(0, I) (MSE). Students from
#    different seeds recover the teacher's experts, each in its own order: the
#    expert order matters. The teacher's experts have h = 16 hidden units; the
#    students of teacher8 get sh = 32 (twice as wide: with 8 experts, students
#    as narrow as the teacher often stall short of it, see README.md).
teacher_set() { # name n sh
    local name=$1 n=$2 sh=$3
    mkdir -p "$name"
    "$MOESCOPE" train --make-teacher --n "$n" --h 16 --router topk --k 2 --embed-dim 8 \
        --classes 8 --samples 20000 --seed 0 --variant "$name" \
        -o "$name/teacher.safetensors" --quiet
    for seed in 1 2 3 4; do
        local extra=()
        [ "$seed" = 1 ] && extra=(--eval-out "$name/eval.safetensors")
        "$MOESCOPE" train --head "$name/teacher.safetensors" --variant "$name" --seed "$seed" \
            --n "$n" --router topk --k 2 --h "$sh" --epochs 150 --lr 0.003 --batch 128 \
            --schedule cosine "${extra[@]}" -o "$name/seed$seed.safetensors" --quiet
    done
    echo "make_samples: $name done"
}
teacher_set teacher4 4 16
teacher_set teacher8 8 32

# 5. a pair in a real family's layout: Mixtral names, BF16, two shards, index and
#    config.json, and an inputs-only evaluation set (see make_mixtral.sh)
MOESCOPE="$MOESCOPE" PYTHON="$PYTHON" bash make_mixtral.sh "$HERE/mixtral4"

# 6. the ViT samples: a small ViT pretrained on the digits images, one MoE block
#    fine-tuned from four seeds (PyTorch, one thread; see make_vit.py). Skipped,
#    and said so, where Debian's python3-torch is not installed.
if "$PYTHON" -c 'import torch' 2>/dev/null; then
    "$PYTHON" make_vit.py --out "$HERE/vit"
    echo "make_samples: vit done"
else
    echo "make_samples: vit skipped (no python3-torch: apt-get install python3-torch)"
fi

# 7. the GPT network samples (gpt/): a character-level GPT-2-layout network
#    pretrained on Debian's fortunes with MoE block(s), the MoE re-initialised per
#    seed and only it fine-tuned (make_gpt.py; PyTorch, one thread). Needs Debian's
#    python3-torch and fortunes; without them the committed gpt/ is kept.
if "$PYTHON" -c 'import torch' 2>/dev/null && [ -d /usr/share/games/fortunes ]; then
    "$PYTHON" make_gpt.py --out "$HERE/gpt"
    echo "make_samples: gpt done"
else
    echo "make_samples: gpt/ not remade (needs python3-torch and fortunes: make deps)" >&2
fi

# 8. a pool in a real decoder family's layout (qwen3moe/): a small Qwen3-MoE
#    pretrained on the fortunes bytes, its MoE drawn afresh per seed and only it
#    trained on the next-token loss (make_qwen3moe.py; PyTorch, one thread).
if "$PYTHON" -c 'import torch' 2>/dev/null && [ -d /usr/share/games/fortunes ]; then
    nice -n 19 "$PYTHON" make_qwen3moe.py --out "$HERE/qwen3moe"
    echo "make_samples: qwen3moe done"
else
    echo "make_samples: qwen3moe/ not remade (needs python3-torch and fortunes: make deps)" >&2
fi
