#!/usr/bin/python3
"""The PyTorch 1.13 mirror of attnlab's ViT (vit_spec.md, issue 14) and of its recall model (recall_spec.md): one
training step in double, for checking the hand-written forward, backward and Adam update against PyTorch autograd
on the same weights and batch.

  step     loads an attnlab checkpoint directory (manifest.json + float32 .npy files) and a batch (a ViT's:
           images.npy: uint8, N x image x image; labels.npy: integers 0..9, N. A recall model's: keys.npy,
           values.npy, labels.npy: integers, N x 2P, as recall_spec.md's test set on disk: -1 where a token has no
           value or no label), converts everything to double, computes the loss (mean cross-entropy, over the
           images or over the queries), every parameter's gradient by autograd, and one torch.optim.Adam step
           (betas 0.9, 0.999, eps 1e-8, no weight decay, fresh state) at the cosine-annealed learning rate of
           step --step of --total-steps (5e-4 * (1 + cos(pi t / T)) / 2; --lr overrides it). Writes into --out:
             loss.npy              (1,)        float64, the batch's mean cross-entropy
             logits.npy            (N, 10)     float64 (a recall model: one row per query, in position order)
             grad/<name>.npy       as the parameter, float64, dL/d<name>
             updated/<name>.npy    as the parameter, float64, the parameter after the Adam step
             step.json             method, lr, batch size, parameter names in manifest order
           Buffers (kind "buffer": fixed random draws) are inputs only: no gradient, no update.
  compare  compares a directory in that layout (e.g. written by attnlab) against one written by `step`:
           per tensor the largest absolute difference divided by a scale (the reference tensor's largest
           magnitude for the loss, logits and gradients (at least a millionth of the largest gradient of the model,
           for gradients that are zero but for rounding), against --tol; the learning rate for updated
           parameters, since an Adam step moves each entry by at most about lr, against --tol-update). Prints
           one line per tensor, the worst first, as llm.c's test_gpt2.c does; exit 0 when all pass, 1 otherwise.

Mirrored attention methods: all eight of attention/trainable.hpp: exact, symmetric, linear-elu, linear-shen,
linformer (its learned E and F), random-fourier and favor (their fixed per-head draws, read from the checkpoint's
buffers), nystrom (segment-mean landmarks, the iterative pseudoinverse differentiated through every iterate); and
the recall model's no-attention-baseline (the identity in place of attention).

Exit status 2 with one line for bad input (a missing file, a manifest that does not describe the model, a
batch of the wrong shape or type); 77 when PyTorch or NumPy is not importable (Debian: python3-torch).

usage: tools/vit_torch.py step --checkpoint DIR (--images images.npy | --keys keys.npy --values values.npy)
                              --labels labels.npy --out DIR [--step T --total-steps N | --lr LR] [--threads N]
       tools/vit_torch.py compare --reference DIR --candidate DIR [--tol 1e-9] [--tol-update 1e-6]
"""
import argparse
import json
import math
import os
import sys


def missing(e):
    """The check that runs us is skipped, not failed, on a machine without PyTorch (exit 77)."""
    print(f"vit_torch: {e.name or 'a module'} is not importable ({e}); install Debian's python3-torch "
          "(and python3-numpy) to run the PyTorch mirror", file=sys.stderr)
    sys.exit(77)


try:
    import numpy as np
except ImportError as e:
    missing(e)
torch = F = None  # imported by require_torch(): bad input and `compare` need NumPy only


def require_torch():
    global torch, F
    try:
        import torch as torch_module
        import torch.nn.functional as functional
    except ImportError as e:
        missing(e)
    torch, F = torch_module, functional

FORMAT = "attnlab-vit-checkpoint"
VERSION = 2  # version 2 added the patch windows' stride and pad
RECALL_FORMAT, RECALL_VERSION = "attnlab-recall-checkpoint", 1
NO_ATTENTION = "no-attention-baseline"  # the recall model's baseline: the identity in place of attention
PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530  # the training set's, fixed (vit_spec.md)
LN_EPS = 1e-5
PEAK_LR = 5e-4
ADAM = dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
METHODS = ("exact", "symmetric", "linear-elu", "linear-shen", "linformer", "random-fourier", "favor", "nystrom")
DEFAULT_FEATURES = 256  # random-fourier, favor (attention/random_features_train.hpp)
DEFAULT_PINV_ITERATIONS = 6  # nystrom (Nystromformer's; linalg/iterative_pinv.hpp)


