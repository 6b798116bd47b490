#!/usr/bin/env python3
"""Checks the quick-mode report: runs every experiment with --quick into a temporary directory, writes the report
there, and asserts that every ledger id appears, every corrected statement appears beside its claim (and every
statement defined in lib/attnlab/lab/corrections.tsv was judged), every referenced figure exists and is an SVG,
no claim other than an `untested` one lacks evidence, and no line of REPORT.md is longer than a reader can scan.

usage: tools/check_report.py BIN_DIR [--seed N] [--threads N] [--keep]
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from verdicts import read_verdicts  # noqa: E402 (tools/verdicts.py, beside this script)

VERDICTS = {v for v, _ in read_verdicts()}
MAX_LINE = 300  # characters: a line longer than this is not scanned, it is scrolled


def check(results, bin_dir):
    """Every problem found in results/REPORT.md, as a list of messages (empty when the report is sound)."""
    problems = []
    report_path = os.path.join(results, "REPORT.md")
    if not os.path.isfile(report_path):
        return [f"{report_path} was not written"]
    report = open(report_path, encoding="utf-8").read()
    with open(os.path.join(results, "claims.csv"), newline="") as f:
        ledger = list(csv.DictReader(f))
    if not ledger:
        problems.append("the ledger is empty")

    for section in ("## Summary", "## Method", "## Reading the results"):
        if section not in report:
            problems.append(f"section '{section}' missing")
    for key in ("date", "commit", "compiler", "build", "machine", "threads", "seed"):
        if not re.search(rf"^\| {key} \| \S", report, re.M):
            problems.append(f"run context '{key}' missing from the header")

    for row in ledger:
        cid = row["id"]
        if row["verdict"] not in VERDICTS:
            problems.append(f"{cid}: verdict '{row['verdict']}' is not one of {sorted(VERDICTS)}")
        if not re.search(rf"^\| \[{re.escape(cid)}\]\(#", report, re.M):
            problems.append(f"{cid}: no row in the summary table")
        if not re.search(rf"^### {re.escape(cid)}$", report, re.M):
            problems.append(f"{cid}: no section")
        exe = row.get("experiment", "")  # provenance: the experiment that wrote the row, an executable of this build
        if not exe:
            problems.append(f"{cid}: the row names no experiment")
        elif not os.path.isfile(os.path.join(bin_dir, exe)):
            problems.append(f"{cid}: experiment '{exe}' is not an executable in {bin_dir}")
        if row["verdict"] == "untested":
            continue
        # Relative to the repository root, or absolute for a run outside it; either way it must name the file
        # in its final place (not the staging directory the run wrote into).
        ev = row["evidence"]
        if not ev:
            problems.append(f"{cid}: {row['verdict']} but no evidence recorded")
        elif not os.path.isfile(ev if os.path.isabs(ev) else os.path.join(REPO, ev)):
            problems.append(f"{cid}: evidence '{ev}' does not exist")
        elif os.path.dirname(os.path.realpath(ev if os.path.isabs(ev) else os.path.join(REPO, ev))) != os.path.realpath(results):
            problems.append(f"{cid}: evidence '{ev}' lies outside {results}")
    # The corrected statements: each in the summary row of its claim and in a section right under the claim's,
    # and every statement the definitions hold was judged by the run.
    corrections = []
    if os.path.exists(os.path.join(results, "corrections.csv")):
        with open(os.path.join(results, "corrections.csv"), newline="") as f:
            corrections = list(csv.DictReader(f))
    claim_ids = {row["id"] for row in ledger}
    for row in corrections:
        cid, base = row["id"], row.get("corrects", "")
        if base not in claim_ids:
            problems.append(f"{cid}: corrects '{base}', which is not in the ledger")
        if row["verdict"] not in VERDICTS:
            problems.append(f"{cid}: verdict '{row['verdict']}' is not one of {sorted(VERDICTS)}")
        if not re.search(rf"^\| \[{re.escape(base)}\]\(#.*\[{re.escape(cid)}\]\(#", report, re.M):
            problems.append(f"{cid}: not in its claim's summary row")
        section = re.search(rf"^### {re.escape(base)}$(.*?)^#### {re.escape(cid)}$", report, re.M | re.S)
        if not section or re.search(r"^###? ", section.group(1), re.M):
            problems.append(f"{cid}: no section right under {base}'s")
        if row["verdict"] != "untested" and not row.get("evidence"):
            problems.append(f"{cid}: {row['verdict']} but no evidence recorded")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_report
    judged = {row["id"] for row in corrections}
    for cid in make_report.read_correction_definitions():
        if cid.split(".")[0] in claim_ids and cid not in judged:
            problems.append(f"{cid}: defined in lib/attnlab/lab/corrections.tsv, but the run judged no such statement")
    for number, line in enumerate(report.splitlines(), 1):
        if len(line) > MAX_LINE:
            problems.append(f"REPORT.md line {number}: {len(line)} characters (at most {MAX_LINE}): {line[:60]}…")
    if "Evidence: **missing**" in report:
        problems.append("the report marks some evidence as missing")

    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    for fig in sorted(set(figures)):
        path = os.path.join(results, fig)
        if not os.path.isfile(path):
            problems.append(f"figure {fig} referenced but not written")
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            problems.append(f"figure {fig} is not well-formed XML: {e}")
            continue
        if root.tag.rsplit("}", 1)[-1] != "svg":
            problems.append(f"figure {fig}: root element is <{root.tag}>, not <svg>")
    # Every relative link resolves (evidence, figures); an escaped bracket ("\\](", text such as a note's
    # "tie[exact linformer](n=128,d=32)" escaped by make_report) is not a link.
    for m in re.findall(r"(?<!\\)\]\(([^)#:]+)\)", report):
        if not os.path.exists(os.path.join(results, m)):
            problems.append(f"link target {m} does not exist")
    return sorted(set(problems))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bin", help="directory holding the exp_* executables")
    ap.add_argument("--seed", default="20250311")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--keep", action="store_true", help="keep the temporary results directory")
    args = ap.parse_args()
    if not shutil.which("gnuplot"):
        sys.exit("check_report: gnuplot is not installed (Debian package gnuplot-nox; `make deps`)")
    tmp = tempfile.mkdtemp(prefix="attnlab-report-")
    results = os.path.join(tmp, "results")
    env = dict(os.environ, REPORT="1")
    cmd = [os.path.join(REPO, "tools", "run_experiments.sh"), args.bin, results,
           "--seed", args.seed, "--threads", args.threads, "--quick"]
    print("running:", "REPORT=1", " ".join(cmd), flush=True)
    if subprocess.run(cmd, env=env, cwd=REPO).returncode != 0:
        sys.exit(f"check_report: the quick run failed (kept {tmp})")
    problems = check(results, args.bin)
    if problems:
        print(f"check_report: {len(problems)} problem(s) in {results}/REPORT.md:")
        for p in problems:
            print("  -", p)
        sys.exit(1)
    n_fig = len(set(re.findall(r"\]\((figures/[^)]+)\)", open(os.path.join(results, "REPORT.md")).read())))
    print(f"check_report: REPORT.md sound ({n_fig} figures)")
    if args.keep:
        print("kept", tmp)
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
