#!/usr/bin/env bash
# test_guards.sh - hostile input, round four (issue 41): the network, ViT, study and
# geometry paths under the guards the layer path has. Each part is a case that passed
# silently (or destroyed files) before its fix:
#  (6) MOESCOPE_MAX_MEMORY parsed strictly: 64MiB is taken, '64 M', garbage, -1, 0 are
#      refused (exit 2) naming the variable, never read as no limit;
#  (4) a key twice in one JSON object (config.json, a sharded index) is refused naming the
#      key's path (the corpus' net_cfg_dup_*, vit_dup_label run in test_faults; here an
#      index's weight_map and an object inside an array);
# Networks come from tests/hostile/corpus/gen_hostile.py (checked in) or are made here.
source "$(dirname "$0")/../lib/lib.sh"
D=$WORK/g
mkdir -p "$D"
C=$ROOT/tests/hostile/corpus
NET=$C/net_ok NE=$C/net_eval.safetensors

# expect_rc NAME RC PATTERN CMD...: CMD exits with RC and its stderr matches PATTERN
expect_rc() {
    local name=$1 want=$2 pat=$3; shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$WORK/err" | tail -5
    elif ! grep -Eq -- "$pat" "$WORK/err"; then fail "$name: message does not match /$pat/:"; sed 's/^/    /' "$WORK/err" | tail -5
    else pass; fi
}

# ------------------------------------------------- (6) MOESCOPE_MAX_MEMORY
for v in '64 M' garbage -1 0 1e9 inf 0x10 64Q; do
    MOESCOPE_MAX_MEMORY=$v expect_rc "MOESCOPE_MAX_MEMORY='$v' refused" 2 \
        "MOESCOPE_MAX_MEMORY = '$v' is not a memory size" "$MOESCOPE" eval "$NET" --eval "$NE"
done
for v in 64MiB 64M 64m 67108864 1.5G 2GB; do
    MOESCOPE_MAX_MEMORY=$v check "MOESCOPE_MAX_MEMORY='$v' taken" "$MOESCOPE" eval "$NET" --eval "$NE"
done
# the limit is applied: 1K is below anything a command needs
MOESCOPE_MAX_MEMORY=1K expect_rc "MOESCOPE_MAX_MEMORY=1K: a layer's landscape over the limit" 1 \
    "over the limit of 1\.0 KiB" "$MOESCOPE" landscape "$ROOT/sample-checkpoints/dense4/seed1.safetensors" \
    "$ROOT/sample-checkpoints/dense4/seed2.safetensors" --eval "$ROOT/sample-checkpoints/dense4/eval.safetensors" --points 3

# ------------------------------------------------- (4) duplicate keys
mkdir -p "$D/dupidx" "$D/duparr"
cp "$C/cfg_model_qwen3.safetensors" "$D/dupidx/model-00001-of-00001.safetensors"
g=model.layers.0.mlp.gate.weight
"$PYTHON" - "$D/dupidx" "$g" <<'PY'
import json, struct, sys
d, g = sys.argv[1], sys.argv[2]
raw = open(d + "/model-00001-of-00001.safetensors", "rb").read()
hdr = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
wm = {k: "model-00001-of-00001.safetensors" for k in hdr if k != "__metadata__"}
t = json.dumps({"metadata": {}, "weight_map": wm})
t = t.replace('"%s": "model-00001-of-00001.safetensors"' % g,
              '"%s": "model-00001-of-00001.safetensors", "%s": "other.safetensors"' % (g, g))
open(d + "/model.safetensors.index.json", "w").write(t)
open(d + "/config.json", "w").write('{"model_type": "qwen3_moe", "num_experts_per_tok": 2}')
PY
expect_rc "an index naming a tensor twice" 1 \
    "dupidx/model\.safetensors\.index\.json: key 'weight_map\.$g' is given twice" "$MOESCOPE" info "$D/dupidx"
cp "$C/cfg_model_qwen3.safetensors" "$D/duparr/model.safetensors"
echo '{"model_type": "qwen3_moe", "x": [1, {"a": 1}, {"b": 1, "b": 2}]}' >"$D/duparr/config.json"
expect_rc "an object in an array holding a key twice" 1 "duparr/config\.json: key 'x\[2\]\.b' is given twice" \
    "$MOESCOPE" info "$D/duparr"
echo '{"model_type": "qwen3_moe", "x": [1, {"a": 1}, {"b": 1}], "y": {"b": 2}}' >"$D/duparr/config.json"
check "the same key in different objects is no duplicate" "$MOESCOPE" info "$D/duparr"

summary
