// Linear attention in the two forms the UCU report means: Shen et al.'s efficient attention
// (its text) and Katharopoulos et al.'s elu(x) + 1 feature map (its public code).
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Shen et al. (2018), "Efficient Attention": softmax_row(Q) (softmax_col(K)^T V), n_q x d_v,
// in O(n d d_v) time without any n x n matrix. softmax_row normalises each query over its d
// features, softmax_col each key feature over the n positions; no 1/sqrt(d) scale (the paper has none).
// Q is n_q x d, K is n_k x d, V is n_k x d_v; throws std::invalid_argument on empty or mismatched shapes.
template <typename T>
Mat<T> efficient_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v);

// The n_q x n_k matrix softmax_row(Q) softmax_col(K)^T that efficient_attention applies
// implicitly. Its rows sum to 1 (rows of softmax_row(Q) sum to 1, columns of softmax_col(K) too),
// so it is an attention matrix in its own right, but not softmax(Q K^T / sqrt(d)).
template <typename T>
Mat<T> efficient_attention_matrix(const Mat<T>& q, const Mat<T>& k);

// Katharopoulos et al. (2020), "Transformers are RNNs": with phi(x) = elu(x) + 1 applied
// entrywise, out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)); no scale.
template <typename T>
Mat<T> elu_linear_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v);

// Its n_q x n_k attention matrix phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j'); rows sum to 1.
template <typename T>
Mat<T> elu_linear_attention_matrix(const Mat<T>& q, const Mat<T>& k);

// The report's equivalence argument without softmax: (Q K^T) V / d and Q (K^T V) / d. Equal in
// exact arithmetic by associativity; the first costs O(n^2 d), the second O(n d^2).
template <typename T>
Mat<T> unnormalised_attention_quadratic(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v);
template <typename T>
Mat<T> unnormalised_attention_linear(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v);

template <typename T>
HeadStack<T> efficient_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);
template <typename T>
HeadStack<T> elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);

// The fast kernel of elu_linear_attention() on every head (the same underflow rescaling): the
// three passes of fast_passes.hpp, in parallel over (head, block) pairs; checked against the
// reference in verify/fast_attention_checks.cpp.
template <typename T>
HeadStack<T> fast_elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);

// The fast kernel of efficient_attention() (Shen et al.: softmax_row(Q) (softmax_col(K)^T V)) on every head,
// in the same three passes: (1) per key block, exp(K_j - its column maxima)^T V_j with those maxima and the
// column sums; (2) per head, the blocks merged relative to each feature's overall maximum (the online
// softmax's rescaling: nothing overflows), in block order, divided by the sums: the d x d_v context;
// (3) per query block, exp(Q_i - row maxima) times the context (broadcast_gemm), divided by the row sums.
// Checked against the reference in verify/test_fast_attention.cpp.
template <typename T>
HeadStack<T> fast_efficient_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);

}  // namespace attnlab
