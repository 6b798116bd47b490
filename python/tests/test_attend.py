"""attnlab.attend against bin/attend (the same bits), against NumPy references (second_opinion.py's bounds), across
thread counts and memory layouts, with the GIL released; every bad input a ValueError with attend's line."""
import os
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

import attnlab
from support import FAST, METHODS, RANDOM, ROOT, attend_cli, cli_line, mask_memory, qkv, rng

sys.path.insert(0, os.path.join(ROOT, "verify", "second_opinion"))
import second_opinion  # noqa: E402  (the library's NumPy second opinion: references and their rounding bounds)

# Small sizes where every method's options fit (landmarks and projections at most n), with heads and batches.
PARAMS = {"exact": {}, "streaming": {"block": 7}, "linear-shen": {}, "linear-elu": {}, "linformer": {"proj": 9},
          "random-fourier": {"features": 16, "seed": 5}, "favor": {"features": 16, "seed": 5},
          "nystrom": {"landmarks": 5}}
SHAPES = [(1, 1), (2, 3), (3, 3)] + [(37, 8), (2, 3, 24, 8)]  # edge sizes, one head, and a (batch, heads) stack


def shape_of(s):
    return (*s,) if len(s) > 2 else s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", METHODS)
def test_same_bits_as_the_program(tmp_path, method, dtype):
    """The module and bin/attend run the same kernels: the same output, bit for bit, reference and fast kernels."""
    r = rng(1)
    for shape in [(37, 8), (2, 3, 24, 8), (3, 3)]:
        q, k, v = qkv(r, shape, dtype, d_v=5)
        params = dict(PARAMS[method])
        if shape[-2] < 9:
            params = {key: min(val, shape[-2]) if key in ("proj", "landmarks") else val for key, val in params.items()}
        for impl in ["reference", "fast"] if method in FAST else ["reference"]:
            status, cli, err = attend_cli(str(tmp_path), q, k, v, method, impl=impl, **params)
            assert status == 0, err
            ours = attnlab.attend(q, k, v, method, impl=impl, **params)
            assert ours.dtype == dtype and ours.shape == cli.shape == (*shape[:-1], 5)
            assert np.array_equal(ours, cli), f"{method} {impl} {shape}: max difference {np.abs(ours - cli).max()}"


