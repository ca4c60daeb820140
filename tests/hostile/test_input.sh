#!/usr/bin/env bash
# test_input.sh - hostile input, round three (issue 30, the input side):
#  (1) integer options are parsed whole and range-checked: 4294967299 is refused, not
#      wrapped to 3 (--points, --threads, --alpha-sweep, --samples, --seed, --size, ...).
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
expect_usage "curve --points 2^32+3" "curve: --points needs an integer in 2\.\.100000" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --points 4294967299
expect_usage "diagnose --points 2^32+3" "diagnose: --points needs an integer in 2\.\.10000" \
    "$MOESCOPE" diagnose "$A" "$B" --eval "$E" --points 4294967299
expect_usage "eval --repeat 2^32+1" "eval: --repeat needs an integer in 1\.\.1000000" \
    "$MOESCOPE" eval "$A" --eval "$E" --repeat 4294967297
expect_usage "--size 2^32+160 wide" "--size must be WxH" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --size 4294967456x600 --png "$D/c.png"
expect_usage "--font-scale 2^32+2" "--font-scale needs an integer in 1\.\.4" \
    "$MOESCOPE" curve "$A" "$B" --eval "$E" --font-scale 4294967298 --png "$D/c.png"
expect_usage "--top-k 2^32+1" "--top-k needs an integer in 1\.\.4096, got '4294967297'" \
    "$MOESCOPE" info "$A" --top-k 4294967297
expect_usage "--n-group 2^32+2" "--n-group needs an integer in 1\.\.4096" \
    "$MOESCOPE" info "$A" --n-group 4294967298
expect_usage "TUI --points 2^32+3" "--points needs an integer in 2\.\.10001" \
    "$MOESCOPE" "$A" "$B" --points 4294967299
[ ! -e "$D/s.safetensors" ] && [ ! -e "$D/m.safetensors" ] && pass || fail "a refused command wrote its output"
# in range still runs
check "--points 3 --threads 1 --seed 18446744073709551615 run" \
    "$MOESCOPE" "${LS[@]}" --points 3 --threads 1 --seed 18446744073709551615

summary
