#!/usr/bin/python3
"""Turns results/bench_attention.csv (and bench_r7.csv, bench_vit.csv, bench_vit_torch.csv) into
results/bench_attention.md, a table of ratios against PyTorch and shares of the measured GEMM rate with
issue 6's and issue 14's targets judged, and results/bench_attention.svg, GFLOP/s against n (plain SVG,
no dependencies). With --readme, the targets table also replaces the README's bench_report block.

usage: tools/bench_report.py --results results
"""
import argparse
import csv
import math
import os
import sys
import tempfile

# Issue 6's targets, fixed here before any run.
EXACT_SPEEDUP = 4.0        # exact vs torch at batch 32, heads 4, n 2048, d 64
GEMM_SHARE = 0.5           # share of the GEMM rate: exact for n >= 1024, linear-elu/linformer/nystrom everywhere
STREAMING_PEAK_MIB = 64.0  # streaming at n 32768, d 64, batch * heads 1
R7_SPEEDUP = 50.0          # low-rank eigen path vs dense at d 4096, d_k 64
VIT_GEMM_SHARE = 0.30      # issue 14: ViT training (exact, float), counted training FLOP/s over the sgemm rate
METHODS = ["exact", "streaming", "linear-elu", "linformer", "nystrom"]  # attention/registry.hpp's names
COLOURS = {"exact": "#1f77b4", "streaming": "#17becf", "linear-elu": "#2ca02c", "linformer": "#d62728", "nystrom": "#9467bd"}


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def key(r):
    return (r["method"], int(r["batch"]), int(r["heads"]), int(r["n"]), int(r["d"]))


def write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".bench_report.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def judge(ok):
    return "met" if ok else "**not met**"


def targets(ours, torch, r7):
    """One line per target: what was measured and whether it meets the threshold."""
    lines = []
    e = ours.get(("exact", 32, 4, 2048, 64))
    t = torch.get(("exact", 32, 4, 2048, 64))
    if e and t:
        s = float(t["median_s"]) / float(e["median_s"])
        lines.append(f"| exact vs torch at b32 h4 n2048 d64 | {s:.2f}x faster | >= {EXACT_SPEEDUP:g}x | {judge(s >= EXACT_SPEEDUP)} |")
    shares = [float(r["gflops"]) / float(r["gemm_gflops"]) for k, r in ours.items() if k[0] == "exact" and k[3] >= 1024]
    if shares:
        lines.append(f"| exact, share of GEMM rate for n >= 1024 (worst) | {min(shares):.0%} | >= {GEMM_SHARE:.0%} | {judge(min(shares) >= GEMM_SHARE)} |")
    s = ours.get(("streaming", 1, 1, 32768, 64))
    if s:
        p = float(s["peak_mib"])
        lines.append(f"| streaming peak memory at n32768 d64 | {p:.1f} MiB | < {STREAMING_PEAK_MIB:g} MiB | {judge(p < STREAMING_PEAK_MIB)} |")
    for m in ["linear-elu", "linformer", "nystrom"]:
        shares = [float(r["gflops"]) / float(r["gemm_gflops"]) for k, r in ours.items() if k[0] == m]
        if shares:
            lines.append(f"| {m}, share of GEMM rate (worst) | {min(shares):.0%} | >= {GEMM_SHARE:.0%} | {judge(min(shares) >= GEMM_SHARE)} |")
        speed = [float(torch[k]["median_s"]) / float(r["median_s"]) for k, r in ours.items() if k[0] == m and k in torch]
        if speed:
            lines.append(f"| {m} vs torch (slowest) | {min(speed):.2f}x | >= 1x | {judge(min(speed) >= 1)} |")
    for r in r7:
        s = float(r["speedup"])
        lines.append(f"| R7 low-rank vs dense eigen at d{r['d']} d_k{r['d_k']} | {s:.0f}x faster | >= {R7_SPEEDUP:g}x | {judge(s >= R7_SPEEDUP)} |")
    return lines