CHECKS = {"exact": second_opinion.check_softmax_attention, "streaming": second_opinion.check_streaming_attention,
          "linear-shen": second_opinion.check_efficient_attention, "linear-elu": second_opinion.check_elu_linear_attention,
          "linformer": second_opinion.check_linformer_attention,
          "random-fourier": second_opinion.check_random_fourier_attention, "favor": second_opinion.check_favor_attention,
          "nystrom": lambda c, eps: second_opinion.check_nystrom(c, eps, True)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", METHODS)
def test_numpy_reference(method, dtype):
    """Each head against second_opinion.py's NumPy reference in float64: the error over its rounding bound <= 30."""
    r = rng(2)
    eps = np.finfo(dtype).eps
    for shape in SHAPES:
        n = shape[-2]
        q, k, v = qkv(r, shape, dtype)
        params = {key: min(val, n) if key in ("proj", "landmarks") else val for key, val in PARAMS[method].items()}
        for impl in ["reference", "fast"] if method in FAST else ["reference"]:
            out, draws = (attnlab.attend(q, k, v, method, impl=impl, save_draws=True, **params) if method in RANDOM
                          else (attnlab.attend(q, k, v, method, impl=impl, **params), {}))
            q4, k4, v4, o4 = (np.asarray(a, np.float64).reshape(-1, *a.shape[-2:]) for a in (q, k, v, out))
            for h in range(q4.shape[0]):
                case = {"q": q4[h], "k": k4[h], "v": v4[h], "out": o4[h]}
                if method == "linformer":
                    case.update(e=draws["E"], f=draws["F"])
                if method in ("random-fourier", "favor"):
                    case.update(w=draws["omega"], temperature=np.sqrt(q.shape[-1]))
                if method == "nystrom":
                    case.update(landmarks=params["landmarks"], iterations=6)
                ratios = CHECKS[method](case, eps)
                assert max(ratios.values()) <= second_opinion.THRESHOLD, f"{method} {impl} {shape} head {h}: {ratios}"


@pytest.mark.parametrize("method", METHODS)
def test_threads_same_bits(method):
    """1 and 2 threads: the same output, bit for bit (heads and blocks are fixed by the shapes)."""
    q, k, v = qkv(rng(3), (2, 3, 70, 8), np.float32)
    for impl in ["reference", "fast"] if method in FAST else ["reference"]:
        one = attnlab.attend(q, k, v, method, impl=impl, threads=1, **PARAMS[method])
        two = attnlab.attend(q, k, v, method, impl=impl, threads=2, **PARAMS[method])
        assert np.array_equal(one, two)


def test_layouts_read_in_place():
    """A non-contiguous slice, a Fortran-ordered array and a transposed view give the C-contiguous array's bits, and
    none is copied by NumPy on the way (tracemalloc sees NumPy's allocations: only the output's); an array with
    negative strides is copied first, and still right."""
    r = rng(4)
    q, k, v = qkv(r, (2, 2, 256, 32), np.float64)
    wide = np.concatenate([q, np.zeros_like(q)], axis=-1)[..., :32]  # every row strided by 64 values
    fortran = np.asfortranarray(q)
    transposed = np.ascontiguousarray(np.swapaxes(q, -1, -2)).swapaxes(-1, -2)  # column-major heads
    # The fast kernel reads C-order rows itself (the first layout, and heads apart: the slice of whole heads) and the
    # others through the conversion; the reference kernel always converts. The same bits either way.
    heads_apart = np.concatenate([q, np.zeros_like(q)], axis=1)[:, :2]
    for impl in ("reference", "fast"):
        ref = attnlab.attend(q, k, v, "exact", impl=impl)
        for name, a in [("C order", q), ("slice", wide), ("Fortran order", fortran), ("transposed", transposed),
                        ("heads apart", heads_apart)]:
            assert np.array_equal(a, q)
            assert attnlab._attnlab._read_in_place(a), name
            tracemalloc.start()
            out = attnlab.attend(a, k, v, "exact", impl=impl)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert np.array_equal(out, ref), (impl, name)
            assert peak < out.nbytes + q.nbytes // 2, f"{name}: NumPy allocated {peak} bytes for a {out.nbytes}-byte output"
    ref = attnlab.attend(q, k, v, "exact")
    backwards = q[..., ::-1, :]
    assert not attnlab._attnlab._read_in_place(backwards)
    tracemalloc.start()
    out = attnlab.attend(backwards, k, v, "exact")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert np.array_equal(out, attnlab.attend(np.ascontiguousarray(backwards), k, v, "exact"))
    assert peak >= out.nbytes + q.nbytes, "the copy of an array with negative strides is what the check must see"


def test_torch_tensors_and_lists():
    """What np.asarray takes is taken: lists (copied), and CPU tensors where PyTorch is."""
    q, k, v = qkv(rng(5), (5, 4), np.float64)
    ref = attnlab.attend(q, k, v)
    assert np.array_equal(attnlab.attend(q.tolist(), k.tolist(), v.tolist()), ref)
    torch = pytest.importorskip("torch")
    assert np.array_equal(attnlab.attend(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v)), ref)


def test_gil_released():
    """A second Python thread runs while a call is in progress: it counts far more than a thread blocked on the GIL
    could (the interpreter would switch to it only between bytecodes of the caller, which has none to run)."""
    q, k, v = qkv(rng(6), (1, 4, 1024, 64), np.float64)
    start = time.perf_counter()
    attnlab.attend(q, k, v, "exact", threads=1)
    alone = time.perf_counter() - start
    counts, running = [0], [True]

    def count():
        while running[0]:
            counts[0] += 1

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    before = counts[0]
    start = time.perf_counter()
    attnlab.attend(q, k, v, "exact", threads=1)
    during = counts[0] - before
    took = time.perf_counter() - start
    running[0] = False
    t.join()
    # The counter thread's rate alone, for comparison.
    before, start = counts[0], time.perf_counter()
    running[0] = True
    t = threading.Thread(target=count)
    t.start()
    time.sleep(took)
    running[0] = False
    t.join()
    rate = (counts[0] - before) / (time.perf_counter() - start)
    assert alone > 0.02, "the call must take long enough to see"
    assert during > 0.2 * rate * took, f"the other thread counted {during} during a {took:.3f} s call (alone: {rate:.0f}/s)"


