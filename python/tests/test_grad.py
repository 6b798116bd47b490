"""attnlab.attend_grad: every hand-written backward pass against central differences of attnlab.attend, and, where
PyTorch is installed, against torch autograd on the same inputs and draws (tools/vit_torch.py's implementation of each
method), as is the attnlab.torch wrapper; its refusals; the same bits for 1 and 2 threads."""
import os
import sys
import types

import numpy as np
import pytest

import attnlab
from support import ROOT, qkv, rng

# Every method with a backward pass, with options that exercise it at n = 6.
GRADS = [("exact", "reference", {}), ("linear-shen", "reference", {}), ("linear-elu", "reference", {}),
         ("linformer", "reference", {"proj": 4, "seed": 2}), ("linformer", "reference", {"projection": "segment-mean", "proj": 3}),
         ("random-fourier", "reference", {"features": 8, "seed": 2}),
         ("random-fourier", "reference", {"features": 8, "seed": 2, "temperature": 3.0}),
         ("favor", "reference", {"features": 8, "seed": 2}), ("favor", "reference", {"features": 8, "seed": 2, "iid": True}),
         ("nystrom", "reference", {"landmarks": 3}), ("nystrom", "reference", {"landmarks": 2, "pinv_iterations": 3}),
         ("exact", "fast", {}), ("streaming", "fast", {"block": 4})]


def central_differences(f, x, h=1e-3):
    """d f / d x by central differences, Richardson-extrapolated: (4 D(h/2) - D(h)) / 3 errs by O(h^4)."""
    g = np.zeros_like(x)
    flat, out = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        def d(step):
            keep = flat[i]
            flat[i] = keep + step
            up = f()
            flat[i] = keep - step
            down = f()
            flat[i] = keep
            return (up - down) / (2 * step)
        out[i] = (4 * d(h / 2) - d(h)) / 3
    return g


def check_against_differences(method, impl, params, planted=0.0):
    """The largest difference between attend_grad and central differences of sum(dout * attend), over the largest
    gradient entry. Richardson's error is O(h^4) f''''' ~ 1e-12 and rounding eps |L| / h ~ 1e-13 |L| at h = 1e-3, so a
    right gradient stays below 1e-7 of the gradient's scale; a wrong term errs at O(1) of it. `planted` perturbs the
    gradient (the check's self-test)."""
    r = rng(20)
    q, k, v = qkv(r, (1, 2, 6, 3), np.float64, d_v=2, scale=0.7)
    dout = r.standard_normal((1, 2, 6, 2))
    params = dict(params, threads=1)  # hundreds of tiny calls: no thread team to wake for each
    grads = attnlab.attend_grad(q, k, v, dout, method, impl=impl, **params)
    worst = 0.0
    for x, g in zip((q, k, v), grads):
        assert g.shape == x.shape and g.dtype == np.float64
        fd = central_differences(lambda: float(np.sum(dout * attnlab.attend(q, k, v, method, impl=impl, **params))), x)
        g = g * (1 + planted)
        worst = max(worst, np.abs(g - fd).max() / max(np.abs(fd).max(), 1e-300))
    return worst


@pytest.mark.parametrize("method,impl,params", GRADS, ids=[f"{m}-{i}-{'-'.join(map(str, p))}" for m, i, p in GRADS])
def test_central_differences(method, impl, params):
    worst = check_against_differences(method, impl, params)
    print(f"{method} {impl} {params}: largest |gradient - central difference| / max |gradient| = {worst:.2e}")
    assert worst < 1e-7


def test_central_differences_catch_a_wrong_gradient():
    """The check fails on a gradient 1e-5 off: its threshold is not looser than that."""
    assert check_against_differences("exact", "reference", {}, planted=1e-5) > 1e-7


def test_forward_is_attends():
    """attnlab.torch and the gradients differentiate attend's output: the fast backward's forward and the reference
    kernels shared with training are attend's bits (checked in C++, verify/test_method_gradients.cpp); here the fast
    and reference gradients of exact attention agree to rounding."""
    q, k, v = qkv(rng(21), (2, 40, 8), np.float64)
    dout = rng(22).standard_normal((2, 40, 8))
    ref = attnlab.attend_grad(q, k, v, dout, "exact")
    fast = attnlab.attend_grad(q, k, v, dout, "exact", impl="fast")
    for a, b in zip(ref, fast):
        assert np.abs(a - b).max() <= 1e-12 * np.abs(a).max()


@pytest.mark.parametrize("method,impl,params", GRADS, ids=lambda x: str(x))
def test_threads_same_bits(method, impl, params):
    q, k, v = qkv(rng(23), (2, 3, 30, 4), np.float32)
    dout = rng(24).standard_normal((2, 3, 30, 4)).astype(np.float32)
    params = {key: val for key, val in params.items()}
    one = attnlab.attend_grad(q, k, v, dout, method, impl=impl, threads=1, **params)
    two = attnlab.attend_grad(q, k, v, dout, method, impl=impl, threads=2, **params)
    for a, b in zip(one, two):
        assert a.dtype == np.float32 and np.array_equal(a, b)


