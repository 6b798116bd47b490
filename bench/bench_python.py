#!/usr/bin/python3
"""The Python module's speed beside the library's own, side by side in one run (make bench; docs/performance.md):

  attend    attnlab.attend at n 2048, d 64, float32, exact (the reference kernel and the fast one), against the same
            kernel timed in C++ in the same process on the same inputs (run_attention on head stacks made beforehand,
            attnlab._attnlab._kernel_seconds): the module's conversions (none for the fast kernel, which reads C
            order in place with the same bits), checks and call on top of the kernel;
  overhead  the same on a tiny input (n 4, d 4), per call: what a call costs beyond its kernel (with no keyword, and,
            for the record, with one);
  inspect   attnlab.inspect on bench_inspect's largest checkpoint (a 7B model's attention) against attnlab_inspect
            run on it as a user runs it (a child process, its tables written), each timed whole.

The two sides alternate run by run, so a neighbour's load on this shared machine falls on both; each row's times are
the medians of its runs, and its ratio (overhead) the median of the runs' paired ratios (differences) with a
distribution-free 95% interval from order statistics. tools/bench_report.py judges each row from that interval: met
where it lies within the target, not met where it lies beyond, undecided where it straddles the target. Exit 77 when the module does
not import (not built: pybind11 missing).

usage: bench/bench_python.py --build BUILD --inspect-dir DIR --out DIR [--threads 2] [--quick]
"""
import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COLUMNS = ["row", "impl", "method", "n", "d", "dtype", "threads", "runs", "python_s", "cpp_s", "ratio", "ratio_lower95",
           "ratio_upper95", "overhead_us", "overhead_lower95_us", "overhead_upper95_us"]


