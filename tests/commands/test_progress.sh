#!/usr/bin/env bash
# test_progress.sh - the progress line and Ctrl-C: the line appears when stderr is
# a terminal (a pty from script(1)) and never in a file, also for the orders that
# study and diagnose rank; SIGINT or SIGTERM in the
# middle of writing an output (held there by MOESCOPE_TEST_STALL, so no timing is
# involved) ends the command with status 128 + signal, and leaves neither the
# output nor a temporary file or directory; an existing output stays as it was.
source "$(dirname "$0")/../lib/lib.sh"
S=$ROOT/sample-checkpoints
A=$S/dense8/seed1.safetensors
B=$S/dense8/seed2.safetensors
MA=$S/mixtral4/seed1
MB=$S/mixtral4/seed2

# on a terminal: phases with done/total, a rate and an ETA
if command -v script >/dev/null; then
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' align '$MA' '$MB' -o '$WORK/tty_out'" "$WORK/tty.log" >/dev/null 2>&1
    check "tty: align ran" test -d "$WORK/tty_out"
    check "tty: a load phase with MiB done/total" grep -aEq "load seed2  [0-9.]+/[0-9.]+ MiB" "$WORK/tty.log"
    check "tty: weight matching with rate and ETA" grep -aEq "weight matching  [0-9]+/4 experts .*experts/s  ETA" "$WORK/tty.log"
    check "tty: the line is erased at the end" grep -aq $'\r\033\[K' "$WORK/tty.log"
    # a report's provenance hashes the checkpoints (gigabytes for a real folder): a phase of its own
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' cost '$MA' '$MB' --json '$WORK/tty_cost.json'" "$WORK/tty2.log" >/dev/null 2>&1
    check "tty: cost wrote its report" test -s "$WORK/tty_cost.json"
    check "tty: hashing the inputs shows MiB done/total" grep -aEq "hash inputs  [0-9.]+/[0-9.]+ MiB" "$WORK/tty2.log"
    # commands that rank orders inside: study (every pair's landscape), diagnose (its own)
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' study '$S/teacher4' --points 5" "$WORK/tty3.log" >/dev/null 2>&1
    check "tty: study ran" grep -aq "pairs" "$WORK/tty3.log"
    check "tty: study's line names the pair, counts every pair's orders, rate and ETA" \
        grep -aEq "study pair [1-6]/6  [0-9]+/144 orders +[0-9]+%  [0-9.]+ orders/s  ETA" "$WORK/tty3.log"
    # -q: no line at all, the pairs' nor the loading's (before, a layer study drew its pairs)
    T4=$S/topk4
    for c in "study '$T4/seed1.safetensors' '$T4/seed2.safetensors' --points 5 -q --json '$WORK/q.json'" \
        "landscape '$T4/seed1.safetensors' '$T4/seed2.safetensors' -q --json '$WORK/q.json'"; do
        rm -f "$WORK/q.json"
        MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' $c" "$WORK/ttyq.log" >/dev/null 2>&1
        check "tty: ${c%% *} -q wrote its report" test -s "$WORK/q.json"
        check "tty: ${c%% *} -q shows no progress line" bash -c "! grep -aq 'ETA' '$WORK/ttyq.log'"
    done
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' diagnose '$S/topk4/seed1.safetensors' '$S/topk4/seed2.safetensors'" \
        "$WORK/tty4.log" >/dev/null 2>&1
    check "tty: diagnose's landscape counts its orders" grep -aEq "landscape  [0-9]+/24 orders .*ETA" "$WORK/tty4.log"
    # a network's curves: one line over every curve's points; a network's eval: its rows
    G=$S/gpt/topk4
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' curve '$G/seed1' '$G/seed2' --points 3" "$WORK/tty5.log" >/dev/null 2>&1
    check "tty: curve on a network counts the points of all its curves, rate and ETA" \
        grep -aEq "curves  [0-9]/3 points .*points/s  ETA" "$WORK/tty5.log"
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' eval '$G/seed1'" "$WORK/tty6.log" >/dev/null 2>&1
    check "tty: eval on a network counts its rows" grep -aEq "evaluation rows  [0-9]+/[0-9]+ rows .*ETA" "$WORK/tty6.log"
    check "tty: eval on a network printed its report" grep -aq "next-token" "$WORK/tty6.log"
    # a landscape's precompute counts the points it is computed at (with --no-wm, 4 experts
    # and 25 points: 22 interior points, not 462 items called pairs)
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' landscape '$S/topk4/seed1.safetensors' '$S/topk4/seed2.safetensors' --no-wm" \
        "$WORK/tty9.log" >/dev/null 2>&1
    check "tty: the precompute counts points, of the 22 interior ones" \
        grep -aEq "precomputing experts at points  [0-9]+/22 points .*ETA" "$WORK/tty9.log"
    check "tty: no precompute counted in anything but points" bash -c "! grep -aq 'precomputing pairs' '$WORK/tty9.log'"
    # a network's backbone (gigabytes for a real one) is read in a phase of its own
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' info '$G/seed1'" "$WORK/tty8.log" >/dev/null 2>&1
    check "tty: info on a network counts the backbone's MiB" \
        grep -aEq "load seed1 backbone  [0-9.]+/[0-9.]+ MiB .*ETA" "$WORK/tty8.log"
    # --layer all repeats its phases per layer: the line says which layer of how many
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' align '$S/gpt/every4/seed1' '$S/gpt/every4/seed2' --layer all -o '$WORK/tty_all'" \
        "$WORK/tty7.log" >/dev/null 2>&1
    check "tty: align --layer all wrote its output" test -d "$WORK/tty_all"
    check "tty: align --layer all: the phases of layer 3/3" grep -aEq "layer 3/3: weight matching  [0-9]/4 experts" "$WORK/tty7.log"
    MOESCOPE_PROGRESS=1 script -qec "'$MOESCOPE' merge '$S/gpt/every4/seed1' '$S/gpt/every4/seed2' --layer all -o '$WORK/tty_mall'" \
        "$WORK/tty10.log" >/dev/null 2>&1
    check "tty: merge --layer all wrote its output" test -d "$WORK/tty_mall"
    check "tty: merge --layer all: the phases of layer 3/3" grep -aEq "layer 3/3: weight matching  [0-9]/4 experts" "$WORK/tty10.log"
