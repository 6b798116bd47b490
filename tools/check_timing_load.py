#!/usr/bin/env python3
"""The load test of the timing verdicts: a verdict drawn from timings must not flip with the machine's load.

usage: tools/check_timing_load.py BIN_DIR [--full] [--seed N] [--busy N] [--keep DIR]
       tools/check_timing_load.py --self-test

Runs every experiment that times (the experiments slurm/timing_claims.txt names, and exp_qk_merge for S2's
timed ratio), with one thread, twice, one after the other, each run into its own directory: first as the machine is ("quiet":
nothing of ours beside it), then beside --busy CPU-bound processes (default: one per core), started for that run
and stopped by their pids after it. Then compares the two:
- a timing claim (slurm/timing_claims.txt): its two verdicts equal, or one of them inconclusive; never two
  different decided verdicts (holds against conditional is a flip as much as holds against fails);
- every other claim of these experiments: the same verdict (it does not rest on times);
- the corrected statements of these experiments (corrections.csv) alike: a correction of a timing claim ("R7.c")
  rests on timings as the claim does, any other must keep its verdict;
- S2's timed comparison (qk_merge_time_ratio_timing.csv): per configuration the same faster form, or a tie in one
  of the runs.
Prints the verdicts side by side, then one line per flip. Exit status 0 when there is none, 1 when there is,
2 for bad usage or an experiment that failed. --quick mode unless --full; --keep DIR keeps both runs in DIR/quiet
and DIR/loaded.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
from verdicts import contradict  # noqa: E402 (tools/verdicts.py, beside this script)

TIMING_CLAIMS = os.path.join(ROOT, "slurm", "timing_claims.txt")
# S2's verdict comes from counts; its timed comparison (the note, the figure) is checked per configuration.
RATIO_TABLES = {"exp_qk_merge": ("qk_merge_time_ratio_timing.csv", ("n", "d", "d_k"), "faster", "tie")}


def timing_claims(path=TIMING_CLAIMS):
    """{claim id: experiment} from slurm/timing_claims.txt ('ID EXPERIMENT # why' per line)."""
    claims = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 2 or not line[1].startswith("exp_"):
                raise ValueError(f"{path}:{number}: not 'ID EXPERIMENT  # why'")
            claims[line[0]] = line[1]
    return claims


def experiments(claims):
    return sorted(set(claims.values()) | set(RATIO_TABLES))


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def ledger_rows(run_dir, exps):
    """{id: row} of the run's claims.csv and corrections.csv (absent when no experiment corrects a claim) of `exps`."""
    rows = {}
    for ledger in ("claims.csv", "corrections.csv"):
        path = os.path.join(run_dir, ledger)
        if ledger == "claims.csv" or os.path.isfile(path):
            rows.update({r["id"]: r for r in read_rows(path) if r["experiment"] in exps})
    return rows


def flips(quiet_dir, loaded_dir, claims, exps):
    """(table lines, problems): the two runs' verdicts side by side, and every flip or difference as a message."""
    quiet, loaded = ledger_rows(quiet_dir, exps), ledger_rows(loaded_dir, exps)
    lines, problems = [], []
    for cid in sorted(set(quiet) | set(loaded)):
        a = quiet.get(cid, {}).get("verdict", "(missing)")
        b = loaded.get(cid, {}).get("verdict", "(missing)")
        # A correction of a timing claim ("R7.c") comes from timings as much as the claim does.
        timed = cid in claims or cid.split(".")[0] in claims
        if "(missing)" in (a, b):
            problems.append(f"{cid}: in one run only ({a} quiet, {b} loaded)")
        elif timed and contradict(a, b):
            problems.append(f"{cid}: flipped from {a} (quiet) to {b} (loaded)")
        elif not timed and a != b:
            problems.append(f"{cid}: rests on no timing, yet {a} quiet and {b} loaded")
        lines.append(f"{cid:5} {'timing' if timed else 'exact ':6} {a:13} {b:13}")
    for exp in sorted(set(RATIO_TABLES) & set(exps)):
        table, keys, column, tie = RATIO_TABLES[exp]
        rows = []
        for d in (quiet_dir, loaded_dir):
            path = os.path.join(d, table)
            rows.append({tuple(r[k] for k in keys): r[column] for r in read_rows(path)} if os.path.isfile(path) else None)
        if rows[0] is None or rows[1] is None or set(rows[0]) != set(rows[1]):
            problems.append(f"{table}: missing, or different configurations in the two runs")
            continue
        decided = 0
        for key in rows[0]:
            a, b = rows[0][key], rows[1][key]
            decided += a != tie and b != tie
            if a != b and tie not in (a, b):
                problems.append(f"{table}: {', '.join(f'{k} = {v}' for k, v in zip(keys, key))}: {a} faster quiet, {b} loaded")
        lines.append(f"{table}: {len(rows[0])} configurations, decided in both runs in {decided}")
    return lines, problems


