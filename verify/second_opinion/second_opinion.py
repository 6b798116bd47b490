#!/usr/bin/env python3
"""A second opinion: recompute the library's outputs with NumPy/SciPy in float64 and compare.

Reads manifest.json written by second_opinion_producer (inputs, random draws and our outputs as .npy),
recomputes every quantity from the same inputs and draws, and forms for each quantity a unitless ratio

    ratio = |ours - reference| / bound,   bound = c(n) * (natural scale) * eps_dtype,

the error that rounding in the case's precision may cause, times the condition number or inverse gap
where the quantity is a forward error. Each kind's bound is stated in the comment of its function.
Sums of n rounded terms are charged g(n) = sqrt(n) eps, the probabilistic constant of Higham & Mary
(SIAM J. Sci. Comput. 41(5), 2019: inner-product errors grow like sqrt(n) u with high probability),
not the worst case n eps, which is so loose here that outputs 1e4 eps off would pass; the eigen checks
keep the LAPACK-style d eps of the library's own checks (sym_eigen.hpp). A case passes when its largest
ratio is at most 30 (LAPACK's THRESH). --self-test multiplies every entry of our outputs by 1 + 3e4 eps u,
u uniform in [1, 2], and checks that every case then fails: no tolerance here is looser than that. Nystrom
attention is the exception: it applies the pseudoinverse of a landmark kernel whose condition number
kappa(A) is 10 to 1e3 on random inputs, so its rounding errors, and its perturbation, are kappa(A) times larger.

Usage: second_opinion.py DIR | --producer BIN --workdir DIR   [--self-test]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import scipy.linalg
    import scipy.special
except ImportError as e:
    # Exit 77: ctest reports the test as skipped (SKIP_RETURN_CODE), not passed.
    print(f"second_opinion: skipped: {sys.executable} cannot import {e.name} "
          "(Debian: apt-get install -y python3-numpy python3-scipy)")
    sys.exit(77)

THRESHOLD = 30.0
# The self-test's perturbation, in units of eps_dtype: every tolerance below must be tighter than
# this, or the self-test fails (so no bound can be loosened until nothing fails).
SELF_TEST_EPS = 3e4

# The outputs of each kind (the self-test perturbs these; everything else is an input or a draw).
OUTPUTS = {
    "sym_eigen_dense": ("values", "vectors"),
    "sym_eigen_low_rank_qr": ("values", "vectors"),
    "svd_truncation": ("left", "right"),
    "lowrank_objective": ("objective",),
    "lowrank_minimiser": ("z_star", "z_r", "minimum"),
}
for kind in ("pinv_svd", "pinv_cod", "pinv_normal_equations", "pinv_iterative"):
    OUTPUTS[kind] = ("pinv",)


def g(n, eps):
    """The probabilistic rounding constant of a sum of n terms, sqrt(n) eps."""
    return math.sqrt(max(n, 1)) * eps


def ratio(err, bound):
    """err / bound with 0/0 = 0 and x/0 = inf."""
    err, bound = np.asarray(err, float), np.asarray(bound, float)
    out = np.where(bound > 0, err / np.where(bound > 0, bound, 1), np.where(err > 0, np.inf, 0.0))
    return float(np.max(out)) if out.size else 0.0




# --- attention -----------------------------------------------------------------------------------

def softmax_rows(s):
    return scipy.special.softmax(s, axis=1)


def attention_bound(q, k, v, eps, k_err=None, v_err=None):
    """Entrywise bound of softmax(Q K^T / sqrt(d)) V for the reference P, with optional entrywise
    error bounds of K and V (Linformer's projected E K and F V).

    A logit s_ij = q_i.k_j / sqrt(d) is formed with |ds_ij| <= g(d) |q_i|.|k_j| / sqrt(d) + eps |s_ij|
    (+ |q_i|.k_err_j / sqrt(d)); a row softmax turns that into |dP_ij| <= P_ij (2 max_j |ds_ij| + g(n)
    + 3 eps) (exp, the normaliser, the division); P V adds g(n) P |V|. So, entrywise,
        |dO| <= (2 max_j |ds_ij| + 2 g(n) + 3 eps) (P |V|) + P v_err.
    """
    n, d = k.shape
    s = q @ k.T / math.sqrt(d)
    p = softmax_rows(s)
    ds = g(d, eps) * (np.abs(q) @ np.abs(k).T) / math.sqrt(d) + eps * np.abs(s)
    if k_err is not None:
        ds += np.abs(q) @ k_err.T / math.sqrt(d)
    rho = 2 * np.max(ds, axis=1) + 2 * g(n, eps) + 3 * eps
    bound = rho[:, None] * (p @ np.abs(v))
    if v_err is not None:
        bound += p @ v_err
    return p @ v, bound


def check_softmax_attention(c, eps):
    ref, bound = attention_bound(c["q"], c["k"], c["v"], eps)
    return {"out": ratio(np.abs(c["out"] - ref), bound)}


def check_streaming_attention(c, eps):
    # The same bound as exact attention: the running rescalings exp(m_old - m_new) add at most
    # n / key_block relative roundings along a row, combined like the g(n) of the sums.
    return check_softmax_attention(c, eps)


def check_linformer_attention(c, eps):
    q, k, v, e, f = c["q"], c["k"], c["v"], c["e"], c["f"]
    n = k.shape[0]
    # E K and F V are sums over the n positions: |d(EK)| <= g(n) |E||K|, likewise for F V.
    ref, bound = attention_bound(q, e @ k, f @ v, eps, g(n, eps) * np.abs(e) @ np.abs(k),
                                 g(n, eps) * np.abs(f) @ np.abs(v))
    return {"out": ratio(np.abs(c["out"] - ref), bound)}


def spread(x, axis):
    return np.max(x, axis=axis) - np.min(x, axis=axis)


def check_efficient_attention(c, eps):
    q, k, v = c["q"], c["k"], c["v"]
    n, d = k.shape
    r, kc = scipy.special.softmax(q, axis=1), scipy.special.softmax(k, axis=0)
    ctx_abs = kc.T @ np.abs(v)
    ref = r @ (kc.T @ v)
    # Both factors are probability vectors. A row softmax over d features has relative entry errors
    # rho_q,i = g(d) + eps (3 + spread of row i) (exp of x - max carries eps |x - max|), a column
    # softmax over n positions rho_k,f = g(n) + eps (3 + spread of column f); the products add g(n) and
    # g(d) times the same sums of absolute values. Entrywise:
    #   |dO| <= R ((rho_k + g(n)) * K^T|V|) + (rho_q * R) K^T|V| + g(d) R K^T|V|.
    rho_q = g(d, eps) + eps * (3 + spread(q, 1))
    rho_k = g(n, eps) + eps * (3 + spread(k, 0))
    bound = r @ ((rho_k + g(n, eps))[:, None] * ctx_abs) + (rho_q[:, None] * r) @ ctx_abs + g(d, eps) * (r @ ctx_abs)
    return {"out": ratio(np.abs(c["out"] - ref), bound)}


def positive_attention_bound(phi_q, phi_k, v, out, rho):
    """Entrywise bound of out = (phi_q phi_k^T V) / (phi_q phi_k^T 1) for positive features whose
    entries carry relative errors <= rho_i (row i of phi_q, plus the worst of phi_k and the sums).
    Numerator and denominator are positive sums, so each has relative error <= rho_i, and with the
    normalised weights W = phi_q phi_k^T / row sums: |d out| <= rho_i (W |V| + |out|)."""
    w = phi_q @ phi_k.T
    w /= w.sum(axis=1, keepdims=True)
    return rho[:, None] * (w @ np.abs(v) + np.abs(out))


def check_elu_linear_attention(c, eps):
    q, k, v = c["q"], c["k"], c["v"]
    n, d = k.shape
    phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))
    pq, pk = phi(q), phi(k)
    ref = (pq @ (pk.T @ v)) / (pq @ pk.sum(axis=0))[:, None]
    # phi(x) carries eps (1 + |x|) relative error (exp carries eps |x|); the sums over n keys and
    # d features g(n) + g(d); the division eps.
    xmax = max(np.max(np.abs(q)), np.max(np.abs(k)))
    rho = np.full(q.shape[0], 2 * eps * (1 + xmax) + g(n, eps) + g(d, eps) + eps)
    return {"out": ratio(np.abs(c["out"] - ref), positive_attention_bound(pq, pk, v, ref, rho))}


def check_random_fourier_attention(c, eps):
    q, k, v, w, tau = c["q"], c["k"], c["v"], c["w"], c["temperature"]
    n, d = k.shape
    D = w.shape[0]
    feat = lambda x: np.hstack([np.sin(x @ w.T), np.cos(x @ w.T)]) / math.sqrt(D)
    sq = np.sum(k * k, axis=1)
    b = np.exp((sq - sq.max()) / (2 * tau))
    pq, pk = feat(q), b[:, None] * feat(k)
    num, den = pq @ (pk.T @ v), pq @ pk.sum(axis=0)
    ref = num / den[:, None]
    # The denominator is a signed sum and may nearly cancel, so the bound is a running error bound
    # (Higham, ASNA 2nd ed., 3.3), first order in eps, carried through every step:
    #   w.x: (g(d) + 2 eps) |x||w| (the draw rounded to the dtype, then a d-term sum), and sin, cos
    #        have slope <= 1: feature error ((g(d) + 2 eps) |x||w| + eps) / sqrt(D);
    #   b_j: relative (g(d) + 3 eps) (||k_j||^2 + max) / (2 tau) + eps;
    #   sums over n keys and 2D features: g(n) and g(2D) times the same sums of absolute values;
    #   out_i = num_i / den_i: (|d num_i| + |out_i| |d den_i|) / |den_i| + eps |out_i|.
    ef = lambda x: ((g(d, eps) + 2 * eps) * np.tile(np.abs(x) @ np.abs(w).T, 2) + eps) / math.sqrt(D)
    eb = b * ((g(d, eps) + 3 * eps) * (sq + sq.max()) / (2 * tau) + eps)
    apq, apk, av = np.abs(pq), np.abs(pk), np.abs(v)
    epk = eb[:, None] * np.abs(feat(k)) + b[:, None] * ef(k)
    ctx_abs, z_abs = apk.T @ av, apk.sum(axis=0)
    e_ctx, e_z = epk.T @ av + g(n, eps) * ctx_abs, epk.sum(axis=0) + g(n, eps) * z_abs
    e_num = ef(q) @ ctx_abs + apq @ e_ctx + g(2 * D, eps) * (apq @ ctx_abs)
    e_den = ef(q) @ z_abs + apq @ e_z + g(2 * D, eps) * (apq @ z_abs)
    bound = (e_num + np.abs(ref) * e_den[:, None]) / np.abs(den)[:, None] + eps * np.abs(ref)
    return {"out": ratio(np.abs(c["out"] - ref), bound)}


def check_favor_attention(c, eps):
    q, k, v, w = c["q"], c["k"], c["v"], c["w"]
    n, d = k.shape
    D = w.shape[0]
    s = d ** -0.25
    expo = lambda x: (s * x) @ w.T - np.sum((s * x) ** 2, axis=1)[:, None] / 2
    # exp(x.y) with the per-query and global constants cancelled: softmax-like weights.
    phi_q, phi_k = np.exp(expo(q)), np.exp(expo(k) - expo(k).max())
    ref = (phi_q @ (phi_k.T @ v)) / (phi_q @ phi_k.sum(axis=0))[:, None]
    # Every feature is positive: its exponent a is formed with (g(d) + 3 eps) (|s x||w| + |s x|^2 / 2)
    # + eps |a| absolute error (the shift by the largest exponent included), which is its relative
    # error after exp; then positive_attention_bound with the sums' g(n) + g(D).
    mag = lambda x: (np.abs(s * x) @ np.abs(w).T + np.sum((s * x) ** 2, axis=1)[:, None] / 2)
    shift_q = expo(q) + np.log(phi_k.sum(axis=0))
    rel_q = np.max((g(d, eps) + 3 * eps) * mag(q) + eps * np.abs(shift_q), axis=1)
    rel_k = np.max((g(d, eps) + 3 * eps) * mag(k) + eps * np.abs(expo(k) - expo(k).max()))
    rho = rel_q + rel_k + g(n, eps) + g(D, eps) + 2 * eps
    return {"out": ratio(np.abs(c["out"] - ref), positive_attention_bound(phi_q, phi_k, v, ref, rho))}


def segment_means(x, m):
    n = x.shape[0]
    return np.vstack([x[s * n // m:(s + 1) * n // m].mean(axis=0) for s in range(m)])


def iterate_pinv(a, iterations):
    """Razavi et al.'s iteration from Z_0 = A^T / (||A||_1 ||A||_inf), as Nystromformer runs it."""
    z = a.T / (np.abs(a).sum(axis=0).max() * np.abs(a).sum(axis=1).max())
    eye = np.eye(a.shape[0])
    for _ in range(iterations):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def check_nystrom(c, eps, iterative):
    q, k, v, m = c["q"], c["k"], c["v"], int(c["landmarks"])
    n, d = k.shape
    ql, kl = segment_means(q, m), segment_means(k, m)
    f = softmax_rows(q @ kl.T / math.sqrt(d))
    a = softmax_rows(ql @ kl.T / math.sqrt(d))
    b = softmax_rows(ql @ k.T / math.sqrt(d))
    # The library's SVD cutoff (pinv_svd_relative's default): singular values below m eps_T s_max dropped.
    z = iterate_pinv(a, int(c["iterations"])) if iterative else np.linalg.pinv(a, rcond=m * eps)
    ref = f @ (z @ (b @ v))
    # Each kernel is a softmax of logits formed from landmarks (means of about n / m rows) with d-term
    # dot products: relative entry errors rho = 2 g(n / m + d) max|logit terms| + g(m or n) + 3 eps, as
    # for exact attention. The pseudoinverse's first-order change is dZ = -Z dA Z (A is square and
    # nonsingular here; the iteration's iterate is a polynomial in A A^T approximating Z, no more
    # sensitive), so with the products' own g(n) + g(m):
    #   ||d out||_F <= rho_F ||F|| ||Z B V|| + ||F Z||_2 rho_A ||A||_F ||Z B V||_2
    #                  + ||F Z||_2 rho_B ||B||_F ||V||_2 + (g(n) + 2 g(m)) ||F|| ||Z|| ||B V||.
    seg = -(-n // m)
    def rho(x, y, terms):
        dots = np.abs(x) @ np.abs(y).T / math.sqrt(d)
        return 2 * g(seg + d, eps) * np.max(dots) + 2 * g(terms, eps) + 3 * eps
    two = lambda x: np.linalg.norm(x, 2)
    fz, zbv = f @ z, z @ (b @ v)
    bound = (rho(q, kl, m) * np.linalg.norm(f) * two(zbv) + two(fz) * rho(ql, kl, m) * np.linalg.norm(a) * two(zbv)
             + two(fz) * rho(ql, k, n) * np.linalg.norm(b) * two(v)
             + (g(n, eps) + 2 * g(m, eps)) * np.linalg.norm(f) * two(z) * np.linalg.norm(b @ v))
    return {"out": ratio(np.linalg.norm(c["out"] - ref), bound)}


# --- S_w's eigen-decomposition --------------------------------------------------------------------

def check_sym_eigen(c, eps):
    wq, wk, values, vectors = c["wq"], c["wk"], c["values"], c["vectors"]
    d, dk = wq.shape
    s = (wq @ wk.T + wk @ wq.T) / 2
    lam, u = scipy.linalg.eigh(s)
    order = np.argsort(-np.abs(lam), kind="stable")
    lam, u = lam[order], u[:, order]
    count = values.size
    s_norm = np.linalg.norm(s, 2)
    unit = (d + dk) * eps * s_norm  # ||dS||_2 of forming S_w (dk-term sums) and a backward-stable solver
    out = {}
    # Eigenvalues (Weyl): |lambda_i(S + dS) - lambda_i(S)| <= ||dS||_2, matched in sorted order of
    # value (the reference keeps its `count` largest in magnitude, as ours does).
    out["values"] = ratio(np.abs(np.sort(values) - np.sort(lam[:count])), unit)
    # Backward errors of our pairs, computed here in float64: ||S V - V L||_F / (d ||S|| eps) and
    # ||V^T V - I||_F / (d eps).
    out["residual"] = ratio(np.linalg.norm(s @ vectors - vectors * values), math.sqrt(count) * unit)
    out["orthogonality"] = ratio(np.linalg.norm(vectors.T @ vectors - np.eye(count)), d * eps)
    # Invariant subspaces of the leading j pairs (by |lambda|), for every j < d: the largest principal
    # angle (= ||P_ours - P_ref||_2) obeys Davis-Kahan, sin theta <= ||dS||_2 / gap_j with gap_j the
    # distance from {lambda_1..j} to the rest. Skipped where the order by |lambda| is ambiguous to
    # within 100 ||dS|| (a +x, -x pair), since then the two sides may pick different sets.
    worst = 0.0
    for j in range(1, min(count, d - 1) + 1):
        if abs(abs(lam[j - 1]) - abs(lam[j])) <= 100 * unit:
            continue
        gap = np.min(np.abs(lam[:j, None] - lam[None, j:]))
        sin_theta = np.sin(np.max(scipy.linalg.subspace_angles(vectors[:, :j], u[:, :j])))
        worst = max(worst, ratio(sin_theta, unit / gap))
    out["subspaces"] = worst
    return out


# --- SVD truncation, pseudoinverses, weighted low-rank regression ---------------------------------

def check_svd_truncation(c, eps):
    a, r = c["a"], int(c["rank"])
    u, sv, vt = np.linalg.svd(a, full_matrices=False)
    best = (u[:, :r] * sv[:r]) @ vt[:r]
    ours = c["left"] @ c["right"].T
    m = max(a.shape)
    unit = g(m, eps) * np.linalg.norm(a)
    # Our A_r is the exact truncation of A + E with ||E||_F <= c g(m) ||A||_F; the tail norm moves by
    # at most ||E||_F (Mirsky), so |(||A - A_r||) - sqrt(sum_{i>r} sigma_i^2)| <= 2 ||E||_F.
    err_ours, err_ref = np.linalg.norm(a - ours), math.sqrt(np.sum(sv[r:] ** 2))
    out = {"error": ratio(abs(err_ours - err_ref), 2 * unit)}
    # A_r itself is a forward quantity: to first order E couples the kept and dropped singular
    # vectors with weights up to (sigma_r + sigma_{r+1}) / (sigma_r - sigma_{r+1}) (Wedin), so
    # ||dA_r||_F <= ||E||_F (1 + (sigma_r + sigma_{r+1}) / gap_r).
    nxt = sv[r] if r < sv.size else 0.0
    out["approximation"] = ratio(np.linalg.norm(ours - best), unit * (1 + (sv[r - 1] + nxt) / (sv[r - 1] - nxt)))
    return out


def check_pinv(c, eps, kind):
    a, p = c["a"], c["pinv"]
    ref = np.linalg.pinv(a)
    sv = np.linalg.svd(a, compute_uv=False)
    kappa = sv[0] / sv[-1]
    m = max(a.shape)
    # (A^T A)^{-1} A^T squares the condition number; the other three are backward stable.
    k_eff = kappa ** 2 if kind == "pinv_normal_equations" else kappa
    a2, p2 = np.linalg.norm(a, 2), np.linalg.norm(p, 2)
    # Forward error (Wedin, for full rank): ||P - A^+|| / ||A^+|| <= c g(m) kappa.
    unit = g(m, eps) * k_eff * np.linalg.norm(ref)
    out = {"forward": ratio(np.linalg.norm(p - ref), unit)}
    # Penrose residuals of a P with ||P - A^+||_F <= unit: each is at most that error times its
    # other factors, e.g. ||A P A - A||_F <= ||A||_2 ||dP||_F ||A||_2 (the residual at A^+ is 0).
    out["penrose_apa"] = ratio(np.linalg.norm(a @ p @ a - a), unit * a2 * a2)
    out["penrose_pap"] = ratio(np.linalg.norm(p @ a @ p - p), unit * 2 * a2 * p2)
    out["penrose_ap"] = ratio(np.linalg.norm(a @ p - (a @ p).T), unit * 2 * a2)
    out["penrose_pa"] = ratio(np.linalg.norm(p @ a - (p @ a).T), unit * 2 * a2)
    return out


def check_lowrank_objective(c, eps):
    b, x, z = c["b"], c["x"], c["z"]
    d = z.shape[0]
    r = b - x @ z @ x.T
    ref = np.sum(r * r)
    # Each residual entry comes from two d-term sums and a subtraction: |dR| <= (2 g(d) + eps)
    # (|B| + |X||Z||X|^T) entrywise, and d||R||^2 = 2 <R, dR>, so
    # |df| <= 2 (2 g(d) + eps) <|R|, |B| + |X||Z||X|^T>.
    mags = np.abs(b) + np.abs(x) @ np.abs(z) @ np.abs(x).T
    bound = 2 * (2 * g(d, eps) + eps) * np.sum(np.abs(r) * mags)
    return {"objective": ratio(abs(float(c["objective"][0]) - ref), bound)}


def check_lowrank_minimiser(c, eps):
    b, x, r = c["b"], c["x"], int(c["rank"])
    n, d = x.shape
    xp = np.linalg.pinv(x)
    z_star = xp @ b @ xp.T
    # The closed form Z_r = V S^{-1} [U^T B U]_r S^{-1} V^T of the thin SVD X = U S V^T (full column rank).
    u, sx, vt = np.linalg.svd(x, full_matrices=False)
    cu, cs, cvt = np.linalg.svd(u.T @ b @ u)
    c_r = (cu[:, :r] * cs[:r]) @ cvt[:r]
    z_r = vt.T @ np.diag(1 / sx) @ c_r @ np.diag(1 / sx) @ vt
    minimum = np.sum((b - x @ z_r @ x.T) ** 2)
    kappa = sx[0] / sx[-1]
    # Z* = X^+ B X^+T: two pseudoinverse factors, each with relative error <= c g(n) kappa (Wedin).
    out = {"z_star": ratio(np.linalg.norm(c["z_star"] - z_star), 2 * g(n, eps) * kappa * np.linalg.norm(z_star))}
    # Z_r adds the truncation of C = U^T B U, whose kept subspace moves by ||dC|| / gap_r (Wedin,
    # weights (sigma_r + sigma_{r+1}) / gap_r as for svd_truncation).
    nxt = cs[r] if r < cs.size else 0.0
    out["z_r"] = ratio(np.linalg.norm(c["z_r"] - z_r),
                       2 * g(n, eps) * kappa * np.linalg.norm(z_r) * (1 + (cs[r - 1] + nxt) / (cs[r - 1] - nxt)))
    # The minimum ||B - P B P||^2 + tail is a sum of squares of entries formed with n-term sums; f is
    # stationary at the optimum, so its error is that of forming B's parts: <= c g(n) ||B||_F^2.
    out["minimum"] = ratio(abs(float(c["minimum"][0]) - minimum), g(n, eps) * np.linalg.norm(b) ** 2)
    return out


CHECKS = {
    "softmax_attention": check_softmax_attention,
    "streaming_attention": check_streaming_attention,
    "efficient_attention": check_efficient_attention,
    "elu_linear_attention": check_elu_linear_attention,
    "linformer_attention": check_linformer_attention,
    "random_fourier_attention": check_random_fourier_attention,
    "favor_attention": check_favor_attention,
    "nystrom_svd": lambda c, eps: check_nystrom(c, eps, iterative=False),
    "nystrom_iterative": lambda c, eps: check_nystrom(c, eps, iterative=True),
    "sym_eigen_dense": check_sym_eigen,
    "sym_eigen_low_rank_qr": check_sym_eigen,
    "svd_truncation": check_svd_truncation,
    "pinv_svd": lambda c, eps: check_pinv(c, eps, "pinv_svd"),
    "pinv_cod": lambda c, eps: check_pinv(c, eps, "pinv_cod"),
    "pinv_normal_equations": lambda c, eps: check_pinv(c, eps, "pinv_normal_equations"),
    "pinv_iterative": lambda c, eps: check_pinv(c, eps, "pinv_iterative"),
    "lowrank_objective": check_lowrank_objective,
    "lowrank_minimiser": check_lowrank_minimiser,
}


def load_case(directory, case):
    data = {key: float(value) for key, value in case["params"].items()}
    for role, file in case["files"].items():
        data[role] = np.load(os.path.join(directory, file), allow_pickle=False).astype(np.float64)
    return data


def landmark_condition(data):
    """kappa(A) of Nystrom's landmark kernel A = softmax(Q~ K~^T / sqrt(d))."""
    m, d = int(data["landmarks"]), data["q"].shape[1]
    a = softmax_rows(segment_means(data["q"], m) @ segment_means(data["k"], m).T / math.sqrt(d))
    sv = np.linalg.svd(a, compute_uv=False)
    return sv[0] / sv[-1]


def perturb(data, kind, rng, eps):
    """Every entry of our outputs times 1 + 3e4 eps u, u uniform in [1, 2]: one sign, so two perturbed
    factors (svd_truncation's) cannot cancel, and uneven, so that directions (eigenvectors) move too."""
    size = SELF_TEST_EPS * eps * (landmark_condition(data) if kind.startswith("nystrom") else 1.0)
    for role in OUTPUTS.get(kind, ("out",)):
        x = data[role]
        data[role] = x * (1 + size * rng.uniform(1.0, 2.0, size=x.shape))


def run(directory, self_test):
    with open(os.path.join(directory, "manifest.json")) as f:
        manifest = json.load(f)
    cases = manifest["cases"]
    if not cases:
        sys.exit("second_opinion: the manifest lists no case")
    rng = np.random.default_rng(manifest["seed"])
    failures, worst = [], {}
    for case in cases:
        kind, dtype = case["kind"], case["dtype"]
        if kind not in CHECKS:
            sys.exit(f"second_opinion: unknown kind '{kind}' in the manifest")
        eps = float(np.finfo(np.float32 if dtype == "float32" else np.float64).eps)
        data = load_case(directory, case)
        if self_test:
            perturb(data, kind, rng, eps)
        ratios = CHECKS[kind](data, eps)
        name, value = max(ratios.items(), key=lambda item: item[1])
        passed = math.isfinite(value) and value <= THRESHOLD
        worst[(kind, dtype)] = max(worst.get((kind, dtype), 0.0), value)
        sizes = " ".join(f"{key}={int(val) if float(val).is_integer() else val:g}" for key, val in case["params"].items())
        verdict = "pass" if passed else "FAIL"
        if self_test:
            verdict = "caught" if not passed else "MISSED"
        print(f"{case['name']:<40} {sizes:<44} worst {name:<14} ratio {value:10.3g}  {verdict}")
        if passed == self_test:
            failures.append(case["name"])
    print(f"\nworst ratio per kind and dtype (threshold {THRESHOLD:g}):")
    for (kind, dtype), value in sorted(worst.items()):
        print(f"  {kind:<26} {dtype:<8} {value:10.3g}")
    if self_test:
        print(f"\nself-test (outputs perturbed by {SELF_TEST_EPS:g} eps): {len(cases) - len(failures)} of {len(cases)} "
              f"cases caught")
        if failures:
            print("perturbations missed by: " + ", ".join(failures))
    else:
        print(f"\n{len(cases) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", help="a directory with manifest.json from second_opinion_producer")
    parser.add_argument("--producer", help="run this second_opinion_producer first, into a new directory under --workdir")
    parser.add_argument("--workdir", help="where --producer writes (a fresh subdirectory, removed on success)")
    parser.add_argument("--seed", help="passed to the producer")
    parser.add_argument("--self-test", action="store_true", help="perturb our outputs; every case must fail")
    args = parser.parse_args()
    if bool(args.producer) == bool(args.directory) or bool(args.producer) != bool(args.workdir):
        parser.error("give either DIR or both --producer and --workdir")
    if not args.producer:
        return run(args.directory, args.self_test)
    os.makedirs(args.workdir, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="self_test-" if args.self_test else "compare-", dir=args.workdir)
    command = [args.producer, "--out", directory] + (["--seed", args.seed] if args.seed else [])
    if subprocess.run(command).returncode != 0:
        sys.exit(f"second_opinion: {' '.join(command)} failed")
    status = run(directory, args.self_test)
    if status == 0:
        shutil.rmtree(directory)
    else:
        print(f"inputs and outputs kept in {directory}")
    return status


if __name__ == "__main__":
    sys.exit(main())
