#!/usr/bin/env bash
# test_boundaries.sh - the direction of dependence the Makefile sets up holds:
#   - no file of the library or the CLI (src/, include/) includes a ui/ header
#     or curses (only ui/ draws on the terminal); the one exception is the
#     program's entry, src/cli/main.c, which calls the explorer's tui_main and
#     the lesson screen (never curses itself);
#   - src/ is compiled without -Iui (main.c aside), so such an include could
#     not even resolve;
#   - libmoescope.a holds no command-line code (cli.c, cmd_*.c live in
#     libmoescope_cli.a) and no ui/ code.
# The scanner is first run on a planted violation, so it is known to bite.
source "$(dirname "$0")/../lib/lib.sh"
cd "$ROOT" || exit 1

# offending_includes DIR UIDIR [SKIP]: print "file:line: include" for every
# #include in DIR's .c and .h files (every folder down) that names a header of
# UIDIR or a curses header; SKIP, a path, is left out.
offending_includes() {
    local dir=$1 uidir=$2 skip=${3:-} ui_headers
    ui_headers=$(cd "$uidir" && ls -- *.h 2>/dev/null | sed 's/\./\\./g' | paste -sd'|')
    [ -n "$ui_headers" ] || ui_headers='^$'
    find "$dir" \( -name '*.c' -o -name '*.h' \) ! -path "$skip" -print0 |
        xargs -0 -r grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' |
        grep -E "[<\"/](${ui_headers})[>\"]|[<\"](n?cursesw?/)?(n?curses|term|panel|menu|form)\.h[>\"]|[<\"](\.\./)*ui/"
}

# the scanner finds a planted ui include, a curses include and a ../ui/ path
mkdir -p "$WORK/plant/src/io" "$WORK/plant/ui"
touch "$WORK/plant/ui/grid.h"
printf '#include "grid.h"\n#include <ncursesw/curses.h>\n#include "../ui/x.h"\n#include "model/model.h"\n' \
    >"$WORK/plant/src/io/bad.c"
n=$(offending_includes "$WORK/plant/src" "$WORK/plant/ui" | wc -l)
check "the scanner finds 3 planted violations (found $n)" test "$n" -eq 3

for d in src include; do
    bad=$(offending_includes "$d" ui src/cli/main.c)
    if [ -z "$bad" ]; then pass; else fail "$d/ includes ui/ or curses headers:"; echo "$bad" | sed 's/^/    /'; fi
done
curses_in_main=$(grep -nE '#[[:space:]]*include[[:space:]]*[<"](n?cursesw?/)?(n?curses|term|panel|menu|form)\.h' src/cli/main.c)
check "src/cli/main.c includes no curses header" test -z "$curses_in_main"

# src/ compiled without -Iui; ui/ with it (make -n prints the commands only)
BUILD=$(dirname "$TESTBIN")
src_cmd=$(make --no-print-directory -n -B "$BUILD/src/core/rng.o" 2>/dev/null | grep -- ' -c ')
cli_cmd=$(make --no-print-directory -n -B "$BUILD/src/cli/cli.o" 2>/dev/null | grep -- ' -c ')
ui_cmd=$(make --no-print-directory -n -B "$BUILD/ui/grid.o" 2>/dev/null | grep -- ' -c ')
check "make prints the src/ compile command" test -n "$src_cmd"
check "src/ is compiled without -Iui" bash -c '! grep -q -- "-Iui" <<<"$1"' _ "$src_cmd"
check "src/cli/ is compiled without -Iui" bash -c '! grep -q -- "-Iui" <<<"$1"' _ "$cli_cmd"
check "ui/ is compiled with -Iui" grep -q -- "-Iui" <<<"$ui_cmd"

# the library archive: no command line, no UI
lib="$BUILD/libmoescope.a"
check "libmoescope.a exists" test -f "$lib"
if [ -f "$lib" ]; then
    members=$(ar t "$lib")
    check "libmoescope.a has the loaders" grep -qx 'model_io.o' <<<"$members"
    stray=$(grep -E '^(cli|cmd_.*|main)\.o$' <<<"$members")
    for f in ui/*.c; do
        b=$(basename "$f" .c).o
        grep -qx "$b" <<<"$members" && stray="$stray $b"
    done
    if [ -z "${stray// /}" ]; then pass; else fail "libmoescope.a holds front-end code: $stray"; fi
fi
cli="$BUILD/libmoescope_cli.a"
check "libmoescope_cli.a holds cli.o" bash -c 'ar t "$1" | grep -qx cli.o' _ "$cli"

summary
