#!/usr/bin/env python3
"""Checks make_report.py's mean-with-interval figures (issue 14: test accuracy against epoch, one line per method,
the 95% interval across seeds shaded) on a small synthetic table in a temporary directory, never in results/: the
line and band drawn are the means and intervals the experiment's judge wrote (lab/mean_bands.hpp), never
recomputed; and that a fitted line is the one the judge wrote into its fits table (issue 13 item 5), never refitted.

usage: tools/test_make_report.py [--gnuplot gnuplot] [--keep]
"""
import argparse
import csv
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_report  # noqa: E402

METHODS = {"exact": 0.86, "linformer": 0.85, "linear-elu": 0.80}
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def synthetic_rows(seeds, epochs):
    """Rows of vit_training_epoch_means.csv: accuracy means rising to each method's plateau, each with an interval
    that is not symmetric about it (no mean +- t s / sqrt(n) the report could have recomputed); none for one seed."""
    rows = []
    for method, top in METHODS.items():
        for epoch in range(1, epochs + 1):
            acc = top - 0.25 * math.exp(-epoch)
            below, above = (0.003 * epoch, 0.005 + 0.001 * epoch) if seeds > 1 else (0, 0)
            rows.append({"method": method, "epoch": epoch, "seeds": seeds, "test_accuracy_mean": repr(acc),
                         "lower95": repr(acc - below), "upper95": repr(acc + above)})
    return rows


