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
#  (4) n = 4096 (info) and n = 1024 (cost, diagnose) finish: no O(n^4) step (on the
#      release build, $MOESCOPE_REL: the same sweeps run under the sanitizers at n = 80);
#  (5) finite values whose arithmetic overflows are refused naming the input file and
#      tensor; absurd --alpha is a usage error; lap refuses overflowing totals and
#      matrices over its size limit (a 1.6 GB sparse file of zeros);
#  (6) a NUL byte in the JSON header, raw or escaped, is refused;
#  (7) unknown commands say so (with the nearest command), options blame the argument.
# Files come from tests/hostile/corpus/gen_hostile.py (generated here, nothing checked in).
# Memory bounds use /usr/bin/time -f %M (RSS, KiB; it includes OpenBLAS's per-thread
# buffers once an evaluation set is used); `timeout` is only a hang guard.
source "$(dirname "$0")/../lib/lib.sh"
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"
D=$WORK/h
mkdir -p "$D"
skip() { skip_part "$*"; }

$GEN ckpt "$D/A.safetensors" --seed 1 --n 4 --d 8 --h 16
$GEN ckpt "$D/B.safetensors" --seed 2 --n 4 --d 8 --h 16
$GEN evalset "$D/E.safetensors" --ckpt "$D/A.safetensors" --N 40
cp "$ROOT/tests/hostile/corpus/seed_cost.safetensors" "$D/C.safetensors"
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
# "-" is standard output too: no file named "-" is left behind
(cd "$D" && "$MOESCOPE" info "$A" --json - | $PYTHON -c 'import sys,json; s=sys.stdin.read(); json.loads(s[s.index("{"):])') \
    && pass || fail "info --json - into a pipe"
[ ! -e "$D/-" ] && pass || fail "info --json - made a file named '-'"

