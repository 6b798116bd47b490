#!/usr/bin/python3
"""Turns results/bench_attention.csv (and bench_r7.csv, bench_vit.csv, bench_vit_torch.csv, bench_vit_profile.csv,
bench_python.csv)
into results/bench_attention.md: the performance targets judged (one target per quantity), a table of ratios
against PyTorch and shares of the measured GEMM rate, the ViT's training throughput per attention method with
what bounds each method that misses its target, and two figures of GFLOP/s against n with the GEMM ceiling, one
per sweep (results/bench_attention_grid.svg, results/bench_attention_long.svg; drawn by make_report.py's figure
code with gnuplot). docs/performance.md says how to read them. Nothing else is written (README.md never).

usage: tools/bench_report.py --results results
"""
import argparse
import csv
import math
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_report  # noqa: E402 (tools/make_report.py, beside this script: the report's figure machinery)

# The targets, fixed here before any run; one per quantity. Where a later target replaced an earlier one for the
# same quantity (exact's share of the GEMM rate, the ratio to PyTorch, the approximations' worst cells, the ViT's
# training share), only the later one is judged.
STREAMING_PEAK_MIB = 64.0  # streaming at n 32768, d 64, batch * heads 1
R7_SPEEDUP = 50.0          # low-rank eigen path vs dense at d 4096, d_k 64
# ViT training at the training experiment's batch (16), counted training FLOP/s over the sgemm rate of the same run.
VIT_EXACT_SHARE = 0.60     # exact attention
VIT_OTHER_SHARE = 0.45     # every other method
VIT_BATCH = 16
# Shares of the same run's sgemm rate, float, 2 threads.
EXACT_SHARE_17 = 0.70      # exact and streaming forward at every n >= 1024 of the grid, d 32 and 64
EXACT_SPEEDUP_17 = 10.0    # exact vs torch at b32 h4 n2048 d64 (judged against the careful peer as well)
APPROX_SHARE_17 = 0.50     # linear-elu, linear-shen, linformer, nystrom forward at n >= 1024, d 64
APPROX_FLOOR_17 = 0.30     # ... and no grid cell below this
LONG_N_17, LONG_PEAK_MIB_17, LONG_SHARE_17 = 131072, 128.0, 0.60  # streaming at n 131072, d 64, batch x heads 1
BACKWARD_SHARE_17 = 0.50   # exact backward at n >= 1024, d 64
BACKWARD_SPEEDUP_17 = 2.0  # exact backward vs torch autograd's backward, same shapes
BACKWARD_MEMORY_N_17 = 32768  # O(n d) memory: the peak within BACKWARD_MEMORY_FACTOR_17 x the n d matrices held
BACKWARD_MEMORY_FACTOR_17 = 2.0
# The Python module (bench/bench_python.py): attnlab.attend at n 2048, d 64, float32, exact, within 5% of the same kernel
# timed in C++ in the same run; a call on a tiny input at most 20 us more than its kernel; attnlab.inspect on the 7B-shaped
# checkpoint within 10% of attnlab_inspect.
PYTHON_ATTEND_SLACK = 0.05
PYTHON_OVERHEAD_US = 20.0
PYTHON_INSPECT_SLACK = 0.10
# bench_attention measures the GEMM rate just before and just after every configuration (and the memory rate at the
# start and the end of its run); when two measurements around a configuration differ by more than this (max / min - 1),
# the machine changed while it ran and its share is flagged unreliable. Likewise the start and end of the run.
CEILING_DRIFT = 0.10
# attention/registry.hpp's names, then exact attention's backward (fused_attention_backward)
METHODS = ["exact", "streaming", "streaming-inplace", "linear-elu", "linear-shen", "linformer", "nystrom", "exact-backward"]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def key(r):
    return (r["method"], int(r["batch"]), int(r["heads"]), int(r["n"]), int(r["d"]))


def beside(r):
    """(before, after) sgemm rates measured around the configuration, or None for a CSV from before they were."""
    if not r.get("gemm_before_gflops") or not r.get("gemm_after_gflops"):
        return None
    return float(r["gemm_before_gflops"]), float(r["gemm_after_gflops"])


def median_ceiling(rows):
    """The median of the sgemm rates the rows were set against (for an older CSV, its one rate)."""
    return statistics.median(float(r["gemm_gflops"]) for r in rows)


def bad_beside(rows):
    """A message for the first row whose rates measured around it are not finite positive numbers (a NaN would
    otherwise pass the steadiness check unflagged), or None. Rows of an older CSV have none to check."""
    for r in rows:
        for c in ("gemm_before_gflops", "gemm_after_gflops"):
            if r.get(c):
                v = float(r[c])
                if not (math.isfinite(v) and v > 0):
                    return f"{c} = {r[c]} in {r['method']} {r['impl']} n={r['n']} is not a finite positive rate"
    return None


def unsteady(r):
    """How far apart (max / min - 1) the sgemm rates around the configuration were, when more than CEILING_DRIFT."""
    around = beside(r)
    if around is None:
        return None
    spread = max(around) / min(around) - 1
    return spread if spread > CEILING_DRIFT else None


def unsteady_note(r):
    """'; sgemm X -> Y around it: not reliable' for a cell whose two ceiling measurements moved apart."""
    spread = unsteady(r)
    if spread is None:
        return ""
    a, b = beside(r)
    return f"; **sgemm {a:.0f} -> {b:.0f} GFLOP/s around it, {spread:.0%} apart: not reliable**"


def library_phrase(rows):
    """Which library's sgemm the rows' ceilings are: one named by the CSV's gemm_library (the faster at the start),
    or, for a CSV from before that column, the faster of the two around each row."""
    names = sorted({r["gemm_library"] for r in rows if r.get("gemm_library")})
    if len(names) == 1:
        label = {"openblas": "OpenBLAS", "eigen": "Eigen"}.get(names[0], names[0])
        return f"{label}'s, the faster of Eigen and OpenBLAS at the start of the run"
    return "Eigen's or OpenBLAS's, whichever is faster"


