#!/usr/bin/env bash
# test_input.sh - hostile input, round three (issue 30, the input side):
#  (1) integer options are parsed whole and range-checked: 4294967299 is refused, not
#      wrapped to 3 (--points, --threads, --alpha-sweep, --samples, --seed, --size, ...);
#  (2) text from a file reaches the terminal escaped: info's metadata, layer prefixes,
#      error messages naming tensors and layers (no ESC, no C1 control, no raw \r, valid
#      UTF-8), and a message with a 1000-character path keeps its reason;
#  (3) config.json or the index a FIFO (or a device) is refused without blocking; an index
#      naming 60,000 shards opens at once (numbering them was quadratic), 80,000 is over
#      the documented cap of 65,536 shards;
#  (4) an input truncated while it is read (held at a phase by MOESCOPE_TEST_STALL, cut,
#      then resumed with SIGUSR1: no timing) is reported with the file and the tensor,
#      exit 1, no crash (SIGBUS), no temporary left, never blamed on the output (a
#      network's backbone compared with B's too; a decoder family's shard cut before the
#      command, and while its evaluation reads the experts in place from the mapping);
#  (6) a report's provenance hashes the shards that were opened, never the others (a FIFO
#      or a link to /dev/zero among them), and only regular files, bounded;
#  (7) messages that say what is wrong: -o a symlink to an empty directory, a missing shard
#      of unrelated tensors, a 248-character -o (legal) written;
#  (8) an evaluation set whose capture.layer names another layer is refused by eval,
#      landscape, curve, merge --eval, diagnose and study (--ignore-capture-layer allows it);
#      without --layer the layer it names is taken, and said;
#  (9) an expert of B stored in F32 that the alignment moves into a slot where B holds BF16
#      keeps its dtype (bytes exact: the output computes B's function); a merge that
#      rounds its averages into BF16 says so; scramble's shared experts keep theirs;
#  (10) fonts are never looked up in the current directory: a binary run where
#      ./assets/fonts holds a planted font does not read it;
#  (11) a network's block numbers past int (--layer, tensor names) are no block;
#  config.json's count of routed experts (num_experts, n_routed_experts, num_local_experts)
#      must be the router's rows (it was ignored: another model computed silently);
#  (5) outputs are written in bounded chunks (every write(2) at most 8 MiB, seen with
#      strace), so SIGTERM is acted on within one chunk, not after a multi-GB write;
#  (12) the newer commands and inputs under the same rules: `geometry` (its four outputs,
#      a capture of every layer's inputs, a network), network folders (GPT-2 and ViT, their
#      backbone shard a symlink to ../backbone.safetensors), `study` pools of network
#      folders, the explorer's export directory: no output over or inside an input, FIFOs
#      and devices refused or passed over by name, only the files read hashed, a capture
#      cut while read reported, names from files and directory listings escaped, a moved
#      F32 expert kept F32 in a ViT, the backbone shard linked as the file itself, another
#      block's capture refused, a file of 300 MoE layers refused by --layer all and the
#      geometry (at most 256 taken one by one).
# Files come from tests/hostile/corpus/gen_hostile.py (`make OUTDIR`) or are made here;
# hang guards use `timeout 60` and then check the message, never the time taken.
source "$(dirname "$0")/../lib/lib.sh"
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"
D=$WORK/in
mkdir -p "$D"
skip() { echo "test_input: skipped: $*"; }

$GEN ckpt "$D/A.safetensors" --seed 1 --n 4 --d 8 --h 16
$GEN ckpt "$D/B.safetensors" --seed 2 --n 4 --d 8 --h 16
$GEN evalset "$D/E.safetensors" --ckpt "$D/A.safetensors" --N 40
A=$D/A.safetensors B=$D/B.safetensors E=$D/E.safetensors

# ------------------------------------------------- (1) integer options
# usage errors (exit 2) naming the option, its range and the value as typed
expect_usage() { # NAME PATTERN CMD...
    local name=$1 pat=$2; shift 2
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne 2 ]; then fail "$name: exit $rc, expected 2"; sed 's/^/    /' "$WORK/err" | tail -3
    elif ! grep -Eq -- "$pat" "$WORK/err"; then fail "$name: message /$pat/ not in:"; sed 's/^/    /' "$WORK/err" | tail -3
    else pass; fi
}
LS=(landscape "$A" "$B" --eval "$E")
expect_usage "--points 2^32+3" "landscape: --points needs an integer in 3\.\.100000, not '4294967299'" \
    "$MOESCOPE" "${LS[@]}" --points 4294967299
expect_usage "--points 2^64+3" "--points needs an integer in 3\.\.100000, not '18446744073709551619'" \
    "$MOESCOPE" "${LS[@]}" --points 18446744073709551619
expect_usage "--points ' 5'" "--points needs an integer" "$MOESCOPE" "${LS[@]}" --points ' 5'
expect_usage "--threads 2^32+1" "--threads needs an integer in 1\.\.8, not '4294967297'" \
    "$MOESCOPE" "${LS[@]}" --threads 4294967297
expect_usage "--samples 2^32+1" "--samples needs an integer in 1\.\.1000000" \
    "$MOESCOPE" "${LS[@]}" --samples 4294967297
expect_usage "landscape --seed -1" "--seed needs an integer in 0\.\.18446744073709551615, not '-1'" \
    "$MOESCOPE" "${LS[@]}" --seed -1
expect_usage "scramble --seed -1" "scramble: --seed needs an integer in 0\.\." \
    "$MOESCOPE" scramble "$A" -o "$D/s.safetensors" --seed -1
expect_usage "scramble --seed 2^64" "scramble: --seed needs an integer" \
    "$MOESCOPE" scramble "$A" -o "$D/s.safetensors" --seed 18446744073709551616
expect_usage "--alpha-sweep 2^32+3" "merge: --alpha-sweep needs an integer in 2\.\.1001" \
    "$MOESCOPE" merge "$A" "$B" -o "$D/m.safetensors" --eval "$E" --alpha-sweep 4294967299
expect_usage "curve --points 2^32+3" "curve: --points needs an integer in 3\.\.100000" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --points 4294967299
expect_usage "diagnose --points 2^32+3" "diagnose: --points needs an integer in 3\.\.100000" \
    "$MOESCOPE" diagnose "$A" "$B" --eval "$E" --points 4294967299
expect_usage "eval --repeat 2^32+1" "eval: --repeat needs an integer in 1\.\.1000000" \
    "$MOESCOPE" eval "$A" --eval "$E" --repeat 4294967297
expect_usage "eval --threads 2^32+1" "eval: --threads needs an integer in 1\.\.8, not '4294967297'" \
    "$MOESCOPE" eval "$A" --eval "$E" --threads 4294967297
expect_usage "eval --threads 2^64+2" "eval: --threads needs an integer in 1\.\.8" \
    "$MOESCOPE" eval "$A" --eval "$E" --threads 18446744073709551618
expect_usage "--size 2^32+160 wide" "--size must be WxH" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --size 4294967456x600 --png "$D/c.png"
expect_usage "--font-scale 2^32+2" "--font-scale needs an integer in 1\.\.4" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --font-scale 4294967298 --png "$D/c.png"
expect_usage "--top-k 2^32+1" "--top-k needs an integer in 1\.\.4096, got '4294967297'" \
    "$MOESCOPE" info "$A" --top-k 4294967297
expect_usage "--n-group 2^32+2" "--n-group needs an integer in 1\.\.4096" \
    "$MOESCOPE" info "$A" --n-group 4294967298