def test_refusals():
    q, k, v = qkv(rng(25), (6, 4), np.float64)
    dout = np.ones((6, 4))
    for call, message in [
            (dict(method="streaming"), "streaming's reference kernel has no backward pass: --impl fast differentiates its fused kernel"),
            (dict(method="linear-elu", impl="fast"), "--impl fast: linear-elu has no fast backward pass; use --impl reference"),
            (dict(method="favor", impl="fast"), "--impl fast: favor has no fast kernel; use --impl reference"),
            (dict(method="nystrom", pinv="svd"), "nystrom's backward pass takes --pinv iterative --pinv-init per_matrix only"),
            (dict(method="nystrom", pinv_init="per_matrix_one"), "nystrom's backward pass takes --pinv iterative"),
            (dict(method="nystrom", pinv_iterations=0), "nystrom's backward pass takes --pinv-iterations 1 to 1000, not 0"),
            (dict(method="exact", landmarks=3), "--landmarks applies to --method nystrom only, not to --method exact")]:
        with pytest.raises(ValueError) as raised:
            attnlab.attend_grad(q, k, v, dout, **call)
        assert str(raised.value).startswith(message), str(raised.value)
    with pytest.raises(ValueError, match=r"^exact's backward pass needs as many keys as queries: n = 6 keys but n = 5 queries \(--impl fast"):
        attnlab.attend_grad(q[:5], k, v, dout[:5])
    with pytest.raises(ValueError, match=r"^dout: shape \(6, 3\) but the output's is \(6, 4\)$"):
        attnlab.attend_grad(q, k, v, dout[:, :3])
    # Cross attention has a fast exact backward.
    dq, dk, dv = attnlab.attend_grad(q[:5], k, v, dout[:5], impl="fast")
    assert dq.shape == (5, 4) and dk.shape == (6, 4) and dv.shape == (6, 4)


# --- PyTorch -------------------------------------------------------------------------------------------------------

def torch_reference(torch, method, q, k, v, params, draws):
    """tools/vit_torch.py's attention(method, ...): the PyTorch mirror every trained method is checked against."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import vit_torch
    vit_torch.require_torch()
    p = {}
    if method == "linformer":
        p = {"attn.method.E": torch.from_numpy(draws["E"]), "attn.method.F": torch.from_numpy(draws["F"])}
    if method in ("random-fourier", "favor"):
        p = {f"attn.method.omega_head{h}": torch.from_numpy(draws["omega"]) for h in range(q.shape[1])}
    cfg = types.SimpleNamespace(landmarks=params.get("landmarks"), pinv_iterations=params.get("pinv_iterations", 6))
    return vit_torch.attention(method, q, k, v, p, "", cfg)


TORCH = [g for g in GRADS if g[1] == "reference" and "temperature" not in g[2]] + [("exact", "fast", {})]


@pytest.mark.parametrize("method,impl,params", TORCH, ids=lambda x: str(x))
def test_torch_autograd(method, impl, params):
    """attend_grad against torch autograd through the PyTorch mirror of each method, float64, the same draws; and the
    attnlab.torch wrapper's gradients against both. The largest difference over the largest gradient is printed."""
    torch = pytest.importorskip("torch")
    r = rng(26)
    q, k, v = qkv(r, (2, 2, 12, 4), np.float64)
    dout = r.standard_normal((2, 2, 12, 4))
    if params.get("projection") == "segment-mean":  # deterministic: E = F average contiguous segments of the positions
        kp, n = params["proj"], q.shape[-2]
        e = np.zeros((kp, n))
        for s in range(kp):
            e[s, s * n // kp:(s + 1) * n // kp] = 1 / ((s + 1) * n // kp - s * n // kp)
        draws = {"E": e, "F": e}
    elif method in ("linformer", "random-fourier", "favor"):
        draws = attnlab.attend(q, k, v, method, save_draws=True, **params)[1]
    else:
        draws = {}
    ts = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = torch_reference(torch, method, *ts, params, draws)
    assert np.abs(out.detach().numpy() - attnlab.attend(q, k, v, method, impl=impl, **params)).max() < 1e-12
    (out * torch.from_numpy(dout)).sum().backward()
    ours = attnlab.attend_grad(q, k, v, dout, method, impl=impl, **params)
    wrapped = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    import attnlab.torch as at
    (at.attend(*wrapped, method, impl=impl, **params) * torch.from_numpy(dout)).sum().backward()
    for name, t, g, w in zip("qkv", ts, ours, wrapped):
        # Both in float64; the pseudoinverse's iterations (nystrom) amplify rounding by cond(A) (about 1e2 here).
        scale = np.abs(t.grad.numpy()).max()
        diff = np.abs(t.grad.numpy() - g).max() / scale
        print(f"{method} d{name}: largest |attnlab - torch autograd| / max |gradient| = {diff:.2e}")
        assert diff < 1e-10
        assert np.array_equal(w.grad.numpy(), g), "the wrapper's backward is attend_grad"


def test_torch_wrapper_exists_only_with_torch():
    """attnlab.torch is there when PyTorch imports, and an AttributeError saying so when it does not (PyTorch hidden
    from a child interpreter)."""
    import subprocess
    code = ("import sys; sys.modules['torch'] = None\nimport attnlab\ntry:\n    attnlab.torch\nexcept AttributeError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert r.returncode == 0 and r.stdout.startswith("attnlab.torch needs PyTorch"), r.stdout + r.stderr
    pytest.importorskip("torch")
    assert attnlab.torch.Attention is not None and callable(attnlab.torch.attend)