def beside_sentence(ours):
    """How the rows' ceilings were measured and which rows are flagged ('' for a CSV from before)."""
    rows = list(ours.values())
    if not rows or any(beside(r) is None for r in rows):
        return ""
    rates = sorted(float(r["gemm_gflops"]) for r in rows)
    flagged = [k for k, r in ours.items() if unsteady(r) is not None]
    text = (f" Each configuration is set against the better of the sgemm rates measured just before and just after it "
            f"({library_phrase(rows)}; {rates[0]:.0f} to {rates[-1]:.0f} GFLOP/s over the run, "
            f"median {median_ceiling(rows):.0f})")
    if flagged:
        names = ", ".join(f"{k[0]} b{k[1]} h{k[2]} n{k[3]} d{k[4]}" for k in flagged)
        text += (f": **{len(flagged)} of {len(rows)} configurations saw those two differ by more than "
                 f"{CEILING_DRIFT:.0%} (the machine changed while they ran), so their shares are not reliable: {names}**.")
    else:
        text += f": around every configuration the two were within {CEILING_DRIFT:.0%} of each other."
    return text


def write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".bench_report.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def judge(ok):
    if ok == "undecided":
        return "**undecided** (the interval straddles the target)"
    return "met" if ok else "**not met**"


def row(target, measured, threshold, ok):
    """One row of the targets table: met / not met from ok, '-' for a row that is not judged (ok None)."""
    return f"| {target} | {measured} | {threshold} | {'-' if ok is None else judge(ok)} |"


def targets_17(ours, torch, careful):
    """Issue 17's rows. A target whose configuration was not measured is a row saying so, judged not met (the ratio
    to a missing peer: not judged): never left out."""
    share = lambda r: float(r["gflops"]) / float(r["gemm_gflops"])  # noqa: E731
    grid = {k: r for k, r in ours.items() if k[1] * k[2] > 1}
    lines = []

    def worst_share(cells, target, threshold, where):
        """A share-of-GEMM row for the worst of (share, key) cells; where(key) names that cell. The verdict is the
        share of the GEMM rate against the threshold; beside it, that cell's roofline (roofline_note)."""
        if cells:
            w, k = min(cells)
            lines.append(row(f"{target} (worst: {where(k)})", f"{w:.0%}{roofline_note(ours[k])}{unsteady_note(ours[k])}",
                             f">= {threshold:.0%}", w >= threshold))
            return True
        return False

    for m in ("exact", "streaming"):
        worst_share([(share(r), k) for k, r in grid.items() if k[0] == m and k[3] >= 1024],
                    f"{m} forward, share of GEMM rate at n >= 1024, d 32 and 64", EXACT_SHARE_17, lambda k: f"n{k[3]} d{k[4]}")
    key = ("exact", 32, 4, 2048, 64)
    for peer, rows in (("torch, as written", torch), ("torch, careful (buffers reused, softmax in place)", careful)):
        if key in ours and key in rows:
            s = float(rows[key]["median_s"]) / float(ours[key]["median_s"])
            lines.append(row(f"exact vs {peer} at b32 h4 n2048 d64", f"{s:.2f}x faster", f">= {EXACT_SPEEDUP_17:g}x",
                             s >= EXACT_SPEEDUP_17))
    for m in ("linear-elu", "linear-shen", "linformer", "nystrom"):
        worst_share([(share(r), k) for k, r in grid.items() if k[0] == m and k[3] >= 1024 and k[4] == 64],
                    f"{m} forward, share of GEMM rate at n >= 1024, d 64", APPROX_SHARE_17, lambda k: f"n{k[3]}")
        worst_share([(share(r), k) for k, r in grid.items() if k[0] == m],
                    f"{m} forward, every grid cell", APPROX_FLOOR_17, lambda k: f"n{k[3]} d{k[4]}")
    # "... each still >= 1x PyTorch everywhere": the other three methods have their rows in targets().
    speed = [(float(torch[k]["median_s"]) / float(r["median_s"]), k) for k, r in ours.items()
             if k[0] == "linear-shen" and k in torch]
    if speed:
        slowest, k = min(speed)
        lines.append(row(f"linear-shen vs torch (slowest: b{k[1]} h{k[2]} n{k[3]} d{k[4]})", f"{slowest:.2f}x",
                         ">= 1x", slowest >= 1))
    back = {k: r for k, r in ours.items() if k[0] == "exact-backward"}
    if not worst_share([(share(r), k) for k, r in back.items() if k[3] >= 1024 and k[4] == 64],
                       "exact backward (dQ, dK, dV; 10 n^2 d counted flops), share of GEMM rate at n >= 1024, d 64",
                       BACKWARD_SHARE_17, lambda k: f"b{k[1]} h{k[2]} n{k[3]}"):
        lines.append(row("exact backward, share of GEMM rate at n >= 1024, d 64", "not measured",
                         f">= {BACKWARD_SHARE_17:.0%}", False))
    speed = [(float(torch[k]["median_s"]) / float(r["median_s"]), k) for k, r in back.items() if k in torch]
    if speed:
        slowest, k = min(speed)
        lines.append(row(f"exact backward vs torch autograd's backward (slowest: b{k[1]} h{k[2]} n{k[3]}; larger n x n "
                         "tensors skipped by the peer)", f"{slowest:.2f}x faster", f">= {BACKWARD_SPEEDUP_17:g}x",
                         slowest >= BACKWARD_SPEEDUP_17))
    else:
        lines.append(row("exact backward vs torch autograd's backward", "not measured (no torch rows)",
                         f">= {BACKWARD_SPEEDUP_17:g}x", None))
    m = back.get(("exact-backward", 1, 1, BACKWARD_MEMORY_N_17, 64))
    if m:
        # Held by the configuration: Q, K, V, out, dO and the three gradients, n x 64 floats each.
        held = 8 * BACKWARD_MEMORY_N_17 * 64 * 4 / 2**20
        n2 = BACKWARD_MEMORY_N_17 ** 2 * 4 / 2**20
        p = float(m["peak_mib"])
        lines.append(row(f"exact backward peak memory at n{BACKWARD_MEMORY_N_17} d64: O(n d), not O(n^2) (the n d matrices "
                         f"held: {held:.0f} MiB; one n x n float matrix: {n2:.0f} MiB)", f"{p:.1f} MiB",
                         f"<= {BACKWARD_MEMORY_FACTOR_17:g} x {held:.0f} MiB", p <= BACKWARD_MEMORY_FACTOR_17 * held))
    else:
        lines.append(row(f"exact backward peak memory at n{BACKWARD_MEMORY_N_17} d64", "not measured", "O(n d)", False))
    # Since 2026-11-27 the longest sequence runs the streaming kernel with its output written over Q
    # (streaming-inplace); a CSV from before has the out-of-place row.
    in_place = ("streaming-inplace", 1, 1, LONG_N_17, 64) in ours
    s = ours.get(("streaming-inplace" if in_place else "streaming", 1, 1, LONG_N_17, 64))
    threshold = f"< {LONG_PEAK_MIB_17:g} MiB, >= {LONG_SHARE_17:.0%}"
    if s:
        # The peak counts what the configuration added: Q, K, V and a separate output are 4 n d floats; in
        # place, 3 n d.
        io_mib = (3 if in_place else 4) * LONG_N_17 * 64 * 4 / 2**20
        what = (f"streaming, output written over Q, at n{LONG_N_17} d64: peak memory (Q, K and V alone {io_mib:.0f} MiB)"
                if in_place else f"streaming at n{LONG_N_17} d64: peak memory (Q, K, V and output alone {io_mib:.0f} MiB)")
        lines.append(row(f"{what}, share of GEMM",
                         f"{float(s['peak_mib']):.1f} MiB, {share(s):.0%}", threshold,
                         float(s["peak_mib"]) < LONG_PEAK_MIB_17 and share(s) >= LONG_SHARE_17))
    else:
        lines.append(row(f"streaming at n{LONG_N_17} d64: peak memory, share of GEMM",
                         f"not measured (n {LONG_N_17} is not in bench_attention's sweep)", threshold, False))
    return lines