# one range for every --points, refused before anything loads (the files do not exist)
for cmd in landscape curve diagnose study; do
    expect_usage "$cmd --points 2" "$cmd: --points needs an integer in 3\.\.100000, not '2'" \
        "$MOESCOPE" $cmd "$WORK/none-a" "$WORK/none-b" --eval "$WORK/none-e" --points 2
done
expect_usage "TUI --points 2" "--points needs an integer in 3\.\.100000, not '2'" \
    "$MOESCOPE" "$WORK/none-a" "$WORK/none-b" --points 2
expect_usage "TUI --points 2^32+3" "--points needs an integer in 3\.\.100000" \
    "$MOESCOPE" "$A" "$B" --points 4294967299
expect_usage "geometry --threads 2^32+1" "geometry: --threads needs an integer in 1\.\.8, not '4294967297'" \
    "$MOESCOPE" geometry "$A" --eval "$E" --threads 4294967297
expect_usage "geometry --seed 2^64" "geometry: --seed needs a non-negative integer, not '18446744073709551616'" \
    "$MOESCOPE" geometry "$A" --eval "$E" --seed 18446744073709551616
expect_usage "geometry --train-frac nan" "geometry: --train-frac needs a number between 0 and 1, not 'nan'" \
    "$MOESCOPE" geometry "$A" --eval "$E" --train-frac nan
expect_usage "geometry --font-scale 2^32+2" "--font-scale needs an integer in 1\.\.4" \
    "$MOESCOPE" geometry "$A" --eval "$E" --font-scale 4294967298 --angles-png "$D/g.png"
[ ! -e "$D/s.safetensors" ] && [ ! -e "$D/m.safetensors" ] && pass || fail "a refused command wrote its output"
# in range still runs
check "--points 3 --threads 1 --seed 18446744073709551615 run" \
    "$MOESCOPE" "${LS[@]}" --points 3 --threads 1 --seed 18446744073709551615