def vit_targets(vit, vit_torch):
    """Issue 14's rows: each batch's share of the sgemm rate judged, then the PyTorch peer's time per step (not a
    target: issue 14 expects PyTorch to be slow here) beside ours at the same batch."""
    lines = []
    ours = {int(r["batch"]): r for r in vit}
    for b, r in sorted(ours.items()):
        share = float(r["gflops"]) / float(r["gemm_gflops"])
        lines.append(f"| ViT training, exact, share of sgemm at batch {b} ({float(r['images_per_s']):.0f} images/s, "
                     f"{float(r['median_s']):.3g} s per step) | {share:.0%} ({float(r['gflops']):.1f} of "
                     f"{float(r['gemm_gflops']):.0f} GFLOP/s) | >= {VIT_GEMM_SHARE:.0%} | {judge(share >= VIT_GEMM_SHARE)} |")
    for t in vit_torch:
        b = int(t["batch"])
        mine = ours.get(b)
        beside = f"; attnlab {float(mine['median_s']):.3g} s, {float(t['wall_s_per_step']) / float(mine['median_s']):.1f}x faster" if mine else ""
        lines.append(f"| ViT training, PyTorch {t['torch_version']} peer ({t['method']}, {t['dtype']}) at batch {b} | "
                     f"{float(t['wall_s_per_step']):.3g} s per step (user {float(t['user_s_per_step']):.3g} s, system "
                     f"{float(t['sys_s_per_step']):.3g} s){beside} | none (reference) | - |")
    return lines


def check_vit(vit, vit_torch, where):
    """None, or why the ViT tables cannot be reported: a non-finite value, or the two sides' FLOP counts disagreeing
    at the same batch (bench_vit counts with vit_training_flops, the peer with its own copy of the formula)."""
    for r in vit:
        for c in ("median_s", "gflops", "gemm_gflops", "images_per_s", "counted_gflop_per_step"):
            if not math.isfinite(float(r[c])) or float(r[c]) <= 0:
                return f"{where}/bench_vit.csv: {c} = {r[c]} at batch {r['batch']}"
    ours = {int(r["batch"]): float(r["counted_gflop_per_step"]) for r in vit}
    for t in vit_torch:
        b = int(t["batch"])
        if not math.isfinite(float(t["wall_s_per_step"])):
            return f"{where}/bench_vit_torch.csv: wall_s_per_step = {t['wall_s_per_step']}"
        if b in ours and t["counted_gflop_per_step"] and abs(float(t["counted_gflop_per_step"]) - ours[b]) > 1e-3 * ours[b]:
            return (f"the FLOP counts disagree at batch {b}: bench_vit {ours[b]:.4f} GFLOP per step, "
                    f"bench_vit_torch.py {t['counted_gflop_per_step']}")
    return None


