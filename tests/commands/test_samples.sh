#!/usr/bin/env bash
# test_samples.sh - the committed sample checkpoints are reproducible: retraining
# the pretrained model and every seed of every variant (with make_samples.sh's
# exact options) gives the committed files byte for byte. Also checks the
# command's errors and that every committed sample loads with its metadata.
source "$(dirname "$0")/../lib/lib.sh"
S=$ROOT/sample-checkpoints
source "$TESTS_DIR/lib/blas_kernels.sh"
samples_kernels # byte for byte only under the kernels the samples were made with

# Retraining every sample is the suite's longest part: under the sanitizers most of
# it runs on the release binary make check also builds (MOESCOPE_REL), the
# same code and arithmetic (no fast-math; the bytes are compared), and one
# variant's seed 1 and one teacher's student stay on $MOESCOPE to check memory.
RETRAIN=${MOESCOPE_REL:-$MOESCOPE}
RETRAIN=$(cd "$(dirname "$RETRAIN")" && pwd)/$(basename "$RETRAIN")

if [ ! -f "$S/dense4/seed1.safetensors" ]; then
    echo "no sample checkpoints committed yet"; fail "sample-checkpoints/dense4/seed1.safetensors missing"
    summary; exit
fi

# the options come from make_samples.sh itself, so the test cannot drift from it
pre_opts=$(grep -A2 -- '--pretrain' "$S/make_samples.sh" | tr -d '\\\n' | sed -E 's/.*--pretrain(.*)-o pretrained.*/\1/')
variants=$(grep -E '^variant [a-z0-9]+ ' "$S/make_samples.sh" | awk '{print $2}')
all_sets="$variants $(grep -E '^teacher_set [a-z0-9]+ ' "$S/make_samples.sh" | awk '{print $2}')"
check "options found in make_samples.sh" test -n "$pre_opts" -a -n "$variants"
check "make_samples.sh makes every committed variant" test "$(echo $all_sets | tr ' ' '\n' | sort | xargs)" = \
    "$(cd "$S" && for v in */; do [ -f "$v/seed1.safetensors" ] && echo "${v%/}"; done | sort | xargs)"

mkdir -p "$WORK/s"
cp "$S/digits.safetensors" "$WORK/s/"
cd "$WORK/s"
# shellcheck disable=SC2086
check "pretrain runs" "$RETRAIN" train --data digits.safetensors --pretrain $pre_opts \
    -o pretrained.safetensors --quiet
same "pretrained.safetensors byte-identical" pretrained.safetensors "$S/pretrained.safetensors"

# every seed of every variant, retrained with make_samples.sh's options (the
# recipe: seed 1 also writes the evaluation set), two at a time
train_one() { # train_one VARIANT SEED: trains into VARIANT/seedSEED.safetensors, log beside it
    local v=$1 seed=$2 opts extra=() bin=$RETRAIN
    [ "$v $seed" = "$FIRST 1" ] && bin=$MOESCOPE
    opts=$(grep "^variant $v " "$S/make_samples.sh" | sed -E "s/^variant $v +//")
    mkdir -p "$v"
    [ "$seed" = 1 ] && extra=(--eval-out "$v/eval.safetensors")
    # shellcheck disable=SC2086
    "$bin" train --data digits.safetensors --head "$S/pretrained.safetensors" --variant "$v" \
        --seed "$seed" $opts "${extra[@]}" -o "$v/seed$seed.safetensors" --quiet >"$v/log$seed" 2>&1
    echo $? >"$v/rc$seed"
}
export -f train_one
FIRST=${variants%% *}
export MOESCOPE RETRAIN S FIRST
for v in $variants; do for seed in 1 2 3 4; do echo "$v $seed"; done; done |
    xargs -P 2 -n 2 bash -c 'train_one "$0" "$1"'
for v in $variants; do
    for seed in 1 2 3 4; do
        if [ "$(cat "$v/rc$seed" 2>/dev/null)" != 0 ]; then fail "$v seed $seed: train failed"; sed 's/^/    /' "$v/log$seed" | tail -5; continue; fi
        same "$v/seed$seed.safetensors byte-identical" "$v/seed$seed.safetensors" "$S/$v/seed$seed.safetensors"
    done
    same "$v/eval.safetensors byte-identical" "$v/eval.safetensors" "$S/$v/eval.safetensors"
    check "$v: seed 2 differs from seed 1" bash -c "! cmp -s $v/seed1.safetensors $v/seed2.safetensors"
done
cp dense4/seed1.safetensors seed1.safetensors

# the metadata records how the file was made
check "metadata: seed, variant, head" bash -c "grep -a -q '\"train.seed\":\"1\"' seed1.safetensors && grep -a -q '\"train.variant\":\"dense4\"' seed1.safetensors && grep -a -q '\"train.head\":\"pretrained.safetensors\"' seed1.safetensors"

