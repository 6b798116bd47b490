#!/usr/bin/python3
"""Our trained models through attnlab_inspect: their checkpoints, safetensors exports, and exp_trained_attention.

    trained_vit_check.py --inspect build/bin/attnlab_inspect --results results --workdir build/inspect-check/trained

For every attnlab checkpoint (ViT or recall model) of the exact method under <results>/checkpoints (a directory
with manifest.json):
  1. --export writes one safetensors file; NumPy reads it (st_numpy.py, not attnlab's reader) and every tensor
     equals its .npy file bit for bit, under the manifest's name and shape, with the widths in __metadata__;
  2. inspecting the exported file (--layout attnlab) gives the same inspect_heads.csv as the directory, bit for bit;
  3. NumPy's dense second opinion agrees with every head (inspect_check.py's comparisons);
  4. the skew shares equal exp_trained_attention's (<results>/trained_skew_share.csv, rows "trained", method
     exact: W_Q W_K^T formed in double) to the ratio |ours - theirs| ||M||_F / (2 d eps ||W_Q,h|| ||W_K,h||) <= 30,
     with eps of float for the default run and of double for --precision double; that table's trained model is
     one of the checkpoints (the one that matches is named).
Exit status 0 passed, 1 failed, 77 NumPy missing or no checkpoint to check.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("trained_vit_check.py: NumPy not found (Debian: python3-numpy); skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inspect_check  # noqa: E402
import st_numpy  # noqa: E402


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run(binary, args):
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL attnlab_inspect {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def heads_of(directory, manifest):
    """[layer][head] -> dict(wq, wk, bq, bk) from the .npy files (in x out: head h owns columns h d_k ..)."""
    files = {p["name"]: p["file"] for p in manifest["parameters"]}
    H, L = manifest["H"], manifest["L"]
    out = []
    for l in range(L):
        load = {k: np.load(os.path.join(directory, files[f"block{l}.attn.{k}"])).astype(np.float64) for k in ("Wq", "Wk", "bq", "bk")}
        dk = load["Wq"].shape[1] // H
        out.append([{"wq": load["Wq"][:, h * dk:(h + 1) * dk], "wk": load["Wk"][:, h * dk:(h + 1) * dk],
                     "bq": load["bq"][h * dk:(h + 1) * dk], "bk": load["bk"][h * dk:(h + 1) * dk]} for h in range(H)])
    return out


def check_checkpoint(binary, directory, work):
    """Checks 1-3; returns (problems, {(layer, head, form, precision): skew share}, heads)."""
    problems = []
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    exported = os.path.join(work, "exported.safetensors")
    run(binary, ["--layout", "attnlab", directory, "--export", exported])
    tensors, meta = st_numpy.read_file(exported)
    for p in manifest["parameters"]:
        want = np.load(os.path.join(directory, p["file"]))
        got = tensors.pop(p["name"], None)
        if got is None or got.shape != tuple(p["shape"]) or not np.array_equal(got.astype(np.float32), want) or want.dtype != np.float32:
            problems.append(f"export: {p['name']} differs from {p['file']}")
    if tensors:
        problems.append(f"export: tensors beyond the manifest: {sorted(tensors)}")
    for key in ("H", "L", "D", "method"):
        if str(manifest[key]) != meta.get(key):
            problems.append(f"export: __metadata__ {key} = {meta.get(key)!r}, manifest {manifest[key]!r}")
    shares = {}
    heads = heads_of(directory, manifest)
    for precision in ("float", "double"):
        tables = {}
        for name, target in (("dir", directory), ("file", exported)):
            out = os.path.join(work, f"{name}-{precision}")
            shutil.rmtree(out, ignore_errors=True)
            run(binary, ["--layout", "attnlab", target, "--out", out, "--no-figure", "--precision", precision])
            tables[name] = [{k: v for k, v in r.items() if k != "inputs"} for r in rows_of(os.path.join(out, "inspect_heads.csv"))]
        if tables["dir"] != tables["file"]:
            problems.append(f"{precision}: the exported file's inspect_heads.csv differs from the directory's")
        found, worst = inspect_check.compare(tables["dir"], heads, lambda h: h, precision)
        problems += [f"{precision}: {q}" for q in found]
        print(f"     {precision}: numpy's dense second opinion, worst ratios " + ", ".join(f"{c} {v:.2g}" for c, v in sorted(worst.items())))
        for r in tables["dir"]:
            shares[(int(r["layer"]), int(r["head"]), r["form"], precision)] = float(r["skew_share"])
    return problems, shares, heads


# trained_skew_share.csv's columns that hold values; any other column (beyond model and method) tells its models
# apart (a seed, a checkpoint), and each such model is compared on its own.
VALUE_COLUMNS = {"layer", "head", "m_norm", "skew_share", "augmented_m_norm", "augmented_skew_share", "split_residual", "inputs",
                 "model", "method"}


def trained_models(table):
    """{key: rows} of the trained exact models in exp_trained_attention's table, key naming each."""
    groups = {}
    for r in rows_of(table):
        if r["model"] == "trained" and r["method"] == "exact":
            groups.setdefault(tuple((k, v) for k, v in sorted(r.items()) if k not in VALUE_COLUMNS), []).append(r)
    return groups