def targets(ours, torch, r7):
    """The rows of the targets no later target replaced: streaming's memory at n 32768, the ratio to PyTorch of
    linear-elu, Linformer and Nystrom at their slowest cell, R7's speed-up. (Exact's share and its ratio to PyTorch,
    and the approximations' shares, are judged by targets_17's stricter rows alone.)"""
    lines = []
    s = ours.get(("streaming", 1, 1, 32768, 64))
    if s:
        p = float(s["peak_mib"])
        lines.append(row("streaming peak memory at n32768 d64", f"{p:.1f} MiB", f"< {STREAMING_PEAK_MIB:g} MiB",
                         p < STREAMING_PEAK_MIB))
    for m in ["linear-elu", "linformer", "nystrom"]:
        speed = [float(torch[k]["median_s"]) / float(r["median_s"]) for k, r in ours.items() if k[0] == m and k in torch]
        if speed:
            lines.append(row(f"{m} vs torch (slowest)", f"{min(speed):.2f}x", ">= 1x", min(speed) >= 1))
    for r in r7:
        s = float(r["speedup"])
        lines.append(row(f"R7 low-rank vs dense eigen at d{r['d']} d_k{r['d_k']}", f"{s:.0f}x faster", f">= {R7_SPEEDUP:g}x",
                         s >= R7_SPEEDUP))
    return lines


def interval_judgement(value, lower, upper, limit, unit="", digits=3):
    """A row judged from the 95% interval of its median (bench_python.py): met (True) where the interval lies at or
    below the limit, not met (False) where it lies above, "undecided" where it straddles the limit, so that a rerun on
    a noisy machine cannot turn met into not met; with no interval (too few runs) the median alone decides. Returns
    (the judgement, the measured text's interval part)."""
    if lower == "" or upper == "":
        return value <= limit, "no interval (too few runs)"
    lower, upper = float(lower), float(upper)
    ok = True if upper <= limit else False if lower > limit else "undecided"
    return ok, f"95% interval {lower:.{digits}f}{unit} to {upper:.{digits}f}{unit}"


def python_targets(rows, quick):
    """The Python module's three rows (bench_python.csv), each against its target from its interval; rows saying so
    when the module was not built (no bench_python.csv: not judged). A --quick run times smaller sizes, which no target
    is about."""
    if not rows:
        return [row("Python module: attnlab.attend, call overhead, attnlab.inspect", "not measured (the module was not built: "
                    "pybind11 missing)", "-", None)]
    lines = []
    for r in rows:
        ratio, what = float(r["ratio"]), r["row"]
        if what == "attend":
            ok, interval = interval_judgement(ratio, r.get("ratio_lower95", ""), r.get("ratio_upper95", ""), 1 + PYTHON_ATTEND_SLACK)
            lines.append(row(f"attnlab.attend, exact ({r['impl']}), n{r['n']} d{r['d']} {r['dtype']}, against the C++ kernel in the same run",
                             f"{ratio:.3f}x, {interval} ({float(r['python_s']) * 1e3:.2f} against {float(r['cpp_s']) * 1e3:.2f} ms)",
                             f"<= {1 + PYTHON_ATTEND_SLACK:g}x", None if quick else ok))
        elif what == "overhead":  # (overhead-keyword: in the table below only)
            us = float(r["overhead_us"])
            ok, interval = interval_judgement(us, r.get("overhead_lower95_us", ""), r.get("overhead_upper95_us", ""), PYTHON_OVERHEAD_US,
                                              " us", 1)
            lines.append(row(f"attnlab.attend's call overhead on a tiny input (n{r['n']} d{r['d']}, no keyword): a call less its kernel",
                             f"{us:.1f} us, {interval} ({float(r['python_s']) * 1e6:.1f} against "
                             f"{float(r['cpp_s']) * 1e6:.1f} us)", f"<= {PYTHON_OVERHEAD_US:g} us", ok))
        elif what == "inspect":
            ok, interval = interval_judgement(ratio, r.get("ratio_lower95", ""), r.get("ratio_upper95", ""), 1 + PYTHON_INSPECT_SLACK)
            lines.append(row(f"attnlab.inspect on {r['method']} against attnlab_inspect (a process, tables written)",
                             f"{ratio:.3f}x, {interval} ({float(r['python_s']):.2f} against {float(r['cpp_s']):.2f} s)",
                             f"<= {1 + PYTHON_INSPECT_SLACK:g}x", None if quick else ok))
    return lines


