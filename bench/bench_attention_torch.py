#!/usr/bin/python3
"""The PyTorch peer of bench_attention (issue 6): each method written the direct way in PyTorch,
timed on the configurations bench_attention wrote, rows appended to the same CSV (impl = torch).

usage: bench/bench_attention_torch.py --csv results/bench_attention.csv [--threads N] [--repeats N]
"""
import argparse
import csv
import ctypes
import gc
import math
import os
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


def exact(q, k, v, _):
    scale = q.shape[-1] ** -0.5
    return torch.softmax(q @ k.transpose(-1, -2) * scale, -1) @ v


def linear(q, k, v, _):
    # Katharopoulos et al., elu(x) + 1 features: phi(Q) (phi(K)^T V) / (phi(Q) sum_j phi(k_j)).
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    kv = phi_k.transpose(-1, -2) @ v
    den = phi_q @ phi_k.sum(-2).unsqueeze(-1)
    return (phi_q @ kv) / den


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


METHODS = {"exact": exact, "linear-elu": linear, "linformer": linformer, "nystrom": nystrom}


def status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return float(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def run_configuration(method, batch, heads, n, d, repeats, seed):
    """Median seconds after a warm-up, and the peak resident memory the configuration added."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # freed tensors of earlier configurations go back to the OS
    base = status_bytes("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS, so the peak below is this configuration's
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, n, d, generator=gen) for _ in range(3))
    e = torch.randn(min(PROJECTED, n), n, generator=gen) / math.sqrt(min(PROJECTED, n))
    fn = METHODS[method]
    with torch.no_grad():
        out = fn(q, k, v, e)  # warm-up
        if not torch.isfinite(out).all():
            raise RuntimeError(f"torch {method} produced a non-finite output at n = {n}, d = {d}")
        del out
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fn(q, k, v, e)
            times.append(time.perf_counter() - t0)
            del out
    peak = status_bytes("VmHWM:") - base
    return statistics.median(times), peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", required=True, help="bench_attention's CSV; torch rows are appended to it")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeats", type=int, default=5)
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
    new_rows = []
    todo = [r for r in ours if r["method"] in METHODS]
    for i, r in enumerate(todo):
        method, batch, heads, n, d = r["method"], int(r["batch"]), int(r["heads"]), int(r["n"]), int(r["d"])
        if method == "exact" and 3 * batch * heads * n * n * 4 > EXACT_MEMORY_LIMIT:
            print(f"torch exact at batch {batch}, heads {heads}, n {n} skipped: its n x n tensors need more than "
                  f"{EXACT_MEMORY_LIMIT / 2**30:.0f} GiB", file=sys.stderr)
            continue
        seconds, peak = run_configuration(method, batch, heads, n, d, args.repeats, args.seed + i)
        flops = float(r["gflops"]) * float(r["median_s"])  # counted work of the configuration, GFLOP
        row = dict(r)
        row.update(impl="torch", threads=str(args.threads), median_s=repr(seconds), gflops=repr(flops / seconds),
                   peak_mib=repr(peak / 2**20), repeats=str(args.repeats))
        new_rows.append(row)
        print(f"[{i + 1}/{len(todo)}] torch {method} b{batch} h{heads} n{n} d{d}: {seconds:.4g} s", file=sys.stderr)
    kept = [r for r in rows if r["impl"] != "torch"]
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
