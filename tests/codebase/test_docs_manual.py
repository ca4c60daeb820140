"""tests/codebase/test_docs_manual.py - the documentation works as written.

README.md's first screens hold what moescope is, its two commands (`make deps
run`: install, build, open the explorer on the samples; and the test command
.ci/run runs), the explorer's keys (every key of ui/keys.c's table), a worked
example for each task (explore ranks, teach, diagnose), every bundled sample
and a pointer to the manual; neither document cites "SPEC".

The manual, assets/moescope.1 (man(7) macros), renders without a warning
(groff -ww, and man-db's --warnings where man is installed) and holds, for
every command `moescope --help` lists, a section naming every option that
command's --help names; the explorer's options and keys; its ENVIRONMENT
section is checked against src/core/env.c by test_env.py.

Every moescope command line either document shows is checked: its command
exists and each of its options is one that command's --help names; a concrete
one (sample paths that exist, no placeholder such as A, CKPT or [...]) is run
from a scratch directory that sees the samples as sample-checkpoints/ (outputs
go there) and must exit 0, but for the explorer (it needs a terminal), `train`
(minutes; tests/commands/test_samples.sh trains) and the network commands that
evaluate every order or point (minutes under the sanitizers;
tests/commands/test_network_commands.py runs them on small fixtures). Those that
sweep every order (landscape, study: dense8's 40320 orders on its whole evaluation
set) run on the release build, MOESCOPE_REL: test_landscape and test_study sweep on
the sanitizers' build.

The bash completion is valid bash, completes the commands, gives each command
the options its --help names (and no others) and a method's values; `make
install-docs` installs the manual and the completion where man and bash look."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unicodedata

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = testutil.ROOT
README = os.path.join(ROOT, "README.md")
MAN = os.path.join(ROOT, "assets", "moescope.1")
COMPLETION = os.path.join(ROOT, "assets", "moescope.bash")
SAMPLES = os.path.join(ROOT, "sample-checkpoints")
OUTPUT_OPTS = {"-o", "--output", "--json", "--csv", "--png", "--latex", "--curves-png", "--scatter-png",
               "--dump-outputs", "--eval-out", "--out-dir", "--png-live", "--dir", "--angles-png", "--r2-png"}
PLACEHOLDER = re.compile(r"^(A|B|E|S|CKPT|DIR|COST|OUT|TEACHER|FILE|F|K|N|L|T|X|P|R|M|NETWORK|HF_CHECKPOINT)"
                         r"(\.safetensors|_dir|\.json)?$|\.\.\.|…|^\[|\]$|\||<|^~|A_dir|B_dir|_aligned_dir|\$")
# the options every command takes (src/cli/cli_family.c); --help everywhere
COMMON = {"--family", "--top-k", "--norm-topk-prob", "--routed-scaling", "--n-group", "--topk-group",
          "--ignore-capture-layer", "--help", "-h"}
# network commands that evaluate every order or every point: minutes under the sanitizers
HEAVY_NETWORK = {"landscape", "study", "curve", "diagnose", "merge", "lesson", "geometry"}
# commands that sweep every order: on the release build
SWEEPS = {"landscape", "study"}


def roff_plain(s):
    """roff text as printed: escapes undone (enough for commands and option names)"""
    s = s.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\").replace("\\(em", "-")
    return re.sub(r"\\f[BIRP]", "", s)


def commands_of(lines):
    """the moescope command lines of a code block's lines, continuations joined and
    $NAME expanded from the block's NAME=value lines"""
    out, cur, var = [], None, {}
    for s in lines:
        m = re.match(r"^([A-Z_][A-Z0-9_]*)=(\S+)$", s.strip())
        if m and cur is None:
            var[m.group(1)] = m.group(2)
            continue
        if cur is not None:
            cur += " " + s.strip()
        elif re.match(r"^(\./)?moescope( |$)", s.strip()):
            cur = s.strip()
        else:
            continue
        if cur.rstrip().endswith("\\"):
            cur = cur.rstrip()[:-1]
        else:
            for k, v in var.items():
                cur = cur.replace("$" + k, v)
            out.append(cur)
            cur = None
    return out