def vit_threshold(method):
    return VIT_EXACT_SHARE if method == "exact" else VIT_OTHER_SHARE


def vit_targets(vit, profile):
    """One row per method at the training batch: its counted training FLOP/s as a share of the sgemm rate measured
    beside it, against 60% (exact) or 45% (every other method); a missed target names what bounds the method
    (bounds(), from the profile). A method without a row at the training batch is a row saying so, not met."""
    lines = []
    ours = {r["method"]: r for r in vit if int(r["batch"]) == VIT_BATCH}
    methods = sorted({r["method"] for r in vit}, key=lambda m: [r["method"] for r in vit].index(m))
    for m in methods:
        r = ours.get(m)
        threshold = vit_threshold(m)
        if r is None:
            lines.append(row(f"ViT training, {m}, share of sgemm at batch {VIT_BATCH}", "not measured",
                             f">= {threshold:.0%}", False))
            continue
        share = float(r["gflops"]) / float(r["gemm_gflops"])
        bound = "" if share >= threshold else f"; bounded by {bounds(m, profile)}"
        lines.append(row(f"ViT training, {m}, share of sgemm at batch {VIT_BATCH} ({float(r['images_per_s']):.0f} images/s)",
                         f"{share:.0%} ({float(r['gflops']):.1f} of {float(r['gemm_gflops']):.0f} GFLOP/s"
                         f"{unsteady_note(r)}){bound}", f">= {threshold:.0%}", share >= threshold))
    return lines


# Parts of the profile whose work is not counted (element-wise): their time is overhead against any GEMM rate.
UNCOUNTED = ("layernorm", "gelu", "other (residual adds, copies)")


def bounds(method, profile):
    """What bounds a method's training throughput, from its profile (one chunk on one thread): the counted part that
    loses the most time against the best counted rate any part of that chunk reached (usually the MLP's products:
    its time minus its FLOPs at that rate), and the share of the chunk in uncounted element-wise work."""
    parts = [r for r in profile if r.get("method", "exact") == method]
    chunk = next((r for r in parts if r["part"].startswith("whole chunk")), None)
    counted = [r for r in parts if not r["part"].startswith(("whole", "adam")) and float(r["counted_gflop_per_chunk"]) > 0
               and float(r["seconds_per_chunk"]) > 0]
    if chunk is None or not counted:
        return "(no profile of it in bench_vit_profile.csv)"
    total = float(chunk["seconds_per_chunk"])
    best = max(float(r["gflops"]) for r in counted)
    best_part = max(counted, key=lambda r: float(r["gflops"]))["part"]

    def lost(r):
        return float(r["seconds_per_chunk"]) - float(r["counted_gflop_per_chunk"]) / best

    worst = max(counted, key=lost)
    uncounted = sum(max(0.0, float(r["seconds_per_chunk"])) for r in parts if r["part"] in UNCOUNTED)
    return (f"its {worst['part']}: {float(worst['share_of_chunk']):.0%} of a chunk's time at {float(worst['gflops']):.1f} "
            f"GFLOP/s counted on one thread, where the {best_part} reach {best:.1f}, so {lost(worst) / total:.0%} of the "
            f"chunk is lost there (the method's uncounted work, such as exponentials and normalisations, is inside that "
            f"time); element-wise layers and copies take {uncounted / total:.0%}")


def check_vit(vit, vit_torch, where):
    """None, or why the ViT tables cannot be reported: a non-finite value, or the two sides' FLOP counts disagreeing
    at the same batch (bench_vit counts with vit_training_flops, the peer with its own copy of the formula)."""
    for r in vit:
        for c in ("median_s", "gflops", "gemm_gflops", "images_per_s", "counted_gflop_per_step"):
            if not math.isfinite(float(r[c])) or float(r[c]) <= 0:
                return f"{where}/bench_vit.csv: {c} = {r[c]} at batch {r['batch']}"
    ours = {(r.get("method", "exact"), int(r["batch"])): float(r["counted_gflop_per_step"]) for r in vit}
    for t in vit_torch:
        k = (t["method"], int(t["batch"]))
        if not math.isfinite(float(t["wall_s_per_step"])):
            return f"{where}/bench_vit_torch.csv: wall_s_per_step = {t['wall_s_per_step']}"
        if k in ours and t["counted_gflop_per_step"] and abs(float(t["counted_gflop_per_step"]) - ours[k]) > 1e-3 * ours[k]:
            return (f"the FLOP counts disagree for {k[0]} at batch {k[1]}: bench_vit {ours[k]:.4f} GFLOP per step, "
                    f"bench_vit_torch.py {t['counted_gflop_per_step']}")
    return None


