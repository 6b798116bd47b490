#!/usr/bin/python3
"""A second opinion on attnlab_inspect: NumPy recomputes every column of inspect_heads.csv densely.

    inspect_check.py --inspect build/bin/attnlab_inspect --workdir build/inspect-check --check layouts

Checks (--check, default all):
  layouts    every layout (bert, roberta, vit, gpt2, llama, attnlab, custom) in F32, F16 and BF16 (llama also
             F64), one file and sharded: each head's M = W_Q,h W_K,h^T formed in float64 and decomposed by
             numpy.linalg (svd, eigvalsh): a different route from attnlab's QR of [W_Q W_K]
  caught     the same comparisons fail on a layout read wrongly (nn.Linear weights transposed, GPT-2's K taken
             from V's block, LLaMA's key heads assigned round-robin instead of in groups), so they can tell
  malformed  every hostile file (verify/safetensors/st_format.py, plus index, FIFO and dtype cases) refused:
             exit status 2, one stderr line naming the file, nothing written
  robust     what a new user's probe found: weights stored at any scale give the same verdicts (or a refusal
             naming the head); directory names that try to run a command through the figure step run
             nothing; a directory name that is not UTF-8 is drawn; a full disk leaves no truncated figure
             and one line; layer numbers written oddly ("01", "-1", 23 digits) and --export onto a device,
             a directory or a link are refused
Counts (ranks, eigenvalue signs) must agree exactly (the heads have clear gaps); reals within LAPACK-style
ratios |ours - numpy| / (d eps_T ||W_Q,h||_F ||W_K,h||_F) <= 30 (scaled per column, see RATIOS).
Exit status 0 passed, 1 failed, 77 NumPy missing (ctest shows the test as skipped).
"""
import argparse
import csv
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

try:
    import numpy as np