def against_experiment(theirs, shares, heads):
    """Check 4: the worst ratio of our skew shares against one of exp_trained_attention's models, per precision."""
    worst = {}
    for r in theirs:
        l, h = int(r["layer"]), int(r["head"])
        if (l, h, "weights", "float") not in shares:  # a model of another shape
            return None
        w = heads[l][h]
        for form, col, norm_col in (("weights", "skew_share", "m_norm"), ("augmented", "augmented_skew_share", "augmented_m_norm")):
            wq, wk = (w["wq"], w["wk"]) if form == "weights" else (np.vstack([w["wq"], w["bq"]]), np.vstack([w["wk"], w["bk"]]))
            for precision in ("float", "double"):
                ours = shares[(l, h, form, precision)]
                unit = wq.shape[0] * inspect_check.EPS[precision] * np.linalg.norm(wq) * np.linalg.norm(wk)
                ratio = abs(ours - float(r[col])) * float(r[norm_col]) / (2 * unit)
                worst[precision] = max(worst.get(precision, 0.0), ratio)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inspect", required=True)
    ap.add_argument("--results", required=True, help="the results directory holding checkpoints/ and trained_skew_share.csv")
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    candidates = []
    for manifest in sorted(glob.glob(os.path.join(a.results, "checkpoints", "**", "manifest.json"), recursive=True)):
        with open(manifest) as f:
            if json.load(f).get("method") == "exact":
                candidates.append(os.path.dirname(manifest))
    if not candidates:
        print(f"trained_vit_check.py: no checkpoint of the exact method under {a.results}/checkpoints; skipped")
        return 77
    failures = 0
    table = os.path.join(a.results, "trained_skew_share.csv")
    models = trained_models(table) if os.path.exists(table) else {}
    matched = {key: [] for key in models}
    for i, directory in enumerate(candidates):
        work = os.path.join(a.workdir, str(i))
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        problems, shares, heads = check_checkpoint(a.inspect, directory, work)
        print(("FAIL" if problems else "ok  ") + f" {directory}: export read back by NumPy, exported file = directory, NumPy's second opinion")
        for q in problems[:8]:
            print("     " + q)
        failures += bool(problems)
        for key, theirs in models.items():
            worst = against_experiment(theirs, shares, heads)
            if worst is None:
                continue
            ok = all(v <= inspect_check.THRESHOLD for v in worst.values())
            print(f"     against {table} (trained, exact{''.join(f', {k} {v}' for k, v in key)}): worst ratio float "
                  f"{worst['float']:.3g}, double {worst['double']:.3g}" + (" (matches)" if ok else " (another model)"))
            if ok:
                matched[key].append(directory)
    for key, found in matched.items():
        what = "trained, exact" + "".join(f", {k} {v}" for k, v in key)
        if found:
            print(f"ok   exp_trained_attention's skew shares ({what}) are those of {found[0]} (ratio <= {inspect_check.THRESHOLD} in float and double)")
        else:
            print(f"FAIL no checkpoint's skew shares match {table}'s rows ({what})")
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
