#!/usr/bin/env python3
"""Writes <results>/REPORT.md and <results>/figures/*.svg from the claims ledger and its evidence CSVs.

Generated, never hand-written (issue 5): every number in the report is read from results/claims.csv or an
evidence table, every figure is drawn by gnuplot from a declarative spec (tools/report_figures.json).
Standard library only, so `make results` needs nothing beyond python3 and gnuplot.

usage: tools/make_report.py --results results --seed 20250311 [--threads 2] [--claims-md ../shared/CLAIMS.md]
"""
import argparse
import csv
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from verdicts import read_verdicts  # noqa: E402 (tools/verdicts.py, beside this script)

VERDICTS = read_verdicts()
VERDICT_ORDER = [v for v, _ in VERDICTS]

# ---------------------------------------------------------------- inputs

def read_csv(path):
    # A cell may hold a path that is not UTF-8 (a model directory's name): kept as it is, never a decoding error.
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        rows = list(csv.DictReader(f))
        return rows


def as_float(v):
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def fmt_num(v):
    """Numbers as a reader wants them: integers plain, others with 3 significant digits."""
    x = as_float(v)
    if x is None:
        return v if v not in (None, "") else "—"
    if x == int(x) and abs(x) < 1e9:
        return str(int(x))
    return f"{x:.3g}"


def parse_catalogue(path):
    """CLAIMS.md -> ({id: (claim, what to measure)}, {seed file: title}, [seed files in order])."""
    claims, titles, order = {}, {}, []
    if not path or not os.path.exists(path):
        return claims, titles, order
    seed = None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^##\s+(\w+)\s+—\s+seed\s+(\S+)\s*(.*)$", line.strip())
        if m:
            seed = m.group(2)
            titles[seed] = f"{m.group(1)} — {m.group(3).strip('() ')}" if m.group(3) else m.group(1)
            order.append(seed)
            continue
        if line.startswith("|") and seed:
            # The claim text may itself hold '|' (e.g. [X | 1]): id is the first cell, the measure the last.
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and re.fullmatch(r"[A-Z]+\d+", cells[0]):
                claims[cells[0]] = ("|".join(cells[1:-1]).strip(), cells[-1], seed)
    return claims, titles, order


