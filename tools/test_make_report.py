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
    with open(os.path.join(directory, "claims.csv"), "w") as f:
        f.write("id,source,verdict,metric,observed,threshold,evidence,note\n"
                f"U17,002.txt,inconclusive,margin,-0.01,0,{path},synthetic\n")


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
    check(any("exp_b: rows in claims.csv" in p for p in make_report.run_set_problems(d, ledger + [{"experiment": "exp_b"}])),
          "ledger rows of an unstamped experiment passed")


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
        scripts = []
        real_run = make_report.subprocess.run

        def capture(cmd, input=None, **kw):
            scripts.append(input)
            return real_run(cmd, input=input, **kw)

        make_report.subprocess.run = capture
        try:
            rows = synthetic_rows(3, 5)
            make_report.build_figure(fig, [{k: str(v) for k, v in r.items()} for r in rows], os.path.join(tmp, "f.svg"),
                                     args.gnuplot)
        finally:
            make_report.subprocess.run = real_run
        blocks = re.findall(r"\$d\d+ << EOD\n(.*?)\nEOD", scripts[-1], re.S)
        check(len(blocks) == len(METHODS), f"{len(blocks)} data blocks, expected {len(METHODS)}")
        for method, block in zip(sorted(METHODS), blocks):  # series in sorted order
            for line in block.splitlines():
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
        points = [{"sweep": "n", "precision": p, "n": str(n), "median_seconds": repr(1e-6 * n * n)}
                  for p in ("double", "float") for n in (512, 1024, 2048, 4096)]
        fit_rows = [{"sweep": "n", "quantity": f"median_seconds_{p}", "points": "4", "x_min": "512", "x_max": "4096",
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
            script = scripts[-1]
            drawn = re.findall(r"\(x >= ([^ ]+) && x <= ([^ ]+) \? exp\(([^)]+)\) \* x\*\*([^ ]+) : 1/0\)", script)
            check(len(drawn) == 2, f"{len(drawn)} fitted lines drawn, expected one per precision (2)")
            for lo, hi, icept, slope in drawn:
                check((float(lo), float(hi), float(slope)) == (512.0, 4096.0, 1.5) and
                      abs(float(icept) - math.log(3e-6)) < 1e-15, f"line ({lo}, {hi}, {icept}, {slope}) is not the table's")
            check(any("double 1.50 [1.25, 1.75] (x 512 to 4096)" in n for n in notes),
                  "the caption does not quote the table's slope, interval and range")
        notes, why = make_report.build_figure(fig, points, os.path.join(tmp, "fit2.svg"), args.gnuplot, fit_rows[:1])
        check(notes is None and why is not None and "float" in why and "0 rows" in why,
              f"a series without its fit row was not refused: {why}")

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
