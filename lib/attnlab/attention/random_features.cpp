// Random feature attention: the UCU report's random Fourier features (Rahimi & Recht; RFA) and
// Performer's FAVOR+ positive (orthogonal) random features. The draws are explicit values.
#include "attnlab/attention/random_features.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

void check_draw_shape(const char* who, Eigen::Index d, Eigen::Index D) {
  if (d < 1) throw std::invalid_argument(std::string(who) + ": d (= " + std::to_string(d) + ") must be at least 1");
  if (D < 1) throw std::invalid_argument(std::string(who) + ": D (= " + std::to_string(D) + ") must be at least 1");
}

void check_draw_matches(const char* who, const RandomFeatureDraw& draw, Eigen::Index d) {
  if (draw.features() < 1 || draw.dim() != d)
    throw std::invalid_argument(std::string(who) + ": the draw is " + std::to_string(draw.features()) + " x " +
                                std::to_string(draw.dim()) + " but the inputs have d = " + std::to_string(d));
}

}  // namespace

double random_fourier_predicted_error(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v,
                                      Eigen::Index features, double temperature) {
  detail::check_attention_shapes("random_fourier_predicted_error", q, k, v);
  if (features < 1)
    throw std::invalid_argument("random_fourier_predicted_error: features (= " + std::to_string(features) + ") must be at least 1");
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw std::invalid_argument("random_fourier_predicted_error: temperature (= " + std::to_string(temperature) +
                                ") must be positive and finite");
  // Shapes: q n_q x d, k n x d, v n x d_v; logits l n_q x n; s (the exact output) n_q x d_v.
  // pass 1: the logits q_i.k_j / tau; a row's log of sum_j b_j kappa_ij is its log-sum-exp minus ||q_i||^2 / 2 tau.
  const Mat<double> l = (q * k.transpose()) / temperature;
  const Vec<double> row_max = l.rowwise().maxCoeff();
  const Mat<double> e = (l.colwise() - row_max).array().exp().matrix();  // each row's largest entry is 1
  const Vec<double> e_sum = e.rowwise().sum();
  const Mat<double> s = e.cwiseQuotient(e_sum.replicate(1, e.cols())) * v;
  const Vec<double> log_den = row_max + e_sum.array().log().matrix() - q.rowwise().squaredNorm() / (2 * temperature);
  // pass 2: the numerators' weights b_j^2 = exp(||k_j||^2 / tau), shifted by their largest exponent (the shift is
  // undone in pass 3); sum_j c_j ||v_j - s_i||^2 = W + C ||m - s_i||^2 with m the c-weighted mean of V's rows,
  // W the c-weighted spread around it and C = sum c_j: no cancellation when every v_j is near s_i.
  const Vec<double> two_nk = k.rowwise().squaredNorm() / temperature;
  const double shift = two_nk.maxCoeff();
  const Vec<double> c = (two_nk.array() - shift).exp().matrix();
  const double big_c = c.sum();
  const Eigen::RowVectorXd m = (c.transpose() * v) / big_c;
  const double spread = (c.asDiagonal() * (v.rowwise() - m).rowwise().squaredNorm()).sum();
  // pass 3: each row's squared relative noise, exp(shift - 2 log_den_i) (W + C ||m - s_i||^2) / D, summed.
  double total = 0;
  for (Eigen::Index i = 0; i < q.rows(); ++i)
    total += std::exp(shift - 2 * log_den(i)) * (spread + big_c * (m - s.row(i)).squaredNorm());
  return std::sqrt(total / static_cast<double>(features)) / s.norm();
}

RandomFeatureDraw draw_fourier_features(Eigen::Index d, Eigen::Index D, double stddev, Rng& rng) {
  check_draw_shape("draw_fourier_features", d, D);
  if (!(stddev > 0) || !std::isfinite(stddev))
    throw std::invalid_argument("draw_fourier_features: stddev (= " + std::to_string(stddev) +
                                ") must be positive and finite");
  return {gaussian_matrix(D, d, rng, stddev), stddev, false};
}