def commands_of_readme(text):
    """the command lines of the README's indented code blocks"""
    out, block = [], []
    for l in text.splitlines() + [""]:
        if l.startswith("    "):
            block.append(l[4:])
        elif l.strip() or not block:
            out += commands_of(block)
            block = []
    return out


def commands_of_man(text):
    """the command lines of the manual's no-fill blocks (.nf ... .fi)"""
    out, block, nf = [], [], False
    for l in text.splitlines():
        if l.startswith(".nf"):
            nf, block = True, []
        elif l.startswith(".fi"):
            nf = False
            out += commands_of(block)
        elif nf and not l.startswith("."):
            block.append(roff_plain(l))
    return out


_help = {}
RAN = []  # the documented commands run


def help_of(cmd):
    if cmd not in _help:
        _help[cmd] = run(*([cmd] if cmd else []), "--help").stdout
    return _help[cmd]


def options_of_help(cmd):
    """the options a command's --help names"""
    return set(re.findall(r"(?:^|[\s\[,|(])(--?[a-zA-Z][a-zA-Z0-9-]*)", help_of(cmd)))


def check_command(line, where, commands, work):
    words = shlex.split(line.split(" #")[0])
    if not words:
        return
    rest = words[1:]
    cmd = rest[0] if rest and rest[0] in commands else ""
    args = rest[1:] if cmd else rest
    text = help_of(cmd) + (help_of("") if not cmd else "")
    opts = [a.strip("[]").split("=")[0] for a in args if re.match(r"^\[*-[a-zA-Z-]", a)]
    bad = [o for o in opts if o not in COMMON and
           not re.search(r"(^|[\s\[,|(])" + re.escape(o) + r"([\s\]=,|)]|$)", text)]
    check(not bad, "%s: `%s`: options its --help names (%s)" % (where, line, bad))
    if not cmd and (not args or re.fullmatch(r"[a-z][a-z-]*", args[0])):  # a bare word: a command
        check(False, "%s: `%s`: a command moescope --help lists" % (where, line))
        return
    # the optional parts ([--layer moe]) are checked above; the rest may run
    kept, depth = [], 0
    for a in args:
        if depth == 0 and not a.startswith("["):
            kept.append(a)
        depth = max(0, depth + a.count("[") - a.count("]"))
    args = kept
    placeholder = any(PLACEHOLDER.search(a) for a in args)
    # the samples' paths exist; other paths that do not are the reader's own (placeholders)
    prev, network = "", False
    for a in args:
        if prev not in OUTPUT_OPTS and not a.startswith("-") and ("/" in a or a.endswith(".safetensors")):
            if a.startswith(("sample-checkpoints/", "./sample-checkpoints/")):
                check(os.path.exists(os.path.join(ROOT, a)), "%s: `%s`: %s exists" % (where, line, a))
                network |= bool(re.match(r"(\./)?sample-checkpoints/(gpt|vit)/", a))
            elif not os.path.exists(os.path.join(work, a)):
                placeholder = True
        prev = a if a.startswith("-") else ""
    if placeholder or not cmd or cmd == "train" or (network and cmd in HEAVY_NETWORK):
        return  # the options are checked
    argv = list(args)
    if cmd == "lesson" and "--print" not in argv:
        argv.append("--print")
    key = " ".join([cmd] + args)
    if key in RAN:  # the README and the manual show it alike: once is enough
        return
    binary = testutil.MOESCOPE_REL if cmd in SWEEPS else testutil.MOESCOPE
    r = subprocess.run([binary, cmd] + argv, cwd=work, capture_output=True, text=True)
    RAN.append(key)
    check(r.returncode == 0, "%s: `%s` runs (exit %d): %s" % (where, line, r.returncode, r.stderr.strip()[-400:]))
    return r


