#!/usr/bin/env bash
# test_faults.sh - hostile inputs and I/O faults (issue 8): every writing command
#  (a) refuses an output that is one of its inputs (also through a symlink or a hard
#      link) and leaves the input byte-identical;
#  (b) under a file-size limit (`ulimit -f`, EFBIG) and on a full tmpfs (ENOSPC) exits
#      non-zero with a clear message, the existing destination byte-identical, no
#      temporary left behind;
#  (c) names a missing output directory;
#  (d) reads read-only inputs; fails cleanly on a read-only directory (a read-only
#      bind mount, since root ignores permission bits);
#  (e) SIGKILLed in the middle of a large write leaves the old output intact;
#  (f) the TUI survives its checkpoints being replaced and truncated while it runs;
# and the limits: hostile files of tests/hostile/corpus/models.tsv are refused without large
# allocations, and the landscape of n = 10 experts is sampled and says so.
source "$(dirname "$0")/../lib/lib.sh"
GEN="$PYTHON $TESTS_DIR/lib/gen_ckpt.py"
D=$WORK/f
mkdir -p "$D"

sha() { sha256sum "$1" | cut -d' ' -f1; }
# temporaries af_open leaves in a directory (".<base>.tmpXXXXXX")
temps() { find "$1" -maxdepth 1 -name '.*.tmp*' | wc -l; }
skip() { skip_part "$*"; }
mark() { echo "test_faults: ${SECONDS}s"; }
IS_ASAN=0
grep -qa __asan_init "$MOESCOPE" && IS_ASAN=1

$GEN ckpt "$D/A.safetensors" --seed 1 --n 4 --d 8 --h 16
$GEN ckpt "$D/B.safetensors" --seed 2 --n 4 --d 8 --h 16
$GEN evalset "$D/E.safetensors" --ckpt "$D/A.safetensors" --N 40
# medium pair: its checkpoints (~70 KB) are larger than the 16 KB file-size limit below
$GEN ckpt "$D/MA.safetensors" --seed 3 --n 4 --d 32 --h 64
$GEN ckpt "$D/MB.safetensors" --seed 4 --n 4 --d 32 --h 64
cp "$ROOT/tests/hostile/corpus/seed_cost.safetensors" "$D/C.safetensors"
A=$D/A.safetensors B=$D/B.safetensors E=$D/E.safetensors C=$D/C.safetensors
mkdir -p "$WORK/pristine"
cp "$A" "$B" "$E" "$C" "$WORK/pristine/"
# put the fixtures back (in place: the links stay valid) after a command damaged one
restore() { local f; for f in A B E C; do cat "$WORK/pristine/$f.safetensors" >"$D/$f.safetensors"; done; }
ln -s A.safetensors "$D/symA.safetensors"
ln "$A" "$D/hardA.safetensors"
ln -s "$E" "$D/symE.safetensors"

# ---------------------------------------------------------------- (a) output = input
# refuse NAME VICTIM CMD...: CMD fails with "refusing to overwrite" and VICTIM is unchanged
refuse() {
    local name=$1 victim=$2; shift 2
    local before; before=$(sha "$victim")
    expect_fail "$name: refused" "refusing to overwrite" "$@"
    if [ "$(sha "$victim")" = "$before" ]; then pass; else fail "$name: $victim was changed"; fi
}
refuse "info --json A" "$A" "$MOESCOPE" info "$A" --json "$A"
refuse "info --json symlink to A" "$A" "$MOESCOPE" info "$A" --json "$D/symA.safetensors"
refuse "info --json hard link to A" "$A" "$MOESCOPE" info "$A" --json "$D/hardA.safetensors"
refuse "eval --json E" "$E" "$MOESCOPE" eval "$A" --eval "$E" --json "$E"
refuse "eval --json symlink to E" "$E" "$MOESCOPE" eval "$A" --eval "$E" --json "$D/symE.safetensors"
refuse "eval --dump-outputs A" "$A" "$MOESCOPE" eval "$A" --eval "$E" --dump-outputs "$A"
refuse "eval --dump-outputs hard link" "$A" "$MOESCOPE" eval "$A" --eval "$E" --dump-outputs "$D/hardA.safetensors"
expect_fail "eval: --json and --dump-outputs the same file" "same file" \
    "$MOESCOPE" eval "$A" --eval "$E" --json "$D/x.out" --dump-outputs "$D/x.out"
