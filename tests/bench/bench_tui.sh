#!/usr/bin/env bash
# bench_tui.sh - key-to-redraw latency of the TUI while the worker computes the
# 8-expert landscape (the README's formulas: a key answered within 50 ms). The binary logs,
# for each key, the milliseconds from reading it to the refreshed screen
# (MOESCOPE_TUI_BENCH); keys are sent through tmux while the landscape runs.
set -u
cd "$(dirname "$0")/../.."
: "${MOESCOPE:?}" "${PYTHON:=/usr/bin/python3}"
S=sample-checkpoints/dense8
if ! command -v tmux >/dev/null || [ ! -f "$S/seed1.safetensors" ]; then
    echo "bench_tui: skipped (needs tmux and $S)"; exit 0
fi
W=$(mktemp -d); SOCK=moescope-bench-$$
trap 'tmux -L "$SOCK" kill-server 2>/dev/null; rm -rf "$W"' EXIT
LOG=$W/latency.log
MS=$(cd "$(dirname "$MOESCOPE")" && pwd)/$(basename "$MOESCOPE")
tmux -L "$SOCK" new-session -d -s b -x 120 -y 40 -c "$W" \
    "MOESCOPE_TUI_BENCH='$LOG' LANG=C.UTF-8 '$MS' '$PWD/$S/seed1.safetensors' '$PWD/$S/seed2.safetensors' --eval '$PWD/$S/eval.safetensors'; sleep 600"
for i in $(seq 600); do tmux -L "$SOCK" capture-pane -p -t b | grep -q "computing landscape\|curve " && break; sleep 0.05; done
keys=(j j j k G g j m m Enter j j PgDn PgUp s s s s o o)
sent=0; busy_keys=0
for round in 1 2 3; do
    for k in "${keys[@]}"; do
        if tmux -L "$SOCK" capture-pane -p -t b | grep -q "busy:"; then busy_keys=$((busy_keys + 1)); fi
        tmux -L "$SOCK" send-keys -t b "$k"; sent=$((sent + 1))
        sleep 0.1
    done
done
for i in $(seq 100); do [ "$(wc -l <"$LOG" 2>/dev/null || echo 0)" -ge "$sent" ] && break; sleep 0.05; done
tmux -L "$SOCK" send-keys -t b q
"$PYTHON" - "$LOG" "$sent" "$busy_keys" <<'PY'
import sys
v = sorted(float(x) for x in open(sys.argv[1]) if x.strip())
sent, busy = int(sys.argv[2]), int(sys.argv[3])
if not v:
    print("bench_tui: no latencies recorded"); sys.exit(1)
p = lambda q: v[min(len(v) - 1, int(q * len(v)))]
print(f"bench_tui: {len(v)} keys ({busy} of {sent} sent while the worker was busy on the 8-expert landscape)")
print(f"  key-to-redraw ms: median {p(0.5):.2f}  p95 {p(0.95):.2f}  max {v[-1]:.2f}   target 50 ms: "
      f"max/target = {v[-1] / 50:.2f}  ({'met' if v[-1] <= 50 else 'MISSED'})")
PY
