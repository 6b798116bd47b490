"""Safetensors with NumPy, written independently of attnlab's reader: small checkpoints named and stored
exactly as the real models store them, and a reader for what attnlab writes.

Conventions (Hugging Face transformers):
  bert, roberta  {prefix}encoder.layer.{l}.attention.self.{query,key,value}.{weight,bias}; nn.Linear stores
                 weight (out, in) with y = x W^T + b, so head h's W_Q,h (d x d_k) is weight[h d_k:(h+1) d_k].T
  vit            {prefix}encoder.layer.{l}.attention.attention.{query,key,value}.{weight,bias}, nn.Linear
  gpt2           {prefix}h.{l}.attn.c_attn.{weight,bias}; Conv1D stores weight (in, out) with y = x W + b, and
                 c_attn's 3 d outputs are Q | K | V, so W_Q,h = weight[:, h d_k:(h+1) d_k], W_K,h the same at d + ...
  llama          {prefix}layers.{l}.self_attn.{q,k,v,o}_proj.weight, nn.Linear without bias; k_proj holds
                 kv_heads key heads, query head h reading key head h // (heads / kv_heads) (repeat_kv)
  attnlab        block{l}.attn.{Wq,Wk,bq,bk}, stored (in, out), y = x W + b
"""
import json
import os
import struct

import numpy as np

import st_format


def round_bf16(x):
    """float64 -> the nearest bfloat16 (ties to even) as float64: float32 first, then 16 bits dropped with rounding."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return bf16_to_float(rounded)


def bf16_to_float(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def stored(x, dtype):
    """The values x becomes when stored as dtype, as float64 (exactly what a reader widens them to)."""
    x = np.asarray(x, dtype=np.float64)
    if dtype == "F64":
        return x.copy()
    if dtype == "F32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "F16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "BF16":
        return round_bf16(x)
    raise ValueError(dtype)


def encode(x, dtype):
    """The little-endian bytes of x (already representable in dtype) in C order."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if dtype == "F64":
        return x.astype("<f8").tobytes()
    if dtype == "F32":
        return x.astype("<f4").tobytes()
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    if dtype == "BF16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    raise ValueError(dtype)


def write_file(path, tensors, metadata=None):
    """tensors: {name: (dtype, float64 array representable in dtype)}, written in name order."""
    items = [(name, dtype, list(a.shape), encode(a, dtype)) for name, (dtype, a) in sorted(tensors.items())]
    with open(path, "wb") as f:
        f.write(st_format.safetensors_bytes(items, metadata))


def write_checkpoint(directory, tensors, config=None, shards=1, metadata=None):
    """One model.safetensors, or `shards` files model-0000i-of-0000n.safetensors (tensors dealt in name order)
    with model.safetensors.index.json; config.json beside them. Returns the path to give attnlab_inspect."""
    os.makedirs(directory, exist_ok=True)
    if config is not None:
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
    if shards == 1:
        path = os.path.join(directory, "model.safetensors")
        write_file(path, tensors, metadata)
        return path
    names = sorted(tensors)
    weight_map, total = {}, 0
    for i in range(shards):
        part = {n: tensors[n] for n in names[i::shards]}
        file = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        write_file(os.path.join(directory, file), part, metadata)
        for n, (dtype, a) in part.items():
            weight_map[n] = file
            total += a.size * st_format.DTYPE_BYTES[dtype]
    path = os.path.join(directory, "model.safetensors.index.json")
    with open(path, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    return path


def read_file(path):
    """{name: float64 array} of a safetensors file's float tensors, and its metadata."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        raw = body[b:end]
        shape = tuple(e["shape"])
        dtype = e["dtype"]
        if dtype == "BF16":
            a = bf16_to_float(np.frombuffer(raw, dtype="<u2"))
        else:
            a = np.frombuffer(raw, dtype={"F64": "<f8", "F32": "<f4", "F16": "<f2"}[dtype]).astype(np.float64)
        out[name] = a.reshape(shape)
    return out, meta
