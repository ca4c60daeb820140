#!/usr/bin/env bash
# test_guards.sh - hostile input, round four (issue 41): the network, ViT, study and
# geometry paths under the guards the layer path has. Each part is a case that passed
# silently (or destroyed files) before its fix:
#  (6) MOESCOPE_MAX_MEMORY parsed strictly: 64MiB is taken, '64 M', garbage, -1, 0 are
#      refused (exit 2) naming the variable, never read as no limit;
#  (4) a key twice in one JSON object (config.json, a sharded index) is refused naming the
#      key's path (the corpus' net_cfg_dup_*, vit_dup_label run in test_faults; here an
#      index's weight_map and an object inside an array);
#  (3) study's reports never replace a file in (or add one to) a pool directory it was
#      given: --csv DIR/README.txt, --json over a file the study left out, --latex DIR/new;
#  (7) --layer all's steps between layers go into a directory of the run's own
#      (mkdtemp): a symlink or a directory at the old fixed name OUT.layer-0.tmp, and
#      another run's steps, are left alone; Ctrl-C removes that directory (it stayed);
#  (10) landscape --exhaustive on a 12-expert network is refused before any work (it
#      sampled 500 orders with --no-proxy; without, it was refused after the landscape);
#  (9) geometry on a capture whose inputs are constant or all zero at one layer is
#      refused naming the layer, no NaN report;
#  (8) messages that say what is wrong: a one-expert network (its model.safetensors is
#      there), input_ids of I16 or U8 (named, not "OTHER"), an empty evaluation set for
#      a network (it asked for a layer's 'inputs'), 0 tokens or sequences ("has 2
#      dimension(s)");
#  (11) memory: eval --dump-outputs on a network writes its logits [N, T, V] in panels
#      (the peak memory grows by far less than the dump; the same logits as one panel);
#      a network's evaluation is checked against MOESCOPE_MAX_MEMORY before it runs;
#      so are a network landscape's copies of the MoE blocks and a block's inputs for its
#      layer alone (the proxy, diagnose);
#      geometry on a 64-block network is checked against MOESCOPE_MAX_MEMORY first;
#  (1) a huge but finite value (1e30) in any tensor a network's forward reads, for every
#      architecture (GPT-2, ViT, each decoder family: attention, q/k norms, latent
#      attention, sinks, dense MLPs, routers, experts, shared experts, embeddings, head)
#      is refused (exit 1) naming that tensor as the file calls it (it named GPT-2's
#      tensors, and a decoder's attention and dense MLPs were not bounded: loss nan);
#  the decoder families (they came after the issue): (5) a stray tensor (an expert past
#      num_local_experts, an attention bias the config has not, a dense MLP in an MoE
#      block, a router in a first_k_dense_replace block) is refused saying which rule of
#      config.json leaves it unread (it named moe.layers, a key no decoder has); (11) a
#      decoder's evaluation is held to MOESCOPE_MAX_MEMORY by what its forward allocates
#      (a gated MLP's 2 intermediate_size per row of a worker's items);
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

# ------------------------------------------------- (1) overflow, every tensor of every architecture
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/ov_gpt2" --n 4 --k 2 --d 8 --layers 2 --h 4 --N 2 --T 4 --single >/dev/null
"$PYTHON" "$TESTS_DIR/lib/gen_vit.py" "$D/ov_vit" --N 4 --single >/dev/null
# the decoders of the architecture table (src/network/net_config.c), one each
DECODERS="mixtral qwen2_moe qwen3_moe olmoe granitemoe deepseek_v2 deepseek_v3 gpt_oss jetmoe"
# each tensor kind (block and expert numbers aside) with its last float set to 1e30, on
# the release build: this part is about the bound, the sanitizers run the three below
while IFS= read -r line; do
    case $line in PASS*) pass ;; *) fail "$line" ;; esac
done < <(TESTS_DIR=$TESTS_DIR "$PYTHON" - "$MOESCOPE_REL" "$D" $DECODERS <<'PY'
import json, os, re, shutil, struct, subprocess, sys
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], "lib")]
import gen_decoders
exe, D, fams = sys.argv[1], sys.argv[2], sys.argv[3:]
nets = [("gpt2", D + "/ov_gpt2/seed1", D + "/ov_gpt2/eval.safetensors"),
        ("vit", D + "/ov_vit/seed1", D + "/ov_vit/eval.safetensors")]