def test_save_and_give_draws(tmp_path):
    """save_draws returns the draws attend --save-draws writes; giving them back (draws=) reproduces the output, as
    attend --draws does."""
    for method, params in [("linformer", {"proj": 6}), ("random-fourier", {"features": 12}), ("favor", {"features": 12})]:
        q, k, v = qkv(rng(7), (2, 20, 4), np.float64)
        out, draws = attnlab.attend(q, k, v, method, seed=3, save_draws=True, **params)
        saved = str(tmp_path / method)
        status, cli, err = attend_cli(str(tmp_path), q, k, v, method, extra=["--save-draws", saved], seed=3, **params)
        assert status == 0, err
        assert np.array_equal(out, cli)
        assert sorted(draws) == sorted(f[:-4] for f in os.listdir(saved))
        for key, value in draws.items():
            assert value.dtype == np.float64 and np.array_equal(value, np.load(os.path.join(saved, key + ".npy")))
        assert np.array_equal(attnlab.attend(q, k, v, method, draws=draws, seed=99), out)


# Bad inputs: (what, the module's call as keyword arguments or array edits, the command line's equivalent).
def bad_cases():
    r = rng(8)
    q, k, v = qkv(r, (6, 4), np.float64)
    nan_q = q.copy()
    nan_q[1, 2] = np.nan
    big = np.ones((100000, 1))
    return [
        ("unknown method", dict(method="softmax"), {}),
        ("unknown parameter", dict(method="exact", params={"landmark": 4}), {}),
        ("option of another method", dict(method="exact", params={"landmarks": 4}), {}),
        ("out of range", dict(method="nystrom", params={"landmarks": 0}), {}),
        ("above n", dict(method="nystrom", params={"landmarks": 7}), {}),
        ("not an integer", dict(method="nystrom", params={"landmarks": 2.5}), {}),
        ("pinv option of svd", dict(method="nystrom", params={"pinv": "svd", "pinv_iterations": 3}), {}),
        ("rcond >= 1", dict(method="nystrom", params={"pinv": "svd", "rcond": 1.0}), {}),
        ("bad choice", dict(method="linformer", params={"projection": "uniform"}), {}),
        ("not finite", dict(method="random-fourier", params={"temperature": float("inf")}), {}),
        ("no fast kernel", dict(method="favor", params={"impl": "fast"}), {}),
        ("fast nystrom options", dict(method="nystrom", params={"impl": "fast", "pinv_iterations": 3}), {}),
        ("threads", dict(method="exact", params={"threads": 0}), {}),
        ("seed", dict(method="favor", params={"seed": -1}), {}),
        ("draws of a deterministic method", dict(method="exact", save_draws=True), {}),
        ("wrong ndim", dict(q=q[0]), {}),
        ("five axes", dict(q=q.reshape(1, 1, 1, 6, 4)[None]), {}),
        ("wrong dtype", dict(q=q.astype(np.int64)), {}),
        ("half precision", dict(q=q.astype(np.float16), k=k.astype(np.float16), v=v.astype(np.float16)), {}),
        ("empty", dict(q=q[:0]), {}),
        ("mismatched d", dict(k=k[:, :3]), {}),
        ("mismatched n", dict(v=v[:5]), {}),
        ("mismatched heads", dict(k=np.stack([k, k])), {}),
        ("linformer n_q != n_k", dict(q=q[:5], method="linformer"), {}),
        ("non-finite", dict(q=nan_q), {}),
        ("past the memory left", dict(q=big, k=big, v=big, method="exact"), {}),
    ], (q, k, v)