else
    fail "script(1) is needed for the terminal checks"
fi
# stderr in a file: nothing but the command's own messages
MOESCOPE_PROGRESS=1 "$MOESCOPE" align "$MA" "$MB" -o "$WORK/file_out" >/dev/null 2>"$WORK/file.err"
check "file: align ran" test -d "$WORK/file_out"
check "file: no progress line" bash -c "! grep -aq \$'\\r' '$WORK/file.err' && ! grep -q 'ETA' '$WORK/file.err'"

# cancel_at SIGNAL STALL CMD...: start CMD held at the phase STALL, wait (with a
# generous deadline) until it says it is held there, send SIGNAL; prints the exit
# status. Not the temporary's appearance: a sharded output's directory exists from
# the first shard on, and a signal before the stall would leave it held for good.
# A process still running 120 s after the signal is killed (status 999).
cancel_at() {
    local sig=$1 stall=$2; shift 2
    rm -f "$WORK/c.err" # not the last case's line: the command's redirection may come late
    MOESCOPE_TEST_STALL=$stall "$@" >"$WORK/c.out" 2>"$WORK/c.err" &
    local pid=$! i
    for ((i = 0; i < 1200; i++)); do # up to 120 s
        grep -q "test stall: phase" "$WORK/c.err" 2>/dev/null && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    kill -"$sig" $pid 2>/dev/null
    for ((i = 0; i < 1200; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    if kill -0 $pid 2>/dev/null; then kill -9 $pid; wait $pid; echo 999; return; fi
    wait $pid
    echo $?
}
no_leftovers() { [ -z "$(ls -A "$WORK/cancel")" ]; }

rm -rf "$WORK/cancel"; mkdir -p "$WORK/cancel"
rc=$(cancel_at INT "write" "$MOESCOPE" scramble "$A" -o "$WORK/cancel/s.safetensors" --seed 3)
check "SIGINT while writing: exit 130 (got $rc)" test "$rc" = 130
check "SIGINT while writing: no output, no temporary" no_leftovers
check "SIGINT: says it was interrupted" grep -q "interrupted" "$WORK/c.err"

rc=$(cancel_at TERM "write" "$MOESCOPE" align "$A" "$B" -o "$WORK/cancel/al.safetensors")
check "SIGTERM while writing: exit 143 (got $rc)" test "$rc" = 143
check "SIGTERM while writing: no output, no temporary" no_leftovers

# a sharded output is built in a temporary directory beside it: removed with its files
rc=$(cancel_at INT "write model-00002" "$MOESCOPE" align "$MA" "$MB" -o "$WORK/cancel/sharded")
check "SIGINT in the second shard: exit 130 (got $rc)" test "$rc" = 130
check "SIGINT in the second shard: no directory, no temporaries" no_leftovers

# an existing output is left as it was
"$MOESCOPE" scramble "$A" -o "$WORK/cancel/keep.safetensors" --seed 1 >/dev/null 2>&1
cp "$WORK/cancel/keep.safetensors" "$WORK/keep.orig"
rc=$(cancel_at INT "write" "$MOESCOPE" scramble "$A" -o "$WORK/cancel/keep.safetensors" --seed 2)
check "SIGINT over an existing output: exit 130 (got $rc)" test "$rc" = 130
check "SIGINT over an existing output: unchanged" cmp "$WORK/cancel/keep.safetensors" "$WORK/keep.orig"
check "SIGINT over an existing output: no temporary" test "$(ls -A "$WORK/cancel")" = keep.safetensors
# a landscape's reports: cancelled while its first report is written
rm -f "$WORK/cancel/keep.safetensors"
rc=$(cancel_at INT "write" "$MOESCOPE" merge "$A" "$B" -o "$WORK/cancel/m.safetensors")
check "SIGINT in merge: exit 130 (got $rc)" test "$rc" = 130
check "SIGINT in merge: no output" no_leftovers
summary
