# tests/explorer/tui_lib.sh - driving the real TUI in tmux, sourced after tests/lib/lib.sh by
# the tests that need it (test_tui.sh, test_faults.sh).
#
# Robust on a loaded machine: every wait polls the screen until a deadline
# (TUI_WAIT seconds, default 180) and never sleeps a fixed time; each session
# gets a tmux server of its own (a server still shutting down cannot swallow
# the next session); a session that fails to start is retried.
#
#   tui_session W H CMD    start CMD in a fresh W x H tmux session
#   screen                 the visible screen as text
#   wait_for TEXT          until the screen contains TEXT (fixed string)
#   wait_re REGEX          until a screen line matches REGEX (extended)
#   wait_gone TEXT         until TEXT has left the screen
#   wait_any TEXT1 TEXT2   until either shows
#   wait_file FILE         until FILE exists and is not empty
#   cpu_load_start [K]     K busy loops (default: one per CPU) until cpu_load_stop
#                          or the test's exit; TUI_LOAD=0 turns it off
TUI_WAIT=${TUI_WAIT:-180}
TUI_SOCK_BASE=moescope-test-$$
TUI_SOCK_N=0
SOCK=$TUI_SOCK_BASE-0
TUI_LOAD_PIDS=()
tm() { tmux -L "$SOCK" "$@"; }
screen() { tm capture-pane -p -t t 2>/dev/null; }

cpu_load_stop() {
    local p
    for p in "${TUI_LOAD_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${TUI_LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    TUI_LOAD_PIDS=()
}
cpu_load_start() {
    [ "${TUI_LOAD:-1}" = 0 ] && return
    local k=${1:-$(nproc 2>/dev/null || echo 2)} i
    for ((i = 0; i < k; i++)); do
        # bounded too: a loop outlives nothing by more than 15 minutes
        ( end=$((SECONDS + 900)); while [ $SECONDS -lt $end ]; do :; done ) &
        TUI_LOAD_PIDS+=($!)
    done
}
tui_cleanup() {
    cpu_load_stop
    tmux -L "$SOCK" kill-server 2>/dev/null
}
trap 'tui_cleanup; rm -rf "$WORK"' EXIT

# tui_session W H CMD: a new server and session "t" running CMD; 0 once tmux answers for it
tui_session() {
    local w=$1 h=$2 cmd=$3 try i
    tmux -L "$SOCK" kill-server 2>/dev/null
    for try in 1 2 3; do
        TUI_SOCK_N=$((TUI_SOCK_N + 1))
        SOCK=$TUI_SOCK_BASE-$TUI_SOCK_N
        if tm new-session -d -s t -x "$w" -y "$h" "$cmd" 2>/dev/null; then
            for ((i = 0; i < 100; i++)); do
                tm has-session -t t 2>/dev/null && return 0
                sleep 0.1
            done
        fi
        tmux -L "$SOCK" kill-server 2>/dev/null
        echo "    tmux session did not start (attempt $try)"
    done
    return 1
}

# _poll CMD...: run CMD until it succeeds or TUI_WAIT seconds pass
_poll() {
    local end=$((SECONDS + TUI_WAIT))
    while :; do
        "$@" && return 0
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}
_has() { screen | grep -qF -- "$1"; }
_has_re() { screen | grep -qE -- "$1"; }
_lacks() { ! screen | grep -qF -- "$1"; }
_has_any() { screen | grep -qF -e "$1" -e "$2"; }
_nonempty() { [ -s "$1" ]; }
_last_screen() { echo "    $1; last screen:"; screen | sed 's/^/    | /'; }

