#!/usr/bin/env python3
"""Compares two results directories: a sharded run's merged directory against an unsharded run's, a fresh run
against the committed results/, a run on another machine against this one's.

usage: slurm/compare_runs.py WHOLE_DIR MERGED_DIR

Which case a comparison is in comes first: each directory's RUNS.md (tools/run_record.py) records the vector
ISA of the build that made it (lib/attnlab/lab/build_isa.hpp: avx512, avx2, portable, ...).
- The same ISA on both sides (or not recorded on one: then treated as the same, and said so): the results
  must be byte-identical, as below.
- Different ISAs: float sums are rounded differently (vector width, fused multiply-adds), so tables may
  differ in their last digits; the same claims with the same verdicts are expected. Differing tables are
  listed, not counted as failures; the ledger must hold the same claims with the same verdicts (timing
  claims aside: see below), and its observed values and notes may differ.

Byte-identical means:
- The same tables (*.csv) on both sides; every table byte for byte, except timing tables (*_timing.csv),
  whose header line must still match.
- claims.csv and corrections.csv (the corrected statements' ledger, compared alike; either may be absent on
  both sides): the same rows in the same order, every field equal once each side's directory is taken out
  of the evidence and note (the ledger names a table by its path), except for the claims listed in
  slurm/timing_claims.txt: their verdict, observed value and note come from measured times, so only
  their other fields are compared; and except for the note of a row whose note cites a timing table
  (e.g. S2's "the faster form is the cheaper by count in 9 of the 9 decided (.../qk_merge_time_ratio_timing.csv)"): its
  verdict and observed value are compared, its note is not (the rule of verify/test_experiment_shards.cpp).
- A timing claim's verdicts, in either case, must be equal or one of them inconclusive: each is judged from
  95% intervals, so another run may leave it undecided but never decide it the other way (tools/verdicts.py's
  contradict).
- MERGED_DIR holds REPORT.md and a <experiment>.merged.json stamp per sharded experiment (not compared).
Prints one line per difference and exits 1 if there is any; prints a summary and exits 0 otherwise.
"""
import csv
import io
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
from verdicts import contradict  # noqa: E402 (tools/verdicts.py)


def ledger_path(path):
    """A directory as the experiments name it in the ledger: relative to the repository root if inside."""
    full = os.path.realpath(path)
    rel = os.path.relpath(full, ROOT)
    return full if rel == ".." or rel.startswith("../") else rel


