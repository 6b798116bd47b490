#!/usr/bin/python3
"""The PyTorch peer of bench_attention (issue 6): each method written the direct way in PyTorch,
timed on the configurations bench_attention wrote, rows appended to the same CSV (impl = torch).
Exact attention is also timed as a careful PyTorch 1.13 user writes it (impl = torch-careful, issue 17):
its n x n scores and its output are buffers allocated once per configuration and reused (matmul out=, the
softmax in place), so the allocator is warm and the kernel's page faults are not timed. Every row records
the CPU seconds in user and kernel mode and the minor page faults per run (getrusage) beside the wall time.

usage: bench/bench_attention_torch.py --csv results/bench_attention.csv [--threads N] [--repeats N]
"""
import argparse
import csv
import ctypes
import gc
import math
import os
import resource
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

PROJECTED = 64  # Linformer's k and Nystrom's landmarks, as bench_attention
LANDMARKS = 64
PINV_ITERATIONS = 6
# torch's exact attention holds about three n x n float tensors per head at once (Q K^T, its
# scaled copy, the softmax); configurations needing more than this are skipped with a message.
EXACT_MEMORY_LIMIT = 8 * 2**30
# As bench_attention: as many timed runs as fit this budget after the warm-up, at least 1, at most --repeats,
# and a first run longer than the budget is the measurement (the CSV's repeats and warmed_up columns);
# the same value as lib/attnlab/lab/timing.hpp's kBenchTimingBudgetSeconds.
TIMING_BUDGET_S = 5.0
# At most this many timed runs per pass (--repeats' default): kBenchMaxRuns in lib/attnlab/lab/timing.hpp.
MAX_RUNS = 6
# Passes over the configurations, as bench_attention (kBenchPasses and bench_second_pass_due in timing.hpp):
# a configuration whose runs stopped at --repeats, all shorter than the budget together, is timed again after
# the first pass, and the lower of its two medians counts (the CSV's passes and pass_medians_s).
PASSES = 2


def second_pass_due(runs, warmed_up, repeats):
    """bench_second_pass_due (lib/attnlab/lab/timing.hpp): the runs stopped at the cap, not at the budget."""
    return warmed_up and runs >= repeats


def exact(q, k, v, _):
    scale = q.shape[-1] ** -0.5
    return torch.softmax(q @ k.transpose(-1, -2) * scale, -1) @ v


def linear(q, k, v, _):
    # Katharopoulos et al., elu(x) + 1 features: phi(Q) (phi(K)^T V) / (phi(Q) sum_j phi(k_j)).
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    kv = phi_k.transpose(-1, -2) @ v
    den = phi_q @ phi_k.sum(-2).unsqueeze(-1)
    return (phi_q @ kv) / den


def shen(q, k, v, _):
    # Shen et al.'s efficient attention: softmax over each query's features, softmax over the keys per feature.
    return torch.softmax(q, -1) @ (torch.softmax(k, -2).transpose(-1, -2) @ v)


def linformer(q, k, v, e):
    # Shared projection E = F (kp x n), as bench_attention's run.
    scale = q.shape[-1] ** -0.5
    return torch.softmax(q @ (e @ k).transpose(-1, -2) * scale, -1) @ (e @ v)


