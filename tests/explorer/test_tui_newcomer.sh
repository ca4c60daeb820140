#!/usr/bin/env bash
# test_tui_newcomer.sh - the explorer as a new user met it (round three), the
# real TUI in tmux with every CPU busy: the matrix header under the cursor
# (Tab, arrows) names each column once; the help scrolls to its last row at
# 120x40; the status line shows one of its wordings whole beside a long
# message at 100 and 120 columns; s on a regression set never sorts by a column that
# is not there; pins in colours of their own with a legend that reads
# "1 [2 0 3 1] 0.0123"; p, e and x write into one export directory, asked at
# the first of them (line editing in the prompt) or given with --out-dir, and
# x's CSV has landscape --csv's columns; without an evaluation set the
# explorer starts, and the data-free parts work. Every wait polls the screen
# until a deadline (tests/explorer/tui_lib.sh).
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

# --- the footer in one row at 80x24 and 90x30 (it wrapped onto two) ---
# _footer_row H TOGGLE: the footer's first row (H-3) holds the toggles from o to a and
# ? help, q quit, and the row below it (the flags', the status's) none of its keys
_footer_row() {
    local s; s=$(screen)
    sed -n "$(($1 - 2))p" <<<"$s" | grep -qE "^o $2 w wm:(ON|OFF) .*a (loss|accuracy) .*\? help q quit" &&
        ! sed -n "$(($1 - 1))p" <<<"$s" | grep -qE "(\? help|q quit|v scatter|d diag)"
}
start 80 24 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "80x24: the table complete" wait_for "expert orders 24/24"
check "80x24: the footer one row, its labels shortened" _poll _footer_row 24 "ord:ON"
tm resize-window -t t -x 90 -y 30
check "90x30: the footer one row, whole labels" _poll _footer_row 30 "order:ON"
quit

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

# --- exports: one directory, asked at the first of p, e, x, kept; --out-dir ---
OUT=$WORK/figs/new
start 100 30 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "exports: the table complete" wait_for "expert orders 24/24"
tm send-keys -t t p
check "p: asks where exports go, the current directory offered" \
    wait_for "export directory for p, e and x (Enter, Esc): $WORK"
check "p: nothing written before the answer" test -z "$(ls "$WORK"/*.png 2>/dev/null)"
# line editing: Ctrl-U clears, the arrows and Home move, Ctrl-W deletes a component
tm send-keys -t t C-u
tm send-keys -t t -l "$WORK/figs/typo"
tm send-keys -t t C-w
tm send-keys -t t -l "new"
tm send-keys -t t Home Right Right
check "the prompt edited ($OUT)" wait_for "(Enter, Esc): $OUT"
tm send-keys -t t Enter
check "p: the directory made, the figures in it" wait_for "saved $OUT/dense4-seed1-seed2.curves-expert-wm.png and"
check "p: the curves figure is there" test -s "$OUT/dense4-seed1-seed2.curves-expert-wm.png"
check "p: nothing in the current directory" test -z "$(ls "$WORK"/*.png 2>/dev/null)"
tm send-keys -t t e
check "e: no second question, B aligned in the same directory" \
    wait_re "saved $OUT/dense4-seed2\.aligned-expert-wm\.safetensors"
tm send-keys -t t x
check "x: its name prompt at once" wait_for "save as (.json state, .csv table; Enter, Esc): dense4-seed1-seed2.state-expert-wm.json"
# Ctrl-W takes the whole name (no '/' in it); the table as CSV
tm send-keys -t t C-w
tm send-keys -t t -l "t.csv"
tm send-keys -t t Enter
check "x: the table saved in the export directory" wait_for "saved $OUT/t.csv (24 of 24 orders)"
# the x CSV has landscape --csv's columns and the same rows
"$MOESCOPE" landscape "$SC/dense4/seed1.safetensors" "$SC/dense4/seed2.safetensors" \
    --eval "$SC/dense4/eval.safetensors" --csv "$WORK/l.csv" -q >/dev/null 2>&1
check "x CSV = landscape --csv: columns, orders, ranks, ties and barriers" "$PYTHON" - "$OUT/t.csv" "$WORK/l.csv" <<'PY'
import csv, sys
def rows(p):
    return list(csv.DictReader(l for l in open(p) if not l.startswith("#")))