def timing_claims():
    ids = set()
    with open(os.path.join(HERE, "timing_claims.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                ids.add(line.split()[0])
    return ids


LEDGERS = ("claims.csv", "corrections.csv")


def read_claims(directory, ledger="claims.csv"):
    path = os.path.join(directory, ledger)
    if not os.path.exists(path):
        return None, []
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    # Both spellings the ledger may use for the directory (relative to the repository or absolute).
    for prefix in {ledger_path(directory), os.path.realpath(directory)}:
        text = text.replace(prefix + "/", "<dir>/")
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def recorded_isa(directory):
    """The vector ISA in the directory's RUNS.md ('| vector ISA | `avx512` ...'), or None when not recorded."""
    try:
        with open(os.path.join(directory, "RUNS.md"), encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^\| vector ISA \| `([^`]+)`", line)
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def isa_case(whole, merged):
    """(same, sentence): whether byte identity is required, and which case this comparison is in."""
    a, b = recorded_isa(whole), recorded_isa(merged)
    if a is None or b is None or a == "unknown" or b == "unknown":
        missing = [d for d, isa in ((whole, a), (merged, b)) if isa in (None, "unknown")]
        return True, (f"vector ISA not recorded in {' and '.join(missing)} (no RUNS.md, or a build without "
                      "attnlab_build_info): compared as the same ISA, byte for byte")
    if a == b:
        return True, f"the same vector ISA on both sides ({a}): non-timing tables and the ledger byte for byte"
    return False, (f"different vector ISAs ({a} in {whole}, {b} in {merged}): the last digits may differ, the same "
                   "verdicts are expected")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    whole, merged = argv[1], argv[2]
    same_isa, case = isa_case(whole, merged)
    print(f"compare_runs.py: {case}")
    problems = []
    digits = []  # tables that differ between ISAs: expected, listed
    tables_w = sorted(f for f in os.listdir(whole) if f.endswith(".csv") and f not in LEDGERS)
    tables_m = sorted(f for f in os.listdir(merged) if f.endswith(".csv") and f not in LEDGERS)
    for f in sorted(set(tables_w) ^ set(tables_m)):
        problems.append(f"{f}: only in {whole if f in tables_w else merged}")
    same, timing = 0, 0
    for f in sorted(set(tables_w) & set(tables_m)):
        a = open(os.path.join(whole, f), "rb").read()
        b = open(os.path.join(merged, f), "rb").read()
        if f.endswith("_timing.csv"):
            timing += 1
            if a.split(b"\n", 1)[0] != b.split(b"\n", 1)[0]:
                problems.append(f"{f}: the timing table's header differs")
        elif a != b:
            (problems if same_isa else digits).append(f"{f}: differs ({len(a)} bytes in {whole}, {len(b)} in {merged})")
        else:
            same += 1
    loose = timing_claims()
    counts = {}  # ledger -> (rows, strict, notes_timed)
    for ledger in LEDGERS:
        counts[ledger] = compare_ledger(ledger, whole, merged, same_isa, loose, problems)
    if not os.path.isfile(os.path.join(merged, "REPORT.md")):
        problems.append(f"{merged}/REPORT.md missing")
    for p in problems:
        print(p)
    if problems:
        return 1
    ledgers = "; ".join(f"{ledger}'s {rows} rows ({strict} with the same verdict, {rows - strict} timing claims equal or inconclusive on one side)"
                        if not same_isa else
                        f"{ledger}'s {rows} rows ({strict - timed} whole, {timed} without a note that cites timings, "
                        f"{rows - strict} timing claims without observed/note, their verdicts equal or inconclusive on one side)"
                        for ledger, (rows, strict, timed) in counts.items())
    if not same_isa:
        for d in digits:
            print(f"(expected between ISAs) {d}")
        print(f"same verdicts: {ledgers}; {same} tables byte for byte, {len(digits)} differing in digits, {timing} timing "
              "tables by header")
        return 0
    print(f"equal: {same} tables byte for byte, {timing} timing tables by header, {ledgers}")
    return 0


def compare_ledger(ledger, whole, merged, same_isa, loose, problems):
    """Compares one ledger of the two directories (rules in the docstring above), appending to problems; returns
    (rows, rows compared strictly, rows compared without their note)."""
    header_w, rows_w = read_claims(whole, ledger)
    header_m, rows_m = read_claims(merged, ledger)
    if header_w != header_m:
        problems.append(f"{ledger}: the headers differ" if header_w and header_m else
                        f"{ledger}: only in {whole if header_w else merged}")
        return 0, 0, 0
    if header_w is None:
        return 0, 0, 0
    cols = {name: k for k, name in enumerate(header_w)}
    skip = {cols[c] for c in ("verdict", "observed", "note") if c in cols}
    notes_timed = 0
    ids_w = [r[0] for r in rows_w]
    ids_m = [r[0] for r in rows_m]
    # A correction of a timing claim ("R7.c") comes from timings as much as the claim does.
    is_loose = lambda cid: cid in loose or cid.split(".")[0] in loose
    if ids_w != ids_m:
        problems.append(f"{ledger}: different rows: {ids_w} against {ids_m}")
    elif not same_isa:
        verdict = cols.get("verdict")
        for a, b in zip(rows_w, rows_m):
            if verdict is not None and (contradict(a[verdict], b[verdict]) if is_loose(a[0]) else a[verdict] != b[verdict]):
                problems.append(f"{ledger}: row {a[0]}: verdict {a[verdict]} in {whole}, {b[verdict]} in {merged}")
    else:
        note, verdict = cols.get("note"), cols.get("verdict")
        for a, b in zip(rows_w, rows_m):
            if is_loose(a[0]) and verdict is not None and contradict(a[verdict], b[verdict]):
                problems.append(f"{ledger}: timing claim {a[0]}: verdict {a[verdict]} in {whole}, {b[verdict]} in {merged}, "
                                "two different decided verdicts")
            if is_loose(a[0]):
                a = [x for k, x in enumerate(a) if k not in skip]
                b = [x for k, x in enumerate(b) if k not in skip]
            elif note is not None and ("_timing.csv" in a[note] or "time ~" in a[note]):
                notes_timed += 1
                a = [x for k, x in enumerate(a) if k != note]
                b = [x for k, x in enumerate(b) if k != note]
            if a != b:
                problems.append(f"{ledger}: row {a[0]} differs:\n  {a}\n  {b}")
    return len(ids_w), sum(1 for r in ids_w if not is_loose(r)), notes_timed

if __name__ == "__main__":
    sys.exit(main(sys.argv))