except ImportError:
    print("inspect_check.py: NumPy not found (Debian: python3-numpy); skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import st_format  # noqa: E402
import st_numpy  # noqa: E402

THRESHOLD = 30.0
SEED = 20250311
EPS = {"float": float(np.finfo(np.float32).eps), "double": float(np.finfo(np.float64).eps)}


def reference(wq, wk, dk, precision):
    """The head's columns from the dense float64 M (d x d), with attnlab's tolerances for precision T."""
    d = wq.shape[0]
    eps = EPS[precision]
    m = wq @ wk.T
    s = (m + m.T) / 2
    sigma = np.linalg.svd(m, compute_uv=False)
    lam = np.linalg.eigvalsh(s)
    tol = d * eps * np.abs(lam).max()
    sq = np.sort(lam ** 2)[::-1]
    total = sq.sum()
    m_norm = np.linalg.norm(m)
    s_norm = np.sqrt(total)
    lam_next = np.sqrt(sq[dk]) if len(sq) > dk else 0.0
    return {
        "m_norm": m_norm,
        "skew_share": np.linalg.norm(m - m.T) / (2 * m_norm) if m_norm > 0 else 0.0,
        "rank_M": int((sigma > d * eps * sigma.max()).sum()),
        "nonzero_eig_S": int((np.abs(lam) > tol).sum()),
        "positive_eig_S": int((lam > tol).sum()),
        "negative_eig_S": int((lam < -tol).sum()),
        "s_norm": s_norm,
        "kept_share_dk": sq[:dk].sum() / total if total > 0 else 1.0,
        "lambda_next": lam_next,
        "r6_ratio": lam_next / (d * eps * s_norm) if total > 0 else 0.0,
    }


def ratios(ours, ref, unit, dk, rows, eps):
    """Unitless errors per real column; unit = d eps ||W_Q||_F ||W_K||_F bounds the error of any entry of M, S_w,
    R_w and of their eigen- and singular values (backward stability of the QR and the small solvers)."""
    def err(col):
        return abs(float(ours[col]) - ref[col])
    if unit == 0:
        return {c: err(c) for c in ("m_norm", "skew_share", "s_norm", "kept_share_dk", "lambda_next", "r6_ratio")}
    return {
        "m_norm": err("m_norm") / unit,
        "s_norm": err("s_norm") / unit,
        "lambda_next": err("lambda_next") / unit,
        # ||R_w|| / ||M||: an error of one unit in ||R_w|| and in ||M||, relative to ||M||.
        "skew_share": err("skew_share") * ref["m_norm"] / (2 * unit),
        # sum of the d_k largest lambda^2 over the total: each lambda moves by a unit (Weyl), so the share by at
        # most 4 sqrt(d_k) units / ||S_w||.
        "kept_share_dk": err("kept_share_dk") * ref["s_norm"] / (4 * np.sqrt(dk) * unit),
        # lambda_next / (d eps ||S_w||): lambda_next and ||S_w|| each move by a unit.
        "r6_ratio": err("r6_ratio") * rows * eps * ref["s_norm"] / (unit * (1 + ref["r6_ratio"] * rows * eps)),
    }


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def compare(rows, heads, kv_of, precision, mapping=None):
    """Problems found comparing inspect_heads.csv rows with the heads; [] when all agree. mapping(layer, head)
    -> (wq, wk, bq, bk) overrides how a head's weights are taken (the deliberately wrong readings)."""
    problems, worst = [], {}
    for r in rows:
        l, h = int(r["layer"]), int(r["head"])
        wq, wk, bq, bk = mapping(l, h) if mapping else (heads[l][h]["wq"], heads[l][h]["wk"], heads[l][h]["bq"], heads[l][h]["bk"])
        if r["form"] == "augmented":
            wq, wk = np.vstack([wq, bq]), np.vstack([wk, bk])
        dk = wq.shape[1]
        ref = reference(wq, wk, dk, precision)
        where = f"layer {l} head {h} {r['form']}"
        if int(r["kv_head"]) != kv_of(h) or int(r["d_k"]) != dk or r["precision"] != precision:
            problems.append(f"{where}: kv_head/d_k/precision {r['kv_head']}/{r['d_k']}/{r['precision']}, expected {kv_of(h)}/{dk}/{precision}")
        for col in ("rank_M", "nonzero_eig_S", "positive_eig_S", "negative_eig_S"):
            if int(r[col]) != ref[col]:
                problems.append(f"{where}: {col} {r[col]}, numpy {ref[col]}")
        unit = wq.shape[0] * EPS[precision] * np.linalg.norm(wq) * np.linalg.norm(wk)
        for col, ratio in ratios(r, ref, unit, dk, wq.shape[0], EPS[precision]).items():
            worst[col] = max(worst.get(col, 0.0), ratio)
            if not ratio <= THRESHOLD:
                problems.append(f"{where}: {col} {r[col]}, numpy {ref[col]!r}: ratio {ratio:.3g} > {THRESHOLD}")
    return problems, worst


def run_inspect(binary, args, out):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([binary] + args + ["--out", out, "--no-figure", "--threads", "2"], capture_output=True, text=True)
    return p, os.path.join(out, "inspect_heads.csv")


def check_layouts(binary, work):
    failures, cases = 0, 0
    plan = [(layout, dtype, shards) for layout in ("bert", "roberta", "vit", "gpt2", "llama", "attnlab")
            for dtype in ("F32", "F16", "BF16") for shards in (1, 3)] + [("llama", "F64", 1), ("llama", "F64", 2)]
    for i, (layout, dtype, shards) in enumerate(plan):
        tensors, config, meta, heads, kv, hs = models.build(layout, dtype, SEED + i)
        d = os.path.join(work, f"{layout}-{dtype}-{shards}")
        path = st_numpy.write_checkpoint(d, tensors, config, shards, meta)
        p, table = run_inspect(binary, ["--layout", layout, path], d + "-out")
        cases += 1
        precision = "double" if dtype == "F64" else "float"
        if p.returncode != 0:
            print(f"FAIL {layout} {dtype} shards {shards}: exit {p.returncode}: {p.stderr.strip()}")
            failures += 1
            continue
        rows = read_rows(table)
        expected = models.LAYERS * heads * (1 if layout == "llama" else 2)
        problems, worst = compare(rows, hs, lambda h: h // (heads // kv), precision)
        if len(rows) != expected:
            problems.append(f"{len(rows)} rows, expected {expected}")
        status = "FAIL" if problems else "ok  "
        print(f"{status} {layout:8} {dtype:4} shards {shards} (seed {SEED + i}): worst ratios " +
              ", ".join(f"{c} {v:.2g}" for c, v in sorted(worst.items())))
        for q in problems[:5]:
            print("     " + q)
        failures += bool(problems)
    # --layout custom naming the bert weights itself: the same numbers as --layout bert.
    tensors, config, meta, heads, kv, hs = models.build("bert", "F32", SEED)
    d = os.path.join(work, "custom")
    path = st_numpy.write_checkpoint(d, tensors, config, 1, meta)
    base = "bert.encoder.layer.{l}.attention.self."
    p, table = run_inspect(binary, ["--layout", "custom", path, "--q-pattern", base + "query.weight", "--k-pattern", base + "key.weight",
                                    "--q-bias-pattern", base + "query.bias", "--k-bias-pattern", base + "key.bias"], d + "-out")
    problems = [f"exit {p.returncode}: {p.stderr.strip()}"] if p.returncode else compare(read_rows(table), hs, lambda h: h, "float")[0]
    print(("FAIL" if problems else "ok  ") + " custom   F32  --q-pattern/--k-pattern naming bert's weights")
    for q in problems[:5]:
        print("     " + q)
    return failures + bool(problems), cases + 1


def check_caught(binary, work):
    """Each wrong reading must make the comparisons fail."""
    missed = 0

    def expect_caught(what, problems):
        nonlocal missed
        print(("ok  " if problems else "FAIL") + f" {what}: {len(problems)} disagreement(s)" + ("" if problems else " (not caught)"))
        missed += not problems

    tensors, config, meta, heads, kv, hs = models.build("bert", "F32", SEED + 100)
    path = st_numpy.write_checkpoint(os.path.join(work, "caught-bert"), tensors, config, 1, meta)
    base = "bert.encoder.layer.{l}.attention.self."
    p, table = run_inspect(binary, ["--layout", "custom", path, "--transpose", "--q-pattern", base + "query.weight",
                                    "--k-pattern", base + "key.weight", "--heads", "4"], os.path.join(work, "caught-bert-out"))
    assert p.returncode == 0, p.stderr
    expect_caught("bert read as input x output (--transpose)", compare(read_rows(table), hs, lambda h: h, "float")[0])
    p, table = run_inspect(binary, ["--layout", "bert", path], os.path.join(work, "caught-bert-right"))
    rows = read_rows(table)
    assert not compare(rows, hs, lambda h: h, "float")[0], "the right reading must agree"
    # NumPy reading nn.Linear's weight without the transpose: W_Q,h = weight[:, h d_k:(h+1) d_k].
    qw = {l: tensors[base.format(l=l) + "query.weight"][1] for l in range(models.LAYERS)}
    kw = {l: tensors[base.format(l=l) + "key.weight"][1] for l in range(models.LAYERS)}
    dk = models.DK
    expect_caught("numpy taking nn.Linear's columns as the head",
                  compare(rows, hs, lambda h: h, "float", lambda l, h: (qw[l][:, h * dk:(h + 1) * dk], kw[l][:, h * dk:(h + 1) * dk],
                                                                        hs[l][h]["bq"], hs[l][h]["bk"]))[0])
    # GPT-2 with K taken from V's block of c_attn.
    tensors, config, meta, heads, kv, hs = models.build("gpt2", "F32", SEED + 101)
    path = st_numpy.write_checkpoint(os.path.join(work, "caught-gpt2"), tensors, config, 1, meta)
    p, table = run_inspect(binary, ["--layout", "gpt2", path], os.path.join(work, "caught-gpt2-out"))
    rows = read_rows(table)
    assert not compare(rows, hs, lambda h: h, "float")[0], "the right reading must agree"
    c = {l: tensors[f"transformer.h.{l}.attn.c_attn.weight"][1] for l in range(models.LAYERS)}
    D = models.D
    expect_caught("gpt2 with K read from V's block (Q | V | K)",
                  compare(rows, hs, lambda h: h, "float", lambda l, h: (c[l][:, h * dk:(h + 1) * dk], c[l][:, 2 * D + h * dk:2 * D + (h + 1) * dk],
                                                                        hs[l][h]["bq"], hs[l][h]["bk"]))[0])
    # LLaMA's key heads assigned round-robin (h % kv_heads) instead of in consecutive groups (h // group).
    tensors, config, meta, heads, kv, hs = models.build("llama", "BF16", SEED + 102)
    path = st_numpy.write_checkpoint(os.path.join(work, "caught-llama"), tensors, config, 1, meta)
    p, table = run_inspect(binary, ["--layout", "llama", path], os.path.join(work, "caught-llama-out"))
    rows = read_rows(table)
    group = heads // kv
    assert not compare(rows, hs, lambda h: h // group, "float")[0], "the right reading must agree"
    expect_caught("llama key heads round-robin (h % kv_heads)",
                  compare(rows, hs, lambda h: h % kv, "float", lambda l, h: (hs[l][h]["wq"], hs[l][(h % kv) * group]["wk"],
                                                                           hs[l][h]["bq"], hs[l][h]["bk"]))[0])
    return missed, 4


def refused(binary, args, out, must_name, must_mention, what):
    """Runs attnlab_inspect on a bad input: exit 2, one line on stderr naming the file and the problem, no --out."""
    p = subprocess.run([binary] + args + ["--out", out, "--no-figure"], capture_output=True, text=True, timeout=60)
    lines = p.stderr.splitlines()
    ok = p.returncode == 2 and len(lines) == 1 and must_name in lines[0] and must_mention in lines[0] and not os.path.exists(out) and not p.stdout
    print(("ok  " if ok else "FAIL") + f" {what}: exit {p.returncode}: {p.stderr.strip()}")
    if not ok:
        print(f"     expected exit 2, one line naming {must_name!r} and mentioning {must_mention!r}, nothing written")
    return not ok


def check_malformed(binary, work):
    failures, cases = 0, 0
    d = os.path.join(work, "malformed")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    out = os.path.join(d, "out")  # must never appear
    for name, data, mention in st_format.malformed_cases():
        path = os.path.join(d, name + ".safetensors")
        with open(path, "wb") as f:
            f.write(data)
        failures += refused(binary, ["--layout", "bert", path, "--heads", "1"], out, path, mention, name)
        cases += 1
    # Files valid as safetensors but not as a model's weights.
    tensors, config, meta, heads, kv, hs = models.build("bert", "F32", SEED + 200)
    q0 = "bert.encoder.layer.0.attention.self.query.weight"
    for name, edit, mention in [
            ("non-finite", lambda t: t[q0][1].__setitem__((1, 2), np.nan), "non-finite"),
            ("int-weight", lambda t: t.__setitem__(q0, ("I32", None)), "dtype I32"),
            ("no-layer", lambda t: [t.pop(k) for k in list(t) if ".attention.self." in k], "no tensor named")]:
        t = {k: (v[0], v[1].copy()) for k, v in tensors.items()}
        edit(t)
        sub = os.path.join(d, name)
        os.makedirs(sub, exist_ok=True)
        if name == "int-weight":
            items = [(k, dt, list(a.shape), st_numpy.encode(a, dt)) for k, (dt, a) in sorted(t.items()) if k != q0]
            items.append((q0, "I32", [heads * models.DK, models.D], b"\x00" * (4 * heads * models.DK * models.D)))
            path = os.path.join(sub, "model.safetensors")
            with open(path, "wb") as f:
                f.write(st_format.safetensors_bytes(sorted(items)))
            with open(os.path.join(sub, "config.json"), "w") as f:
                json.dump(config, f)
        else:
            path = st_numpy.write_checkpoint(sub, t, config, 1, meta)
        failures += refused(binary, ["--layout", "bert", path], out, path, mention, name)
        cases += 1
    # Sharded: an index naming a tensor its shard lacks, a shard path leaving the directory, a malformed index.
    good = os.path.join(d, "sharded")
    index = st_numpy.write_checkpoint(good, tensors, config, 2, meta)
    with open(index) as f:
        idx = json.load(f)
    for name, change, mention in [
            ("index-missing-tensor", lambda j: j["weight_map"].__setitem__("bert.pooler.dense.weight", "model-00001-of-00002.safetensors"),
             "does not hold it"),
            ("index-path", lambda j: j["weight_map"].__setitem__(q0, "../model-00001-of-00002.safetensors"), "not a file name"),
            ("index-no-map", lambda j: j.pop("weight_map"), "no \"weight_map\""),
            ("index-missing-shard", lambda j: j["weight_map"].__setitem__(q0, "model-00009-of-00009.safetensors"), "no such file")]:
        j = json.loads(json.dumps(idx))
        change(j)
        path = os.path.join(good, name + ".json")
        with open(path, "w") as f:
            json.dump(j, f)
        failures += refused(binary, ["--layout", "bert", path], out, "sharded", mention, name)
        cases += 1
    # A FIFO in place of the file: refused at once, never waiting for a writer.
    fifo = os.path.join(d, "fifo.safetensors")
    os.mkfifo(fifo)
    failures += refused(binary, ["--layout", "bert", fifo, "--heads", "1"], out, fifo, "not a regular file", "fifo")
    # A layout that fits nothing names what it looked for and three names the file has.
    path = st_numpy.write_checkpoint(os.path.join(d, "gpt2-as-llama"), models.build("gpt2", "F32", SEED)[0], None, 1)
    failures += refused(binary, ["--layout", "llama", path, "--heads", "4"], out, path, "layers.0.self_attn.q_proj.weight", "wrong layout")
    return failures, cases + 2


def claims_of(out):
    """{id: verdict} of an inspection's claims.csv."""
    return {r["id"]: r["verdict"] for r in read_rows(os.path.join(out, "claims.csv"))}


def scaled(tensors, factor, dtype=None):
    """The checkpoint's tensors multiplied by factor, stored again in their dtype (or in dtype)."""
    out = {}
    for k, (dt, a) in tensors.items():
        dt = dtype or dt
        out[k] = (dt, st_numpy.stored(a * factor, dt))
    return out


def complete_svg(path):
    try:
        return ET.parse(path).getroot().tag.rsplit("}", 1)[-1] == "svg"
    except (OSError, ET.ParseError):
        return False


def check_robust(binary, work):
    """The classes of defect a new user's probe found in the inspector, each a case that failed before its fix."""
    failures, cases = 0, 0

    def verdict(ok, what, detail=""):
        nonlocal failures, cases
        cases += 1
        failures += not ok
        print(("ok  " if ok else "FAIL") + f" {what}" + (f": {detail}" if detail else ""))

    # 1. Scale: the skew share, the ranks and the eigenvalue counts do not depend on the weights' scale, so neither
    # may a verdict, in float or in double; a power of two gives the same bits but for the three norms.
    tensors, config, meta, *_ = models.build("gpt2", "F32", SEED + 300)
    base_dir = os.path.join(work, "scale")
    runs = {}
    for name, factor in (("1", 1.0), ("1e-25", 1e-25), ("1e30", 1e30), ("2^-84", 2.0 ** -84), ("2^100", 2.0 ** 100)):
        path = st_numpy.write_checkpoint(os.path.join(base_dir, "model-" + name), scaled(tensors, factor), config, 1, meta)
        for precision in ("float", "double"):
            out = os.path.join(base_dir, f"out-{name}-{precision}")
            p, table = run_inspect(binary, ["--layout", "gpt2", path, "--precision", precision], out)
            if p.returncode != 0:
                verdict(False, f"weights x {name} in {precision}", f"exit {p.returncode}: {p.stderr.strip()}")
                continue
            runs[(name, precision)] = (claims_of(out), read_rows(table))
    reference = runs.get(("1", "float"))
    for key, (claims, _) in runs.items():
        if key != ("1", "float") and reference:
            verdict(claims == reference[0], f"weights x {key[0]} in {key[1]}: verdicts as at scale 1",
                    "" if claims == reference[0] else f"{claims} against {reference[0]}")
    norms = ("m_norm", "s_norm", "lambda_next")
    for name, factor in (("2^-84", 2.0 ** -84), ("2^100", 2.0 ** 100)):
        for precision in ("float", "double"):
            if (name, precision) not in runs or ("1", precision) not in runs:
                continue
            ours, base = runs[(name, precision)][1], runs[("1", precision)][1]
            same = len(ours) == len(base) and all(
                all(a[c] == b[c] for c in a if c not in norms + ("inputs",)) and
                all(float(a[c]) == float(b[c]) * factor * factor for c in norms) for a, b in zip(ours, base))
            verdict(same, f"weights x {name} in {precision}: every column the same bits, the norms x {name}^2")
    # Past what a double holds: refused, naming the layer and the head, nothing written.
    big = st_numpy.write_checkpoint(os.path.join(base_dir, "model-f64-1e160"), scaled(tensors, 1e160, "F64"), config, 1, meta)
    out = os.path.join(base_dir, "out-f64-1e160")
    p = subprocess.run([binary, "--layout", "gpt2", big, "--out", out, "--no-figure"], capture_output=True, text=True)
    verdict(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "layer 0 head 0" in p.stderr and not os.path.exists(out),
            "F64 weights x 1e160 (||M|| past a double) refused, naming the head", p.stderr.strip())

    # 2. Names that try to run a command through the figure step: a newline then gnuplot's shell escape, a
    # backquote, a string that closes the quotes and calls system(), a macro, $(...). None may run.
    canary = os.path.join(work, "CANARY")
    env = dict(os.environ, ATTNLAB_CANARY=canary)
    hostile = ['m\n!touch $ATTNLAB_CANARY\n', 'o`touch $ATTNLAB_CANARY`', 'q"; system("touch $ATTNLAB_CANARY"); "',
               "s'; system('touch $ATTNLAB_CANARY'); '", "@ATTNLAB_CANARY $(touch $ATTNLAB_CANARY) #x"]
    small = st_numpy.write_checkpoint(os.path.join(work, "names", "plain"), tensors, config, 1, meta)
    for i, name in enumerate(hostile):
        model_dir = os.path.join(work, "names", name)
        path = st_numpy.write_checkpoint(model_dir, tensors, config, 1, meta)
        for what, model, out in (("model directory", path, os.path.join(work, "names", f"out-{i}")),
                                 ("--out directory", small, os.path.join(work, "names", name + "-out"))):
            shutil.rmtree(out, ignore_errors=True)
            p = subprocess.run([binary, "--layout", "gpt2", model, "--out", out], capture_output=True, text=True, env=env)
            svg = os.path.join(out, "inspect_skew_share.svg")
            ok = p.returncode == 0 and not os.path.exists(canary) and complete_svg(svg)
            verdict(ok, f"{what} named {name!r}: nothing run, the figure drawn",
                    "" if ok else f"exit {p.returncode}, canary {os.path.exists(canary)}: {p.stderr.strip()}")
            if os.path.exists(canary):
                os.unlink(canary)

    # 3. A model directory whose name is not UTF-8: tables and figure, exit 0, no traceback.
    odd = os.path.join(os.fsencode(work), b"names", b"not-utf8-\xff")
    path = st_numpy.write_checkpoint(os.fsdecode(odd), tensors, config, 1, meta)
    out = os.path.join(work, "names", "out-not-utf8")
    p = subprocess.run([binary, "--layout", "gpt2", path, "--out", out], capture_output=True)
    ok = p.returncode == 0 and complete_svg(os.path.join(out, "inspect_skew_share.svg")) and b"Traceback" not in p.stdout + p.stderr
    verdict(ok, "a model directory named with the byte 0xFF: drawn, exit 0", "" if ok else (p.stdout + p.stderr).decode("utf-8", "replace"))

    # 4. A full disk (a file-size limit, its signal ignored, as a full disk fails writes): the figure is whole or
    # absent, the failure one line and exit status 1; no temporary is left.
    def limited(kib):
        def apply():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
        return apply
    out = os.path.join(work, "full")
    for kib in (2, 8, 16):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        p = subprocess.run([binary, "--layout", "gpt2", small, "--out", out], capture_output=True, text=True, preexec_fn=limited(kib))
        svg = os.path.join(out, "inspect_skew_share.svg")
        leftovers = [f for f in os.listdir(out) if f.startswith(".") and not f.endswith(".lock")]  # the ledger's lock stays
        ok = (p.returncode == 0 and complete_svg(svg)) or (
            p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and not os.path.exists(svg) and not leftovers)
        verdict(ok and "Traceback" not in p.stdout + p.stderr, f"files limited to {kib} KiB: a whole figure or one line and exit 1",
                f"exit {p.returncode}: {p.stderr.strip()}; figure {'whole' if complete_svg(svg) else 'absent or cut'}; leftovers {leftovers}")

    # 5. Layer numbers not written as layer numbers are refused, not skipped.
    for odd_index in ("01", "-1", "1" * 23):
        t = {k.replace("transformer.h.1.", f"transformer.h.{odd_index}."): v for k, v in tensors.items()}
        path = st_numpy.write_checkpoint(os.path.join(work, "index", odd_index[:4]), t, config, 1, meta)
        failures += refused(binary, ["--layout", "gpt2", path], os.path.join(work, "index", "out"), path,
                            f"layer index \"{odd_index}\"", f"layer index {odd_index[:8]}")
        cases += 1

    # 6. --export onto a device, a directory or a symbolic link: refused before anything is read, as --out is.
    ckpt = os.path.join(HERE, "..", "..", "results", "checkpoints", "exact", "seed-0")
    link = os.path.join(work, "export-link")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(os.path.join(work, "export-target"), link)
    os.makedirs(os.path.join(work, "export-dir"), exist_ok=True)
    for what, target in (("/dev/null", "/dev/null"), ("a directory", os.path.join(work, "export-dir")), ("a symbolic link", link)):
        p = subprocess.run([binary, "--layout", "attnlab", ckpt, "--export", target], capture_output=True, text=True)
        ok = p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "--export" in p.stderr and not os.path.exists(
            os.path.join(work, "export-target"))
        verdict(ok, f"--export onto {what}: exit 2, one line", p.stderr.strip())
    return failures, cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inspect", required=True, help="the attnlab_inspect executable")
    ap.add_argument("--workdir", required=True, help="scratch directory (emptied first)")
    ap.add_argument("--check", default="all", choices=["all", "layouts", "caught", "malformed", "robust"])
    a = ap.parse_args()
    work = os.path.join(a.workdir, a.check)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures, cases = 0, 0
    for name, fn in (("layouts", check_layouts), ("caught", check_caught), ("malformed", check_malformed), ("robust", check_robust)):
        if a.check in ("all", name):
            f, c = fn(a.inspect, work)
            failures, cases = failures + f, cases + c
    print(f"inspect_check.py --check {a.check}: {cases - failures} of {cases} passed (seed {SEED})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