wait_for() { _poll _has "$1" || { _last_screen "screen never showed '$1'"; return 1; }; }
wait_re() { _poll _has_re "$1" || { _last_screen "screen never matched /$1/"; return 1; }; }
wait_gone() { _poll _lacks "$1" || { _last_screen "'$1' never left the screen"; return 1; }; }
wait_any() { _poll _has_any "$1" "$2"; }
wait_file() { _poll _nonempty "$1"; }
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# A landscape JSON's best row (its order's experts, then the barrier) and the
# expert choice's rank, as the orders table shows them.
ls_best() { "$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(map(str, j['best']['order'])), '%.4f' % j['best']['barrier'])" "$1"; }
ls_rank() { "$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['methods']['expert']['rank'])" "$1"; }

# The orders table of a 4-expert network block shows landscape JSON $1's numbers
# (checks labelled $2). Ties at barrier 0 share rank 1=; the JSON's best is one of them.
check_network_table() {
    local j=$1 what=$2 b
    read -r -a b <<<"$(ls_best "$j")"
    check "$what: the table is complete" wait_re "expert orders 24/24"
    check "$what: the best row's barrier is the landscape's (${b[4]})" wait_re "│\*[^│]* 1=? +[0-9 ]+ +${b[4]} "
    check "$what: the landscape's best order ranks first (${b[*]})" wait_re " 1=? +${b[0]} ${b[1]} ${b[2]} ${b[3]} +${b[4]} "
    check "$what: the expert choice's rank" wait_re "expert order rank $(ls_rank "$j") of 24"
}

# gpt2_pair DIR CONFIG IDS: a GPT-2 folder pair DIR/seed1, DIR/seed2 (tests/lib/gen_gpt2.py:
# one backbone, B's MoE blocks a perturbed copy of A's) and DIR/eval.safetensors;
# CONFIG is gen_gpt2.config's arguments ("moe_layers=[0, 2], n=8"), IDS a Python
# expression for the set's ids over cfg, back and m1 ("gen_gpt2.eval_ids(cfg, 3, 64, 10)")
gpt2_pair() {
    "$PYTHON" - "$1" "$TESTS_DIR" "$2" "$3" <<'PY'
import sys
sys.path[:0] = [sys.argv[2] + "/lib", sys.argv[2] + "/oracle"]
import gen_gpt2
cfg = eval("gen_gpt2.config(%s)" % sys.argv[3])
back = gen_gpt2.backbone(cfg, 9)
m1 = gen_gpt2.moe_blocks(cfg, 1)
m2 = gen_gpt2.perturbed_copy(cfg, m1, 2)[0]
gen_gpt2.write_pool(sys.argv[1], cfg, back, {"seed1": m1, "seed2": m2}, eval(sys.argv[4]))
PY
}

# network_landscapes A B E L...: each MoE block L's landscape (9 points) into $WORK/lL.json
network_landscapes() {
    local a=$1 b=$2 e=$3 L
    shift 3
    for L in "$@"; do
        "$MOESCOPE" landscape "$a" "$b" --eval "$e" --points 9 --layer "$L" -q --json "$WORK/l$L.json" >/dev/null ||
            fail "landscape of block $L"
    done
}
# tui_explore W H A B E: the explorer on A and B (9 points) in a W x H session; its
# exit status goes to $WORK/exit; check_quit then quits it with q and checks status 0
tui_explore() {
    tui_session "$1" "$2" "cd '$WORK' && '$MOESCOPE' '$3' '$4' --eval '$5' --points 9; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
}
check_quit() {
    tm send-keys -t t q
    check "q exits" wait_for "EXIT_SHOWN"
    check "exit status 0" grep -q "EXIT=0" "$WORK/exit"
}
# check_block_switch NAME TITLE: l lists the MoE blocks (NAME among them), j Enter
# takes the next one (TITLE shows)
check_block_switch() {
    tm send-keys -t t l
    check "l lists the MoE blocks ($1)" wait_for "$1"
    check "l: every block is measured on the network loss" wait_for "every block: curves and landscape on the network loss"
    tm send-keys -t t j Enter
    check "Enter switches to the next block ($2)" wait_for "$2"
}