def test_bad_input_is_attends_line(tmp_path):
    """Every bad input: a ValueError whose message is the line attend prints for the same input, less "attend: " and
    the file's name (memory figures masked: they change between two processes)."""
    cases, (q, k, v) = bad_cases()
    for what, call, _ in cases:
        a = {"q": q, "k": k, "v": v, **{key: call[key] for key in ("q", "k", "v") if key in call}}
        method, params = call.get("method", "exact"), call.get("params", {})
        with pytest.raises(ValueError) as raised:
            attnlab.attend(a["q"], a["k"], a["v"], method, save_draws=call.get("save_draws", False), **params)
        extra = ["--save-draws", str(tmp_path / "draws")] if call.get("save_draws") else []
        status, _, err = attend_cli(str(tmp_path), a["q"], a["k"], a["v"], method, extra=extra, **params)
        assert status == 2, f"{what}: attend exit {status}: {err}"
        files = {str(tmp_path / f"{n}.npy"): f"--{n}" for n in "qkv"}
        assert mask_memory(str(raised.value)) == mask_memory(cli_line(err, "attend", files)), what
        assert "\n" not in str(raised.value)


def test_bad_input_of_arrays_alone():
    """What no .npy file can hold: inputs of two precisions, a flag given a value, bad draws."""
    q, k, v = qkv(rng(9), (6, 4), np.float64)
    with pytest.raises(ValueError, match=r"^--k: dtype float32 but --q has float64"):
        attnlab.attend(q, k.astype(np.float32), v)
    with pytest.raises(ValueError, match=r"^--iid: a flag: give True or False"):
        attnlab.attend(q, k, v, "favor", iid=1)
    with pytest.raises(ValueError, match=r"^--draws: unknown key 'W'"):
        attnlab.attend(q, k, v, "favor", draws={"W": np.ones((4, 4))})
    with pytest.raises(ValueError, match=r"^--draws: omega: omega is 3 x 5 but the inputs have d = 4$"):
        attnlab.attend(q, k, v, "favor", draws={"omega": np.ones((3, 5))})
    with pytest.raises(ValueError, match=r"^--draws: E: missing"):
        attnlab.attend(q, k, v, "linformer", draws={"F": np.ones((3, 6))})
    with pytest.raises(ValueError, match=r"^--draws: omega: value nan at flat index 0"):
        attnlab.attend(q, k, v, "favor", draws={"omega": np.full((3, 4), np.nan)})


def test_nonfinite_output():
    """A result holding NaN or infinity raises NonFiniteError (a ValueError), naming where, as attend's exit status 1."""
    q = np.full((4, 2), 300.0)
    k = np.full((4, 2), 300.0)
    v = np.full((4, 2), 1e308)
    with pytest.raises(attnlab.NonFiniteError, match=r"^linear-elu gave \d+ non-finite output values \(the first at batch 0, head 0"):
        attnlab.attend(q, k, v, "linear-elu")
    assert issubclass(attnlab.NonFiniteError, ValueError)