def median_interval(values, confidence=0.95):
    """(median, lower, upper): the sample median and the distribution-free interval for the population median from
    order statistics, [x_(l), x_(n+1-l)] with the largest l whose coverage P(l <= B <= n - l), B ~ Binomial(n, 1/2),
    is at least `confidence` (lab/median_interval.hpp's rule: each value falls below the median with probability 1/2
    whatever the noise, and timings on a shared machine are skewed and heavy-tailed). None for the bounds when even
    [min, max] does not reach the confidence (fewer than 6 values at 0.95)."""
    x, n = sorted(values), len(values)
    below = [0.0] * (n + 1)  # below[j] = P(B < j)
    for j in range(n):
        below[j + 1] = below[j] + math.comb(n, j) / 2.0 ** n
    best = None
    for lo in range(1, n // 2 + 1):
        if below[n - lo + 1] - below[lo] >= confidence:  # P(lo <= B <= n - lo)
            best = lo
    median = statistics.median(x)
    return (median, x[best - 1], x[n - best]) if best else (median, None, None)


def alternate(python_call, cpp_call, budget_s, max_runs, min_runs=3, warm=True):
    """Runs the two calls one after the other until budget_s or max_runs: (python seconds, C++ seconds) per run, after
    one untimed warm-up each (unless warm is False: the inspections find their files in the page cache already)."""
    if warm:
        python_call(), cpp_call()
    py, cpp = [], []
    start = time.perf_counter()
    while len(py) < max_runs and (len(py) < min_runs or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        python_call()
        py.append(time.perf_counter() - t)
        cpp.append(cpp_call())
    return py, cpp


def paired_row(py, cpp, calls):
    """A row's numbers from its alternating runs (each `calls` calls): the median time per call of each side, and the
    median with its 95% interval of the runs' paired ratios python / C++ and of their paired differences per call (us).
    A bound without enough runs for the interval is written empty."""
    ratio = median_interval([p / c for p, c in zip(py, cpp)])
    over = median_interval([(p - c) / calls * 1e6 for p, c in zip(py, cpp)])
    blank = lambda x: "" if x is None else x  # noqa: E731
    return {"runs": len(py) * calls, "python_s": statistics.median(py) / calls, "cpp_s": statistics.median(cpp) / calls,
            "ratio": ratio[0], "ratio_lower95": blank(ratio[1]), "ratio_upper95": blank(ratio[2]),
            "overhead_us": over[0], "overhead_lower95_us": blank(over[1]), "overhead_upper95_us": blank(over[2])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--inspect-dir", required=True, help="bench_inspect's largest checkpoint")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    try:
        import numpy as np
        import attnlab
    except ImportError as e:
        print(f"bench_python: skipped: the module does not import ({e}); build it with make python (Debian: pybind11-dev)")
        return 77
    kernel_seconds = attnlab._attnlab._kernel_seconds
    rng = np.random.default_rng(20250311)
    rows = []
    budget = 1.0 if a.quick else 5.0
    n, d = (512, 64) if a.quick else (2048, 64)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
    for impl in ("reference", "fast"):
        py, cpp = alternate(lambda: attnlab.attend(q, k, v, "exact", impl=impl, threads=a.threads),
                            lambda: kernel_seconds(q, k, v, "exact", 1, {"impl": impl, "threads": a.threads})[0], budget, 200)
        r = paired_row(py, cpp, 1)
        rows.append({"row": "attend", "impl": impl, "method": "exact", "n": n, "d": d, "dtype": "float32", "threads": a.threads, **r})
        print(f"bench_python attend {impl} n{n} d{d}: python {r['python_s'] * 1e3:.3f} ms, C++ kernel {r['cpp_s'] * 1e3:.3f} ms, "
              f"ratio {r['ratio']:.4f} [{r['ratio_lower95']:.4f}, {r['ratio_upper95']:.4f}]", file=sys.stderr)
    # A tiny input: each measurement is `calls` calls in a row (timer resolution), C++ likewise inside the module. The
    # judged row is the plainest call (a method, no keyword: attend's options are not parsed); beside it, for the
    # record, one with a keyword (parsed by attend's own option parser).
    tq, tk, tv = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(3))
    calls = 200 if a.quick else 2000
    for row, params in (("overhead", {}), ("overhead-keyword", {"threads": 1})):
        def python_batch():
            for _ in range(calls):
                attnlab.attend(tq, tk, tv, "exact", **params)

        py, cpp = alternate(python_batch, lambda: sum(kernel_seconds(tq, tk, tv, "exact", calls, params)),
                            budget, 50 if a.quick else 200, min_runs=7)
        r = paired_row(py, cpp, calls)
        rows.append({"row": row, "impl": "reference", "method": "exact", "n": 4, "d": 4, "dtype": "float32", "threads": 1, **r})
        print(f"bench_python {row}: {r['python_s'] * 1e6:.2f} us per call, kernel {r['cpp_s'] * 1e6:.2f} us: "
              f"{r['overhead_us']:.2f} us [{r['overhead_lower95_us']:.2f}, {r['overhead_upper95_us']:.2f}]", file=sys.stderr)
    # The inspector: the program as a user runs it (a process, its tables written) against the module, alternating.
    model = a.inspect_dir
    index = os.path.join(model, "model.safetensors.index.json")
    path = index if os.path.exists(index) else os.path.join(model, "model.safetensors")
    work = tempfile.mkdtemp(prefix="bench_python.")
    try:
        def program():
            out = os.path.join(work, "out")
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            r = subprocess.run([os.path.join(a.build, "bin", "attnlab_inspect"), "--layout", "llama", path, "--out", out,
                                "--threads", str(a.threads), "--no-figure"], capture_output=True, text=True)
            took = time.perf_counter() - t
            if r.returncode != 0:
                raise SystemExit(f"bench_python: attnlab_inspect failed on {path}: {r.stderr}")
            return took

        # Six runs each: the fewest whose [min, max] is a 95% interval for the median (about a minute and a half).
        runs = 3 if a.quick else 6
        py, cpp = alternate(lambda: attnlab.inspect(path, "llama", threads=a.threads), program, 0.0, runs, min_runs=runs, warm=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    r = paired_row(py, cpp, 1)
    rows.append({"row": "inspect", "impl": "", "method": os.path.basename(model.rstrip("/")), "n": "", "d": "", "dtype": "BF16",
                 "threads": a.threads, **r})
    print(f"bench_python inspect {model}: python {r['python_s']:.2f} s, attnlab_inspect {r['cpp_s']:.2f} s, ratio {r['ratio']:.3f}",
          file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=a.out, prefix=".bench_python.", suffix=".csv")
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({c: (repr(r[c]) if isinstance(r[c], float) else r[c]) for c in COLUMNS})
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(a.out, "bench_python.csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