refuse "scramble -o A" "$A" "$MOESCOPE" scramble "$A" -o "$A"
refuse "scramble -o symlink" "$A" "$MOESCOPE" scramble "$A" -o "$D/symA.safetensors"
refuse "scramble -o hard link" "$A" "$MOESCOPE" scramble "$A" -o "$D/hardA.safetensors"
refuse "cost --json B" "$B" "$MOESCOPE" cost "$A" "$B" --json "$B"
refuse "cost --json hard link to A" "$A" "$MOESCOPE" cost "$A" "$B" --json "$D/hardA.safetensors"
refuse "align -o B" "$B" "$MOESCOPE" align "$A" "$B" -o "$B"
refuse "align -o symlink to A" "$A" "$MOESCOPE" align "$A" "$B" -o "$D/symA.safetensors"
refuse "merge -o A" "$A" "$MOESCOPE" merge "$A" "$B" -o "$A"
refuse "merge -o hard link" "$A" "$MOESCOPE" merge "$A" "$B" -o "$D/hardA.safetensors"
# every writing command is built: a broken --help fails here instead of skipping its checks
for cmd in info eval scramble cost align merge lap curve landscape diagnose train; do
    check "$cmd --help exits 0" "$MOESCOPE" "$cmd" --help
done
refuse "lap --json C" "$C" "$MOESCOPE" lap "$C" --json "$C"
refuse "curve --png E" "$E" "$MOESCOPE" curve "$A" "$B" --eval "$E" --png "$E"
refuse "curve --csv symlink to A" "$A" "$MOESCOPE" curve "$A" "$B" --eval "$E" --csv "$D/symA.safetensors"
refuse "landscape --json B" "$B" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$B"
refuse "landscape --csv E" "$E" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --csv "$E"
refuse "landscape --png hard link" "$A" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --png "$D/hardA.safetensors"
refuse "diagnose --json A" "$A" "$MOESCOPE" diagnose "$A" "$B" --eval "$E" --json "$A"
# the lesson writes its steps' files into --dir: never over an input, never over a file
# of the user's under a step's name (only a lesson's directory, marked, is rewritten)
mkdir -p "$D/les"
cp "$A" "$D/les/scrambled_A.safetensors"
refuse "lesson A=DIR/scrambled_A.safetensors --dir DIR" "$D/les/scrambled_A.safetensors" \
    "$MOESCOPE" lesson "$D/les/scrambled_A.safetensors" "$B" --eval "$E" --dir "$D/les" --print
mkdir -p "$D/les1"
cp "$B" "$D/les1/top1_A.safetensors"
before=$(sha "$D/les1/top1_A.safetensors")
expect_fail "lesson --dir holding a file of the user's under a step's name" \
    "lesson: .*les1/top1_A\.safetensors is there and .*les1 is no lesson's directory \(no \.moescope-lesson in it\)" \
    "$MOESCOPE" lesson "$A" "$B" --eval "$E" --dir "$D/les1" --print
[ "$(sha "$D/les1/top1_A.safetensors")" = "$before" ] && [ "$(ls -A "$D/les1")" = top1_A.safetensors ] && pass \
    || fail "lesson: the user's top1_A.safetensors was replaced (or the directory marked)"
check "lesson into a new directory" "$MOESCOPE" lesson "$A" "$B" --eval "$E" --dir "$D/les2" --print
check "the lesson again into its own directory" "$MOESCOPE" lesson "$A" "$B" --eval "$E" --dir "$D/les2" --print
[ -f "$D/les2/.moescope-lesson" ] && [ -f "$D/les2/top1_A.safetensors" ] && pass || fail "lesson: its directory unmarked"
mkdir -p "$D/lesA"; cp "$A" "$D/lesA/model.safetensors"
expect_fail "lesson --dir inside A's folder" "lesson: --dir .*lesA/steps: is inside the folder of the input checkpoint" \
    "$MOESCOPE" lesson "$D/lesA" "$B" --eval "$E" --dir "$D/lesA/steps" --print