RandomFeatureDraw draw_favor_features(Eigen::Index d, Eigen::Index D, bool orthogonal, Rng& rng) {
  check_draw_shape("draw_favor_features", d, D);
  if (!orthogonal) return {gaussian_matrix(D, d, rng), 1.0, false};
  Eigen::MatrixXd w(D, d);
  for (Eigen::Index r0 = 0; r0 < D; r0 += d) {
    const Eigen::Index rows = std::min(d, D - r0);
    // Rows of a Haar orthogonal matrix are uniform on the sphere; a chi_d length makes each
    // one exactly N(0, I_d), which is what keeps the estimator unbiased (Choromanski et al. 2021).
    const Eigen::MatrixXd block = random_orthonormal(d, d, rng).transpose();
    for (Eigen::Index r = 0; r < rows; ++r) {
      const double length = gaussian_matrix(d, 1, rng).norm();
      w.row(r0 + r) = length * block.row(r);
    }
  }
  return {w, 1.0, true};
}

template <typename T>
void fourier_features(const Mat<T>& x, const Mat<T>& w, Mat<T>& phi) {
  // x is (n, d), w is (D, d); phi is (n, 2D): the projections x w^T go into its left half first, then
  // their cosines into the right half and, in place, their sines into the left.
  const Eigen::Index D = w.rows();
  const T c = std::sqrt(T(1) / static_cast<T>(D));
  phi.resize(x.rows(), 2 * D);
  auto proj = phi.leftCols(D);
  proj.noalias() = x * w.transpose();
  phi.rightCols(D) = c * proj.array().cos().matrix();
  proj = c * proj.array().sin().matrix();
}

template <typename T>
Mat<T> fourier_features(const Mat<T>& x, const RandomFeatureDraw& draw) {
  check_draw_matches("fourier_features", draw, x.cols());
  Mat<T> phi;
  fourier_features<T>(x, draw.w.cast<T>(), phi);
  return phi;
}

template <typename T>
Mat<T> favor_features(const Mat<T>& x, const RandomFeatureDraw& draw) {
  check_draw_matches("favor_features", draw, x.cols());
  const Eigen::Index D = draw.features();
  Mat<T> a = x * draw.w.cast<T>().transpose();
  const Vec<T> half_sq = x.rowwise().squaredNorm() / T(2);
  a.colwise() -= half_sq;
  return a.array().exp().matrix() / std::sqrt(static_cast<T>(D));
}

template <typename T>
Mat<T> random_fourier_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& w, T temperature,
                                RandomFourierPasses<T>* passes) {
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); w is (D, d); phi_* are (n, 2D); ctx is (2D, d_v).
  RandomFourierPasses<T> local;
  RandomFourierPasses<T>& p = passes != nullptr ? *passes : local;
  // pass 1: features of queries and keys, sqrt(1/D) [sin(x W^T), cos(x W^T)].
  fourier_features(q, w, p.phi_q);
  fourier_features(k, w, p.phi_k);
  // pass 2: each key's factor exp(|k_j|^2 / 2 tau), relative to the largest. The queries' factors
  // exp(|q_i|^2 / 2 tau) multiply numerator and denominator alike and cancel, so they are never
  // formed; the keys' maximum is one constant for all keys, which cancels too and keeps every
  // factor <= 1 (no overflow). Both cancel exactly, so their gradients are exactly zero.
  const Vec<T> sq = k.rowwise().squaredNorm();
  p.b = ((sq.array() - sq.maxCoeff()) / (T(2) * temperature)).exp().matrix();
  p.phi_kb = p.b.asDiagonal() * p.phi_k;
  // pass 3: the key-value summary sum_j b_j phi(k_j) v_j^T and the normaliser sum_j b_j phi(k_j).
  p.ctx.resize(p.phi_kb.cols(), v.cols());
  p.ctx.noalias() = p.phi_kb.transpose() * v;
  p.z = p.phi_kb.colwise().sum().transpose();
  // pass 4: numerator over the (signed) denominator per query.
  Mat<T> out(q.rows(), v.cols());
  out.noalias() = p.phi_q * p.ctx;
  p.den.resize(q.rows());
  p.den.noalias() = p.phi_q * p.z;
  out = p.den.cwiseInverse().asDiagonal() * out;
  return out;
}

template <typename T>
Mat<T> random_fourier_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw,
                                double temperature) {
  detail::check_attention_shapes("random_fourier_attention", q, k, v);
  check_draw_matches("random_fourier_attention", draw, q.cols());
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw std::invalid_argument("random_fourier_attention: temperature (= " + std::to_string(temperature) +
                                ") must be positive and finite");
  return random_fourier_attention<T>(q, k, v, draw.w.cast<T>(), static_cast<T>(temperature));
}