def run(cmd, cwd=REPO):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def build_flags(build_dir):
    """The compiler flags every target was built with, read from CMake's own record of the compile line
    (<build>/CMakeFiles/attnlab_core.dir/flags.make: every target links the same attnlab_flags), and the
    build type from CMakeCache.txt; None without a configured build directory."""
    flags_make = os.path.join(build_dir, "CMakeFiles", "attnlab_core.dir", "flags.make")
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.exists(flags_make) or not os.path.exists(cache):
        return None
    build_type = ""
    for line in open(cache):
        m = re.match(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", line.strip())
        if m:
            build_type = m.group(1).strip()
    for line in open(flags_make):
        if line.startswith("CXX_FLAGS = "):
            return f"{build_type or 'no build type'}: `{line[len('CXX_FLAGS = '):].strip()}` (every target's compile line)"
    return None


def threads_text(args):
    """The threads the experiments ran with: what the run record (RUNS.md, beside the tables) says of its tasks, else
    the run's --threads, else the experiments' default."""
    try:
        for line in open(os.path.join(args.results, "RUNS.md"), encoding="utf-8"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0] == "how":
                return f"{cells[1]} (RUNS.md)"
    except OSError:
        pass
    if args.threads:
        return f"{args.threads} per experiment process"
    return "experiment default (all cores)"


def run_context(args):
    commit = run(["git", "rev-parse", "--short=12", "HEAD"]) or "unknown"
    # Generated results are outputs, not sources: a regenerated results/ does not make the commit "modified".
    if run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results"]):
        commit += " (with uncommitted changes)"
    compiler = (run(["c++", "--version"]).splitlines() or ["unknown"])[0]
    flags = build_flags(os.path.join(REPO, args.build)) or f"unknown (no configured build in {args.build}/)"
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    machine = f"{cpu}, {os.cpu_count()} logical cores, {run(['uname', '-sr'])}"
    return [("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
            ("commit", commit), ("compiler", compiler), ("build", flags), ("machine", machine),
            ("threads", threads_text(args)), ("seed", args.seed or "experiment default"),
            ("mode", "quick (`--quick`: small sweeps, for tests)" if args.quick else "full")]


def resolve_evidence(path, results):
    """The ledger holds a repository-relative path, or an absolute one for scratch runs; a results directory
    that was moved (staging -> results) still holds the file under the same name, so fall back to that."""
    if not path:
        return None
    cands = [path if os.path.isabs(path) else os.path.join(REPO, path), os.path.join(results, os.path.basename(path))]
    for c in cands[::-1]:  # prefer the copy inside this results directory
        if os.path.isfile(c):
            return c
    return None


def describe_table(rows, limit=300):
    """What was measured on which inputs, in at most about `limit` characters: the row count, the values of input-like
    columns (text, or few distinct values: the first few and how many), and the range of every other column; what
    does not fit is counted, the table itself has it all."""
    if not rows:
        return "an empty table"
    inputs, measured = [], []
    for col in rows[0].keys():
        vals = [r[col] for r in rows]
        nums = [as_float(v) for v in vals]
        distinct = sorted(set(vals), key=lambda v: (as_float(v) is None, as_float(v) or 0, v))
        fin = [x for x in nums if x is not None]
        if len(fin) < len(nums) / 2 or len(distinct) <= 8:
            if len(distinct) <= 4 and all(len(v) <= 24 for v in distinct):
                inputs.append(f"`{col}` ∈ {{{', '.join(distinct)}}}")
            else:  # long or many text values (method descriptions, paths): how many, and the first
                first = distinct[0] if len(distinct[0]) <= 24 else distinct[0][:21] + "…"
                inputs.append(f"`{col}`: {len(distinct)} values ({first}, …)")
        else:  # a measured number; columns allowed to hold nan/inf say how often they did
            odd = len(nums) - len(fin)
            measured.append(f"`{col}` {fmt_num(min(fin))} … {fmt_num(max(fin))}" + (f" ({odd} non-finite)" if odd else ""))
    head = f"{len(rows)} rows over "
    text, shown = head, 0
    parts = inputs + ([". Ranges: "] if measured else []) + measured
    for part in parts:
        sep = "" if shown == 0 or part == ". Ranges: " or (shown and parts[shown - 1] == ". Ranges: ") else "; "
        if len(text) + len(sep) + len(part) > limit - 40:
            break
        text += sep + part
        shown += 1
    if shown < len(parts):
        text += f"; {len([q for q in parts[shown:] if q != '. Ranges: '])} more columns in the table"
    return text


# ---------------------------------------------------------------- figures

FIT_COLUMNS = ["x_min", "x_max", "slope", "lower95", "upper95", "intercept"]


def same_cell(a, b):
    """Two CSV cells name the same value: equal as numbers where both are numbers ("1" and "1.0"), else as text."""
    fa, fb = as_float(a), as_float(b)
    return fa == fb if fa is not None and fb is not None else str(a) == str(b)


def fit_for(fit_spec, fit_rows, values):
    """The row of the experiment's fits table (written by its C++ judge: lab/fit_table.hpp) that a series is drawn
    with: the row whose columns equal fit_spec["match"], each a format string over the series' own values (its
    series columns, and "col", the y column), e.g. {"quantity": "median_seconds_{precision}"}. Returns (row, None)
    or (None, why): a series without exactly one fit row is an error in the spec or the run, never redrawn here."""
    want = {k: str(v).format(**values) for k, v in fit_spec.get("match", {}).items()}
    found = [r for r in fit_rows if all(k in r and same_cell(r[k], v) for k, v in want.items())]
    if len(found) != 1:
        return None, f"{len(found)} rows of `{fit_spec['csv']}` match {want} (one expected)"
    missing = [c for c in FIT_COLUMNS if as_float(found[0].get(c)) is None]
    if missing:
        return None, f"`{fit_spec['csv']}` has no number in {', '.join(missing)}"
    return {c: as_float(found[0][c]) for c in FIT_COLUMNS}, None


def aggregate(values, how):
    values = sorted(values)
    if how == "max":
        return values[-1]
    if how == "min":
        return values[0]
    if how == "mean":
        return sum(values) / len(values)
    m = len(values) // 2  # median
    return values[m] if len(values) % 2 else 0.5 * (values[m - 1] + values[m])


def y_value(row, y):
    if "ratio" in y:
        a, b = (as_float(row.get(c)) for c in y["ratio"])
        return a / b if a is not None and b else None
    v = as_float(row.get(y["col"]))
    return abs(v) if v is not None and y.get("abs") else v


# ---- text that reaches gnuplot
# No text from a user, a file name, a model or a table ever reaches gnuplot's command language (where a newline
# starts a new command, `...` runs a shell and @name expands a macro). The script holds only the report's own
# fixed text (the figure specs of tools/report_figures.json, checked by gp_quote) and numbers; every series name,
# category and fit label is data, in a file with a fixed name that gnuplot reads as a column header or a tic label
# (gp_data_text), and gnuplot runs in a fresh directory of its own, writing a fixed file name, so no path is ever
# spelled in the script either.

def gp_quote(s):
    """The report's own text (a figure spec's title, axis label or legend entry) as a single-quoted gnuplot string,
    in which gnuplot substitutes nothing. Refuses control characters (a newline would end the command): the specs
    are code, and a spec that needs one is an error to fix there."""
    s = str(s)
    bad = [c for c in s if unicodedata.category(c).startswith("C")]
    if bad:
        raise ValueError(f"figure text {s!r} holds a control character ({bad[0]!r}): not passed to gnuplot")
    return "'" + s.replace("'", "''") + "'"


def gp_label(s):
    """An enhanced-text label. The space after a sub/superscript group becomes gnuplot's "&{i}" (a blank as wide
    as an i), because SVG renderers (rsvg, seen here) drop the leading space of the <tspan> that follows it."""
    return gp_quote(re.sub(r"(?<=\}) ", "&{i}", str(s)))


def printable(s):
    """Any text (a path that is not UTF-8 holds surrogates here) as printable text: bytes that are not UTF-8 as
    \\xNN, control characters as \\n, \\t or \\uNNNN."""
    s = str(s).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if not unicodedata.category(c).startswith("C") else
                   {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\u{ord(c):04x}") for c in s)


def gp_data_text(s):
    """Text as one double-quoted field of a gnuplot data file: printable (one line, one field), its backslashes
    doubled and its double quotes turned into single ones, the only characters gnuplot's data reader treats
    specially inside such a field. Read back as a column header or tic label it is shown, never run."""
    return '"' + printable(s).replace("\\", "\\\\").replace('"', "'") + '"'


class FigureWriteError(Exception):
    """A figure could not be written whole (a full disk, a read-only directory): the run fails, in one line."""


def decide_log(setting, values, power_fit=False, x_axis=False):
    """log if asked, or (auto) if the positive values span more than two decades."""
    pos = [v for v in values if v > 0]
    if setting is False:
        return False
    if setting is True:  # asked for, unless x spans less than a decade (a power law is straight only on log-log)
        return bool(pos) and (power_fit or not x_axis or max(pos) / min(pos) >= 10)
    return bool(pos) and min(pos) > 0 and max(pos) / min(pos) > 100 and len(pos) >= 0.5 * len(values)


def with_also(fig, rows, results, table):
    """The figure's rows followed by those of each table in its "also" list (e.g. the random families beside a
    trained model's rows), each given the columns its "set" names: a value, or a format string over that row's
    own columns ("random X: {family}"). An absent table adds nothing."""
    out = list(rows)
    for extra in fig.get("also", []):
        path = os.path.join(results, extra["csv"])
        if not os.path.isfile(path):
            continue
        for r in table(path):
            out.append({**r, **{k: str(v).format(**r) for k, v in extra.get("set", {}).items()}})
    return out


def build_figure(fig, rows, out_svg, gnuplot, fit_rows=None):
    """Draws one figure; returns (caption notes, None) or (None, reason it was skipped). A figure with "fit" draws,
    for each series, the power law its experiment's judge fitted (fit_rows: that fits table's rows)."""
    ys = fig["y"] if isinstance(fig["y"], list) else [fig["y"]]
    ys = [y if isinstance(y, dict) else {"col": y} for y in ys]
    series_cols = fig.get("series", [])
    series_cols = series_cols if isinstance(series_cols, list) else [series_cols]
    how = fig.get("aggregate", "none")
    needed = [fig["x"]] + series_cols + list(fig.get("filter", {})) + list(fig.get("band", []))
    if how == "mean_band":
        needed.append(fig["count"])
    for y in ys:
        needed += y.get("ratio", [y.get("col")])
    missing = [c for c in needed if c and rows and c not in rows[0]]
    if not rows or missing:
        return None, f"columns {', '.join(missing)} missing" if missing else "empty table"
    flt = fig.get("filter", {})
    rows = [r for r in rows if all(str(r.get(k)) in ([str(x) for x in v] if isinstance(v, list) else [str(v)])
                                    for k, v in flt.items())]
    if not rows:
        return None, "no rows match the filter " + str(flt)
    xs_raw = [r[fig["x"]] for r in rows]
    categorical = any(as_float(v) is None for v in xs_raw)
    cats = sorted(set(xs_raw)) if categorical else []
    # series -> list of (x, y, lo, hi)
    series, order, values_of = {}, [], {}
    replicates = set()  # mean_band: how many replicates each mean is over (the table's count column)
    for y in ys:
        groups = {}
        for r in rows:
            x = cats.index(r[fig["x"]]) if categorical else as_float(r[fig["x"]])
            v = y_value(r, y)
            if x is None or v is None:
                continue
            key = tuple(r[c] for c in series_cols)
            if how in ("none", "mean_band"):
                lo = as_float(r[fig["band"][0]]) if "band" in fig else None
                hi = as_float(r[fig["band"][1]]) if "band" in fig else None
                groups.setdefault(key, []).append((x, v, lo, hi))
                if how == "mean_band":
                    replicates.add(int(r[fig["count"]]))
            else:
                groups.setdefault(key, {}).setdefault(x, []).append(v)
        for key in sorted(groups, key=lambda k: tuple((as_float(c) is None, as_float(c) or 0, c) for c in k)):
            g = groups[key]
            if how in ("none", "mean_band"):
                pts = sorted(g)
            else:
                pts = sorted((x, aggregate(v, how), None, None) for x, v in g.items())
            # Numbers alone say nothing in a key ("64"): name their column ("n = 64"); names speak for themselves.
            label = ", ".join(v if as_float(v) is None else f"{c} = {v}" for c, v in zip(series_cols, key))
            if len(ys) > 1 or not label:
                label = (y.get("label", y.get("col", "")) + (f" ({label})" if label else ""))
            series[label] = pts
            order.append(label)
            values_of[label] = {**dict(zip(series_cols, key)), "col": y.get("col", "")}
    n_series = len(order)

    def jitter_of(label):
        # Series sharing a category are spread sideways so that none hides another.
        i = order.index(label)
        if categorical:
            return (i - (n_series - 1) / 2) * min(0.6 / max(n_series, 1), 0.12)
        # Whole-number x with intervals (epochs): spread the series by up to 0.25 of a step, so that every
        # series' error bar stays visible where they share an x.
        if fig.get("xinteger") and how == "mean_band":
            return (i - (n_series - 1) / 2) * min(0.5 / max(n_series, 1), 0.06)
        return 0.0

    allx = [p[0] for pts in series.values() for p in pts]
    ally = [p[1] for pts in series.values() for p in pts]
    if not ally:
        return None, "no finite values to draw"
    power = "fit" in fig
    logx = not categorical and decide_log(fig.get("logx", "auto"), allx, power, x_axis=True)
    logy = decide_log(fig.get("logy", "auto"), ally, power)
    notes = []
    # A log axis cannot show 0, yet an exact 0 (no rounding at all) is a result: draw those points on a floor
    # one decade below the smallest positive value, with their own marker and legend entry.
    zeros, floor, dropped = [], None, 0
    if logy or logx:
        pos = [y for y in ally if y > 0]
        floor = 10.0 ** (math.floor(math.log10(min(pos))) - 1) if pos else 1.0
        for label in order:
            keep = [p for p in series[label] if (not logy or p[1] > 0) and (not logx or p[0] > 0)]
            if logy:
                zeros += [(p[0] + (jitter_of(label)), floor) for p in series[label] if p[1] == 0 and (not logx or p[0] > 0)]
            dropped += len(series[label]) - len(keep) - (len([p for p in series[label] if p[1] == 0]) if logy else 0)
            series[label] = keep
        if dropped:
            notes.append(f"{dropped} negative point(s) cannot be shown on the log axis and are not drawn")
        if zeros:
            notes.append(f"{len(zeros)} point(s) with value exactly 0 are drawn as open circles on the floor "
                         f"{floor:.0e} of the log axis")
    if how == "mean_band":
        n_text = "–".join(str(n) for n in sorted({min(replicates), max(replicates)}))
        notes.append(f"each line is the mean over {n_text} {fig['count']} (the table's {fig['count']} column), the shaded "
                     "band and the error bars its 95% Student-t interval, both as the experiment's judge computed them "
                     f"({fig['csv']})" + (" (a single run has no interval: its band is a line)" if min(replicates) < 2 else ""))
    elif how != "none":
        notes.append(f"each point is the {how} over the rows sharing its x and series")

    # Every data-derived text goes into `files` (name -> lines), read by gnuplot as data; the script holds numbers
    # and the spec's own text only (see gp_quote and gp_data_text above).
    files = {}
    lines = ["set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'",
             "set output 'figure.svg'",
             "set datafile commentschars ''",  # a '#' in a series name is text, not the start of a comment
             f"set title {gp_label(fig.get('title', ''))}",
             f"set xlabel {gp_label(fig.get('xlabel', fig['x']))}",
             f"set ylabel {gp_label(fig.get('ylabel', ''))}",
             # Colour-blind-safe, high-contrast line colours (Okabe-Ito, then two darker extras).
             *[f"set linetype {i + 1} lc rgb '{c}'" for i, c in enumerate(
                 ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B",
                  "#7F7F7F", "#BCBD22"])],
             "set linetype cycle 10",
             "set grid", "set key outside below center horizontal Left reverse maxcols 2 noenhanced",
             "set format y '%g'" if not logy else "set format y '10^{%L}'",
             "set format x '%g'" if not logx else "set format x '10^{%L}'"]
    if logx:
        lines.append("set logscale x")
        xs = sorted({x for x in allx if x > 0})
        if max(xs) / min(xs) < 1e3:
            lines.append("set format x '%g'")
            if len(xs) <= 12:  # few sizes (often powers of two): label each one, not only the decades
                lines.append("set xtics (" + ", ".join(f"{x:g}" for x in xs) + ")")
                lines.append(f"set xrange [{xs[0] / 1.25!r}:{xs[-1] * 1.25!r}]")
    if fig.get("xinteger") and not categorical and not logx:  # counts (epochs): ticks on whole numbers only
        span = max(allx) - min(allx)
        lines.append(f"set xtics {max(1, math.ceil(span / 10))}")
        lines.append(f"set xrange [{min(allx) - 0.5!r}:{max(allx) + 0.5!r}]")  # room for the spread series
    if "xrange" in fig:  # e.g. a log rank axis that should end at n, not at the next decade
        lines.append(f"set xrange [{float(fig['xrange'][0])!r}:{float(fig['xrange'][1])!r}]")
    if "yrange" in fig:
        lines.append(f"set yrange [{float(fig['yrange'][0])!r}:{float(fig['yrange'][1])!r}]")
    if len(order) + len(fig.get("refs", [])) + (len(order) if fig.get("fit") else 0) > 10:
        lines.append("set key font ',9' spacing 0.9 maxcols 3")  # many series: keep the key below the plot
    if logy:
        lines.append("set logscale y")
        if "yrange" not in fig:
            # Whole decades around the data, the zero floor and any constant reference line (a threshold),
            # with room so that no point sits on the frame.
            consts = [as_float(r["expr"]) for r in fig.get("refs", [])]
            span = [y for y in ally if y > 0] + ([floor] if zeros else []) + [c for c in consts if c and c > 0]
            lo = 10.0 ** math.floor(math.log10(min(span) / 1.5))
            hi = 10.0 ** math.ceil(math.log10(max(span) * 1.5))
            lines.append(f"set yrange [{lo!r}:{hi!r}]")
    elif "yrange" not in fig:  # keep points off the frame, and a non-negative quantity off negative ticks
        lines.append("set offsets 0, 0, graph 0.05, graph 0.05" if min(ally) < 0 or fig.get("yzero") is False else
                     "set offsets 0, 0, graph 0.05, 0\nset yrange [0:*]")
    plots, bands, fits = [], [], []
    if categorical:
        # The categories are data: tic labels read from a file, at their unjittered places.
        lines.append(f"set xrange [-0.5:{len(cats) - 0.5}]")
        lines.append("set xtics () noenhanced")
        files["categories.dat"] = [f"{i} {gp_data_text(c)}" for i, c in enumerate(cats)]
        plots.append("'categories.dat' using 1:(NaN):xticlabels(2) notitle")
    for i, label in enumerate(order):
        pts = series[label]
        if not pts:
            continue
        jitter = jitter_of(label)
        # Line 0 of the file is the series' name (the column header its titled plot reads); `every ::1` skips it.
        data = f"'series{i}.dat'"
        files[f"series{i}.dat"] = [gp_data_text(label)] + [
            f"{x + jitter!r} {y!r} {lo if lo is not None else y!r} {hi if hi is not None else y!r}" for x, y, lo, hi in pts]
        color = f"lc {i + 1}"
        style = fig.get("style", "points" if categorical or how == "none" else "linespoints")
        if how == "mean_band":
            # Every band before every line, so no band hides a line (also where a renderer ignores the opacity).
            bands.append(f"{data} every ::1 using 1:3:4 with filledcurves {color} fs transparent solid 0.2 noborder notitle")
            plots.append(f"{data} using 1:2 with linespoints {color} lw 1.5 pt 7 ps 0.5 title columnheader(1)")
            # The interval as error bars too: a band needs two x values, and a one-epoch run has one.
            plots.append(f"{data} every ::1 using 1:2:3:4 with yerrorbars {color} lw 1.5 pt 7 ps 0.8 notitle")
        elif "band" in fig:
            plots.append(f"{data} using 1:2:3:4 with yerrorbars {color} pt 7 ps 0.6 title columnheader(1)")
        else:
            # Hollow markers, larger for earlier series, so coinciding series stay visible one inside the other.
            pt = [4, 6, 8, 1, 2, 3, 10, 12, 14][i % 9]
            plots.append(f"{data} using 1:2 with {style} {color} pt {pt} ps {max(1.5 - 0.15 * i, 0.6):.2f} "
                         "title columnheader(1)")
        if "fit" in fig:
            f, why = fit_for(fig["fit"], fit_rows or [], values_of[label])
            if why:
                return None, f"series {label}: {why}"
            ci = f" [{f['lower95']:.2f}, {f['upper95']:.2f}]"
            # Drawn over the fitted points' range only (x_min..x_max as the judge fitted), not extrapolated: the
            # power law sampled here, as data, so that nothing but numbers reaches gnuplot.
            lo, hi = f["x_min"], f["x_max"]
            xs_fit = [lo * (hi / lo) ** (k / 199) for k in range(200)] if lo > 0 and hi > lo else [lo, hi]
            files[f"fit{i}.dat"] = [gp_data_text(f"fit {label}: slope {f['slope']:.2f}{ci}")] + [
                f"{x!r} {math.exp(f['intercept']) * x ** f['slope']!r}" for x in xs_fit]
            plots.append(f"'fit{i}.dat' using 1:2 with lines {color} dt 2 lw 1.5 title columnheader(1)")
            fits.append(f"{label} {f['slope']:.2f}{ci} (x {fmt_num(f['x_min'])} to {fmt_num(f['x_max'])})")
    if zeros:
        files["zeros.dat"] = [f"{x!r} {y!r}" for x, y in zeros]
        plots.append(f"'zeros.dat' using 1:2 with points lc rgb 'black' pt 6 ps 1.2 title {gp_quote(f'value 0 (drawn at {floor:.0e})')}")
    if fits:
        notes.append(f"Fitted slopes, as the experiment's judge fitted them (`{fig['fit']['csv']}`: least squares on "
                     "logs, 95% Student-t interval, over the x range given): " + "; ".join(fits))
    for ref in fig.get("refs", []):
        # A reference line is an expression of the spec (a constant or a multiple of x), checked to be nothing more.
        if not re.fullmatch(r"[0-9x.eE+\-*/() ]+", str(ref["expr"])):
            raise ValueError(f"figure {fig['name']}: reference expression {ref['expr']!r} is not arithmetic in x")
        plots.append(f"{ref['expr']} with lines lc rgb '#555555' dt {int(ref.get('dt', 3))} lw 1.2 title {gp_quote(ref['label'])}")
    if fig.get("refs"):
        lines.append("set samples 400")
    if not [p for p in bands + plots if not p.startswith("'categories.dat'")]:
        return None, "no drawable points"
    script = "\n".join(lines + ["plot " + ", \\\n  ".join(bands + plots), "unset output"]) + "\n"
    return run_gnuplot(gnuplot, script, files, out_svg, notes)


def run_gnuplot(gnuplot, script, files, out_svg, notes):
    """Runs `script` in a fresh directory beside out_svg that holds `files`, then moves its figure.svg onto out_svg
    whole (checked to be a complete SVG document: gnuplot does not report a failed write), or leaves out_svg as it
    was. Returns (notes, None), or (None, why) when gnuplot rejects the script; raises FigureWriteError when the
    figure cannot be written."""
    try:
        work = tempfile.mkdtemp(prefix=".figure-", dir=os.path.dirname(os.path.abspath(out_svg)))
    except OSError as e:
        raise FigureWriteError(f"cannot write figures beside {printable(out_svg)}: {e.strerror}") from None
    try:
        try:
            for name, content in files.items():
                with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                    f.write("\n".join(content) + "\n")
        except OSError as e:
            raise FigureWriteError(f"cannot write the data of {printable(os.path.basename(out_svg))}: {e.strerror}") from None
        res = subprocess.run([gnuplot], input=script, capture_output=True, text=True, errors="replace", cwd=work)
        drawn = os.path.join(work, "figure.svg")
        if res.returncode < 0:  # stopped by a signal (SIGXFSZ past a file-size limit, a kill): not a figure's fault
            raise FigureWriteError(f"{printable(os.path.basename(out_svg))}: gnuplot was stopped by signal {-res.returncode}; "
                                   "the figure is not written")
        if res.returncode != 0 or not os.path.exists(drawn):
            err = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
            return None, "gnuplot failed: " + err[-1].strip() if err else "gnuplot failed"
        if not complete_svg(drawn):
            raise FigureWriteError(f"{printable(os.path.basename(out_svg))}: gnuplot's output is incomplete "
                                   "(is the disk full?); the figure is not written")
        try:
            os.chmod(drawn, 0o644)
            os.replace(drawn, out_svg)
        except OSError as e:
            raise FigureWriteError(f"cannot write {printable(out_svg)}: {e.strerror}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return notes, None


def complete_svg(path):
    """Whether path holds one whole SVG document (a write cut short by a full disk leaves none, or half of one)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return False
    return root.tag.rsplit("}", 1)[-1] == "svg"


# ---------------------------------------------------------------- report

METHOD = """\
## Method

**Exactness claims** (an identity such as QKᵀ = X(W_Q W_Kᵀ)Xᵀ) are checked the way LAPACK's test suite checks a
factorisation (`TESTING/LIN/dget01.f`): the residual of the identity is divided by n·‖A‖·eps, the rounding error
a backward-stable computation could make, giving a unitless ratio. A ratio below **30** (LAPACK's threshold in
`dtest.in`) means the two sides agree to rounding; a ratio of 10¹² means they are different quantities. Every
identity is checked in float and double: a true identity scales with eps, a false one does not.
The ratio is recorded in the evidence table, not only pass/fail.

**Probabilistic claims** ("with probability > 1 − δ") are measured as empirical success rates over seeded random
trials, with exact **Clopper–Pearson** 95% intervals; a rate is judged by its interval, not its point value.

**Complexity claims** (O(n), O(d d_k²), …) are judged by **fitted exponents**: least squares of log cost on log
size, with a 95% **Student-t** confidence interval, both for counted operations (deterministic) and for the
**median of repeated timings**. Counted operations decide whether the algorithm has the claimed order; timings
show whether it is visible in practice.

**Timing claims** are judged so that the machine's load cannot reverse them. The configurations a verdict compares
(the sizes of a sweep, the methods of a grid cell) are timed **round-robin**, 9 rounds, every run kept in the
timing table. A run's time is the **CPU time** the process spent in it (wall time is kept beside it): on a shared
machine a run also waits for a CPU, and the wait is the queue's, not the method's. Each median gets a
distribution-free 95% interval from order statistics (the 2nd-fastest to the 2nd-slowest of 9 runs). An exponent or a ratio decides only where its interval clears the threshold, "fastest" or
"faster" only where one interval lies strictly below the others (otherwise a **tie**, named in the note), and a
verdict that such an undecided outcome could change is **inconclusive**. Each timing claim's note ends with its
margin: the distance to the threshold in half-widths of the interval (beyond ±1 decided).

**Ranks** are numerical ranks: singular values (or eigenvalue magnitudes) above max(m, n)·eps·σ_max count, the
tolerance of LAPACK-based rank estimates (NumPy's `matrix_rank`); each metric names its tolerance.

**Inputs.** Each experiment sweeps sizes (edge sizes 1, 2, 3 among them where they apply) and named input families: random
Gaussian weights, tied weights (W_K = W_Q), ill-conditioned weights (singular values spread over decades),
clustered spectra, large-norm inputs, and others named in each table's `family` column. All randomness comes
from one seed (given in the header); `--threads 1` and `--threads 2` give byte-identical non-timing tables.

**Thresholds** are named constants in the experiment's source, fixed before the run; the ledger records the
threshold next to the observed value, so a reader can re-judge with another one.
"""

READING = """\
## Reading the results

""" + "".join(f"- **{v}**: {meaning}\n" for v, meaning in VERDICTS) + """\
- *Observed* and *threshold* are in the units of the metric column. For residual ratios "observed ≤ threshold"
  means the identity holds; for a claim that something *does* matter (R9: precision affects the result) the
  comparison runs the other way; for exponents the note gives the fitted interval per path or method.
- Timings depend on this machine (header); exponents transfer, absolute seconds do not. On timing figures a point
  is a median CPU time and its error bar the median's 95% interval.
- **Figures** show what the verdict summarises. Where a caption says so, a point is the worst (max) or median over
  the rows sharing its x and series. Log axes are used where values span decades; an exact 0 cannot sit on a log
  axis, so such points are drawn as open circles on a floor below the data and counted in the caption. Dashed
  lines are the least-squares power laws the experiment fitted on log–log axes to judge the claim, read from its
  fits table (named in the caption) and drawn over the points it fitted; their slopes (with 95% Student-t
  intervals) are in the legend; grey dotted or dashed lines are thresholds or the claimed relation.
"""


CORRECTIONS_TSV = os.path.join(REPO, "lib", "attnlab", "lab", "corrections.tsv")


def read_correction_definitions(path=CORRECTIONS_TSV):
    """{id: {basis, threshold, metric, statement}} of lib/attnlab/lab/corrections.tsv, the corrected statements'
    one definition (the C++ judges read the same file); {} when it is not there."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 5:
                raise ValueError(f"{path}:{number}: {len(fields)} tab-separated fields, not 5")
            cid, basis, threshold, metric, statement = fields
            out[cid] = {"basis": basis, "threshold": threshold, "metric": metric, "statement": statement}
    return out


def correction_id(cid):
    """The corrected statement's id of claim cid (lib/attnlab/io/ledger.hpp: correction_id)."""
    return cid + ".c"


def anchor(heading):
    """GitHub's anchor of a heading (tools/check_docs.py's slug): lower case, punctuation but - and _ dropped."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def shorten(text, limit):
    """text cut at a word boundary to at most limit characters, with an ellipsis when cut."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1].rsplit(" ", 1)[0]
    return cut + "…"


def para(text, width=160):
    """A Markdown paragraph wrapped at about `width` characters (a reader's editor and a diff keep lines short; Markdown
    joins them), never inside a word, a link or a code span."""
    words, line, lines = re.findall(r"\[[^\]]*\]\([^)]*\)\S*|`[^`]*`\S*|\S+", text), "", []
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return "\n".join(lines) + "\n"


def evidence_line(row, results, table, rel):
    """'Evidence [`file`](file): <what it holds, in at most about 300 characters>.' or what is missing."""
    ev = resolve_evidence(row["evidence"], results)
    if ev:
        return para(f"Evidence [`{os.path.basename(ev)}`]({rel(ev)}): {describe_table(table(ev))}.")
    if row["verdict"] != "untested":
        return f"Evidence: **missing** (`{row['evidence'] or 'none recorded'}`).\n"
    return ""


def data_says(rows, corrections, definitions):
    """Two or three sentences on one source document's claims, from the ledgers alone: how they fared, and for those
    that fail or hold only under a condition, what the corrected statements' confirming runs found."""
    counts = [(v, sum(1 for r in rows if r["verdict"] == v)) for v in VERDICT_ORDER]
    text = f"Of its {len(rows)} claims, " + ", ".join(f"{n} {v}" for v, n in counts if n) + "."
    open_ids = [r["id"] for r in rows if r["verdict"] in ("fails", "conditional", "inconclusive")]
    fixed = [corrections[correction_id(i)] for i in open_ids if correction_id(i) in corrections]
    if not open_ids:
        return text + " Nothing here needs a corrected statement."
    held = [c for c in fixed if c["verdict"] == "holds"]
    other = [c for c in fixed if c["verdict"] != "holds"]
    missing = [i for i in open_ids if correction_id(i) not in corrections]
    if held:
        text += (f" What holds instead, each confirmed on a run of its own: " +
                 "; ".join(f"{c['id']}, {md_escape(shorten(definitions.get(c['id'], {}).get('statement', c['metric']), 110))}"
                           for c in held) + ".")
    if other:
        text += " Not confirmed: " + ", ".join(f"{c['id']} ({c['verdict']})" for c in other) + "."
    if missing:
        text += " No corrected statement yet for " + ", ".join(missing) + "."
    return text


def md_escape(s):
    """Plain text for a Markdown table cell or paragraph: the math in claims and metrics (W_Q, Z*, <=, |x|)
    must not turn into emphasis, HTML or cell breaks."""
    s = str(s).replace("\\", "\\\\").replace("\n", " ")
    for ch in "|*_<>`[]":
        s = s.replace(ch, "\\" + ch)
    return s


def run_set_problems(results, ledger):
    """What keeps `results` from being one finished run per experiment, as check_run_set
    (lib/attnlab/lab/shard_stamp.hpp) says it: every <experiment>.run.json finished, its tables and
    artifacts as it pins them (size and CRC-32), and every experiment with ledger rows stamped. A
    directory without run stamps (written before runs were stamped) has none."""
    import zlib
    stamps = sorted(f for f in os.listdir(results) if f.endswith(".run.json") and not f.startswith("."))
    if not stamps:
        return []
    problems, stamped = [], set()
    for name in stamps:
        try:
            with open(os.path.join(results, name), "rb") as f:
                stamp = json.loads(f.read(16 << 20))
            experiment = stamp["experiment"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            problems.append(f"{name}: not a run stamp ({e})")
            continue
        stamped.add(experiment)
        same, changed = [], []
        for t in stamp.get("tables", []) + stamp.get("artifacts", []):
            path = os.path.join(results, t["file"])
            try:
                with open(path, "rb") as f:
                    data = f.read()
                ok = len(data) == t["bytes"] and zlib.crc32(data) == t["crc32"]
            except OSError:
                ok = False
            (same if ok else changed).append(t["file"])
        if not stamp.get("finished", False):
            problems.append(f"{experiment}: run {stamp.get('run')} did not finish, so its files may mix with an earlier run's")
        elif changed:
            problems.append(f"{experiment}: {', '.join(changed)} not as run {stamp.get('run')} wrote them")
    for experiment in sorted({row.get("experiment", "") for row in ledger} - stamped):
        problems.append(f"{experiment}: rows in the ledger, but no {experiment}.run.json")
    return problems


# Claims placed right after another in the report (the moved claim, the one it follows), whatever their numbers.
PLACED_AFTER = {"U19": "U17"}


def side_table(spec_table, results, table):
    """A markdown table joining derived CSVs (each a judge's means with their intervals) on one key column: one row per
    key in order of first appearance, one column per CSV, "mean [lower, upper]" (— where a CSV lacks the key or is not
    in this run). Values are read, never recomputed."""
    key = spec_table["key"]
    rows, cells = [], {}
    present = []
    for i, col in enumerate(spec_table["columns"]):
        path = os.path.join(results, col["csv"])
        if not os.path.isfile(path):
            continue
        present.append(col["csv"])
        for r in table(path):
            k = r.get(key)
            if k is None or col["mean"] not in r:
                continue
            if k not in rows:
                rows.append(k)
            n = f", {r[col['count']]} seeds" if col.get("count") in r else ""
            cells[(k, i)] = (f"{float(r[col['mean']]):.4f} [{float(r[col['lower']]):.4f}, {float(r[col['upper']]):.4f}]{n}")
    if not rows:
        return ""
    out = [f"**{md_escape(spec_table['title'])}** (from {', '.join(f'`{c}`' for c in present)})\n",
           "| " + key + " | " + " | ".join(md_escape(c["label"]) for c in spec_table["columns"]) + " |",
           "|---|" + "---|" * len(spec_table["columns"])]
    for k in rows:
        out.append(f"| {md_escape(k)} | " + " | ".join(cells.get((k, i), "—") for i in range(len(spec_table["columns"]))) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="results directory holding claims.csv")
    ap.add_argument("--seed", default="", help="seed the experiments ran with (for the header and commands)")
    ap.add_argument("--threads", default="", help="threads the experiments ran with (header only)")
    ap.add_argument("--quick", action="store_true", help="the experiments ran with --quick")
    ap.add_argument("--claims-md", default=os.path.join(REPO, "..", "shared", "CLAIMS.md"),
                    help="claim catalogue for the one-line statements (default ../shared/CLAIMS.md)")
    ap.add_argument("--spec", default=os.path.join(REPO, "tools", "report_figures.json"))
    ap.add_argument("--build", default="build", help="build directory, relative to the repository")
    ap.add_argument("--gnuplot", default="gnuplot")
    args = ap.parse_args()

    results = os.path.abspath(args.results)
    if not os.path.isdir(results):
        sys.exit(f"make_report: {printable(results)}: no such directory")
    ledger_path = os.path.join(results, "claims.csv")
    # The run stamps first: a run killed before it wrote the ledger is named as such, not as a missing file.
    ledger = read_csv(ledger_path) if os.path.exists(ledger_path) else []
    corrections_path = os.path.join(results, "corrections.csv")
    correction_rows = read_csv(corrections_path) if os.path.exists(corrections_path) else []
    for path, rows in ((ledger_path, ledger), (corrections_path, correction_rows)):
        for number, row in enumerate(rows, 2):
            short = [c for c in ("id", "source", "verdict") if not row.get(c)]
            if short or None in row:
                sys.exit(f"make_report: {printable(path)} line {number}: not a ledger row "
                         f"({'no ' + ', '.join(short) if short else 'more cells than columns'})")
    problems = run_set_problems(results, ledger + correction_rows)
    if problems:
        sys.exit(f"make_report: {printable(results)}: not one finished run per experiment: {printable('; '.join(problems))}")
    if not os.path.exists(ledger_path):
        sys.exit(f"make_report: {printable(ledger_path)} not found (no experiment has written its verdicts there)")
    if not shutil.which(args.gnuplot):
        sys.exit(f"make_report: {args.gnuplot} not found (Debian package gnuplot-nox; `make deps`)")
    corrections = {r["id"]: r for r in correction_rows}
    definitions = read_correction_definitions()
    spec = json.load(open(args.spec)) if os.path.exists(args.spec) else {}
    catalogue, titles, seed_order = parse_catalogue(args.claims_md)
    fig_dir = os.path.join(results, "figures")
    os.makedirs(fig_dir, exist_ok=True)

    def idkey(cid):
        m = re.match(r"([A-Z]+)(\d+)", cid)
        return (m.group(1), int(m.group(2))) if m else (cid, 0)

    ledger.sort(key=lambda r: (r["source"], idkey(r["id"])))  # document order (000 R … 004 G), then claim number
    # A claim tested again on another testbed sits beside the first (U19, U16 on recall, after U17 on Fashion-MNIST).
    for moved, after in PLACED_AFTER.items():
        ids = [r["id"] for r in ledger]
        if moved in ids and after in ids:
            row = ledger.pop(ids.index(moved))
            ledger.insert([r["id"] for r in ledger].index(after) + 1, row)
    by_id = {r["id"]: r for r in ledger}
    tables = {}

    def table(path):
        if path not in tables:
            tables[path] = read_csv(path)
        return tables[path]

    def rel(path):
        return os.path.relpath(path, results)

    # Figures first, so each claim's section can list its own.
    figs_for, skipped = {}, []
    for fig in spec.get("figures", []):
        path = os.path.join(results, fig["csv"])
        claims = fig.get("claims", [])
        if not os.path.isfile(path):
            skipped.append((fig, f"`{fig['csv']}` is not in this run"))
            continue
        if not any(c in by_id for c in claims):
            skipped.append((fig, "none of its claims is in the ledger"))
            continue
        fit_rows = None
        if "fit" in fig:
            fit_path = os.path.join(results, fig["fit"]["csv"])
            if not os.path.isfile(fit_path):
                skipped.append((fig, f"its fits `{fig['fit']['csv']}` are not in this run"))
                continue
            fit_rows = table(fit_path)
        out = os.path.join(fig_dir, fig["name"] + ".svg")
        notes, why = build_figure(fig, with_also(fig, table(path), results, table), out, args.gnuplot, fit_rows)
        if why:
            skipped.append((fig, why))
            continue
        for cid in claims:
            figs_for.setdefault(cid, []).append((fig, notes))
    # Stale figures (of an earlier spec, or of one this run's data no longer draws) must not linger; removed only
    # now that every new figure is in place, so a failure above leaves the earlier figures as they were.
    drawn = {fig["name"] + ".svg" for figs in figs_for.values() for fig, _ in figs}
    for f in os.listdir(fig_dir):
        if f.endswith(".svg") and f not in drawn:
            os.remove(os.path.join(fig_dir, f))

    seed_flag = f" --seed {args.seed}" if args.seed else ""
    quick_flag = " --quick" if args.quick else ""
    out = []
    w = out.append
    w("# attnlab results: what the five documents claim about attention, measured\n")
    w("Generated by `tools/make_report.py` from `claims.csv` and the evidence tables beside it; do not edit by hand. "
      "Regenerate everything with `make results`.\n")
    w("| run context | |\n|---|---|")
    for k, v in run_context(args):
        w(f"| {k} | {str(v).replace('|', chr(92) + '|')} |")
    counts = {v: sum(1 for r in ledger if r["verdict"] == v) for v in VERDICT_ORDER}
    w("\n" + f"**{len(ledger)} claims measured:** " + ", ".join(f"{counts[v]} {v}" for v in VERDICT_ORDER) + "." +
      (f" **{len(corrections)} corrected statements**, each judged on a confirming run of its own: " +
       ", ".join(f"{n} {v}" for v, n in ((v, sum(1 for c in corrections.values() if c['verdict'] == v)) for v in VERDICT_ORDER) if n)
       + "." if corrections else "") + "\n")

    sources = list(seed_order) + sorted({r["source"] for r in ledger} - set(seed_order))
    w("## What the data says\n")
    w(para("Generated from the ledgers, never typed: for each source document, how its claims fared and what holds where "
           "they do not (the corrected statements, each confirmed or refuted on data that did not suggest it)."))
    for src in sources:
        rows = [r for r in ledger if r["source"] == src]
        if rows:
            title = md_escape(titles.get(src, src))
            w(para(f"**{title if title.endswith(('?', '.')) else title + '.'}** " + data_says(rows, corrections, definitions)))

    w("## Summary\n")
    w("The claim and the metric are cut to their first words here; each claim's section has them whole.\n")
    w("| id | claim | verdict | metric | observed | threshold | corrected statement |\n|---|---|---|---|---|---|---|")
    for r in ledger:
        stmt = catalogue.get(r["id"], (r["metric"],))[0]
        c = corrections.get(correction_id(r["id"]))
        fix = f"[{c['id']}](#{anchor(c['id'])}) **{c['verdict']}**" if c else "—"
        w(f"| [{r['id']}](#{anchor(r['id'])}) | {md_escape(shorten(stmt, 80))} | **{r['verdict']}** | "
          f"{md_escape(shorten(r['metric'], 70))} | {fmt_num(r['observed'])} | {fmt_num(r['threshold'])} | {fix} |")
    pending = [cid for cid in catalogue if cid not in by_id]  # catalogue order
    if pending:
        w("\nIn the catalogue but not measured in this run: " + ", ".join(pending) + ".")
    w("")
    w(METHOD)
    w(READING)

    for src in sources:
        rows = [r for r in ledger if r["source"] == src]
        if not rows:
            continue
        w(f"## {md_escape(titles.get(src, src))}\n")
        w(f"Source document: `seeds/{src}`.\n")
        for r in rows:
            cid = r["id"]
            stmt, measure = catalogue.get(cid, (r["metric"], ""))[:2]
            w(f"### {cid}\n")
            w(para(f"**Claim.** {md_escape(stmt)}"))
            what = f"**Measured.** {md_escape(r['metric'])}"
            if measure:
                what += f" (catalogue: {md_escape(measure)})"
            w(para(what + "."))
            w(evidence_line(r, results, table, rel))
            why = f"**Verdict: {r['verdict']}.** Observed {fmt_num(r['observed'])} against threshold {fmt_num(r['threshold'])}."
            if r.get("note"):
                why += " " + md_escape(r["note"].strip())
            w(para(why))
            for spec_table in spec.get("tables", []):
                if cid in spec_table.get("claims", []):
                    w(side_table(spec_table, results, table))
            c = corrections.get(correction_id(cid))
            if c:
                d = definitions.get(c["id"], {})
                w(f"#### {c['id']}\n")
                w(para(f"**Corrected statement** ({d.get('basis', 'not in lib/attnlab/lab/corrections.tsv')}). "
                       f"{md_escape(d.get('statement', c['metric']))}"))
                w(para(f"**Measured.** {md_escape(c['metric'])}, on a confirming run of its own."))
                w(evidence_line(c, results, table, rel))
                why = (f"**Verdict: {c['verdict']}.** Observed {fmt_num(c['observed'])} against threshold "
                       f"{fmt_num(c['threshold'])}.")
                if c.get("note"):
                    why += " " + md_escape(c["note"].strip())
                w(para(why))
            for fig, notes in figs_for.get(cid, []):
                alt = re.sub(r"&\{i\}|[{}]", "", fig.get("title", fig["name"]))
                w(f"![{md_escape(alt)}](figures/{fig['name']}.svg)\n")
                if fig.get("caption") or notes:
                    w(para("*" + md_escape(" ".join([fig.get("caption", "")] + [n + "." for n in notes]).strip()) + "*"))
            exes = [r["experiment"]] if r.get("experiment") else []  # provenance: the row names its writer
            if exes:
                w(para("**Reproduce:** " + ", ".join(f"`build/bin/{e}{seed_flag}{quick_flag} --out results`" for e in exes)
                       + " (after `make build`), then `python3 tools/make_report.py --results results"
                       + f"{seed_flag}{quick_flag}`."))
    if skipped:
        w("## Figures not drawn\n")
        w("Figure specs in `tools/report_figures.json` whose data this run did not provide:\n")
        for fig, why in skipped:
            w(f"- `{fig['name']}` ({', '.join(fig.get('claims', []))}): {why}.")
        w("")
    write_whole(os.path.join(results, "REPORT.md"), "\n".join(out))
    print(f"report: {printable(os.path.join(results, 'REPORT.md'))} ({sum(len(v) for v in figs_for.values())} figure uses, "
          f"{len(skipped)} specs skipped)")


def write_whole(path, text):
    """Writes text to path the way the tables are written: to a temporary beside it, flushed to disk, then renamed
    over it; on a failure (a full disk) the temporary is removed and path is as it was. Text that is not UTF-8 (a
    path's odd bytes) is written escaped."""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and not e.filename:
            raise OSError(e.errno, e.strerror, path) from None
        raise


if __name__ == "__main__":
    # A results directory whose name is not UTF-8 is printed with its odd bytes escaped, never as a traceback.
    sys.stdout.reconfigure(errors="backslashreplace")
    try:
        main()
    except FigureWriteError as e:
        sys.exit(f"make_report: {e}")
    except OSError as e:  # a full disk, a read-only directory: one line, exit status 1
        sys.exit(f"make_report: cannot write {printable(e.filename or '')}: {e.strerror or e}")