[ ! -e "$D/lesA/steps" ] && pass || fail "lesson: its directory made inside A's folder"
TD=$ROOT/sample-checkpoints/digits.safetensors TP=$ROOT/sample-checkpoints/pretrained.safetensors
HAVE_TRAIN=0
check "sample-checkpoints/digits.safetensors and pretrained.safetensors exist" test -f "$TD" -a -f "$TP"
if [ -f "$TD" ] && [ -f "$TP" ]; then
    HAVE_TRAIN=1
    cp "$TD" "$D/digits.safetensors"
    cp "$TP" "$D/pre.safetensors"
    TD=$D/digits.safetensors TP=$D/pre.safetensors
    # (the copies are put back after each, so one failure does not cascade)
    trestore() { cp "$ROOT/sample-checkpoints/digits.safetensors" "$TD"; cp "$ROOT/sample-checkpoints/pretrained.safetensors" "$TP"; }
    refuse "train -o the data" "$TD" "$MOESCOPE" train --data "$TD" --head "$TP" -o "$TD" --epochs 1 --quiet
    trestore
    refuse "train -o the pretrained head" "$TP" "$MOESCOPE" train --data "$TD" --head "$TP" -o "$TP" --epochs 1 --quiet
    trestore
    refuse "train --eval-out the data" "$TD" "$MOESCOPE" train --data "$TD" --head "$TP" -o "$D/t.safetensors" --eval-out "$TD" --epochs 1 --quiet
    trestore
fi

restore

mark
# ---------------------------------------------------------------- (b) full disk
# fsz NAME BLOCKS DEST CMD...: with `ulimit -f BLOCKS` (KiB), CMD writing over the
# existing DEST fails with "File too large"; DEST unchanged; no temporary left.
fsz() {
    local name=$1 blocks=$2 dest=$3; shift 3
    local before; before=$(sha "$dest")
    local err rc
    err=$( (ulimit -f "$blocks"; exec "$@" 2>&1 >/dev/null) )
    rc=$?
    if [ $rc -eq 0 ]; then fail "$name: exit 0 under ulimit -f $blocks"
    elif [ $rc -ge 128 ]; then fail "$name: killed by a signal (exit $rc)"
    elif grep -q "Sanitizer\|runtime error" <<<"$err"; then fail "$name: sanitizer report"; echo "$err" | tail -5
    elif ! grep -q "File too large" <<<"$err"; then fail "$name: message lacks 'File too large': $err"
    else pass; fi
    if [ "$(sha "$dest")" = "$before" ]; then pass; else fail "$name: destination changed"; fi
    local nt; nt=$(temps "$(dirname "$dest")")
    if [ "$nt" -eq 0 ]; then pass; else fail "$name: $nt temporary file(s) left"; find "$(dirname "$dest")" -name '.*.tmp*' -delete; fi
}
OLD=$D/old
mkdir -p "$OLD"
cp "$A" "$OLD/out.safetensors"
echo '{"old": true}' >"$OLD/out.json"
echo 'old,csv' >"$OLD/out.csv"
cp "$A" "$OLD/out.png" # any existing bytes
OS=$OLD/out.safetensors OJ=$OLD/out.json OC=$OLD/out.csv OP=$OLD/out.png
fsz "scramble, 16 KiB limit" 16 "$OS" "$MOESCOPE" scramble "$D/MA.safetensors" -o "$OS"
fsz "align, 16 KiB limit" 16 "$OS" "$MOESCOPE" align "$D/MA.safetensors" "$D/MB.safetensors" -o "$OS"
fsz "merge, 16 KiB limit" 16 "$OS" "$MOESCOPE" merge "$D/MA.safetensors" "$D/MB.safetensors" -o "$OS"
fsz "eval --dump-outputs" 0 "$OS" "$MOESCOPE" eval "$A" --eval "$E" --dump-outputs "$OS"
fsz "eval --json" 0 "$OJ" "$MOESCOPE" eval "$A" --eval "$E" --json "$OJ"
fsz "info --json" 0 "$OJ" "$MOESCOPE" info "$A" --json "$OJ"
fsz "cost --json" 0 "$OJ" "$MOESCOPE" cost "$A" "$B" --json "$OJ"
fsz "lap --json" 0 "$OJ" "$MOESCOPE" lap "$C" --json "$OJ"
fsz "curve --png" 0 "$OP" "$MOESCOPE" curve "$A" "$B" --eval "$E" --points 5 --png "$OP"
fsz "curve --csv" 0 "$OC" "$MOESCOPE" curve "$A" "$B" --eval "$E" --points 5 --csv "$OC"
fsz "landscape --json" 0 "$OJ" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$OJ"
fsz "landscape --csv" 0 "$OC" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --csv "$OC"
fsz "landscape --png" 0 "$OP" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --png "$OP"
fsz "diagnose --json" 0 "$OJ" "$MOESCOPE" diagnose "$A" "$B" --eval "$E" --json "$OJ"
[ $HAVE_TRAIN = 1 ] && fsz "train -o" 16 "$OS" "$MOESCOPE" train --data "$TD" --head "$TP" -o "$OS" --epochs 1 --quiet
# the same commands succeed without the limit (the failures above were the limit's)
check "scramble without the limit" "$MOESCOPE" scramble "$D/MA.safetensors" -o "$OS"
check "its output loads" "$MOESCOPE" info "$OS"

