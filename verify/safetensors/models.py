"""Small checkpoints for every layout attnlab_inspect reads, with their heads kept for the second opinion.

Each model is drawn head by head (W_Q,h, W_K,h: d x d_k, biases b_q,h, b_k,h), rounded to the storage
dtype, then assembled into the tensors the real model stores (st_numpy.py's conventions). Planted among
the random heads: layer 0 head 1 with W_K,h = W_Q,h (S_w of rank d_k, no skew part), layer 1 head 2 with
three zero columns in W_Q,h (rank d_k - 3), and in bert layer 1 head 3 all zero (M = 0).
"""
import numpy as np

import st_numpy

LAYERS, D, HEADS, DK = 2, 32, 4, 8
LLAMA_KV_HEADS = 2


def draw_heads(rng, dtype, heads, kv_heads, bias, zero_head):
    """[layer][head] -> dict(wq, wk, bq, bk) in float64 as stored; key heads shared in groups (grouped-query)."""
    group = heads // kv_heads
    out = []
    for layer in range(LAYERS):
        keys = [st_numpy.stored(rng.normal(0, 0.3, (D, DK)), dtype) for _ in range(kv_heads)]
        kbias = [st_numpy.stored(rng.normal(0, 0.3, DK), dtype) if bias else np.zeros(DK) for _ in range(kv_heads)]
        row = []
        for h in range(heads):
            wq = st_numpy.stored(rng.normal(0, 0.3, (D, DK)), dtype)
            bq = st_numpy.stored(rng.normal(0, 0.3, DK), dtype) if bias else np.zeros(DK)
            if layer == 1 and h == 2:
                wq[:, :3] = 0
            if zero_head and layer == 1 and h == 3:
                wq[:] = 0
                bq[:] = 0
            row.append({"wq": wq, "bq": bq})
        if group == 1:  # W_K,1 = W_Q,1 in layer 0 (only where each query head has its own key head)
            if layer == 0:
                keys[1], kbias[1] = row[1]["wq"].copy(), row[1]["bq"].copy()
        for h in range(heads):
            row[h]["wk"], row[h]["bk"] = keys[h // group], kbias[h // group]
        out.append(row)
    return out


def extras(rng, dtype, names):
    return {n: (dtype, st_numpy.stored(rng.normal(0, 0.1, shape), dtype)) for n, shape in names}


def build(layout, dtype, seed):
    """(tensors {name: (dtype, array)}, config or None, metadata or None, heads, kv_heads, heads[layer][head])."""
    rng = np.random.default_rng(seed)
    heads, kv = HEADS, LLAMA_KV_HEADS if layout == "llama" else HEADS
    bias = layout != "llama"
    hs = draw_heads(rng, dtype, heads, kv, bias, zero_head=layout == "bert")
    t = {}
    if layout in ("bert", "roberta", "vit"):
        prefix = {"bert": "bert.", "roberta": "roberta.", "vit": "vit."}[layout]
        block = "attention.self" if layout != "vit" else "attention.attention"
        for l, row in enumerate(hs):
            base = f"{prefix}encoder.layer.{l}.{block}."
            # nn.Linear: weight (out, in) = W^T, head h owning output rows h d_k .. (h+1) d_k - 1.
            t[base + "query.weight"] = (dtype, np.concatenate([h["wq"].T for h in row], axis=0))
            t[base + "key.weight"] = (dtype, np.concatenate([h["wk"].T for h in row], axis=0))
            t[base + "query.bias"] = (dtype, np.concatenate([h["bq"] for h in row]))
            t[base + "key.bias"] = (dtype, np.concatenate([h["bk"] for h in row]))
            t.update(extras(rng, dtype, [(base + "value.weight", (D, D)), (base + "value.bias", (D,)),
                                         (f"{prefix}encoder.layer.{l}.attention.output.dense.weight", (D, D)),
                                         (f"{prefix}encoder.layer.{l}.intermediate.dense.weight", (2 * D, D))]))
        t.update(extras(rng, dtype, [(f"{prefix}embeddings.word_embeddings.weight", (50, D)),
                                     (f"{prefix}embeddings.position_embeddings.weight", (16, D))]))
        config = {"architectures": [{"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM", "vit": "ViTModel"}[layout]],
                  "model_type": layout, "hidden_size": D, "num_attention_heads": heads, "num_hidden_layers": LAYERS,
                  "intermediate_size": 2 * D, "hidden_act": "gelu", "layer_norm_eps": 1e-12, "attention_probs_dropout_prob": 0.1,
                  "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64"}[dtype]}
        if layout == "vit":
            config.update({"image_size": 32, "patch_size": 8, "qkv_bias": True})
        return t, config, None, heads, kv, hs
    if layout == "gpt2":
        for l, row in enumerate(hs):
            base = f"transformer.h.{l}.attn."
            # Conv1D: weight (in, out) = W; c_attn's outputs are Q | K | V, heads consecutive within each.
            v = st_numpy.stored(rng.normal(0, 0.3, (D, D)), dtype)
            wq = np.concatenate([h["wq"] for h in row], axis=1)
            wk = np.concatenate([h["wk"] for h in row], axis=1)
            t[base + "c_attn.weight"] = (dtype, np.concatenate([wq, wk, v], axis=1))
            bv = st_numpy.stored(rng.normal(0, 0.3, D), dtype)
            t[base + "c_attn.bias"] = (dtype, np.concatenate([np.concatenate([h["bq"] for h in row]),
                                                              np.concatenate([h["bk"] for h in row]), bv]))
            t.update(extras(rng, dtype, [(base + "c_proj.weight", (D, D)), (base + "c_proj.bias", (D,)),
                                         (f"transformer.h.{l}.mlp.c_fc.weight", (D, 4 * D))]))
        t.update(extras(rng, dtype, [("transformer.wte.weight", (50, D)), ("transformer.wpe.weight", (16, D))]))
        config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": D, "n_head": heads, "n_layer": LAYERS,
                  "n_positions": 16, "activation_function": "gelu_new"}
        return t, config, None, heads, kv, hs
    if layout == "llama":
        for l, row in enumerate(hs):
            base = f"model.layers.{l}.self_attn."
            t[base + "q_proj.weight"] = (dtype, np.concatenate([h["wq"].T for h in row], axis=0))
            # One key head per group of heads / kv_heads query heads: k_proj holds kv_heads of them.
            t[base + "k_proj.weight"] = (dtype, np.concatenate([row[j * (heads // kv)]["wk"].T for j in range(kv)], axis=0))
            t.update(extras(rng, dtype, [(base + "v_proj.weight", (kv * DK, D)), (base + "o_proj.weight", (D, D)),
                                         (f"model.layers.{l}.mlp.gate_proj.weight", (2 * D, D)),
                                         (f"model.layers.{l}.input_layernorm.weight", (D,))]))
        t.update(extras(rng, dtype, [("model.embed_tokens.weight", (50, D)), ("lm_head.weight", (50, D))]))
        config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D, "num_attention_heads": heads,
                  "num_key_value_heads": kv, "num_hidden_layers": LAYERS, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
                  "max_position_embeddings": 64, "tie_word_embeddings": False}
        return t, config, None, heads, kv, hs
    if layout == "attnlab":
        for l, row in enumerate(hs):
            t[f"block{l}.attn.Wq"] = (dtype, np.concatenate([h["wq"] for h in row], axis=1))
            t[f"block{l}.attn.Wk"] = (dtype, np.concatenate([h["wk"] for h in row], axis=1))
            t[f"block{l}.attn.bq"] = (dtype, np.concatenate([h["bq"] for h in row]))
            t[f"block{l}.attn.bk"] = (dtype, np.concatenate([h["bk"] for h in row]))
        return t, None, {"format": "attnlab-vit-checkpoint", "H": str(heads), "D": str(D)}, heads, kv, hs
    raise ValueError(layout)
