// Seed 000's reparameterised attention, trainable: scores from the symmetric part S_w of W_Q W_K^T.
#include "attnlab/attention/symmetric_train.hpp"

#include <cmath>

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
std::string SymmetricTrain<T>::describe() const {
  return "symmetric: softmax((q k^T + k q^T) / (2 sqrt(d_k))) v, the scores of S_w = (W_Q W_K^T + W_K W_Q^T) / 2 "
         "(seed 000), n = " +
         std::to_string(shape_.n) + ", d_k = " + std::to_string(shape_.d_k) + ", d_v = " + std::to_string(shape_.d_v);
}

template <typename T>
void SymmetricTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                                std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("symmetric", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); pt is (n, n) = P^T; out is (n, d_v).
  const T half_scale = T(1) / (T(2) * std::sqrt(static_cast<T>(q.cols())));
  std::unique_ptr<SymmetricTape<T>> local;
  auto& t = detail::reuse_tape(tape, local);
  Mat<T>& pt = t.pt;
  pt.resize(k.rows(), q.rows());
  // pass 1: G = K Q^T, then S = (G + G^T) / (2 sqrt(d_k)), which is symmetric: S^T = S.
  pt.noalias() = k * q.transpose();
  symmetrize_scaled(pt, half_scale);
  // pass 2: softmax of each column of S^T (max-subtracted: see softmax_cols_inplace).
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
void SymmetricTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                                 Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<SymmetricTape<T>>("symmetric", tape);
  detail::check_train_call("symmetric", shape_, head, t.q, t.k, t.v);
  detail::check_train_d_out("symmetric", shape_, d_out);
  // d_out is (n, d_v); dst is (n, n): first dP^T, then dS^T, then the symmetrised gradient D.
  const T half_scale = T(1) / (T(2) * std::sqrt(static_cast<T>(t.q.cols())));
  // pass 1: dV = P^T dO.
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = t.pt * d_out;
  // pass 2: dP^T = V dO^T.
  Mat<T> dst(t.k.rows(), t.q.rows());
  dst.noalias() = t.v * d_out.transpose();
  // pass 3: through the softmax, column by column of the transpose.
  detail::softmax_cols_backward_inplace(t.pt, dst);
  // pass 4: S = c (Q K^T + K Q^T) with c = 1 / (2 sqrt(d_k)) gives dQ = c (dS + dS^T) K and
  // dK = c (dS + dS^T) Q: one symmetric D = c (dS + dS^T) serves both.
  symmetrize_scaled(dst, half_scale);
  d_q.resize(t.q.rows(), t.q.cols());
  d_q.noalias() = dst * t.k;
  d_k.resize(t.k.rows(), t.k.cols());
  d_k.noalias() = dst * t.q;
}

template class SymmetricTrain<float>;
template class SymmetricTrain<double>;

}  // namespace attnlab