class InputError(Exception):
    """Bad input: reported as one line, exit status 2."""


# ---------------------------------------------------------------- the model

class Config:
    def __init__(self, manifest, where):
        try:
            self.method = str(manifest["method"])
            self.D, self.H, self.L, self.mlp = (int(manifest[k]) for k in ("D", "H", "L", "mlp"))
            self.patch, self.n = int(manifest["patch"]), int(manifest["n"])
            self.stride, self.pad = int(manifest["stride"]), int(manifest["pad"])
            self.image = int(manifest.get("image", 28))
            self.classes = int(manifest.get("classes", 10))
            self.projection_k = int(manifest.get("projection_k", 0))
            self.features = int(manifest.get("features", 0)) or DEFAULT_FEATURES
            self.landmarks = int(manifest.get("landmarks", 0)) or min(64, int(manifest["n"]))
            self.pinv_iterations = int(manifest.get("pinv_iterations", 0)) or DEFAULT_PINV_ITERATIONS
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{where}: manifest.json lacks a valid {e}")
        if self.method not in METHODS:
            raise InputError(f"{where}: method '{self.method}' is not mirrored in PyTorch (mirrored: {', '.join(METHODS)})")
        if min(self.D, self.H, self.L, self.mlp, self.patch, self.image, self.classes) < 1 or self.D % self.H:
            raise InputError(f"{where}: widths D = {self.D}, H = {self.H}, L = {self.L}, mlp = {self.mlp} do not describe a model")
        span = self.image + 2 * self.pad - self.patch
        if self.stride < 1 or not 0 <= self.pad < self.patch or span < 0 or span % self.stride:
            raise InputError(f"{where}: patch windows (patch {self.patch}, stride {self.stride}, pad {self.pad}) do not tile "
                             f"the {self.image}x{self.image} image")
        self.grid = span // self.stride + 1
        if self.grid ** 2 != self.n:
            raise InputError(f"{where}: n = {self.n} is not ((image + 2 pad - patch) / stride + 1)^2 = {self.grid ** 2}")
        self.d_k = self.D // self.H
        if self.method == "nystrom" and not 1 <= self.landmarks <= self.n:
            raise InputError(f"{where}: landmarks = {self.landmarks} must lie in [1, n = {self.n}]")

    def buffer_shapes(self):
        """The fixed random draws (kind "buffer"): one (features, d_k) matrix per head and layer for random-fourier
        and favor, none for the other methods."""
        if self.method not in ("random-fourier", "favor"):
            return []
        return [(f"block{l}.attn.method.omega_head{h}", (self.features, self.d_k)) for l in range(self.L) for h in range(self.H)]

    kind = "vit"

    def block_shapes(self):
        """The blocks' tensors, in manifest order (vit_spec.md, shared by both models)."""
        D, shapes = self.D, []
        for l in range(self.L):
            b = f"block{l}."
            shapes += [(b + "ln1.gamma", (D,)), (b + "ln1.beta", (D,))]
            for w in "qkvo":
                shapes += [(b + f"attn.W{w}", (D, D)), (b + f"attn.b{w}", (D,))]
            if self.method == "linformer":
                kp = self.projection_k or math.ceil(self.n / 8)
                shapes += [(b + "attn.method.E", (kp, self.n)), (b + "attn.method.F", (kp, self.n))]
            shapes += [(b + "ln2.gamma", (D,)), (b + "ln2.beta", (D,)), (b + "mlp.W1", (D, self.mlp)),
                       (b + "mlp.b1", (self.mlp,)), (b + "mlp.W2", (self.mlp, D)), (b + "mlp.b2", (D,))]
        return shapes

    def parameter_shapes(self):
        """Every learned tensor, in manifest order (vit_spec.md), with its shape in the y = x W convention."""
        D, P = self.D, self.patch * self.patch
        return ([("embed.W", (P, D)), ("embed.b", (D,)), ("embed.pos", (self.n, D))] + self.block_shapes() +
                [("head.ln.gamma", (D,)), ("head.ln.beta", (D,)), ("head.W", (D, self.classes)), ("head.b", (self.classes,))])


