#!/usr/bin/env bash
# test_mixtral_sample.sh - the Mixtral-layout sample pair (sample-checkpoints/mixtral4)
# is what make_mixtral.sh makes, byte for byte, and works like a real checkpoint:
# info, landscape on the inputs-only evaluation set, align into a sharded directory.
source "$(dirname "$0")/../lib/lib.sh"
S=$ROOT/sample-checkpoints
source "$TESTS_DIR/lib/blas_kernels.sh"
samples_kernels # byte for byte only under the kernels make_mixtral.sh made the files with
check "regenerate" env MOESCOPE="$MOESCOPE" PYTHON="$PYTHON" bash "$S/make_mixtral.sh" "$WORK/m"
for f in eval.safetensors seed1/config.json seed1/model.safetensors.index.json \
         seed1/model-00001-of-00002.safetensors seed1/model-00002-of-00002.safetensors \
         seed2/model-00001-of-00002.safetensors seed2/model-00002-of-00002.safetensors; do
    same "$f byte-identical" "$WORK/m/$f" "$S/mixtral4/$f"
done
check "info says mixtral" bash -c "'$MOESCOPE' info '$S/mixtral4/seed1' | grep -q 'family      mixtral'"
check "landscape" "$MOESCOPE" landscape "$S/mixtral4/seed1" "$S/mixtral4/seed2" \
    --eval "$S/mixtral4/eval.safetensors" --json "$WORK/l.json"
check "align to a sharded directory" "$MOESCOPE" align "$S/mixtral4/seed1" "$S/mixtral4/seed2" -o "$WORK/al"
check "aligned output has both shards, the index and config.json" test -f "$WORK/al/model-00002-of-00002.safetensors" \
    -a -f "$WORK/al/model.safetensors.index.json" -a -f "$WORK/al/config.json"
check "aligned output computes B's function" bash -c "
    '$MOESCOPE' eval '$S/mixtral4/seed2' --eval '$S/mixtral4/eval.safetensors' --dump-outputs '$WORK/b.st' >/dev/null &&
    '$MOESCOPE' eval '$WORK/al' --eval '$S/mixtral4/eval.safetensors' --dump-outputs '$WORK/a.st' >/dev/null &&
    '$PYTHON' -c \"
import sys; sys.path[:0] = ['$ROOT/tests/lib', '$ROOT/tests/oracle']
import family_fixtures as ff, numpy as np
a = ff.read_safetensors('$WORK/a.st')[0]['outputs']; b = ff.read_safetensors('$WORK/b.st')[0]['outputs']
x, y = ff.to_float(*a), ff.to_float(*b)
sys.exit(0 if np.abs(x - y).max() <= 1e-4 * np.abs(y).max() else 1)\""
summary
