#!/usr/bin/python3
"""The PyTorch peer of attnlab's ViT training (bench_vit, docs/performance.md): seconds per training step of the
same model (tools/vit_torch.py: vit_spec.md's widths, the same attention), in float32 on 2 threads by default, with
the process's user and system CPU time per step (resource.getrusage) beside the wall time: on this kind of machine
PyTorch's small ops and fresh allocations show up as system time (page faults).

Each timed step is forward, cross-entropy, backward and a torch.optim.Adam step on a fixed random batch (pixel
values do not change the work). One untimed warm-up step first (allocator and thread pool). With --like, every
(method, batch) that bench_vit timed (its attnlab rows) is timed here too, in one process; otherwise the one given
by --method and --batch. Writes one CSV row per configuration with --csv; exit 77 without PyTorch, 2 with one line
for a bad option.

usage: bench/bench_vit_torch.py [--like bench_vit.csv | --method exact --batch 256] [--threads 2] [--steps 3] [--csv FILE]
"""
import argparse
import csv
import math
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import vit_torch  # noqa: E402  (exits 77 without NumPy)

COLUMNS = ["impl", "method", "dtype", "batch", "threads", "D", "H", "L", "mlp", "n", "steps", "wall_s_per_step",
           "user_s_per_step", "sys_s_per_step", "wall_s_min", "wall_s_max", "images_per_s", "counted_gflop_per_step",
           "gflop_per_s", "torch_version"]


def head_multiply_adds(cfg):
    """One head's multiply-adds for the methods that are not n x n products: lib/attnlab/attention/attention_cost.hpp
    (and linformer.hpp's linformer_cost), with d = d_k, as lib/attnlab/model/flops.cpp calls them."""
    n, d = cfg.n, cfg.d_k
    if cfg.method == "linear-elu":
        return 2 * n * d * d + n * d
    if cfg.method == "linear-shen":
        return 2 * n * d * d
    if cfg.method == "linformer":
        k = cfg.projection_k or math.ceil(n / 8)
        return 4 * k * n * d  # E K, F V, Q (E K)^T, P (F V), with d_v = d_k
    if cfg.method == "random-fourier":
        return 6 * n * cfg.features * d + 2 * n * cfg.features
    if cfg.method == "favor":
        return 4 * n * cfg.features * d + n * cfg.features
    if cfg.method == "nystrom":
        m = cfg.landmarks
        return 4 * n * m * d + 2 * m * m * d + 4 * m ** 3 * cfg.pinv_iterations
    raise ValueError(f"no counted cost for method {cfg.method}")


def counted_flops(cfg, batch):
    """Multiply-adds x 2 of one training step's matrix products (backward = 2x forward), the count of
    lib/attnlab/model/flops.cpp: about 0.14 GFLOP per image for exact attention at the default widths."""
    n, D, m = cfg.n, cfg.D, cfg.mlp
    if cfg.method in ("exact", "symmetric"):
        attention = 2 * n * n * D * 2  # scores and weights x V, every head
    else:
        attention = cfg.H * 2 * head_multiply_adds(cfg)
    per_layer = 2 * n * D * D * 4 + attention + 2 * n * D * m * 2  # q, k, v, o; the attention; MLP
    forward = cfg.L * per_layer + 2 * n * cfg.patch ** 2 * D + 2 * D * cfg.classes
    return 3 * forward * batch