# ------------------------------------------------- (2) terminal injection
CORPUS=$ROOT/tests/hostile/corpus
# no control character but newline, no C1 control, valid UTF-8
clean_text() { $PYTHON -c '
import sys, re
b = open(sys.argv[1], "rb").read()
s = b.decode("utf-8")  # raises on invalid UTF-8
bad = re.findall("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", s)
sys.exit("control characters %r" % bad if bad else 0)' "$1"; }
"$MOESCOPE" info "$CORPUS/inject_meta.safetensors" >"$D/info.out" 2>"$D/info.err"
rc=$?
[ $rc -eq 0 ] && pass || fail "info inject_meta: exit $rc"
clean_text "$D/info.out" && pass || fail "info prints raw control bytes or invalid UTF-8 from the file"
clean_text "$D/info.err" && pass || fail "info's stderr holds raw control bytes"
grep -qF '\x1B]0;owned\x07key' "$D/info.out" && grep -qF '\x1B[2J\r\nmoescope: forged line' "$D/info.out" \
    && pass || fail "info: the escaped metadata key and value are not shown"
grep -qF '\xFF\xFE\xC0\xAF' "$D/info.out" && grep -qF '\xC2\x9B31mred' "$D/info.out" \
    && pass || fail "info: invalid UTF-8 and the C1 CSI not shown as \\xHH"
grep -qF 'evil\x1B[31m' "$D/info.out" && pass || fail "info: the hostile layer prefix is not listed escaped"
# error messages: the tensor and layer names from the file escaped
for cmd in info "cost $CORPUS/inject_layer.safetensors" "eval --eval $E"; do
    # shellcheck disable=SC2086
    "$MOESCOPE" $cmd "$CORPUS/inject_layer.safetensors" >"$D/o" 2>"$D/e"
    rc=$?
    [ $rc -eq 1 ] && pass || fail "$cmd inject_layer: exit $rc, expected 1"
    clean_text "$D/e" && pass || fail "$cmd inject_layer: raw control bytes in the message"
    grep -qF 'x\x1B]0;owned\x07\x1B[2J\r\nmoescope: forged' "$D/e" && pass || fail "$cmd inject_layer: the prefix not named escaped"
done
"$MOESCOPE" info "$CORPUS/inject_layer.safetensors" --layer "$(printf 'x\033]0;owned\007\033[2J\r\nmoescope: forged')" \
    >"$D/o" 2>"$D/e" && pass || fail "info --layer with the hostile prefix (given exactly) reads it"
clean_text "$D/o" && pass || fail "info of the hostile layer prints it raw"
# the commands that name the layers they wrote (scramble, align --layer all) escape them too
INJ=$CORPUS/inject_layer.safetensors
inj_prints() { # NAME CMD...: CMD runs and names the hostile layer escaped on stdout
    local name=$1; shift
    rm -rf "$D/inj_out"
    "$@" >"$D/o" 2>"$D/e" && pass || fail "$name: exit $? ($(tail -1 "$D/e"))"
    clean_text "$D/o" && grep -qF 'x\x1B]0;owned\x07\x1B[2J\r\nmoescope: forged' "$D/o" && pass \
        || fail "$name: the hostile layer printed raw (or not at all)"
}
inj_prints "scramble --layer all" "$MOESCOPE" scramble "$INJ" --layer all -o "$D/inj_out"
inj_prints "scramble --layer PREFIX" "$MOESCOPE" scramble "$INJ" -o "$D/inj_out" \
    --layer "$(printf 'x\033]0;owned\007\033[2J\r\nmoescope: forged')"
inj_prints "align --layer all" "$MOESCOPE" align "$INJ" "$INJ" --layer all --no-wm -o "$D/inj_out"

# diagnose names B's scramble seed, a string of the file: escaped
"$MOESCOPE" scramble "$A" -o "$D/s3.safetensors" --seed 3 >/dev/null 2>&1 || fail "scramble A"
$PYTHON - "$D/s3.safetensors" "$D/s3_evil.safetensors" <<'EOF' || fail "writing B with a hostile scramble seed"
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
h["__metadata__"]["moescope.scramble.seed"] = "3\x1b]0;owned\x07\x1b[2J"
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
EOF
"$MOESCOPE" diagnose "$A" "$D/s3_evil.safetensors" >"$D/o" 2>"$D/e"
grep -qF 'B is a scramble of A (seed 3\x1B]0;owned\x07\x1B[2J)' "$D/o" && clean_text "$D/o" && pass \
    || fail "diagnose: the scramble seed of B printed raw ($(grep -a 'scramble of A' "$D/o" | cat -v | cut -c1-120))"

# a 1000-character path: the reason survives
long=$D/$(printf 'p%.0s' $(seq 1 200))/$(printf 'q%.0s' $(seq 1 200))/$(printf 'r%.0s' $(seq 1 200))/$(printf 's%.0s' $(seq 1 200))/$(printf 't%.0s' $(seq 1 200))
expect_fail "1000-character missing directory: the reason kept" "does not exist" \
    "$MOESCOPE" align "$A" "$B" -o "$long/out.safetensors"
expect_fail "1000-character missing input: the reason kept" "cannot open: No such file or directory" \
    "$MOESCOPE" info "$long/in.safetensors"

# ------------------------------------------------- (3) non-regular config.json / index
mkdir -p "$D/fifo_cfg" "$D/fifo_idx" "$D/dev_cfg"
cp "$A" "$D/fifo_cfg/model.safetensors"
mkfifo "$D/fifo_cfg/config.json" "$D/fifo_idx/model.safetensors.index.json"
ln -s /dev/zero "$D/dev_cfg/config.json"
cp "$A" "$D/dev_cfg/model.safetensors"
expect_fail "config.json a FIFO" "fifo_cfg/config.json: is a FIFO; refusing to read it" \
    timeout 60 "$MOESCOPE" info "$D/fifo_cfg"
expect_fail "index a FIFO (the directory)" "model.safetensors.index.json: is a FIFO" \
    timeout 60 "$MOESCOPE" info "$D/fifo_idx"
expect_fail "index a FIFO (named)" "model.safetensors.index.json: is a FIFO" \
    timeout 60 "$MOESCOPE" cost "$D/fifo_idx/model.safetensors.index.json" "$B"
expect_fail "config.json a symlink to /dev/zero" "config.json: is a character device" \
    timeout 60 "$MOESCOPE" info "$D/dev_cfg"

$PYTHON "$ROOT/tests/hostile/corpus/gen_hostile.py" make3 "$D/g" >/dev/null
check "index of 60,000 shards: info" timeout 60 "$MOESCOPE" info "$D/g/shards_60k"
grep -q "model.layers.0.block_sparse_moe" "$WORK/out" && pass || fail "60,000 shards: the layer not shown"
expect_fail "index of 80,000 shards: over the cap" "names 80001 shard files, at most 65536 supported" \
    timeout 60 "$MOESCOPE" info "$D/g/shards_80k"

# ------------------------------------------------- (4) an input cut short while read
G3=$D/g
read -r gate_end layer_end big_start <"$G3/passthrough_big.offsets"
# run_stalled PHASE CMD...: CMD held at the phase PHASE; waits (up to 120 s) until it says
# so on stderr ($D/st.err); its pid in STALLED
run_stalled() {
    local phase=$1 i; shift
    # emptied here, not only by the child's redirection: the loop below may look before
    # the child opened it, see the previous run's line and signal too early (exit 138)
    : >"$D/st.err"
    MOESCOPE_TEST_STALL=$phase "$@" >"$D/st.out" 2>"$D/st.err" &
    STALLED=$!
    for ((i = 0; i < 1200; i++)); do
        grep -q "test stall" "$D/st.err" && return 0
        kill -0 $STALLED 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
# cut_while PHASE BYTES NAME PATTERN CMD...: truncate $D/P.safetensors to BYTES while CMD is
# held at PHASE, resume it; exit 1 with PATTERN on stderr and nothing left in $D/out
cut_while() {
    local phase=$1 bytes=$2 name=$3 pat=$4; shift 4
    rm -rf "$D/out"; mkdir -p "$D/out"
    cp "$G3/passthrough_big.safetensors" "$D/P.safetensors"
    if ! run_stalled "$phase" "$@"; then fail "$name: never reached '$phase'"; sed 's/^/    /' "$D/st.err" | tail -3; return; fi
    resume_cut "$name" "$pat" "$bytes" "$D/P.safetensors"
    [ -z "$(ls -A "$D/out")" ] && pass || fail "$name: left $(ls -A "$D/out")"
}
# resume_cut NAME PATTERN BYTES FILE...: truncate FILEs to BYTES while $STALLED is held,
# resume it; it exits 1 with PATTERN on stderr, no sanitizer report, not blamed on the output
resume_cut() {
    local name=$1 pat=$2 bytes=$3; shift 3
    truncate -s "$bytes" "$@"
    kill -USR1 $STALLED
    wait $STALLED
    local rc=$?
    if [ $rc -ne 1 ]; then fail "$name: exit $rc, expected 1"; sed 's/^/    /' "$D/st.err" | tail -3
    elif ! grep -Eq -- "$pat" "$D/st.err"; then fail "$name: message /$pat/ not in:"; sed 's/^/    /' "$D/st.err" | tail -3
    elif grep -q "Bad address\|Sanitizer\|runtime error" "$D/st.err"; then fail "$name: blamed on the output or a sanitizer report"
    else pass; fi
}
P=$D/P.safetensors
WHY="the file changed while being read \(67131496 bytes when opened"
cut_while "load P" "$gate_end" "scramble, cut while loading the layer" \
    "P\.safetensors: tensor 'moe\.experts\.[0-9]+\.[a-z0-9.]+': $WHY, $gate_end now" \
    "$MOESCOPE" scramble "$P" -o "$D/out/s.safetensors"
cut_while "write" "$layer_end" "scramble, cut while copying a small tensor" \
    "P\.safetensors: tensor 'extra\.small': $WHY, $layer_end now" \
    "$MOESCOPE" scramble "$P" -o "$D/out/s.safetensors"
cut_while "write" "$((big_start + (1 << 20)))" "scramble, cut inside a 64 MiB tensor" \
    "P\.safetensors: tensor 'extra\.big': $WHY" \
    "$MOESCOPE" scramble "$P" -o "$D/out/s.safetensors"
$GEN ckpt "$D/A4.safetensors" --seed 5 --n 4 --d 8 --h 16 --no-head
cut_while "write" "$layer_end" "align, B cut while its other tensors are copied" \
    "P\.safetensors: tensor 'extra\.small': $WHY" \
    "$MOESCOPE" align "$D/A4.safetensors" "$P" -o "$D/out/al.safetensors"
# a network's backbone compared with B's while B is cut (two copies of the corpus' network:
# distinct files, so their bytes are compared)
NC=$ROOT/tests/hostile/corpus
for n in na nb; do
    rm -rf "${D:?}/$n"; mkdir -p "$D/$n"
    cp "$NC/net_ok/config.json" "$D/$n/"; cp "$NC/net_model.safetensors" "$D/$n/model.safetensors"
done
if ! run_stalled "compare backbones" "$MOESCOPE" landscape "$D/na" "$D/nb" --eval "$NC/net_eval.safetensors"; then
    fail "network landscape: never reached 'compare backbones'"; sed 's/^/    /' "$D/st.err" | tail -3
else
    resume_cut "network landscape, B cut while the backbones are compared" \
        "nb/model\.safetensors: tensor 'transformer\.[a-z0-9_.]+': the file changed while being read \(9360 bytes when opened, 0 now" \
        0 "$D/nb/model.safetensors"
fi

# a decoder family's shard cut short: refused at open by every command, naming the shard
# and the tensor that runs past its end (align links an untouched shard only whole); and
# cut while the evaluation reads its experts in place from the mapping (no guard per read):
# the shard and the tensor named, exit 1, never a SIGBUS
FC=$D/famcut
rm -rf "$FC"; mkdir -p "$FC/out"
$PYTHON "$TESTS_DIR/lib/gen_decoders.py" --family qwen3_moe --out "$FC/a" --shards 2 --dtype bf16 >/dev/null
cp -r "$FC/a" "$FC/cut"
SH2=model-00002-of-00002.safetensors
truncate -s $(($(stat -c %s "$FC/a/$SH2") - 4000)) "$FC/cut/$SH2"
FE=$FC/a/eval.safetensors
CUT="cut/$SH2: truncated: data section is [0-9]+ bytes, tensor 'model\.layers\.[0-9]+\.[a-z_.]+weight' ends at [0-9]+"
for args in "eval CUT --eval $FE" "landscape A CUT --eval $FE --json OUT/l.json" "curve A CUT --eval $FE --csv OUT/c.csv" \
    "diagnose A CUT --eval $FE" "geometry CUT --eval $FE" "study A CUT --eval $FE" "align A CUT --layer all -o OUT/al" \
    "align A CUT --layer 0 -o OUT/al0" "scramble CUT -o OUT/s" "cost A CUT --layer 2" "info CUT --layer 2"; do
    a=${args//CUT/$FC/cut}; a=${a//A /$FC/a }; a=${a//OUT/$FC/out}
    # shellcheck disable=SC2086
    expect_fail "cut shard: ${args%% *}" "$CUT" "$MOESCOPE" $a
done
[ -z "$(ls -A "$FC/out")" ] && pass || fail "cut shard: outputs left: $(ls -A "$FC/out")"
rm -rf "$FC/live"; cp -r "$FC/a" "$FC/live"
if ! run_stalled "evaluation rows" "$MOESCOPE" eval "$FC/live" --eval "$FE" --json "$FC/out/e.json"; then
    fail "family eval: never reached 'evaluation rows'"; sed 's/^/    /' "$D/st.err" | tail -3
else
    resume_cut "family eval, shards cut while evaluated" \
        "live/model-0000[12]-of-00002\.safetensors: tensor 'model\.[a-z0-9_.]+': the file changed while being read \([0-9]+ bytes when opened" \
        0 "$FC/live/model-00001-of-00002.safetensors" "$FC/live/$SH2"
    [ -z "$(ls -A "$FC/out")" ] && pass || fail "family eval, shards cut: left $(ls -A "$FC/out")"
fi

# ------------------------------------------------- (5) bounded writes
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
    rm -rf "$D/out"; mkdir -p "$D/out"
    # LeakSanitizer does not run under ptrace
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -e trace=write -o "$D/strace.log" "$MOESCOPE" scramble "$G3/passthrough_big.safetensors" \
        -o "$D/out/s.safetensors" >/dev/null 2>&1 && pass || fail "scramble of the 64 MiB tensor under strace"
    biggest=$(sed -nE 's/.*write\([0-9]+, .*\) = ([0-9]+)$/\1/p' "$D/strace.log" | sort -n | tail -1)
    [ -n "$biggest" ] && [ "$biggest" -le $((8 << 20)) ] && pass \
        || fail "a write(2) of ${biggest:-?} bytes: over the 8 MiB chunk"
    [ "$(stat -c %s "$D/out/s.safetensors")" -gt $((64 << 20)) ] && pass || fail "the 64 MiB tensor not written"
else
    skip "strace not available (or not permitted): bounded writes not checked"
fi

# ------------------------------------------------- (6) provenance reads what was read
U=$D/g/unread_a
rm -f "$U/model-00002-of-00003.safetensors" "$U/model-00003-of-00003.safetensors"
mkfifo "$U/model-00002-of-00003.safetensors"
ln -s /dev/zero "$U/model-00003-of-00003.safetensors"
check "cost --json with a FIFO and /dev/zero among the unread shards" \
    timeout 60 "$MOESCOPE" cost "$U" "$D/g/unread_b" --json "$D/cost.json"
$PYTHON - "$D/cost.json" "$U" <<'EOF' && pass || fail "provenance of the folder: only the read shard and the index, config"
import json, sys
ins = {x["path"]: x for x in json.load(open(sys.argv[1]))["provenance"]["inputs"]}
files = ins[sys.argv[2]]["files"]
assert files == ["config.json", "model-00001-of-00003.safetensors", "model.safetensors.index.json"], files
assert ins[sys.argv[2]]["sha256"], ins[sys.argv[2]]
EOF
check "info --json with them" timeout 60 "$MOESCOPE" info "$U" --json "$D/info2.json"

# ------------------------------------------------- (7) clear messages
UB=$D/g/unread_b
mkdir -p "$D/empty_dir"
ln -s "$D/empty_dir" "$D/link_out"
expect_fail "align -o a symlink to an empty directory" "link_out: is a symbolic link; name the directory it points to" \
    "$MOESCOPE" align "$UB" "$UB" -o "$D/link_out"
[ -L "$D/link_out" ] && [ -z "$(ls -A "$D/empty_dir")" ] && pass || fail "the link or its directory changed"
cp -r "$UB" "$D/miss"
rm "$D/miss/model-00003-of-00003.safetensors"
expect_fail "align: a missing shard of unrelated tensors" \
    "index.json: shard 'model-00003-of-00003.safetensors' named in the index is missing" \
    "$MOESCOPE" align "$UB" "$D/miss" -o "$D/miss_out"
[ ! -e "$D/miss_out" ] && [ -z "$(find "$D" -maxdepth 1 -name 'miss_out.tmp*')" ] && pass || fail "missing shard: output or temporary left"
long248=$D/$(printf 'x%.0s' $(seq 1 236)).safetensors
check "align -o a 248-character name" "$MOESCOPE" align "$A" "$B" -o "$long248"
[ -f "$long248" ] && pass || fail "the 248-character output is not there"
long250=$D/$(printf 'y%.0s' $(seq 1 250))
check "align -o a 250-character directory name (sharded)" "$MOESCOPE" align "$UB" "$UB" -o "$long250"
[ -f "$long250/model.safetensors.index.json" ] && pass || fail "the 250-character output directory is not there"

# ------------------------------------------------- (8) capture.layer
# set_meta IN OUT KEY VALUE: IN with one more metadata entry
set_meta() { $PYTHON - "$@" <<'EOF'
import json, struct, sys
src, dst, key, val = sys.argv[1:5]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h.setdefault("__metadata__", {})[key] = val
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * ((8 - len(t) % 8) % 8)
open(dst, "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:])
EOF
}
set_meta "$E" "$D/E3.safetensors" capture.layer 3
CAP="E3\.safetensors: captured at layer 3 \(its capture\.layer metadata\), but the layer evaluated is 'moe'.*--ignore-capture-layer"
expect_fail "eval: capture.layer 3, layer moe" "$CAP" "$MOESCOPE" eval "$A" --eval "$D/E3.safetensors"
expect_fail "landscape: capture.layer 3" "$CAP" "$MOESCOPE" landscape "$A" "$B" --eval "$D/E3.safetensors" --points 3
expect_fail "curve: capture.layer 3" "$CAP" "$MOESCOPE" curve "$A" "$B" --eval "$D/E3.safetensors" --points 3
expect_fail "merge --eval: capture.layer 3" "$CAP" "$MOESCOPE" merge "$A" "$B" -o "$D/mg.safetensors" --eval "$D/E3.safetensors"
expect_fail "diagnose: capture.layer 3" "$CAP" "$MOESCOPE" diagnose "$A" "$B" --eval "$D/E3.safetensors"
expect_fail "study: capture.layer 3" "$CAP" "$MOESCOPE" study "$A" "$B" --eval "$D/E3.safetensors" --points 3
check "eval --ignore-capture-layer" "$MOESCOPE" eval "$A" --eval "$D/E3.safetensors" --ignore-capture-layer
check "landscape --ignore-capture-layer" "$MOESCOPE" landscape "$A" "$B" --eval "$D/E3.safetensors" --points 3 --ignore-capture-layer
# a family layer at block 0: capture.layer 0 fits, 1 does not
$PYTHON - "$UB/model-00001-of-00003.safetensors" "$D/EU.safetensors" <<'EOF'
import json, struct, sys, random
b = open(sys.argv[1], "rb").read()
d = 8  # the unread_* layers: n = 4, d = 8
rnd = random.Random(3)
x = struct.pack("<%df" % (16 * d), *[rnd.uniform(-1, 1) for _ in range(16 * d)])
h = {"__metadata__": {"capture.layer": "0"}, "inputs": {"dtype": "F32", "shape": [16, d], "data_offsets": [0, len(x)]}}
t = json.dumps(h, separators=(",", ":")).encode()
t += b" " * ((8 - len(t) % 8) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + x)
EOF
check "eval a block-0 layer on a capture.layer 0 set" "$MOESCOPE" eval "$UB" --eval "$D/EU.safetensors"
set_meta "$D/EU.safetensors" "$D/EU1.safetensors" capture.layer 1
expect_fail "eval a block-0 layer on a capture.layer 1 set" \
    "captured at layer 1 .*the layer evaluated is 'model\.layers\.0\.block_sparse_moe' \(block 0\)" \
    "$MOESCOPE" eval "$UB" --eval "$D/EU1.safetensors"

# ------------------------------------------------- (9) dtypes follow the experts
mkdir -p "$D/dt"
$PYTHON - "$D/dt" <<'EOF'
import json, os, random, struct, sys
out = sys.argv[1]
rnd = random.Random(9)
n, d, h = 4, 8, 8
P = "model.layers.0.block_sparse_moe"
def bf16(vals):  # round to nearest even, as bytes
    o = b""
    for v in vals:
        u = struct.unpack("<I", struct.pack("<f", v))[0]
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        o += struct.pack("<H", u)
    return o
def write(path, t):
    hd, off, data = {}, 0, b""
    for nm, dt, shape, raw in t:
        hd[nm] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw); data += raw
    s = json.dumps(hd, separators=(",", ":")).encode(); s += b" " * ((8 - len(s) % 8) % 8)
    open(path, "wb").write(struct.pack("<Q", len(s)) + s + data)
gate = [[rnd.uniform(-1, 1) for _ in range(d)] for _ in range(n)]
W = [{w: [rnd.uniform(-1, 1) for _ in range(h * d)] for w in ("w1", "w2", "w3")} for _ in range(n)]
def layer(order, f32_slot, noise):
    t = [(P + ".gate.weight", "BF16", [n, d], bf16(sum((gate[j] for j in order), [])))]
    for i, j in enumerate(order):
        for w in ("w1", "w2", "w3"):
            shape = [d, h] if w == "w2" else [h, d]
            v = W[j][w]
            if i == f32_slot:  # F32 values no BF16 holds
                t.append((P + ".experts.%d.%s.weight" % (i, w), "F32", shape,
                          struct.pack("<%df" % len(v), *[x * (1 + noise) for x in v])))
            else:
                t.append((P + ".experts.%d.%s.weight" % (i, w), "BF16", shape, bf16(v)))
    return t
write(os.path.join(out, "A.safetensors"), layer([0, 1, 2, 3], -1, 0))
# B: A's experts in the order 2 0 3 1, its slot 0 (A's expert 2) stored in F32
write(os.path.join(out, "B.safetensors"), layer([2, 0, 3, 1], 0, 1e-3))
EOF
check "align --no-wm of a B with an F32 expert among BF16 ones" \
    "$MOESCOPE" align "$D/dt/A.safetensors" "$D/dt/B.safetensors" -o "$D/dt/out.safetensors" --no-wm
grep -q "^order 1 3 0 2" "$WORK/out" && pass || fail "align found another order: $(grep '^order' "$WORK/out")"
$PYTHON - "$D/dt" <<'EOF' && pass || fail "the aligned output does not hold B's experts in their own dtypes"
import json, struct, sys, os
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items() if k != "__metadata__"}
B, O = load(os.path.join(sys.argv[1], "B.safetensors")), load(os.path.join(sys.argv[1], "out.safetensors"))
order = [1, 3, 0, 2]  # slot i of the output holds B's expert order[i]
for i, j in enumerate(order):
    for w in ("w1", "w2", "w3"):
        o = O["model.layers.0.block_sparse_moe.experts.%d.%s.weight" % (i, w)]
        b = B["model.layers.0.block_sparse_moe.experts.%d.%s.weight" % (j, w)]
        assert o == b, (i, j, w, o[0], b[0])
EOF
grep -q "rounded" "$WORK/out" && fail "align says it rounded values" || pass
# align --layer all alike: each layer's moved experts keep their dtypes
check "align --layer all --no-wm of the same pair" \
    "$MOESCOPE" align "$D/dt/A.safetensors" "$D/dt/B.safetensors" -o "$D/dt/all.safetensors" --no-wm --layer all
grep -q "rounded" "$WORK/out" && fail "align --layer all rounded values: $(grep rounded "$WORK/out")" || pass
cmp -s "$D/dt/out.safetensors" "$D/dt/all.safetensors" && pass \
    || fail "align --layer all wrote another file than the one-layer align"
check "merge of them rounds into BF16 and says so" \
    "$MOESCOPE" merge "$D/dt/A.safetensors" "$D/dt/B.safetensors" -o "$D/dt/merged.safetensors" --no-wm
grep -q "note: .*values rounded to the BF16/F16 of the tensors they are written in (relative RMS error" "$WORK/out" \
    && pass || fail "merge: no note of its rounding"

# scramble moves the shared experts too: each keeps its own dtype where it lands (a gpt2
# layer of three shared experts, the middle one BF16, the others F32)
$PYTHON - "$D/dts" <<'EOF' || fail "writing the layer of shared experts"
import json, os, random, struct, sys
out = sys.argv[1]
rnd = random.Random(12)
n, d, h, S = 3, 4, 4, 3
P = "transformer.h.0.mlp"
def f32(v): return struct.pack("<%df" % len(v), *v)
def bf16(vals):
    o = b""
    for v in vals:
        u = struct.unpack("<I", struct.pack("<f", v))[0]
        o += struct.pack("<H", (u + 0x7FFF + ((u >> 16) & 1)) >> 16)
    return o
vals = lambda k: [rnd.uniform(-1, 1) for _ in range(k)]
t = [(P + ".gate.weight", "F32", [n, d], f32(vals(n * d)))]
def mlp(pre, dt):
    enc = f32 if dt == "F32" else bf16
    return [(pre + ".c_fc.weight", dt, [d, h], enc(vals(d * h))), (pre + ".c_fc.bias", dt, [h], enc(vals(h))),
            (pre + ".c_proj.weight", dt, [h, d], enc(vals(h * d))), (pre + ".c_proj.bias", dt, [d], enc(vals(d)))]
for e in range(n): t += mlp(P + ".experts.%d" % e, "BF16")
for s in range(S): t += mlp(P + ".shared_experts.%d" % s, "BF16" if s == 1 else "F32")
hd, off, data = {}, 0, b""
for nm, dt, shape, raw in t:
    hd[nm] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}; off += len(raw); data += raw
s = json.dumps(hd, separators=(",", ":")).encode(); s += b" " * ((8 - len(s) % 8) % 8)
os.makedirs(out, exist_ok=True)
open(os.path.join(out, "model.safetensors"), "wb").write(struct.pack("<Q", len(s)) + s + data)
json.dump({"model_type": "gpt2", "n_embd": d, "moe": {"layers": [0], "num_experts": n, "top_k": 2,
           "num_shared_experts": S, "expert_activation": "relu", "expert_intermediate_size": h}},
          open(os.path.join(out, "config.json"), "w"))
EOF
sorder=
for seed in 1 2 3 4 5 6 7 8 9 10; do # a seed that moves the BF16 shared expert
    rm -rf "$D/dts_out"
    "$MOESCOPE" scramble "$D/dts" -o "$D/dts_out" --seed $seed >"$WORK/out" 2>&1 || break
    sorder=$(sed -n 's/^  shared order  //p' "$WORK/out")
    [ "$(cut -d' ' -f2 <<<"$sorder")" != 1 ] && break
done
[ -n "$sorder" ] && [ "$(cut -d' ' -f2 <<<"$sorder")" != 1 ] && pass \
    || fail "scramble of the shared experts: no seed moved shared expert 1 ($sorder; $(tail -1 "$WORK/out"))"
$PYTHON - "$D/dts/model.safetensors" "$D/dts_out/model.safetensors" "$sorder" <<'EOF' \
    && pass || fail "scramble: a shared expert moved did not keep its dtype and values (order $sorder)"
import json, struct, sys
def load(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        raw = b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
        if v["dtype"] == "F32": vals = struct.unpack("<%df" % (len(raw) // 4), raw)
        else: vals = [struct.unpack("<f", struct.pack("<I", u << 16))[0] for u in struct.unpack("<%dH" % (len(raw) // 2), raw)]
        out[k] = (v["dtype"], sorted(vals))  # a hidden permutation keeps the values, not their places
    return out
src, dst = load(sys.argv[1]), load(sys.argv[2])
P = "transformer.h.0.mlp.shared_experts."
for j, i in enumerate(int(x) for x in sys.argv[3].split()):
    for w in ("c_fc.weight", "c_fc.bias", "c_proj.weight", "c_proj.bias"):
        a, b = src[P + "%d.%s" % (i, w)], dst[P + "%d.%s" % (j, w)]
        assert a == b, ("slot %d holds shared expert %d: %s is %s, was %s" % (j, i, w, b[0], a[0]))
EOF

# ------------------------------------------------- (10) no fonts from the current directory
mkdir -p "$D/bin" "$D/cwd/assets/fonts"
cp "$MOESCOPE" "$D/bin/moescope"
printf 'STARTFONT 2.1\nplanted\n' >"$D/cwd/assets/fonts/9x15.bdf"
cp "$D/cwd/assets/fonts/9x15.bdf" "$D/cwd/assets/fonts/9x18B.bdf"
(cd "$D/cwd" && MOESCOPE_ASSETS= "$D/bin/moescope" curve "$A" "$B" --eval "$E" --points 3 --png "$D/f.png") \
    >/dev/null 2>"$D/font.err"
if grep -q "font '9x15.bdf' not found" "$D/font.err" && ! grep -Eq "(: |, )\./assets/fonts" "$D/font.err"; then pass
else fail "fonts: a font planted in ./assets/fonts was looked for or read: $(grep -v warning "$D/font.err" | head -1)"; fi

# ------------------------------------------------- (11) a network's block numbers
# a block number past int in --layer or in a tensor name is no block (sscanf's %d took
# 4294967296 as block 0: --layer picked it, and a tensor named so was left out of the
# backbone the two networks must share)
expect_fail "network --layer transformer.h.2^32.mlp" "no MoE block 'transformer\.h\.4294967296\.mlp'" \
    "$MOESCOPE" eval "$NC/net_ok" --eval "$NC/net_eval.safetensors" --layer transformer.h.4294967296.mlp
check "network --layer transformer.h.0.mlp" \
    "$MOESCOPE" eval "$NC/net_ok" --eval "$NC/net_eval.safetensors" --layer transformer.h.0.mlp
rm -rf "${D:?}/nx"; mkdir -p "$D/nx"; cp "$NC/net_ok/config.json" "$D/nx/"
$PYTHON - "$NC/net_model.safetensors" "$D/nx/model.safetensors" <<'EOF' || fail "writing the network with an extra tensor"
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
h["transformer.h.4294967296.mlp.extra"] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:] + struct.pack("<f", 1.0))
EOF
# (a tensor nothing reads is refused since issue 41.5: named as itself, not as block 0's)
expect_fail "network B with a tensor of block 2^32" \
    "nx: tensor 'transformer\.h\.4294967296\.mlp\.extra' is not part of the network" \
    "$MOESCOPE" landscape "$NC/net_ok" "$D/nx" --eval "$NC/net_eval.safetensors"

# a backbone tensor's name in the note that the backbones differ: escaped
rm -rf "${D:?}/ne"; mkdir -p "$D/ne"; cp "$NC/net_ok/config.json" "$D/ne/"
$PYTHON - "$NC/net_model.safetensors" "$D/ne/model.safetensors" <<'EOF' || fail "writing the network with a hostile tensor name"
import json, struct, sys
b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
end = max(v["data_offsets"][1] for k, v in h.items() if k != "__metadata__")
h["evil\x1b]0;owned\x07\x1b[2J\r\nmoescope: forged"] = {"dtype": "F32", "shape": [1], "data_offsets": [end, end + 4]}
t = json.dumps(h).encode(); t += b" " * (-len(t) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(t)) + t + b[8 + n:] + struct.pack("<f", 1.0))
EOF
expect_fail "network landscape --interpolate-backbone, B with a hostile extra tensor" "is not part of the network" \
    "$MOESCOPE" landscape "$NC/net_ok" "$D/ne" --eval "$NC/net_eval.safetensors" --interpolate-backbone --points 3
grep -qF "tensor 'evil\x1B]0;owned\x07\x1B[2J\r\nmoescope: forged' is not part" "$WORK/err" \
    && clean_text "$WORK/err" && pass || fail "the unused tensor's name not escaped ($(cat -v "$WORK/err"))"


# ------------------------------------------------- (12) the newer commands and inputs
GP=$D/gp VP=$D/vp
$PYTHON "$TESTS_DIR/lib/gen_gpt2.py" "$GP" --moe all --seeds 1,2,3 --N 8 --T 12 >/dev/null || fail "gen_gpt2 pool"
$PYTHON "$TESTS_DIR/lib/gen_vit.py" "$VP" --moe all --seeds 1,2 >/dev/null || fail "gen_vit pool"
GE=$GP/eval.safetensors
mkdir -p "$D/pristine12"
cp -L "$GP/backbone.safetensors" "$GE" "$GP/seed1/config.json" "$D/pristine12/"
unchanged() { cmp -s "$GP/backbone.safetensors" "$D/pristine12/backbone.safetensors" && cmp -s "$GE" "$D/pristine12/eval.safetensors" \
    && cmp -s "$GP/seed1/config.json" "$D/pristine12/config.json"; }
# no output over or inside a network input: the shared backbone (another name for every
# seed's model-00001 shard), the evaluation set, a file inside a seed's folder
ANOTHER="is the file 'model-00001-of-00002\.safetensors' of the input checkpoint"
INSIDE="is inside the folder of the input checkpoint"
expect_fail "geometry --json over the backbone" "--json .*backbone\.safetensors: $ANOTHER" \
    "$MOESCOPE" geometry "$GP/seed1" --eval "$GE" --json "$GP/backbone.safetensors"
expect_fail "geometry --csv in a seed's folder" "--csv .*seed1/g\.csv: $INSIDE" \
    "$MOESCOPE" geometry "$GP/seed1" --eval "$GE" --csv "$GP/seed1/g.csv"
expect_fail "geometry --angles-png over the evaluation set" "--angles-png .*: refusing to overwrite the input" \
    "$MOESCOPE" geometry "$GP/seed1" --eval "$GE" --angles-png "$GE"
expect_fail "geometry --r2-png over the seed's config.json" "--r2-png .*seed1/config\.json: $INSIDE" \
    "$MOESCOPE" geometry "$GP/seed1" --eval "$GE" --r2-png "$GP/seed1/config.json"
expect_fail "study of a pool: --csv over the backbone" "$ANOTHER" \
    "$MOESCOPE" study "$GP/seed1" "$GP/seed2" --eval "$GE" --points 3 --csv "$GP/backbone.safetensors"
expect_fail "study DIR: --json in a seed's folder" "--json .*seed3/s\.json: $INSIDE" \
    "$MOESCOPE" study "$GP" --points 3 --json "$GP/seed3/s.json"
expect_fail "cost of ViTs: --json over the ViT backbone" "$ANOTHER" \
    "$MOESCOPE" cost "$VP/seed1" "$VP/seed2" --json "$VP/backbone.safetensors"
expect_fail "scramble a ViT: -o over the backbone" "$ANOTHER" \
    "$MOESCOPE" scramble "$VP/seed1" -o "$VP/backbone.safetensors"
# the explorer's export directory: refused before the screen and before anything is made
expect_fail "explorer --out-dir in A's folder" "--out-dir .*seed1/exports: $INSIDE .*seed1" \
    "$MOESCOPE" "$GP/seed1" "$GP/seed2" --out-dir "$GP/seed1/exports"
expect_fail "explorer --out-dir into B's folder by another way" "--out-dir .*: $INSIDE .*seed2" \
    "$MOESCOPE" "$GP/seed1" "$GP/seed2" --out-dir "$GP/nothing/../seed2/x/y"
ln -s seed1 "$GP/link1"
expect_fail "explorer --out-dir through a symlink to A's folder" "--out-dir .*link1/e: $INSIDE" \
    "$MOESCOPE" "$GP/seed1" "$GP/seed2" --out-dir "$GP/link1/e"
rm "$GP/link1"
[ ! -e "$GP/seed1/exports" ] && [ ! -e "$GP/nothing" ] && [ ! -e "$GP/seed2/x" ] && [ ! -e "$GP/seed1/e" ] && pass \
    || fail "a refused export directory was made: $(ls "$GP" "$GP/seed1" "$GP/seed2" | tr '\n' ' ')"
unchanged && pass || fail "a network input changed"
[ -z "$(ls "$GP/seed1" | grep -v '^config.json$\|^model')" ] && pass || fail "a file joined seed1: $(ls "$GP/seed1")"

# a ViT's config.json a FIFO, a capture a FIFO or /dev/zero, an evaluation set beside A a FIFO
cp -rL "$VP/seed1" "$D/vfifo"
rm "$D/vfifo/config.json"; mkfifo "$D/vfifo/config.json"
expect_fail "ViT config.json a FIFO" "vfifo/config\.json: is a FIFO; refusing to read it" \
    timeout 60 "$MOESCOPE" eval "$D/vfifo" --eval "$VP/eval.safetensors"
mkfifo "$D/cap_fifo.safetensors"; ln -s /dev/zero "$D/cap_zero.safetensors"
expect_fail "geometry: the capture a FIFO" "cap_fifo\.safetensors: not a regular file" \
    timeout 60 "$MOESCOPE" geometry "$GP/seed1" --eval "$D/cap_fifo.safetensors"
expect_fail "geometry: the capture /dev/zero" "cap_zero\.safetensors: not a regular file" \
    timeout 60 "$MOESCOPE" geometry "$GP/seed1" --eval "$D/cap_zero.safetensors"
mkdir -p "$D/fe"; cp -rL "$GP/seed1" "$D/fe/s1"; mkfifo "$D/fe/eval.safetensors"
expect_usage "eval.safetensors beside A a FIFO: named, passed over" "eval: --eval E is required" \
    timeout 60 "$MOESCOPE" eval "$D/fe/s1"
grep -q "note: .*fe/eval\.safetensors beside .*fe/s1 is a FIFO, not a regular file: not used as the evaluation set" \
    "$WORK/err" && pass || fail "the FIFO beside A not named: $(head -1 "$WORK/err")"
# a pool's seed folder whose config.json is a FIFO: left out with that reason
cp -a "$GP" "$D/gp2"
rm "$D/gp2/seed3/config.json"; mkfifo "$D/gp2/seed3/config.json"
check "study DIR with a seed's config.json a FIFO" timeout 120 "$MOESCOPE" study "$D/gp2" --points 3
grep -q "left out: .*gp2/seed3 (.*gp2/seed3/config\.json: is a FIFO; refusing to read it" "$WORK/out" && pass \
    || fail "the broken seed not left out with its reason: $(grep 'left out' "$WORK/out" | tr '\n' ' ')"

# geometry's provenance: the files the network was read from, not a FIFO or /dev/zero beside
cp -a "$GP" "$D/gp3"
mkfifo "$D/gp3/seed1/extra.fifo"; ln -s /dev/zero "$D/gp3/seed1/zero.safetensors"
check "geometry --json with a FIFO and /dev/zero in the seed's folder" \
    timeout 120 "$MOESCOPE" geometry "$D/gp3/seed1" --eval "$D/gp3/eval.safetensors" --json "$D/geo.json" --no-transport
$PYTHON - "$D/geo.json" "$D/gp3/seed1" <<'EOF' && pass || fail "geometry's provenance: not the files read"
import json, sys
ins = {x["path"]: x for x in json.load(open(sys.argv[1]))["provenance"]["inputs"]}
assert ins[sys.argv[2]]["files"] == ["config.json", "model-00001-of-00002.safetensors",
                                     "model-00002-of-00002.safetensors", "model.safetensors.index.json"], ins
EOF

# geometry on a capture (any checkpoint's layers, here a native file's two layers with
# hostile prefixes): the prefixes escaped; the capture cut while read is reported
TESTS_DIR=$TESTS_DIR $PYTHON - "$D/g12" <<'EOF' || fail "writing the capture-mode files"
import os, sys
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], d) for d in ("lib", "oracle")]
import numpy as np, gen_ckpt, oracle
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
prefs = ["x\x1b]0;owned\x07\x1b[2J\r\nmoescope: forged", "b\u00e9,\u202e\x01y"]
t = {}
for l, pf in enumerate(prefs):
    tl, meta = gen_ckpt.make_layer(1 + l, n=4, d=8, h=4, router="topk", k=2, head=False, prefix=pf)
    t.update(tl)
oracle.write_safetensors(os.path.join(out, "two.safetensors"), t, meta)
x = np.random.default_rng(0).standard_normal((3000, 8))
oracle.write_safetensors(os.path.join(out, "cap.safetensors"), {"inputs." + pf: x + l for l, pf in enumerate(prefs)})
EOF
check "geometry on a capture, hostile layer names" "$MOESCOPE" geometry "$D/g12/two.safetensors" --eval "$D/g12/cap.safetensors"
clean_text "$WORK/out" && grep -qF 'x\x1B]0;owned\x07\x1B[2J\r\nmoescope: forged' "$WORK/out" && pass \
    || fail "geometry prints the file's layer names raw ($(grep -a owned "$WORK/out" | head -1 | cat -v))"
cp "$D/g12/cap.safetensors" "$D/g12/cut.safetensors"
if run_stalled "geometry: layers" "$MOESCOPE" geometry "$D/g12/two.safetensors" --eval "$D/g12/cut.safetensors"; then
    truncate -s 4096 "$D/g12/cut.safetensors"
    kill -USR1 $STALLED
    wait $STALLED
    rc=$?
    [ $rc -eq 1 ] && grep -q "cut\.safetensors: tensor 'inputs\..*': the file changed while being read ([0-9]* bytes when opened, 4096 now" \
        "$D/st.err" && pass || { fail "geometry, the capture cut while read: exit $rc"; tail -2 "$D/st.err"; }
else
    fail "geometry: never reached 'geometry: layers'"
fi
# study DIR: its pool is named by the directory's listing; the table escapes the names
mkdir -p "$D/pool"
cp -rL "$GP/seed1" "$D/pool/s1$(printf '\033]0;owned\007')"
cp -rL "$GP/seed2" "$D/pool/s2$(printf '\033[2J\r\nforged')"
cp "$GE" "$D/pool/eval.safetensors"
check "study of a pool with hostile folder names" "$MOESCOPE" study "$D/pool" --points 3
clean_text "$WORK/out" && grep -qF 's1\x1B]0;owned\x07 / s2\x1B[2J\r\nforged' "$WORK/out" && pass \
    || fail "study prints the pool's names raw ($(grep -a ' / ' "$WORK/out" | head -1 | cat -v))"

# a ViT aligned: the F32 expert among BF16 ones stays F32 where it lands; the backbone
# shard of the output is the file (a hard link), not the seed's relative symlink
$PYTHON - "$VP" <<'EOF' || fail "writing the ViT with an F32 expert"
import json, os, shutil, struct, sys
pool = sys.argv[1]
def bf16(raw):
    return b"".join(struct.pack("<H", ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF) for (u,) in struct.iter_unpack("<I", raw))
for src, dst, keep in (("seed1", "dtA", None), ("seed2", "dtB", ".experts.1.")):
    shutil.copytree(os.path.join(pool, src), os.path.join(pool, dst), symlinks=True)
    p = os.path.join(pool, dst, "model-00002-of-00002.safetensors")
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); data = b[8 + n:]
    out, off, hd = b"", 0, {}
    for k, v in h.items():
        if k == "__metadata__": hd[k] = v; continue
        raw, dt = data[v["data_offsets"][0]:v["data_offsets"][1]], v["dtype"]
        if ".experts." in k and not (keep and keep in k): raw, dt = bf16(raw), "BF16"
        hd[k] = {"dtype": dt, "shape": v["shape"], "data_offsets": [off, off + len(raw)]}
        out += raw; off += len(raw)
    s = json.dumps(hd).encode(); s += b" " * (-len(s) % 8)
    open(p, "wb").write(struct.pack("<Q", len(s)) + s + out)