# the teacher-student sets: every teacher and every student, byte for byte, with
# the options of make_samples.sh's teacher_set (n and the students' width sh from
# each `teacher_set NAME n sh` line)
teachers=$(grep -E '^teacher_set [a-z0-9]+ [0-9]+ [0-9]+' "$S/make_samples.sh" | awk '{print $2":"$3":"$4}')
t_opts=$(grep -A2 -- '--make-teacher' "$S/make_samples.sh" | tr -d '\\\n' | sed -E 's/.*--make-teacher(.*)--variant.*/\1/')
s_opts=$(grep -A3 -- '--head "$name/teacher' "$S/make_samples.sh" | tr -d '\\\n' | sed -E 's/.*--seed "\$seed"(.*)"\$\{extra.*/\1/')
check "teacher options found in make_samples.sh" test -n "$teachers" -a -n "$t_opts" -a -n "$s_opts"
for tn in $teachers; do
    v=${tn%%:*} rest=${tn#*:}
    n=${rest%%:*} sh=${rest##*:}
    mkdir -p "$v"
    # shellcheck disable=SC2086
    check "$v teacher runs" "$RETRAIN" train --make-teacher ${t_opts//\"\$n\"/$n} --variant "$v" \
        -o "$v/teacher.safetensors" --quiet
    same "$v/teacher.safetensors byte-identical" "$v/teacher.safetensors" "$S/$v/teacher.safetensors"
    so=${s_opts//\"\$n\"/$n}
    so=${so//\"\$sh\"/$sh}
    for seed in 1 2 3 4; do
        extra=(); [ "$seed" = 1 ] && extra=(--eval-out "$v/eval.safetensors")
        # shellcheck disable=SC2086
        bin=$RETRAIN; [ "$seed" = 1 ] && [ "$v" = "${teachers%%:*}" ] && bin=$MOESCOPE
        check "$v student seed $seed runs" "$bin" train --head "$v/teacher.safetensors" \
            --variant "$v" --seed "$seed" $so "${extra[@]}" -o "$v/seed$seed.safetensors" --quiet
        same "$v/seed$seed.safetensors byte-identical" "$v/seed$seed.safetensors" "$S/$v/seed$seed.safetensors"
    done
    same "$v/eval.safetensors byte-identical" "$v/eval.safetensors" "$S/$v/eval.safetensors"
done
cp teacher4/seed1.safetensors student1.safetensors
cp teacher4/teacher.safetensors teacher.safetensors
check "student metadata: mode, test mse" bash -c "grep -a -q '\"train.mode\":\"student\"' student1.safetensors && grep -a -q '\"train.test_mse\"' student1.safetensors"
expect_fail "teacher with --data" "drop --data" "$MOESCOPE" train --head teacher.safetensors \
    --data digits.safetensors -o x.safetensors
expect_fail "bad schedule" "bad value" "$MOESCOPE" train --head teacher.safetensors \
    --schedule warm -o x.safetensors

# every committed sample is 4 seeds + an evaluation set; the whole directory < 10 MB
for v in dense4 topk4 shared4 dense8 teacher4 teacher8; do
    check "$v has 4 seeds and eval" test -f "$S/$v/seed1.safetensors" -a -f "$S/$v/seed2.safetensors" \
        -a -f "$S/$v/seed3.safetensors" -a -f "$S/$v/seed4.safetensors" -a -f "$S/$v/eval.safetensors"
done
# the files' own bytes (du's blocks depend on the file system)
check "sample-checkpoints' files under 10 MiB" test "$(find "$S" -type f -printf '%s\n' | awk '{s += $1} END {print s}')" -lt 10485760

# errors
expect_fail "no --data" "data is required" "$MOESCOPE" train -o x.safetensors --pretrain
expect_fail "both modes" "exactly one of" "$MOESCOPE" train --data digits.safetensors --pretrain \
    --head "$S/pretrained.safetensors" -o x.safetensors
expect_fail "bad router" "bad value" "$MOESCOPE" train --data digits.safetensors --pretrain \
    --router sparse -o x.safetensors
expect_fail "k > n" "larger than" "$MOESCOPE" train --data digits.safetensors \
    --head "$S/pretrained.safetensors" --router topk --n 2 --k 3 -o x.safetensors
expect_fail "missing data file" "nosuch" "$MOESCOPE" train --data nosuch.safetensors --pretrain \
    -o x.safetensors
# the pretrained file with its train.embed_* metadata removed
"$PYTHON" - "$S/pretrained.safetensors" noembed.safetensors <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h["__metadata__"] = {k: v for k, v in h["__metadata__"].items() if not k.startswith("train.embed")}
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + raw[8 + n:])
PY
expect_fail "head without embedding metadata" "train.embed" "$MOESCOPE" train \
    --data digits.safetensors --head noembed.safetensors -o x.safetensors
expect_fail "head that is not a checkpoint" "no MoE layer that moescope knows" "$MOESCOPE" train \
    --data digits.safetensors --head "$S/dense4/eval.safetensors" -o x.safetensors
expect_fail "embedding that disagrees with the head" "embedding" "$MOESCOPE" train \
    --data digits.safetensors --head "$S/pretrained.safetensors" --embed-dim 16 -o x.safetensors
check "no output left behind by failures" test ! -e x.safetensors
summary
