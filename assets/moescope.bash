# bash completion for moescope and moescope-mpi.
#
# make install puts it in $(PREFIX)/share/bash-completion/completions/moescope,
# where bash-completion loads it on the first <Tab> after "moescope"; from a
# checkout: source assets/moescope.bash (it completes ./moescope too).
#
# It completes the commands, each command's options (the lists below are
# checked against every command's --help by tests/codebase/test_docs_manual.py),
# the values of --method, --router, --act, --schedule, --family and
# --norm-topk-prob, and files where a command takes them: checkpoints
# (*.safetensors, a sharded checkpoint's index, checkpoint folders), figures,
# reports, theme files and directories.

_moescope_commands="info eval cost align merge curve landscape scramble train lap diagnose lesson study geometry"

# the options every command takes (src/cli/cli_family.c)
_moescope_common="--family --top-k --norm-topk-prob --routed-scaling --n-group --topk-group --ignore-capture-layer --help"

_moescope_options() { # _moescope_options CMD: the options of CMD ("" the explorer)
    case $1 in
        "") echo "--eval --layer --points --ascii --png-live --theme --out-dir --interpolate-backbone --all-error-bars
                  --help --version" ;;
        info) echo "--layer --json" ;;
        eval) echo "--eval --layer --json --dump-outputs --repeat --threads" ;;
        cost) echo "--method --no-center --eval --layer --json -m -e -l -h" ;;
        align) echo "--output --method --eval --no-center --no-order --no-wm --order --layer -o -m -e -l -h" ;;
        merge) echo "--output --alpha --method --no-center --no-order --no-wm --order --layer --eval --alpha-sweep
                     -o -a -m -l -e -h" ;;
        curve) echo "--eval --order --points --method --no-center --no-wm --png --csv --size --font-scale --layer
                     --interpolate-backbone --adaptive --json -e -o -T -m -p -c -j -l -h" ;;
        landscape) echo "--eval --points --json --csv --png --log-rank --curves-png --scatter-png --layer --method --no-wm
                         --no-center --all-orders --samples --seed --exhaustive --threads --interpolate-backbone
                         --no-proxy --screen --screen-units --all-error-bars --size --font-scale --quiet --verbose
                         -e -T -j -c -p -l -m -q -v -h" ;;
        scramble) echo "--output --seed --translate --translate-scale --layer -o" ;;
        train) echo "--data --pretrain --head --make-teacher --output --n --h --router --k --shared --act
                     --no-residual --no-bias --epochs --lr --schedule --aux --batch --seed --embed-dim --embed-seed
                     --embed-scale --samples --classes --gate-scale --out-scale --eval-out --variant --quiet --help -o" ;;
        lap) echo "--maximize --json --help" ;;
        diagnose) echo "--eval --no-eval --json --method --no-center --landscape --no-landscape --points --layer
                        --interpolate-backbone -e -m -l -h" ;;
        lesson) echo "--eval --dir --step --print --help" ;;
        study) echo "--eval --points --json --csv --latex --png --samples --seed --exhaustive --threads --no-wm
                     --no-center --interpolate-backbone --no-proxy --screen --screen-units --all-error-bars --layer --quiet --size
                     --font-scale -e -T -j -c -p -q -h" ;;
        geometry) echo "--eval --json --csv --angles-png --r2-png --train-frac --seed --no-transport --threads --size
                        --font-scale -e -t -h" ;;
    esac
}

# the kind of value an option takes, per command (short options differ between
# commands: curve's -o is --order, align's is --output)
_moescope_value() { # _moescope_value CMD OPTION: file, dir, png, json, csv, tex, theme, a word list, none or ""
    case "$1:$2" in
        *:--method | cost:-m | align:-m | merge:-m | curve:-m | landscape:-m | diagnose:-m) echo "words gate expert activation router" ;;
        *:--router) echo "words dense topk" ;;
        *:--act) echo "words relu gelu silu_glu" ;;
        *:--schedule) echo "words constant cosine" ;;
        *:--norm-topk-prob) echo "words 0 1" ;;
        *:--family) echo "words native mixtral qwen2_moe qwen3_moe olmoe deepseek_v2 deepseek_v3 switch granitemoe
                          jetmoe gpt_oss gpt2 vit" ;;
        *:--out-dir | *:--dir) echo dir ;;
        *:--theme) echo theme ;;
        *:--png | *:--png-live | *:--curves-png | *:--scatter-png | *:--angles-png | *:--r2-png | curve:-p | \
            landscape:-p | study:-p) echo png ;;
        *:--json | curve:-j | landscape:-j | study:-j) echo json ;;
        *:--csv | curve:-c | landscape:-c | study:-c) echo csv ;;
        *:--latex) echo tex ;;
        *:--eval | *:--output | *:--data | *:--head | *:--eval-out | *:--dump-outputs | *:-e | align:-o | \
            merge:-o | scramble:-o | train:-o) echo file ;;
        *:--layer | *:-l | *:--points | *:-T | *:--order | curve:-o | *:--seed | *:--samples | *:--threads | \
            geometry:-t | *:--alpha | merge:-a | *:--alpha-sweep | *:--size | *:--font-scale | *:--step | \
            *:--top-k | *:--n-group | *:--topk-group | *:--routed-scaling | *:--repeat | *:--translate-scale | \
            *:--n | *:--h | *:--k | *:--shared | *:--epochs | *:--lr | *:--aux | *:--batch | *:--embed-dim | \
            *:--embed-seed | *:--embed-scale | *:--classes | *:--gate-scale | *:--out-scale | *:--variant | \
            *:--train-frac) echo none ;;
    esac
}

_moescope_files() { # _moescope_files GLOB...: the files matching a glob, and directories
    local g
    for g in "$@"; do
        compgen -f -X "!$g" -- "$cur"
    done
    compgen -d -- "$cur"
}

_moescope() {
    local cur prev cmd i w kind cmds=$_moescope_commands
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    case ${COMP_WORDS[0]} in *moescope-mpi) cmds="landscape study" ;; esac

    # the command: the first word after the binary, when it is one
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case " $cmds " in *" $w "*) cmd=$w ;; esac
        break
    done

    if [ "$COMP_CWORD" -gt 1 ] && [[ $prev == -* ]]; then
        kind=$(_moescope_value "$cmd" "$prev")
        case $kind in
            words\ *) COMPREPLY=($(compgen -W "${kind#words }" -- "$cur")); return ;;
            none) return ;;
            dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
            theme) COMPREPLY=($(_moescope_files '*.theme')); return ;;
            png) COMPREPLY=($(_moescope_files '*.png' '*.svg')); return ;;
            json) COMPREPLY=($(_moescope_files '*.json')); return ;;
            csv) COMPREPLY=($(_moescope_files '*.csv')); return ;;
            tex) COMPREPLY=($(_moescope_files '*.tex')); return ;;
            file) COMPREPLY=($(_moescope_files '*.safetensors')); return ;;
        esac
    fi

    if [[ $cur == -* ]]; then
        local opts
        opts=$(_moescope_options "$cmd")
        case $cmd in train | lap | lesson) ;; *) opts="$opts $_moescope_common" ;; esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
    fi
    # checkpoints and evaluation sets are safetensors files; a sharded
    # checkpoint is its index or its folder
    COMPREPLY+=($(_moescope_files '*.safetensors' '*.index.json'))
}

complete -o filenames -F _moescope moescope ./moescope moescope-mpi ./moescope-mpi