def vit_table(vit, vit_torch):
    out = ["| impl | batch | threads | s per step (median) | min - max | user s | system s | images/s | GFLOP/s | % of sgemm |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(vit, key=lambda r: int(r["batch"])):
        out.append(f"| attnlab | {r['batch']} | {r['threads']} | {float(r['median_s']):.4g} | {float(r['min_s']):.4g} - "
                   f"{float(r['max_s']):.4g} | {float(r['user_s']):.4g} | {float(r['sys_s']):.4g} | "
                   f"{float(r['images_per_s']):.0f} | {float(r['gflops']):.1f} | {float(r['gflops']) / float(r['gemm_gflops']):.0%} |")
    for t in vit_torch:
        g = f"{float(t['gflop_per_s']):.1f}" if t["gflop_per_s"] else "-"
        out.append(f"| torch {t['torch_version']} | {t['batch']} | {t['threads']} | {float(t['wall_s_per_step']):.4g} | "
                   f"{float(t['wall_s_min']):.4g} - {float(t['wall_s_max']):.4g} | {float(t['user_s_per_step']):.4g} | "
                   f"{float(t['sys_s_per_step']):.4g} | {float(t['images_per_s']):.0f} | {g} | - |")
    return out


def profile_table(profile):
    """bench_vit_profile.csv: one chunk's time per layer family on one thread, with each family's counted GFLOP/s."""
    out = ["| part | ms | share of a chunk | counted GFLOP/s (one thread) |", "|---|---|---|---|"]
    for r in profile:
        share, rate = float(r["share_of_chunk"]), float(r["gflops"])
        out.append(f"| {r['part']} | {1e3 * float(r['seconds_per_chunk']):.3f} | {'-' if math.isnan(share) else f'{share:.0%}'} | "
                   f"{'-' if math.isnan(rate) else f'{rate:.1f}'} |")
    return out


def table(ours, torch):
    out = ["| method | batch x heads | n | d | ours (s) | GFLOP/s | % of GEMM | peak MiB | torch (s) | torch / ours | torch peak MiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(ours, key=lambda k: (k[1] * k[2] == 1, METHODS.index(k[0]), k[4], k[3])):
        r, t = ours[k], torch.get(k)
        share = float(r["gflops"]) / float(r["gemm_gflops"])
        ts = f"{float(t['median_s']):.4g}" if t else "-"
        ratio = f"{float(t['median_s']) / float(r['median_s']):.2f}" if t else "-"
        tp = f"{float(t['peak_mib']):.0f}" if t else "-"
        out.append(f"| {k[0]} | {k[1]} x {k[2]} | {k[3]} | {k[4]} | {float(r['median_s']):.4g} | {float(r['gflops']):.1f} | "
                   f"{share:.0%} | {float(r['peak_mib']):.1f} | {ts} | {ratio} | {tp} |")
    return out


def svg(ours, torch, gemm):
    """GFLOP/s against n on log-log axes: the b32 h4 grid at d 64 and the long sequences (b1 h1, d 64)."""
    w, h, left, right, top, bottom = 760, 460, 70, 170, 30, 50
    pts = [(k, r, impl) for impl, rows in (("attnlab", ours), ("torch", torch)) for k, r in rows.items() if k[4] == 64]
    if not pts:
        return None
    xs = [k[3] for k, _, _ in pts]
    ys = [float(r["gflops"]) for _, r, _ in pts] + [gemm]
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x1 = max(x1, x0 + 1)
    y1 = max(y1, y0 + 1)
    px = lambda n: left + (math.log2(n) - x0) / (x1 - x0) * (w - left - right)
    py = lambda g: top + (y1 - math.log10(g)) / (y1 - y0) * (h - top - bottom)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
         f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{left}" y="18">GFLOP/s (counted) against n, d = 64; solid: attnlab, dashed: torch; '
         f'filled: batch 32 x heads 4, open: batch x heads = 1</text>']
    for e in range(int(y0), int(y1) + 1):
        y = py(10 ** e)
        o.append(f'<line x1="{left}" x2="{w - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    for e in range(int(x0), int(math.ceil(x1)) + 1):
        x = px(2 ** e)
        o.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{h - bottom}" stroke="#eee"/>')
        o.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle">{2 ** e}</text>')
    o.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">n (log scale)</text>')
    yg = py(gemm)
    o.append(f'<line x1="{left}" x2="{w - right}" y1="{yg:.1f}" y2="{yg:.1f}" stroke="black" stroke-dasharray="2,3"/>')
    o.append(f'<text x="{w - right + 4}" y="{yg + 4:.1f}">sgemm {gemm:.0f}</text>')
    ly = top + 10
    for m in METHODS:
        for impl, dash in (("attnlab", ""), ("torch", ' stroke-dasharray="6,4"')):
            for grid in (True, False):
                series = sorted((k[3], float(r["gflops"])) for k, r, i in pts if k[0] == m and i == impl and (k[1] * k[2] > 1) == grid)
                if not series:
                    continue
                path = " ".join(f"{px(n):.1f},{py(g):.1f}" for n, g in series)
                o.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[m]}" stroke-width="1.8"{dash}/>')
                fill = COLOURS[m] if grid else "white"
                for n, g in series:
                    o.append(f'<circle cx="{px(n):.1f}" cy="{py(g):.1f}" r="3" fill="{fill}" stroke="{COLOURS[m]}"/>')
            if any(k[0] == m and i == impl for k, _, i in pts):
                o.append(f'<line x1="{w - right + 10}" x2="{w - right + 40}" y1="{ly}" y2="{ly}" stroke="{COLOURS[m]}" stroke-width="1.8"{dash}/>')
                o.append(f'<text x="{w - right + 45}" y="{ly + 4}">{m} ({impl})</text>')
                ly += 16
    o.append("</svg>")
    return "\n".join(o) + "\n"


def update_readme(path, target_lines, first, vit=()):
    """Replaces the text between README's bench markers with this run's target table."""
    begin, end = "<!-- bench_report:begin -->", "<!-- bench_report:end -->"
    text = open(path).read()
    if begin not in text or end not in text:
        raise SystemExit(f"bench_report.py: {path} lacks the {begin} / {end} markers")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    body = [f"Measured by `make bench` (float, {first['threads']} threads; sgemm ceiling "
            f"{float(first['gemm_gflops']):.0f} GFLOP/s in the same run"
            + (f"; the ViT rows against bench_vit's own, {float(vit[0]['gemm_gflops']):.0f} GFLOP/s" if vit else "")
            + "):", ""] + [l for l in target_lines if l]
    write_atomically(path, head + begin + "\n" + "\n".join(body) + "\n" + end + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="directory holding bench_attention.csv")
    ap.add_argument("--readme", help="README whose bench_report markers get the target table")
    args = ap.parse_args()
    path = os.path.join(args.results, "bench_attention.csv")
    try:
        rows = read(path)
    except OSError as exc:
        print(f"bench_report.py: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    for r in rows:
        for c in ("median_s", "gflops", "peak_mib", "gemm_gflops"):
            if not math.isfinite(float(r[c])):
                print(f"bench_report.py: {path}: non-finite {c} in {r['method']} {r['impl']} n={r['n']}", file=sys.stderr)
                return 1
    ours = {key(r): r for r in rows if r["impl"] == "attnlab"}
    torch = {key(r): r for r in rows if r["impl"] == "torch"}
    if not ours:
        print(f"bench_report.py: {path} has no attnlab rows", file=sys.stderr)
        return 1
    r7_path = os.path.join(args.results, "bench_r7.csv")
    r7 = read(r7_path) if os.path.exists(r7_path) else []
    vit_path, vit_torch_path = (os.path.join(args.results, f) for f in ("bench_vit.csv", "bench_vit_torch.csv"))
    vit = read(vit_path) if os.path.exists(vit_path) else []
    vit_torch = read(vit_torch_path) if os.path.exists(vit_torch_path) else []
    profile_path = os.path.join(args.results, "bench_vit_profile.csv")
    profile = read(profile_path) if os.path.exists(profile_path) else []
    problem = check_vit(vit, vit_torch, args.results)
    if problem:
        print(f"bench_report.py: {problem}", file=sys.stderr)
        return 1
    first = next(iter(ours.values()))
    gemm = float(first["gemm_gflops"])
    md = ["# Attention benchmark", "",
          "Generated by `tools/bench_report.py` from `bench_attention.csv`, `bench_r7.csv`, `bench_vit.csv` and "
          "`bench_vit_torch.csv` (written by `make bench`); "
          "do not edit by hand.", "",
          f"float, {first['threads']} threads, median of {first['repeats']} runs after a warm-up. sgemm ceiling measured in the same run: "
          f"Eigen {float(first['eigen_gemm_gflops']):.1f} GFLOP/s, OpenBLAS {float(first['openblas_gemm_gflops']):.1f} GFLOP/s. "
          "GFLOP/s are counted operations (2 per multiply-add of lib/attnlab/attention/attention_cost.hpp) over the median time; "
          "peak MiB is the resident memory the configuration added (inputs, workspace, outputs).", "",
          "## Targets (issues 6 and 14)", "", "| target | measured | threshold | verdict |", "|---|---|---|---|"]
    md += targets(ours, torch, r7) + vit_targets(vit, vit_torch)
    if not torch:
        md += ["", "No torch rows: the PyTorch peer did not run (python3-torch missing), so no ratio against it."]
    md += ["", "## Every configuration", ""] + table(ours, torch) + ["", "![GFLOP/s against n](bench_attention.svg)", ""]
    if vit:
        md += ["## ViT training (issue 14)", "",
               "The exact-softmax ViT of `vit_spec.md` (n 196, D 64, 4 heads, 2 blocks, MLP 128), float, one training step "
               "(forward, cross-entropy, backward, Adam) timed after a warm-up step. GFLOP/s: counted FLOPs of the matrix "
               "products (`vit_training_flops`, 3x the forward count) over the median time; the sgemm rate is the one "
               "bench_vit measured in its own run. User and system seconds are CPU time per step (both threads)."
               + ("" if vit_torch else " No PyTorch row: the peer did not run (python3-torch missing)."), ""]
        md += vit_table(vit, vit_torch) + [""]
    if profile:
        md += ["### Where a step's time goes", "",
               f"One chunk of {profile[0]['chunk_images']} images (the unit each thread trains) through forward and "
               f"backward on one thread, median of {profile[0]['repeats']} runs per part, each layer family timed alone "
               "on the activations the whole pass left behind (bench_vit's profile). Attention is the method alone over "
               "every image and head; projections the rest of multi-head attention; the Adam update runs once per step.",
               ""] + profile_table(profile) + [""]
    write_atomically(os.path.join(args.results, "bench_attention.md"), "\n".join(md))
    if args.readme:
        update_readme(args.readme, md[md.index("## Targets (issues 6 and 14)") + 2:md.index("## Every configuration")], first, vit)
    figure = svg(ours, torch, gemm)
    if figure:
        write_atomically(os.path.join(args.results, "bench_attention.svg"), figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