x, l = rows(sys.argv[1]), rows(sys.argv[2])
assert list(x[0].keys()) == list(l[0].keys()), (list(x[0].keys()), list(l[0].keys()))
assert len(x) == len(l) == 24
bx = {r["order"]: r for r in x}
for r in l:
    q = bx[r["order"]]
    for k in ("rank", "tied", "tie_class"):
        assert q[k] == r[k], (r["order"], k, q[k], r[k])
    for k in ("barrier", "acc_barrier", "loss_auc"):
        a, b = float(q[k]), float(r[k])
        assert abs(a - b) <= 1e-5 * max(abs(b), 1e-3), (r["order"], k, a, b)
PY
# O: another directory; Esc keeps this one
tm send-keys -t t O
check "O: the directory asked again, the current one offered" wait_for "(Enter, Esc): $OUT"
tm send-keys -t t Escape
check "Esc: unchanged" wait_for "export directory unchanged"
quit
# --out-dir: no question, the directory made
TUI_ARGS="--out-dir '$WORK/given'" start 100 30 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "--out-dir: the table complete" wait_for "expert orders 24/24"
tm send-keys -t t p
check "--out-dir: p writes there at once" wait_for "saved $WORK/given/dense4-seed1-seed2.curves-expert-wm.png and"
check "--out-dir: the figure is there" test -s "$WORK/given/dense4-seed1-seed2.curves-expert-wm.png"
quit
# a file name typed where the directory is asked: its folder, and that name for the export
start 100 30 dense4 LANG=C.UTF-8 LC_ALL=C.UTF-8
check "file at the prompt: the table complete" wait_for "expert orders 24/24"
tm send-keys -t t x
check "x: the directory asked first" wait_for "export directory for p, e and x (Enter, Esc): $WORK"
tm send-keys -t t C-u
tm send-keys -t t -l "$WORK/typed/d8.csv"
tm send-keys -t t Enter
check "x: the typed name offered in the save-as prompt" wait_for "save as (.json state, .csv table; Enter, Esc): d8.csv"
tm send-keys -t t Enter
check "x: saved under the typed name" wait_for "saved $WORK/typed/d8.csv (24 of 24 orders)"
check "x: a file, not a directory d8.csv/" test -f "$WORK/typed/d8.csv"
tm send-keys -t t O
tm send-keys -t t C-u
tm send-keys -t t -l "$WORK/typed2/fig.png"
tm send-keys -t t Enter
tm send-keys -t t p
check "p after O with a file name: the figure under that name" wait_for "saved $WORK/typed2/fig.png and"
check "p: a file, not a directory fig.png/" test -f "$WORK/typed2/fig.png"
quit
expect_fail "--out-dir under a file: refused before the screen" "moescope: --out-dir .*: cannot make the export directory" \
    "$MOESCOPE" "$SC/dense4/seed1.safetensors" "$SC/dense4/seed2.safetensors" --out-dir "$OUT/t.csv/sub"

# --- no evaluation set: the data-free parts work, the curves say what is missing ---
mkdir -p "$WORK/noeval"
cp "$SC/dense4/seed1.safetensors" "$SC/dense4/seed2.safetensors" "$WORK/noeval/"
rm -f "$WORK/exit"
tui_session 100 30 "cd '$WORK/noeval' && env LANG=C.UTF-8 LC_ALL=C.UTF-8 '$MOESCOPE' seed1.safetensors seed2.safetensors --out-dir .; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "no set: the explorer starts" wait_for "no evaluation set"
check "no set: the cost matrix and its assignment" wait_re "A0 +[0-9.]+\*?"
check "no set: the curves pane says what is missing" wait_for "--eval E, or eval.safetensors"
tm send-keys -t t d
check "no set: the diagnostics" wait_for "(warn or bad) first"
tm send-keys -t t q
tm send-keys -t t e
check "no set: e exports B aligned" wait_re "saved \./?seed2\.aligned-expert-wm\.safetensors|saved seed2\.aligned-expert-wm\.safetensors"
check "no set: the export loads" "$MOESCOPE" info "$WORK/noeval/seed2.aligned-expert-wm.safetensors"
tm send-keys -t t p
check "no set: p says why there are no figures" wait_for "no figures without curves (no evaluation set)"
tm send-keys -t t x Enter
check "no set: x saves the state" wait_re "saved seed1-seed2\.state-expert-wm\.json"
tm send-keys -t t q
check "no set: q exits 0" wait_for "EXIT_SHOWN"
check "no set: exit 0" grep -qx "EXIT=0" "$WORK/exit"
summary
