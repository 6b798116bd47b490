// Exact softmax attention softmax(s) v, trainable: forward and backward side by side, with the scores s
// of exact attention or of seed 000's symmetric form.
#include "attnlab/attention/exact_train.hpp"

#include <cmath>

#include "attnlab/attention/softmax_attention.hpp"

namespace attnlab {

namespace {

// a <- (a + a^T) * c in place (a square). Each pair is formed once from the same two numbers, so
// the result is exactly symmetric; the diagonal becomes 2 c a_ii.
template <typename T>
void symmetrize_scaled(Mat<T>& a, T c) {
  const Eigen::Index n = a.rows();
  for (Eigen::Index j = 0; j < n; ++j) {
    a(j, j) = T(2) * c * a(j, j);
    for (Eigen::Index i = j + 1; i < n; ++i) {
      const T s = (a(i, j) + a(j, i)) * c;
      a(i, j) = s;
      a(j, i) = s;
    }
  }
}

}  // namespace

template <typename T>
std::string ExactTrain<T>::describe() const {
  const std::string shape = "n = " + std::to_string(shape_.n) + ", d_k = " + std::to_string(shape_.d_k) +
                            ", d_v = " + std::to_string(shape_.d_v);
  if (scores_ == ExactScores::exact) return "exact: softmax(q k^T / sqrt(d_k)) v, " + shape;
  return "symmetric: softmax((q k^T + k q^T) / (2 sqrt(d_k))) v, the scores of S_w = (W_Q W_K^T + W_K W_Q^T) / 2 "
         "(seed 000), " + shape;
}

template <typename T>
void ExactTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                            std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call(name(), shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); pt is (n_keys, n_queries) = P^T; out is (n, d_v).
  std::unique_ptr<ExactTape<T>> local;
  auto& t = detail::reuse_tape(tape, local);
  if (scores_ == ExactScores::exact) {
    // passes 1-3: the library's exact attention, keeping P^T for the backward.
    out = softmax_attention(q, k, v, &t.pt);
  } else {
    // pass 1: G = K Q^T, then S = (G + G^T) / (2 sqrt(d_k)), which is symmetric: S^T = S.
    Mat<T>& pt = t.pt;
    pt.resize(k.rows(), q.rows());
    pt.noalias() = k * q.transpose();
    symmetrize_scaled(pt, T(1) / (T(2) * std::sqrt(static_cast<T>(q.cols()))));
    // pass 2: softmax of each column of S^T (core/softmax.hpp, the maximum subtracted).
    softmax_cols_inplace(pt);
    // pass 3: out = P V.
    out.resize(q.rows(), v.cols());
    out.noalias() = pt.transpose() * v;
  }
  if (tape != nullptr) {
    t.q = q;
    t.k = k;
    t.v = v;
  }
}

template <typename T>
void ExactTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                             Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<ExactTape<T>>(name(), tape);
  detail::check_train_call(name(), shape_, head, t.q, t.k, t.v);
  detail::check_train_d_out(name(), shape_, d_out);
  // d_out is (n, d_v); dst is (n_keys, n_queries): first dP^T, then, in place, dS^T.
  const T scale = T(1) / std::sqrt(static_cast<T>(t.q.cols()));
  // pass 1: dV = P^T dO.
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.pt * d_out;
  // pass 2: dP^T = V dO^T.
  Mat<T> dst(t.k.rows(), t.q.rows());
  dst.noalias() = t.v * d_out.transpose();
  // pass 3: through the softmax, dS = P o (dP - rowsum(dP o P)), column by column of the transpose.
  softmax_cols_backward_inplace(t.pt, dst);
  d_q.resize(t.q.rows(), t.q.cols());
  d_k.resize(t.k.rows(), t.k.cols());
  if (scores_ == ExactScores::exact) {
    // pass 4: S = Q K^T / sqrt(d_k): dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k).
    d_q.noalias() = dst.transpose() * t.k;
    d_q *= scale;
    d_k.noalias() = dst * t.q;
    d_k *= scale;
  } else {
    // pass 4: S = c (Q K^T + K Q^T) with c = 1 / (2 sqrt(d_k)) gives dQ = c (dS + dS^T) K and
    // dK = c (dS + dS^T) Q: one symmetric D = c (dS + dS^T) serves both.
    symmetrize_scaled(dst, T(1) / (T(2) * std::sqrt(static_cast<T>(t.q.cols()))));
    d_q.noalias() = dst * t.k;
    d_k.noalias() = dst * t.q;
  }
}

template class ExactTrain<float>;
template class ExactTrain<double>;

}  // namespace attnlab