def key_names():
    """the key names of ui/keys.c's table entries that have a help line"""
    src = open(os.path.join(ROOT, "ui", "keys.c")).read()
    names = re.findall(r'\{[^{}]*?ACT_\w+,\s*"([^"]+)",\s*"[^"]+"\}', src)
    toks = set()
    for n in names:
        toks.update(t for t in re.split(r"(?<=\S)/(?=\S)| ", n) if t)
    return toks


def readme_checks(readme, commands):
    first = "\n".join(readme.splitlines()[:40])
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    test_cmd = [l.split("#")[0].strip() for l in ci.splitlines() if l.strip().startswith("make ")][-1]
    check(re.search(r"^    make deps run\b", first, re.M), "README's first screen: `make deps run`")
    check(re.search(r"^    %s\b" % re.escape(test_cmd), first, re.M),
          "README's first screen: the test command .ci/run runs (%s)" % test_cmd)
    check("man assets/moescope.1" in first, "README's first screen points at the manual")
    for task in ("Explore", "Teach", "Diagnose"):
        check(re.search(r"^### %s" % task, readme, re.M), "README: a worked example: %s" % task)
    keys = readme.split("## The explorer", 1)[-1].split("\n## ", 1)[0]
    toks = key_names()
    check(len(toks) >= 30, "ui/keys.c's keys found (%d)" % len(toks))
    for k in sorted(toks):
        check("`%s`" % k in keys, "README's keys list `%s`" % k)
    # every bundled sample: each folder of sample-checkpoints/ (and of its network pools) by name
    samples = readme.split("## The samples", 1)[-1].split("\n## ", 1)[0]
    folders = [d for d in sorted(os.listdir(SAMPLES)) if os.path.isdir(os.path.join(SAMPLES, d))]
    check(len(folders) >= 8, "sample folders found: %s" % folders)
    for d in folders:
        check("`%s/`" % d in samples, "README's samples name `%s/`" % d)
        for sub in sorted(os.listdir(os.path.join(SAMPLES, d))):
            if os.path.isdir(os.path.join(SAMPLES, d, sub)) and not sub.startswith("seed"):
                check("`%s/%s/`" % (d, sub) in samples, "README's samples name `%s/%s/`" % (d, sub))
    check("teacher4" in samples and "make run" in samples, "README's samples: teacher4, which make run opens")
    mk = open(os.path.join(ROOT, "Makefile")).read()
    run_a = re.search(r"^SAMPLE_A := sample-checkpoints/(\w+)/", mk, re.M)
    check(run_a is not None and "`%s/`" % run_a.group(1) in samples,
          "README's samples name the set make run opens (%s)" % (run_a and run_a.group(1)))