class RecallConfig(Config):
    """A recall model's manifest (recall_spec.md): the task's sizes and the same blocks."""
    kind = "recall"

    def __init__(self, manifest, where):
        try:
            self.method = str(manifest["method"])
            self.D, self.H, self.L, self.mlp = (int(manifest[k]) for k in ("D", "H", "L", "mlp"))
            self.pairs, self.keys, self.values, self.n = (int(manifest[k]) for k in ("pairs", "keys", "values", "n"))
            self.projection_k = int(manifest.get("projection_k", 0))
            self.features = int(manifest.get("features", 0)) or DEFAULT_FEATURES
            self.landmarks = int(manifest.get("landmarks", 0)) or min(64, self.n)
            self.pinv_iterations = int(manifest.get("pinv_iterations", 0)) or DEFAULT_PINV_ITERATIONS
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{where}: manifest.json lacks a valid {e}")
        if self.method not in METHODS + (NO_ATTENTION,):
            raise InputError(f"{where}: method '{self.method}' is not mirrored in PyTorch (mirrored: {', '.join(METHODS + (NO_ATTENTION,))})")
        if min(self.D, self.H, self.L, self.mlp, self.pairs, self.values) < 1 or self.D % self.H or self.keys < self.pairs \
                or self.values > 256 or self.n != 2 * self.pairs:
            raise InputError(f"{where}: pairs {self.pairs}, keys {self.keys}, values {self.values}, n {self.n}, D {self.D}, "
                             f"H {self.H} do not describe a recall model")
        self.d_k = self.D // self.H
        self.classes = self.values
        if self.method == "nystrom" and not 1 <= self.landmarks <= self.n:
            raise InputError(f"{where}: landmarks = {self.landmarks} must lie in [1, n = {self.n}]")

    def parameter_shapes(self):
        """Every learned tensor, in manifest order (recall_spec.md)."""
        D = self.D
        return ([("embed.keys", (self.keys, D)), ("embed.values", (self.values, D)), ("embed.query", (1, D))] +
                self.block_shapes() +
                [("head.ln.gamma", (D,)), ("head.ln.beta", (D,)), ("head.W", (D, self.values)), ("head.b", (self.values,))])


def segment_means(x, m):
    """Landmarks: segment s averages rows floor(s n / m) .. floor((s + 1) n / m) - 1 of x (..., n, d)."""
    n = x.shape[-2]
    avg = torch.zeros(m, n, dtype=x.dtype)
    for s in range(m):
        lo, hi = s * n // m, (s + 1) * n // m
        avg[s, lo:hi] = 1.0 / (hi - lo)
    return avg @ x


