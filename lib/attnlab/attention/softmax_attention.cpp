// Exact softmax attention softmax(Q K^T / sqrt(d)) V: the reference every approximation is measured against.
#include "attnlab/attention/softmax_attention.hpp"

#include <cmath>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

template <typename T>
Mat<T> softmax_attention_matrix(const Mat<T>& q, const Mat<T>& k) {
  detail::check_attention_shapes("softmax_attention", q, k, k);
  // q is (n_q, d), k is (n_k, d); p_qk is (n_q, n_k).
  // pass 1: logits, scaled by 1/sqrt(d) so their spread does not grow with d.
  Mat<T> p_qk = (q * k.transpose()) * (T(1) / std::sqrt(static_cast<T>(q.cols())));
  // pass 2: row softmax; softmax_rows_inplace subtracts each row's maximum before exp(),
  // which changes nothing mathematically and keeps exp() from overflowing for any logits.
  softmax_rows_inplace(p_qk);
  return p_qk;
}

template <typename T>
Mat<T> softmax_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  detail::check_attention_shapes("softmax_attention", q, k, v);
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); p_kq is (n_k, n_q) = P^T; out is (n_q, d_v).
  // The same computation as softmax_attention_matrix(q, k) * v, with P stored transposed: the
  // storage is column-major, so each query's n_k logits are then contiguous, and the softmax
  // pass walks memory in order instead of with stride n_q (4x faster at n = 1024).
  // pass 1: logits K Q^T / sqrt(d). The product goes straight into p_kq (noalias) and is scaled in
  // place: written as one expression, Eigen evaluates the product into a temporary n_k x n_q matrix
  // first, and the peak memory is two n x n matrices instead of one.
  Mat<T> p_kq(k.rows(), q.rows());
  p_kq.noalias() = k * q.transpose();
  p_kq *= T(1) / std::sqrt(static_cast<T>(q.cols()));
  // pass 2: softmax of each column: subtract its maximum (exp() then never overflows and the
  // largest term is exactly 1, so the sum is >= 1), exponentiate, divide by the sum.
  for (Eigen::Index i = 0; i < p_kq.cols(); ++i) {
    auto col = p_kq.col(i);
    col /= exp_shifted_inplace(col, col.maxCoeff());
  }
  // pass 3: the weighted average of the values.
  return p_kq.transpose() * v;
}

template <typename T>
HeadStack<T> softmax_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  return detail::map_heads(q, k, v, [](const Mat<T>& qh, const Mat<T>& kh, const Mat<T>& vh) {
    return softmax_attention(qh, kh, vh);
  });
}

template Mat<float> softmax_attention_matrix(const Mat<float>&, const Mat<float>&);
template Mat<double> softmax_attention_matrix(const Mat<double>&, const Mat<double>&);
template Mat<float> softmax_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&);
template Mat<double> softmax_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&);
template HeadStack<float> softmax_attention(const HeadStack<float>&, const HeadStack<float>&, const HeadStack<float>&);
template HeadStack<double> softmax_attention(const HeadStack<double>&, const HeadStack<double>&,
                                             const HeadStack<double>&);

}  // namespace attnlab