def manual_checks(man, commands):
    plain = roff_plain(man)
    if shutil.which("groff"):
        r = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", MAN], capture_output=True, text=True)
        check(r.returncode == 0 and r.stderr.strip() == "", "groff -ww renders the manual without warnings: %s"
              % r.stderr[:300])
    elif os.environ.get("CI"):  # make deps installs it: not rendering the page is a failure
        check(False, "groff is installed (CI is set; make deps installs groff-base)")
    else:
        testutil.skip_part("groff rendering (groff is not installed: make deps installs groff-base)")
    if shutil.which("man"):
        r = subprocess.run(["man", "--warnings", "-l", MAN], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LANG="C.UTF-8"))
        check(r.returncode == 0 and r.stderr.strip() == "" and "MOESCOPE(1)" in r.stdout
              and "ENVIRONMENT" in r.stdout, "man -l reads the manual without warnings: %s" % r.stderr[:300])
        # the text fits 80 columns (the examples' command lines, indented 11, may not)
        wide = [l for l in r.stdout.splitlines() if not l.startswith(" " * 11)
                and len([c for c in l if not unicodedata.combining(c)]) > 80]
        check(not wide, "at 80 columns the manual's text fits (%d lines wider): %s" % (len(wide), wide[:3]))
    elif os.environ.get("CI"):
        check(False, "man is installed (CI is set; make deps installs man-db)")
    else:
        testutil.skip_part("man -l (man-db is not installed: make deps installs it)")
    check(not re.search(r"\bSPEC\b", man), "the manual never cites SPEC")
    sections = re.split(r'^(?=\.S[SH] )', man, flags=re.M)
    for c in commands:
        sec = [s for s in sections if s.startswith('.SS "moescope %s"' % c)]
        check(len(sec) == 1, "the manual has a section for `%s`" % c)
        if sec:
            body = roff_plain(sec[0])
            for o in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_of(c))) - {"--help"}):
                check(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), body),
                      "the manual's `moescope %s` names %s" % (c, o))
    tui = help_of("")
    for o in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", tui.split("commands:")[0])) - {"--help"}):
        check(o in plain, "the manual names %s" % o)
    mkeys = roff_plain(man.split("\n.SS Keys", 1)[-1].split("\n.S", 1)[0])
    for k in sorted(key_names()):
        check(re.search(r"(^|[\s/(])%s([\s/),]|$)" % re.escape(k), mkeys, re.M), "the manual's keys list %s" % k)
    for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "FILES", "SEE ALSO"):
        check(re.search(r'^\.SH "?%s"?$' % s, man, re.M), "the manual has the section %s" % s)


def documented_commands(readme, man, commands):
    work = tempfile.mkdtemp()
    try:
        os.symlink(SAMPLES, os.path.join(work, "sample-checkpoints"))
        rc = commands_of_readme(readme)
        mc = commands_of_man(man)
        check(len(rc) >= 6 and len(mc) >= 30, "documented commands found: README %d, manual %d" % (len(rc), len(mc)))
        results = {}
        for line in rc:
            results[line] = check_command(line, "README", commands, work)
        for line in mc:
            check_command(line, "manual", commands, work)
        print("documented commands: README %d, manual %d; run: %d" % (len(rc), len(mc), len(RAN)))
        for line in RAN:
            print("  ran: " + line[:110])
        check(len(RAN) >= 10, "the documented commands are run (%d)" % len(RAN))
        # the worked examples print what the README shows: the orders each method chose
        ls = [r for l, r in results.items() if r is not None and " landscape " in l and "dense8" in l]
        check(len(ls) == 1, "the Explore example ran")
        shown_orders = re.findall(r"^    (gate|expert)\s+((?:\d ){7}\d) ", readme, re.M)
        check(len(shown_orders) == 2, "the Explore example shows both methods' orders")
        for shown in shown_orders:
            check(ls and re.search(r"^%s\s+%s " % shown, ls[0].stdout, re.M),
                  "the Explore example's %s order is %s" % shown)
        dg = [r for l, r in results.items() if r is not None and " diagnose " in l]
        check(len(dg) == 1, "the Diagnose example ran")
        flagged = re.findall(r"^    \[warn\] (.{30})", readme, re.M)
        check(len(flagged) >= 2, "the Diagnose example shows its flags (%d)" % len(flagged))
        for f in flagged:
            check(dg and "[warn] " + f in dg[0].stdout, "the Diagnose example flags %r" % f)
        m = re.search(r"Here (\w+) findings are flagged", readme)
        n = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}.get(m.group(1) if m else "")
        check(dg and n == dg[0].stdout.count("[warn]"), "the Diagnose example's count of flags (%s)" % n)
    finally:
        shutil.rmtree(work)