def attention(method, q, k, v, p, prefix, cfg=None):
    """Head outputs (N, H, n, d_k) from projected q, k, v (N, H, n, d_k); the method applies its own scale."""
    scale = q.shape[-1] ** -0.5
    if method == NO_ATTENTION:  # the recall model's baseline: each token's own value
        return v
    if method == "exact":
        return torch.softmax(q @ k.transpose(-1, -2) * scale, -1) @ v
    if method == "symmetric":  # seed 000: scores of S_w = (W_Q W_K^T + W_K W_Q^T) / 2
        s = q @ k.transpose(-1, -2)
        return torch.softmax((s + s.transpose(-1, -2)) * (scale / 2), -1) @ v
    if method == "linear-elu":  # Katharopoulos et al.: phi(Q) (phi(K)^T V) / (phi(Q) sum_j phi(k_j)), no scale
        phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
        return (phi_q @ (phi_k.transpose(-1, -2) @ v)) / (phi_q @ phi_k.sum(-2).unsqueeze(-1))
    if method == "linear-shen":  # Shen et al.: softmax over each query's features, over positions per key feature
        return torch.softmax(q, -1) @ (torch.softmax(k, -2).transpose(-1, -2) @ v)
    if method == "linformer":  # learned E, F (kp x n), shared by the layer's heads, separate for keys and values
        e, f = p[prefix + "attn.method.E"], p[prefix + "attn.method.F"]
        return torch.softmax(q @ (e @ k).transpose(-1, -2) * scale, -1) @ (f @ v)
    if method in ("random-fourier", "favor"):  # each head's fixed draw W (features x d_k), stacked: (H, features, d_k)
        w = torch.stack([p[f"{prefix}attn.method.omega_head{h}"] for h in range(q.shape[1])])
        if method == "random-fourier":
            # phi(x) = sqrt(1/D) [sin(x W^T), cos(x W^T)], W ~ N(0, I / tau), tau = sqrt(d_k); each key weighted by
            # exp(|k_j|^2 / 2 tau) (the queries' factor cancels); the denominator is signed.
            tau = q.shape[-1] ** 0.5
            c = w.shape[-2] ** -0.5
            feats = lambda x: c * torch.cat([torch.sin(x @ w.transpose(-1, -2)), torch.cos(x @ w.transpose(-1, -2))], -1)  # noqa: E731
            sq = (k * k).sum(-1, keepdim=True)
            phi_k = feats(k) * torch.exp((sq - sq.amax(-2, keepdim=True)) / (2 * tau))  # a common factor: cancels
            phi_q = feats(q)
            return (phi_q @ (phi_k.transpose(-1, -2) @ v)) / (phi_q @ phi_k.sum(-2).unsqueeze(-1))
        # FAVOR+: a_jr = w_r . y_j - |y_j|^2 / 2 with y = d_k^(-1/4) k, b_ir = w_r . d_k^(-1/4) q_i;
        # out_i = sum_r softmax_r(b_ir + log sum_j exp(a_jr)) sum_j softmax_j(a_jr) v_j.
        s = q.shape[-1] ** -0.25
        y = s * k
        a = y @ w.transpose(-1, -2) - (y * y).sum(-1, keepdim=True) / 2
        logits = (s * q) @ w.transpose(-1, -2) + torch.logsumexp(a, -2, keepdim=True)
        return torch.softmax(logits, -1) @ (torch.softmax(a, -2).transpose(-1, -2) @ v)
    if method == "nystrom":  # F Z (B V): segment-mean landmarks, Nystromformer's iterative pseudoinverse
        m = cfg.landmarks
        q_l, k_l = segment_means(q, m), segment_means(k, m)
        f_ker = torch.softmax(q @ k_l.transpose(-1, -2) * scale, -1)
        a_ker = torch.softmax(q_l @ k_l.transpose(-1, -2) * scale, -1)
        b_ker = torch.softmax(q_l @ k.transpose(-1, -2) * scale, -1)
        # Z_0 = A^T / (||A||_1 ||A||_inf) per matrix, differentiated through its scale too.
        alpha = 1 / (a_ker.abs().sum(-2).amax(-1) * a_ker.abs().sum(-1).amax(-1))
        z = alpha[..., None, None] * a_ker.transpose(-1, -2)
        eye = torch.eye(m, dtype=q.dtype)
        for _ in range(cfg.pinv_iterations):
            az = a_ker @ z
            z = (0.25 * z) @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
        return f_ker @ (z @ (b_ker @ v))
    raise AssertionError(method)


def forward(cfg, p, images):
    """Logits (N, classes) of uint8 images (N, image, image) under parameters p (name -> tensor)."""
    # The image zero-padded (background pixels), then patch x patch windows every `stride` pixels, in row-major
    # order over the grid, pixels row-major inside a window (unfold's order): (N, n, patch^2).
    padded = F.pad(images.to(p["embed.W"].dtype).unsqueeze(1), (cfg.pad,) * 4)
    x = (padded / 255 - PIXEL_MEAN) / PIXEL_STD
    tokens = F.unfold(x, cfg.patch, stride=cfg.stride).transpose(1, 2)
    h = blocks(cfg, p, tokens @ p["embed.W"] + p["embed.b"] + p["embed.pos"])
    z = F.layer_norm(h, (cfg.D,), p["head.ln.gamma"], p["head.ln.beta"], eps=LN_EPS)
    return z.mean(1) @ p["head.W"] + p["head.b"]


