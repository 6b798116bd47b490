"""attnlab from Python: attnlab's attention methods, their hand-written gradients and its checkpoint inspector on NumPy
arrays, computed by the same library objects as build/bin/attend and build/bin/attnlab_inspect (docs/python.md).

    import attnlab
    out = attnlab.attend(q, k, v, "nystrom", landmarks=32)          # q, k, v: (n, d) or (batch, heads, n, d)
    dq, dk, dv = attnlab.attend_grad(q, k, v, dout, "nystrom", landmarks=32)
    report = attnlab.inspect("gpt2/model.safetensors")              # layout found from the names
    print(report)                                                   # one line per claim

Every parameter is the attend program's flag of the same name, '-' written '_' (pinv_init for --pinv-init), with its
default and range (attnlab.methods() lists them). Bad input raises ValueError with the line the program prints
(without "attend: " and without a file name: "--landmarks (= 100) exceeds min(n_q, n_k) = 64"); a result holding NaN
or infinity raises NonFiniteError, a ValueError. The GIL is released while the library computes.
"""
import os

from . import _attnlab
from ._attnlab import NonFiniteError

__all__ = ["attend", "attend_grad", "methods", "inspect", "inspect_heads", "Inspection", "NonFiniteError"]


def attend(q, k, v, method="exact", *, draws=None, save_draws=False, **params):
    """The attention `method` of Q, K and V, as `build/bin/attend --method METHOD` computes it, bit for bit.

    q: (n_q, d), k: (n_k, d), v: (n_k, d_v), or stacks (heads, n, d) or (batch, heads, n, d) agreeing in their leading
    axes; all float32 or all float64, the precision of the computation and of the result. Arrays are read where they
    lie, whatever their strides (C or Fortran order, slices, transposes); only one with negative strides or misaligned
    data is first copied to C order. Returns a new C-order array of q's leading axes and (n_q, d_v).

    method: exact, streaming, linear-shen, linear-elu, linformer, random-fourier, favor or nystrom (methods()).
    params: attend's flags by name: impl ("reference" or "fast"), threads (default: all cores; the same bits for any),
    seed, block, proj, projection, share_kv, features, temperature, iid, landmarks, pinv, pinv_iterations,
    pinv_init, rcond. An option the method does not use is refused, not ignored; None means the default.
    draws: {"E": E, "F": F} (linformer) or {"omega": W} (random-fourier, favor) in place of the seed's draws, as
    attend's --draws reads them. save_draws=True returns (out, draws), the draws as such a dict (attend's
    --save-draws).
    """
    return _attnlab.attend(q, k, v, method, draws, save_draws, params)


def attend_grad(q, k, v, dout, method="exact", *, draws=None, **params):
    """(dq, dk, dv): the gradients of sum(dout * attend(q, k, v, method, **params)) from attnlab's hand-written
    backward passes, to check your own implementation's gradients against.

    dout has the output's shape. The arguments are attend()'s. impl="reference" (the default) differentiates each
    method's trainable form (the backward of lib/attnlab/attention/<method>_train.cpp, with the same draws as
    attend()); impl="fast" exact and streaming attention's fused backward (FlashAttention-2's). methods() says which
    methods have which; a method or option without one is refused with a ValueError saying so.
    """
    return _attnlab.attend_grad(q, k, v, dout, method, draws, params)


def methods():
    """The registry: {method: {"summary", "random", "fast_kernel", "gradients", "parameters"}}, each parameter
    {"flag", "type", "default", "min", "max", "choices", "range", "help"} as attend's --help states it (a default of
    None depends on the inputs, as its help says)."""
    return _attnlab.methods()


class Inspection:
    """What attnlab_inspect measures and judges on a model, in memory: its tables as NumPy structured arrays (the
    columns of the CSV files it writes, docs/inspect.md), the claims rows of its claims.csv, and the lines it prints.

    title         the model, its layout, widths and precision
    summary       one line per claim (R2, R5, R6, S1, S2, G1) naming the worst head, then the skew shares
    heads         inspect_heads.csv: one row per layer, head and form
    layers        inspect_layers.csv;  costs: inspect_costs.csv;  param_counts: inspect_param_counts.csv
    timing        inspect_timing.csv (the only table that changes from run to run)
    claims        claims.csv's rows: id, source, verdict, metric, observed, threshold, evidence, note, experiment
    """

    def __init__(self, tables):
        self.title = tables["title"]
        self.summary = list(tables["summary"])
        for name in ("heads", "layers", "costs", "param_counts", "timing", "claims"):
            setattr(self, name, tables[name])

    def verdicts(self):
        """{claim id: verdict}."""
        return {str(r["id"]): str(r["verdict"]) for r in self.claims}

    def __repr__(self):
        return "\n".join([self.title] + self.summary)


def inspect(path, layout="auto", *, heads=None, kv_heads=None, prefix=None, q_pattern=None, k_pattern=None,
            q_bias_pattern=None, k_bias_pattern=None, transpose=False, precision="auto", threads=None):
    """attnlab_inspect on a safetensors checkpoint (a file, a model.safetensors.index.json, a directory holding
    either, or an attnlab checkpoint directory), in memory: an Inspection.

    layout: "auto" (the named layout whose tensor names the checkpoint has) or bert, roberta, vit, gpt2, llama,
    attnlab, custom. The keywords are attnlab_inspect's flags (heads for --heads, q_pattern for --q-pattern, ...).
    A malformed or hostile file, or a layout that does not fit, raises ValueError with the program's line.
    """
    return Inspection(_attnlab.inspect(os.fspath(path), layout, heads, kv_heads, prefix, q_pattern, k_pattern,
                                       q_bias_pattern, k_bias_pattern, transpose, precision, threads))


def inspect_heads(Wq, Wk, heads, kv_heads=None, bq=None, bk=None, *, transpose=False, precision="auto", threads=None,
                  name="arrays"):
    """The inspection of attnlab_inspect on weights already in memory: an Inspection.

    Wq, Wk: as torch.nn.Linear stores them, (heads * d_k, d) output x input (model.state_dict()[...].numpy()); Wk has
    kv_heads * d_k rows (grouped-query attention). transpose=True takes the x W storage instead, (d, heads * d_k)
    (GPT-2's Conv1D, attnlab's own). A 3-D array is a stack of layers, the layers first. bq, bk: the biases,
    (outputs,) or (layers, outputs). A shape that does not fit the storage asked for is refused (ValueError), never
    transposed to fit. float16, float32 or float64, read where they lie; arithmetic in float unless a weight is
    float64 (precision="auto"), as attnlab_inspect's --precision.
    """
    return Inspection(_attnlab.inspect_heads(Wq, Wk, heads, kv_heads, bq, bk, transpose, precision, threads, name))


def __getattr__(name):
    # attnlab.torch (a torch.autograd.Function over attend and attend_grad) exists only where PyTorch imports.
    if name == "torch":
        import importlib
        try:
            return importlib.import_module(".torch", __name__)
        except ImportError as e:
            raise AttributeError(f"attnlab.torch needs PyTorch, which does not import here ({e}); Debian: python3-torch") from e
    raise AttributeError(f"module 'attnlab' has no attribute '{name}'")
