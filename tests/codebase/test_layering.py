"""test_layering.py - the code's folders keep one direction of dependence, and no
two files need each other.

The folders, lowest first (a folder may use the ones before it, never one after):

    src/core  <-  src/model  <-  src/io  <-  src/align  <-  src/landscape
      <-  src/network  <-  src/analysis  <-  src/plot  <-  src/explore  <-  src/cli
      <-  src/mpi, ui

(model is the layer and its arithmetic, reading no file; io reads files into it;
network evaluates a whole transformer around the layers and hands the landscape
its loss as an objective; plot draws what landscape and analysis computed). Checked two ways:
  - symbols: every object of the build (nm) uses only symbols defined in its own
    folder or an earlier one, and the file-level call graph has no circle (two
    files, or more, that call each other);
  - includes: every #include "folder/x.h" of src/, include/ and ui/ names its own
    folder or an earlier one (include/F mirrors src/F; ui/'s own headers are ui).
The one exception is the program's entry, src/cli/main.c: it joins the command
line and the explorer (ui/tui.c, ui/lesson_screen.c). A folder that is not in
the order yet (a new one) is held only to the first rule of both: no circle with
any other folder; give it its place in ORDER below.

The checks are first run on planted violations, so they are known to bite."""
import collections
import os
import re
import subprocess
import sys

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = testutil.ROOT
BUILD = os.path.dirname(testutil.MOESCOPE)  # build/asan or build/rel: objects mirror the tree
ORDER = ["src/core", "src/model", "src/io", "src/align", "src/landscape", "src/network", "src/analysis",
         "src/plot", "src/explore", "src/cli", ("src/mpi", "ui")]
RANK = {}
for i, f in enumerate(ORDER):
    for g in (f if isinstance(f, tuple) else (f,)):
        RANK[g] = i
ENTRY = "src/cli/main.c"


def folder_of(path):
    """src/io/x.c -> src/io; include/io/x.h -> src/io; ui/x.c -> ui"""
    parts = path.split("/")
    if parts[0] == "include":
        parts[0] = "src"
    return "ui" if parts[0] == "ui" else "/".join(parts[:2])


def sccs(nodes, edges):
    """the strongly connected components of more than one node (Tarjan, iterative)"""
    index, low, onstack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        onstack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in onstack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def violations(uses):
    """uses: {(from_file, to_file): [why, ...]} -> the messages of every rule broken"""
    bad = []
    files = set(a for a, _ in uses) | set(b for _, b in uses)
    fedges = collections.defaultdict(set)
    for a, b in uses:
        fedges[a].add(b)
    for comp in sccs(files, fedges):
        inside = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(uses[(a, b)])[:3]))
                  for a in comp for b in sorted(fedges[a]) if b in comp]
        bad.append("files that need each other: " + "; ".join(inside))
    dedges = collections.defaultdict(set)
    for (a, b), why in sorted(uses.items()):
        fa, fb = folder_of(a), folder_of(b)
        if fa == fb or a == ENTRY:
            continue
        dedges[fa].add(fb)
        if fa in RANK and fb in RANK and RANK[fb] >= RANK[fa]:
            bad.append("%s (%s) uses %s (%s), which comes after it or beside it: %s" %
                       (a, fa, b, fb, ", ".join(sorted(why)[:3])))
    for comp in sccs(set(dedges) | set(x for v in dedges.values() for x in v), dedges):
        if any(f not in RANK for f in comp):
            bad.append("folders that need each other: " + ", ".join(comp))
    return bad


def sources():
    out = []
    for top in ("src", "ui"):
        for d, _, fs in os.walk(os.path.join(ROOT, top)):
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in fs if f.endswith(".c")]
    return sorted(out)


def symbol_uses():
    """{(file, file): symbols} from nm on each source's object; objects missing"""
    defs, undef, missing = {}, {}, []
    for src in sources():
        obj = os.path.join(BUILD, src[:-2] + ".o")
        if not os.path.exists(obj):
            missing.append(src)
            continue
        out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
        undef[src] = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == "U":
                undef[src].add(p[1])
            elif len(p) == 3 and p[1] in "TDBRCVWG":
                defs.setdefault(p[2], src)
    uses = collections.defaultdict(list)
    for src, syms in undef.items():
        for s in syms:
            d = defs.get(s)
            if d and d != src:
                uses[(src, d)].append(s)
    return uses, missing


def include_uses():
    """{(file, header's module file): ["#include ..."]} for every "folder/x.h" include"""
    uses = collections.defaultdict(list)
    ui_headers = set(f for f in os.listdir(os.path.join(ROOT, "ui")) if f.endswith(".h"))
    for top in ("src", "include", "ui"):
        for d, _, fs in os.walk(os.path.join(ROOT, top)):
            for f in fs:
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.relpath(os.path.join(d, f), ROOT)
                for line in open(os.path.join(ROOT, path), errors="replace"):
                    m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if inc in ui_headers:
                        target = "ui/" + inc
                    elif "/" in inc and os.path.exists(os.path.join(ROOT, "include", inc)):
                        target = "include/" + inc
                    else:
                        continue  # a folder's private header ("plot_int.h"), or a system one
                    # a header and its .c are one module: the graph is of files' needs
                    if target != path and folder_of(target) != folder_of(path):
                        uses[(path, target)].append("#include \"%s\"" % inc)
    return uses


# ---- the checks bite: a planted circle, an upward use, a new folder in a circle
planted = {("src/io/a.c", "src/io/b.c"): ["b_f"], ("src/io/b.c", "src/io/a.c"): ["a_f"],
           ("src/core/x.c", "src/align/y.c"): ["cost_bytes"],
           ("src/net/n.c", "src/plot/p.c"): ["plot_f"], ("src/plot/q.c", "src/net/m.c"): ["net_f"],
           ("ui/v.c", "src/mpi/m.c"): ["mpi_f"], (ENTRY, "ui/tui.c"): ["tui_main"]}
msgs = violations(planted)
check(any("files that need each other" in m and "src/io/a.c" in m for m in msgs), "planted file circle: %s" % msgs)
check(any("src/core/x.c" in m and "src/align/y.c" in m for m in msgs), "planted upward use: %s" % msgs)
check(any("folders that need each other" in m and "src/net" in m for m in msgs), "planted new-folder circle: %s" % msgs)
check(any("ui/v.c" in m for m in msgs), "planted use beside (ui -> mpi): %s" % msgs)
check(not any("tui.c" in m for m in msgs), "the entry may use ui/: %s" % msgs)
check(len(msgs) == 4, "exactly the 4 planted violations: %s" % msgs)
check(folder_of("include/io/x.h") == "src/io" and folder_of("ui/grid.h") == "ui", "folder_of")

# ---- the tree
uses, missing = symbol_uses()
lib_missing = [s for s in missing if not s.startswith("src/mpi/")]  # moescope-mpi needs MPI
check(not lib_missing, "sources without an object in %s (make check builds them): %s" % (BUILD, lib_missing))
check(len(uses) > 100, "the symbol graph has %d file pairs (nm found the objects' uses)" % len(uses))
for m in violations(uses):
    check(False, "symbols: " + m)
inc = include_uses()
check(len(inc) > 100, "the include graph has %d file pairs" % len(inc))
for m in violations(inc):
    check(False, "includes: " + m)
sys.exit(testutil.summary("test_layering"))
