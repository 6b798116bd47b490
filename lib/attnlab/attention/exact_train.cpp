// Exact softmax attention softmax(q k^T / sqrt(d_k)) v, trainable: forward and backward side by side.
#include "attnlab/attention/exact_train.hpp"

#include <cmath>

namespace attnlab {

template <typename T>
std::string ExactTrain<T>::describe() const {
  return "exact: softmax(q k^T / sqrt(d_k)) v, n = " + std::to_string(shape_.n) +
         ", d_k = " + std::to_string(shape_.d_k) + ", d_v = " + std::to_string(shape_.d_v);
}

template <typename T>
void ExactTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                            std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("exact", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); pt is (n_keys, n_queries) = P^T; out is (n, d_v).
  // P is kept transposed so that each query's weights are one contiguous column.
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  std::unique_ptr<ExactTape<T>> local;
  auto& t = detail::reuse_tape(tape, local);
  Mat<T>& pt = t.pt;
  pt.resize(k.rows(), q.rows());
  // pass 1: logits S^T = K Q^T / sqrt(d_k).
  pt.noalias() = k * q.transpose();
  pt *= scale;
  // pass 2: softmax of each column (max-subtracted: see softmax_cols_inplace).
  detail::softmax_cols_inplace(pt);
  // pass 3: out = P V.
  out.resize(q.rows(), v.cols());
  out.noalias() = pt.transpose() * v;
  if (tape != nullptr) {
    t.q = q;
    t.k = k;
    t.v = v;
  }
}

template <typename T>
void ExactTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                             Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<ExactTape<T>>("exact", tape);
  detail::check_train_call("exact", shape_, head, t.q, t.k, t.v);
  detail::check_train_d_out("exact", shape_, d_out);
  // d_out is (n, d_v); dst is (n_keys, n_queries): first dP^T, then, in place, dS^T.
  const T scale = T(1) / std::sqrt(static_cast<T>(t.q.cols()));
  // pass 1: dV = P^T dO.
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.pt * d_out;
  // pass 2: dP^T = V dO^T.
  Mat<T> dst(t.k.rows(), t.q.rows());
  dst.noalias() = t.v * d_out.transpose();
  // pass 3: through the softmax, dS = P o (dP - rowsum(dP o P)), column by column of the transpose.
  detail::softmax_cols_backward_inplace(t.pt, dst);
  // pass 4: S = Q K^T / sqrt(d_k): dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k).
  d_q.resize(t.q.rows(), t.q.cols());
  d_q.noalias() = dst.transpose() * t.k;
  d_q *= scale;
  d_k.resize(t.k.rows(), t.k.cols());
  d_k.noalias() = dst * t.q;
  d_k *= scale;
}

template class ExactTrain<float>;
template class ExactTrain<double>;

}  // namespace attnlab
