// Random feature attention: the UCU report's random Fourier features (Rahimi & Recht; RFA) and
// Performer's FAVOR+ positive (orthogonal) random features. The draws are explicit values.
#include "attnlab/attention/random_features.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"

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
Mat<T> fourier_features(const Mat<T>& x, const RandomFeatureDraw& draw) {
  check_draw_matches("fourier_features", draw, x.cols());
  // x is (n, d), w is (D, d); proj is (n, D); phi is (n, 2D).
  const Eigen::Index D = draw.features();
  const Mat<T> proj = x * draw.w.cast<T>().transpose();
  Mat<T> phi(x.rows(), 2 * D);
  const T c = std::sqrt(T(1) / static_cast<T>(D));
  phi.leftCols(D) = c * proj.array().sin().matrix();
  phi.rightCols(D) = c * proj.array().cos().matrix();
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
Mat<T> random_fourier_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw,
                                double temperature) {
  detail::check_attention_shapes("random_fourier_attention", q, k, v);
  check_draw_matches("random_fourier_attention", draw, q.cols());
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw std::invalid_argument("random_fourier_attention: temperature (= " + std::to_string(temperature) +
                                ") must be positive and finite");
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); phi_q, phi_k are (n, 2D); ctx is (2D, d_v).
  // pass 1: features of queries and keys.
  const Mat<T> phi_q = fourier_features(q, draw);
  Mat<T> phi_k = fourier_features(k, draw);
  // pass 2: each key's factor exp(||k_j||^2 / 2 tau). The query's factor exp(||q_i||^2 / 2 tau)
  // multiplies numerator and denominator alike and cancels, so it is never formed; the keys'
  // factors are taken relative to the largest, exp((||k_j||^2 - max) / 2 tau) <= 1, which
  // also cancels and keeps them from overflowing.
  const Vec<T> sq = k.rowwise().squaredNorm();
  const T tau2 = static_cast<T>(2 * temperature);
  const Vec<T> b_k = ((sq.array() - sq.maxCoeff()) / tau2).exp().matrix();
  phi_k = b_k.asDiagonal() * phi_k;
  // pass 3: the key-value summary sum_j b_j phi(k_j) v_j^T and the normaliser sum_j b_j phi(k_j).
  const Mat<T> ctx = phi_k.transpose() * v;
  const Vec<T> z = phi_k.colwise().sum().transpose();
  // pass 4: numerator over denominator per query.
  const Mat<T> num = phi_q * ctx;
  const Vec<T> den = phi_q * z;
  return den.cwiseInverse().asDiagonal() * num;
}

template <typename T>
Mat<T> favor_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const RandomFeatureDraw& draw) {
  detail::check_attention_shapes("favor_attention", q, k, v);
  check_draw_matches("favor_attention", draw, q.cols());
  // q is (n_q, d), k is (n_k, d), v is (n_k, d_v); a_q is (n_q, D), a_k is (n_k, D); ctx is (D, d_v).
  const Mat<T> w = draw.w.cast<T>();
  const T s = T(1) / std::sqrt(std::sqrt(static_cast<T>(q.cols())));  // d^(-1/4) on each side
  // pass 1: exponents w_r.y - ||y||^2/2 of the key features.
  Mat<T> a_k = (s * k) * w.transpose();
  a_k.colwise() -= (s * k).rowwise().squaredNorm() / T(2);
  // pass 2: key features relative to their overall maximum: one constant for all keys,
  // which cancels between numerator and denominator and keeps every exp() <= 1.
  const Mat<T> phi_k = (a_k.array() - a_k.maxCoeff()).exp().matrix();
  const Mat<T> ctx = phi_k.transpose() * v;
  const Vec<T> ksum = phi_k.colwise().sum().transpose();  // has an entry >= 1: the maximal term
  // pass 3: query exponents. exp(-||x||^2/2) and 1/sqrt(D) are per-query constants and cancel.
  // phi(q_i)_r enters only as phi(q_i)_r ksum_r = exp(a_ir + log ksum_r) times the mean value
  // ctx_r / ksum_r of feature r, so we exponentiate a_ir + log ksum_r, shifted by its row maximum:
  // every exp() is then <= 1 with a term equal to 1 (the denominator never underflows to 0, even
  // when queries and keys peak on different features, as logits of 1e4 make them). exp(a_ir) alone
  // overflows where ksum_r is tiny (issue 6: NaN = inf * 0 in float at logits of 1e4). Features no
  // key reaches (ksum_r = 0 after underflow) carry no weight: log ksum_r = -inf, exp() gives 0.
  Mat<T> a_q = (s * q) * w.transpose();
  Mat<T> mean_v(ctx.rows(), ctx.cols());
  Vec<T> log_ksum(ksum.size());
  for (Eigen::Index r = 0; r < ksum.size(); ++r) {
    const bool reached = ksum(r) > T(0);
    log_ksum(r) = reached ? std::log(ksum(r)) : -std::numeric_limits<T>::infinity();
    if (reached)
      mean_v.row(r) = ctx.row(r) / ksum(r);
    else
      mean_v.row(r).setZero();
  }
  a_q.rowwise() += log_ksum.transpose();
  for (Eigen::Index i = 0; i < a_q.rows(); ++i) a_q.row(i).array() -= a_q.row(i).maxCoeff();
  const Mat<T> phi_q = a_q.array().exp().matrix();
  // pass 4: numerator over the (positive) denominator.
  const Mat<T> num = phi_q * mean_v;
  const Vec<T> den = phi_q.rowwise().sum();
  return den.cwiseInverse().asDiagonal() * num;
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