template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& w, FavorPasses<T>* passes) {
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); w is (D, d); a, r are (n_k, D); mean_v (D, d_v); w_t (D, n_q).
  FavorPasses<T> local;
  FavorPasses<T>& p = passes != nullptr ? *passes : local;
  const Eigen::Index D = w.rows();
  const T s = T(1) / std::sqrt(std::sqrt(static_cast<T>(q.cols())));  // d^(-1/4) on each side
  // pass 1: key exponents a = y W^T - |y|^2 / 2.
  p.yk = s * k;
  Mat<T> a(k.rows(), D);
  a.noalias() = p.yk * w.transpose();
  a.colwise() -= p.yk.rowwise().squaredNorm() / T(2);
  // pass 2: key features relative to their overall maximum, exp(a - max) <= 1: one constant for all
  // keys, which cancels between numerator and denominator, so its gradient is exactly zero. ksum_r =
  // sum_j exp(a_jr - max) has an entry >= 1 (the maximal term); r_jr = exp(a_jr - max) / ksum_r is the
  // softmax over the keys of feature r, and log ksum_r is LSE_r up to the constant. Features no key
  // reaches (ksum_r = 0 after underflow) carry no weight: log ksum_r = -inf, and r is 0 there.
  p.r = (a.array() - a.maxCoeff()).exp().matrix();
  const Vec<T> ksum = p.r.colwise().sum().transpose();
  Vec<T> log_ksum(D);
  for (Eigen::Index r = 0; r < D; ++r) {
    const bool reached = ksum(r) > T(0);
    log_ksum(r) = reached ? std::log(ksum(r)) : -std::numeric_limits<T>::infinity();
    if (reached)
      p.r.col(r) *= T(1) / ksum(r);
    else
      p.r.col(r).setZero();
  }
  // pass 3: the mean value of each feature, mean_v = r^T V.
  p.mean_v.resize(D, v.cols());
  p.mean_v.noalias() = p.r.transpose() * v;
  // pass 4: query weights softmax_r(b_ir + log ksum_r), one column per query (core's column softmax,
  // shifted by each column's maximum). Never exp(b_ir) alone: it overflows where ksum_r is tiny (NaN =
  // inf * 0 in float at logits of 1e4).
  p.w_t.resize(D, q.rows());
  p.w_t.noalias() = w * (s * q).transpose();
  p.w_t.colwise() += log_ksum;
  softmax_cols_inplace(p.w_t);
  // pass 5: out_i = sum_r weight_ir mean_v_r.
  Mat<T> out(q.rows(), v.cols());
  out.noalias() = p.w_t.transpose() * p.mean_v;
  return out;
}

template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw) {
  detail::check_attention_shapes("favor_attention", q, k, v);
  check_draw_matches("favor_attention", draw, q.cols());
  return favor_attention<T>(q, k, v, draw.w.cast<T>());
}

template <typename T>
HeadStack<T> random_fourier_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const RandomFeatureDraw& draw, double temperature) {
  return detail::map_heads(q, k, v, [&](const Mat<T>& a, const Mat<T>& b, const Mat<T>& c) {
    return random_fourier_attention(a, b, c, draw, temperature);
  });
}

template <typename T>
HeadStack<T> favor_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             const RandomFeatureDraw& draw) {
  return detail::map_heads(q, k, v, [&](const Mat<T>& a, const Mat<T>& b, const Mat<T>& c) {
    return favor_attention(a, b, c, draw);
  });
}

#define ATTNLAB_INSTANTIATE_RF(T)                                                                                   \
  template Mat<T> fourier_features(const Mat<T>&, const RandomFeatureDraw&);                                       \
  template void fourier_features(const Mat<T>&, const Mat<T>&, Mat<T>&);                                           \
  template Mat<T> random_fourier_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const Mat<T>&, T,         \
                                           RandomFourierPasses<T>*);                                             \
  template Mat<T> favor_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const Mat<T>&, FavorPasses<T>*);   \
  template Mat<T> favor_features(const Mat<T>&, const RandomFeatureDraw&);                                         \
  template Mat<T> random_fourier_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const RandomFeatureDraw&, \
                                           double);                                                              \
  template Mat<T> favor_attention(const Mat<T>&, const Mat<T>&, const Mat<T>&, const RandomFeatureDraw&);         \
  template HeadStack<T> random_fourier_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,   \
                                                 const RandomFeatureDraw&, double);                              \
  template HeadStack<T> favor_attention(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&,            \
                                        const RandomFeatureDraw&);
ATTNLAB_INSTANTIATE_RF(float)
ATTNLAB_INSTANTIATE_RF(double)
#undef ATTNLAB_INSTANTIATE_RF

}  // namespace attnlab
