"""test_env.py - every environment variable is read in one place and documented
from it: src/core/env.c's table names each one and what it does, no other file
of src/ or ui/ calls getenv, every env_var of include/core/env.h has its row,
and the README's "Environment variables" list is that table, in its order and
words (on a mismatch the list to paste is printed)."""
import os
import re
import sys
import textwrap

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


def readme_list(text):
    """[(name, what)] of the README's section: "- `NAME`: what", wrapped lines joined"""
    m = re.search(r"^## Environment variables\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        return None
    items = []
    for block in re.split(r"\n(?=- `)", m.group(1)):
        b = re.match(r"- `([^`]+)`: (.*)", block.strip(), re.S)
        if b:
            items.append((b.group(1), " ".join(b.group(2).split())))
    return items


def readme_block(table):
    lines = []
    for _, name, what in table:
        lines += textwrap.wrap("- `%s`: %s" % (name, what), 88, subsequent_indent="  ")
    return "\n".join(lines)


# the parsers bite
planted = '[ENV_A] = {"A_VAR", "one " "two"},\n    [ENV_B] = {"B", "x"},'
check(c_table(planted) == [("ENV_A", "A_VAR", "one two"), ("ENV_B", "B", "x")], "c_table: %s" % c_table(planted))
planted_md = "## Environment variables\n\nintro\n\n- `A_VAR`: one\n  two\n- `B`: x\n\n## Next\n"
check(readme_list(planted_md) == [("A_VAR", "one two"), ("B", "x")], "readme_list: %s" % readme_list(planted_md))

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

readme = readme_list(open(os.path.join(ROOT, "README.md")).read())
want = [(n, " ".join(w.split())) for _, n, w in table]
ok = readme == want
check(ok, "the README's \"Environment variables\" list is env.c's table")
if not ok:
    print("the README's list should read:\n" + readme_block(table))
sys.exit(testutil.summary("test_env"))
