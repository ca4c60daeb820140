#!/usr/bin/env bash
# test_corpus.sh - `moescope info` on every malformed file of tests/hostile/corpus whose header
# st_open must reject: a clean exit status 1 (no crash, no sanitizer report) and the
# reader's message from tests/hostile/corpus/expected.tsv on stderr.
source "$(dirname "$0")/../lib/lib.sh"
cd "$ROOT"

# ERE-escape a fixed string for expect_fail's grep -E
ere() { sed -e 's/[][\.*^$+?(){}|/]/\\&/g' <<<"$1"; }

n=0
while IFS=$'\t' read -r file stage want; do
    case "$file" in ''|'#'*) continue ;; esac
    [ "$stage" = open ] || continue
    expect_fail "info $file" "$(ere "$want")" "$MOESCOPE" info "tests/hostile/corpus/$file"
    n=$((n + 1))
done < tests/hostile/corpus/expected.tsv
[ "$n" -ge 16 ] && pass || fail "only $n corpus files checked"

# the valid file opens; it is not a model, so info names the missing tensor instead
expect_fail "info valid (not a model)" "no MoE layer that moescope knows .*no tensor named" "$MOESCOPE" info tests/hostile/corpus/valid.safetensors
summary
