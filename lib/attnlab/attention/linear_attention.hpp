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
// With `passes`, what the passes produce on the way is kept there (every buffer resized): the forward of
// efficient attention, written once; the trainable linear-shen runs it too and keeps them for its backward.
template <typename T>
struct EfficientAttentionPasses {
  Mat<T> qr_t;  // d x n_q: softmax over the features of each query, stored transposed (one column a query)
  Mat<T> kc;    // n_k x d: softmax over the positions of each key feature
  Mat<T> ctx;   // d x d_v: kc^T V, one context vector per key feature
};
template <typename T>
Mat<T> efficient_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v,
                           EfficientAttentionPasses<T>* passes = nullptr);

// The n_q x n_k matrix softmax_row(Q) softmax_col(K)^T that efficient_attention applies
// implicitly. Its rows sum to 1 (rows of softmax_row(Q) sum to 1, columns of softmax_col(K) too),
// so it is an attention matrix in its own right, but not softmax(Q K^T / sqrt(d)).
template <typename T>
Mat<T> efficient_attention_matrix(const Mat<T>& q, const Mat<T>& k);

// Katharopoulos et al.'s feature map phi(x) = elu(x) + 1 = max(x, 0) + exp(min(x, 0)) entrywise (always
// > 0), with the underflow rescaling every elu kernel applies. The output of elu linear attention is
// unchanged when a row of phi(Q), or all of phi(K), is multiplied by a positive number (it appears in
// numerator and denominator alike). exp() underflows to 0 below -745 in double (-104 in float), so a row
// of Q, or all of K, made of very negative entries would give 0 / 0: where the largest entry m of such a
// row (or of all of K) is negative, every entry is negative and phi = exp(x) there, so exp(x - m) =
// phi(x) / phi(m) is used instead, whose largest term is exactly 1. Its derivative is exp(x - m) too: m
// is a constant, exactly, because the output is invariant to the scale it changes. With dphi, also the
// entrywise derivative of phi (1 where x > 0, else phi).
//   elu_query_features: each row of x (n x d, queries) rescaled on its own.
template <typename T>
void elu_query_features(const Eigen::Ref<const Mat<T>>& x, Mat<T>& phi, Mat<T>* dphi = nullptr);
//   elu_key_features: all of x rescaled at once when `largest` < 0; `largest` is the maximum of all of K,
//   of which x may be a block (the fast kernel maps K block by block).
template <typename T>
void elu_key_features(const Eigen::Ref<const Mat<T>>& x, T largest, Mat<T>& phi, Mat<T>* dphi = nullptr);

// Katharopoulos et al. (2020), "Transformers are RNNs": with phi(x) = elu(x) + 1 applied
// entrywise, out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)); no scale. With
// `passes`, what the passes produce on the way is kept there, the features' derivatives too when
// `derivatives`: the forward of elu linear attention, written once; the trainable linear-elu runs it too
// and keeps them for its backward.
template <typename T>
struct EluLinearPasses {
  Mat<T> phi_q, phi_k;    // n_q x d, n_k x d: the feature maps as used (rescaled where rescaled)
  Mat<T> dphi_q, dphi_k;  // their entrywise derivatives, when asked for (else left empty)
  Mat<T> kv;              // d x d_v: phi(K)^T V
  Vec<T> ksum;            // d: phi(K)^T 1
  Vec<T> den;             // n_q: phi(Q) ksum, > 0
};
template <typename T>
Mat<T> elu_linear_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, EluLinearPasses<T>* passes = nullptr,
                            bool derivatives = false);

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
// reference in verify/test_fast_attention.cpp.
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
