"""attnlab's attention methods as differentiable PyTorch functions: the forward by attnlab.attend, the backward by
attnlab.attend_grad (attnlab's hand-written backward passes). Imported only where PyTorch is (python3-torch).

    import attnlab.torch
    out = attnlab.torch.attend(q, k, v, "linear-elu")   # q, k, v: tensors with requires_grad
    out.sum().backward()                                # q.grad, k.grad, v.grad from attnlab's backward
"""
import numpy as np
import torch

from . import attend as _attend, attend_grad as _attend_grad


def _array(t):
    """A tensor's values as a NumPy array (the tensor's own memory for a contiguous CPU tensor)."""
    return t.detach().cpu().numpy()


class Attention(torch.autograd.Function):
    """attnlab.attend as a torch.autograd.Function: apply(q, k, v, method, params)."""

    @staticmethod
    def forward(ctx, q, k, v, method, params):
        ctx.method, ctx.params = method, params
        ctx.save_for_backward(q, k, v)
        return torch.from_numpy(_attend(_array(q), _array(k), _array(v), method, **params)).to(q.device)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        grads = _attend_grad(_array(q), _array(k), _array(v), np.ascontiguousarray(_array(dout)), ctx.method, **ctx.params)
        return tuple(torch.from_numpy(g).to(q.device) for g in grads) + (None, None)


def attend(q, k, v, method="exact", **params):
    """attnlab.attend on tensors (float32 or float64), differentiable through attnlab.attend_grad; the same
    keywords (draws included; save_draws is not). The backward recomputes the forward it differentiates."""
    if params.get("save_draws"):
        raise ValueError("attnlab.torch.attend returns the output alone: call attnlab.attend(..., save_draws=True) for the draws")
    return Attention.apply(q, k, v, method, params)
