#!/usr/bin/python3
"""The Python module's speed beside the library's own, side by side in one run (make bench; docs/performance.md):

  attend    attnlab.attend at n 2048, d 64, float32, exact (the reference kernel and the fast one), against the same
            kernel timed in C++ in the same process on the same inputs (run_attention on head stacks made beforehand,
            attnlab._attnlab._kernel_seconds): the module's conversions, checks and call on top of the kernel;
  overhead  the same on a tiny input (n 4, d 4), per call: what a call costs beyond its kernel (with no keyword, and,
            for the record, with one);
  inspect   attnlab.inspect on bench_inspect's largest checkpoint (a 7B model's attention) against attnlab_inspect
            run on it as a user runs it (a child process, its tables written), each timed whole.

The two sides alternate run by run, so a neighbour's load on this shared machine falls on both; each row's time is
the median of its runs. tools/bench_report.py judges the rows against their targets. Exit 77 when the module does
not import (not built: pybind11 missing).

usage: bench/bench_python.py --build BUILD --inspect-dir DIR --out DIR [--threads 2] [--quick]
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COLUMNS = ["row", "impl", "method", "n", "d", "dtype", "threads", "runs", "python_s", "cpp_s", "ratio", "overhead_us"]


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
        mp, mc = statistics.median(py), statistics.median(cpp)
        rows.append({"row": "attend", "impl": impl, "method": "exact", "n": n, "d": d, "dtype": "float32", "threads": a.threads,
                     "runs": len(py), "python_s": mp, "cpp_s": mc, "ratio": mp / mc, "overhead_us": (mp - mc) * 1e6})
        print(f"bench_python attend {impl} n{n} d{d}: python {mp * 1e3:.3f} ms, C++ kernel {mc * 1e3:.3f} ms, ratio {mp / mc:.4f}",
              file=sys.stderr)
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
        mp, mc = statistics.median(py) / calls, statistics.median(cpp) / calls
        rows.append({"row": row, "impl": "reference", "method": "exact", "n": 4, "d": 4, "dtype": "float32", "threads": 1,
                     "runs": len(py) * calls, "python_s": mp, "cpp_s": mc, "ratio": mp / mc, "overhead_us": (mp - mc) * 1e6})
        print(f"bench_python {row}: {mp * 1e6:.2f} us per call, kernel {mc * 1e6:.2f} us: {(mp - mc) * 1e6:.2f} us", file=sys.stderr)
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

        py, cpp = alternate(lambda: attnlab.inspect(path, "llama", threads=a.threads), program, 0.0, 3, min_runs=3, warm=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    mp, mc = statistics.median(py), statistics.median(cpp)
    rows.append({"row": "inspect", "impl": "", "method": os.path.basename(model.rstrip("/")), "n": "", "d": "", "dtype": "BF16",
                 "threads": a.threads, "runs": len(py), "python_s": mp, "cpp_s": mc, "ratio": mp / mc, "overhead_us": (mp - mc) * 1e6})
    print(f"bench_python inspect {model}: python {mp:.2f} s, attnlab_inspect {mc:.2f} s, ratio {mp / mc:.3f}", file=sys.stderr)
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
