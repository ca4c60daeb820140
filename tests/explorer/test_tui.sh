#!/usr/bin/env bash
# test_tui.sh - the real TUI driven in tmux: send keys, poll capture-pane for
# the expected text (never fixed sleeps; a deadline so a missing screen fails
# instead of hanging). Runs while busy loops keep every CPU loaded (as on a CI
# machine; TUI_LOAD=0 turns that off), so each wait is for a state only the new
# screen can show, never for text an earlier screen already had.
source "$(dirname "$0")/../lib/lib.sh"

need_tool tmux
S=$ROOT/sample-checkpoints/dense4
if [ ! -f "$S/seed1.safetensors" ]; then
    # synthetic pair when the samples are not there
    S=$WORK/ckpt; mkdir -p "$S"
    "$PYTHON" "$TESTS_DIR/lib/gen_ckpt.py" --help >/dev/null 2>&1 || { fail "no sample checkpoints and no generator"; summary; exit; }
fi
A=$S/seed1.safetensors; B=$S/seed2.safetensors; E=$S/eval.safetensors
source "$TESTS_DIR/explorer/tui_lib.sh"
# wait_legend_equal NAME1 NAME2: poll until both legend values show and are equal
_legend_equal() {
    local a b
    a=$(legend_value "$1"); b=$(legend_value "$2")
    [ -n "$a" ] && [ "$a" = "$b" ]
}
wait_legend_equal() {
    _poll _legend_equal "$1" "$2" && return 0
    _last_screen "legend $1 ($(legend_value "$1")) never equal to $2 ($(legend_value "$2"))"
    return 1
}
# png_ok FILE: FILE is a PNG whose image data decodes to the size its header says
png_ok() {
    "$PYTHON" - "$1" <<'PY'
import struct, sys, zlib
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat, w = 8, b'', 0
while pos < len(b):
    n, = struct.unpack('>I', b[pos:pos + 4]); typ = b[pos + 4:pos + 8]; data = b[pos + 8:pos + 8 + n]
    if typ == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', data[:10])
    if typ == b'IDAT': idat += data
    pos += 12 + n
raw = zlib.decompress(idat)
ch = {2: 3, 6: 4, 0: 1}[ctype]
assert len(raw) == h * (1 + w * ch * depth // 8), (len(raw), w, h)
PY
}
# start the TUI in a fresh tmux session; the shell records the exit code
start() {
    rm -f "$WORK/exit"
    tui_session 100 30 \
        "cd '$WORK' && env $* '$MOESCOPE' '$A' '$B' --eval '$E' $TUI_ARGS; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
}
legend_value() { # legend_value NAME: the number after "NAME " or "NAME barrier=" on the screen
    screen | grep -oE "$1( barrier=| )[0-9.-]+" | head -1 | grep -oE '[0-9.-]+$'
}

# --- bad input is reported before the screen opens, like the command line ---
expect_fail "missing file" "moescope: .*nope.safetensors" "$MOESCOPE" "$WORK/nope.safetensors" "$B" --eval "$E"
"$MOESCOPE" "$WORK/nope.safetensors" "$B" --eval "$E" 2>"$WORK/tui.err" </dev/null
"$MOESCOPE" cost "$WORK/nope.safetensors" "$B" 2>"$WORK/cli.err" </dev/null
check "same message as the CLI (unreadable file)" diff <(head -1 "$WORK/tui.err") <(head -1 "$WORK/cli.err")
# no terminal: refused with a reason instead of waiting forever (timeout only guards a hang)
expect_fail "no terminal: refused" "needs a terminal" timeout 120 "$MOESCOPE" "$A" "$B" --eval "$E" </dev/null
# a terminal that cannot draw the screen (dumb, unknown, unset TERM): said, with what to do,
# and a non-zero exit, before the screen would open (the lesson's screen alike)
for t in dumb nosuch-term-type unset; do
    tenv="TERM=$t"; [ $t = unset ] && tenv="-u TERM"
    tui_session 200 10 "cd '$WORK' && env $tenv '$MOESCOPE' '$A' '$B' --eval '$E' 2>'$WORK/term.err'; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
    check "TERM $t: the explorer exits" wait_for "EXIT_SHOWN"
    check "TERM $t: a non-zero exit" grep -qx "EXIT=1" "$WORK/exit"
    check "TERM $t: says why and what to do" grep -q "needs a full-screen terminal.*Run it in a terminal emulator.*moescope landscape" "$WORK/term.err"
    tm kill-server 2>/dev/null
done
tui_session 200 10 "cd '$WORK' && env TERM=dumb '$MOESCOPE' lesson '$A' '$B' --eval '$E' 2>'$WORK/term.err'; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "TERM dumb: the lesson's screen exits" wait_for "EXIT_SHOWN"
check "TERM dumb: the lesson exits non-zero, naming --print" bash -c "grep -qx EXIT=1 '$WORK/exit' && grep -q 'lesson --print' '$WORK/term.err'"
tm kill-server 2>/dev/null
if [ -f "$ROOT/sample-checkpoints/dense8/seed1.safetensors" ]; then
    expect_fail "mismatched layers" "moescope: " "$MOESCOPE" "$A" "$ROOT/sample-checkpoints/dense8/seed1.safetensors" --eval "$E"
    "$MOESCOPE" "$A" "$ROOT/sample-checkpoints/dense8/seed1.safetensors" --eval "$E" 2>"$WORK/tui.err" </dev/null
    "$MOESCOPE" cost "$A" "$ROOT/sample-checkpoints/dense8/seed1.safetensors" 2>"$WORK/cli.err" </dev/null
    check "same message as the CLI (mismatch)" diff <(head -1 "$WORK/tui.err") <(head -1 "$WORK/cli.err")
fi

# --- the screen, with every CPU busy ---
cpu_load_start
TUI_ARGS=""
start LANG=C.UTF-8 LC_ALL=C.UTF-8
check "cost matrix pane" wait_for "cost: expert  gate centring on"
# the title names each checkpoint with its folder (dense4/seed1 vs topk4/seed1)
check "title: folder and name" wait_re "A $(basename "$S")/seed1(\.safetensors)? +B $(basename "$S")/seed2"
check "matrix labels" bash -c "$(declare -f screen tm); SOCK=$SOCK; screen | grep -q 'A3 ' && screen | grep -q 'B3'"
check "24 orders" wait_for "expert orders 24/24"
check "landscape done" wait_for "done:"
# a layer's table has its error bars too: the orders the set cannot tell from the best
check "error bars: rows marked ~" wait_re "│~[ A-Z]{3}"
# the diagnostics' flags reach the status line without d
check "flags counted beside the footer" wait_re "[0-9]+ flags?: d"
check "curves legend" wait_for "current barrier="
check "braille plot" bash -c "$(declare -f screen tm); SOCK=$SOCK; screen | LC_ALL=C.UTF-8 grep -qP '[\\x{2801}-\\x{28FE}]'"
check "footer" wait_for "order:ON w wm:ON c centre:ON m cost:expert"
tm send-keys -t t G
check "G shows the last row (rank 24)" wait_for "  24 "
tm send-keys -t t g

# expert-order stage off: current = skip-order. On these samples the chosen
# order is not skip-order's, so only the recomputed curve makes them equal
# (waiting for "done:" would pass on the previous run's status line).
cur=$(legend_value current); skip=$(legend_value skip-order)
check "before o: current ($cur) differs from skip-order ($skip)" test -n "$cur" -a -n "$skip" -a "$cur" != "$skip"
tm send-keys -t t o
check "o: footer order:OFF" wait_for "order:OFF"
check "order stage off: current barrier = skip-order (recomputed)" wait_legend_equal current skip-order
# and weight matching off too: current = naive
cur=$(legend_value current); naive=$(legend_value naive)
check "before w: current ($cur) differs from naive ($naive)" test -n "$cur" -a -n "$naive" -a "$cur" != "$naive"
tm send-keys -t t w
check "w: footer wm:OFF" wait_for "wm:OFF"
check "w off: says skip-order keeps weight matching" wait_for "skip-order still uses it"
check "both stages off: current barrier = naive (recomputed)" wait_legend_equal current naive
tm send-keys -t t w o
check "stages back on" wait_for "order:ON w wm:ON"
tm send-keys -t t c
check "c: footer centre:OFF" wait_for "centre:OFF"
tm send-keys -t t m
check "m: the next method, activation (the set is there)" wait_for "cost:activation"
tm send-keys -t t m m
check "m: footer cost:gate" wait_for "cost:gate"
check "m: matrix title names the method and centring" wait_for "cost: gate  gate centring off"
tm send-keys -t t m c
check "back to expert, centred" wait_for "cost: expert  gate centring on"

# selecting a row plots its curve (once the table is back: w rebuilt it)
wait_for "expert orders 24/24" >/dev/null
tm send-keys -t t j j Enter
check "Enter: plotting message" wait_for "plotting order"
sel=$(screen | grep -oE "plotting order [0-9 ]+" | head -1 | sed 's/plotting order //; s/ *$//')
# the status line already says "plotting order $sel": wait for the legend
# entry with its barrier, which only a plotted curve has
check "selected order plotted, legend with its barrier ($sel)" wait_re "order $sel( barrier=| \(barrier |  ?)[0-9]+\.[0-9]+"
# the plotted row keeps its mark when the cursor moves on
tm send-keys -t t j j
check "the plotted row is marked (>)" wait_re "│[ *~GEARI]{6}> +[0-9]+=? +$sel "

# pin the plotted order, plot another: both curves stay, each with its digit in the legend
tm send-keys -t t P
check "P pins the plotted order" wait_for "pinned order $sel as 1"
tm send-keys -t t Enter
check "Enter on another row" wait_re "plotting order [0-9 ]+"
sel2=$(screen | grep -oE "plotting order [0-9 ]+" | head -1 | sed 's/plotting order //; s/ *$//')
check "the new order plotted ($sel2)" wait_re "order $sel2( barrier=| \(barrier |  ?)[0-9]+\.[0-9]+"
tm send-keys -t t P
check "P pins the second order" wait_for "pinned order $sel2 as 2"
check "legend: pin 1" wait_re "1 \[$sel\]( [0-9]+\.[0-9]+)?"
check "legend: pin 2" wait_re "2 \[$sel2\]( [0-9]+\.[0-9]+)?"
tm send-keys -t t U
check "U unpins both" wait_for "unpinned 2 orders"
check "the pins leave the legend" wait_gone "1 [$sel]"

# filter
tm send-keys -t t / 2 Space 0 Enter
check "filter shown" wait_for "filter /2 0  (2 rows)"
check "filtered rows" bash -c "$(declare -f screen tm); SOCK=$SOCK; screen | grep -cE '[0-9]+ 2 0 [0-9] [0-9]  ' | grep -qx 2"
tm send-keys -t t Escape
check "Esc clears the filter" wait_gone "filter /2 0"
# digits without separators (one expert each) and the CLI's comma syntax; "/"
# starts a new search instead of appending to the last one
tm send-keys -t t / 2 0 Enter
check "filter /20: the same 2 rows" wait_for "filter /20  (2 rows)"
tm send-keys -t t / 2 , 0 Enter
check "filter /2,0: a new search, 2 rows" wait_for "filter /2,0  (2 rows)"
tm send-keys -t t Escape
check "Esc clears it" wait_gone "filter /2,0"
# stale state: with the order stage off the status names no method's rank;
# c under the expert cost says why it changes nothing
tm send-keys -t t o
check "o off: the status says the order stage is off" wait_for "done: order stage off (identity order)"
check "o off: the matrix marks no assignment" wait_for "o off: unused"
check "o off: no starred cell" bash -c "$(declare -f screen tm); SOCK=$SOCK; ! screen | grep -E '^A[0-9]' | cut -d'│' -f1 | grep -q '\*'"
tm send-keys -t t o
check "o on again" wait_re "done: expert order rank [0-9]+ of 24"
tm send-keys -t t c
check "c under the expert cost: why nothing changes" wait_for "no effect on the expert cost"
tm send-keys -t t c
# S reverses the sort: the worst order first, the arrow after the column's name
tm send-keys -t t S
check "S: descending, the arrow in the gap before rank" wait_for "▾rank"
check "S: the last rank on top" wait_re "^[^│]*│[^0-9]*24 [0-9]"
tm send-keys -t t S
check "S again: ascending" wait_for "▴rank"

# v: the scatter of every order's cost against its barrier replaces the
# curves, the chosen order marked; v again brings the curves back
tm send-keys -t t v
check "v: the scatter with Spearman's rho" wait_re "cost (vs|against) barrier.*rho -?[0-9]\.[0-9]{3}"
_scatter_marked() { # an E in the plot: left of the pane separator (the last │ of a row), right of the y axis
    screen | "$PYTHON" -c 'import re, sys; sys.exit(not any(re.search("[\u2524\u2502].*E", l.rsplit("\u2502", 1)[0]) for l in sys.stdin.read().splitlines()))'
}
check "v: the expert-chosen order marked" _poll _scatter_marked
tm send-keys -t t v
check "v again: the curves" wait_for "curves: loss"

# b: the barrier change of each two-slot swap in the cost matrix's place
tm send-keys -t t b
check "b: the swaps of the current order" wait_re "(barrier change when slots i, j swap|swap i,j: barrier change)"
check "b: the best swap named" wait_re "(best swap: slots |best )[0-9]+(,|<->)[0-9]+ -0\.[0-9]"
tm send-keys -t t b
check "b again: the costs" wait_re "(cost: )?expert +(gate )?centring on"

# help lists the keys
tm send-keys -t t '?'
check "help" wait_for "expert-order stage on/off"
tm send-keys -t t x
check "help closes" wait_gone "any key closes"

# diagnostics pane
tm send-keys -t t d
check "d: diagnostics findings, flags first" wait_for "(warn or bad) first"
check "d: findings listed" bash -c "$(declare -f screen tm); SOCK=$SOCK; screen | grep -qE '\[(ok|info|warn|bad)\] (A|B|A,B): '"
check "d: the explorer's rank, not a CLI flag" wait_gone "pass --landscape"
tm send-keys -t t x
check "diagnostics close" wait_gone "(warn or bad) first"

# resize
tm resize-window -t t -x 60 -y 20
check "too small message" wait_for "terminal too small: 60x20, need at least 80x24"
tm resize-window -t t -x 100 -y 30
check "redraw after resize" wait_for "expert orders 24/24"

# PNG: the landscape is complete here, so both figures are written, named by
# the pair's folder, both checkpoints and the stages ("saved X" alone would
# also match the message of a failed landscape figure)
CPNG=dense4-seed1-seed2.curves-expert-wm; LPNG=dense4-seed1-seed2.landscape-wm
[ "$S" = "$ROOT/sample-checkpoints/dense4" ] || { CPNG=ckpt-seed1-seed2.curves-expert-wm; LPNG=ckpt-seed1-seed2.landscape-wm; }
check "no PNG before p" test -z "$(ls "$WORK"/*.png 2>/dev/null)"
tm send-keys -t t p
# the first export asks where exports go, the current directory offered (test_tui_newcomer tests the rest)
check "p: the export directory asked, the current one offered" wait_for "export directory for p, e and x (Enter, Esc): $WORK"
tm send-keys -t t Enter
check "p: saved message names both figures" wait_for "saved $CPNG.png and $LPNG.png"
check "curves figure decodes" png_ok "$WORK/$CPNG.png"
check "landscape figure decodes" png_ok "$WORK/$LPNG.png"
# the same marks and title as landscape --png (the identity, the best last, both checkpoints)
png_text() { # png_text FILE KEY: the tEXt chunk KEY
    "$PYTHON" - "$1" "$2" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read(); pos = 8
while pos < len(b):
    n, = struct.unpack('>I', b[pos:pos + 4]); typ = b[pos + 4:pos + 8]; d = b[pos + 8:pos + 8 + n]
    if typ == b'tEXt' and d.split(b'\0')[0].decode() == sys.argv[2]: print(d.split(b'\0', 1)[1].decode())
    pos += 12 + n
PY
}
check "landscape figure: identity marked, best last" bash -c "$(declare -f png_text); PYTHON=$PYTHON; png_text '$WORK/$LPNG.png' Legend | grep -q '^identity order (rank ' && png_text '$WORK/$LPNG.png' Legend | tail -1 | grep -q '^best (barrier '"
check "figures name both checkpoints" bash -c "$(declare -f png_text); PYTHON=$PYTHON; png_text '$WORK/$CPNG.png' Title | grep -q 'seed1 (t = 0) to .*seed2 aligned'"
# p again never overwrites: numbered names, the first figures untouched
first_png=$(cksum <"$WORK/$CPNG.png")
tm send-keys -t t p
check "p again: numbered names" wait_for "saved $CPNG.2.png and $LPNG.2.png"
check "p again: the first curves figure untouched" test "$(cksum <"$WORK/$CPNG.png")" = "$first_png"
check "p again: the second decodes" png_ok "$WORK/$CPNG.2.png"

# x: the state as JSON under the offered name (Enter), read back
SJSON=$(basename "$S")-seed1-seed2.state-expert-wm.json
tm send-keys -t t x
check "x: the name offered" wait_for "save as (.json state, .csv table; Enter, Esc): $SJSON"
tm send-keys -t t Enter
check "x: saved" wait_for "saved $SJSON (24 of 24 orders)"
check "x: the state parses, 24 orders by rank, 3 inputs with their SHA-256" "$PYTHON" -c "
import json, sys
d = json.load(open(sys.argv[1]))
o = d['landscape']['orders']
assert d['format'] == 'moescope.tui_state/1' and len(o) == 24
assert [r['barrier'] for r in o] == sorted(r['barrier'] for r in o)
assert len(d['provenance']['inputs']) == 3 and all(len(i['sha256']) == 64 for i in d['provenance']['inputs'])
" "$WORK/$SJSON"

# export (on the worker) names the pair's folder, the order stage and weight
# matching, and never overwrites: neither an input nor an earlier export
tm send-keys -t t e
check "e: aligned checkpoint saved" wait_re "saved [A-Za-z0-9_-]*seed2\.aligned-expert-wm\.safetensors"
exported=$(ls "$WORK"/*seed2.aligned-expert-wm.safetensors 2>/dev/null | head -1)
check "aligned checkpoint loads" "$MOESCOPE" info "$exported"
first_sum=$(cksum <"$exported" 2>/dev/null)
tm send-keys -t t e
check "e again: a numbered name" wait_re "saved [A-Za-z0-9_-]*seed2\.aligned-expert-wm\.2\.safetensors"
check "e again: the first export untouched" test "$(cksum <"$exported" 2>/dev/null)" = "$first_sum"
check "e again: the second loads" "$MOESCOPE" info "${exported%.safetensors}.2.safetensors"

# quit restores the terminal
tm send-keys -t t q
check "q shows the shell again" wait_for "EXIT_SHOWN"
check "q exits 0" grep -qx "EXIT=0" "$WORK/exit"
check "screen restored (alternate screen left)" wait_gone "expert orders"

# Ctrl-C restores the terminal too
start LANG=C.UTF-8 LC_ALL=C.UTF-8
wait_for "expert orders" >/dev/null
tm send-keys -t t C-c
check "Ctrl-C: shell again" wait_for "EXIT_SHOWN"
check "Ctrl-C: exit status 130" grep -qx "EXIT=130" "$WORK/exit"

# SIGTERM (sent to this test's own moescope, by pid) restores the terminal too;
# --png-live rewrites its PNG when the curves change
TUI_ARGS="--png-live live.png"
start LANG=C.UTF-8 LC_ALL=C.UTF-8
wait_for "done:" >/dev/null
check "--png-live writes the PNG" wait_file "$WORK/live.png"
check "--png-live PNG decodes" png_ok "$WORK/live.png"
sum1=$(cksum <"$WORK/live.png")
tm send-keys -t t o
wait_for "order:OFF" >/dev/null
_png_changed() { [ "$(cksum <"$WORK/live.png")" != "$sum1" ]; }
check "--png-live rewrites it after a toggle" _poll _png_changed
TUI_ARGS=""
pane_pid=$(tm display-message -p -t t '#{pane_pid}')
tui_pid=$(pgrep -P "$pane_pid" -f moescope | head -1)
check "found the TUI's pid" test -n "$tui_pid"
[ -n "$tui_pid" ] && kill -TERM "$tui_pid"
check "SIGTERM: shell again" wait_for "EXIT_SHOWN"
check "SIGTERM: exit status 143" grep -qx "EXIT=143" "$WORK/exit"
check "SIGTERM: screen restored" wait_gone "expert orders"

# --ascii: no braille; NO_COLOR: no colour escapes
TUI_ARGS="--ascii"
start LANG=C.UTF-8 LC_ALL=C.UTF-8 NO_COLOR=1
check "ascii screen" wait_for "current barrier="
check "ascii: no braille" bash -c "$(declare -f screen tm); SOCK=$SOCK; ! screen | LC_ALL=C.UTF-8 grep -qP '[\\x{2801}-\\x{28FE}]'"
check "NO_COLOR: no colours" bash -c "! tmux -L $SOCK capture-pane -p -e -t t | grep -qE $'\e\\\\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5|48;5)[;m]'"
tm send-keys -t t q
check "ascii: q exits" wait_for "EXIT_SHOWN"
# NO_COLOR in UTF-8: the curves stay apart by glyph (braille for the current
# curve only), in the plot and in the legend
TUI_ARGS=""
start LANG=C.UTF-8 LC_ALL=C.UTF-8 NO_COLOR=1
check "NO_COLOR: legend names naive by its glyph" wait_re "x naive [0-9]"
check "NO_COLOR: legend names skip-order by its glyph" wait_re "\\+ skip-order [0-9]"
check "NO_COLOR: the current curve keeps braille" wait_for "⣿ current barrier="
tm send-keys -t t q
wait_for "EXIT_SHOWN" >/dev/null
start LANG=C.UTF-8 LC_ALL=C.UTF-8
wait_for "current barrier=" >/dev/null
check "colour by default" bash -c "tmux -L $SOCK capture-pane -p -e -t t | grep -qE $'\e\\\\[([0-9;]*;)?(3[0-7]|4[0-7]|38;5|48;5)[;m]'"
tm send-keys -t t q
wait_for "EXIT_SHOWN" >/dev/null

# colour heat map: at 256 colours every matrix cell is a block of a heat-scale
# background (48;5;N) with the number on it; at 8 colours the basic backgrounds
row_esc() { # row_esc LABEL: the screen row starting with LABEL, with its colour escapes
    local E=$'\e' line plain
    tm capture-pane -p -e -t t | while IFS= read -r line; do
        plain=$(printf '%s' "$line" | sed "s/$E\[[0-9;]*m//g")
        case "$plain" in "$1 "*) printf '%s\n' "$line"; break ;; esac
    done
}
count_esc() { grep -oE "$1" | sort -u | wc -l; } # distinct escapes matching $1
start LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color
wait_for "current barrier=" >/dev/null
n256=$(row_esc A0 | count_esc $'\e\\[48;5;[0-9]+m')
check "256 colours: heat backgrounds on row A0 ($n256)" test "$n256" -ge 2
check "256 colours: numbers on the blocks" bash -c "$(declare -f screen tm); SOCK=$SOCK; screen | grep -qE '^A0 +[0-9.]+'"
tm send-keys -t t q
wait_for "EXIT_SHOWN" >/dev/null
start LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm
wait_for "current barrier=" >/dev/null
n8=$(row_esc A0 | count_esc $'\e\\[4[0-7]m')
check "8 colours: basic heat backgrounds on row A0 ($n8)" test "$n8" -ge 2
tm send-keys -t t q
wait_for "EXIT_SHOWN" >/dev/null

# mouse_seq press|release X Y: an xterm SGR mouse report (what xterm-256color's
# terminfo announces: kmous=\E[<), left button, 0-based cell X Y
mouse_seq() { printf '\033[<0;%d;%d%s' $(($2 + 1)) $(($3 + 1)) "$([ "$1" = press ] && echo M || echo m)"; }
# click TEXT: a left click on TEXT's first cell, the release after the press
# as from a hand (input timing, not a wait for a state)
click() {
    local row y x
    row=$(screen | grep -n -F -- "$1" | head -1)
    [ -n "$row" ] || return 1
    y=$((${row%%:*} - 1))
    x=$("$PYTHON" -c 'import sys; print(sys.argv[1].index(sys.argv[2]))' "${row#*:}" "$1")
    tm send-keys -t t -l "$(mouse_seq press "$x" "$y")"
    sleep 0.15
    tm send-keys -t t -l "$(mouse_seq release "$x" "$y")"
}
# the status is on the message line, or beside the footer when a long message has the line
_status_moved() { [ "$(screen | tail -2)" != "$1" ]; }

# 8 experts at 80x24: the numbers do not fit, half blocks (two matrix rows a
# line) with the assignment beside them; before the landscape's first rows a
# spinner names the phase, and keys are answered meanwhile
D8=$ROOT/sample-checkpoints/dense8
if [ -f "$D8/seed1.safetensors" ]; then
    rm -f "$WORK/exit"
    tui_session 80 24 \
        "cd '$WORK' && env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color '$MOESCOPE' '$D8/seed1.safetensors' '$D8/seed2.safetensors' --eval '$D8/eval.safetensors'; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
    check "n=8: the number of orders is known at once" wait_for "/40320"
    check "n=8 at 80x24: half-block heat map" wait_for "A0 ▀▀▀▀▀▀▀▀"
    check "n=8: assignment listed beside the map" wait_for "A0→B"
    fg8=$(row_esc A0 | count_esc $'\e\\[38;5;[0-9]+m'); bg8=$(row_esc A0 | count_esc $'\e\\[48;5;[0-9]+m')
    check "n=8: half blocks in several fg ($fg8) and bg ($bg8) colours" test "$fg8" -ge 2 -a "$bg8" -ge 2
    if screen | grep -qF "preparing the 64 expert pairs"; then pass; else
        # the phase may already be over on a fast machine: then the gauge
        screen | grep -qE "expert orders [1-9][0-9]*/40320" && pass || fail "n=8: spinner or gauge"; fi
    tm send-keys -t t m m m
    check "n=8: m answered while the landscape computes" wait_re "(cost: )?gate +centring o[nf]+ +total"
    # a click (press and release) on wm:ON starts a new landscape, and the
    # screen keeps following it without a key (it froze until the next key)
    click "wm:ON"
    check "n=8: the click toggles weight matching" wait_for "wm:OFF"
    st=$(screen | tail -2)
    check "n=8: after the click the status keeps moving without a key" _poll _status_moved "$st"
    tm send-keys -t t q
    check "n=8: q exits while the landscape computes" wait_for "EXIT_SHOWN"
    check "n=8: exit 0" grep -qx "EXIT=0" "$WORK/exit"

    # w twice on a landscape past half way: it goes on in the background
    # instead of starting again from 0 (9 points: short under ASan, yet a
    # release build still takes seconds from half way to the end)
    tui_session 100 30 \
        "cd '$WORK' && env LANG=C.UTF-8 LC_ALL=C.UTF-8 '$MOESCOPE' '$D8/seed1.safetensors' '$D8/seed2.safetensors' --eval '$D8/eval.safetensors' --points 9; echo EXIT_SHOWN; sleep 600"
    rows8() { screen | grep -oE 'expert orders [0-9]+/40320' | head -1 | grep -oE '[0-9]+/' | tr -d /; }
    # p before the landscape is complete: the curves now, the landscape figure promised
    wait_for "current barrier=" >/dev/null
    rm -f "$WORK"/dense8-seed1-seed2.*.png
    tm send-keys -t t p
    wait_for "export directory for p, e and x" >/dev/null
    tm send-keys -t t Enter
    # (on a machine fast enough to have finished, both at once)
    check "n=8: p while the table fills: the curves now, the landscape promised" \
        wait_re "saved dense8-seed1-seed2\.curves-expert-wm\.png( \(the landscape figure when the table is complete\)| and )"
    _past_half() { local r; r=$(rows8); [ -n "$r" ] && [ "$r" -ge 20160 ]; }
    check "n=8: the landscape passes half way" _poll _past_half
    before=$(rows8)
    tm send-keys -t t w
    # a landscape that ended between the look and the key starts the other one
    # (its preparation shows): then there was nothing to keep, and it is said
    wait_any "finishing the wm on landscape" "preparing the 64"
    if screen | grep -qF "finishing the wm on landscape"; then pass
    else echo "    n=8: the landscape ended before w reached it ($before rows seen): kept whole, checked below"; fi
    tm send-keys -t t w
    check "n=8: w again: back to it" wait_for "wm:ON"
    # the first rows shown again already include those done before, or all of
    # them when it had ended (a new landscape would show its preparation and
    # then far fewer)
    _rows_back() { local r; r=$(rows8); [ -n "$r" ] && [ "$r" -gt 0 ]; }
    _poll _rows_back
    after=$(rows8)
    check "n=8: w twice: the table goes on from $before rows ($after), not from 0" test "${after:-0}" -ge "$before"
    check "n=8: w twice: the landscape completes" wait_re "done: expert order rank [0-9]+ of 40320"
    check "n=8: the promised landscape figure is written when it completes" wait_file "$WORK/dense8-seed1-seed2.landscape-wm.png"
    check "n=8: the promised landscape figure decodes" png_ok "$WORK/dense8-seed1-seed2.landscape-wm.png"
    tm send-keys -t t q
    wait_for "EXIT_SHOWN" >/dev/null
fi
summary