EOF
check "align --layer all of ViTs, B's expert 1 F32 among BF16" \
    "$MOESCOPE" align "$VP/dtA" "$VP/dtB" -o "$D/vit_al" --no-wm --layer all
$PYTHON - "$VP/dtB" "$D/vit_al" "$WORK/out" <<'EOF' && pass || fail "the ViT's moved experts did not keep their dtypes"
import json, re, struct, sys
def hdr(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; return json.loads(b[8:8 + n])
B = hdr(sys.argv[1] + "/model-00002-of-00002.safetensors"); O = hdr(sys.argv[2] + "/model-00002-of-00002.safetensors")
orders = {int(m.group(1)): [int(x) for x in m.group(2).split()]
          for m in re.finditer(r"layer vit\.encoder\.layer\.(\d)\.moe: order ([\d ]+?)  ", open(sys.argv[3]).read())}
assert sorted(orders) == [0, 1], orders
assert any(o != sorted(o) for o in orders.values()), orders  # an expert moved
f32 = 0
for L, order in orders.items():
    for i, j in enumerate(order):  # slot i holds B's expert j
        for w in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
            o, b = O["vit.encoder.layer.%d.moe.experts.%d.%s" % (L, i, w)], B["vit.encoder.layer.%d.moe.experts.%d.%s" % (L, j, w)]
            assert o["dtype"] == b["dtype"], (L, i, j, w, o["dtype"], b["dtype"])
            f32 += o["dtype"] == "F32"
assert f32 == 8, f32
EOF
sh=$D/vit_al/model-00001-of-00002.safetensors
[ -f "$sh" ] && [ ! -L "$sh" ] && [ "$(stat -c %i "$sh")" = "$(stat -c %i "$VP/backbone.safetensors")" ] && pass \
    || fail "the ViT output's backbone shard is not the file itself ($(ls -la "$sh" 2>&1))"
check "the aligned ViT evaluates" "$MOESCOPE" eval "$D/vit_al" --eval "$VP/eval.safetensors"

# a network's MoE block evaluated on another block's captured inputs: refused
TESTS_DIR=$TESTS_DIR $PYTHON - "$D/cap_l2.safetensors" <<'EOF' || fail "writing the capture of block 2"
import os, sys
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], "oracle")]
import numpy as np, oracle
oracle.write_safetensors(sys.argv[1], {"inputs": np.random.default_rng(2).standard_normal((40, 16))}, {"capture.layer": "2"})
EOF
expect_fail "network eval --layer 0 on block 2's capture" "cap_l2\.safetensors: captured at layer 2 .*'transformer\.h\.0\.mlp' \(block 0\)" \
    "$MOESCOPE" eval "$GP/seed1" --layer 0 --eval "$D/cap_l2.safetensors"