def blocks(cfg, p, h):
    """The pre-LayerNorm blocks (vit_spec.md, shared by both models) on h (N, n, D)."""
    N, D, H, dk = h.shape[0], cfg.D, cfg.H, cfg.d_k
    for l in range(cfg.L):
        b = f"block{l}."
        z = F.layer_norm(h, (D,), p[b + "ln1.gamma"], p[b + "ln1.beta"], eps=LN_EPS)
        # Head h is columns h*d_k .. (h+1)*d_k - 1 of Q, K, V: (N, n, D) -> (N, H, n, d_k).
        q, k, v = ((z @ p[b + f"attn.W{w}"] + p[b + f"attn.b{w}"]).reshape(N, cfg.n, H, dk).transpose(1, 2) for w in "qkv")
        heads = attention(cfg.method, q, k, v, p, b, cfg).transpose(1, 2).reshape(N, cfg.n, D)
        h = h + heads @ p[b + "attn.Wo"] + p[b + "attn.bo"]
        z = F.layer_norm(h, (D,), p[b + "ln2.gamma"], p[b + "ln2.beta"], eps=LN_EPS)
        h = h + F.gelu(z @ p[b + "mlp.W1"] + p[b + "mlp.b1"]) @ p[b + "mlp.W2"] + p[b + "mlp.b2"]  # exact erf GELU
    return h


def forward_recall(cfg, p, keys, values, labels):
    """Logits (queries, V) of recall sequences (keys, values, labels: int64 (N, n), -1 where a token has none): the
    token embedding, the blocks, and at every query (labels >= 0, sequence by sequence in position order) the final
    LayerNorm and the head (recall_spec.md)."""
    context = values >= 0
    x = p["embed.keys"][keys] + torch.where(context.unsqueeze(-1), p["embed.values"][values.clamp(min=0)],
                                            p["embed.query"][0].expand(*keys.shape, cfg.D))
    h = blocks(cfg, p, x)
    z = F.layer_norm(h[labels >= 0], (cfg.D,), p["head.ln.gamma"], p["head.ln.beta"], eps=LN_EPS)
    return z @ p["head.W"] + p["head.b"]


def init_parameters(cfg, generator, dtype=None):
    """Fresh parameters as vit_spec.md initialises them (weights and pos N(0, 0.02^2), biases 0, LayerNorm 1 and
    0; Linformer's E, F N(0, 1/k)), drawn from torch's generator: for timing, not for comparison with attnlab."""
    dtype = dtype or torch.float32
    p = {}
    for name, shape in cfg.parameter_shapes():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gamma":
            t = torch.ones(shape, dtype=dtype)
        elif leaf in ("beta",) or (leaf.startswith("b") and len(shape) == 1):
            t = torch.zeros(shape, dtype=dtype)
        elif leaf in ("E", "F"):
            t = torch.randn(shape, generator=generator, dtype=dtype) / math.sqrt(shape[0])
        else:
            t = torch.randn(shape, generator=generator, dtype=dtype) * 0.02
        p[name] = t.requires_grad_(True)
    return p


def init_buffers(cfg, generator, dtype=None):
    """Fixed random draws for random-fourier and favor (Gaussian, std 1 / sqrt(tau) and 1; not attnlab's
    orthogonal FAVOR+ draw): for timing only."""
    dtype = dtype or torch.float32
    std = cfg.d_k ** -0.25 if cfg.method == "random-fourier" else 1.0
    return {name: torch.randn(shape, generator=generator, dtype=dtype) * std for name, shape in cfg.buffer_shapes()}


def cosine_lr(step, total):
    return PEAK_LR * (1 + math.cos(math.pi * step / total)) / 2


# ---------------------------------------------------------------- inputs

def load_npy(path, what):
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file ({what})")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InputError(f"{path}: not a readable .npy file ({str(e).splitlines()[0] if str(e) else type(e).__name__})")


