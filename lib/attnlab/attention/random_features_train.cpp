// Random feature attention, trainable: the UCU report's random Fourier features ("random-fourier") and
// Performer's FAVOR+ ("favor"), the definitions of random_features.hpp, with fixed per-head draws.
#include "attnlab/attention/random_features_train.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnlab/attention/random_features.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

namespace {

Eigen::Index resolve_features(const char* who, Eigen::Index features) {
  const Eigen::Index D = features == 0 ? kTrainDefaultFeatures : features;
  if (D < 1)
    throw std::invalid_argument(std::string(who) + ": features (= " + std::to_string(D) + ") must be at least 1");
  return D;
}

std::vector<std::string> draw_names(Eigen::Index heads) {
  std::vector<std::string> names;
  for (Eigen::Index h = 0; h < heads; ++h) names.push_back("omega_head" + std::to_string(h));
  return names;
}

template <typename T>
std::vector<Mat<T>*> pointers(std::vector<Mat<T>>& w) {
  std::vector<Mat<T>*> p;
  for (auto& m : w) p.push_back(&m);
  return p;
}

std::string shape_text(const detail::TrainShape& s) {
  return "n = " + std::to_string(s.n) + ", d_k = " + std::to_string(s.d_k) + ", d_v = " + std::to_string(s.d_v) +
         ", heads = " + std::to_string(s.heads);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// random-fourier

template <typename T>
RandomFourierTrain<T>::RandomFourierTrain(const detail::TrainShape& shape, Eigen::Index features, std::uint64_t seed,
                                          double temperature)
    : shape_(shape), seed_(seed), temperature_(temperature) {
  const Eigen::Index D = resolve_features("random-fourier", features);
  if (temperature < 0 || !std::isfinite(temperature))
    throw std::invalid_argument("random-fourier: temperature (= " + std::to_string(temperature) +
                                ") must be positive and finite, or 0 for sqrt(d_k)");
  const double tau = temperature > 0 ? temperature : std::sqrt(static_cast<double>(shape.d_k));
  for (Eigen::Index h = 0; h < shape.heads; ++h) {
    Rng rng(derive_seed(seed, static_cast<std::uint64_t>(h)));
    w_.push_back(draw_fourier_features(shape.d_k, D, 1 / std::sqrt(tau), rng).w.cast<T>());
  }
}

template <typename T>
std::string RandomFourierTrain<T>::describe() const {
  return "random-fourier: the report's random Fourier feature attention, D = " + std::to_string(w_.front().rows()) +
         " features (default " + std::to_string(kTrainDefaultFeatures) +
         "), tau = " + (temperature_ > 0 ? std::to_string(temperature_) : std::string("sqrt(d_k)")) +
         ", w ~ N(0, I / tau), one draw per head from seed " + std::to_string(seed_) +
         " (buffers, never redrawn), " + shape_text(shape_);
}

template <typename T>
std::vector<std::string> RandomFourierTrain<T>::buffer_names() const {
  return draw_names(shape_.heads);
}

template <typename T>
std::vector<Mat<T>*> RandomFourierTrain<T>::buffers() {
  return pointers(w_);
}

template <typename T>
void RandomFourierTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v,
                                    Mat<T>& out, std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("random-fourier", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); w is (D, d_k); phi_* are (n, 2D); ctx is (2D, d_v); out (n, d_v).
  std::unique_ptr<RandomFourierTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // passes 1-4: the library's random Fourier attention with tau (sqrt(d_k) by default), kept for the backward.
  out = random_fourier_attention(q, k, v, w_[static_cast<std::size_t>(head)], tau(q.cols()), t);
  if (tape != nullptr) {
    t->k = k;
    t->v = v;
    t->out = out;
  }
}

template <typename T>
void RandomFourierTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                                     Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<RandomFourierTape<T>>("random-fourier", tape);
  detail::check_train_call("random-fourier", shape_, head, t.k, t.k, t.v);
  detail::check_train_d_out("random-fourier", shape_, d_out);
  const Mat<T>& w = w_[static_cast<std::size_t>(head)];
  const Eigen::Index n = t.k.rows(), D = w.rows();
  const T tau = this->tau(t.k.cols());
  // pass 1: out = diag(1/den) num: d num = G = diag(1/den) dO, d den_i = -(G_i . out_i).
  const Mat<T> g = t.den.cwiseInverse().asDiagonal() * d_out;
  const Vec<T> dden = -(g.cwiseProduct(t.out).rowwise().sum());
  // pass 2: num = phi_q ctx, den = phi_q z.
  Mat<T>& dphi = t.scratch_dphi;
  dphi.resize(n, 2 * D);
  dphi.noalias() = g * t.ctx.transpose();
  dphi.noalias() += dden * t.z.transpose();
  Mat<T> dctx(2 * D, t.v.cols());
  dctx.noalias() = t.phi_q.transpose() * g;
  Vec<T> dz(2 * D);
  dz.noalias() = t.phi_q.transpose() * dden;
  // pass 3: phi_q = c [sin P, cos P] with P = Q W^T: dP = dphi_sin o c cos P - dphi_cos o c sin P,
  // and c cos P, c sin P are the stored features themselves. dQ = dP W.
  Mat<T>& dproj = t.scratch_dproj;
  dproj.resize(n, D);
  dproj = dphi.leftCols(D).cwiseProduct(t.phi_q.rightCols(D)) - dphi.rightCols(D).cwiseProduct(t.phi_q.leftCols(D));
  d_q.resize(n, w.cols());
  d_q.noalias() = dproj * w;
  // pass 4: ctx = phi_kb^T V, z = phi_kb^T 1: dV = phi_kb dctx, d phi_kb = V dctx^T + 1 dz^T.
  d_v.resize(n, t.v.cols());
  d_v.noalias() = t.phi_kb * dctx;
  dphi.noalias() = t.v * dctx.transpose();
  dphi.rowwise() += dz.transpose();
  // pass 5: phi_kb = diag(b) phi_k: db_j = d phi_kb_j . phi_k_j, d phi_k = diag(b) d phi_kb.
  // b_j = exp((|k_j|^2 - max) / 2 tau): d k_j = db_j b_j k_j / tau (the max is a constant: it cancels).
  const Vec<T> db = dphi.cwiseProduct(t.phi_k).rowwise().sum();
  dphi = t.b.asDiagonal() * dphi;
  dproj = dphi.leftCols(D).cwiseProduct(t.phi_k.rightCols(D)) - dphi.rightCols(D).cwiseProduct(t.phi_k.leftCols(D));
  d_k.resize(n, w.cols());
  d_k.noalias() = dproj * w;
  d_k.noalias() += (db.cwiseProduct(t.b) / tau).asDiagonal() * t.k;
}

