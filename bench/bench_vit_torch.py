#!/usr/bin/python3
"""The PyTorch peer of attnlab's ViT training (issue 14): seconds per training step of the same model
(tools/vit_torch.py: vit_spec.md's widths, the same attention), in float32 at batch 256 on 2 threads by default,
with the process's user and system CPU time per step (resource.getrusage) beside the wall time: on this kind of
machine PyTorch's small ops and fresh allocations show up as system time (page faults).

Each timed step is forward, cross-entropy, backward and a torch.optim.Adam step on a fixed random batch (pixel
values do not change the work). One untimed warm-up step first (allocator and thread pool). Writes a one-row
CSV with --csv; exit 77 without PyTorch, 2 with one line for a bad option.

usage: bench/bench_vit_torch.py [--method exact] [--batch 256] [--threads 2] [--steps 3] [--csv FILE]
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


def counted_flops(cfg, batch):
    """Multiply-adds x 2 of one training step's matrix products (backward = 2x forward), for the methods whose
    scores are n x n products (exact, symmetric); None for the others. About 0.14 GFLOP per image at the
    default widths, the issue's count."""
    if cfg.method not in ("exact", "symmetric"):
        return None
    n, D, m = cfg.n, cfg.D, cfg.mlp
    per_layer = 2 * n * D * D * 4 + 2 * n * n * D * 2 + 2 * n * D * m * 2  # q, k, v, o; scores and weights x V; MLP
    forward = cfg.L * per_layer + 2 * n * cfg.patch ** 2 * D + 2 * D * cfg.classes
    return 3 * forward * batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="exact", choices=vit_torch.METHODS)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--D", type=int, default=64)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--L", type=int, default=2)
    ap.add_argument("--mlp", type=int, default=128)
    ap.add_argument("--csv", help="write the row to this CSV file")
    args = ap.parse_args()
    for flag in ("batch", "threads", "steps", "D", "H", "L", "mlp"):
        if getattr(args, flag) < 1:
            print(f"bench_vit_torch: --{flag} {getattr(args, flag)} must be at least 1", file=sys.stderr)
            return 2
    try:
        cfg = vit_torch.Config({"method": args.method, "D": args.D, "H": args.H, "L": args.L, "mlp": args.mlp,
                                "n": 196, "patch": 4, "stride": 2, "pad": 1, "image": 28, "classes": 10}, "options")
    except vit_torch.InputError as e:
        print(f"bench_vit_torch: {e}", file=sys.stderr)
        return 2
    vit_torch.require_torch()
    torch, F = vit_torch.torch, vit_torch.F
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator().manual_seed(20250311)
    params = vit_torch.init_parameters(cfg, gen, dtype)
    buffers = vit_torch.init_buffers(cfg, gen, dtype)
    images = torch.randint(0, 256, (args.batch, 28, 28), generator=gen, dtype=torch.uint8)
    labels = torch.randint(0, 10, (args.batch,), generator=gen)
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
            print(f"bench_vit_torch: the loss became {loss}", file=sys.stderr)
            return 1
    wall = statistics.median(walls)
    flops = counted_flops(cfg, args.batch)
    row = {"impl": "torch", "method": args.method, "dtype": args.dtype, "batch": args.batch, "threads": args.threads,
           "D": cfg.D, "H": cfg.H, "L": cfg.L, "mlp": cfg.mlp, "n": cfg.n, "steps": args.steps,
           "wall_s_per_step": f"{wall:.4f}", "user_s_per_step": f"{statistics.median(users):.4f}",
           "sys_s_per_step": f"{statistics.median(systems):.4f}", "wall_s_min": f"{min(walls):.4f}",
           "wall_s_max": f"{max(walls):.4f}", "images_per_s": f"{args.batch / wall:.1f}",
           "counted_gflop_per_step": f"{flops / 1e9:.3f}" if flops else "",
           "gflop_per_s": f"{flops / 1e9 / wall:.2f}" if flops else "", "torch_version": torch.__version__}
    print(f"bench_vit_torch: {args.method} ViT (D {cfg.D}, H {cfg.H}, L {cfg.L}, MLP {cfg.mlp}, n {cfg.n}), "
          f"{args.dtype}, batch {args.batch}, {args.threads} threads: {wall:.3f} s per step (median of {args.steps}; "
          f"user {row['user_s_per_step']} s, system {row['sys_s_per_step']} s), {row['images_per_s']} images/s"
          + (f", {row['gflop_per_s']} GFLOP/s counted" if flops else ""))
    if args.csv:
        tmp = args.csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerow(row)
        os.replace(tmp, args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