for f in fams:
    gen_decoders.generate(f, "%s/ov_%s" % (D, f), N=2, T=6)
    nets.append((f, "%s/ov_%s" % (D, f), "%s/ov_%s/eval.safetensors" % (D, f)))
for fam, src, ev in nets:
    raw = open(src + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    seen = set()
    for name in sorted(k for k in hdr if k != "__metadata__"):
        kind = re.sub(r"\.\d+\.", ".N.", name)
        if kind in seen:
            continue
        seen.add(kind)
        b, e = hdr[name]["data_offsets"]
        assert hdr[name]["dtype"] == "F32", name
        buf = bytearray(raw)
        struct.pack_into("<f", buf, 8 + n + e - 4, 1e30)
        x = "%s/ov_x" % D
        shutil.rmtree(x, ignore_errors=True)
        os.makedirs(x)
        shutil.copy(src + "/config.json", x)
        open(x + "/model.safetensors", "wb").write(buf)
        r = subprocess.run([exe, "eval", x, "--eval", ev], capture_output=True, text=True)
        want = "ov_x/model.safetensors: tensor '%s' holds values up to 1e+30: the network's " % name
        if r.returncode == 1 and want in r.stderr:
            print("PASS")
        else:
            err = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            print("%s: 1e30 in %s: exit %d, %s" % (fam, name, r.returncode, err[:300]))
PY
)
# the same under the sanitizers: a q_proj, an expert, embed_tokens, and floats of a
# mapped block found past its mapped weights' tensors (the shared expert's gate, a bias)
"$PYTHON" - "$D" <<'PY'
import json, os, shutil, struct, sys
D = sys.argv[1]
for fam, name, tag in (("mixtral", "model.layers.0.self_attn.q_proj.weight", ""),
                       ("qwen2_moe", "model.layers.0.mlp.experts.1.up_proj.weight", ""),
                       ("deepseek_v3", "model.embed_tokens.weight", ""),
                       ("qwen2_moe", "model.layers.0.mlp.shared_expert_gate.weight", "_g"),
                       ("gpt_oss", "model.layers.0.mlp.experts.down_proj_bias", "")):
    src, x = "%s/ov_%s" % (D, fam), "%s/ovs_%s%s" % (D, fam, tag)
    raw = open(src + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    b, e = json.loads(raw[8:8 + n])[name]["data_offsets"]
    buf = bytearray(raw)
    struct.pack_into("<f", buf, 8 + n + b + 4, 1e30)
    os.makedirs(x)
    shutil.copy(src + "/config.json", x)
    open(x + "/model.safetensors", "wb").write(buf)
PY
for c in mixtral::model.layers.0.self_attn.q_proj.weight:"attention's queries, keys and values in block 0" \
         qwen2_moe::model.layers.0.mlp.experts.1.up_proj.weight:"MoE layer's arithmetic in block 0" \
         deepseek_v3::model.embed_tokens.weight:embeddings \
         qwen2_moe:_g:model.layers.0.mlp.shared_expert_gate.weight:"MoE layer's arithmetic in block 0" \
         gpt_oss::model.layers.0.mlp.experts.down_proj_bias:"MoE layer's arithmetic in block 0"; do
    IFS=: read -r f g t what <<<"$c"
    expect_rc "1e30 in $f's $t refused" 1 \
        "ovs_$f$g/model\.safetensors: tensor '$t' holds values up to 1e\+30: the network's $what would reach" \
        "$MOESCOPE" eval "$D/ovs_$f$g" --eval "$D/ov_$f/eval.safetensors"
done

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

# ------------------------------------------------- (3) study reports in the pool
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"
P=$D/pool
mkdir -p "$P"
$GEN ckpt "$P/s1.safetensors" --seed 1 --n 3 --d 4 --h 8
$GEN ckpt "$P/s2.safetensors" --seed 2 --n 3 --d 4 --h 8
$GEN evalset "$P/eval.safetensors" --ckpt "$P/s1.safetensors" --N 16
echo "my notes" >"$P/README.txt"
cp "$P/s1.safetensors" "$P/left.safetensors.bak"
before=$(sha256sum "$P"/* | sha256sum)
for o in "--csv $P/README.txt" "--json $P/left.safetensors.bak" "--latex $P/new.tex" "--png $P/fig.png"; do
    set -- $o
    expect_rc "study DIR $o refused" 1 "^moescope: $1 .*pool/.*: is inside the folder of the input .*pool" \
        "$MOESCOPE" study "$P" --points 3 "$1" "$2"
done
[ "$(sha256sum "$P"/* | sha256sum)" = "$before" ] && [ ! -e "$P/new.tex" ] && [ ! -e "$P/fig.png" ] && pass \
    || fail "study: a file in the pool was replaced or added"
check "study DIR --csv beside the pool" "$MOESCOPE" study "$P" --points 3 --csv "$D/pool.csv"

# ------------------------------------------------- (7) --layer all's steps
"$PYTHON" - "$D/two.safetensors" <<PY
import sys
sys.path.insert(0, "$C")
import gen_hostile as g
g.write_to(sys.argv[1], g.layer(3, 4, 8, 1, prefix="a") + g.layer(3, 4, 8, 2, prefix="b"))
PY
mkdir -p "$D/victim" "$D/lay"
echo keep >"$D/victim/precious.txt"
ln -s "$D/victim" "$D/lay/out.safetensors.layer-0.tmp"
check "scramble --layer all beside a symlink at the old step name" \
    "$MOESCOPE" scramble "$D/two.safetensors" --layer all -o "$D/lay/out.safetensors"
[ -f "$D/victim/precious.txt" ] && pass || fail "--layer all: a file behind the symlink was deleted"
[ -L "$D/lay/out.safetensors.layer-0.tmp" ] && pass || fail "--layer all: the symlink was removed"
[ -z "$(find "$D/lay" -name '.*layers-*')" ] && pass || fail "--layer all: its steps' directory left behind"
rm "$D/lay/out.safetensors" "$D/lay/out.safetensors.layer-0.tmp"
mkdir -p "$D/lay/out.safetensors.layer-0.tmp"
echo keep >"$D/lay/out.safetensors.layer-0.tmp/mine.txt"
check "align --layer all beside a directory at the old step name" \
    "$MOESCOPE" align "$D/two.safetensors" "$D/two.safetensors" --layer all --no-wm -o "$D/lay/out.safetensors"
[ -f "$D/lay/out.safetensors.layer-0.tmp/mine.txt" ] && pass || fail "--layer all: a directory of the user's emptied"
# Ctrl-C (SIGINT) while the last layer is written: the run's directory of steps goes
# with it (a step's file; a step's folder of shards and a step's temporary folder), and
# nothing else in the output's directory (MOESCOPE_TEST_STALL holds the write)
"$PYTHON" "$TESTS_DIR/lib/gen_decoders.py" --family mixtral --out "$D/mx2" --shards 2 --N 2 --T 6 >/dev/null
for c in "write out:$D/two.safetensors:out.safetensors" "write model-00002:$D/mx2:out"; do
    IFS=: read -r stall src o <<<"$c"
    rm -rf "$D/int" && mkdir -p "$D/int" && echo keep >"$D/int/keep.txt"
    MOESCOPE_TEST_STALL=$stall "$MOESCOPE" scramble "$src" --layer all -o "$D/int/$o" >/dev/null 2>"$D/int.err" &
    pid=$!
    for ((i = 0; i < 1200; i++)); do grep -q "test stall" "$D/int.err" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    during=$(ls -A "$D/int" | tr '\n' ' ')
    kill -INT $pid
    wait $pid
    rc=$?
    [ $rc -eq 130 ] && pass || fail "SIGINT in --layer all ($src): exit $rc ($(tail -1 "$D/int.err"))"
    [[ $during == *.layers-* ]] && pass || fail "SIGINT in --layer all ($src): no steps' directory when stalled ($during)"
    [ "$(ls -A "$D/int")" = keep.txt ] && pass || fail "SIGINT in --layer all ($src): left $(ls -A "$D/int" | tr '\n' ' ')"
done
# two runs with one -o: each finishes from its own steps (one of them replaces the other's output)
rm -f "$D/lay/out.safetensors"
"$MOESCOPE" scramble "$D/two.safetensors" --layer all -o "$D/lay/out.safetensors" --seed 1 >"$D/r1" 2>&1 &
p1=$!
"$MOESCOPE" scramble "$D/two.safetensors" --layer all -o "$D/lay/out.safetensors" --seed 2 >"$D/r2" 2>&1
r2=$?
wait $p1
r1=$?
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && pass || fail "two --layer all runs with one -o: exit $r1, $r2 ($(tail -1 "$D/r1") $(tail -1 "$D/r2"))"

# ------------------------------------------------- (10) --exhaustive on 12 experts
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/n12" --n 12 --k 2 --d 8 --layers 2 --h 4 --N 2 --T 4 >/dev/null
for px in "" --no-proxy; do
    expect_rc "network landscape --exhaustive of n = 12 $px refused" 1 \
        "n = 12 experts have more than 39916800 orders; --exhaustive goes up to 11" \
        "$MOESCOPE" landscape "$D/n12/seed1" "$D/n12/seed2" --eval "$D/n12/eval.safetensors" --points 3 \
        --exhaustive $px --json "$D/n12.json"
    grep -qi "sampl\|order" "$WORK/out" && fail "--exhaustive $px: it ran ($(head -2 "$WORK/out"))" || pass
    [ ! -e "$D/n12.json" ] && pass || fail "--exhaustive $px: a report was written"
done
expect_rc "study --exhaustive of n = 12 networks refused" 1 "n = 12 experts have more than 39916800 orders" \
    "$MOESCOPE" study "$D/n12/seed1" "$D/n12/seed2" --eval "$D/n12/eval.safetensors" --points 3 --exhaustive --no-proxy

# ------------------------------------------------- (9) geometry on constant inputs
TESTS_DIR=$TESTS_DIR "$PYTHON" - "$D" <<'PY'
import os, sys
import numpy as np
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], d) for d in ("lib", "oracle")]
import gen_ckpt, oracle
D = sys.argv[1]
g = np.random.default_rng(5)
t, meta = {}, None
for l in range(3):
    tl, meta = gen_ckpt.make_layer(1 + l, n=4, d=6, h=4, router="topk", k=2, head=False, prefix="layer%d" % l)
    t.update(tl)
oracle.write_safetensors(D + "/three.safetensors", t, meta)
X = {"inputs.layer%d" % l: g.standard_normal((100, 6)).astype(np.float32) for l in range(3)}
oracle.write_safetensors(D + "/cap_ok.safetensors", X)
oracle.write_safetensors(D + "/cap_zero.safetensors", {**X, "inputs.layer1": np.zeros((100, 6), np.float32)})
oracle.write_safetensors(D + "/cap_const.safetensors", {**X, "inputs.layer2": np.full((100, 6), 0.1, np.float32)})
PY
check "geometry of a capture that varies" "$MOESCOPE" geometry "$D/three.safetensors" --eval "$D/cap_ok.safetensors"
for c in zero:layer1:'all zero' const:layer2:'is the same vector'; do
    IFS=: read -r k L want <<<"$c"
    expect_rc "geometry of a $k capture refused" 1 "$L: .*$want" \
        "$MOESCOPE" geometry "$D/three.safetensors" --eval "$D/cap_$k.safetensors" --json "$D/g_$k.json"
    grep -qi nan "$WORK/out" && fail "geometry $k: NaN printed" || pass
    [ ! -e "$D/g_$k.json" ] && pass || fail "geometry $k: a report was written"
done

# ------------------------------------------------- (8) messages
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/n1" --n 1 --k 1 --d 8 --layers 2 --h 4 --N 2 --T 4 --single >/dev/null
check "a one-expert network evaluates (its model.safetensors was 'no model .safetensors file')" \
    "$MOESCOPE" eval "$D/n1/seed1" --eval "$D/n1/eval.safetensors"
check "a one-expert network's landscape (one order)" \
    "$MOESCOPE" landscape "$D/n1/seed1" "$D/n1/seed2" --eval "$D/n1/eval.safetensors" --points 3
TESTS_DIR=$TESTS_DIR "$PYTHON" - "$D" <<'PY'
import os, sys
import numpy as np
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], d) for d in ("lib", "oracle")]
import oracle
D = sys.argv[1]
ids = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
sys.path.insert(0, os.path.join(os.environ["TESTS_DIR"], "hostile", "corpus"))
import gen_hostile  # oracle writes integers as I32 or I64
gen_hostile.write_to(D + "/ids_i16.safetensors", [("input_ids", "I16", [2, 4], ids.astype("<i2").tobytes())])
gen_hostile.write_to(D + "/ids_u8.safetensors", [("input_ids", "U8", [2, 4], ids.astype("u1").tobytes())])
oracle.write_safetensors(D + "/ids_none.safetensors", {"input_ids": np.zeros((0, 4), np.int64)})
oracle.write_safetensors(D + "/empty.safetensors", {})
oracle.write_safetensors(D + "/cap_none.safetensors", {"inputs.layer%d" % l: np.zeros((0, 6), np.float32) for l in range(3)})
PY
for t in i16:I16 u8:U8; do
    IFS=: read -r f want <<<"$t"
    expect_rc "input_ids of $want named" 1 "tensor 'input_ids' must be I32 or I64, is $want\b" \
        "$MOESCOPE" eval "$NET" --eval "$D/ids_$f.safetensors"
done
expect_rc "input_ids of 0 sequences" 1 "tensor 'input_ids' has shape \[0, 4\]: it needs N >= 1" \
    "$MOESCOPE" eval "$NET" --eval "$D/ids_none.safetensors"
expect_rc "an empty evaluation set for a network" 1 "empty\.safetensors: missing tensor 'input_ids'" \
    "$MOESCOPE" eval "$NET" --eval "$D/empty.safetensors"
expect_rc "a capture of 0 tokens" 1 "tensor 'inputs\.layer0' holds 0 tokens" \
    "$MOESCOPE" geometry "$D/three.safetensors" --eval "$D/cap_none.safetensors"

# ------------------------------------------------- (11) memory
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/wide" --vocab 4096 --d 8 --layers 2 --h 4 --positions 32 --N 64 --T 32 \
    --single >/dev/null
maxrss() { # the peak resident KiB of CMD...
    "$PYTHON" -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1)' "$@"
}
base=$(maxrss "$MOESCOPE" eval "$D/wide/seed1" --eval "$D/wide/eval.safetensors")
dump=$(maxrss "$MOESCOPE" eval "$D/wide/seed1" --eval "$D/wide/eval.safetensors" --dump-outputs "$D/wide.st")
# the logits are 64 x 32 x 4096 floats, 32 MiB: held whole they would add all of it
[ "$base" -gt 0 ] && [ "$dump" -gt 0 ] && [ $((dump - base)) -lt 16384 ] && pass \
    || fail "eval --dump-outputs of a network: peak $dump KiB against $base KiB without it (32 MiB of logits)"
MOESCOPE_MAX_MEMORY=64M check "eval --dump-outputs in panels of 4 MiB" \
    "$MOESCOPE" eval "$D/wide/seed1" --eval "$D/wide/eval.safetensors" --dump-outputs "$D/wide_small.st"
TESTS_DIR=$TESTS_DIR "$PYTHON" - "$D/wide.st" "$D/wide_small.st" <<'PY' && pass || fail "--dump-outputs: panels of another size differ"
import os, sys
import numpy as np
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], d) for d in ("lib", "oracle")]
import oracle
a, b = (oracle.read_safetensors(p)[0]["logits"] for p in sys.argv[1:3])
assert a.shape == (64, 32, 4096) and b.shape == a.shape, (a.shape, b.shape)
# the same sequences in batches of another size: float32 sums in another order
assert np.abs(a - b).max() <= 1e-4 * (1 + np.abs(a).max()), np.abs(a - b).max()
PY
# each worker holds a panel of logits of the 4096-token vocabulary (8 MiB): over 4M, refused
MOESCOPE_MAX_MEMORY=4M expect_rc "a network's evaluation over MOESCOPE_MAX_MEMORY=4M" 1 \
    "wide/seed1 on .*eval\.safetensors: an evaluation of 64 x 32 tokens \(d = 8, vocabulary 4096\): needs .*over the memory limit of 4\.0 MiB" \
    "$MOESCOPE" eval "$D/wide/seed1" --eval "$D/wide/eval.safetensors"
# a network landscape keeps copies of the MoE blocks (B's aligned 3 ways, A's other
# blocks per evaluation slot): 16 MiB here, over 10M while an evaluation fits
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/obj" --d 32 --layers 3 --moe all --n 64 --h 64 --N 2 --T 8 >/dev/null
MOESCOPE_MAX_MEMORY=10M check "an evaluation of the 3-block network within 10M" \
    "$MOESCOPE" eval "$D/obj/seed1" --eval "$D/obj/eval.safetensors"
MOESCOPE_MAX_MEMORY=10M expect_rc "a network landscape's copies of the blocks over 10M" 1 \
    "obj/seed1 and .*obj/seed2 on .*: the network landscape's copies of the MoE blocks .*over the memory limit of 10\.0 MiB" \
    "$MOESCOPE" landscape "$D/obj/seed1" "$D/obj/seed2" --eval "$D/obj/eval.safetensors" --points 3
# a block's inputs for its layer alone (the layer-only proxy, diagnose): (N T, d) and the
# layer's per-row scores and outputs, 24 MiB for 32768 tokens, over 16M (its evaluation,
# about 4 MiB, would be refused with its own message)
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/inp" --d 8 --layers 2 --moe all --n 64 --h 4 --N 64 --T 512 \
    --positions 512 >/dev/null
for cmd in diagnose landscape study; do
    MOESCOPE_MAX_MEMORY=16M expect_rc "$cmd: a block's inputs of 32768 tokens over 16M" 1 \
        "inp/seed1 on .*: MoE block 0's inputs, 32768 tokens of d = 8, for its layer computed alone \(n = 64 experts\): needs .*over the memory limit of 16\.0 MiB" \
        "$MOESCOPE" $cmd "$D/inp/seed1" "$D/inp/seed2" --eval "$D/inp/eval.safetensors" --points 3
done
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/deep" --layers 64 --moe all --n 4 --k 2 --d 8 --h 4 --N 8 --T 16 \
    --positions 16 --single >/dev/null
# 1024 tokens: the geometry's 5.5 MiB over 4M, its evaluation's workers (up to 8) within
"$PYTHON" "$TESTS_DIR/lib/gen_gpt2.py" "$D/deep64" --layers 64 --moe all --n 4 --k 2 --d 8 --h 4 --N 64 --T 16 \
    --positions 16 --single >/dev/null
MOESCOPE_MAX_MEMORY=4M expect_rc "geometry of 64 MoE blocks over MOESCOPE_MAX_MEMORY=4M" 1 \
    "deep64/seed1: the routing geometry of its 64 MoE blocks on the 1024 tokens .*over the memory limit of 4\.0 MiB" \
    "$MOESCOPE" geometry "$D/deep64/seed1" --eval "$D/deep64/eval.safetensors"
check "geometry of 64 MoE blocks within the machine's memory" \
    "$MOESCOPE" geometry "$D/deep/seed1" --eval "$D/deep/eval.safetensors"


# ------------------------------------------------- the decoder families
# (5) tensors nothing reads, with why: the message named moe.layers, a key no decoder has
"$PYTHON" - "$D" <<'PY'
import json, os, shutil, struct, sys
D = sys.argv[1]
def add(fam, out, *tensors):  # a copy of ov_<fam> with tensors of 0.01 added
    src, dst = "%s/ov_%s" % (D, fam), "%s/%s" % (D, out)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    raw = open(dst + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    extra = b""
    for name, shape in tensors:
        k = 4 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        hdr[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data) + len(extra), len(data) + len(extra) + k]}
        extra += struct.pack("<f", 0.01) * (k // 4)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    open(dst + "/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data + extra)
e9 = "model.layers.0.block_sparse_moe.experts.9."
add("mixtral", "un_e9", (e9 + "w1.weight", [16, 32]), (e9 + "w2.weight", [32, 16]), (e9 + "w3.weight", [16, 32]))
add("mixtral", "un_bias", ("model.layers.0.self_attn.q_proj.bias", [32]))
add("mixtral", "un_dense", ("model.layers.1.mlp.gate_proj.weight", [64, 32]))
add("deepseek_v2", "un_gate", ("model.layers.0.mlp.gate.weight", [8, 32]))
add("qwen3_moe", "un_obias", ("model.layers.2.self_attn.o_proj.bias", [32]))
PY
for c in "un_e9:mixtral:model.layers.0.block_sparse_moe.experts.9.w1.weight' \(and 2 more\):an expert past the gate's rows" \
         "un_bias:mixtral:model.layers.0.self_attn.q_proj.bias':config\\.json's attention_bias is false or absent" \
         "un_dense:mixtral:model.layers.1.mlp.gate_proj.weight':block 1 is an MoE block by its architecture, whose blocks are all MoE" \
         "un_gate:deepseek_v2:model.layers.0.mlp.gate.weight':block 0 is dense by config.json's first_k_dense_replace" \
         "un_obias:qwen3_moe:model.layers.2.self_attn.o_proj.bias':config\\.json's attention_bias is false or absent"; do
    IFS=: read -r dir fam t why <<<"$c"
    expect_rc "$fam: a stray tensor ($dir) refused, saying why" 1 \
        "$dir: tensor '$t is not part of the network config\.json describes: nothing reads it \($why" \
        "$MOESCOPE" eval "$D/$dir" --eval "$D/ov_$fam/eval.safetensors"
done
# a block count that disagrees with the file: fewer (whole blocks left over, not
# "an expert past the gate's rows") or more (no such block, not a moe.layers key)
"$PYTHON" - "$D" <<'PY'
import json, shutil, sys
D = sys.argv[1]
for out, delta in (("nl_low", -1), ("nl_high", 1)):
    shutil.rmtree("%s/%s" % (D, out), ignore_errors=True)
    shutil.copytree(D + "/ov_mixtral", "%s/%s" % (D, out))
    c = json.load(open("%s/%s/config.json" % (D, out)))
    c["num_hidden_layers"] += delta
    json.dump(c, open("%s/%s/config.json" % (D, out), "w"))
PY
nl=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["num_hidden_layers"])' "$D/ov_mixtral/config.json")
expect_rc "mixtral: num_hidden_layers below the file's blocks names the count" 1 \
    "nl_low: tensor 'model\.layers\.$((nl - 1))\..* \(a block past config\.json's num_hidden_layers = $((nl - 1))\)" \
    "$MOESCOPE" eval "$D/nl_low" --eval "$D/ov_mixtral/eval.safetensors"
expect_rc "mixtral: num_hidden_layers above the file's blocks names the missing block" 1 \
    "nl_high: config\.json's num_hidden_layers = $((nl + 1)), but the checkpoint has no block $nl" \
    "$MOESCOPE" eval "$D/nl_high" --eval "$D/ov_mixtral/eval.safetensors"
# (11) a decoder's evaluation against MOESCOPE_MAX_MEMORY counts what its forward holds:
# the gated MLP's 2 intermediate_size per row of a worker's 512-token items (the check
# counted intermediate_size per token of one sequence, 6 here: 64 MiB a worker passed 48M)
"$PYTHON" - "$D" <<'PY'
import json, os, shutil, struct, sys
import numpy as np
D = sys.argv[1]
src, dst, F = D + "/ov_deepseek_v2", D + "/wide_ff", 16384
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
c = json.load(open(dst + "/config.json"))
c["intermediate_size"] = F
json.dump(c, open(dst + "/config.json", "w"))
raw = open(dst + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr, data = json.loads(raw[8:8 + n]), raw[8 + n:]
t = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], np.float32).reshape(v["shape"])
     for k, v in hdr.items() if k != "__metadata__"}
g = np.random.default_rng(1)
d = c["hidden_size"]
for k, shape in (("gate_proj", (F, d)), ("up_proj", (F, d)), ("down_proj", (d, F))):
    t["model.layers.0.mlp.%s.weight" % k] = (0.02 * g.standard_normal(shape)).astype(np.float32)
off, h, blobs = 0, {}, []
for k in sorted(t):
    b = np.ascontiguousarray(t[k]).tobytes()
    h[k] = {"dtype": "F32", "shape": list(t[k].shape), "data_offsets": [off, off + len(b)]}
    off += len(b)
    blobs.append(b)
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(dst + "/model.safetensors", "wb").write(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
PY
MOESCOPE_MAX_MEMORY=48M expect_rc "a decoder's gated MLP of 16384 over MOESCOPE_MAX_MEMORY=48M" 1 \
    "wide_ff on .*eval\.safetensors: an evaluation of 2 x 6 tokens \(d = 32, vocabulary 64\): needs .*over the memory limit of 48\.0 MiB" \
    "$MOESCOPE" eval "$D/wide_ff" --eval "$D/ov_deepseek_v2/eval.safetensors"
MOESCOPE_MAX_MEMORY=2G check "the same decoder within 2G" \
    "$MOESCOPE" eval "$D/wide_ff" --eval "$D/ov_deepseek_v2/eval.safetensors"
summary
