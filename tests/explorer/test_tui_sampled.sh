#!/usr/bin/env bash
# test_tui_sampled.sh - the explorer on a network whose orders are sampled (an
# 8-expert MoE block, tests/lib/gen_gpt2.py; 500 of the 40320 orders), in tmux:
#   - the sample's count is said (500/500 sampled) and the methods' orders and the
#     identity the sample lacks are rows of the table all the same, named under it
#     ("beside the sample");
#   - "best found" is the lowest barrier of the sample and those rows, as `landscape`
#     gives it, with how it was found;
#   - "final" only once the table is complete; q quits with status 0.
source "$(dirname "$0")/../lib/lib.sh"
need_tool tmux
source "$TESTS_DIR/explorer/tui_lib.sh"
P=$WORK/pool
gpt2_pair "$P" "n=8" "gen_gpt2.teacher_ids(cfg, {**back, **m1}, 2, N=8, T=10)"
A=$P/seed1; B=$P/seed2; E=$P/eval.safetensors
"$MOESCOPE" landscape "$A" "$B" --eval "$E" --points 3 -q --no-proxy --json "$WORK/l.json" >/dev/null ||
    fail "landscape of the pair"
# the best found over the sample and the methods' orders, and how
read -r best how <<<"$("$PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
c = [(j["best"]["barrier"], "sampled")] + [(j["methods"][m]["barrier"], "the %s method" % m) for m in ("gate", "expert")]
b = min(c, key=lambda x: x[0])
print("%.4f" % b[0], b[1])' "$WORK/l.json")"

tui_session 200 40 "cd '$WORK' && '$MOESCOPE' '$A' '$B' --eval '$E' --points 3; echo EXIT=\$? > '$WORK/exit'; echo EXIT_SHOWN; sleep 600"
check "the sample's count" wait_for "500/500 sampled"
check "the orders beside the sample are rows, named under the table" wait_for "beside the sample (rows, not drawn into it):"
check "the best found is the landscape's ($best, $how)" wait_re "best found $best \((sampled|the (gate|expert) method|[0-9]+ methods)\)"
case $how in
sampled) check "found in the sample" wait_for "best found $best (sampled)" ;;
*) check "found by a method" wait_re "best found $best \((the (gate|expert) method|[0-9]+ methods)\)" ;;
esac
check "final once the table is" wait_re "final"
check_quit
summary