# ENOSPC: a 256 KiB tmpfs, filled up, in a private mount namespace (needs root or
# user namespaces; skipped otherwise)
if unshare -m true 2>/dev/null; then
    mkdir -p "$WORK/full"
    cp "$A" "$WORK/old_full.safetensors"
    unshare -m bash -c '
        set -u
        mount -t tmpfs -o size=256k tmpfs "$1" || exit 90
        cp "$2" "$1/out.safetensors"
        sha256sum "$1/out.safetensors" | cut -d" " -f1 >"$5/full_before"
        dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null  # until the disk is full
        "$3" scramble "$4" -o "$1/out.safetensors" >/dev/null 2>"$5/full_err"
        echo $? >"$5/full_rc"
        sha256sum "$1/out.safetensors" | cut -d" " -f1 >"$5/full_after"
        find "$1" -maxdepth 1 -name ".*.tmp*" | wc -l >"$5/full_temps"
    ' _ "$WORK/full" "$WORK/old_full.safetensors" "$MOESCOPE" "$D/MA.safetensors" "$WORK"
    if [ -f "$WORK/full_rc" ]; then
        rc=$(cat "$WORK/full_rc")
        if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "No space left on device" "$WORK/full_err"; then pass
        else fail "full tmpfs: exit $rc, message: $(cat "$WORK/full_err")"; fi
        check "full tmpfs: destination unchanged" cmp -s "$WORK/full_before" "$WORK/full_after"
        check "full tmpfs: no temporary left" test "$(cat "$WORK/full_temps")" -eq 0
    else
        skip "ENOSPC (cannot mount a tmpfs here)"
    fi
else
    skip "ENOSPC (no mount namespace: not root and no user namespaces)"
fi

mark
# ---------------------------------------------------------------- (c) missing directory
expect_fail "scramble into a missing directory" "nodir.*does not exist" \
    "$MOESCOPE" scramble "$A" -o "$D/nodir/out.safetensors"
expect_fail "info --json into a missing directory" "nodir.*does not exist" \
    "$MOESCOPE" info "$A" --json "$D/nodir/info.json"
expect_fail "cost --json into a missing directory" "nodir.*does not exist" \
    "$MOESCOPE" cost "$A" "$B" --json "$D/nodir/cost.json"
# an existing directory is a directory-like -o: the checkpoint folder, which must be empty
expect_fail "output path is a non-empty directory" "is not empty" "$MOESCOPE" align "$A" "$B" -o "$D"
expect_fail "--json is a directory" "is a directory" "$MOESCOPE" cost "$A" "$B" --json "$D"
check "nothing created for the missing directory" test ! -e "$D/nodir"

