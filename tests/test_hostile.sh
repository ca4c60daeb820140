#!/usr/bin/env bash
# test_hostile.sh - hostile inputs and outputs, round two (issue 17):
#  (1) an output path that is a character device or FIFO is written directly and
#      keeps its node; a block device or socket is refused and left alone;
#      /dev/stdout writes through the caller's descriptor. Private nodes made with
#      mknod in a temporary directory (never the machine's /dev/null); skipped
#      where mknod is not permitted.
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

summary
