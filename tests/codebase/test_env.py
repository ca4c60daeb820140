"""test_env.py - every environment variable is read in one place and documented
from it: src/core/env.c's table names each one and what it does, no other file
of src/ or ui/ calls getenv, every env_var of include/core/env.h has its row,
and the manual's ENVIRONMENT section (assets/moescope.1) is that table, in its
order and words (on a mismatch the section to paste is printed). The test
suite's own switches (core/test_hooks.h) are read there too, from a table of
their own: named MOESCOPE_TEST_* or MOESCOPE_MPI_TEST_*, and in neither the
users' table nor the manual."""
import os
import re
import sys

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = testutil.ROOT


def c_table(text):
    """[(enum, name, what)] of the vars[] initializer: `[ENV_X] = {"NAME", "what" "more"}`"""
    out = []
    for m in re.finditer(r'\[(ENV_\w+)\]\s*=\s*\{\s*"([^"]+)"\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\}', text):
        what = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3)))
        out.append((m.group(1), m.group(2), what))
    return out


def enum_names(text):
    body = re.search(r"typedef enum \{(.*?)\} env_var;", text, re.S).group(1)
    return [n for n in re.findall(r"\b(ENV_\w+)\b", body) if n != "ENV_COUNT"]


def roff_text(s):
    """roff as printed, for the table's words: the escapes the manual uses undone"""
    for a, b in (("\\-", "-"), ("\\&", ""), ("\\e", "\\"), ("\\(em", "\u2014")):
        s = s.replace(a, b)
    return re.sub(r"\\f[BIRP]", "", s)


def man_list(text):
    """[(name, what)] of the manual's ENVIRONMENT section: ".TP", ".B NAME", then its words"""
    m = re.search(r"^\.SH ENVIRONMENT\n(.*?)(?=^\.SH |\Z)", text, re.S | re.M)
    if not m:
        return None
    items = []
    for block in re.split(r"^\.TP\n", m.group(1), flags=re.M)[1:]:
        b = re.match(r"\.B (\S+)\n(.*)", block, re.S)
        if b:
            items.append((b.group(1), " ".join(roff_text(b.group(2)).split())))
    return items


def man_block(table):
    return "\n".join(".TP\n.B %s\n%s" % (name, what.replace("\\", "\\e").replace("-", "\\-")) for _, name, what in table)


# the parsers bite
planted = '[ENV_A] = {"A_VAR", "one " "two"},\n    [ENV_B] = {"B", "x"},'
check(c_table(planted) == [("ENV_A", "A_VAR", "one two"), ("ENV_B", "B", "x")], "c_table: %s" % c_table(planted))
planted_man = ".SH ENVIRONMENT\n.PP\nintro\n.TP\n.B A_VAR\none\ntwo \\-1\n.TP\n.B B\nx\n.SH EXIT STATUS\n"
check(man_list(planted_man) == [("A_VAR", "one two -1"), ("B", "x")], "man_list: %s" % man_list(planted_man))

env_c = open(os.path.join(ROOT, "src/core/env.c")).read()
env_h = open(os.path.join(ROOT, "include/core/env.h")).read()
table = c_table(env_c)
enums = enum_names(env_h)
check(len(table) >= 10, "env.c's table has %d rows" % len(table))
check([e for e, _, _ in table] == enums, "env.c's rows are env.h's env_vars, in order: %s vs %s"
      % ([e for e, _, _ in table], enums))
check(len(set(n for _, n, _ in table)) == len(table), "each variable named once")

# no getenv anywhere else
stray = []
for top in ("src", "ui"):
    for d, _, fs in os.walk(os.path.join(ROOT, top)):
        for f in fs:
            path = os.path.relpath(os.path.join(d, f), ROOT)
            if not f.endswith((".c", ".h")) or path == "src/core/env.c":
                continue
            for i, line in enumerate(open(os.path.join(ROOT, path), errors="replace"), 1):
                if re.search(r"\b(secure_)?getenv\s*\(", line):
                    stray.append("%s:%d" % (path, i))
check(not stray, "getenv outside src/core/env.c: %s" % stray)

# the test hooks: their own table, none of them in what users see
hooks = re.findall(r'\[(HOOK_\w+)\]\s*=\s*"([^"]+)"', env_c)
hooks_h = open(os.path.join(ROOT, "include/core/test_hooks.h")).read()
hook_enum = [n for n in re.findall(r"\b(HOOK_\w+)\b", re.search(r"typedef enum \{(.*?)\} test_hook;", hooks_h, re.S).group(1))
             if n != "HOOK_COUNT"]
check(len(hooks) >= 3 and [h for h, _ in hooks] == hook_enum, "env.c's hook rows are test_hooks.h's: %s vs %s"
      % (hooks, hook_enum))
for _, name in hooks:
    check(re.match(r"MOESCOPE_(MPI_)?TEST_", name), "hook %s is named as a test switch" % name)
    check(name not in [n for _, n, _ in table], "hook %s is not in the users' table" % name)
man_text = open(os.path.join(ROOT, "assets", "moescope.1")).read()
for _, n, _ in table:
    check(not re.match(r"MOESCOPE_(MPI_)?TEST_", n), "the users' table holds no test switch (%s)" % n)
check(not re.search(r"MOESCOPE_(MPI_)?TEST_", man_text), "the manual names no test switch")

man = man_list(man_text)
want = [(n, " ".join(w.split())) for _, n, w in table]
ok = man == want
check(ok, "the manual's ENVIRONMENT section is env.c's table")
if not ok:
    print("the manual's ENVIRONMENT section should read:\n" + man_block(table))
sys.exit(testutil.summary("test_env"))
