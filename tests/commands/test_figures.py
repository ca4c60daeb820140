"""tests/commands/test_figures.py - the figures as a talk or a paper needs them: titles
name both checkpoints; curve --png and landscape --curves-png write one legend
format ("name [order] (barrier x)", 3 significant figures, the numbers equal to
the landscape's JSON); landscape --png marks the identity and names the best
last; --size sets the pixel size and --font-scale changes the drawing; a
figure name ending in .svg writes SVG that parses as XML and holds the same
series (same legend texts, one point per t) as the PNG. Titles and legends are
read from the PNG's text chunks ("Title", "Legend")."""
import json
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, png_info, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
D4 = os.path.join(ROOT, "sample-checkpoints", "dense4")
A, B, E = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
SVG = "{http://www.w3.org/2000/svg}"


def svg_series(path):
    """[(label, number of points)] of the SVG's series groups"""
    root = ET.parse(path).getroot()
    out = []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "series":
            continue
        pts = sum(len(pl.get("points").split()) for pl in g.iter(SVG + "polyline"))
        if not pts:
            pts = len(list(g.iter(SVG + "circle")))
        out.append((g.get("data-label"), pts))
    return root, out


LABEL = re.compile(r"^(.+?) \[((?:\d+ )*\d+)\] \((acc\. )?barrier (-?[0-9.e+-]+)\)$")


def sig3(x):
    return float("%.3g" % x)


