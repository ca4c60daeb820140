#!/usr/bin/env bash
# test_tui_ties.sh - the TUI on exact ties in top-k routing (the fixture of
# tests/oracle/test_ties.py: no gate bias, every other input zero, top-2 of 4): every
# barrier its orders table shows, and the current curve's barrier, are the
# command line's (`landscape --csv`, `landscape --json`), printed the same way,
# and within rounding of the numpy oracle's (tests/oracle/oracle.py).
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"

read -r A B E < <("$PYTHON" "$TESTS_DIR/oracle/test_ties.py" --fixture "$WORK" 4 2)
check "fixture written" test -f "$E"
"$MOESCOPE" landscape "$A" "$B" --eval "$E" -q --csv "$WORK/l.csv" --json "$WORK/l.json" >/dev/null
check "landscape on the fixture" test -s "$WORK/l.csv"
# rank,order,barrier,... -> "order barrier" with the barrier as the table prints it
"$PYTHON" - "$WORK/l.csv" "$WORK/l.json" >"$WORK/cli.txt" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))  # "# " provenance lines
for r in rows:
    print("%s %.4f" % (r["order"], float(r["barrier"])))
print("current %.4f" % json.load(open(sys.argv[2]))["methods"]["expert"]["barrier"])
PY

tui_session 100 40 "cd '$WORK' && '$MOESCOPE' '$A' '$B' --eval '$E'; echo EXIT_SHOWN; sleep 600"
check "landscape done in the TUI" wait_for "done:"
check "all 24 orders" wait_for "expert orders 24/24"
check "curves legend" wait_re "current barrier=[0-9]"
# the table's rows: "   <rank>[=] o o o o   <barrier> ..." at the right of the screen
# ("=" marks a rank shared by orders tied within tau)
screen | grep -oE '│[ *~A-Z]*[0-9]+=? ([0-9] ){3}[0-9] +[0-9]+\.[0-9]{4}' |
    sed -E 's/^│[ *~A-Z]*[0-9]+=? //; s/ +/ /g' | sort >"$WORK/tui.txt"
echo "current $(screen | grep -oE 'current barrier=[0-9.]+' | head -1 | cut -d= -f2)" >>"$WORK/tui.txt"
rows=$(grep -c -v '^current' "$WORK/tui.txt")
check "the table shows at least 20 orders ($rows)" test "$rows" -ge 20
missing=$(grep -v -x -F -f "$WORK/cli.txt" "$WORK/tui.txt")
check "every shown barrier is the command line's${missing:+ (differ: $missing)}" test -z "$missing"
# against the oracle: |shown - oracle| <= half a unit of the last digit (+ float noise)
bad=$(cd "$TESTS_DIR/oracle" && "$PYTHON" - "$A" "$B" "$E" "$WORK/tui.txt" <<'PY'
import sys
import oracle
A, B, ev = oracle.load_layer(sys.argv[1]), oracle.load_layer(sys.argv[2]), oracle.load_evalset(sys.argv[3])
O = oracle.landscape(A, B, ev, T=25)
want = {" ".join(map(str, o)): b for o, b, _, _ in O["rows"]}
want["current"] = O["expert"]["barrier"]
for line in open(sys.argv[4]):
    *key, val = line.split()
    key = " ".join(key)
    if key not in want or abs(float(val) - want[key]) > 6e-5:
        print("%s: shown %s, oracle %s" % (key, val, want.get(key)))
PY
)
check "every shown barrier is the oracle's${bad:+ ($bad)}" test -z "$bad"
tm send-keys -t t q
check "q exits" wait_for "EXIT_SHOWN"
summary
