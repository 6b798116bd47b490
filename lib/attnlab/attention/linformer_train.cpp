// Linformer attention, trainable: learned sequence-axis projections E, F shared by the heads of a layer.
#include "attnlab/attention/linformer_train.hpp"

#include <cmath>
#include <stdexcept>

#include "attnlab/attention/linformer.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

template <typename T>
LinformerTrain<T>::LinformerTrain(const detail::TrainShape& shape, Eigen::Index projection_k, std::uint64_t seed)
    : shape_(shape), seed_(seed) {
  const Eigen::Index kp = projection_k == 0 ? default_projection_k(shape.n) : projection_k;
  if (kp < 1 || kp > shape.n)
    throw std::invalid_argument("linformer: projection_k (= " + std::to_string(kp) + ") must lie in [1, n = " +
                                std::to_string(shape.n) + "]");
  // Drawn in double and rounded, so float and double layers built from one seed start alike.
  Rng rng(seed);
  const LinformerProjections<double> p = gaussian_projections(shape.n, kp, ProjectionSharing::separate, rng);
  e_ = p.e.cast<T>();
  f_ = p.f.cast<T>();
}

template <typename T>
std::string LinformerTrain<T>::describe() const {
  return "linformer: softmax(q (E k)^T / sqrt(d_k)) (F v), learned E, F (" + std::to_string(e_.rows()) + " x " +
         std::to_string(e_.cols()) + ", shared by the " + std::to_string(shape_.heads) +
         " heads, separate for keys and values, initialised N(0, 1/k) from seed " + std::to_string(seed_) +
         "), projection_k = " + std::to_string(e_.rows()) +
         " (default ceil(n / 8): seed 002's 'reduced by 8 times' read as the sequence length), n = " +
         std::to_string(shape_.n) + ", d_k = " + std::to_string(shape_.d_k) + ", d_v = " + std::to_string(shape_.d_v);
}

template <typename T>
void LinformerTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                                std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("linformer", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); E, F are (kp, n); ek (kp, d_k), fv (kp, d_v); pt (kp, n); out (n, d_v).
  const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
  std::unique_ptr<LinformerTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // pass 1: project keys and values along the sequence axis, n rows -> kp rows.
  t->ek.resize(e_.rows(), k.cols());
  t->ek.noalias() = e_ * k;
  t->fv.resize(f_.rows(), v.cols());
  t->fv.noalias() = f_ * v;
  // pass 2: logits S^T = (E K) Q^T / sqrt(d_k), one column per query.
  t->pt.resize(e_.rows(), q.rows());
  t->pt.noalias() = t->ek * q.transpose();
  t->pt *= scale;
  // pass 3: softmax over the kp projected positions (core/softmax.hpp, max-subtracted).
  softmax_cols_inplace(t->pt);
  // pass 4: out = P (F V).
  out.resize(q.rows(), v.cols());
  out.noalias() = t->pt.transpose() * t->fv;
  if (tape != nullptr) {
    t->q = q;
    t->k = k;
    t->v = v;
  }
}

template <typename T>
void LinformerTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                                 Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const {
  const auto& t = detail::tape_as<LinformerTape<T>>("linformer", tape);
  detail::check_train_call("linformer", shape_, head, t.q, t.k, t.v);
  detail::check_train_d_out("linformer", shape_, d_out);
  if (param_grads == nullptr || param_grads->size() != 2 || (*param_grads)[0].rows() != e_.rows() ||
      (*param_grads)[0].cols() != e_.cols() || (*param_grads)[1].rows() != f_.rows() ||
      (*param_grads)[1].cols() != f_.cols())
    throw std::invalid_argument("linformer: backward needs param_grads with two " + std::to_string(e_.rows()) +
                                " x " + std::to_string(e_.cols()) + " matrices (dE, dF)");
  Mat<T>& d_e = (*param_grads)[0];
  Mat<T>& d_f = (*param_grads)[1];
  const T scale = T(1) / std::sqrt(static_cast<T>(t.q.cols()));
  // pass 1: out = P (F V): d(FV) = P^T dO (kp, d_v); dP^T = (F V) dO^T (kp, n).
  Mat<T> dfv(t.fv.rows(), t.fv.cols());
  dfv.noalias() = t.pt * d_out;
  Mat<T> dst(t.pt.rows(), t.pt.cols());
  dst.noalias() = t.fv * d_out.transpose();
  // pass 2: through the softmax, column by column: dS^T.
  softmax_cols_backward_inplace(t.pt, dst);
  // pass 3: S^T = (E K) Q^T / sqrt(d_k): dQ = dS (E K) / sqrt(d_k), d(EK) = dS^T Q / sqrt(d_k).
  d_q.resize(t.q.rows(), t.q.cols());
  d_q.noalias() = dst.transpose() * t.ek;
  d_q *= scale;
  Mat<T> dek(t.ek.rows(), t.ek.cols());
  dek.noalias() = dst * t.q;
  dek *= scale;
  // pass 4: EK = E K: dK = E^T d(EK), dE += d(EK) K^T; FV = F V: dV = F^T d(FV), dF += d(FV) V^T.
  d_k.resize(t.k.rows(), t.k.cols());
  d_k.noalias() = e_.transpose() * dek;
  d_e.noalias() += dek * t.k.transpose();
  d_v.resize(t.v.rows(), t.v.cols());
  d_v.noalias() = f_.transpose() * dfv;
  d_f.noalias() += dfv * t.v.transpose();
}

template class LinformerTrain<float>;
template class LinformerTrain<double>;

}  // namespace attnlab
