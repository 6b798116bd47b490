#!/usr/bin/python3
"""Draws <dir>/inspect_skew_share.svg from attnlab_inspect's <dir>/inspect_heads.csv: the skew share
||R_w||_F / ||M||_F of every head, layer by layer (the heads of a layer side by side, head 0 leftmost), with
the report's figure code (tools/make_report.py, gnuplot). attnlab_inspect runs it after writing its tables.

usage: tools/inspect_figure.py --dir my-gpt2
Exit status 0 drawn, 1 failed, 77 gnuplot missing (nothing drawn).
"""
import argparse
import csv
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_report  # noqa: E402 (the report's figure machinery, beside this script)

FIGURE = "inspect_skew_share.svg"


def spread(rows):
    """Adds x = layer + an offset per head in (-0.4, 0.4), so that every head of a layer has its own place."""
    heads = 1 + max(int(r["head"]) for r in rows)
    for r in rows:
        offset = (int(r["head"]) - (heads - 1) / 2) / heads * 0.8 if heads > 1 else 0.0
        r["x"] = repr(int(r["layer"]) + offset)
        r["form_label"] = "W_Q W_K^T" if r["form"] == "weights" else "with biases [W; b^T]"
    return rows


def main():
    # A directory name that is not UTF-8 is printed with its odd bytes escaped, never as a traceback.
    sys.stdout.reconfigure(errors="backslashreplace")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="attnlab_inspect's --out directory")
    ap.add_argument("--gnuplot", default="gnuplot")
    a = ap.parse_args()
    if shutil.which(a.gnuplot) is None:
        print(f"gnuplot not found (Debian package gnuplot-nox); {FIGURE} not drawn")
        return 77
    # The table holds the model's path (the inputs column), which need not be UTF-8: read as it is, never decoded
    # into an error. No text of it reaches the figure (make_report.build_figure keeps table text out of gnuplot's
    # script; the title names no path).
    try:
        with open(os.path.join(a.dir, "inspect_heads.csv"), newline="", encoding="utf-8", errors="surrogateescape") as f:
            rows = spread(list(csv.DictReader(f)))
    except OSError as e:
        print(f"{FIGURE} not drawn: cannot read {make_report.printable(os.path.join(a.dir, 'inspect_heads.csv'))}: {e.strerror}")
        return 1
    layers = 1 + max(int(r["layer"]) for r in rows)
    heads = 1 + max(int(r["head"]) for r in rows)
    fig = {"name": FIGURE, "x": "x", "y": {"col": "skew_share"}, "series": ["form_label"], "aggregate": "none", "style": "points",
           "logy": False, "yrange": [0, 1], "xinteger": True,
           "xlabel": "layer (its heads side by side, head 0 leftmost)", "ylabel": "skew share ||R_{w}||_{F} / ||M||_{F}",
           "title": f"skew share of every head ({layers} layers, {heads} heads each)"}
    try:
        _, why = make_report.build_figure(fig, rows, os.path.join(a.dir, FIGURE), a.gnuplot)
    except make_report.FigureWriteError as e:  # names the figure itself
        print(e)
        return 1
    if why:
        print(f"{FIGURE} not drawn: {why}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