def main():
    if not os.path.exists(A):
        print("test_figures: no sample checkpoints")
        check(False, "sample checkpoints present")
        return
    work = tempfile.mkdtemp()
    j = os.path.join(work, "l.json")
    lpng, cpng, csvg = (os.path.join(work, f) for f in ("l.png", "c.png", "c.svg"))
    r = run("landscape", A, B, "--eval", E, "--json", j, "--png", lpng, "--curves-png", cpng, "-q")
    check(r.returncode == 0, "landscape: %s" % r.stderr)
    r = run("landscape", A, B, "--eval", E, "--curves-png", csvg, "-q")
    check(r.returncode == 0, "landscape --curves-png .svg: %s" % r.stderr)
    if r.returncode:
        return
    L = json.load(open(j))

    # titles name both checkpoints (folder and name)
    w, h, text, _ = png_info(cpng)
    check("dense4/seed1" in text.get("Title", "") and "dense4/seed2" in text.get("Title", ""),
          "curves title names the checkpoints: %r" % text.get("Title"))
    _, _, ltext, _ = png_info(lpng)
    check("dense4/seed1" in ltext.get("Title", "") and "dense4/seed2" in ltext.get("Title", ""),
          "landscape title names the checkpoints: %r" % ltext.get("Title"))
    check((w, h) == (960, 600), "default size %dx%d" % (w, h))

    # one legend format, 3 significant figures, the JSON's numbers
    want = {"naive": L["naive"], "skip-order": L["skip_order"], "gate cost": L["methods"]["gate"],
            "expert cost": L["methods"]["expert"]}
    legend = text.get("Legend", "").split("\n")
    seen = set()
    for line in legend:
        if line == "chord":
            continue
        m = LABEL.match(line)
        check(m is not None, "legend entry %r in the shared format" % line)
        if not m or m.group(1) not in want:
            continue
        c = want[m.group(1)]
        seen.add(m.group(1))
        check(m.group(2) == " ".join(map(str, c["order"])), "%s: order %s" % (line, c["order"]))
        check(float(m.group(4)) == sig3(c["barrier"]), "%s: barrier %.3g" % (line, c["barrier"]))
    check(seen == set(want) and legend[-1] == "chord", "every curve and the chord in the legend: %r" % legend)

    # curve --png: the same format for the same curves
    cc = os.path.join(work, "cc.png")
    r = run("curve", A, B, "--eval", E, "--png", cc)
    check(r.returncode == 0, "curve --png: %s" % r.stderr)
    if r.returncode == 0:
        _, _, t2, _ = png_info(cc)
        l2 = t2.get("Legend", "").split("\n")
        check(all(x == "chord" or LABEL.match(x) for x in l2) and
              any(x.startswith("naive ") and x in legend for x in l2),
              "curve --png legend in the same format, naive's entry identical: %r" % l2)
        check(t2.get("Title") == text.get("Title"), "curve --png title %r" % t2.get("Title"))

    # curve --order: "order [2 0 3 1]" (the order apart from the name), several "order #1", "order #2"
    oc = os.path.join(work, "oc.png")
    r = run("curve", A, B, "--eval", E, "--png", oc, "--order", "2,0,3,1")
    r2 = run("curve", A, B, "--eval", E, "--png", oc + ".2.png", "--order", "2,0,3,1", "--order", "1,0,3,2")
    check(r.returncode == 0 and r2.returncode == 0, "curve --order --png: %s %s" % (r.stderr, r2.stderr))
    if r.returncode == 0 and r2.returncode == 0:
        l1 = png_info(oc)[2].get("Legend", "").split("\n")
        l2 = png_info(oc + ".2.png")[2].get("Legend", "").split("\n")
        check(any(x.startswith("order [2 0 3 1] (barrier ") for x in l1), "one --order: %r" % l1)
        check(any(x.startswith("order #1 [2 0 3 1] (barrier ") for x in l2) and
              any(x.startswith("order #2 [1 0 3 2] (barrier ") for x in l2), "two --order: %r" % l2)

    # the landscape figure: the identity marked, the best named last (drawn on top)
    ll = ltext.get("Legend", "").split("\n")
    check(any(x.startswith("identity order (rank ") for x in ll), "identity marked: %r" % ll)
    check(ll[-1].startswith("best (barrier "), "best last: %r" % ll)

    # SVG: XML with the PNG's series, one point per t (the chord: 2)
    try:
        root, series = svg_series(csvg)
        ok = True
    except ET.ParseError as e:
        check(False, "SVG parses: %s" % e)
        ok = False
    if ok:
        check(root.tag == SVG + "svg" and root.get("width") == "960", "an SVG root, 960 wide")
        check([s[0] for s in series] == legend, "SVG series = PNG legend: %r vs %r" % (series, legend))
        T = L["points"]
        check(all(n == (2 if lab == "chord" else T) for lab, n in series), "points per series: %r" % series)
        # one line a tspan; the lines joined by a space are the title
        titles = [" ".join(x.text for x in t.iter(SVG + "tspan")) for t in root.iter(SVG + "text")
                  if t.get("class") == "title"]
        check(titles == [text.get("Title")], "SVG title %r" % titles)

    # --log-rank: ranks 1, 10 and 24 at log-spaced positions (SVG coordinates)
    lsvg = os.path.join(work, "log.svg")
    r = run("landscape", A, B, "--eval", E, "--png", lsvg, "--log-rank", "-q")
    check(r.returncode == 0, "landscape --log-rank: %s" % r.stderr)
    if r.returncode == 0:
        _, series = svg_series(lsvg)
        root = ET.parse(lsvg).getroot()
        g = [g for g in root.iter(SVG + "g") if g.get("class") == "series" and g.get("data-label", "").startswith("all ")]
        xs = [float(p.split(",")[0]) for pl in g[0].iter(SVG + "polyline") for p in pl.get("points").split()] if g else []
        if len(xs) == 24:
            frac = (xs[9] - xs[0]) / (xs[23] - xs[0])
            check(abs(frac - 1 / __import__("math").log10(24)) < 1e-3, "log rank axis: rank 10 at %.4f of the way" % frac)
        else:
            check(False, "log rank SVG: 24 points, got %d" % len(xs))
        ticks = [t.text for t in root.iter(SVG + "text") if t.text in ("1", "10")]
        check(ticks == ["1", "10"], "log rank ticks at 1 and 10: %r" % ticks)
        # each marked order has its dashed guide line, as in the PNG: at the mark's x, in its colour
        marks = {}
        for gg in root.iter(SVG + "g"):
            if gg.get("class") == "series" and not gg.get("data-label", "").startswith("all "):
                for c in gg.iter(SVG + "circle"):
                    marks[round(float(c.get("cx")), 2)] = c.get("fill")
        guides = {round(float(l.get("x1")), 2): l.get("stroke") for l in root.iter(SVG + "line")
                  if l.get("class") == "guide"}
        check(len(marks) >= 2 and guides == marks and
              all(l.get("stroke-dasharray") for l in root.iter(SVG + "line") if l.get("class") == "guide"),
              "SVG landscape guide lines at the marked orders: guides %r, marks %r" % (guides, marks))
        grid = [l for l in root.iter(SVG + "line") if l.get("class") == "grid"]
        check(len(grid) >= 4, "SVG grid lines at the ticks: %d" % len(grid))

    # --size and --font-scale
    big, big2 = os.path.join(work, "big.png"), os.path.join(work, "big2.png")
    r = run("curve", A, B, "--eval", E, "--png", big, "--size", "1200x700")
    r2 = run("curve", A, B, "--eval", E, "--png", big2, "--size", "1200x700", "--font-scale", "2")
    check(r.returncode == 0 and r2.returncode == 0, "--size, --font-scale: %s %s" % (r.stderr, r2.stderr))
    if r.returncode == 0 and r2.returncode == 0:
        w1, h1, _, px1 = png_info(big)
        w2, h2, _, px2 = png_info(big2)
        check((w1, h1) == (1200, 700) and (w2, h2) == (1200, 700), "--size 1200x700: %dx%d" % (w1, h1))
        # larger text covers more pixels: fewer white bytes
        check(px2.count(255) < px1.count(255), "--font-scale 2 draws bigger")
    r = run("curve", A, B, "--eval", E, "--png", big, "--size", "12x7")
    check(r.returncode == 2 and "--size" in r.stderr, "--size 12x7 refused: %s" % r.stderr)
    r = run("landscape", A, B, "--eval", E, "--png", big, "--font-scale", "9", "-q")
    check(r.returncode == 2 and "--font-scale" in r.stderr, "--font-scale 9 refused: %s" % r.stderr)

    # the figures of panels (scatter, study): SVG for a .svg name, the same series as the PNG
    for what, args in (("scatter", ["landscape", A, B, "--eval", E, "-q", "--scatter-png"]),
                       ("study", ["study", A, B, os.path.join(D4, "seed3.safetensors"), "--eval", E,
                                  "--png"])):
        png, svg = os.path.join(work, what + ".png"), os.path.join(work, what + ".svg")
        r1, r2 = run(*(args + [png])), run(*(args + [svg]))
        check(r1.returncode == 0 and r2.returncode == 0, "%s figure: %s %s" % (what, r1.stderr, r2.stderr))
        if r1.returncode or r2.returncode:
            continue
        w, h, text, _ = png_info(png)
        root, series = svg_series(svg)
        check(root.tag == SVG + "svg" and (root.get("width"), root.get("height")) == (str(w), str(h)),
              "%s: the SVG is an <svg> of the PNG's size %dx%d" % (what, w, h))
        panels = [g for g in root.iter(SVG + "g") if g.get("class") == "panel"]
        # scatter: a panel per matching method (gate, expert, activation, router); study: 2
        want = {"scatter": 4, "study": 2}[what]
        check(len(panels) == want, "%s: %d panels in the SVG (%d)" % (what, want, len(panels)))
        labels = [l for l, _ in series if l]
        check(labels == text.get("Legend", "").split("\n"),
              "%s: SVG series %r equal the PNG legend %r" % (what, labels, text.get("Legend")))
        check(all(n > 0 for _, n in series), "%s: every series draws something" % what)
        r = run(*(args + [png, "--size", "1200x700"]))
        check(r.returncode == 0 and png_info(png)[0] == 1200, "%s: --size 1200x700 gives a 1200-pixel-wide figure: %s"
              % (what, r.stderr[-200:]))
        if what == "study":
            # both panels name the pairs on a categorical axis, not numbers 1..P
            ticks = [t.text for p in panels for t in p.iter(SVG + "text") if t.text]
            pairs = ["seed1-seed2", "seed1-seed3", "seed2-seed3"]
            check(all(ticks.count(x) == 2 for x in pairs), "study: each pair named on both panels' axes: %r" % ticks)
            check(not any(t in ("1", "2", "3", "4", "5", "6") for t in ticks[:ticks.index("rank percentile (%)")]
                          if t not in ("0",)), "study: no numbered pairs: %r" % ticks)


main()
sys.exit(testutil.summary("test_figures"))
