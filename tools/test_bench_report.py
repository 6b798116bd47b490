#!/usr/bin/env python3
"""Checks bench_report.py's end-of-run ceiling (bench_attention_ceiling.csv): a run whose GEMM or memory rate
moved by more than CEILING_DRIFT between the start and the end of bench_attention is flagged, one within it is
not, and a missing file, a missing row or a non-finite or non-positive rate are told apart. Synthetic tables in a
temporary directory, never in results/.

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


def drift(body):
    """bench_report.ceiling_drift on a results directory holding `body` as its ceiling table (None: no file)."""
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-report.") as d:
        if body is not None:
            with open(os.path.join(d, "bench_attention_ceiling.csv"), "w") as f:
                f.write(body)
        return bench_report.ceiling_drift(d)


def table(start, end):
    """Rows for (gemm, memory) at the start and at the end; Eigen's and OpenBLAS's rates both the gemm rate."""
    return HEADER + "".join(f"{w},{g},{g},{g},{m}\n" for w, (g, m) in (("start", start), ("end", end)))


def main():
    limit = bench_report.CEILING_DRIFT
    # Within the limit: stated, not flagged.
    text, problem = drift(table((200.0, 50.0), (200.0 * (1 + limit / 2), 50.0)))
    check(problem is None, f"a quiet run is not a problem ({problem})")
    check("200 -> 210 GFLOP/s" in text and "not reliable" not in text, f"a quiet run is not flagged: {text!r}")
    # The GEMM rate moved by more than the limit, in either direction: flagged.
    for end in (200.0 * (1 + 2 * limit), 200.0 / (1 + 2 * limit)):
        text, problem = drift(table((200.0, 50.0), (end, 50.0)))
        check(problem is None and "not reliable" in text, f"sgemm 200 -> {end:.0f} is flagged: {text!r}")
    # Only the memory rate moved: flagged too (the roofline divides by it).
    text, problem = drift(table((200.0, 50.0), (200.0, 50.0 * (1 + 2 * limit))))
    check(problem is None and "not reliable" in text, f"a memory rate that moved is flagged: {text!r}")
    # No file: a run from before the table existed, said so, not an error.
    text, problem = drift(None)
    check(problem is None and "No end-of-run ceiling" in text, f"a missing table is stated: {text!r}")
    # Broken tables are errors, each with a message naming the file.
    for what, body in (("no end row", HEADER + "start,200,200,200,50\n"),
                       ("a non-finite rate", table((200.0, 50.0), (float("nan"), 50.0))),
                       ("a zero rate", table((200.0, 50.0), (0.0, 50.0))),
                       ("a negative rate", table((200.0, -1.0), (200.0, 50.0))),
                       ("a word for a rate", HEADER + "start,fast,1,1,1\nend,1,1,1,1\n")):
        text, problem = drift(body)
        check(problem is not None and "bench_attention_ceiling.csv" in problem, f"{what} is an error ({problem})")
    print(f"test_bench_report: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