def write_results(directory, rows):
    os.makedirs(directory)
    path = os.path.join(directory, "vit_training_epoch_means.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(directory, "claims.csv"), "w", newline="", encoding="utf-8", errors="surrogateescape") as f:
        w = csv.writer(f)  # the ledger's quoting, so that a path with a newline or a comma stays one cell
        w.writerow(["id", "source", "verdict", "metric", "observed", "threshold", "evidence", "note"])
        w.writerow(["U17", "002.txt", "inconclusive", "margin", "-0.01", "0", path, "synthetic"])


def run_report(directory, gnuplot):
    res = subprocess.run([sys.executable, os.path.join(HERE, "make_report.py"), "--results", directory,
                          "--claims-md", os.path.join(directory, "no-catalogue.md"), "--gnuplot", gnuplot],
                         capture_output=True, text=True)
    check(res.returncode == 0, f"make_report failed: {res.stderr.strip()}")
    return open(os.path.join(directory, "REPORT.md"), encoding="utf-8").read()


def bands_and_labels(svg_path):
    """The filled, translucent polygons (bands) of the SVG, as (fill, [(x, y)...]), and its text."""
    root = ET.parse(svg_path).getroot()
    bands, texts = [], []
    for el in root.iter():
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "polygon" and el.get("fill-opacity") and float(el.get("fill-opacity")) < 1:
            pts = [tuple(map(float, p.split(","))) for p in el.get("points").split()]
            bands.append((el.get("fill"), pts))
        if tag in ("text", "tspan") and el.text:
            texts.append(el.text.strip())
    return bands, texts


def check_run_stamps(tmp):
    """run_set_problems: a directory of finished, matching run stamps passes; an unfinished run, a table changed
    after its run, and ledger rows of an unstamped experiment are each named."""
    import json
    import zlib
    d = os.path.join(tmp, "runs")
    os.makedirs(d)
    table = os.path.join(d, "t.csv")
    with open(table, "wb") as f:
        f.write(b"a,inputs\n1,random\n")
    data = open(table, "rb").read()

    def stamp(finished):
        with open(os.path.join(d, "exp_a.run.json"), "w") as f:
            json.dump({"format": "attnlab-run-1", "experiment": "exp_a", "run": "h-1-2", "finished": finished,
                       "tables": [{"file": "t.csv", "bytes": len(data), "crc32": zlib.crc32(data)}], "artifacts": []}, f)

    ledger = [{"experiment": "exp_a"}]
    check(make_report.run_set_problems(tmp, ledger) == [], "a directory without run stamps was refused")
    stamp(True)
    check(make_report.run_set_problems(d, ledger) == [], "a finished run whose table matches was refused")
    stamp(False)
    check(any("did not finish" in p for p in make_report.run_set_problems(d, ledger)), "an unfinished run passed")
    stamp(True)
    with open(table, "ab") as f:
        f.write(b"2,random\n")
    check(any("t.csv not as run h-1-2 wrote them" in p for p in make_report.run_set_problems(d, ledger)),
          "a table changed after its run passed")
    check(any("exp_b: rows in the ledger" in p for p in make_report.run_set_problems(d, ledger + [{"experiment": "exp_b"}])),
          "ledger rows of an unstamped experiment passed")


# ---------------------------------------------------------------- reliability: text that must stay data

# Text that would run a command were it spliced into gnuplot's script: a newline then the shell escape, a
# backquote, quotes closed around system(), a macro, the end of an inline data block. $ATTNLAB_CANARY is set to a
# file that must never appear.
HOSTILE = ['a\n!touch $ATTNLAB_CANARY\n', 'b`touch $ATTNLAB_CANARY`', 'c"; system("touch $ATTNLAB_CANARY"); "',
           "d'; system('touch $ATTNLAB_CANARY'); '", "e @ATTNLAB_CANARY $(touch $ATTNLAB_CANARY) #x", "f\nEOD\n!touch $ATTNLAB_CANARY",
           "g\\\" \\n tab\there \u202e"]


def canary_env(tmp):
    canary = os.path.join(tmp, "CANARY")
    os.environ["ATTNLAB_CANARY"] = canary
    return canary


def check_hostile_text(tmp, gnuplot):
    """Series names and categories from a table (a user's method or family names) reach gnuplot as data only."""
    canary = canary_env(tmp)
    cat = {"name": "hostile_categories", "x": "family", "y": "err", "series": "method", "aggregate": "max",
           "title": "categories"}
    rows = [{"family": h, "method": m, "err": str(1 + i + j)} for i, h in enumerate(HOSTILE) for j, m in enumerate(HOSTILE[:3])]
    notes, why = make_report.build_figure(cat, rows, os.path.join(tmp, "cat.svg"), gnuplot)
    check(why is None, f"a figure of hostile names was not drawn: {why}")
    check(not os.path.exists(canary), "a table's text ran a command through gnuplot")
    if why is None:
        _, texts = bands_and_labels(os.path.join(tmp, "cat.svg"))
        joined = " ".join(texts)
        check("touch $ATTNLAB_CANARY" in joined, "the hostile names are not shown as text")
    line = {"name": "hostile_series", "x": "n", "y": "t", "series": "method", "title": "series"}
    rows = [{"n": str(n), "t": str(n * (i + 1)), "method": h} for i, h in enumerate(HOSTILE) for n in (1, 2, 4)]
    notes, why = make_report.build_figure(line, rows, os.path.join(tmp, "line.svg"), gnuplot)
    check(why is None and not os.path.exists(canary), f"hostile series names: drawn {why is None}, canary {os.path.exists(canary)}")
    bad_spec = dict(line, title="ok\nset output '/tmp/x'")
    try:
        make_report.build_figure(bad_spec, rows, os.path.join(tmp, "spec.svg"), gnuplot)
        check(False, "a figure spec with a newline in its title was passed to gnuplot")
    except ValueError:
        pass


def check_hostile_paths(tmp, gnuplot):
    """A results directory named to run a command (or with a byte that is not UTF-8): the report is made, nothing
    runs, the paths printed are escaped."""
    canary = canary_env(tmp)
    for name in HOSTILE[:6] + [os.fsdecode(b"not-utf8-\xff")]:
        d = os.path.join(tmp, "paths", name)
        write_results(d, synthetic_rows(3, 3))
        res = subprocess.run([sys.executable, os.path.join(HERE, "make_report.py"), "--results", d,
                              "--claims-md", os.path.join(tmp, "no-catalogue.md"), "--gnuplot", gnuplot], capture_output=True)
        out = (res.stdout + res.stderr).decode("utf-8", "replace")
        check(res.returncode == 0 and not os.path.exists(canary) and "Traceback" not in out,
              f"results directory {name!r}: exit {res.returncode}, canary {os.path.exists(canary)}: {out.strip()}")
        check(len(res.stdout.splitlines()) == 1, f"results directory {name!r}: the report's line is not one line: {res.stdout!r}")
        check(os.path.isfile(os.path.join(d, "figures", "u17_accuracy_vs_epoch.svg")), f"results directory {name!r}: no figure")


def check_full_disk(tmp, gnuplot):
    """A full disk (a file-size limit with its signal ignored fails writes the same way): each figure and REPORT.md
    is whole, as before, or absent; the failure is one line with exit status 1; no temporary is left."""
    import resource
    import signal
    import xml.etree.ElementTree as ET
    d = os.path.join(tmp, "full")
    write_results(d, synthetic_rows(3, 5))
    run_report(d, gnuplot)
    before = open(os.path.join(d, "REPORT.md"), "rb").read()
    figure = os.path.join(d, "figures", "u17_accuracy_vs_epoch.svg")
    figure_before = open(figure, "rb").read()
    for kib in (1, 4, 16):
        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
        res = subprocess.run([sys.executable, os.path.join(HERE, "make_report.py"), "--results", d,
                              "--claims-md", os.path.join(tmp, "no-catalogue.md"), "--gnuplot", gnuplot],
                             capture_output=True, text=True, preexec_fn=limit)
        lines = res.stderr.strip().splitlines()
        check(res.returncode == 1 and len(lines) == 1 and lines[0].startswith("make_report:"),
              f"{kib} KiB: exit {res.returncode}, stderr {res.stderr.strip()!r} (expected one line, exit 1)")
        check(open(os.path.join(d, "REPORT.md"), "rb").read() == before, f"{kib} KiB: REPORT.md changed")
        try:
            ET.parse(figure)
            whole = True
        except ET.ParseError:
            whole = False
        check(whole and open(figure, "rb").read() == figure_before, f"{kib} KiB: the figure was cut or changed")
        leftovers = [f for f in os.listdir(d) + os.listdir(os.path.join(d, "figures")) if f.startswith(".")]
        check(not leftovers, f"{kib} KiB: temporaries left: {leftovers}")
    # An incomplete SVG is never taken for a figure.
    cut = os.path.join(tmp, "cut.svg")
    with open(cut, "wb") as f:
        f.write(figure_before[:len(figure_before) // 2])
    check(not make_report.complete_svg(cut), "half an SVG passed as complete")


def check_killed_run(tmp, gnuplot):
    """A directory whose run was killed before it wrote the ledger: the report names the unfinished run."""
    import json
    d = os.path.join(tmp, "killed")
    os.makedirs(d)
    with open(os.path.join(d, "exp_a.run.json"), "w") as f:
        json.dump({"format": "attnlab-run-1", "experiment": "exp_a", "run": "h-1-2", "finished": False,
                   "tables": [], "artifacts": []}, f)
    res = subprocess.run([sys.executable, os.path.join(HERE, "make_report.py"), "--results", d, "--gnuplot", gnuplot],
                         capture_output=True, text=True)
    check(res.returncode == 1 and "exp_a: run h-1-2 did not finish" in res.stderr,
          f"a killed run's directory: {res.stderr.strip()!r} does not name the unfinished run")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gnuplot", default="gnuplot")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not shutil.which(args.gnuplot):
        print(f"test_make_report: {args.gnuplot} not found (Debian package gnuplot-nox): skipped")
        sys.exit(77)

    tmp = tempfile.mkdtemp(prefix="attnlab-report-figures-")
    try:
        check_run_stamps(tmp)
        # "also": a further table's rows appended, each with the columns its set names (a value or a format over
        # that row); an absent table adds nothing.
        with open(os.path.join(tmp, "random.csv"), "w", newline="") as f:
            f.write("family,x_cond,gap\ngaussian,3,0.1\northonormal,1,0\n")
        tables = {}
        read = lambda p: tables.setdefault(p, make_report.read_csv(p))
        mine = [{"family": "trained layer 0", "x_cond": "40", "gap": "0.01"}]
        fig = {"also": [{"csv": "random.csv", "set": {"family": "random X ({family})", "kind": "random"}},
                        {"csv": "absent.csv", "set": {"family": "never"}}]}
        rows = make_report.with_also(fig, mine, tmp, read)
        check([r["family"] for r in rows] == ["trained layer 0", "random X (gaussian)", "random X (orthonormal)"],
              f"with_also families: {[r['family'] for r in rows]}")
        check(rows[1]["x_cond"] == "3" and rows[2]["gap"] == "0" and rows[1]["kind"] == "random",
              f"with_also kept or set the wrong columns: {rows[1:]}")
        check(mine == [{"family": "trained layer 0", "x_cond": "40", "gap": "0.01"}], "with_also changed its input rows")
        check(make_report.with_also({}, mine, tmp, read) == mine, "with_also without also changed the rows")
        os.remove(os.path.join(tmp, "random.csv"))

        # Three seeds: a line per method with its band, the caption saying what both are.
        three = os.path.join(tmp, "three")
        write_results(three, synthetic_rows(3, 5))
        report = run_report(three, args.gnuplot)
        svg = os.path.join(three, "figures", "u17_accuracy_vs_epoch.svg")
        check(os.path.isfile(svg), "u17_accuracy_vs_epoch.svg not written")
        check("](figures/u17_accuracy_vs_epoch.svg)" in report, "the figure is not in REPORT.md")
        check("mean over 3 seeds" in report and "95% Student-t interval" in report,
              "the caption does not say what line and band are")
        bands, texts = bands_and_labels(svg)
        check(len(bands) == len(METHODS), f"{len(bands)} shaded bands, expected one per method ({len(METHODS)})")
        check(len({fill for fill, _ in bands}) == len(METHODS), "bands do not have one colour per method")
        for method in METHODS:
            check(method in texts, f"no legend entry for {method}")
        # Each band spans the 5 epochs, lower edge there and upper edge back: 10 vertices, a non-zero height.
        for fill, pts in bands:
            check(len(pts) == 10, f"band {fill}: {len(pts)} vertices, expected 10 (5 epochs, both edges)")
            if len(pts) == 10:
                heights = [abs(pts[i][1] - pts[9 - i][1]) for i in range(5)]
                check(all(h > 0 for h in heights), f"band {fill} has zero height somewhere: {heights}")
        # The numbers gnuplot receives: per method and epoch, the table's mean and interval, as written.
        import json
        spec = json.load(open(os.path.join(HERE, "report_figures.json")))
        fig = next(f for f in spec["figures"] if f["name"] == "u17_accuracy_vs_epoch")
        scripts, data = [], []  # each gnuplot call's script and the data files in its directory
        real_run = make_report.subprocess.run

        def capture(cmd, input=None, cwd=None, **kw):
            scripts.append(input)
            data.append({f: open(os.path.join(cwd, f), encoding="utf-8").read() for f in sorted(os.listdir(cwd))})
            return real_run(cmd, input=input, cwd=cwd, **kw)

        make_report.subprocess.run = capture
        try:
            rows = synthetic_rows(3, 5)
            make_report.build_figure(fig, [{k: str(v) for k, v in r.items()} for r in rows], os.path.join(tmp, "f.svg"),
                                     args.gnuplot)
        finally:
            make_report.subprocess.run = real_run
        # Each series' file: its name on line 0 (the legend's column header), then x y lower upper.
        series = [text.splitlines() for f, text in data[-1].items() if f.startswith("series")]
        check(len(series) == len(METHODS), f"{len(series)} series files, expected {len(METHODS)}")
        for method, lines in zip(sorted(METHODS), series):  # series in sorted order
            check(lines[0] == f'"{method}"', f"series file of {method} is headed {lines[0]!r}")
            for line in lines[1:]:
                x, y, lo, hi = map(float, line.split())
                # Series sharing an epoch are drawn spread sideways, by less than a quarter of an epoch.
                epoch = round(x)
                check(abs(x - epoch) < 0.25, f"{method}: x {x!r} is not beside an epoch")
                row = next(r for r in rows if r["method"] == method and r["epoch"] == epoch)
                want = tuple(float(row[c]) for c in ("test_accuracy_mean", "lower95", "upper95"))
                check((y, lo, hi) == want, f"{method} epoch {x:g}: drawn {(y, lo, hi)}, the table says {want}")
                check(lo < y < hi, f"{method} epoch {x:g}: the mean lies outside its band")

        # One seed: no interval to shade, and the caption says so.
        one = os.path.join(tmp, "one")
        write_results(one, synthetic_rows(1, 4))
        report = run_report(one, args.gnuplot)
        check("a single run has no interval" in report, "the one-seed caption does not say there is no interval")

        # No training table: the figure is listed as not drawn.
        none = os.path.join(tmp, "none")
        write_results(none, synthetic_rows(1, 2))
        os.remove(os.path.join(none, "vit_training_epoch_means.csv"))
        with open(os.path.join(none, "claims.csv"), "w") as f:
            f.write("id,source,verdict,metric,observed,threshold,evidence,note\nU16,002.txt,untested,accuracy,,,,not here\n")
        report = run_report(none, args.gnuplot)
        check(re.search(r"`u17_accuracy_vs_epoch` \(U17\): `vit_training_epoch_means.csv` is not in this run", report) is not None,
              "a missing training table is not reported under 'Figures not drawn'")
        # Fitted lines: drawn from the fits table's numbers (not refitted from the points: the points below lie
        # on slope 2, the table says 1.5), over its x range; a series without its fit row skips the figure.
        fig = next(f for f in spec["figures"] if f["name"] == "u7_time_vs_n")
        points = [{"sweep": "n", "precision": p, "n": str(n), "median_cpu_seconds": repr(1e-6 * n * n),
                   "lower95": repr(0.9e-6 * n * n), "upper95": repr(1.1e-6 * n * n)}
                  for p in ("double", "float") for n in (512, 1024, 2048, 4096)]
        fit_rows = [{"sweep": "n", "quantity": f"median_cpu_seconds_{p}", "points": "4", "x_min": "512", "x_max": "4096",
                     "slope": "1.5", "lower95": "1.25", "upper95": "1.75", "intercept": repr(math.log(3e-6)), "r2": "0.99"}
                    for p in ("double", "float")]
        scripts.clear()
        make_report.subprocess.run = capture
        try:
            notes, why = make_report.build_figure(fig, points, os.path.join(tmp, "fit.svg"), args.gnuplot, fit_rows)
        finally:
            make_report.subprocess.run = real_run
        check(why is None, f"the fit figure was skipped: {why}")
        if why is None:
            # Each fitted line is sampled from the table's power law over its x range, as data.
            drawn = [text.splitlines() for f, text in data[-1].items() if f.startswith("fit")]
            check(len(drawn) == 2, f"{len(drawn)} fitted lines drawn, expected one per precision (2)")
            for lines in drawn:
                pts = [tuple(map(float, ln.split())) for ln in lines[1:]]
                xs = [x for x, _ in pts]
                check((min(xs), max(xs)) == (512.0, 4096.0), f"fitted line over {min(xs)}..{max(xs)}, not the table's 512..4096")
                check(all(abs(y / (3e-6 * x ** 1.5) - 1) < 1e-12 for x, y in pts), "a fitted line is not the table's 3e-6 x^1.5")
                check("slope 1.50 [1.25, 1.75]" in lines[0], f"the fitted line's legend {lines[0]!r} lacks the table's slope")
            check(any("double 1.50 [1.25, 1.75] (x 512 to 4096)" in n for n in notes),
                  "the caption does not quote the table's slope, interval and range")
            # Each median with its 95% interval (the spec's band columns) as an error bar.
            check(script.count("with yerrorbars") == 2 and f"{1.1e-6 * 512 * 512!r}" in script,
                  "the timing figure does not draw the medians' intervals as error bars")
        notes, why = make_report.build_figure(fig, points, os.path.join(tmp, "fit2.svg"), args.gnuplot, fit_rows[:1])
        check(notes is None and why is not None and "float" in why and "0 rows" in why,
              f"a series without its fit row was not refused: {why}")
        check_hostile_text(tmp, args.gnuplot)
        check_hostile_paths(tmp, args.gnuplot)
        check_full_disk(tmp, args.gnuplot)
        check_killed_run(tmp, args.gnuplot)

        # U19 (U16 on recall) sits right after U17 whatever the claim numbers, with the judges' per-method means of both
        # tasks side by side, copied from their tables (a method present in one table only gets a dash in the other).
        side = os.path.join(tmp, "side")
        os.makedirs(side)
        means = {"vit_training_method_means.csv": ("test_accuracy_mean", {"exact": (0.8537, 0.8417, 0.8656)}),
                 "recall_training_method_means.csv": ("query_accuracy_mean", {"exact": (0.9913, 0.98, 0.99999),
                                                                              "no-attention-baseline": (0.0041, 0.0032, 0.005)})}
        for name, (col, by_method) in means.items():
            with open(os.path.join(side, name), "w") as f:
                f.write(f"method,pairs,seeds,{col},lower95,upper95\n")
                for m, (mean, lo, hi) in by_method.items():
                    f.write(f"{m},32,3,{mean!r},{lo!r},{hi!r}\n")
        with open(os.path.join(side, "claims.csv"), "w") as f:
            f.write("id,source,verdict,metric,observed,threshold,evidence,note\n")
            for cid in ("U17", "U18", "U19"):
                f.write(f"{cid},002.txt,inconclusive,margin,-0.01,0,{os.path.join(side, 'claims.csv')},synthetic\n")
        report = run_report(side, args.gnuplot)
        order = [report.find(f"### {cid}\n") for cid in ("U17", "U19", "U18")]
        check(-1 not in order and order == sorted(order), f"the sections are not U17, U19, U18 in that order: {order}")
        u19 = report[report.find("### U19\n"):report.find("### U18\n")]
        check("| exact | 0.8537 [0.8417, 0.8656], 3 seeds | 0.9913 [0.9800, 1.0000], 3 seeds |" in u19,
              "the side-by-side table does not copy both judges' means and intervals under U19")
        check("| no-attention-baseline | — | 0.0041 [0.0032, 0.0050], 3 seeds |" in u19,
              "a method of one task only is not shown with a dash for the other")
    finally:
        if args.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp)
    if FAILURES:
        print(f"test_make_report: {len(FAILURES)} failure(s)")
        sys.exit(1)
    print("test_make_report: the mean-with-interval figure and the judge-fitted lines are sound")


if __name__ == "__main__":
    main()
