#!/usr/bin/python3
"""Checks tools/vit_torch.py against an independent NumPy reading of vit_spec.md: the loss of every mirrored
method (patches, heads and attention written with explicit loops), gradients against central finite
differences, the Adam step against its closed form, the compare mode on agreeing and disagreeing outputs, and
bad input refused with exit status 2. Exit 77 (skipped) without PyTorch.

usage: tools/test_vit_torch.py [--keep]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MIRROR = os.path.join(HERE, "vit_torch.py")
PYTHON = sys.executable
FAILURES = []

try:
    import numpy as np
    import torch  # noqa: F401  (only to know whether the mirror can run)
except ImportError as e:
    print(f"test_vit_torch: {e.name} is not importable: skipped (Debian: python3-torch)")
    sys.exit(77)

sys.path.insert(0, HERE)
import vit_torch  # noqa: E402


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)
    return cond


# ---------------------------------------------------------------- a NumPy reading of the spec

try:
    from scipy.special import erf
except ImportError:  # scipy is in the Makefile's packages; math.erf entry by entry is only slower
    def erf(x):
        return np.vectorize(math.erf)(x)


def layer_norm(x, gamma, beta):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)  # biased, as PyTorch's
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


def softmax_rows(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def segment_means(x, m):
    n = x.shape[0]
    return np.array([x[s * n // m:(s + 1) * n // m].mean(0) for s in range(m)])


def head_attention(method, q, k, v, e_mat, f_mat, omega, cfg):
    dk = q.shape[1]
    if method == "exact":
        return softmax_rows(q @ k.T / math.sqrt(dk)) @ v
    if method == "symmetric":
        return softmax_rows((q @ k.T + k @ q.T) / (2 * math.sqrt(dk))) @ v
    if method == "linear-elu":
        phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # noqa: E731
        pq, pk = phi(q), phi(k)
        out = np.zeros_like(v)
        for i in range(q.shape[0]):
            w = pk @ pq[i]  # phi(q_i) . phi(k_j) for every j
            out[i] = w @ v / w.sum()
        return out
    if method == "linear-shen":
        return softmax_rows(q) @ (softmax_rows(k.T) @ v)  # softmax of K over positions, per feature
    if method == "linformer":
        return softmax_rows(q @ (e_mat @ k).T / math.sqrt(dk)) @ (f_mat @ v)
    if method == "random-fourier":  # kernel estimate phi(q_i) . phi(k_j) times exp(|k_j|^2 / 2 tau), normalised
        tau, D = math.sqrt(dk), omega.shape[0]
        phi = lambda x: np.concatenate([np.sin(x @ omega.T), np.cos(x @ omega.T)], 1) / math.sqrt(D)  # noqa: E731
        weights = (phi(q) @ phi(k).T) * np.exp((k * k).sum(1) / (2 * tau))[None, :]
        return (weights @ v) / weights.sum(1, keepdims=True)
    if method == "favor":  # sum_r exp(b_ir) exp(a_jr), written out without any rescaling
        s = dk ** -0.25
        y = s * k
        a = y @ omega.T - (y * y).sum(1, keepdims=True) / 2  # (n keys, D)
        b = (s * q) @ omega.T  # (n queries, D)
        weights = np.exp(b) @ np.exp(a).T  # (queries, keys)
        return (weights @ v) / weights.sum(1, keepdims=True)
    if method == "nystrom":
        m = cfg.landmarks
        q_l, k_l = segment_means(q, m), segment_means(k, m)
        f_ker = softmax_rows(q @ k_l.T / math.sqrt(dk))
        a_ker = softmax_rows(q_l @ k_l.T / math.sqrt(dk))
        b_ker = softmax_rows(q_l @ k.T / math.sqrt(dk))
        z = a_ker.T / (np.abs(a_ker).sum(0).max() * np.abs(a_ker).sum(1).max())
        eye = np.eye(m)
        for _ in range(cfg.pinv_iterations):
            az = a_ker @ z
            z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
        return f_ker @ z @ b_ker @ v
    raise AssertionError(method)


def reference_loss(cfg, p, images, labels):
    """Mean cross-entropy, every index written out: patches, heads and tokens by explicit loops."""
    g, s, D, H = cfg.grid, cfg.patch, cfg.D, cfg.H
    dk = D // H
    total = 0.0
    for b in range(images.shape[0]):
        x = (images[b].astype(np.float64) / 255 - 0.2860) / 0.3530
        background = (0 - 0.2860) / 0.3530  # a padding pixel has value 0
        tokens = np.zeros((g * g, s * s))
        for gi in range(g):
            for gj in range(g):
                for pi in range(s):
                    for pj in range(s):
                        y, xx = gi * cfg.stride + pi - cfg.pad, gj * cfg.stride + pj - cfg.pad
                        inside = 0 <= y < cfg.image and 0 <= xx < cfg.image
                        tokens[gi * g + gj, pi * s + pj] = x[y, xx] if inside else background
        h = tokens @ p["embed.W"] + p["embed.b"] + p["embed.pos"]
        for l in range(cfg.L):
            pre = f"block{l}."
            z = layer_norm(h, p[pre + "ln1.gamma"], p[pre + "ln1.beta"])
            q, k, v = (z @ p[pre + f"attn.W{w}"] + p[pre + f"attn.b{w}"] for w in "qkv")
            heads = np.zeros_like(q)
            for hd in range(H):
                cols = slice(hd * dk, (hd + 1) * dk)
                heads[:, cols] = head_attention(cfg.method, q[:, cols], k[:, cols], v[:, cols],
                                                p.get(pre + "attn.method.E"), p.get(pre + "attn.method.F"),
                                                p.get(pre + f"attn.method.omega_head{hd}"), cfg)
            h = h + heads @ p[pre + "attn.Wo"] + p[pre + "attn.bo"]
            z = layer_norm(h, p[pre + "ln2.gamma"], p[pre + "ln2.beta"])
            u = z @ p[pre + "mlp.W1"] + p[pre + "mlp.b1"]
            h = h + (0.5 * u * (1 + erf(u / math.sqrt(2)))) @ p[pre + "mlp.W2"] + p[pre + "mlp.b2"]
        z = layer_norm(h, p["head.ln.gamma"], p["head.ln.beta"])
        logits = z.mean(0) @ p["head.W"] + p["head.b"]
        m = logits.max()
        total += m + math.log(np.exp(logits - m).sum()) - logits[labels[b]]
    return total / images.shape[0]


# ---------------------------------------------------------------- fixtures

def write_checkpoint(directory, method, rng, image=8, patch=4, stride=2, pad=1, D=8, H=2, L=2, mlp=16, projection_k=0,
                     features=0, landmarks=0):
    """A checkpoint as attnlab writes one: manifest.json and a float32 .npy per tensor (random, not the spec's
    init: LayerNorm gains and biases away from 1 and 0 so that their gradients mean something)."""
    os.makedirs(directory)
    n = ((image + 2 * pad - patch) // stride + 1) ** 2
    manifest = {"format": "attnlab-vit-checkpoint", "version": vit_torch.VERSION, "method": method, "D": D, "H": H, "L": L,
                "mlp": mlp, "n": n, "patch": patch, "stride": stride, "pad": pad, "image": image, "classes": 10, "projection_k": projection_k,
                "features": features, "landmarks": landmarks, "pinv_iterations": 0, "seed": 1, "step": 0, "parameters": []}
    cfg = vit_torch.Config(manifest, directory)
    params = {}
    for name, shape in cfg.parameter_shapes():
        scale = 1 / math.sqrt(shape[0]) if len(shape) == 2 else 0.1
        a = rng.standard_normal(shape) * scale + (1.0 if name.endswith("gamma") else 0.0)
        a = a.astype(np.float32)
        np.save(os.path.join(directory, name + ".npy"), a)
        manifest["parameters"].append({"name": name, "file": name + ".npy", "shape": list(shape), "dtype": "float32",
                                       "kind": "parameter"})
        params[name] = a.astype(np.float64)
    for name, shape in cfg.buffer_shapes():  # fixed draws, N(0, 1 / sqrt(d_k)) like random-fourier's
        a = (rng.standard_normal(shape) * cfg.d_k ** -0.25).astype(np.float32)
        np.save(os.path.join(directory, name + ".npy"), a)
        manifest["parameters"].append({"name": name, "file": name + ".npy", "shape": list(shape), "dtype": "float32",
                                       "kind": "buffer"})
        params[name] = a.astype(np.float64)
    with open(os.path.join(directory, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return cfg, params


def write_batch(directory, rng, n_images, image, labels=None):
    os.makedirs(directory, exist_ok=True)
    images = rng.integers(0, 256, size=(n_images, image, image), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n_images).astype(np.uint8) if labels is None else labels
    np.save(os.path.join(directory, "images.npy"), images)
    np.save(os.path.join(directory, "labels.npy"), labels)
    return images, labels


def run(args, env=None):
    return subprocess.run([PYTHON, MIRROR] + args, capture_output=True, text=True, env=env)


def step(ckpt, batch, out, extra=(), env=None):
    return run(["step", "--checkpoint", ckpt, "--images", os.path.join(batch, "images.npy"), "--labels",
                os.path.join(batch, "labels.npy"), "--out", out, *extra], env=env)


# ---------------------------------------------------------------- checks

def check_method(tmp, method, rng):
    ckpt = os.path.join(tmp, method, "ckpt")
    # Options away from their defaults where the defaults would hide something: 5 landmarks split the 16 tokens
    # into segments of 3 and 4; a Linformer k of 5; 7 features for FAVOR+, 64 for random Fourier features, whose
    # signed denominator comes near 0 with few features (its loss then curves too sharply for differences).
    cfg, params = write_checkpoint(ckpt, method, rng, projection_k=5 if method == "linformer" else 0,
                                   features=64 if method == "random-fourier" else 7,
                                   landmarks=5 if method == "nystrom" else 0)
    buffer_names = {n for n, _ in cfg.buffer_shapes()}
    batch = os.path.join(tmp, method, "batch")
    images, labels = write_batch(batch, rng, 3, cfg.image)
    out = os.path.join(tmp, method, "torch")
    res = step(ckpt, batch, out, ["--step", "3", "--total-steps", "10"])
    if not check(res.returncode == 0, f"{method}: step failed: {res.stderr.strip()}"):
        return
    loss = float(np.load(os.path.join(out, "loss.npy"))[0])
    ref = reference_loss(cfg, params, images, labels)
    check(abs(loss - ref) <= 1e-12 * abs(ref), f"{method}: loss {loss!r}, the NumPy reading gives {ref!r}")

    # Gradients against central differences of the NumPy loss, for a few entries of every kind of tensor.
    names = ["embed.W", "embed.pos", "block0.ln1.gamma", "block0.attn.Wq", "block0.attn.bk", "block1.attn.Wv",
             "block1.mlp.W1", "head.ln.beta", "head.W"]
    if method == "linformer":
        names += ["block0.attn.method.E", "block1.attn.method.F"]
    worst = 0.0
    # Scaled by the tensor's largest gradient, or a small fraction of the model's where a tensor's gradient is
    # zero in exact arithmetic (the key bias under exact attention: it shifts a row of scores by a constant).
    model_scale = max(np.abs(np.load(os.path.join(out, "grad", n + ".npy"))).max() for n in params if n not in buffer_names)
    for name in names:
        grad = np.load(os.path.join(out, "grad", name + ".npy"))
        scale = max(np.abs(grad).max(), 1e-6 * model_scale)
        for idx in [tuple(int(rng.integers(0, d)) for d in grad.shape)]:
            h = 1e-5
            saved = params[name][idx]
            params[name][idx] = saved + h
            up = reference_loss(cfg, params, images, labels)
            params[name][idx] = saved - h
            down = reference_loss(cfg, params, images, labels)
            params[name][idx] = saved
            fd = (up - down) / (2 * h)
            # Central differences: O(h^2) truncation, and rounding of the two losses, about eps |loss| / h, which
            # is all a zero gradient can be checked to (the key bias under Nystrom: about 2e-11 here).
            allowed = 1e-6 * scale + 16 * np.finfo(np.float64).eps * abs(ref) / h
            ratio = abs(fd - grad[idx]) / allowed
            worst = max(worst, ratio)
            check(ratio <= 1, f"{method}: d loss / d {name}{list(idx)}: autograd {grad[idx]!r}, differences {fd!r}")
    # Adam from fresh state at step t of T: m_hat = g, v_hat = g^2, so p' = p - lr g / (|g| + eps).
    lr = 5e-4 * (1 + math.cos(math.pi * 3 / 10)) / 2
    meta = json.load(open(os.path.join(out, "step.json")))
    check(abs(meta["lr"] - lr) < 1e-18, f"{method}: lr {meta['lr']}, the schedule gives {lr}")
    for name in params:
        if name in buffer_names:
            check(not os.path.exists(os.path.join(out, "grad", name + ".npy")), f"{method}: buffer {name} has a gradient")
            continue
        g = np.load(os.path.join(out, "grad", name + ".npy"))
        want = params[name] - lr * g / (np.abs(g) + 1e-8)
        got = np.load(os.path.join(out, "updated", name + ".npy"))
        check(np.abs(got - want).max() <= 1e-12 * lr, f"{method}: the Adam step of {name} is not p - lr g / (|g| + eps)")
    print(f"test_vit_torch: {method}: loss {loss:.6f} as the NumPy reading; gradients against central differences, "
          f"worst ratio {worst:.1e}; Adam step as its closed form")
    return ckpt, batch, out


def check_compare(tmp, ckpt, batch, ref):
    res = run(["compare", "--reference", ref, "--candidate", ref])
    check(res.returncode == 0, f"compare of an output with itself failed: {res.stdout[-500:]}")
    # A second run gives the same numbers (deterministic double arithmetic on one thread).
    again = os.path.join(tmp, "again")
    check(step(ckpt, batch, again, ["--step", "3", "--total-steps", "10"]).returncode == 0 and run(["compare", "--reference", ref, "--candidate", again]).returncode == 0,
          "a repeated step does not compare equal")

    def perturbed(label, rel, delta):
        cand = os.path.join(tmp, "cand-" + label)
        shutil.copytree(ref, cand)
        a = np.load(os.path.join(cand, rel))
        a.flat[0] += delta(a)
        np.save(os.path.join(cand, rel), a)
        return run(["compare", "--reference", ref, "--candidate", cand])

    lr = json.load(open(os.path.join(ref, "step.json")))["lr"]
    res = perturbed("grad", os.path.join("grad", "block1.attn.Wk.npy"), lambda a: 1e-6 * np.abs(a).max())
    check(res.returncode == 1 and "grad block1.attn.Wk  FAIL" in res.stdout, f"a gradient off by 1e-6 passed: {res.stdout[-300:]}")
    res = perturbed("updated", os.path.join("updated", "head.b.npy"), lambda a: 0.01 * lr)
    check(res.returncode == 1 and "updated head.b  FAIL" in res.stdout, f"an update off by 0.01 lr passed: {res.stdout[-300:]}")
    res = perturbed("loss", "loss.npy", lambda a: 1e-7 * abs(a[0]))
    check(res.returncode == 1 and "loss  FAIL" in res.stdout, "a loss off by 1e-7 passed")
    res = perturbed("small", "loss.npy", lambda a: 1e-14 * abs(a[0]))
    check(res.returncode == 0, "a loss off by 1e-14 (rounding) failed")
    cand = os.path.join(tmp, "cand-missing")
    shutil.copytree(ref, cand)
    os.remove(os.path.join(cand, "grad", "embed.W.npy"))
    res = run(["compare", "--reference", ref, "--candidate", cand])
    check(res.returncode == 1 and "grad embed.W: " in res.stdout, "a missing gradient passed")


def check_bad_input(tmp, ckpt, batch, rng):
    def refused(res, what, text):
        one_line = res.stderr.strip() != "" and "\n" not in res.stderr.strip()
        check(res.returncode == 2 and one_line and text in res.stderr,
              f"{what}: exit {res.returncode}, stderr {res.stderr.strip()[-300:]!r} (expected exit 2 and '{text}')")

    out = os.path.join(tmp, "bad-out")
    refused(step(os.path.join(tmp, "nope"), batch, out), "missing checkpoint", "manifest.json: no such file")
    bad = os.path.join(tmp, "bad-batch")
    write_batch(bad, rng, 2, 8, labels=np.array([3, 10], dtype=np.uint8))
    refused(step(ckpt, bad, out), "label 10", "labels must lie in 0..9")
    np.save(os.path.join(bad, "labels.npy"), np.array([1, 2], dtype=np.int64))
    np.save(os.path.join(bad, "images.npy"), np.zeros((2, 8, 8), dtype=np.float32))
    refused(step(ckpt, bad, out), "float images", "expected uint8 (N, 8, 8)")
    np.save(os.path.join(bad, "images.npy"), np.zeros((2, 28, 28), dtype=np.uint8))
    refused(step(ckpt, bad, out), "images of another size", "expected uint8 (N, 8, 8)")
    np.save(os.path.join(bad, "images.npy"), np.zeros((3, 8, 8), dtype=np.uint8))
    refused(step(ckpt, bad, out), "3 images, 2 labels", "expected 3 integer labels")

    def edited(tag, edit):
        c = os.path.join(tmp, "ckpt-" + tag)
        shutil.copytree(ckpt, c)
        m = json.load(open(os.path.join(c, "manifest.json")))
        edit(m, c)
        json.dump(m, open(os.path.join(c, "manifest.json"), "w"))
        return c

    refused(step(edited("method", lambda m, c: m.update(method="performer")), batch, out), "unknown method", "not mirrored")
    refused(step(edited("buffers", lambda m, c: m.update(method="favor")), batch, out), "favor without its draws",
            "missing block0.attn.method.omega_head0")
    refused(step(edited("format", lambda m, c: m.update(format="x")), batch, out), "other format", "not an attnlab-vit-checkpoint")
    refused(step(edited("L", lambda m, c: m.update(L=3)), batch, out), "L = 3 with two blocks' tensors", "missing block2.ln1.gamma")
    refused(step(edited("n", lambda m, c: m.update(n=15)), batch, out), "n not the window grid's", "n = 15 is not")
    refused(step(edited("stride", lambda m, c: m.update(stride=4)), batch, out), "windows that do not tile",
            "do not tile the 8x8 image")
    refused(step(edited("shape", lambda m, c: np.save(os.path.join(c, "head.b.npy"), np.zeros(9, np.float32))), batch, out),
            "a tensor of the wrong shape", "the manifest says float32 (10,) for head.b")
    refused(run(["step", "--checkpoint", ckpt, "--images", os.path.join(batch, "images.npy"), "--labels",
                 os.path.join(batch, "labels.npy"), "--out", out, "--step", "5", "--total-steps", "5"]),
            "step beyond the schedule", "--step 5 must lie in [0, --total-steps 5)")


def check_without_torch(tmp, ckpt, batch):
    fake = os.path.join(tmp, "no-torch", "torch")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as f:
        f.write("raise ImportError('simulated: no torch here', name='torch')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
    res = step(ckpt, batch, os.path.join(tmp, "no-torch-out"), env=env)
    check(res.returncode == 77 and "python3-torch" in res.stderr, f"without torch: exit {res.returncode}, {res.stderr.strip()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(20250311)
    tmp = tempfile.mkdtemp(prefix="attnlab-vit-torch-")
    try:
        runs = {m: check_method(tmp, m, rng) for m in vit_torch.METHODS}
        if runs.get("exact"):
            ckpt, batch, out = runs["exact"]
            check_compare(tmp, ckpt, batch, out)
            check_bad_input(tmp, ckpt, batch, rng)
            check_without_torch(tmp, ckpt, batch)
        # The spec's default widths (D 64, H 4, L 2, MLP 128, 28 x 28 images, n = 196) run too.
        cfg, _ = write_checkpoint(os.path.join(tmp, "full", "ckpt"), "exact", rng, image=28, D=64, H=4, L=2, mlp=128)
        write_batch(os.path.join(tmp, "full", "batch"), rng, 2, 28)
        res = step(os.path.join(tmp, "full", "ckpt"), os.path.join(tmp, "full", "batch"), os.path.join(tmp, "full", "out"))
        check(res.returncode == 0 and cfg.n == 196, f"the default-width model: {res.stderr.strip()}")
    finally:
        if args.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp)
    if FAILURES:
        print(f"test_vit_torch: {len(FAILURES)} failure(s)")
        sys.exit(1)
    print("test_vit_torch: the PyTorch mirror agrees with the NumPy reading of the spec")


if __name__ == "__main__":
    main()