def load_checkpoint(directory):
    """(Config, {name: float64 array} for parameters, {name: float64 array} for buffers), checked against the spec."""
    path = os.path.join(directory, "manifest.json")
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file (not an attnlab checkpoint directory)")
    try:
        manifest = json.load(open(path, encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})")
    if isinstance(manifest, dict) and manifest.get("format") == RECALL_FORMAT and manifest.get("version") == RECALL_VERSION:
        cfg = RecallConfig(manifest, path)
    elif not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise InputError(f"{path}: not an {FORMAT} manifest of version {VERSION} nor an {RECALL_FORMAT} one of version "
                         f"{RECALL_VERSION}")
    else:
        cfg = Config(manifest, path)
    entries = manifest.get("parameters")
    if not isinstance(entries, list):
        raise InputError(f"{path}: \"parameters\" is not a list")
    params, buffers = {}, {}
    for e in entries:
        try:
            name, file, shape = str(e["name"]), str(e["file"]), tuple(int(s) for s in e["shape"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: a parameters entry lacks name, file or shape: {e}")
        if os.path.basename(file) != file or file in ("", ".", ".."):
            raise InputError(f"{path}: {name} names the file '{file}', not a plain file name")
        a = load_npy(os.path.join(directory, file), name)
        if a.shape != shape or a.dtype not in (np.float32, np.float64):
            raise InputError(f"{os.path.join(directory, file)}: {a.dtype} {a.shape}, the manifest says float32 {shape} for {name}")
        if not np.all(np.isfinite(a)):
            raise InputError(f"{os.path.join(directory, file)}: non-finite values in {name}")
        (buffers if e.get("kind") == "buffer" else params)[name] = a.astype(np.float64)
    want = cfg.parameter_shapes()
    if [n for n, _ in want] != list(params):
        missing = [n for n, _ in want if n not in params]
        extra = [n for n in params if n not in dict(want)]
        detail = (f"missing {', '.join(missing)}" if missing else "") + ("; " if missing and extra else "") + \
                 (f"unexpected {', '.join(extra)}" if extra else "") or "the parameters are not in manifest order"
        raise InputError(f"{path}: the parameters do not match a {cfg.method} {cfg.kind} model with L = {cfg.L}: {detail}")
    for name, shape in want:
        if tuple(params[name].shape) != shape:
            raise InputError(f"{path}: {name} has shape {tuple(params[name].shape)}, the model needs {shape}")
    want_buffers = dict(cfg.buffer_shapes())
    if set(want_buffers) != set(buffers):
        missing = sorted(set(want_buffers) - set(buffers))
        extra = sorted(set(buffers) - set(want_buffers))
        raise InputError(f"{path}: the buffers do not match a {cfg.method} {cfg.kind} model: "
                         + "; ".join(x for x in (f"missing {', '.join(missing)}" if missing else "",
                                                 f"unexpected {', '.join(extra)}" if extra else "") if x))
    for name, shape in want_buffers.items():
        if tuple(buffers[name].shape) != shape:
            raise InputError(f"{path}: buffer {name} has shape {tuple(buffers[name].shape)}, the model needs {shape}")
    return cfg, params, buffers


def load_batch(images_path, labels_path, cfg):
    images = load_npy(images_path, "the batch's images")
    labels = load_npy(labels_path, "the batch's labels")
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (cfg.image, cfg.image) or images.shape[0] < 1:
        raise InputError(f"{images_path}: {images.dtype} {images.shape}; expected uint8 (N, {cfg.image}, {cfg.image}) with N >= 1")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0] or labels.dtype.kind not in "iu":
        raise InputError(f"{labels_path}: {labels.dtype} {labels.shape}; expected {images.shape[0]} integer labels")
    if labels.size and (labels.min() < 0 or labels.max() >= cfg.classes):
        raise InputError(f"{labels_path}: labels must lie in 0..{cfg.classes - 1} (found {labels.min()}..{labels.max()})")
    return images, labels.astype(np.int64)


def load_recall_batch(keys_path, values_path, labels_path, cfg):
    """keys, values, labels (int64 (N, n)) of recall sequences, checked against the model's task."""
    arrays = [load_npy(path, what) for path, what in ((keys_path, "the batch's keys"), (values_path, "the batch's values"),
                                                        (labels_path, "the batch's labels"))]
    for a, path in zip(arrays, (keys_path, values_path, labels_path)):
        if a.ndim != 2 or a.shape[1] != cfg.n or a.shape[0] < 1 or a.dtype.kind not in "iu" or a.shape != arrays[0].shape:
            raise InputError(f"{path}: {a.dtype} {a.shape}; expected integers (N, {cfg.n}) with N >= 1, as the other arrays")
    keys, values, labels = (a.astype(np.int64) for a in arrays)
    if keys.min() < 0 or keys.max() >= cfg.keys or values.min() < -1 or values.max() >= cfg.values or labels.min() < -1 \
            or labels.max() >= cfg.values or np.any((values >= 0) == (labels >= 0)):
        raise InputError(f"{keys_path}: tokens outside the task (keys 0..{cfg.keys - 1}, values and labels -1..{cfg.values - 1}, "
                         "each token a value or a label)")
    return keys, values, labels


# ---------------------------------------------------------------- commands

def training_step(cfg, params, buffers, batch, lr):
    """loss, logits, {name: gradient}, {name: updated parameter} (tensors) of NumPy float64 parameters and buffers and
    a batch (a ViT's: uint8 images and int64 labels; a recall model's: int64 keys, values, labels): one step of
    torch.optim.Adam from fresh state."""
    p = {n: torch.from_numpy(a.copy()).requires_grad_(True) for n, a in params.items()}
    fixed = {n: torch.from_numpy(a.copy()) for n, a in buffers.items()}
    if cfg.kind == "recall":
        keys, values, labels = (torch.from_numpy(a.copy()) for a in batch)
        logits = forward_recall(cfg, {**p, **fixed}, keys, values, labels)
        targets = labels[labels >= 0]
    else:
        images, labels = batch
        logits = forward(cfg, {**p, **fixed}, torch.from_numpy(images.copy()))
        targets = torch.from_numpy(labels)
    loss = F.cross_entropy(logits, targets)
    opt = torch.optim.Adam(list(p.values()), lr=lr, **ADAM)
    opt.zero_grad()
    loss.backward()
    # A parameter the loss does not reach (W_q, W_k beside the identity of the recall model's baseline) has no grad:
    # its gradient is zero, as attnlab's, and Adam leaves it where it is on both sides.
    grads = {n: t.grad.detach().clone() if t.grad is not None else torch.zeros_like(t) for n, t in p.items()}
    opt.step()
    return loss.detach(), logits.detach(), grads, {n: t.detach().clone() for n, t in p.items()}


def cmd_step(args):
    cfg, params, buffers = load_checkpoint(args.checkpoint)
    if cfg.kind == "recall":
        if not args.keys or not args.values or args.images:
            raise InputError("a recall model's batch is --keys, --values and --labels")
        batch = load_recall_batch(args.keys, args.values, args.labels, cfg)
    else:
        if not args.images or args.keys or args.values:
            raise InputError("a ViT's batch is --images and --labels")
        batch = load_batch(args.images, args.labels, cfg)
    if args.lr is not None:
        lr = args.lr
    else:
        if args.total_steps < 1 or not 0 <= args.step < args.total_steps:
            raise InputError(f"--step {args.step} must lie in [0, --total-steps {args.total_steps})")
        lr = cosine_lr(args.step, args.total_steps)
    require_torch()
    torch.set_num_threads(args.threads)
    loss, logits, grads, updated = training_step(cfg, params, buffers, batch, lr)
    for sub in ("grad", "updated"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    np.save(os.path.join(args.out, "loss.npy"), loss.reshape(1).numpy())
    np.save(os.path.join(args.out, "logits.npy"), logits.numpy())
    for name in params:
        np.save(os.path.join(args.out, "grad", name + ".npy"), grads[name].numpy())
        np.save(os.path.join(args.out, "updated", name + ".npy"), updated[name].numpy())
    with open(os.path.join(args.out, "step.json"), "w") as f:
        json.dump({"method": cfg.method, "lr": lr, "batch": int(batch[0].shape[0]), "torch": torch.__version__,
                   "parameters": list(params)}, f, indent=1)
    print(f"vit_torch: {cfg.kind} {cfg.method}, batch {batch[0].shape[0]}, loss {loss.item():.17g}, lr {lr:.6g}: "
          f"{len(params)} gradients and updated parameters in {args.out}")
    return 0


def cmd_compare(args):
    meta_path = os.path.join(args.reference, "step.json")
    if not os.path.isfile(meta_path):
        raise InputError(f"{meta_path}: no such file (the reference must be written by `vit_torch.py step`)")
    meta = json.load(open(meta_path))
    lr = float(meta["lr"])
    tensors = [("loss", "loss.npy"), ("logits", "logits.npy")]
    tensors += [(f"grad {n}", os.path.join("grad", n + ".npy")) for n in meta["parameters"]]
    tensors += [(f"updated {n}", os.path.join("updated", n + ".npy")) for n in meta["parameters"]]
    rows, problems = [], []
    # A gradient that is zero in exact arithmetic (the key bias under exact attention shifts a row of scores
    # by a constant) is rounding noise on both sides: it is scaled by a millionth of the model's largest
    # gradient rather than by its own noise.
    grad_floor = 1e-6 * max(float(np.max(np.abs(load_npy(os.path.join(args.reference, rel), label)), initial=0.0))
                            for label, rel in tensors if label.startswith("grad"))
    for label, rel in tensors:
        ref = load_npy(os.path.join(args.reference, rel), label)
        cand_path = os.path.join(args.candidate, rel)
        if not os.path.isfile(cand_path):
            problems.append(f"{label}: {cand_path} is missing")
            continue
        cand = load_npy(cand_path, label)
        if cand.shape != ref.shape:
            problems.append(f"{label}: shape {cand.shape}, the reference has {ref.shape}")
            continue
        diff = float(np.max(np.abs(cand.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0
        # An Adam step moves an entry by at most about lr: the update's error is measured in steps.
        own = float(np.max(np.abs(ref))) if ref.size else 0.0
        scale = lr if label.startswith("updated") else max(own, grad_floor if label.startswith("grad") else 0.0, 1e-300)
        ratio = diff / scale if math.isfinite(diff) else math.inf
        tol = args.tol_update if label.startswith("updated") else args.tol
        rows.append((ratio / tol, ratio, label, diff, scale, tol))
    rows.sort(key=lambda r: (-r[0], r[2]))
    print(f"{'ratio':>10}  {'tolerance':>9}  {'max |diff|':>10}  {'scale':>10}  tensor (ratio = max |diff| / scale)")
    for share, ratio, label, diff, scale, tol in rows:
        print(f"{ratio:10.3e}  {tol:9.0e}  {diff:10.3e}  {scale:10.3e}  {label}{'' if share <= 1 else '  FAIL'}")
    failed = [r for r in rows if not r[0] <= 1]
    for p in problems:
        print("FAIL:", p)
    if failed or problems:
        print(f"vit_torch compare: {len(failed) + len(problems)} of {len(tensors)} tensors disagree")
        return 1
    print(f"vit_torch compare: all {len(tensors)} tensors agree (closest to its tolerance: {rows[0][2]}, ratio {rows[0][1]:.3e})")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    st = sub.add_parser("step", help="one training step in double: loss, gradients, Adam-updated parameters")
    st.add_argument("--checkpoint", required=True, help="attnlab checkpoint directory (manifest.json + .npy)")
    st.add_argument("--images", help="a ViT's batch: uint8 .npy, N x image x image")
    st.add_argument("--keys", help="a recall model's batch: integer .npy, N x n (recall_spec.md)")
    st.add_argument("--values", help="a recall model's batch: integer .npy, N x n, -1 at a query")
    st.add_argument("--labels", required=True, help="integer .npy: N labels (a ViT), or N x n, -1 at a context token (recall)")
    st.add_argument("--out", required=True, help="output directory")
    st.add_argument("--step", type=int, default=0, help="the step t of the cosine schedule (default 0)")
    st.add_argument("--total-steps", type=int, default=1, help="the schedule's T (default 1)")
    st.add_argument("--lr", type=float, help="learning rate (overrides the schedule)")
    st.add_argument("--threads", type=int, default=1)
    cp = sub.add_parser("compare", help="compare a candidate output directory against a reference from `step`")
    cp.add_argument("--reference", required=True)
    cp.add_argument("--candidate", required=True)
    cp.add_argument("--tol", type=float, default=1e-9,
                    help="largest accepted ratio for the loss, logits and gradients (default 1e-9: double against double)")
    # Near g = 0 an Adam step lr g / (|g| + eps) amplifies a gradient's rounding by lr / eps: 1e-16 in g can move
    # the update by 1e-8 lr. A wrong update (bias correction, betas, eps) is off by a good fraction of lr.
    cp.add_argument("--tol-update", type=float, default=1e-6,
                    help="largest accepted (max |diff| / lr) for updated parameters (default 1e-6)")
    args = ap.parse_args()
    try:
        return cmd_step(args) if args.command == "step" else cmd_compare(args)
    except InputError as e:
        print(f"vit_torch: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