# ------------------------------------------------- generated hostile files
H=$WORK/gen
mkdir -p "$H"
$PYTHON "$TESTS_DIR/hostile/corpus/gen_hostile.py" make "$H" || fail "gen_hostile.py make"
# bounded NAME MAX_KIB PATTERN CMD...: CMD exits 1 with PATTERN on stderr, its peak RSS
# at most MAX_KIB (ASan's shadow memory adds a constant: the bound is doubled there)
is_asan() { local b; for b in "$@"; do [ -x "$b" ] && { grep -qa __asan_init "$b"; return; }; done; return 1; }
bounded() {
    local name=$1 max=$2 pat=$3; shift 3
    is_asan "$@" && max=$((max * 2 + 200000))
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
    is_asan "$@" && max=$((max * 2 + 200000))
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
bounded "MOESCOPE_MAX_MEMORY=1K" 100000 "A.safetensors: n = 4 experts of width d = 8 .* need Gram blocks for the expert cost: [0-9.]+ KiB, over the limit of 1.0 KiB" \
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

# (4) many experts: no O(n^4) diagnostics, no n LAP solves for the margin. info at
# n = 4096; cost and diagnose at n = 1024 (O(n^3); n^4 would be 10^12 steps)
bounded_ok "info, n = 4096" 400000 "$MOESCOPE_REL" info "$H/n4096_a.safetensors"
grep -q "gate differences .* apart" "$WORK/out" && pass || fail "info n = 4096 reports the gate differences"
bounded_ok "cost, n = 1024" 400000 "$MOESCOPE_REL" cost "$H/n1024_a.safetensors" "$H/n1024_b.safetensors" --json "$D/c1024.json"
grep -q "second best .* margin" "$WORK/out" && pass || fail "cost n = 1024 reports the margin"
bounded_ok "diagnose, n = 1024" 1000000 "$MOESCOPE_REL" diagnose "$H/n1024_a.safetensors" "$H/n1024_b.safetensors" \
    --eval "$H/n4096_eval.safetensors" --json "$D/d1024.json"
# the gate-difference sweep (n > 64) against numpy's exhaustive minimum
"$MOESCOPE" info "$H/n80.safetensors" --json "$D/n80.json" >/dev/null
$PYTHON - "$H/n80.safetensors" "$D/n80.json" <<'EOF' && pass || fail "gate differences (n = 80, swept) match numpy's n^4 minimum"
import json, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
def t(name):
    e = h[name]; o = e["data_offsets"]
    return np.frombuffer(b[8 + n + o[0]:8 + n + o[1]], dtype="<f4").reshape(e["shape"]).astype(np.float64)
r = np.concatenate([t("moe.gate.weight"), t("moe.gate.bias")[:, None]], axis=1)   # (n, d+1)
m = r.shape[0]
D = (r[:, None, :] - r[None, :, :]).reshape(m * m, -1)        # all ordered differences
keep = np.array([i != j for i in range(m) for j in range(m)])
D = D[keep]
best = np.inf
for s in range(0, len(D), 512):                                # pairs of distinct differences
    blk = np.sqrt(((D[s:s + 512, None, :] - D[None, :, :]) ** 2).sum(-1))
    for q in range(blk.shape[0]):
        blk[q, s + q] = np.inf
    best = min(best, blk.min())
g = json.load(open(sys.argv[2]))
find = lambda o: o if isinstance(o, dict) and "diff_min" in o else next(
    (x for v in (o.values() if isinstance(o, dict) else o if isinstance(o, list) else [])
     for x in [find(v)] if x is not None), None)
got = find(g)["diff_min"]
assert abs(got - best) <= 1e-9 * max(1, best), (got, best)
EOF

# (5) overflow and blame: finite values whose products overflow name the input
for f in big_1e18 big_3e38; do
    pat="$f.safetensors: tensor 'moe.experts.2.fc1.weight' holds values up to .* would overflow float32"
    expect_fail "landscape, $f" "$pat" "$MOESCOPE" landscape "$H/$f.safetensors" "$H/big_b.safetensors" --eval "$H/big_eval.safetensors"
    expect_fail "cost, $f" "$pat" "$MOESCOPE" cost "$H/big_b.safetensors" "$H/$f.safetensors"
    expect_fail "eval --dump-outputs, $f" "$pat" "$MOESCOPE" eval "$H/$f.safetensors" --eval "$H/big_eval.safetensors" --dump-outputs "$D/dump.st"
    expect_fail "info, $f" "$pat" "$MOESCOPE" info "$H/$f.safetensors"
done
[ ! -e "$D/dump.st" ] && pass || fail "eval wrote a dump of overflowing outputs"
expect_fail "eval, a head of 3.4e38" "big_head.safetensors: tensor 'head.out.weight' holds values up to 3.*e\+38 .*would overflow float32" \
    "$MOESCOPE" eval "$H/big_head.safetensors" --eval "$H/big_eval.safetensors"
for a in 1e20 1e308 -1e5; do
    "$MOESCOPE" merge "$A" "$B" --alpha $a -o "$D/m.st" >/dev/null 2>"$WORK/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "alpha $a is out of range" "$WORK/err" && pass || fail "merge --alpha $a: exit $rc, expected a usage error"
done
check "merge --alpha 2 (extrapolation) still works" "$MOESCOPE" merge "$A" "$B" --alpha 2 -o "$D/m.st"
expect_fail "lap: costs of 1e308" "lap_1e308.safetensors: tensor 'cost': \|cost\[0\]\[0\]\| = 1e\+308; a total of up to 3 such costs would overflow" \
    "$MOESCOPE" lap "$H/lap_1e308.safetensors"
bounded "lap: 1.6 GB sparse file of zeros" 100000 "lap_sparse.safetensors: tensor 'cost' is 20000 x 20000; lap takes at most 268435456 cells" \
    "$MOESCOPE" lap "$H/lap_sparse.safetensors"
rm -f "$H/lap_sparse.safetensors"

# (7) arguments: unknown commands (with the nearest), the argument that is to blame
expect_rc() { # expect_rc NAME RC PATTERN CMD...
    local name=$1 want=$2 pat=$3; shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne "$want" ]; then fail "$name: exit $rc, expected $want"; sed 's/^/    /' "$WORK/err" | tail -3
    elif ! grep -Eq -- "$pat" "$WORK/err"; then fail "$name: message does not match /$pat/:"; sed 's/^/    /' "$WORK/err" | tail -3
    else pass; fi
}
expect_rc "moescope frobnicate" 2 "unknown command 'frobnicate'" "$MOESCOPE" frobnicate
grep -q "did you mean" "$WORK/err" && fail "frobnicate: suggests a command that is not near" || pass
expect_rc "moescope landscpe A B" 2 "unknown command 'landscpe' \(did you mean 'landscape'\?\)" \
    "$MOESCOPE" landscpe "$A" "$B" --eval "$E"
expect_rc "moescope diagnos" 2 "did you mean 'diagnose'" "$MOESCOPE" diagnos "$A" "$B"
expect_rc "moescope info -dash.safetensors" 2 "info: unknown option '-d' in '-dash.safetensors' .*\./-dash.safetensors" \
    "$MOESCOPE" info -dash.safetensors
expect_rc "align -x" 2 "align: unknown option or missing argument '-x'" "$MOESCOPE" align -x "$A" "$B"
expect_rc "landscape --pointz" 2 "landscape: unknown option '--pointz'" "$MOESCOPE" landscape "$A" "$B" --pointz 3
expect_rc "info --json without a file" 2 "info: option '--json' needs an argument" "$MOESCOPE" info "$A" --json
# a file whose name starts with '-' works the documented ways
cp "$A" "$D/-dash.safetensors"
(cd "$D" && "$MOESCOPE" info ./-dash.safetensors >/dev/null && "$MOESCOPE" info -- -dash.safetensors >/dev/null) \
    && pass || fail "info ./-dash.safetensors and info -- -dash.safetensors"
# checkpoint paths still go to the explorer (which names the missing file), not 'unknown command'
expect_rc "moescope A missing.safetensors" 1 "missing.safetensors: cannot open" \
    timeout 60 "$MOESCOPE" "$A" "$D/missing.safetensors" --eval "$E" </dev/null

summary