def iterative_inv(a):
    # Nystromformer's iteration with Z_0 = A^T / (||A||_1 ||A||_inf) per matrix (attnlab's default).
    eye = torch.eye(a.shape[-1], dtype=a.dtype)
    norm1 = a.abs().sum(-2).amax(-1, keepdim=True).unsqueeze(-1)
    norminf = a.abs().sum(-1).amax(-1, keepdim=True).unsqueeze(-1)
    z = a.transpose(-1, -2) / (norm1 * norminf)
    for _ in range(PINV_ITERATIONS):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def nystrom(q, k, v, _):
    # Nystromformer: landmarks are means of m contiguous segments (n divisible by m here).
    *lead, n, d = q.shape
    m = min(LANDMARKS, n)
    scale = d ** -0.5
    q_l = q.reshape(*lead, m, n // m, d).mean(-2)
    k_l = k.reshape(*lead, m, n // m, d).mean(-2)
    kernel_1 = torch.softmax(q @ k_l.transpose(-1, -2) * scale, -1)
    kernel_2 = torch.softmax(q_l @ k_l.transpose(-1, -2) * scale, -1)
    kernel_3 = torch.softmax(q_l @ k.transpose(-1, -2) * scale, -1)
    return (kernel_1 @ iterative_inv(kernel_2)) @ (kernel_3 @ v)


def exact_careful(q, k, v, _, buffers):
    # The same attention with the allocator out of the loop: scores and output are buffers reused across calls,
    # the softmax runs in place (subtract the row max first, as torch.softmax does, so exp cannot overflow).
    scores, out = buffers
    torch.matmul(q, k.transpose(-1, -2), out=scores)
    scores.mul_(q.shape[-1] ** -0.5)
    scores.sub_(scores.amax(-1, keepdim=True)).exp_()
    scores.div_(scores.sum(-1, keepdim=True))
    return torch.matmul(scores, v, out=out)


def careful_buffers(q, k, v):
    # Zero-filled, not torch.empty: allocating once includes touching the pages, so no call (the first
    # one included, which time_within_budget may take as the measurement) pays the buffers' page faults.
    *lead, n, d = q.shape
    return torch.zeros(*lead, n, k.shape[-2]), torch.zeros(*lead, n, v.shape[-1])


METHODS = {"exact": exact, "linear-elu": linear, "linear-shen": shen, "linformer": linformer, "nystrom": nystrom}
# (impl, method) -> (function, buffers made once per configuration or None)
PEERS = {("torch", m): (fn, None) for m, fn in METHODS.items()}
PEERS[("torch-careful", "exact")] = (exact_careful, careful_buffers)
# exact-backward: autograd's backward of exact() (dQ, dK, dV from dO), its forward run once and kept.
PEERS[("torch", "exact-backward")] = (None, None)


def status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return float(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def run_configuration(impl, method, batch, heads, n, d, repeats, seed):
    """time_within_budget's (median seconds, per-run usage, runs, warmed_up) and the peak resident memory the
    configuration added."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed tensors of earlier configurations go back to the OS
    base = status_bytes("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS, so the peak below is this configuration's
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, n, d, generator=gen) for _ in range(3))
    e = torch.randn(min(PROJECTED, n), n, generator=gen) / math.sqrt(min(PROJECTED, n))
    fn, make_buffers = PEERS[(impl, method)]
    if method == "exact-backward":
        return time_backward(q, k, v, gen, repeats) + (status_bytes("VmHWM:") - base,)
    call = (lambda: fn(q, k, v, e, buffers)) if make_buffers else (lambda: fn(q, k, v, e))
    buffers = make_buffers(q, k, v) if make_buffers else None

    def check(out):
        if not torch.isfinite(out).all():
            raise RuntimeError(f"{impl} {method} produced a non-finite output at n = {n}, d = {d}")
        if make_buffers:  # the careful form must compute what the direct one does (on the first batch
            # element: heads are independent, and the direct form on all of them costs 20 s at n 2048)
            direct = METHODS[method](q[:1], k[:1], v[:1], e)
            err = float((out[:1] - direct).abs().max() / direct.abs().max())
            if not err <= 1e-4:
                raise RuntimeError(f"{impl} {method} differs from torch's direct form by {err:.3g} (relative) at n = {n}")

    with torch.no_grad():
        timing = time_within_budget(call, repeats, check)
    return timing + (status_bytes("VmHWM:") - base,)


def time_runs(call, runs, keep_last=False):
    """The median wall seconds of `runs` calls, per call the user and system CPU seconds and minor page faults
    (resource.getrusage over the calls, all threads), and the last result if keep_last. Each result is dropped
    before the next call."""
    times = []
    result = None
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(runs):
        result = None
        t0 = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t0)
        if not keep_last:
            result = None
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    per_run = {"user_s": (r1.ru_utime - r0.ru_utime) / runs, "sys_s": (r1.ru_stime - r0.ru_stime) / runs,
               "minor_faults": (r1.ru_minflt - r0.ru_minflt) / runs}
    return statistics.median(times), per_run, result


def time_within_budget(call, repeats, check):
    """As attnlab's time_within_budget (lib/attnlab/lab/timing.hpp): a first run, timed, its result checked
    untimed by check(result). If it took at least TIMING_BUDGET_S it is the measurement (one run, no warm-up:
    a run that long amortises what a warm-up warms); otherwise it was the warm-up, and as many runs as fit the
    budget (at least 1, at most `repeats`) follow. Returns (median seconds, per-run usage, runs, warmed_up)."""
    first_s, first_usage, result = time_runs(call, 1, keep_last=True)
    check(result)
    del result
    if first_s >= TIMING_BUDGET_S:
        return first_s, first_usage, 1, False
    runs = max(1, min(repeats, int(TIMING_BUDGET_S / max(first_s, 1e-9))))
    seconds, per_run, _ = time_runs(call, runs)
    return seconds, per_run, runs, True


def time_backward(q, k, v, gen, repeats):
    """autograd's backward of exact attention: the forward once (its graph kept), then dQ, dK, dV from a Gaussian
    dO timed as run_configuration times a forward."""
    q, k, v = (x.requires_grad_(True) for x in (q, k, v))
    out = exact(q, k, v, None)
    d_out = torch.randn(out.shape, generator=gen)
    call = lambda: torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True)  # noqa: E731

    def check(grads):
        if not all(torch.isfinite(g).all() for g in grads):
            raise RuntimeError(f"torch exact-backward produced a non-finite gradient at n = {q.shape[-2]}")

    return time_within_budget(call, repeats, check)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True, help="bench_attention's CSV; torch rows are appended to it")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=MAX_RUNS)
    ap.add_argument("--seed", type=int, default=20250311)
    args = ap.parse_args()
    if args.threads < 1 or args.repeats < 1:
        print(f"bench_attention_torch.py: --threads (= {args.threads}) and --repeats (= {args.repeats}) must be >= 1",
              file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    try:
        with open(args.csv, newline="") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0].keys()) if rows else None
    except (OSError, IndexError) as exc:
        print(f"bench_attention_torch.py: cannot read {args.csv}: {exc}", file=sys.stderr)
        return 2
    ours = [r for r in rows if r["impl"] == "attnlab"]
    if not ours:
        print(f"bench_attention_torch.py: {args.csv} has no attnlab rows to mirror", file=sys.stderr)
        return 2
    for column in ("warmed_up", "user_s", "sys_s", "minor_faults", "passes", "pass_medians_s"):
        if column not in header:
            print(f"bench_attention_torch.py: {args.csv} has no {column} column (rerun bench_attention)", file=sys.stderr)
            return 2
    todo = [(impl, r) for r in ours for impl in ("torch", "torch-careful") if (impl, r["method"]) in PEERS]
    passes = {}  # (impl, index in ours) -> [(seconds, per_run, runs, warmed_up, peak) per pass]
    for pass_no in range(1, PASSES + 1):
        again = []
        for i, (impl, r) in enumerate(todo):
            method, batch, heads, n, d = r["method"], int(r["batch"]), int(r["heads"]), int(r["n"]), int(r["d"])
            # autograd's backward holds about four n x n tensors at once (the saved P, dP, dS and its scaled copy).
            if method.startswith("exact") and (4 if method == "exact-backward" else 3) * batch * heads * n * n * 4 > EXACT_MEMORY_LIMIT:
                print(f"{impl} exact at batch {batch}, heads {heads}, n {n} skipped: its n x n tensors need more than "
                      f"{EXACT_MEMORY_LIMIT / 2**30:.0f} GiB", file=sys.stderr)
                continue
            # The same inputs for both peers of a configuration (its index among bench_attention's rows) and passes.
            measured = run_configuration(impl, method, batch, heads, n, d, args.repeats, args.seed + ours.index(r))
            seconds, per_run, runs, warmed_up, _ = measured
            passes.setdefault((impl, ours.index(r)), []).append(measured)
            if pass_no < PASSES and second_pass_due(runs, warmed_up, args.repeats):
                again.append((impl, r))
            print(f"[pass {pass_no}: {i + 1}/{len(todo)}] {impl} {method} b{batch} h{heads} n{n} d{d}: {seconds:.4g} s "
                  f"(user {per_run['user_s']:.3g} s, sys {per_run['sys_s']:.3g} s, {per_run['minor_faults']:.0f} faults per run)",
                  file=sys.stderr)
        todo = again
    new_rows = []
    for (impl, index), measured in sorted(passes.items(), key=lambda item: (item[0][1], item[0][0])):
        r = ours[index]
        # The pass with the lower median, with everything measured in it (the first on a tie).
        seconds, per_run, runs, warmed_up, peak = min(measured, key=lambda m: m[0])
        flops = float(r["gflops"]) * float(r["median_s"])  # counted work of the configuration, GFLOP
        row = dict(r)
        row.update(impl=impl, threads=str(args.threads), median_s=repr(seconds), gflops=repr(flops / seconds),
                   peak_mib=repr(peak / 2**20), repeats=str(runs), warmed_up=str(int(warmed_up)),
                   passes=str(len(measured)), pass_medians_s=" ".join(repr(m[0]) for m in measured),
                   **{c: repr(v) for c, v in per_run.items()})
        new_rows.append(row)
    kept = [r for r in rows if not r["impl"].startswith("torch")]
    # Written whole to a temporary file, then renamed: never a half-written CSV.
    out_dir = os.path.dirname(os.path.abspath(args.csv))
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".bench_attention.", suffix=".csv")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            w.writeheader()
            w.writerows(kept + new_rows)
        os.chmod(tmp, 0o644)
        os.replace(tmp, args.csv)
    except BaseException:
        os.unlink(tmp)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
