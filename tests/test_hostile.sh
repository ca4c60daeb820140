#!/usr/bin/env bash
# test_hostile.sh - hostile inputs and outputs, round two (issue 17):
#  (1) an output path that is a character device or FIFO is written directly and
#      keeps its node; a block device or socket is refused and left alone;
#      /dev/stdout writes through the caller's descriptor. Private nodes made with
#      mknod in a temporary directory (never the machine's /dev/null); skipped
#      where mknod is not permitted.
#  (2) derived allocations (the h x h weight-matching matrix, ...) are bounded from the
#      shapes before allocating: refused with exit 1, the file, the tensor and the bytes
#      named, in bounded memory;
#  (3) 99,000 expert names and 90,000 metadata keys do not make lookups quadratic;
#      400,000 keys are refused; metadata survives align;
#  (6) a NUL byte in the JSON header, raw or escaped, is refused.
# Files come from tests/corpus/gen_hostile.py (generated here, nothing checked in).
# Memory bounds use /usr/bin/time -f %M (RSS, KiB); `timeout` is only a hang guard.
source "$(dirname "$0")/lib.sh"
GEN="$PYTHON $TESTS_DIR/gen_ckpt.py"
D=$WORK/h
mkdir -p "$D"
skip() { echo "test_hostile: skipped: $*"; }

$GEN ckpt "$D/A.safetensors" --seed 1 --n 4 --d 8 --h 16
$GEN ckpt "$D/B.safetensors" --seed 2 --n 4 --d 8 --h 16
$GEN evalset "$D/E.safetensors" --ckpt "$D/A.safetensors" --N 40
cp "$ROOT/tests/corpus/seed_cost.safetensors" "$D/C.safetensors"
A=$D/A.safetensors B=$D/B.safetensors E=$D/E.safetensors C=$D/C.safetensors