mark
# ---------------------------------------------------------------- (d) read-only
cp "$A" "$D/ro.safetensors"
chmod 444 "$D/ro.safetensors"
check "read-only checkpoint: info" "$MOESCOPE" info "$D/ro.safetensors"
check "read-only checkpoint: scramble from it" "$MOESCOPE" scramble "$D/ro.safetensors" -o "$D/ro_s.safetensors"
check "an existing output's mode is kept" bash -c "cp '$A' '$D/mode.safetensors' && chmod 640 '$D/mode.safetensors' &&
    '$MOESCOPE' scramble '$A' -o '$D/mode.safetensors' >/dev/null && test \$(stat -c %a '$D/mode.safetensors') = 640"
# a read-only directory: root ignores permission bits, so use a read-only bind mount
if unshare -m true 2>/dev/null; then
    mkdir -p "$WORK/rodir"
    cp "$A" "$WORK/rodir/out.safetensors"
    unshare -m bash -c '
        mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 90
        "$2" scramble "$3" -o "$1/out.safetensors" >/dev/null 2>"$4/ro_err"
        echo $? >"$4/ro_rc"
    ' _ "$WORK/rodir" "$MOESCOPE" "$B" "$WORK"
    if [ -f "$WORK/ro_rc" ]; then
        rc=$(cat "$WORK/ro_rc")
        if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q "Read-only file system" "$WORK/ro_err"; then pass
        else fail "read-only directory: exit $rc, message: $(cat "$WORK/ro_err")"; fi
        check "read-only directory: destination unchanged" cmp -s "$A" "$WORK/rodir/out.safetensors"
    else
        skip "read-only directory (cannot bind-mount here)"
    fi
else
    skip "read-only directory (running as root without a mount namespace: permission bits do not apply)"
fi

mark
# ---------------------------------------------------------------- (e) SIGKILL mid-write
# a ~67 MB checkpoint: its write takes long enough to be caught with the temporary open
BIG=$WORK/big
mkdir -p "$BIG"
$GEN ckpt "$BIG/in.safetensors" --seed 5 --n 8 --d 512 --h 2048 --classes 3
cp "$A" "$BIG/out.safetensors"
old=$(sha "$BIG/out.safetensors")
caught=0
for attempt in 1 2 3 4 5; do
    "$MOESCOPE" scramble "$BIG/in.safetensors" -o "$BIG/out.safetensors" --seed $attempt >/dev/null 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        if compgen -G "$BIG/.out.safetensors.tmp*" >/dev/null; then
            kill -KILL $pid 2>/dev/null && caught=1
            break
        fi
    done
    wait $pid 2>/dev/null
    [ $caught = 1 ] && break
    # the write finished before the poll saw it: start again from the old file
    cp "$A" "$BIG/out.safetensors"
done
if [ $caught = 1 ]; then
    pass
    if [ "$(sha "$BIG/out.safetensors")" = "$old" ]; then pass; else fail "SIGKILL mid-write: old output damaged"; fi
    check "SIGKILL mid-write: old output still loads" "$MOESCOPE" info "$BIG/out.safetensors"
    # SIGKILL cannot be caught: the temporary stays, under a hidden name, never under OUT
    echo "test_faults: after SIGKILL $(temps "$BIG") temporary file(s) remain (expected: kill -9 cannot be cleaned up)"
    find "$BIG" -name '.*.tmp*' -delete
    check "a rerun replaces the output" "$MOESCOPE" scramble "$BIG/in.safetensors" -o "$BIG/out.safetensors"
    check "the rerun's output loads" "$MOESCOPE" info "$BIG/out.safetensors"
else
    fail "SIGKILL mid-write: never saw the temporary file in 5 attempts"
fi
rm -rf "$BIG"

