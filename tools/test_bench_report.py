#!/usr/bin/env python3
"""Checks bench_report.py's ceilings. The end-of-run ceiling (bench_attention_ceiling.csv): a run whose GEMM or
memory rate moved by more than CEILING_DRIFT between the start and the end of bench_attention is flagged, one within
it is not, and a missing file, a missing row or a non-finite or non-positive rate are told apart; when every row has
its own ceiling measured around it, only the bandwidth is flagged. The ceilings beside each configuration: a row
whose two measurements are more than CEILING_DRIFT apart is flagged, by name, in the sentence, in its table cell and
in a target judged on it. The second pass's sentence counts what it timed; the longest sequence's row is judged on the
in-place streaming row when there is one. The Python module's rows are judged against their targets. Synthetic tables in a temporary directory, never in results/.

usage: tools/test_bench_report.py
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402

FAILURES = []
HEADER = "when,gemm_gflops,eigen_gemm_gflops,openblas_gemm_gflops,memory_gbs\n"


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def drift(body, beside_rows=False):
    """bench_report.ceiling_drift on a results directory holding `body` as its ceiling table (None: no file)."""
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-report.") as d:
        if body is not None:
            with open(os.path.join(d, "bench_attention_ceiling.csv"), "w") as f:
                f.write(body)
        return bench_report.ceiling_drift(d, beside_rows)


def attnlab_row(method, n, gflops, before, after):
    """A bench_attention row at batch 32, heads 4, d 64 with the sgemm rates measured around it."""
    return {"method": method, "impl": "attnlab", "batch": "32", "heads": "4", "n": str(n), "d": "64", "threads": "2",
            "median_s": "1", "gflops": str(gflops), "peak_mib": "1", "gemm_gflops": str(max(before, after)),
            "gemm_before_gflops": str(before), "gemm_after_gflops": str(after), "roofline_gflops": str(max(before, after)),
            "memory_gbs": "50", "user_s": "1", "sys_s": "0", "minor_faults": "0"}


def check_beside(limit):
    """The ceilings measured around each configuration: steady rows pass, an unsteady one is named wherever it is used."""
    steady = {bench_report.key(r): r for r in (attnlab_row("linformer", 1024, 120.0, 200.0, 200.0 * (1 + limit / 2)),
                                              attnlab_row("linformer", 2048, 110.0, 200.0 * (1 + limit / 2), 200.0))}
    text = bench_report.beside_sentence(steady)
    check("within 10%" in text and "not reliable" not in text, f"steady rows are not flagged: {text!r}")
    check(bench_report.unsteady(steady[("linformer", 32, 4, 1024, 64)]) is None, "a steady row is not unsteady")
    # The rate fell by more than the limit after the n 2048 row: that row, and only it, is flagged.
    rows = dict(steady)
    rows[("linformer", 32, 4, 2048, 64)] = attnlab_row("linformer", 2048, 110.0, 200.0, 200.0 / (1 + 2 * limit))
    text = bench_report.beside_sentence(rows)
    check("1 of 2 configurations" in text and "linformer b32 h4 n2048 d64" in text and "n1024" not in text,
          f"the unsteady row is named, alone: {text!r}")
    lines = bench_report.targets_17(rows, {}, {})
    judged = [l for l in lines if "linformer forward, share of GEMM rate at n >= 1024" in l]
    check(len(judged) == 1 and "not reliable" in judged[0] and "n2048" in judged[0],
          f"a target judged on the unsteady row says so: {judged}")
    table = bench_report.table(rows, {}, {})
    check(any("| 2048 |" in l and "**200, 167**" in l for l in table), "the unsteady row's cell is marked in the table")
    check(any("| 1024 |" in l and "| 200, 210 |" in l for l in table), "a steady row's cell is not marked")
    # bench_vit's rows carry the same two measurements: an unsteady one is named in its target row.
    vit = dict(attnlab_row("exact", 196, 80.0, 200.0, 200.0 / (1 + 2 * limit)), batch="16", images_per_s="600")
    lines = bench_report.vit_targets([vit], [])
    check(len(lines) == 1 and "not reliable" in lines[0], f"an unsteady ViT row says so: {lines}")
    vit.update(gemm_after_gflops="200.0")
    check("not reliable" not in bench_report.vit_targets([vit], [])[0], "a steady ViT row is not flagged")
    # A rate around a row that is not a finite positive number is an error naming the column, never a silent pass.
    check(bench_report.bad_beside(list(steady.values())) is None, "finite positive rates around rows pass")
    for bad in ("nan", "inf", "0", "-1"):
        broken = dict(attnlab_row("nystrom", 1024, 80.0, 200.0, 200.0), gemm_after_gflops=bad)
        problem = bench_report.bad_beside([broken])
        check(problem is not None and "gemm_after_gflops" in problem, f"a rate of {bad} around a row is an error ({problem})")
    # A CSV from before the rates were measured around each row: no sentence, no flag, no error.
    old = {k: {c: v for c, v in r.items() if not c.startswith("gemm_before") and not c.startswith("gemm_after")}
           for k, r in rows.items()}
    check(bench_report.beside_sentence(old) == "" and bench_report.unsteady(next(iter(old.values()))) is None,
          "an older CSV has no per-row ceilings and is not flagged")
    # With per-row ceilings, a GEMM rate that moved between start and end moves no share: only the bandwidth flags.
    text, problem = drift(table_rows((200.0, 50.0), (200.0 * (1 + 2 * limit), 50.0)), beside_rows=True)
    check(problem is None and "not reliable" not in text, f"per-row ceilings: a GEMM drift alone is not flagged: {text!r}")
    text, problem = drift(table_rows((200.0, 50.0), (200.0, 50.0 * (1 + 2 * limit))), beside_rows=True)
    check(problem is None and "rooflines" in text and "not reliable" in text,
          f"per-row ceilings: a bandwidth drift is flagged: {text!r}")


def check_passes():
    """The second pass's sentence: counts per implementation, how many were lower in the second pass, the widest
    gap between two medians; rows of one pass, or a CSV from before the passes, say that none was timed twice."""
    twice = [dict(attnlab_row("exact", 1024, 100.0, 200.0, 200.0), passes="2", pass_medians_s="0.03 0.05"),
             dict(attnlab_row("exact", 2048, 100.0, 200.0, 200.0), passes="2", pass_medians_s="0.06 0.04"),
             dict(attnlab_row("exact", 2048, 100.0, 200.0, 200.0), impl="torch", passes="2", pass_medians_s="1.0 1.1"),
             dict(attnlab_row("streaming", 131072, 100.0, 200.0, 200.0), passes="1", pass_medians_s="25.0")]
    text = bench_report.passes_sentence(twice)
    check("attnlab 2 (1 lower in the second; the two medians at most 1.67x apart)" in text
          and "torch 1 (0 lower in the second; the two medians at most 1.10x apart)" in text,
          f"the second pass is counted per implementation: {text!r}")
    for rows in (twice[3:], [attnlab_row("exact", 1024, 100.0, 200.0, 200.0)]):
        check("No configuration was timed in a second pass" in bench_report.passes_sentence(rows),
              "rows of one pass (or without the columns) say so")


def check_long_row():
    """Issue 17's longest-sequence row: judged on the in-place streaming row when there is one (Q, K and V alone
    96 MiB), on the out-of-place one in a CSV from before it (Q, K, V and output 128 MiB), never on both."""
    def long_rows(method, peak):
        r = dict(attnlab_row(method, bench_report.LONG_N_17, 150.0, 200.0, 200.0), batch="1", heads="1",
                 peak_mib=str(peak))
        return {bench_report.key(r): r}
    old = [l for l in bench_report.targets_17(long_rows("streaming", 128.9), {}, {}) if "n131072" in l]
    check(len(old) == 1 and "output alone 128 MiB" in old[0] and "**not met**" in old[0], f"out of place: {old}")
    both = {**long_rows("streaming", 128.9), **long_rows("streaming-inplace", 97.0)}
    new = [l for l in bench_report.targets_17(both, {}, {}) if "n131072" in l]
    check(len(new) == 1 and "written over Q" in new[0] and "alone 96 MiB" in new[0] and "97.0 MiB" in new[0]
          and new[0].rstrip().endswith("| met |"), f"in place: {new}")


def table_rows(start, end):
    """Rows for (gemm, memory) at the start and at the end; Eigen's and OpenBLAS's rates both the gemm rate."""
    return HEADER + "".join(f"{w},{g},{g},{g},{m}\n" for w, (g, m) in (("start", start), ("end", end)))


def check_one_target_per_quantity():
    """A full set of rows (exact, the approximations, streaming, the backward, R7, every ViT method) yields one
    target per quantity: exact's share and its ratio to PyTorch once each, each approximation's share at n >= 1024
    and at its worst grid cell once each, one ViT row per method (60% for exact, 45% for the others)."""
    ours, torch = {}, {}
    for m in ("exact", "streaming", "linear-elu", "linear-shen", "linformer", "nystrom", "exact-backward"):
        for n in (512, 1024, 2048):
            r = attnlab_row(m, n, 150.0, 200.0, 200.0)
            ours[bench_report.key(r)] = r
            torch[bench_report.key(r)] = dict(r, impl="torch", median_s="3")
    long = dict(attnlab_row("streaming", 32768, 150.0, 200.0, 200.0), batch="1", heads="1")
    ours[bench_report.key(long)] = long
    lines = (bench_report.targets(ours, torch, [{"d": "4096", "d_k": "64", "speedup": "100"}])
             + bench_report.targets_17(ours, torch, {}))
    count = lambda *words: sum(all(w in l for w in words) for l in lines)  # noqa: E731
    check(count("exact vs torch") == 1, f"one ratio of exact to PyTorch as written: {lines}")
    check(count("| exact forward, share") == 1 and count("| exact, share") == 0, "one share target for exact's forward")
    for m in ("linear-elu", "linformer", "nystrom"):
        check(count(f"| {m} forward, share of GEMM rate at n >= 1024") == 1 and count(f"| {m} forward, every grid cell") == 1
              and count(f"| {m}, share of GEMM rate (worst)") == 0, f"{m}: one target per share, no older duplicate")
        check(count(f"| {m} vs torch") == 1, f"{m}: one ratio to PyTorch")
    methods = ["exact", "linear-elu", "nystrom", "symmetric"]
    vit = [dict(attnlab_row(m, 196, g, 200.0, 200.0), batch="16", images_per_s="600")
           for m, g in zip(methods, (130.0, 80.0, 60.0, 100.0))]
    profile = [{"method": "linear-elu", "part": p, "seconds_per_chunk": str(sec), "share_of_chunk": str(sec / 10),
                "counted_gflop_per_chunk": str(fl), "gflops": str(fl / sec if fl else float("nan"))}
               for p, sec, fl in (("attention (linear-elu, every head)", 5.0, 50.0), ("mlp linears", 2.0, 100.0),
                                  ("gelu", 1.0, 0.0), ("whole chunk (forward_backward)", 10.0, 200.0))]
    rows = bench_report.vit_targets(vit, profile)
    check(len(rows) == len(methods), f"one ViT row per method: {rows}")
    check(">= 60%" in rows[0] and "| met |" in rows[0], f"exact at 65% meets 60%: {rows[0]}")
    check(">= 45%" in rows[1] and "not met" in rows[1] and "bounded by its attention (linear-elu, every head)" in rows[1]
          and "40% of the chunk is lost there" in rows[1], f"linear-elu at 40% misses 45%, its attention named: {rows[1]}")
    check("no profile of it" in rows[2] and "not met" in rows[2], f"a method without a profile says so: {rows[2]}")
    check("| met |" in rows[3] and "bounded" not in rows[3], f"symmetric at 50% meets 45%, no bound named: {rows[3]}")
    check(len(bench_report.vit_targets(vit[1:], profile)) == len(methods) - 1, "no exact row: no exact target row")


def check_python_rows():
    """The Python module's rows: each judged against its target (met, not met; from the 95% interval where the table
    has one: met, not met or undecided), a --quick run's ratios shown but not judged, and no bench_python.csv (the
    module not built) one row saying so, not judged."""
    def py_row(row, ratio, overhead_us, n="2048"):
        return {"row": row, "impl": "reference" if row != "inspect" else "", "method": "exact" if row != "inspect" else "llama-7b",
                "n": n, "d": "64", "dtype": "float32", "threads": "2", "runs": "9", "python_s": str(ratio), "cpp_s": "1.0",
                "ratio": str(ratio), "overhead_us": str(overhead_us)}
    rows = bench_report.python_targets([py_row("attend", 1.03, 30000), py_row("overhead", 1.5, 12.0, "4"),
                                        py_row("inspect", 1.12, 1e6)], False)
    check(len(rows) == 3, f"three Python rows: {rows}")
    check("<= 1.05x" in rows[0] and rows[0].rstrip().endswith("| met |"), f"attend at 1.03x meets 1.05x: {rows[0]}")
    check("<= 20 us" in rows[1] and rows[1].rstrip().endswith("| met |"), f"a 12 us overhead meets 20 us: {rows[1]}")
    check("<= 1.1x" in rows[2] and "not met" in rows[2], f"inspect at 1.12x misses 1.1x: {rows[2]}")
    slow = bench_report.python_targets([py_row("attend", 1.07, 0), py_row("overhead", 1, 25.0, "4")], False)
    check("not met" in slow[0] and "not met" in slow[1], f"1.07x and 25 us miss their targets: {slow}")
    quick = bench_report.python_targets([py_row("attend", 1.5, 0, "512")], True)
    check(quick[0].rstrip().endswith("| - |"), f"a quick run's ratio is not judged: {quick}")
    missing = bench_report.python_targets([], False)
    check(len(missing) == 1 and "not measured" in missing[0] and missing[0].rstrip().endswith("| - |"),
          f"no bench_python.csv: one row saying so, not judged: {missing}")
    # With the intervals bench_python.py writes, the interval decides, not the median: within the target met, beyond it
    # not met, across it undecided (a rerun cannot turn met into not met).
    def with_interval(row, value, lower, upper, n="2048"):
        r = py_row(row, value, value, n)
        key = "ratio" if row != "overhead" else "overhead"
        r[f"{key}_lower95" + ("_us" if key == "overhead" else "")] = str(lower)
        r[f"{key}_upper95" + ("_us" if key == "overhead" else "")] = str(upper)
        return r
    judged = bench_report.python_targets([with_interval("attend", 1.03, 1.02, 1.045), with_interval("attend", 1.04, 1.03, 1.06),
                                          with_interval("attend", 1.07, 1.055, 1.08), with_interval("overhead", 19.0, 18.0, 21.0, "4"),
                                          with_interval("inspect", 1.05, 1.0, 1.1)], False)
    check(judged[0].rstrip().endswith("| met |") and "95% interval 1.020 to 1.045" in judged[0], f"an interval within 1.05x: met: {judged[0]}")
    check("undecided" in judged[1] and "not met" not in judged[1], f"an interval across 1.05x: undecided: {judged[1]}")
    check("not met" in judged[2], f"an interval beyond 1.05x: not met: {judged[2]}")
    check("undecided" in judged[3] and "18.0 us to 21.0 us" in judged[3], f"an overhead interval across 20 us: undecided: {judged[3]}")
    check(judged[4].rstrip().endswith("| met |"), f"an interval whose upper bound is the target: met: {judged[4]}")


def main():
    limit = bench_report.CEILING_DRIFT
    # Within the limit: stated, not flagged.
    text, problem = drift(table_rows((200.0, 50.0), (200.0 * (1 + limit / 2), 50.0)))
    check(problem is None, f"a quiet run is not a problem ({problem})")
    check("200 -> 210 GFLOP/s" in text and "not reliable" not in text, f"a quiet run is not flagged: {text!r}")
    # The GEMM rate moved by more than the limit, in either direction: flagged.
    for end in (200.0 * (1 + 2 * limit), 200.0 / (1 + 2 * limit)):
        text, problem = drift(table_rows((200.0, 50.0), (end, 50.0)))
        check(problem is None and "not reliable" in text, f"sgemm 200 -> {end:.0f} is flagged: {text!r}")
    # Only the memory rate moved: flagged too (the roofline divides by it).
    text, problem = drift(table_rows((200.0, 50.0), (200.0, 50.0 * (1 + 2 * limit))))
    check(problem is None and "not reliable" in text, f"a memory rate that moved is flagged: {text!r}")
    # No file: a run from before the table existed, said so, not an error.
    text, problem = drift(None)
    check(problem is None and "No end-of-run ceiling" in text, f"a missing table is stated: {text!r}")
    # Broken tables are errors, each with a message naming the file.
    for what, body in (("no end row", HEADER + "start,200,200,200,50\n"),
                       ("a non-finite rate", table_rows((200.0, 50.0), (float("nan"), 50.0))),
                       ("a zero rate", table_rows((200.0, 50.0), (0.0, 50.0))),
                       ("a negative rate", table_rows((200.0, -1.0), (200.0, 50.0))),
                       ("a word for a rate", HEADER + "start,fast,1,1,1\nend,1,1,1,1\n")):
        text, problem = drift(body)
        check(problem is not None and "bench_attention_ceiling.csv" in problem, f"{what} is an error ({problem})")
    check_beside(limit)
    check_passes()
    check_long_row()
    check_one_target_per_quantity()
    check_python_rows()
    print(f"test_bench_report: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