# without --layer: the layer the capture names, said
"$MOESCOPE" eval "$GP/seed1" --eval "$D/cap_l2.safetensors" >"$D/cap.out" 2>"$D/cap.err" \
    && grep -q "layer transformer.h.2.mlp" "$D/cap.out" && grep -q "the one the evaluation set was captured at" "$D/cap.err" \
    && pass || fail "network eval on block 2's capture without --layer: block 2, said ($(cat "$D/cap.err"))"
check "network eval --layer transformer.h.2.mlp on it" \
    "$MOESCOPE" eval "$GP/seed1" --layer transformer.h.2.mlp --eval "$D/cap_l2.safetensors"

# a file of 300 tiny MoE layers: --layer all rewrote the checkpoint once per layer and the
# geometry compares every pair (3000 layers of a 4 MB file ran for hours): refused
TESTS_DIR=$TESTS_DIR $PYTHON - "$D/many" <<'EOF' || fail "writing the file of 300 layers"
import os, sys
sys.path[:0] = [os.path.join(os.environ["TESTS_DIR"], d) for d in ("lib", "oracle")]
import numpy as np, gen_ckpt, oracle
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
t = {}
for l in range(300):
    tl, meta = gen_ckpt.make_layer(1 + l, n=3, d=4, h=1, router="topk", k=1, head=False, prefix="l%d" % l)
    t.update(tl)
