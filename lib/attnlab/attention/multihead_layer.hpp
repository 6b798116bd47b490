// A multi-head attention layer, Concat(head_1, ..., head_h) W_O, with the attention method as a parameter.
#pragma once

#include <Eigen/Dense>
#include <functional>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// The layer's weights as the UCU report (seed 002, section 2.1) writes them:
// Q = X W_Q, K = X W_K, V = X W_V, head_i uses columns [i d_h, (i + 1) d_h) of each
// (nn.Linear(d_model, d_model) split into heads), out = Concat(heads) W_O + b_O.
template <typename T>
struct MultiheadWeights {
  Mat<T> wq, wk, wv;  // d_model x (heads d_h)
  Mat<T> wo;          // (heads d_h) x d_out
  Vec<T> bo;          // d_out, or empty for no output bias
  Eigen::Index heads = 1;

  Eigen::Index head_dim() const { return wq.cols() / heads; }
};

// Weights with i.i.d. N(0, 1/d_model) entries (variance-preserving projections), no bias.
MultiheadWeights<double> gaussian_multihead_weights(Eigen::Index d_model, Eigen::Index heads, Rng& rng);

// One head's attention: (q n x d_h, k n x d_h, v n x d_h) -> n x d_h.
template <typename T>
using HeadAttention = std::function<Mat<T>(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v)>;

// Exact softmax attention softmax(q k^T / sqrt(d_h)) v (row-blocked, max-subtracted).
template <typename T>
HeadAttention<T> exact_head_attention();

// Linformer attention with the given E, F (k x n) for every head.
template <typename T>
HeadAttention<T> linformer_head_attention(LinformerProjections<T> proj);

// One sequence: x n x d_model -> n x d_out. Throws std::invalid_argument naming the value
// when the weights' shapes disagree with x or heads does not divide the projection width.
template <typename T>
Mat<T> multihead_layer(const Mat<T>& x, const MultiheadWeights<T>& w, const HeadAttention<T>& attend);

// A batch of sequences, stored as a stack of shape (batch, 1, n, d_model); the heads of all
// sequences run in parallel over batch * heads with OpenMP. Output (batch, 1, n, d_out).
template <typename T>
HeadStack<T> multihead_layer(const HeadStack<T>& x, const MultiheadWeights<T>& w, const HeadAttention<T>& attend);

}  // namespace attnlab
