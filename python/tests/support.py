"""What the Python module's tests share: the build's programs, random inputs, and attend and attnlab_inspect run on the
same inputs as the module (run_pytest.py sets ATTNLAB_BUILD)."""
import os
import re
import subprocess
import sys

import numpy as np

BUILD = os.environ.get("ATTNLAB_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
BIN = os.path.join(BUILD, "bin")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED = int(os.environ.get("ATTNLAB_TEST_SEED", "20250311"))
print(f"test seed {SEED} (ATTNLAB_TEST_SEED)", file=sys.stderr)

METHODS = ["exact", "streaming", "linear-shen", "linear-elu", "linformer", "random-fourier", "favor", "nystrom"]
FAST = ["exact", "streaming", "linear-shen", "linear-elu", "linformer", "nystrom"]
RANDOM = {"linformer", "random-fourier", "favor"}


def rng(offset=0):
    return np.random.default_rng(SEED + offset)


def qkv(r, shape, dtype, n_k=None, d_v=None, scale=1.0):
    """Q, K, V of shape (..., n, d): K and V with n_k rows, V with d_v columns."""
    *lead, n, d = shape
    n_k = n if n_k is None else n_k
    d_v = d if d_v is None else d_v
    q = (scale * r.standard_normal((*lead, n, d))).astype(dtype)
    k = (scale * r.standard_normal((*lead, n_k, d))).astype(dtype)
    v = r.standard_normal((*lead, n_k, d_v)).astype(dtype)
    return q, k, v


def flags(method, params):
    """attend's command line for the module's keywords: landmarks=8 -> --landmarks=8, share_kv=True -> --share-kv."""
    out = [f"--method={method}"]
    for key, value in params.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not False and value is not None:
            out.append(f"{flag}={value!r}" if isinstance(value, float) else f"{flag}={value}")
    return out


def run(program, args, timeout=300):
    return subprocess.run([os.path.join(BIN, program)] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def attend_cli(tmp, q, k, v, method="exact", extra=(), **params):
    """bin/attend on .npy files of q, k, v: (status, output array or None, stderr)."""
    paths = {}
    for name, a in (("q", q), ("k", k), ("v", v)):
        paths[name] = os.path.join(tmp, f"{name}.npy")
        np.save(paths[name], a)
    out = os.path.join(tmp, "out.npy")
    if os.path.exists(out):
        os.unlink(out)
    dtype = "float" if np.asarray(q).dtype == np.float32 else "double"
    r = run("attend", ["--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", out, "--dtype", dtype]
            + flags(method, params) + list(extra))
    return r.returncode, (np.load(out) if r.returncode == 0 else None), r.stderr


def cli_line(stderr, program, files=None):
    """The one line a program printed for bad input, as the module words it: without "<program>: " and with each
    "--flag: PATH" of `files` {PATH: flag} as "--flag"."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"{program} printed {len(lines)} lines: {stderr!r}"
    line = lines[0]
    assert line.startswith(program + ": "), line
    line = line[len(program) + 2:]
    for path, flag in (files or {}).items():
        line = line.replace(f"{flag}: {path}", flag)
    return line


def mask_memory(text):
    """Memory figures change between two processes: 'about 74.51 GiB' -> 'about X GiB'."""
    return re.sub(r"\d+(\.\d+)? (GiB|MiB|KiB|bytes)", "X \\2", text)