oracle.write_safetensors(os.path.join(out, "m.safetensors"), t, meta)
rng = np.random.default_rng(0)
oracle.write_safetensors(os.path.join(out, "cap.safetensors"), {"inputs.l%d" % l: rng.standard_normal((20, 4)) for l in range(300)})
EOF
MANY="m\.safetensors holds 300 MoE layers"
expect_fail "scramble --layer all of 300 layers" "$MANY: --layer all takes at most 256 \(each is written in turn\)" \
    timeout 120 "$MOESCOPE" scramble "$D/many/m.safetensors" --layer all -o "$D/many/s.safetensors"
expect_fail "align --layer all of 300 layers" "$MANY: --layer all takes at most 256" \
    timeout 120 "$MOESCOPE" align "$D/many/m.safetensors" "$D/many/m.safetensors" --layer all -o "$D/many/a.safetensors"
expect_fail "geometry of 300 layers" "$MANY: the routing geometry compares at most 256" \
    timeout 120 "$MOESCOPE" geometry "$D/many/m.safetensors" --eval "$D/many/cap.safetensors"
[ "$(ls "$D/many")" = "$(printf 'cap.safetensors\nm.safetensors')" ] && pass || fail "300 layers: something written: $(ls -A "$D/many")"
check "scramble --layer l7 of them" "$MOESCOPE" scramble "$D/many/m.safetensors" --layer l7 -o "$D/many/one.safetensors"

# config.json's count of routed experts against the router's rows (the count was
# ignored: config.json's model and the one computed differed, silently)
C=$ROOT/tests/hostile/corpus
for c in qwen3:qwen3_moe:num_experts:4:8 deepseek_v3:deepseek_v3:n_routed_experts:8:4 gpt_oss:gpt_oss:num_local_experts:4:2; do
    IFS=: read -r f mt key have say <<<"$c"
    mkdir -p "$D/count_$f"
    cp "$C/cfg_model_$f.safetensors" "$D/count_$f/model.safetensors"
    echo "{\"model_type\": \"$mt\", \"$key\": $say}" >"$D/count_$f/config.json"
    expect_fail "$mt: $key = $say beside a router of $have rows" \
        "count_$f/config\.json: key '$key' = $say, but in .*count_$f the router of 'model\.layers\.0\.mlp' has $have rows \(experts\)" \
        "$MOESCOPE" info "$D/count_$f"
    echo "{\"model_type\": \"$mt\", \"$key\": $have}" >"$D/count_$f/config.json"
    check "$mt: $key = $have, as the router" "$MOESCOPE" info "$D/count_$f"
done

summary
