// Exact softmax attention softmax(Q K^T / sqrt(d)) V: the reference every approximation is measured against.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// The attention matrix P = softmax_row(Q K^T / sqrt(d)), n_q x n_k; every row sums to 1.
// Q is n_q x d, K is n_k x d; throws std::invalid_argument on empty or mismatched shapes.
template <typename T>
Mat<T> softmax_attention_matrix(const Mat<T>& q, const Mat<T>& k);

// softmax(Q K^T / sqrt(d)) V (n_q x d_v), forming the n_q x n_k matrix P, kept as P^T in *p_t when
// given (n_k x n_q, column i query i's weights over the keys). Stable for logits of any finite size. The
// forward of exact attention, written once: the trainable ExactTrain (whose backward needs P) runs it too.
// Example: Mat<double> out = softmax_attention(q, k, v);
template <typename T>
Mat<T> softmax_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>* p_t = nullptr);

// The same on every head of a (batch, heads, n, d) stack, heads in parallel (OpenMP).
template <typename T>
HeadStack<T> softmax_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);

}  // namespace attnlab
