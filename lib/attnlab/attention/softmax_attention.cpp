// Exact softmax attention softmax(Q K^T / sqrt(d)) V: the reference every approximation is measured against.
#include "attnlab/attention/softmax_attention.hpp"

#include <cmath>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

// Passes 1 and 2 of exact attention: p_t = P^T = softmax_col(K Q^T / sqrt(d)), (n_k, n_q), resized here.
// P is stored transposed: the storage is column-major, so each query's n_k logits are then contiguous,
// and the softmax walks memory in order instead of with stride n_q (4x faster at n = 1024).
template <typename T>
void attention_weights_t(const Mat<T>& q, const Mat<T>& k, Mat<T>& p_t) {
  // pass 1: logits K Q^T / sqrt(d), scaled so their spread does not grow with d. The product goes
  // straight into p_t (noalias) and is scaled in place: written as one expression, Eigen evaluates the
  // product into a temporary n_k x n_q matrix first, and the peak memory is two n x n matrices instead
  // of one.
  p_t.resize(k.rows(), q.rows());
  p_t.noalias() = k * q.transpose();
  p_t *= T(1) / std::sqrt(static_cast<T>(q.cols()));
  // pass 2: softmax of each column (core/softmax.hpp: the maximum subtracted, so exp() never overflows).
  softmax_cols_inplace(p_t);
}

}  // namespace

template <typename T>
Mat<T> softmax_attention_matrix(const Mat<T>& q, const Mat<T>& k) {
  detail::check_attention_shapes("softmax_attention", q, k, k);
  // q is (n_q, d), k is (n_k, d); P is (n_q, n_k): the transpose of the weights softmax_attention() uses.
  Mat<T> p_t;
  attention_weights_t(q, k, p_t);
  return p_t.transpose();
}

template <typename T>
Mat<T> softmax_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>* p_t) {
  detail::check_attention_shapes("softmax_attention", q, k, v);
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); p_t is (n_k, n_q) = P^T; out is (n_q, d_v).
  Mat<T> local;
  Mat<T>& pt = p_t != nullptr ? *p_t : local;
  // passes 1-2: the attention weights, one column per query.
  attention_weights_t(q, k, pt);
  // pass 3: the weighted average of the values.
  Mat<T> out(q.rows(), v.cols());
  out.noalias() = pt.transpose() * v;
  return out;
}

template <typename T>
HeadStack<T> softmax_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v) {
  return detail::map_heads(q, k, v, [](const Mat<T>& qh, const Mat<T>& kh, const Mat<T>& vh) {
    return softmax_attention(qh, kh, vh);
  });
}

template Mat<float> softmax_attention_matrix(const Mat<float>&, const Mat<float>&);
template Mat<double> softmax_attention_matrix(const Mat<double>&, const Mat<double>&);
template Mat<float> softmax_attention(const Mat<float>&, const Mat<float>&, const Mat<float>&, Mat<float>*);
template Mat<double> softmax_attention(const Mat<double>&, const Mat<double>&, const Mat<double>&, Mat<double>*);
template HeadStack<float> softmax_attention(const HeadStack<float>&, const HeadStack<float>&, const HeadStack<float>&);
template HeadStack<double> softmax_attention(const HeadStack<double>&, const HeadStack<double>&,
                                             const HeadStack<double>&);

}  // namespace attnlab
