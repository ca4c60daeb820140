"""tests/mutants.py - mutation check (`make mutants`; not part of `make check`).

Each mutant is a small, deliberate bug: a file, an exact source snippet that
must occur exactly once in it, its replacement, and the tests that should
notice. The tree is copied to a scratch directory (the working tree is never
touched), built once, then for each mutant the snippet is replaced, the tree
rebuilt and the tests run; the mutant is KILLED when they fail and SURVIVED
when they pass. A snippet that is missing or ambiguous (the code moved) or a
mutant that does not compile is an ERROR of this list: fix the list.

An equivalent mutant (one no test can kill because the program's behaviour
does not change) says why in "equivalent"; it is still run and reported.

    python3 tests/mutants.py [--asan] [--keep] [--list] [NAME...]

Env: PYTHON (for the python tests), JOBS (make -j, default 2),
MUTANT_TIMEOUT (seconds per mutant's test run, a hang guard; default 1800).
Exit status 0 when every mutant not marked equivalent is killed."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))

# The first group is the audit's (issue 20): each survived the suite before.
MUTANTS = [
    # --- the audit's mutants
    dict(name="landscape-topk-tie-flip", file="src/landscape/landscape_kernel.c",
         find="v8i cand = ~sel[i] & (MOE_RANKS_BEFORE(s[i], iv, bv, bi) | (bi < 0));",
         repl="v8i cand = ~sel[i] & (MOE_RANKS_BEFORE(s[i], bi, bv, iv) | (bi < 0));",
         tests="test_ties test_tui_ties test_landscape test_landscape_api test_golden",
         why="top-k ties in the fused landscape kernel go to the larger index"),
    dict(name="lap-relax-tie-lane", file="src/align/lap.c",
         find="vi4 lb = d < best; /* strict: the earliest column of each lane */",
         repl="vi4 lb = d <= best; /* strict: the earliest column of each lane */",
         tests="test_lap test_lap_scipy",
         why="Dijkstra minimum: the latest tied column of each vector lane"),
    dict(name="layernorm-eps-evaluator", file="src/model/evaluator.c",
         find="double inv = 1.0 / sqrt(var + 1e-5);",
         repl="double inv = 1.0 / sqrt(var + 2e-5);",
         tests="test_layernorm_eps test_eval_oracle test_evaluator",
         why="LayerNorm eps 2e-5 instead of 1e-5 (evaluator)"),
    dict(name="fsync-removed", file="src/io/atomic_file.c",
         find="if (!bad && !direct && fsync(s->fd) != 0 && !s->err) s->err = errno, bad = 1;",
         repl="",
         tests="test_durability test_faults",
         why="the temporary is renamed into place without fsync"),
    dict(name="rank-estimate-off-by-one", file="src/landscape/landscape.c",
         find="L->rank_est[m] = 1.0 + ph * L->n_fact;",
         repl="L->rank_est[m] = ph * L->n_fact;",
         tests="test_landscape test_landscape_api",
         why="sampled mode's rank estimate forgets the 1 +"),
    dict(name="tui-selected-not-plotted", file="ui/app.c",
         find="a->req.has_selected = 1;",
         repl="a->req.has_selected = 0;",
         tests="test_tui",
         why="Enter says 'plotting order' but never plots it"),
    dict(name="lap-help-broken", file="src/cli/cmd_lap.c",
         find="lap_help();\n            return 0;",
         repl="lap_help();\n            return 1;",
         tests="test_faults",
         why="`lap --help` exits 1 (the fault checks were gated on it)"),
    # --- more of the same kinds, across the library and the UI
    dict(name="layernorm-eps-landscape", file="src/landscape/landscape_kernel.c",
         find="v8f var = ((v0 + v1) + (v2 + v3)) / (float)d + 1e-5f;",
         repl="v8f var = ((v0 + v1) + (v2 + v3)) / (float)d + 2e-5f;",
         tests="test_layernorm_eps test_landscape",
         why="LayerNorm eps 2e-5 in the fused landscape kernel"),
    dict(name="tui-order-toggle-ignored", file="src/explore/explore_worker.c",
         find="memcpy(cur, q->order_stage ? order[q->method] : id, sizeof cur);",
         repl="memcpy(cur, order[q->method], sizeof cur);",
         tests="test_tui",
         why="`o` flips the footer but the current curve keeps the expert order"),
    dict(name="tui-wm-toggle-ignored", file="src/explore/explore_worker.c",
         find="{cur, q->wm_stage, &g->pub.current, &g->pub.have_current, \"current\"},",
         repl="{cur, 1, &g->pub.current, &g->pub.have_current, \"current\"},",
         tests="test_tui",
         why="`w` flips the footer but the current curve keeps weight matching"),
    dict(name="lap-colmin-highest-row", file="src/align/lap.c",
         find="vi4 lt = x < cm;",
         repl="vi4 lt = x <= cm;",
         tests="test_lap",
         why="column reduction: the highest tied row wins"),
    dict(name="lap-arr-no-free-preference", file="src/align/lap.c",
         find="if (jf >= 0) {",
         repl="if (jf >= 0 && 0) {",
         tests="test_lap",
         why="augmenting row reduction no longer prefers a free tied column"),
    dict(name="lap-relax-free-last", file="src/align/lap.c",
         find="*jmin = (int)(mnf == mn ? bif : bi);",
         repl="*jmin = (int)bi;",
         tests="test_lap",
         why="Dijkstra minimum no longer prefers a free tied column"),
    dict(name="evaluator-topk-tie", file="src/model/moe_kernels.c",
         find="while (p > 0 && MOE_RANKS_BEFORE(s[i], i, s[sel[p - 1]], sel[p - 1])) {",
         repl="while (p > 0 && MOE_RANKS_BEFORE(s[i], sel[p - 1], s[sel[p - 1]], i)) {",
         tests="test_ties test_evaluator test_eval_oracle test_kernels",
         why="moe_topk (evaluator, diagnose): top-k ties go to the larger index"),
    dict(name="topk-tie-rule-flipped-everywhere", file="include/model/moe_kernels.h",
         find="#define MOE_RANKS_BEFORE(si, i, sj, j) (((si) > (sj)) | (((si) == (sj)) & ((i) < (j))))",
         repl="#define MOE_RANKS_BEFORE(si, i, sj, j) (((si) > (sj)) | (((si) == (sj)) & ((i) > (j))))",
         tests="test_ties test_evaluator test_eval_oracle test_kernels",
         why="every path agrees, but on the larger index: the numpy oracle says otherwise"),
    dict(name="fsync-dir-removed", file="src/io/atomic_file.c",
         find="        fsync(dfd);\n",
         repl="",
         tests="test_durability",
         why="the rename is not made durable (directory not fsynced)"),
    dict(name="gate-cost-no-centring-of-b", file="src/align/cost_matrix.c",
         find="for (int k = 0; k < d; k++) ma[k] -= mb[k];",
         repl="",
         tests="test_align",
         why="gate centring subtracts only A's mean"),
    dict(name="weight-matching-minimises", file="src/align/weight_matching.c",
         find="if (lap_solve(S, h, h, 1, P, &total, err)) return ms_prefix(err, \"weight matching\");",
         repl="if (lap_solve(S, h, h, 0, P, &total, err)) return ms_prefix(err, \"weight matching\");",
         tests="test_align",
         why="weight matching picks the least similar hidden units"),
    dict(name="safetensors-header-bound", file="src/io/safetensors.c",
         find="if (hlen > size - 8) {",
         repl="if (hlen > size) {",
         tests="test_safetensors test_corpus test_hostile test_model_errors",
         why="a header length running up to 8 bytes past the end is accepted"),
    dict(name="safetensors-overlap-only-neighbour", file="src/io/safetensors.c",
         find="if (!prev || t->end > prev->end) prev = t;",
         repl="prev = t;",
         tests="test_safetensors test_corpus test_hostile",
         why="overlap checked against the previous tensor only, not the furthest-reaching",
         equivalent="a tensor that ends before the furthest-reaching one starts inside it, so "
                    "that overlap is reported first and the check stops there"),
    dict(name="safetensors-empty-overlaps", file="src/io/safetensors.c",
         find="if (t->begin == t->end) continue; // empty tensors overlap nothing",
         repl="",
         tests="test_safetensors test_corpus",
         why="an empty tensor whose offsets fall inside another is called an overlap"),
    dict(name="curve-barrier-chord", file="src/landscape/curve.c",
         find="double e = c->loss[m] - ((1.0 - t) * l0 + t * l1);",
         repl="double e = c->loss[m] - l0;",
         tests="test_landscape test_golden",
         why="barrier measured from L(0) instead of the chord"),
    dict(name="curve-auc-weights", file="src/landscape/curve.c",
         find="(m == 0 || m == T - 1 ? 0.5 : 1.0)",
         repl="(m == 0 || m == T - 1 ? 1.0 : 1.0)",
         tests="test_landscape test_golden",
         why="AUC as a plain mean, not the trapezoid rule",
         equivalent="L - chord is exactly 0 at both ends (the chord passes through L(0) and "
                    "L(1) in floating point too), so the end weights multiply zeros"),
    dict(name="curve-auc-normalisation", file="src/landscape/curve.c",
         find="* e / (double)(T - 1);",
         repl="* e / (double)T;",
         tests="test_landscape test_golden",
         why="AUC divided by T instead of T - 1"),
    dict(name="train-layernorm-eps", file="src/model/train.c",
         find="#define LN_EPS 1e-5f",
         repl="#define LN_EPS 2e-5f",
         tests="test_samples test_train",
         why="LayerNorm eps 2e-5 in training"),
    dict(name="rank-ignores-tolerance", file="src/landscape/rank.c",
         find="else r += x < b - tau;",
         repl="else r += x < b;",
         tests="test_rank test_landscape test_landscape_api",
         why="orders within the tie tolerance of the chosen one count as better"),
    dict(name="train-shared-init", file="src/model/train.c",
         find="for (int j = 0; j < c->s; j++) expert_init(&r, &m->shared[j], c);",
         repl="for (int j = 0; j < c->s; j++) expert_init(&r, &m->shared[j], c), expert_init(&r, &m->shared[j], c);",
         tests="test_samples",
         why="shared experts initialised from other random numbers (only shared4 changes)"),
    dict(name="ui-layout-min-curves", file="ui/layout.c",
         find="int min_curves = 8; /* n = 8 still fits at 80x24 */",
         repl="int min_curves = 4; /* n = 8 still fits at 80x24 */",
         tests="test_ui_layout test_tui",
         why="the curves pane shrinks to 4 rows for n = 8 at 80x24"),
]


def log(msg):
    print(msg, flush=True)


def copy_tree(dst):
    """the tracked and untracked (not ignored) files of the working tree"""
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=True).stdout
    for rel in filter(None, out.decode().split("\0")):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(src, d)


def make(tree, args, env_extra=None, timeout=None):
    env = dict(os.environ)
    # a killed TUI mutant fails a wait: one minute is plenty for the real screen
    # (the baseline run proves it), far less than the suite's generous default
    env.setdefault("TUI_WAIT", "60")
    # one kernel set: a mutant is killed or not by the tests' logic, not the kernel
    env.setdefault("SECOND_KERNEL", "none")
    env.update(env_extra or {})
    return subprocess.run(["make", "-j" + os.environ.get("JOBS", "2")] + args, cwd=tree, env=env,
                          capture_output=True, text=True, timeout=timeout)


def main(argv):
    asan = "--asan" in argv
    keep = "--keep" in argv
    names = [a for a in argv if not a.startswith("--")]
    todo = [m for m in MUTANTS if not names or m["name"] in names]
    if "--list" in argv:
        for m in todo:
            log("%-36s %-24s %s" % (m["name"], m["file"], m["why"]))
        return 0
    unknown = set(names) - {m["name"] for m in MUTANTS}
    if unknown:
        log("mutants: unknown name(s): %s" % " ".join(sorted(unknown)))
        return 2
    # a test name that selects nothing would leave its mutant to the other tests
    programs = {os.path.basename(p).rsplit(".", 1)[0] for p in glob.glob(os.path.join(ROOT, "tests", "*", "test_*.*"))}
    bad = sorted({t for m in todo for t in m["tests"].split() if t not in programs})
    if bad:
        log("mutants: the list names tests that do not exist: %s (tests/*/NAME.{c,sh,py})" % " ".join(bad))
        return 2
    target = "check" if asan else "test"
    build = "build/asan" if asan else "build/rel"
    timeout = int(os.environ.get("MUTANT_TIMEOUT", "1800"))
    tree = tempfile.mkdtemp(prefix="moescope-mutants-")
    results = []
    try:
        copy_tree(tree)
        log("mutants: scratch copy in %s; building (%s)" % (tree, build))
        # the binary and every test program: a mutant's test run then only runs tests
        targets = [build + "/moescope"] + sorted(
            build + "/" + os.path.relpath(f, tree)[:-2] for f in glob.glob(os.path.join(tree, "tests", "*", "test_*.c")))
        r = make(tree, targets)
        if r.returncode:
            log(r.stdout[-3000:] + r.stderr[-3000:])
            log("mutants: the unmutated tree does not build")
            return 2
        # every snippet must be present exactly once before anything runs
        list_errors = 0
        for m in todo:
            src = open(os.path.join(tree, m["file"]), encoding="utf-8").read()
            k = src.count(m["find"])
            if k != 1:
                log("ERROR     %-36s snippet found %d times in %s (the code moved: update the list)"
                    % (m["name"], k, m["file"]))
                results.append((m, "ERROR"))
                list_errors += 1
        # the tests the mutants use pass on the unmutated tree
        all_tests = sorted({t for m in todo for t in m["tests"].split()})
        t0 = time.time()
        r = make(tree, [target], {"TESTS": " ".join(all_tests)}, timeout=timeout)
        if r.returncode:
            log(r.stdout[-4000:] + r.stderr[-2000:])
            log("mutants: the tests fail on the unmutated tree; nothing to measure")
            return 2
        log("mutants: baseline passes (%s) in %.0f s" % (" ".join(all_tests), time.time() - t0))
        for m in todo:
            if any(x is m for x, _ in results):
                continue
            path = os.path.join(tree, m["file"])
            orig = open(path, encoding="utf-8").read()
            t0 = time.time()
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(orig.replace(m["find"], m["repl"], 1))
                r = make(tree, targets)
                if r.returncode:  # once more: a loaded machine can fail a tool (pkg-config) now and then
                    r = make(tree, targets)
                if r.returncode:
                    log(r.stdout[-2000:] + r.stderr[-2000:])
                    status = "ERROR"
                    detail = "does not compile"
                else:
                    try:
                        r = make(tree, [target], {"TESTS": m["tests"]}, timeout=timeout)
                        out = r.stdout + r.stderr
                        # the total line of tests/run.sh: the tests ran (not a tool failing)
                        ran = re.search(r"^\d+ passed, \d+ failed", out, re.M) is not None
                        killed = r.returncode != 0
                        fails = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
                        detail = fails[0][:110] if fails else ("tests exit %d" % r.returncode if killed else "")
                        if killed and not ran:
                            log(out[-2000:])
                            killed, detail = None, "the tests did not run"
                    except subprocess.TimeoutExpired:
                        killed, detail = True, "hung (timeout %d s)" % timeout
                    status = "ERROR" if killed is None else "KILLED" if killed else "SURVIVED"
                    if m.get("equivalent"):
                        status += " (equivalent: %s)" % m["equivalent"]
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(orig)
            results.append((m, status))
            log("%-9s %-36s %4.0f s  %s" % (status.split()[0], m["name"], time.time() - t0, detail))
        killed = sum(1 for _, s in results if s.startswith("KILLED"))
        survived = [m["name"] for m, s in results if s.startswith("SURVIVED") and not m.get("equivalent")]
        equiv = sum(1 for m, s in results if m.get("equivalent"))
        errors = sum(1 for _, s in results if s == "ERROR")
        log("mutants: %d killed, %d survived, %d equivalent, %d errors of %d%s"
            % (killed, len(survived), equiv, errors, len(results),
               (" (survived: %s)" % " ".join(survived)) if survived else ""))
        return 1 if survived or errors or list_errors else 0
    finally:
        if keep:
            log("mutants: scratch tree kept at %s" % tree)
        else:
            shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