def completion_checks(commands):
    r = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True)
    check(r.returncode == 0, "the completion is valid bash: %s" % r.stderr[:300])
    script = ('source "$1"; cd "$2"; t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));'
              ' COMPREPLY=(); _moescope; echo "${COMPREPLY[*]}"; };'
              ' t moescope ""; t moescope la; t ./moescope curve --method ""; t moescope align x -o sample-checkpoints/d;'
              ' t moescope-mpi ""; for c in "" ' + " ".join(commands) + '; do echo $(_moescope_options "$c"); done')
    r = subprocess.run(["bash", "-c", script, "bash", COMPLETION, ROOT], capture_output=True, text=True)
    lines = r.stdout.split("\n")
    check(r.returncode == 0 and len(lines) >= 6 + len(commands), "the completion runs: %s" % r.stderr[:300])
    if len(lines) < 6 + len(commands):
        return
    check(all(c in lines[0].split() for c in commands) and "sample-checkpoints" in lines[0].split(),
          "completion: every command, and the folders (%s)" % lines[0][:200])
    check(lines[1].split() == ["landscape", "lap"], "completion: la -> landscape lap (%s)" % lines[1])
    check(lines[2].split() == ["gate", "expert", "activation", "router"], "completion: --method's four methods (%s)" % lines[2])
    check("sample-checkpoints/dense4" in lines[3].split() and "sample-checkpoints/digits.csv.gz" not in lines[3],
          "completion: align -o a checkpoint's folder (%s)" % lines[3][:200])
    mpi = set(lines[4].split())
    check({"landscape", "study"} <= mpi and not mpi & (set(commands) - {"landscape", "study"}),
          "completion: moescope-mpi's commands (%s)" % lines[4])
    tui = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", help_of("").split("commands:")[0])) - COMMON
    check(tui <= set(lines[5].split()), "completion: the explorer's options (%s missing)" % sorted(tui - set(lines[5].split())))
    # mentions in a command's text that are not its options: study names train's flag, geometry the script's
    mention = {"study": {"--make-teacher"}, "geometry": {"--layers"}}
    accepted = {"train": {"--output"}}
    for c, l in zip(commands, lines[6:]):
        got, want = set(l.split()), options_of_help(c) - mention.get(c, set())
        check(want - COMMON <= got, "completion: %s's options (%s missing)" % (c, sorted(want - COMMON - got)))
        check(got <= want | COMMON | accepted.get(c, set()),
              "completion: %s offers only its options (%s extra)" % (c, sorted(got - want - COMMON)))


def install_checks(man):
    dest = tempfile.mkdtemp()
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        r = subprocess.run(["make", "-s", "-C", ROOT, "install-docs", "DESTDIR=" + dest, "PREFIX=/usr"],
                           capture_output=True, text=True, env=env)
        mp = os.path.join(dest, "usr/share/man/man1/moescope.1")
        cp = os.path.join(dest, "usr/share/bash-completion/completions/moescope")
        check(r.returncode == 0 and os.path.isfile(mp) and os.path.isfile(cp), "make install-docs: %s" % r.stderr[:300])
        if os.path.isfile(mp) and os.path.isfile(cp):
            check(open(mp).read() == man, "the installed manual is assets/moescope.1")
            check(open(cp).read() == open(COMPLETION).read(), "the installed completion is assets/moescope.bash")
        if shutil.which("man") and os.path.isfile(mp):
            r = subprocess.run(["man", "-M", os.path.join(dest, "usr/share/man"), "-w", "moescope"],
                               capture_output=True, text=True)
            check(r.stdout.strip() == mp, "man finds the installed page: %s %s" % (r.stdout, r.stderr[:200]))
    finally:
        shutil.rmtree(dest)


def main():
    readme = open(README, encoding="utf-8").read()
    man = open(MAN, encoding="utf-8").read() if os.path.exists(MAN) else ""
    check(man != "", "the manual assets/moescope.1 exists")
    check(not re.search(r"\bSPEC\b", readme), "the README never cites SPEC")
    top = help_of("")
    commands = [l.split()[0] for l in top.split("commands:", 1)[1].strip().splitlines() if l.strip()]
    check(len(commands) >= 14, "moescope --help lists the commands (%d)" % len(commands))
    readme_checks(readme, commands)
    manual_checks(man, commands)
    documented_commands(readme, man, commands)
    completion_checks(commands)
    install_checks(man)


main()
sys.exit(testutil.summary("test_docs_manual"))