mark
# ---------------------------------------------------------------- limits
# hostile checkpoints that declare more than they hold (tests/hostile/corpus/models.tsv):
# refused with the expected message; under ASan, no single allocation over 4 MiB
while IFS=$'\t' read -r file cmd want; do
    case "$file" in ''|'#'*) continue ;; esac
    f=$ROOT/tests/hostile/corpus/$file
    case $cmd in # eval: an evaluation set for a layer; eval_net: a network's token ids, on net_ok
    eval) args=(eval "$A" --eval "$f") ;;
    eval_net) args=(eval "$ROOT/tests/hostile/corpus/net_ok" --eval "$f") ;;
    # a network (a ViT) evaluated on the corpus' own set; a ViT set on vit_ok
    eval_on) args=(eval "$f" --eval "$ROOT/tests/hostile/corpus/net_eval.safetensors") ;;
    eval_vit) args=(eval "$f" --eval "$ROOT/tests/hostile/corpus/vit_eval.safetensors") ;;
    eval_vit_set) args=(eval "$ROOT/tests/hostile/corpus/vit_ok" --eval "$f") ;;
    *) args=("$cmd" "$f") ;;
    esac
    pat=$(sed -e 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$want")
    expect_fail "corpus $file" "$pat" "$MOESCOPE" "${args[@]}"
    if [ $IS_ASAN = 1 ]; then
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:max_allocation_size_mb=4:allocator_may_return_null=1" \
            expect_fail "corpus $file: no allocation over 4 MiB" "$pat" "$MOESCOPE" "${args[@]}"
    fi
done <"$ROOT/tests/hostile/corpus/models.tsv"

# n = 10 > 9: the landscape samples orders and says so
$GEN ckpt "$D/A10.safetensors" --seed 6 --n 10 --d 4 --h 4
$GEN ckpt "$D/B10.safetensors" --seed 7 --n 10 --d 4 --h 4
$GEN evalset "$D/E10.safetensors" --ckpt "$D/A10.safetensors" --N 16
check "landscape n=10 runs" "$MOESCOPE" landscape "$D/A10.safetensors" "$D/B10.safetensors" \
    --eval "$D/E10.safetensors" --points 3 --samples 200 --json "$D/l10.json"
grep -qi "sampl" "$WORK/out" && pass || fail "landscape n=10: the output does not say it sampled"
check "landscape n=10 JSON: exhaustive false, 200 sampled" "$PYTHON" -c "
import json, sys
j = json.load(open('$D/l10.json'))
assert j['exhaustive'] is False, j.get('exhaustive')
assert j.get('nsampled') == 200, j.get('nsampled')
assert len(j['orders']) == 200, len(j['orders'])
"

mark
# ---------------------------------------------------------------- (f) the TUI
[ -f "$ROOT/sample-checkpoints/dense4/seed1.safetensors" ] || fail "sample-checkpoints/dense4 is missing (it is committed)"
if need_tool tmux "the TUI's refusals" && [ -f "$ROOT/sample-checkpoints/dense4/seed1.safetensors" ]; then
    T=$WORK/tui
    mkdir -p "$T"
    S=$ROOT/sample-checkpoints/dense4
    cp "$S/seed1.safetensors" "$T/a.safetensors"
    cp "$S/seed2.safetensors" "$T/b.safetensors"
    cp "$S/seed3.safetensors" "$T/c.safetensors"
    cp "$S/eval.safetensors" "$T/e.safetensors"
    source "$TESTS_DIR/explorer/tui_lib.sh"
    tstart() { # tstart ARGS...: the TUI on a.safetensors b.safetensors in tmux
        rm -f "$T/exit"
        tui_session 100 30 \
            "cd '$T' && env LANG=C.UTF-8 LC_ALL=C.UTF-8 '$MOESCOPE' a.safetensors b.safetensors --eval e.safetensors --out-dir . $* 2>'$T/stderr'; echo EXIT=\$? > '$T/exit'; echo EXIT_SHOWN; sleep 600"
    }
    tstart
    check "TUI: starts" wait_for "order:ON"
    check "TUI: landscape done" wait_for "done:"
    # replace b (rename over it) and truncate a in place while the TUI holds them
    mv "$T/c.safetensors" "$T/b.safetensors"
    truncate -s 100 "$T/a.safetensors"
    # an odd number of o presses: only a TUI that answered every key shows order:OFF
    for k in o w c m o w c m o; do tm send-keys -t t "$k"; done
    check "TUI: still answering after the files changed" wait_for "order:OFF"
    tm send-keys -t t e
    check "TUI: export after the files changed" wait_re "saved [^ ]*b\.aligned-identity-wm\.safetensors"
    check "TUI: the exported checkpoint loads" "$MOESCOPE" info "$(ls "$T"/*b.aligned-identity-wm.safetensors | head -1)"
    check "TUI: no temporary left by the export" test "$(temps "$T")" -eq 0
    tm send-keys -t t p
    check "TUI: PNG export after the files changed" wait_for "saved a-b.curves-identity-wm.png"
    check "TUI: curves figure written" test -s "$T/a-b.curves-identity-wm.png"
    tm send-keys -t t q
    check "TUI: quits" wait_for "EXIT_SHOWN"
    check "TUI: exit status 0" grep -q "EXIT=0" "$T/exit"
    if grep -q "Sanitizer\|runtime error" "$T/stderr"; then fail "TUI: sanitizer report"; tail -20 "$T/stderr"; else pass; fi
    # --png-live naming an input: refused before the screen opens, the input unchanged
    cp "$S/seed1.safetensors" "$T/a.safetensors"
    before=$(sha "$T/a.safetensors")
    tstart --png-live a.safetensors
    wait_any "EXIT_SHOWN" "order:ON"
    if screen | grep -qF EXIT_SHOWN; then
        if grep -q "refusing to overwrite" "$T/stderr"; then pass; else fail "TUI --png-live = input: $(cat "$T/stderr")"; fi
    else
        fail "TUI --png-live = input: the screen opened instead of refusing"
        tm send-keys -t t q
        wait_for "EXIT_SHOWN" >/dev/null
    fi
    [ "$(sha "$T/a.safetensors")" = "$before" ] && pass || fail "TUI --png-live = input: the input was overwritten"
    tm kill-server 2>/dev/null
fi

mark
# ---------------------------------------------------------------- (g) two outputs, one file
# collide NAME CMD...: two outputs of one command name the same file (any spelling, a
# symlink, a hard link): refused up front as a usage error (exit 2), nothing written
# and an existing destination byte-identical
G=$D/collide
mkdir -p "$G/sub"
printf 'old report\n' >"$G/old.txt"
ln "$G/old.txt" "$G/old_hard.txt"
ln -s old.txt "$G/old_sym.txt"
collide() {
    local name=$1; shift
    local before; before=$(sha "$G/old.txt")
    local nbefore; nbefore=$(ls -A "$G" | wc -l)
    expect_fail "$name: refused" "same file" "$@"
    "$@" >/dev/null 2>&1
    local rc=$?
    [ $rc -eq 2 ] && pass || fail "$name: exit status $rc, expected 2 (usage)"
    [ "$(sha "$G/old.txt")" = "$before" ] && pass || fail "$name: old.txt was changed"
    [ "$(ls -A "$G" | wc -l)" -eq "$nbefore" ] && pass || fail "$name: a file was written: $(ls -A "$G")"
}
collide "eval --json X --dump-outputs X" "$MOESCOPE" eval "$A" --eval "$E" --json "$G/x" --dump-outputs "$G/x"
collide "eval --dump-outputs hard link of --json" "$MOESCOPE" eval "$A" --eval "$E" --json "$G/old.txt" --dump-outputs "$G/old_hard.txt"
collide "eval --json symlink of --dump-outputs" "$MOESCOPE" eval "$A" --eval "$E" --json "$G/old_sym.txt" --dump-outputs "$G/old.txt"
collide "curve --png X --csv X" "$MOESCOPE" curve "$A" "$B" --eval "$E" --png "$G/x" --csv "$G/x"
collide "curve --png X --csv ./sub/../X" "$MOESCOPE" curve "$A" "$B" --eval "$E" --png "$G/old.txt" --csv "$G/sub/../old.txt"
collide "landscape --json X --csv X" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$G/x" --csv "$G/x"
collide "landscape --csv X --png sub/../X" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --csv "$G/x" --png "$G/sub/../x"
collide "landscape --json X --curves-png hard link" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$G/old_hard.txt" --curves-png "$G/old.txt"
# distinct outputs (even with the same base name in another directory) are fine
check "landscape: distinct outputs accepted" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5 --json "$G/x" --csv "$G/sub/x"
[ -s "$G/x" ] && [ -s "$G/sub/x" ] && pass || fail "landscape: distinct outputs both written"
collide "train -o X --eval-out X" "$MOESCOPE" train --data "$ROOT/sample-checkpoints/digits.safetensors" \
    --head "$ROOT/sample-checkpoints/pretrained.safetensors" --epochs 1 --quiet -o "$G/x" --eval-out "$G/x"
in_dir() { local dir=$1; shift; (cd "$dir" && "$@"); }
check "eval: distinct relative outputs accepted" in_dir "$G" "$MOESCOPE" eval "$A" --eval "$E" --json e.json --dump-outputs sub/e.json
[ -s "$G/e.json" ] && [ -s "$G/sub/e.json" ] && pass || fail "eval: distinct relative outputs both written"

# ---------------------------------------------------------------- (h) stdout full or closed
# text_out NAME CMD...: CMD with stdout on /dev/full, then closed (>&-): a non-zero exit
# (not a crash) and a message that says the output was lost
text_out() {
    local name=$1; shift
    "$@" >/dev/full 2>"$WORK/err"
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "cannot write the output to stdout: No space left" "$WORK/err"; then pass
    else fail "$name > /dev/full: exit $rc: $(tail -2 "$WORK/err")"; fi
    "$@" >&- 2>"$WORK/err"
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "stdout is closed" "$WORK/err"; then pass
    else fail "$name >&-: exit $rc: $(tail -2 "$WORK/err")"; fi
}
if [ -c /dev/full ]; then
    H=$WORK/h; mkdir -p "$H"
    text_out "--help" "$MOESCOPE" --help
    text_out "--version" "$MOESCOPE" --version
    text_out "info" "$MOESCOPE" info "$A"
    text_out "info --help" "$MOESCOPE" info --help
    text_out "eval" "$MOESCOPE" eval "$A" --eval "$E"
    text_out "cost" "$MOESCOPE" cost "$A" "$B"
    text_out "align" "$MOESCOPE" align "$A" "$B" -o "$H/al.safetensors"
    text_out "merge" "$MOESCOPE" merge "$A" "$B" -o "$H/m.safetensors"
    text_out "curve" "$MOESCOPE" curve "$A" "$B" --eval "$E" --points 5
    text_out "landscape" "$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 5
    text_out "scramble" "$MOESCOPE" scramble "$A" -o "$H/s.safetensors"
    text_out "lap" "$MOESCOPE" lap "$C"
    text_out "diagnose" "$MOESCOPE" diagnose "$A" "$B" --eval "$E"
    $GEN ckpt "$H/A3.safetensors" --seed 5 --n 4 --d 8 --h 16
    text_out "study" "$MOESCOPE" study "$A" "$B" "$H/A3.safetensors" --eval "$E" --points 5
    text_out "lesson --print" "$MOESCOPE" lesson --print --dir "$H/lesson"
    $PYTHON "$TESTS_DIR/lib/gen_gpt2.py" "$H/gp" --moe all --seeds 1,2 --N 4 --T 8 >/dev/null
    text_out "geometry of a network" "$MOESCOPE" geometry "$H/gp/seed1" --eval "$H/gp/eval.safetensors"
    text_out "study of a network pool" "$MOESCOPE" study "$H/gp" --points 3
    # a file opened while stdout is closed must not receive the printed text
    "$MOESCOPE" cost "$A" "$B" --json "$H/c.json" >&- 2>/dev/null
    "$PYTHON" -c "import json,sys; json.load(open(sys.argv[1]))" "$H/c.json" && pass ||
        fail "cost --json with stdout closed: the JSON holds printed text"
else
    skip "stdout full (no /dev/full here)"
fi

mark
summary
