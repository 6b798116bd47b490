// The stack of pre-LayerNorm Transformer blocks that both models trained here are built around (vit_spec.md's
// and recall_spec.md's "Block"): a block's parameters, what its forward keeps, the names of its tensors in a
// checkpoint's manifest, the layers' attention methods, and the stack's forward and backward passes over a chunk
// of independent sequences of n tokens. The ViT puts a patch embedding before it and a pooled classifier after
// it; the recall model a token embedding and a head at every query position.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/model/layernorm.hpp"
#include "attnlab/model/mha.hpp"
#include "attnlab/model/mlp.hpp"
#include "attnlab/model/tensor_ref.hpp"

namespace attnlab {

// One block: h = x + MHA(LN1(x)); x' = h + MLP(LN2(h)). The same struct holds the gradients.
template <typename T>
struct BlockParams {
  Vec<T> ln1_gamma, ln1_beta;  // (D)
  MhaParams<T> attn;
  Vec<T> ln2_gamma, ln2_beta;  // (D)
  MlpParams<T> mlp;
};

// What one block's forward keeps for the backward, for one chunk (reused from step to step).
template <typename T>
struct BlockTape {
  LayerNormTape<T> ln1, ln2;
  Mat<T> ln1_out, attn_out, h, ln2_out, mlp_out;  // (B n, D) each
  MhaTape<T> mha;
  MlpTape<T> mlp;
};

// The widths of a stack: D the residual width, H heads of query/key width d_k (values D / H), L blocks, MLP width.
struct BlockShape {
  Eigen::Index D = 0, heads = 0, key_width = 0, layers = 0, mlp = 0;
};

// L blocks of the shape, every tensor zero (W_Q, W_K: D x H d_k; W_V, W_O: D x D).
template <typename T>
std::vector<BlockParams<T>> shaped_blocks(const BlockShape& shape);

// Named views of a matrix and of a vector.
template <typename T>
TensorRef<T> tensor_ref(const std::string& name, Mat<T>& m) {
  return {name, m.data(), m.rows(), m.cols(), false};
}
template <typename T>
TensorRef<T> tensor_ref(const std::string& name, Vec<T>& v) {
  return {name, v.data(), v.rows(), 1, true};
}

// Block l's tensors in manifest order: block{l}.ln1.gamma, .ln1.beta, .attn.Wq, .bq, .Wk, .bk, .Wv, .bv, .Wo, .bo,
// then method(l, "block{l}.attn.method.", out) (the layer's method appends its own), then .ln2.gamma, .ln2.beta,
// .mlp.W1, .b1, .W2, .b2.
template <typename T, typename MethodTensors>
void append_block_tensors(std::vector<TensorRef<T>>& out, BlockParams<T>& b, std::size_t l, MethodTensors method) {
  const std::string pre = "block" + std::to_string(l) + ".";
  out.push_back(tensor_ref(pre + "ln1.gamma", b.ln1_gamma));
  out.push_back(tensor_ref(pre + "ln1.beta", b.ln1_beta));
  out.push_back(tensor_ref(pre + "attn.Wq", b.attn.Wq));
  out.push_back(tensor_ref(pre + "attn.bq", b.attn.bq));
  out.push_back(tensor_ref(pre + "attn.Wk", b.attn.Wk));
  out.push_back(tensor_ref(pre + "attn.bk", b.attn.bk));
  out.push_back(tensor_ref(pre + "attn.Wv", b.attn.Wv));
  out.push_back(tensor_ref(pre + "attn.bv", b.attn.bv));
  out.push_back(tensor_ref(pre + "attn.Wo", b.attn.Wo));
  out.push_back(tensor_ref(pre + "attn.bo", b.attn.bo));
  method(l, pre + "attn.method.", out);
  out.push_back(tensor_ref(pre + "ln2.gamma", b.ln2_gamma));
  out.push_back(tensor_ref(pre + "ln2.beta", b.ln2_beta));
  out.push_back(tensor_ref(pre + "mlp.W1", b.mlp.W1));
  out.push_back(tensor_ref(pre + "mlp.b1", b.mlp.b1));
  out.push_back(tensor_ref(pre + "mlp.W2", b.mlp.W2));
  out.push_back(tensor_ref(pre + "mlp.b2", b.mlp.b2));
}

// The layers' attention methods, one per block.
template <typename T>
using BlockAttention = std::vector<std::unique_ptr<TrainableAttention<T>>>;

// Layer l's method parameters, named pre + the method's own names, appended to out (append_block_tensors's
// `method` for a model's parameters).
template <typename T>
void append_method_parameters(const BlockAttention<T>& attention, std::size_t l, const std::string& pre,
                              std::vector<TensorRef<T>>& out);
// The same names for layer l's gradients method_grads[l] (shaped by zero_method_grads).
template <typename T>
void append_method_gradients(const BlockAttention<T>& attention, std::vector<std::vector<Mat<T>>>& method_grads,
                             std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out);
// Every layer's fixed draws (Linformer's E and F, the random features), named block{l}.attn.method.<name>.
template <typename T>
std::vector<TensorRef<T>> method_buffer_tensors(const BlockAttention<T>& attention);
// Zero gradients for every layer's method parameters, one matrix per parameter (empty for a method without any).
template <typename T>
std::vector<std::vector<Mat<T>>> zero_method_grads(const BlockAttention<T>& attention);

// Both models' initialisation of their own tensors, in manifest order: every gamma 1, other vectors 0, matrices
// N(0, std^2) drawn column by column from rng.
template <typename T>
void initialise_tensors(const std::vector<TensorRef<T>>& tensors, Rng& rng, double std);

// Every layer's method, each from factory(attention with n, d_k, d_v = D / H and heads filled in, seed
// derive_seed(seed, 1000 + l)): layer l's own draws (Linformer's E, F, the random features) never depend on
// another layer's. std::invalid_argument "<who>: no attention method for '<name>'" when the factory returns none.
template <typename T>
using AttentionFactory = std::function<std::unique_ptr<TrainableAttention<T>>(const TrainableAttentionConfig&)>;
template <typename T>
BlockAttention<T> make_block_attention(const TrainableAttentionConfig& attention,
                                                                         const BlockShape& shape, Eigen::Index n,
                                                                         std::uint64_t seed, const AttentionFactory<T>& factory,
                                                                         const std::string& who);

// x[0] (B n, D) given: runs every block, x[l + 1] = block l (x[l]); with `train` each block keeps its tape.
template <typename T>
void blocks_forward(const std::vector<BlockParams<T>>& blocks,
                    const BlockAttention<T>& attention, Eigen::Index n,
                    Eigen::Index heads, std::vector<Mat<T>>& x, std::vector<BlockTape<T>>& tapes, bool train);

// Given dx = dL/dx[L] (B n, D): the blocks in reverse, dx replaced by dL/dx[0]; ADDS into grads[l] and into
// method_grads[l] (one per method parameter, already sized; empty for methods without any). dh, dz, dtmp are
// scratch of the chunk's shape. The residual connections pass the gradient straight through and the branches add.
template <typename T>
void blocks_backward(const std::vector<BlockParams<T>>& blocks,
                     const BlockAttention<T>& attention, Eigen::Index n,
                     Eigen::Index heads, std::vector<BlockTape<T>>& tapes, Mat<T>& dx, Mat<T>& dh, Mat<T>& dz, Mat<T>& dtmp,
                     std::vector<BlockParams<T>>& grads, std::vector<std::vector<Mat<T>>>& method_grads);

}  // namespace attnlab