def vit_table(vit, vit_torch):
    """Every timed configuration: ours, then the PyTorch peer's at the same method and batch (when it ran)."""
    out = ["| method | batch | threads | attnlab s per step (median) | min - max | user s | system s | images/s | GFLOP/s | "
           "% of sgemm | target | torch s per step | user s | system s | torch / attnlab |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    peer = {(t["method"], int(t["batch"])): t for t in vit_torch}
    for r in vit:
        m, b = r.get("method", "exact"), int(r["batch"])
        t = peer.get((m, b))
        target = f">= {vit_threshold(m):.0%}" if b == VIT_BATCH else "-"
        torch_cells = (f"{float(t['wall_s_per_step']):.4g} | {float(t['user_s_per_step']):.4g} | "
                       f"{float(t['sys_s_per_step']):.4g} | {float(t['wall_s_per_step']) / float(r['median_s']):.1f}x"
                       if t else "- | - | - | -")
        out.append(f"| {m} | {b} | {r['threads']} | {float(r['median_s']):.4g} | {float(r['min_s']):.4g} - "
                   f"{float(r['max_s']):.4g} | {float(r['user_s']):.4g} | {float(r['sys_s']):.4g} | "
                   f"{float(r['images_per_s']):.0f} | {float(r['gflops']):.1f} | "
                   f"{float(r['gflops']) / float(r['gemm_gflops']):.0%} | {target} | {torch_cells} |")
    return out


def recall_table(recall):
    """bench_recall.csv: the recall model's step per method beside its ViT row: both shares of the sgemm rate and
    their ratio."""
    out = ["| method | batch | threads | s per step (median) | sequences/s | GFLOP/s | % of sgemm | ViT's % of sgemm | "
           "recall / ViT |", "|---|---|---|---|---|---|---|---|---|"]
    for r in recall:
        vit_share = float(r["vit_gemm_share"])
        out.append(f"| {r['method']} | {r['batch']} | {r['threads']} | {float(r['median_s']):.4g} | "
                   f"{float(r['sequences_per_s']):.0f} | {float(r['gflops']):.1f} | {float(r['gemm_share']):.0%} | "
                   + (f"{vit_share:.0%} | {float(r['share_vs_vit']):.2f} |" if math.isfinite(vit_share) else "- | - |"))
    return out


def profile_table(profile):
    """bench_vit_profile.csv: one chunk's time per layer family on one thread, a column per method, each cell the
    part's share of the chunk and its counted GFLOP/s (or its milliseconds, for the whole chunk and Adam)."""
    methods = []
    for r in profile:
        m = r.get("method", "exact")
        if m not in methods:
            methods.append(m)
    parts = []
    for r in profile:
        name = r["part"].replace(f"({r.get('method', 'exact')}, ", "(")
        if name not in parts:
            parts.append(name)
    cell = {}
    for r in profile:
        m = r.get("method", "exact")
        name = r["part"].replace(f"({m}, ", "(")
        share, rate, ms = float(r["share_of_chunk"]), float(r["gflops"]), 1e3 * float(r["seconds_per_chunk"])
        if name.startswith(("whole", "adam")):
            text = f"{ms:.2f} ms" + ("" if math.isnan(rate) else f", {rate:.1f}")
        else:
            text = ("-" if math.isnan(share) else f"{share:.0%}") + ("" if math.isnan(rate) else f", {rate:.1f}")
        cell[(name, m)] = text
    out = ["| part | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for name in parts:
        out.append(f"| {name} | " + " | ".join(cell.get((name, m), "-") for m in methods) + " |")
    return out


def passes_sentence(rows):
    """What the second pass did (the CSV's passes and pass_medians_s; lib/attnlab/lab/timing.hpp's kBenchPasses)."""
    twice = [r for r in rows if int(r.get("passes", "1")) > 1]
    if not twice:
        return " No configuration was timed in a second pass."
    by_impl = {}
    for r in twice:
        medians = [float(x) for x in r["pass_medians_s"].split()]
        n_twice, n_second, worst = by_impl.get(r["impl"], (0, 0, 1.0))
        by_impl[r["impl"]] = (n_twice + 1, n_second + (medians[1] < medians[0]),
                              max(worst, max(medians) / min(medians)))
    parts = [f"{impl} {n} ({second} lower in the second; the two medians at most {worst:.2f}x apart)"
             for impl, (n, second, worst) in by_impl.items()]
    return (" A configuration whose runs stopped at that cap (all of them shorter than 5 s together) was timed again in a "
            "second pass over the configurations, and the lower of its two medians is the one shown (pass_medians_s has "
            "both): " + ", ".join(parts) + ".")


def cold_runs(rows):
    """Which configurations were timed by one run without a warm-up (the CSV's warmed_up = 0)."""
    cold = [f"{r['method']} {r['impl']} b{r['batch']} h{r['heads']} n{r['n']} d{r['d']}"
            for r in rows if r.get("warmed_up", "1") == "0"]
    return "warmed_up = 0: " + ", ".join(cold) if cold else "none this run"


def roofline(r):
    """The configuration's roofline as a share of the GEMM rate (min(GEMM rate, counted flops / fewest bytes x
    memory bandwidth), bench_attention's roofline_gflops), or None for a CSV written before it was measured."""
    if not r.get("roofline_gflops"):
        return None
    return float(r["roofline_gflops"]) / float(r["gemm_gflops"])


def roofline_sentence(first):
    """How the roofline columns were computed, with the run's measured bandwidth (nothing for an older CSV)."""
    if roofline(first) is None:
        return ""
    return (f" Memory bandwidth measured in the same run (STREAM triad, {first['threads']} threads): "
            f"{float(first['memory_gbs']):.1f} GB/s. The roofline of a configuration is min(GEMM rate, counted flops / "
            "fewest bytes x bandwidth), the fewest bytes being its inputs read once and its outputs written once "
            "(forward: Q, K, V, out; backward: Q, K, V, out, dO, lse, dQ, dK, dV), so it is an upper bound no kernel "
            "can beat; a share of the GEMM rate below the roofline's is what the kernel leaves, the rest is the memory's.")


def roofline_note(r):
    """', memory-bound: roofline X% of GEMM, Y% of it reached' when the memory ceiling is below the GEMM rate."""
    bound = roofline(r)
    if bound is None or bound >= 1:
        return ""
    reached = float(r["gflops"]) / float(r["roofline_gflops"])
    return f" (memory-bound: roofline {bound:.0%} of GEMM; {reached:.0%} of it reached)"


def cpu(r):
    """User + system CPU seconds and minor page faults per run, as measured beside the wall time ('-' if absent)."""
    if not r or not r.get("user_s"):
        return "-"
    return f"{float(r['user_s']):.3g} + {float(r['sys_s']):.3g}, {float(r['minor_faults']):.0f}"


def table(ours, torch, careful):
    out = ["| method | batch x heads | n | d | ours (s) | user + sys s, faults | GFLOP/s | % of GEMM | sgemm before, after | "
           "roofline, % of GEMM | % of roofline | peak MiB | torch (s) | user + sys s, faults | torch / ours | "
           "careful torch (s) | careful / ours | torch peak MiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(ours, key=lambda k: (k[1] * k[2] == 1, METHODS.index(k[0]), k[4], k[3])):
        r, t, c = ours[k], torch.get(k), careful.get(k)
        share = float(r["gflops"]) / float(r["gemm_gflops"])
        ts = f"{float(t['median_s']):.4g}" if t else "-"
        ratio = f"{float(t['median_s']) / float(r['median_s']):.2f}" if t else "-"
        cs = f"{float(c['median_s']):.4g}" if c else "-"
        cratio = f"{float(c['median_s']) / float(r['median_s']):.2f}" if c else "-"
        tp = f"{float(t['peak_mib']):.0f}" if t else "-"
        bound = roofline(r)
        rs = f"{bound:.0%}" if bound is not None else "-"
        reached = f"{float(r['gflops']) / float(r['roofline_gflops']):.0%}" if bound is not None else "-"
        around = beside(r)
        ar = "-" if around is None else f"{around[0]:.0f}, {around[1]:.0f}"
        if unsteady(r) is not None:
            ar = f"**{ar}**"  # more than CEILING_DRIFT apart: this share is not reliable
        out.append(f"| {k[0]} | {k[1]} x {k[2]} | {k[3]} | {k[4]} | {float(r['median_s']):.4g} | {cpu(r)} | {float(r['gflops']):.1f} | "
                   f"{share:.0%} | {ar} | {rs} | {reached} | {float(r['peak_mib']):.1f} | {ts} | {cpu(t)} | {ratio} | {cs} | {cratio} | {tp} |")
    return out


# One panel per sweep of bench_attention (issue 17), drawn with the report's own figure machinery
# (make_report.build_figure: gnuplot, legend below the plot area, colour-blind-safe colours).
PANELS = ["bench_attention_grid.svg", "bench_attention_long.svg"]


def panels(rows):
    """[(file, filter, what)] for the sweeps present: the batched grid (batch x heads > 1) at its largest d, and the
    long sequences (batch x heads = 1). A quick run's grid is smaller (batch 2 x heads 2, d 32), not absent."""
    out = []
    grid = [r for r in rows if int(r["batch"]) * int(r["heads"]) > 1]
    if grid:
        d = max(int(r["d"]) for r in grid)
        shapes = sorted({(int(r["batch"]), int(r["heads"])) for r in grid})
        flt = {"batch": sorted({str(b) for b, _ in shapes}), "heads": sorted({str(h) for _, h in shapes}), "d": str(d)}
        out.append((PANELS[0], flt, ", ".join(f"batch {b} x heads {h}" for b, h in shapes) + f", d {d}"))
    long = [r for r in rows if int(r["batch"]) * int(r["heads"]) == 1]
    if long:
        ds = sorted({int(r["d"]) for r in long})
        out.append((PANELS[1], {"batch": "1", "heads": "1"},
                    "long sequences, batch x heads 1, d " + ", ".join(map(str, ds))))
    return out


def figures(rows, results, gnuplot):
    """Draws panels(rows) into `results` (each whole or not at all); returns [(file, what)]."""
    # One line for the ceiling: the median of the rates the rows were set against.
    gemm = median_ceiling([r for r in rows if r["impl"] == "attnlab"])
    drawn = []
    for name, flt, what in panels(rows):
        fig = {"name": name, "x": "n", "y": {"col": "gflops"}, "series": ["method", "impl"], "filter": flt,
               "logx": True, "logy": True, "style": "linespoints", "xlabel": "n (sequence length)",
               "ylabel": "GFLOP/s (counted operations / median time)",
               "title": f"attention forward (and exact backward), float, {rows[0]['threads']} threads: {what}",
               # The ceiling every kernel is measured against: the sgemm rate of this same run.
               "refs": [{"expr": repr(gemm), "label": f"GEMM ceiling: sgemm {gemm:.0f} GFLOP/s (same run, median)", "dt": 2}]}
        try:  # build_figure writes the figure whole (a temporary, then renamed) or not at all
            _, why = make_report.build_figure(fig, rows, os.path.join(results, name), gnuplot)
        except make_report.FigureWriteError as e:
            raise SystemExit(f"bench_report.py: {e}") from None
        if why:
            raise SystemExit(f"bench_report.py: {name} not drawn: {why}")
        drawn.append((name, what))
    return drawn


def start_rates(results, first):
    """' at the start: Eigen X GFLOP/s, OpenBLAS Y GFLOP/s' from bench_attention_ceiling.csv's start row, or, for
    a CSV from before that table, around the first configuration (its own two columns); '' when neither is there."""
    try:
        at = {r["when"]: r for r in read(os.path.join(results, "bench_attention_ceiling.csv"))}
        eigen, blas, where = float(at["start"]["eigen_gemm_gflops"]), float(at["start"]["openblas_gemm_gflops"]), "at the start"
    except (OSError, KeyError, ValueError):
        if "eigen_gemm_gflops" not in first:
            return ""
        eigen, blas, where = float(first["eigen_gemm_gflops"]), float(first["openblas_gemm_gflops"]), "around its first configuration"
    return f" {where}: Eigen {eigen:.1f} GFLOP/s, OpenBLAS {blas:.1f} GFLOP/s"


def ceiling_drift(results, beside_rows=False):
    """(sentence, problem) on the rates measured at the start and at the end of the run (bench_attention_ceiling.csv):
    the sentence states both and flags the run when they are more than CEILING_DRIFT apart; problem is a message
    when the file is unreadable or holds a non-finite or non-positive rate. With beside_rows (every row has its own
    ceiling measured around it: beside_sentence) a GEMM rate that moved moves no share, so only the bandwidth, which
    is measured at the start alone and bounds the rooflines, is flagged."""
    path = os.path.join(results, "bench_attention_ceiling.csv")
    if not os.path.exists(path):
        return " No end-of-run ceiling recorded (bench_attention_ceiling.csv missing: a run from before it existed).", None
    try:
        at = {r["when"]: r for r in read(path)}
        rates = {c: (float(at["start"][c]), float(at["end"][c])) for c in ("gemm_gflops", "memory_gbs")}
    except (OSError, KeyError, ValueError) as exc:
        return "", f"{path}: unreadable ({exc!r})"
    if not all(math.isfinite(v) and v > 0 for pair in rates.values() for v in pair):
        return "", f"{path}: a rate is not a finite positive number"
    (g0, g1), (m0, m1) = rates["gemm_gflops"], rates["memory_gbs"]
    if beside_rows:
        memory = max(m0, m1) / min(m0, m1) - 1
        text = (f" At the start and the end of the run: sgemm {g0:.0f} -> {g1:.0f} GFLOP/s, STREAM {m0:.1f} -> {m1:.1f} GB/s")
        if memory > CEILING_DRIFT:
            return text + (f": **the bandwidth moved by {memory:.0%}, more than {CEILING_DRIFT:.0%}, so the rooflines "
                           "(set against the start's) are not reliable**."), None
        return text + f" (the bandwidth, which the rooflines use, within {CEILING_DRIFT:.0%})." , None
    drift = max(max(a, b) / min(a, b) - 1 for a, b in rates.values())
    text = (f" Measured again at the end of the run: sgemm {g0:.0f} -> {g1:.0f} GFLOP/s, STREAM {m0:.1f} -> {m1:.1f} GB/s "
            f"({drift:.0%} apart at most)")
    if drift > CEILING_DRIFT:
        text += (f": **more than {CEILING_DRIFT:.0%}, so the machine changed under this run (a shared machine's "
                 "neighbours) and its shares of the GEMM rate are not reliable**.")
    else:
        text += f": within {CEILING_DRIFT:.0%}."
    return text, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="directory holding bench_attention.csv")
    ap.add_argument("--gnuplot", default="gnuplot", help="gnuplot executable for the figures (default: gnuplot)")
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
    problem = bad_beside(rows)
    if problem:
        print(f"bench_report.py: {path}: {problem}", file=sys.stderr)
        return 1
    ours = {key(r): r for r in rows if r["impl"] == "attnlab"}
    torch = {key(r): r for r in rows if r["impl"] == "torch"}
    careful = {key(r): r for r in rows if r["impl"] == "torch-careful"}
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
    recall_path, recall_profile_path = (os.path.join(args.results, f) for f in ("bench_recall.csv", "bench_recall_profile.csv"))
    recall = read(recall_path) if os.path.exists(recall_path) else []
    recall_profile = read(recall_profile_path) if os.path.exists(recall_profile_path) else []
    problem = check_vit(vit, vit_torch, args.results) or (f"{vit_path}: {bad_beside(vit)}" if bad_beside(vit) else None)
    if problem:
        print(f"bench_report.py: {problem}", file=sys.stderr)
        return 1
    first = next(iter(ours.values()))
    beside_text = beside_sentence(ours)
    drift_text, problem = ceiling_drift(args.results, bool(beside_text))
    if problem:
        print(f"bench_report.py: {problem}", file=sys.stderr)
        return 1
    md = ["# Attention benchmark", "",
          "Generated by `tools/bench_report.py` from `bench_attention.csv`, `bench_r7.csv`, `bench_vit.csv`, "
          "`bench_vit_torch.csv`, `bench_vit_profile.csv`, `bench_recall.csv`, `bench_recall_profile.csv` and "
          "`bench_python.csv` (written by `make bench`); do not edit by hand. "
          "How to read it: docs/performance.md.", "",
          f"float, {first['threads']} threads, median of the timed runs after a warm-up (as many as fit 5 s, at most "
          f"{max(int(r['repeats']) for r in rows)} per pass: the repeats column); a configuration whose first run took longer "
          f"than 5 s is timed by that run alone, without a warm-up ({cold_runs(rows)}).{passes_sentence(rows)} "
          "sgemm ceiling measured in the same run"
          f"{start_rates(args.results, first)}." + beside_text + drift_text + " "
          "GFLOP/s are counted operations (2 per multiply-add of lib/attnlab/attention/attention_cost.hpp) over the median time; "
          "peak MiB is the resident memory the configuration added (inputs, workspace, outputs)." + roofline_sentence(first), "",
          "## Targets", "", "| target | measured | threshold | verdict |", "|---|---|---|---|"]
    python_path = os.path.join(args.results, "bench_python.csv")
    python_rows = read(python_path) if os.path.exists(python_path) else []
    quick = all(int(r["n"]) < 2048 for r in python_rows if r["row"] == "attend")
    md += targets(ours, torch, r7) + vit_targets(vit, profile) + targets_17(ours, torch, careful) + python_targets(python_rows, quick)
    if python_rows and quick:
        md += ["", "The Python module's rows come from a --quick run (smaller sizes): its ratios are shown, not judged."]
    if not torch:
        md += ["", "No torch rows: the PyTorch peer did not run (python3-torch missing), so no ratio against it."]
    md += ["", "## Every configuration", "",
           "torch: each method written the direct way; careful torch: exact attention with its n x n scores and output "
           "in buffers reused across calls and the softmax in place (PyTorch 1.13 has no fused CPU attention). user + sys s, "
           "faults: CPU seconds in user and kernel mode and minor page faults per run (getrusage, all threads), beside the "
           "wall time: a wall time made of system time and faults is the allocator's, not the kernel's.", ""]
    md += table(ours, torch, careful) + [""]
    md += [f"![GFLOP/s against n: {what}]({name})" for name, _, what in panels(rows)] + [""]
    if vit:
        md += ["## ViT training", "",
               "The ViT of `vit_spec.md` (n 196, D 64, 4 heads, 2 blocks, MLP 128) with each attention method, float, "
               "one training step (forward, cross-entropy, backward, Adam) timed after a warm-up step, at the training "
               f"experiment's batch ({VIT_BATCH}, where the targets are judged) and, for exact attention, at a larger one. "
               "GFLOP/s: counted FLOPs of the matrix products (`vit_training_flops`: 3x the forward count, each method's "
               "attention counted by `attention_cost.hpp`) over the median time; the sgemm rate is the one measured beside "
               "the row in the same run. User and system seconds are CPU time per step (both threads). The PyTorch peer "
               "trains the same model at the same batch (tools/vit_torch.py)."
               + ("" if vit_torch else " No PyTorch rows: the peer did not run (python3-torch missing)."), ""]
        md += vit_table(vit, vit_torch) + [""]
    if profile:
        md += ["### Where a step's time goes", "",
               f"One chunk of {profile[0]['chunk_images']} images (the unit each thread trains) through forward and "
               f"backward on one thread, median of {profile[0]['repeats']} runs per part, each layer family timed alone "
               "on the activations the whole pass left behind (bench_vit's profile). Each cell: the part's share of the "
               "chunk, then its counted GFLOP/s on one thread where its work is counted; the whole chunk and the Adam "
               "update (once per step) in milliseconds. Attention is the method alone over every image and head; "
               "projections the rest of multi-head attention. A method that misses its target names, in the targets "
               "table, the part that loses the most time against the best rate any part of its chunk reached.",
               ""] + profile_table(profile) + [""]
    if recall:
        md += ["## Recall model training", "",
               "The recall model of `recall_spec.md` at the sweep's main point (N 32 pairs, 64 tokens, D 64, 4 heads, 2 "
               "blocks, MLP 128, 1,024 keys, 256 values) with each attention method and the baseline without attention, "
               "float, one training step at the sweep's batch of fresh sequences, timed as the ViT's in the same run. "
               "GFLOP/s: `recall_training_flops` (the blocks over 64 tokens and the head at the 32 queries; the embedding is "
               "a lookup) over the median time; each row beside its method's ViT row at batch 16. A short sequence makes "
               "every product small, so a recall step reaches a smaller share of sgemm than a ViT step; where a method "
               "falls much further below its ViT row, the profile below says what bounds it.", ""]
        md += recall_table(recall) + [""]
    if recall_profile:
        md += ["### Where a recall step's time goes", "",
               f"One chunk of {recall_profile[0]['chunk_images']} sequences on one thread, median of "
               f"{recall_profile[0]['repeats']} runs per part: the token embedding with the query head and the loss, the "
               "attention method alone over every sequence and head, and the blocks' rest (projections, LayerNorms, MLPs, "
               "residual adds) as the whole minus those two.", ""] + profile_table(recall_profile) + [""]
        md += ["What bounds each method on recall: " + "; ".join(
            f"{m}: {bounds(m, recall_profile)}" for m in dict.fromkeys(r["method"] for r in recall_profile)) + ".", ""]
    if python_rows:
        md += ["## The Python module", "",
               "bench/bench_python.py, in one process: attnlab.attend on float32 inputs against the same kernel timed in C++ "
               "on head stacks made beforehand (run_attention, attnlab._attnlab._kernel_seconds; the fast kernel's call reads "
               "the arrays in C order in place, the same products bit for bit), the two alternating run by run; the tiny input's time per call over batches of calls; attnlab.inspect against attnlab_inspect "
               "run as a user runs it (a child process writing its tables), alternating, the page cache warm. The times are "
               "each side's median; the ratio and the difference are the medians of the runs' paired ratios and differences, "
               "with distribution-free 95% intervals from order statistics, from which the targets above are judged. What a "
               "call adds to its kernel: the options parsed and checked, the inputs converted to the kernels' column-major "
               "heads and checked finite, the output written back in C order.", "",
               "| row | impl | n | d | threads | runs | Python s | C++ s | ratio [95%] | Python - C++ (us) [95%] |",
               "|---|---|---|---|---|---|---|---|---|---|"]

        def interval_cell(r, lower, upper, digits):
            lo, hi = r.get(lower, ""), r.get(upper, "")
            return "" if lo == "" or hi == "" else f" [{float(lo):.{digits}f}, {float(hi):.{digits}f}]"

        md += [f"| {r['row']} {r['method']} | {r['impl'] or '-'} | {r['n'] or '-'} | {r['d'] or '-'} | {r['threads']} | {r['runs']} | "
               f"{float(r['python_s']):.4g} | {float(r['cpp_s']):.4g} | {float(r['ratio']):.3f}{interval_cell(r, 'ratio_lower95', 'ratio_upper95', 3)} | "
               f"{float(r['overhead_us']):.1f}{interval_cell(r, 'overhead_lower95_us', 'overhead_upper95_us', 1)} |"
               for r in python_rows] + [""]
    write_atomically(os.path.join(args.results, "bench_attention.md"), "\n".join(md))
    figures(rows, args.results, args.gnuplot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