def test_kept_input_buffers():
    """Each call converts its inputs into buffers the calling thread keeps for the next call: a later call of other
    shapes, of the other dtype, after a refusal or after attend_grad (four inputs) gives the bits of a first call; the
    buffers stay only while they hold at most 64 MiB, and a non-finite value is named in the first input holding one
    (q, then k, then v, as attend reads its files)."""
    r = rng(10)
    a = qkv(r, (2, 3, 40, 8), np.float64)
    b = qkv(r, (17, 5), np.float64)
    c = tuple(x.astype(np.float32) for x in qkv(r, (3, 33, 4), np.float64))
    first = {name: attnlab.attend(*x, "exact") for name, x in (("a", a), ("b", b), ("c", c))}
    kept = attnlab._attnlab._kept_bytes()  # the double buffers hold b's inputs, the float ones c's
    assert kept == sum(x.nbytes for x in b + c), kept
    bad_k, bad_v = a[1].copy(), a[2].copy()
    bad_k[1, 2, 3, 4] = np.inf
    bad_v[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^--k: value inf at flat index 1628 "):
        attnlab.attend(a[0], bad_k, bad_v, "exact")
    attnlab.attend_grad(*b, np.ones_like(b[0]), "exact")
    for name, x in (("c", c), ("a", a), ("b", b), ("a", a)):
        assert np.array_equal(attnlab.attend(*x, "exact"), first[name]), name
    # Inputs of 3 x 25 MB: more than the buffers may keep, released at the end of the call.
    big = qkv(r, (6144, 64, 8), np.float64)
    out = attnlab.attend(*big, "exact", threads=1)
    assert attnlab._attnlab._kept_bytes() == sum(x.nbytes for x in c), attnlab._attnlab._kept_bytes()
    h = 6000
    assert np.array_equal(out[h:h + 1], attnlab.attend(big[0][h:h + 1], big[1][h:h + 1], big[2][h:h + 1], "exact"))


@pytest.mark.parametrize("impl", ["reference", "fast"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nonfinite_found_wherever_it_is(dtype, impl):
    """The conversion checks every value it copies (in registers inside the 8 x 8 float and 4 x 4 double blocks,
    read back at the blocks' edges), on one thread and in the bands two threads share, and exact attention's fast
    kernel, which reads C order in place, checks its inputs where they are: an infinity or a NaN at any position of
    any input is refused, named at its flat index as attend names it."""
    r = rng(11)
    # Every position of small heads whose rows and columns end past a whole block, on one thread.
    for shape in [(13, 11), (2, 9, 6)]:
        q, k, v = qkv(r, shape, dtype)
        for which, name in ((0, "--q"), (1, "--k"), (2, "--v")):
            for flat in range(q.size):
                for bad in (np.inf, np.nan):
                    x = [q, k, v]
                    x[which] = x[which].copy()
                    x[which].flat[flat] = bad
                    with pytest.raises(ValueError, match=rf"^{name}: value {'inf' if bad == np.inf else 'nan'} at flat index {flat} "):
                        attnlab.attend(*x, "exact", impl=impl, threads=1)
    # Heads large enough for two threads (three inputs cut into bands), at band and block boundaries and edges.
    q, k, v = qkv(r, (1, 1, 1001, 69), dtype)
    rows, cols = q.shape[-2:]
    for row in (0, 7, 8, 511, 512, 513, 999, 1000):
        for col in (0, 7, 8, 63, 64, 68):
            for which, name in ((0, "--q"), (2, "--v")):
                x = [q, k, v]
                x[which] = x[which].copy()
                x[which][0, 0, row, col] = -np.inf
                with pytest.raises(ValueError, match=rf"^{name}: value -inf at flat index {row * cols + col} "):
                    attnlab.attend(*x, "exact", impl=impl, threads=2)
    assert np.isfinite(attnlab.attend(q, k, v, "exact", impl=impl, threads=2)).all()


@pytest.mark.parametrize("method", ["exact", "streaming"])
def test_fast_kernel_reads_c_order_in_place(method):
    """Exact and streaming attention's fast kernel takes C-order inputs as they are and writes the output array itself:
    the thread's kept conversion buffers are not touched, the bits are those of the converted path (a Fortran-ordered
    copy of the same values) and of the reference kernel's program run, and an output that overflows is refused with
    the converted path's message, naming the same first value."""
    r = rng(12)
    for shape in [(1, 1), (2, 3), (70, 9), (2, 3, 65, 16)]:
        for dtype in (np.float32, np.float64):
            q, k, v = qkv(r, shape, dtype, d_v=5)
            kept = attnlab._attnlab._kept_bytes()  # what the conversions of earlier calls left
            got = attnlab.attend(q, k, v, method, impl="fast")
            assert attnlab._attnlab._kept_bytes() == kept, (shape, dtype)
            assert np.array_equal(got, attnlab.attend(np.asfortranarray(q), k, v, method, impl="fast")), (shape, dtype)
    q, k, v = qkv(r, (2, 3, 40, 8), np.float64)
    big_q, big_k = q * 1e160, k * 1e160  # scores of about 1e320: infinite, then NaN
    with pytest.raises(attnlab.NonFiniteError) as in_place:
        attnlab.attend(big_q, big_k, v, method, impl="fast")
    with pytest.raises(attnlab.NonFiniteError) as converted:
        attnlab.attend(np.asfortranarray(big_q), big_k, v, method, impl="fast")
    assert str(in_place.value) == str(converted.value), (in_place.value, converted.value)
    assert str(in_place.value).startswith(f"{method} gave "), in_place.value