def busy_processes(count):
    """`count` CPU-bound processes (a Python loop each), in their own process group each; stopped by stop_busy."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(count)]


def stop_busy(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def run_all(bin_dir, exps, out, seed, full, busy):
    """Runs each experiment into `out`, beside `busy` CPU-bound processes; returns {experiment: wall seconds}."""
    procs = busy_processes(busy)
    seconds = {}
    try:
        for exp in exps:
            # One thread, as make results gives each task on two cores with JOBS=2: with several, a worker that
            # reaches the end of a parallel region first spins (OpenMP's active wait) while its partner waits for a
            # core, and that spinning is CPU time, in multiples of a scheduler slice (docs/experiments.md).
            cmd = [os.path.join(bin_dir, exp), "--seed", str(seed), "--threads", "1", "--out", out] + ([] if full else ["--quick"])
            t0 = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            seconds[exp] = time.monotonic() - t0
            if r.returncode != 0:
                print(r.stdout, file=sys.stderr)
                raise SystemExit(f"check_timing_load.py: {exp} exited with status {r.returncode}")
    finally:
        stop_busy(procs)
    return seconds


def self_test():
    """The comparison on planted directories: it must accept equal verdicts and inconclusive on one side, and flag
    every flip (holds/fails, holds/conditional), a changed exact claim, and a reversed faster form."""
    claims = {"T1": "exp_a", "T2": "exp_a"}
    exps = ["exp_a", "exp_qk_merge"]
    failures = []

    def plant(path, verdicts, faster):
        os.makedirs(path)
        for ledger, rows in (("claims.csv", {c: v for c, v in verdicts.items() if ".c" not in c}),
                             ("corrections.csv", {c: v for c, v in verdicts.items() if ".c" in c})):
            if ledger == "corrections.csv" and not rows:
                continue  # a run without corrections has no corrections.csv
            with open(os.path.join(path, ledger), "w", encoding="utf-8", newline="") as f:
                w = csv.writer(f)
                w.writerow(["id", "verdict", "experiment"])
                for cid, v in rows.items():
                    w.writerow([cid, v, "exp_qk_merge" if cid == "S2" else "exp_a"])
        with open(os.path.join(path, RATIO_TABLES["exp_qk_merge"][0]), "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["n", "d", "d_k", "faster"])
            for i, v in enumerate(faster):
                w.writerow([i, 1, 1, v])

    cases = [  # (quiet, loaded, S2 faster quiet, loaded, problems expected)
        ({"T1": "holds", "T2": "fails", "E1": "holds", "S2": "holds"}, {"T1": "holds", "T2": "inconclusive", "E1": "holds", "S2": "holds"},
         ["factored", "tie"], ["tie", "merged"], 0),
        ({"T1": "holds", "T2": "fails", "E1": "holds"}, {"T1": "fails", "T2": "fails", "E1": "holds"}, ["factored"], ["factored"], 1),
        ({"T1": "holds", "T2": "fails", "E1": "holds"}, {"T1": "conditional", "T2": "fails", "E1": "holds"}, ["merged"], ["merged"], 1),
        ({"T1": "inconclusive", "T2": "fails", "E1": "holds"}, {"T1": "holds", "T2": "fails", "E1": "inconclusive"}, ["tie"], ["tie"], 1),
        ({"T1": "holds", "T2": "fails", "E1": "holds"}, {"T1": "holds", "T2": "fails", "E1": "holds"}, ["factored"], ["merged"], 1),
        ({"T1": "holds", "T2": "fails", "E1": "holds"}, {"T1": "holds", "E1": "holds"}, ["tie"], ["tie"], 1),
        # Corrections: a timing claim's ("T1.c") may be inconclusive on one side, never flip; an exact claim's
        # ("E1.c") must keep its verdict; one missing from a run is a problem.
        ({"T1": "holds", "T1.c": "holds", "E1": "holds", "E1.c": "fails"}, {"T1": "holds", "T1.c": "inconclusive", "E1": "holds", "E1.c": "fails"},
         ["tie"], ["tie"], 0),
        ({"T1": "holds", "T1.c": "holds", "E1": "holds"}, {"T1": "holds", "T1.c": "conditional", "E1": "holds"}, ["tie"], ["tie"], 1),
        ({"T1": "holds", "E1": "holds", "E1.c": "holds"}, {"T1": "holds", "E1": "holds", "E1.c": "inconclusive"}, ["tie"], ["tie"], 1),
        ({"T1": "holds", "T1.c": "fails", "E1": "holds"}, {"T1": "holds", "E1": "holds"}, ["tie"], ["tie"], 1),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (qa, lb, fq, fl, expected) in enumerate(cases):
            qd, ld = os.path.join(tmp, f"{i}q"), os.path.join(tmp, f"{i}l")
            plant(qd, qa, fq)
            plant(ld, lb, fl)
            _, problems = flips(qd, ld, claims, exps)
            if len(problems) != expected:
                failures.append(f"case {i}: {len(problems)} problem(s), expected {expected}: {problems}")
    listed = timing_claims()
    for cid in ("L2", "R7", "R8", "U3", "U7", "U14", "U15"):
        if cid not in listed:
            failures.append(f"{TIMING_CLAIMS} does not list {cid}")
    for f in failures:
        print("FAILED:", f)
    print("check_timing_load.py --self-test:", "failed" if failures else "passed")
    return 1 if failures else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("bin_dir", nargs="?")
    ap.add_argument("--full", action="store_true", help="full mode instead of --quick")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="CPU-bound processes beside the loaded run")
    ap.add_argument("--keep", help="keep both runs in KEEP/quiet and KEEP/loaded")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv[1:])
    if args.self_test:
        return self_test()
    if not args.bin_dir or args.busy < 1:
        ap.print_usage(sys.stderr)
        return 2
    claims = timing_claims()
    exps = experiments(claims)
    base = args.keep or tempfile.mkdtemp(prefix="attnlab-timing-load.")
    try:
        quiet, loaded = os.path.join(base, "quiet"), os.path.join(base, "loaded")
        for d in (quiet, loaded):
            if os.path.exists(d):
                shutil.rmtree(d)
        tq = run_all(args.bin_dir, exps, quiet, args.seed, args.full, 0)
        tl = run_all(args.bin_dir, exps, loaded, args.seed, args.full, args.busy)
        lines, problems = flips(quiet, loaded, claims, exps)
        print(f"{len(exps)} experiments, {'full' if args.full else 'quick'} mode: {sum(tq.values()):.0f} s quiet, "
              f"{sum(tl.values()):.0f} s beside {args.busy} CPU-bound process(es)")
        for exp in exps:
            print(f"  {exp}: {tq[exp]:.1f} s quiet, {tl[exp]:.1f} s loaded")
        print("claim kind   quiet         loaded")
        for line in lines:
            print(line)
        for p in problems:
            print("FLIP:", p)
        print("timing verdicts", "flipped" if problems else "equal or inconclusive on one side: the property holds")
        return 1 if problems else 0
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
