#!/usr/bin/env bash
# test_tui_newcomer.sh - the explorer as a new user met it (round three), the
# real TUI in tmux with every CPU busy: the matrix header under the cursor
# (Tab, arrows) names each column once; the help scrolls to its last row at
# 120x40; the status line shows one of its wordings whole beside a long
# message at 100 and 120 columns; s on a regression set never sorts by a column that
# is not there; pins in colours of their own with a legend that reads
# "1 [2 0 3 1] 0.0123". Every wait polls the screen until a deadline
# (tests/explorer/tui_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"

need_tool tmux
SC=$ROOT/sample-checkpoints
for f in dense4/seed1 dense4/seed2 dense4/eval teacher4/seed1 teacher4/seed2 teacher4/eval; do
    [ -f "$SC/$f.safetensors" ] || { fail "sample $f.safetensors missing"; summary; exit; }
done
source "$TESTS_DIR/explorer/tui_lib.sh"
# start W H PAIR ENV...: the TUI on sample-checkpoints/PAIR seed1 and seed$SEED_B (default 2)
start() {
    local w=$1 h=$2 p=$3; shift 3
    rm -f "$WORK/exit"
    tui_session "$w" "$h" "cd '$WORK' && env $* '$MOESCOPE' '$SC/$p/seed1.safetensors' '$SC/$p/seed${SEED_B:-2}.safetensors' $TUI_ARGS; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
}
quit() { tm send-keys -t t q; wait_for "EXIT_SHOWN" >/dev/null; }
# header_count LABEL: how often LABEL stands alone in the matrix's header row
# (the row after "cost: ...", left of the pane separator)
header_count() {
    screen | grep -A1 -E '^ ?cost: ' | tail -1 | sed 's/[│|].*//' | grep -oE "(^| )$1( |$)" | wc -l
}
_header_once() { [ "$(header_count "$1")" -eq 1 ]; }
cpu_load_start
TUI_ARGS=""

# --- the cost matrix's header under the cursor ---
start 100 30 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "the matrix shows" wait_for "cost: expert  gate centring on"
tm send-keys -t t Tab Right Right
check "Tab, arrows: the cursor on B2" wait_for "arrows move in the cost matrix"
for c in B0 B1 B2 B3; do
    check "header: $c once" _poll _header_once "$c"
done

# --- the help scrolls (less's keys), any other key closes it ---
tm resize-window -t t -x 120 -y 40
tm send-keys -t t Escape '?'
check "? at 120x40: the help says it scrolls" wait_for "keys (j/k PgUp/PgDn scroll, other keys close)"
# the symmetry paragraph ends the help: its last words (diagnose prints the
# same paragraph) show after G, and were below the box before
why=$("$MOESCOPE" diagnose "$SC/dense4/seed1.safetensors" "$SC/dense4/seed2.safetensors" --no-landscape | sed -n 5p)
tail_word=$(awk '{print $NF}' <<<"$why")
check "the paragraph's last word found ('$tail_word')" test -n "$tail_word"
check "the paragraph's end below the box before G" _lacks "$tail_word"
tm send-keys -t t G
check "G: the symmetry paragraph to its end" wait_for "$tail_word"
check "G: the position shown" wait_re " [0-9]+-[0-9]+/[0-9]+ "
tm send-keys -t t x
check "x closes the help" wait_gone "other keys close"
quit

# --- the status line beside a long message, at 100 and 120 columns ---
# the status: one of its wordings, whole, at the end of the message line or of the footer's last row
_status_whole() {
    screen | tail -2 | grep -qE '(done: expert order rank [0-9]+ of 24( \(tied: [0-9]+; by AUC [0-9]+\))?|expert rank [0-9]+/24) *$'
}
_no_cut() { ! screen | tail -2 | grep -qE '( of|\((t|ti|tie|tied)|\(tied: [0-9]*;?|by AUC|rank) *$'; }
# seed1 and seed4: the expert order ties with 5 others, so the status is long
# ("done: expert order rank 1 of 24 (tied: 6; by AUC 1)"): at 120 columns it
# does not fit beside the diagnostics' flags message, nor beside the one-row
# footer (it was cut to "... (tied: 6;")
for w in 100 120; do
    SEED_B=4 start "$w" 40 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
    check "$w columns: landscape done" wait_re "rank [0-9]+( of |/)24"
    check "$w columns: the flags' message" wait_re "[0-9]+ flags? \(d\): "
    check "$w columns: the status in a whole wording beside the flags" _poll _status_whole
    check "$w columns: the status never cut inside a phrase" _no_cut
    tm send-keys -t t Tab
    check "$w columns: Tab's long message" wait_for "arrows move in the cost matrix (z/Z zoom, Tab: back to the orders)"
    check "$w columns: the status in a whole wording beside it" _poll _status_whole
    quit
done

# --- s on a regression set: rank, order, AUC (no acc.barrier column) ---
start 100 30 teacher4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "teacher4: a regression set (mse)" wait_for "mse loss A"
check "no acc.barrier column" wait_re "▴rank +order +barrier +AUC"
tm send-keys -t t s
check "s: order" wait_for "sorted by order, ascending"
tm send-keys -t t s
check "s again: AUC, not the missing acc.barrier" wait_for "sorted by AUC, ascending"
tm send-keys -t t s
check "s again: back to rank" wait_for "sorted by rank, ascending"
quit

# --- pins: each in a colour of its own, the legend "1 [2 0 3 1] 0.0123" ---
start 100 30 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color
check "table complete" wait_for "expert orders 24/24"
sel=()
for k in 1 2; do
    tm send-keys -t t j Enter
    wait_re "plotting order [0-9 ]+" >/dev/null
    o=$(screen | grep -oE "plotting order [0-9 ]+" | head -1 | sed 's/plotting order //; s/ *$//')
    check "plotted $o" wait_re "order $o( barrier=| )[0-9]+\.[0-9]+"
    tm send-keys -t t P
    check "pinned $o as $k" wait_for "pinned order $o as $k"
    sel+=("$o")
done
check "legend: pin 1 reads '1 [${sel[0]}] barrier'" wait_re "1 \[${sel[0]}\] [0-9]+\.[0-9]{4}"
check "legend: pin 2 reads '2 [${sel[1]}] barrier'" wait_re "2 \[${sel[1]}\] [0-9]+\.[0-9]{4}"
# the colour escape just before each pin's digit in the legend
pin_colour() {
    tm capture-pane -p -e -t t | grep -F "[$2]" | head -1 |
        "$PYTHON" -c 'import re, sys; l = sys.stdin.read(); m = re.findall(r"\x1b\[([0-9;]*)m" + sys.argv[1] + r"(?:\x1b\[[0-9;]*m)* \[" + re.escape(sys.argv[2]) + r"\]", l); print(m[-1] if m else "")' "$1" "$2"
}
c1=$(pin_colour 1 "${sel[0]}"); c2=$(pin_colour 2 "${sel[1]}")
check "the two pins in two colours ('$c1', '$c2')" test -n "$c1" -a -n "$c2" -a "$c1" != "$c2"
quit
summary