// ---------------------------------------------------------------------------------------------------
// favor

template <typename T>
FavorTrain<T>::FavorTrain(const detail::TrainShape& shape, Eigen::Index features, std::uint64_t seed)
    : shape_(shape), seed_(seed) {
  const Eigen::Index D = resolve_features("favor", features);
  for (Eigen::Index h = 0; h < shape.heads; ++h) {
    Rng rng(derive_seed(seed, static_cast<std::uint64_t>(h)));
    w_.push_back(draw_favor_features(shape.d_k, D, true, rng).w.cast<T>());
  }
}

template <typename T>
std::string FavorTrain<T>::describe() const {
  return "favor: Performer's FAVOR+, positive orthogonal random features, D = " + std::to_string(w_.front().rows()) +
         " features (default " + std::to_string(kTrainDefaultFeatures) + "), one draw per head from seed " +
         std::to_string(seed_) + " (buffers, never redrawn), " + shape_text(shape_);
}

template <typename T>
std::vector<std::string> FavorTrain<T>::buffer_names() const {
  return draw_names(shape_.heads);
}

template <typename T>
std::vector<Mat<T>*> FavorTrain<T>::buffers() {
  return pointers(w_);
}

template <typename T>
void FavorTrain<T>::forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                            std::unique_ptr<AttentionTape>* tape) const {
  detail::check_train_call("favor", shape_, head, q, k, v);
  // q, k are (n, d_k), v is (n, d_v); w is (D, d_k); r is (n, D); mean_v (D, d_v); w_t (D, n).
  std::unique_ptr<FavorTape<T>> local;
  auto* t = &detail::reuse_tape(tape, local);
  // passes 1-5: the library's FAVOR+ (its log-sum form: a softmax over the keys per feature, then one over
  // the features per query), kept for the backward.
  out = favor_attention(q, k, v, w_[static_cast<std::size_t>(head)], t);
  if (tape != nullptr) {
    t->v = v;
    t->out = out;
  }
}

template <typename T>
void FavorTrain<T>::backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                             Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* /*param_grads: none*/) const {
  const auto& t = detail::tape_as<FavorTape<T>>("favor", tape);
  detail::check_train_call("favor", shape_, head, t.yk, t.yk, t.v);
  detail::check_train_d_out("favor", shape_, d_out);
  const Mat<T>& w = w_[static_cast<std::size_t>(head)];
  const Eigen::Index n = t.yk.rows(), D = w.rows();
  const T s = T(1) / std::sqrt(std::sqrt(static_cast<T>(t.yk.cols())));
  // pass 1: out = weights mean_v: d mean_v = weights^T dO (D, d_v); d weights^T = mean_v dO^T (D, n).
  Mat<T> dmean(D, t.v.cols());
  dmean.noalias() = t.w_t * d_out;
  Mat<T> dlogit_t(D, n);
  dlogit_t.noalias() = t.mean_v * d_out.transpose();
  // pass 2: through the softmax over the features: d(b + log ksum)^T, column by column.
  softmax_cols_backward_inplace(t.w_t, dlogit_t);
  // pass 3: b = s Q W^T: dQ = s dB W. log ksum_r enters every query's logit r: its gradient is
  // the sum over queries.
  d_q.resize(n, w.cols());
  d_q.noalias() = dlogit_t.transpose() * w;
  d_q *= s;
  const Vec<T> dlse = dlogit_t.rowwise().sum();
  // pass 4: mean_v = r^T V: dV = r dmean, dr = V dmean^T (n, D).
  d_v.resize(n, t.v.cols());
  d_v.noalias() = t.r * dmean;
  Mat<T> da(n, D);
  da.noalias() = t.v * dmean.transpose();
  // pass 5: r = softmax over the keys of each column of a, and d LSE_r / d a_jr = r_jr too:
  // da = r o (dr - colsum(dr o r) + dlse). Unreached features have r = 0 and get nothing.
  const Eigen::Matrix<T, 1, Eigen::Dynamic> shift = dlse.transpose() - t.r.cwiseProduct(da).colwise().sum();
  da.rowwise() += shift;
  da = da.cwiseProduct(t.r);
  // pass 6: a = Y W^T - |Y|^2 / 2 with Y = s K: dY = da W - diag(rowsum(da)) Y, dK = s dY.
  d_k.resize(n, w.cols());
  d_k.noalias() = da * w;
  d_k.noalias() -= da.rowwise().sum().asDiagonal() * t.yk;
  d_k *= s;
}

template class RandomFourierTrain<float>;
template class RandomFourierTrain<double>;
template class FavorTrain<float>;
template class FavorTrain<double>;

}  // namespace attnlab