# ------------------------------------------------- (1) non-regular output paths
# Every (command, output option) that writes a file; OUT is replaced by the node.
WRITERS=(
    "info $A --json OUT"
    "eval $A --eval $E --json OUT"
    "eval $A --eval $E --dump-outputs OUT"
    "cost $A $B --json OUT"
    "align $A $B -o OUT"
    "merge $A $B -o OUT"
    "scramble $A -o OUT"
    "curve $A $B --eval $E --points 5 --png OUT"
    "curve $A $B --eval $E --points 5 --csv OUT"
    "landscape $A $B --eval $E --points 5 --json OUT"
    "landscape $A $B --eval $E --points 5 --csv OUT"
    "landscape $A $B --eval $E --points 5 --png OUT"
    "lap $C --json OUT"
    "diagnose $A $B --eval $E --json OUT"
)
run_to() { # run_to NODE "cmd args with OUT"
    local node=$1 args=${2//OUT/$1}
    # shellcheck disable=SC2086
    timeout 120 "$MOESCOPE" $args
}
node_id() { stat -c '%F %t:%T' "$1"; }

if mknod "$D/null" c 1 3 2>/dev/null && mknod "$D/full" c 1 7 2>/dev/null; then
    before=$(node_id "$D/null")
    for w in "${WRITERS[@]}"; do
        if run_to "$D/null" "$w" >/dev/null 2>"$WORK/err"; then pass
        else fail "char device output: $w: exit $?"; sed 's/^/    /' "$WORK/err" | tail -3; fi
        [ "$(node_id "$D/null")" = "$before" ] && pass || fail "char device replaced by: $w"
    done
    [ -z "$(find "$D" -maxdepth 1 -name '.*.tmp*')" ] && pass || fail "temporary left beside the device"
    # a device that refuses writes: the error is reported, the node kept
    expect_fail "align -o a full device" "full: write failed: No space left on device" \
        "$MOESCOPE" align "$A" "$B" -o "$D/full"
    [ "$(stat -c %F "$D/full")" = "character special file" ] && pass || fail "/dev/full-like node replaced"
    # two outputs into one character device are not 'the same file'
    check "landscape --json and --csv both into a null device" \
        "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$D/null" --csv "$D/null"
    # block device: a number no driver has (240 is reserved for local use), refused before
    # any work, the node untouched
    if mknod "$D/blk" b 240 0 2>/dev/null; then
        bb=$(node_id "$D/blk")
        for w in "align $A $B -o OUT" "cost $A $B --json OUT" "landscape $A $B --eval $E --points 5 --png OUT"; do
            expect_fail "block device output: $w" "blk: is a block device; refusing" run_to "$D/blk" "$w"
            [ "$(node_id "$D/blk")" = "$bb" ] && pass || fail "block device replaced by: $w"
        done
    else skip "block device (mknod b not permitted)"; fi
else
    skip "character devices (mknod not permitted)"
fi

# a socket: refused
$PYTHON -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$D/sock"
expect_fail "socket output" "sock: is a socket; refusing" "$MOESCOPE" scramble "$A" -o "$D/sock"
[ -S "$D/sock" ] && pass || fail "socket replaced"

# a FIFO: streamed to its reader, byte-identical to the regular file, still a FIFO
mkfifo "$D/fifo"
"$MOESCOPE" scramble "$A" -o "$D/reg.safetensors" --seed 3 >/dev/null
for w in "scramble $A -o OUT --seed 3"; do
    timeout 120 cat "$D/fifo" >"$D/from_fifo" &
    reader=$!
    check "FIFO output: $w" run_to "$D/fifo" "$w"
    wait $reader
    cmp -s "$D/from_fifo" "$D/reg.safetensors" && pass || fail "FIFO reader got other bytes than the file"
    [ -p "$D/fifo" ] && pass || fail "FIFO replaced"
done

# /dev/stdout: through the caller's descriptor (here a regular file), never renamed over
"$MOESCOPE" cost "$A" "$B" --json /dev/stdout >"$D/stdout.txt" 2>"$WORK/err"
rc=$?
[ $rc -eq 0 ] && pass || fail "cost --json /dev/stdout: exit $rc"
$PYTHON - "$D/stdout.txt" <<'EOF' && pass || fail "cost --json /dev/stdout: text then the JSON document"
import json, sys
s = open(sys.argv[1]).read()
i = s.index("{\n")
d = json.loads(s[i:])
assert "matrix" in d and "order" in d, d.keys()
assert "cost matrix" in s[:i]
EOF
[ -L /dev/stdout ] && pass || fail "/dev/stdout is no longer a symlink"
"$MOESCOPE" info "$A" --json /dev/stdout | $PYTHON -c 'import sys; s=sys.stdin.read(); assert "\"n\"" in s' \
    && pass || fail "info --json /dev/stdout into a pipe"

# ------------------------------------------------- generated hostile files
H=$WORK/gen
mkdir -p "$H"
$PYTHON "$TESTS_DIR/corpus/gen_hostile.py" make "$H" || fail "gen_hostile.py make"
IS_ASAN=0
grep -qa __asan_init "$MOESCOPE" && IS_ASAN=1
# bounded NAME MAX_KIB PATTERN CMD...: CMD exits 1 with PATTERN on stderr, its peak RSS
# at most MAX_KIB (ASan's shadow memory adds a constant: the bound is doubled there)
bounded() {
    local name=$1 max=$2 pat=$3; shift 3
    [ $IS_ASAN = 1 ] && max=$((max * 2 + 200000))
    /usr/bin/time -f "%M" -o "$WORK/rss" timeout 600 "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne 1 ]; then fail "$name: exit $rc, expected 1"; sed 's/^/    /' "$WORK/err" | tail -5
    elif ! grep -Eq -- "$pat" "$WORK/err"; then fail "$name: message does not match /$pat/:"; sed 's/^/    /' "$WORK/err" | tail -5
    else pass; fi
    local rss; rss=$(tail -1 "$WORK/rss")
    [ "${rss:-0}" -le "$max" ] 2>/dev/null && pass || fail "$name: peak RSS ${rss} KiB over ${max} KiB"
}
# the same, expecting success
bounded_ok() {
    local name=$1 max=$2; shift 2
    [ $IS_ASAN = 1 ] && max=$((max * 2 + 200000))
    /usr/bin/time -f "%M" -o "$WORK/rss" timeout 600 "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [ $rc -eq 0 ] && pass || { fail "$name: exit $rc"; sed 's/^/    /' "$WORK/err" | tail -5; }
    local rss; rss=$(tail -1 "$WORK/rss")
    [ "${rss:-0}" -le "$max" ] 2>/dev/null && pass || fail "$name: peak RSS ${rss} KiB over ${max} KiB"
}

# (2) memory amplification: h = 2^15 in 262 KB (8 GiB h x h), h = 2^20 in 8 MB (8 TiB)
WM_MSG="h_2_15.safetensors: h = 32768 \(tensor 'moe.experts.0.fc1.weight'\) needs an h x h weight-matching matrix: 8.0 GiB, over the limit"
bounded "align h = 2^15" 100000 "$WM_MSG" "$MOESCOPE" align "$H/h_2_15.safetensors" "$H/h_2_15.safetensors" -o "$D/x.st"
bounded "merge h = 2^15" 100000 "$WM_MSG" "$MOESCOPE" merge "$H/h_2_15.safetensors" "$H/h_2_15.safetensors" -o "$D/x.st"
bounded "align h = 2^20" 150000 "h_2_20.safetensors: h = 1048576 .*8.0 TiB, over the limit" \
    "$MOESCOPE" align "$H/h_2_20.safetensors" "$H/h_2_20.safetensors" -o "$D/x.st"
bounded "landscape h = 2^20" 150000 "h_2_20.safetensors: h = 1048576 .*8.0 TiB" \
    "$MOESCOPE" landscape "$H/h_2_20.safetensors" "$H/h_2_20.safetensors" --eval "$H/big_eval.safetensors"
bounded "diagnose h = 2^15" 100000 "$WM_MSG" \
    "$MOESCOPE" diagnose "$H/h_2_15.safetensors" "$H/h_2_15.safetensors" --eval "$H/big_eval.safetensors"
[ ! -e "$D/x.st" ] && pass || fail "a refused align wrote its output"
# the limit is lowered by MOESCOPE_MAX_MEMORY (and the message says what it is)
bounded "MOESCOPE_MAX_MEMORY=1K" 100000 "A.safetensors: n = 4 experts of width d = 8 .* need 2n Gram matrices for the expert cost: 4.7 KiB, over the limit of 1.0 KiB" \
    env MOESCOPE_MAX_MEMORY=1K "$MOESCOPE" align "$A" "$B" -o "$D/x.st"
# info on h = 2^15 needs no h x h matrix (Gram distances): it works, in bounded memory
bounded_ok "info h = 2^15" 100000 "$MOESCOPE" info "$H/h_2_15.safetensors"

# (3) quadratic lookups: 99,000 expert names; metadata keys
bounded "99,000 expert names" 400000 "many_experts.safetensors: 'moe.gate.weight' has 2 rows \(experts\) but the file holds 99000 experts" \
    "$MOESCOPE" info "$H/many_experts.safetensors"
bounded "400,000 metadata keys" 400000 "meta_400k.safetensors: __metadata__ has 400000 entries, at most 100000" \
    "$MOESCOPE" info "$H/meta_400k.safetensors"
bounded_ok "info, 90,000 metadata keys" 300000 "$MOESCOPE" info "$H/meta_90k.safetensors"
grep -q "k089999 *v89999" "$WORK/out" && pass || fail "info shows the last metadata key"
bounded_ok "align, 90,000 metadata keys" 300000 \
    "$MOESCOPE" align "$H/meta_90k.safetensors" "$H/meta_90k_b.safetensors" -o "$D/meta.st"
$PYTHON - "$D/meta.st" <<'EOF' && pass || fail "align keeps B's 90,000 metadata keys, sorted, unique"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
meta = json.loads(b[8:8 + n])["__metadata__"]
keys = [k for k in meta if k.startswith("k")]
assert len(keys) == 90000 and meta["k012345"] == "w12345", len(keys)
raw = b[8:8 + n].decode()
assert raw.index('"k000000"') < raw.index('"k089999"') < raw.index('"moescope.align.order"')
EOF

# (6) NUL in the header
expect_fail "raw NUL in a metadata key" "nul_raw.safetensors: header contains a NUL byte" \
    "$MOESCOPE" info "$H/nul_raw.safetensors"
expect_fail "escaped \\u0000 in a metadata key" "nul_escaped.safetensors: header contains the escape .u0000" \
    "$MOESCOPE" info "$H/nul_escaped.safetensors"

summary
