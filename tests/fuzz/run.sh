#!/usr/bin/env bash
# tests/fuzz/run.sh - build the libFuzzer harnesses with clang (ASan + UBSan) from the
# library sources each one needs, and run each for a bounded time seeded from
# tests/hostile/corpus (new inputs go to build/fuzz/corpus_NAME, crashes to build/fuzz/).
#   FUZZ_SECONDS=60 (per harness)   FUZZ_ONLY="safetensors lap" (a subset)
# Prints the number of executions of each; exits 1 if any harness found a crash.
set -u
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
OUT=build/fuzz
mkdir -p "$OUT"
CLANG=${CLANG:-clang}
CFLAGS="-std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -fno-omit-frame-pointer -Iinclude -Itests/fuzz -Itests/lib $(pkg-config --cflags libcjson openblas libpng)
        -D_DEFAULT_SOURCE -D_XOPEN_SOURCE=600"
LIBS="$(pkg-config --libs libcjson openblas libpng) -lm -lpthread"

# The library (every src/ folder but cli/ and mpi/) compiled once with the
# fuzzer's instrumentation; the lap harness adds the command that reads its file.
LIB_SRCS=$(find src -name '*.c' ! -path 'src/cli/*' ! -path 'src/mpi/*' | sort)
declare -A EXTRA=([lap]="src/cli/cmd_lap.c src/cli/cli.c src/cli/cli_family.c src/cli/cli_number.c")
ORDER="safetensors evalset model lap header limits config"
only=${FUZZ_ONLY:-$ORDER}

status=0
LIB_OBJS=
for s in $LIB_SRCS; do
    o=$OUT/obj/${s%.c}.o
    mkdir -p "$(dirname "$o")"
    # shellcheck disable=SC2086
    if [ ! -f "$o" ] || [ "$s" -nt "$o" ]; then
        $CLANG ${CFLAGS/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,} -c -o "$o" "$s" 2>>"$OUT/build_lib.log" ||
            { echo "fuzz: $s does not compile (see $OUT/build_lib.log)"; exit 1; }
    fi
    LIB_OBJS="$LIB_OBJS $o"
done
# an archive: each harness links only the members it needs
rm -f "$OUT/libmoescope_fuzz.a"
# shellcheck disable=SC2086
ar rcs "$OUT/libmoescope_fuzz.a" $LIB_OBJS
for name in $ORDER; do
    [[ " $only " == *" $name "* ]] || continue
    bin=$OUT/fuzz_$name
    # shellcheck disable=SC2086
    if ! $CLANG $CFLAGS -o "$bin" "tests/fuzz/fuzz_$name.c" ${EXTRA[$name]:-} "$OUT/libmoescope_fuzz.a" $LIBS 2>"$OUT/build_$name.log"; then
        echo "fuzz_$name: BUILD FAILED"; tail -20 "$OUT/build_$name.log"; status=1; continue
    fi
    mkdir -p "$OUT/corpus_$name"
    log=$OUT/fuzz_$name.log
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    "$bin" "$OUT/corpus_$name" tests/hostile/corpus \
        -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        -dict=tests/fuzz/safetensors.dict -close_fd_mask=3 \
        -artifact_prefix="$OUT/crash_$name-" >"$log" 2>&1
    rc=$?
    runs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1)
    if [ $rc -ne 0 ]; then
        echo "fuzz_$name: FAILED (exit $rc), see $log:"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -10
        status=1
    else
        echo "fuzz_$name: ok, ${runs:-? runs} ($(ls "$OUT/corpus_$name" | wc -l) inputs in corpus_$name)"
    fi
done
exit $status