def time_one(args, method, batch):
    """One CSV row: the median of args.steps timed training steps of `method` at `batch`; None if the loss became
    non-finite (after saying so)."""
    cfg = vit_torch.Config({"method": method, "D": args.D, "H": args.H, "L": args.L, "mlp": args.mlp,
                            "n": 196, "patch": 4, "stride": 2, "pad": 1, "image": 28, "classes": 10}, "options")
    torch, F = vit_torch.torch, vit_torch.F
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(20250311)
    params = vit_torch.init_parameters(cfg, gen, dtype)
    buffers = vit_torch.init_buffers(cfg, gen, dtype)
    images = torch.randint(0, 256, (batch, 28, 28), generator=gen, dtype=torch.uint8)
    labels = torch.randint(0, 10, (batch,), generator=gen)
    opt = torch.optim.Adam(list(params.values()), lr=vit_torch.PEAK_LR, **vit_torch.ADAM)

    def train_step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(vit_torch.forward(cfg, {**params, **buffers}, images), labels)
        loss.backward()
        opt.step()
        return loss.item()

    train_step()  # warm-up
    walls, users, systems = [], [], []
    for _ in range(args.steps):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        loss = train_step()
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        walls.append(t1 - t0)
        users.append(r1.ru_utime - r0.ru_utime)
        systems.append(r1.ru_stime - r0.ru_stime)
        if not math.isfinite(loss):
            print(f"bench_vit_torch: {method} at batch {batch}: the loss became {loss}", file=sys.stderr)
            return None
    wall = statistics.median(walls)
    flops = counted_flops(cfg, batch)
    row = {"impl": "torch", "method": method, "dtype": args.dtype, "batch": batch, "threads": args.threads,
           "D": cfg.D, "H": cfg.H, "L": cfg.L, "mlp": cfg.mlp, "n": cfg.n, "steps": args.steps,
           "wall_s_per_step": f"{wall:.4f}", "user_s_per_step": f"{statistics.median(users):.4f}",
           "sys_s_per_step": f"{statistics.median(systems):.4f}", "wall_s_min": f"{min(walls):.4f}",
           "wall_s_max": f"{max(walls):.4f}", "images_per_s": f"{batch / wall:.1f}",
           "counted_gflop_per_step": f"{flops / 1e9:.6f}", "gflop_per_s": f"{flops / 1e9 / wall:.2f}",
           "torch_version": torch.__version__}
    print(f"bench_vit_torch: {method} ViT (D {cfg.D}, H {cfg.H}, L {cfg.L}, MLP {cfg.mlp}, n {cfg.n}), "
          f"{args.dtype}, batch {batch}, {args.threads} threads: {wall:.3f} s per step (median of {args.steps}; "
          f"user {row['user_s_per_step']} s, system {row['sys_s_per_step']} s), {row['images_per_s']} images/s, "
          f"{row['gflop_per_s']} GFLOP/s counted")
    return row


def configurations(args):
    """[(method, batch)]: bench_vit's attnlab rows with --like, else the one given."""
    if not args.like:
        return [(args.method, args.batch)]
    with open(args.like, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("impl") == "attnlab"]
    out = []
    for r in rows:
        if r["method"] not in vit_torch.METHODS:
            raise ValueError(f"{args.like}: method {r['method']} is not mirrored in PyTorch")
        out.append((r["method"], int(r["batch"])))
    if not out:
        raise ValueError(f"{args.like}: no attnlab rows")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--like", help="time every (method, batch) of this bench_vit.csv")
    ap.add_argument("--method", default="exact", choices=vit_torch.METHODS)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--L", type=int, default=2)
    ap.add_argument("--mlp", type=int, default=128)
    ap.add_argument("--csv", help="write the rows to this CSV file")
    args = ap.parse_args()
    for flag in ("batch", "threads", "steps", "D", "H", "L", "mlp"):
        if getattr(args, flag) < 1:
            print(f"bench_vit_torch: --{flag} {getattr(args, flag)} must be at least 1", file=sys.stderr)
            return 2
    try:
        configs = configurations(args)
        for method, _ in configs:  # widths checked before any time is spent
            vit_torch.Config({"method": method, "D": args.D, "H": args.H, "L": args.L, "mlp": args.mlp, "n": 196,
                              "patch": 4, "stride": 2, "pad": 1, "image": 28, "classes": 10}, "options")
    except (OSError, KeyError, ValueError, vit_torch.InputError) as e:
        print(f"bench_vit_torch: {e}", file=sys.stderr)
        return 2
    vit_torch.require_torch()
    vit_torch.torch.set_num_threads(args.threads)
    rows = []
    for method, batch in configs:
        row = time_one(args, method, batch)
        if row is None:
            return 1
        rows.append(row)
    if args.csv:
        tmp = args.csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
        os.replace(tmp, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
