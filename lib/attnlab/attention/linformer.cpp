// Linformer attention: keys and values projected along the sequence axis to k rows.
#include "attnlab/attention/linformer.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/attention/fast_passes.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/core/attention_check.hpp"
#include "attnlab/core/head_stack_map.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

namespace {

std::string str(Eigen::Index v) { return std::to_string(v); }

void require_positive(const char* who, const char* what, Eigen::Index value) {
  if (value < 1)
    throw std::invalid_argument(std::string(who) + ": " + what + " (= " + str(value) + ") must be at least 1");
}

}  // namespace

LinformerProjections<double> gaussian_projections(Eigen::Index n, Eigen::Index k, ProjectionSharing sharing,
                                                  Rng& rng) {
  require_positive("gaussian_projections", "n", n);
  require_positive("gaussian_projections", "k", k);
  // N(0, 1/k) makes E[R^T R] = I: the JL scaling of Theorem 1.
  const double stddev = 1.0 / std::sqrt(static_cast<double>(k));
  LinformerProjections<double> p;
  p.e = gaussian_matrix(k, n, rng, stddev);
  p.f = sharing == ProjectionSharing::shared ? p.e : gaussian_matrix(k, n, rng, stddev);
  return p;
}

LinformerProjections<double> identity_projections(Eigen::Index n) {
  require_positive("identity_projections", "n", n);
  return {Mat<double>::Identity(n, n), Mat<double>::Identity(n, n)};
}

LinformerProjections<double> segment_mean_projections(Eigen::Index n, Eigen::Index k) {
  require_positive("segment_mean_projections", "n", n);
  require_positive("segment_mean_projections", "k", k);
  if (k > n)
    throw std::invalid_argument("segment_mean_projections: k (= " + str(k) + ") exceeds n (= " + str(n) +
                                "): a segment would be empty");
  Mat<double> e = Mat<double>::Zero(k, n);
  for (Eigen::Index j = 0; j < k; ++j) {
    const Eigen::Index begin = j * n / k, end = (j + 1) * n / k;
    e.row(j).segment(begin, end - begin).setConstant(1.0 / static_cast<double>(end - begin));
  }
  return {e, e};
}

namespace {

// E and F must both be kp x n_k with kp >= 1 (the reference and the fast kernel alike).
template <typename T>
void check_projections(const char* who, const LinformerProjections<T>& proj, Eigen::Index n) {
  require_positive(who, "k", proj.e.rows());
  if (proj.e.cols() != n || proj.f.cols() != n || proj.f.rows() != proj.e.rows())
    throw std::invalid_argument(std::string(who) + ": E is " + str(proj.e.rows()) + " x " + str(proj.e.cols()) +
                                " and F is " + str(proj.f.rows()) + " x " + str(proj.f.cols()) +
                                ", both must be k x n with n = " + str(n));
}

}  // namespace

template <typename T>
Mat<T> linformer_attention_matrix(const Mat<T>& q, const Mat<T>& k, const LinformerProjections<T>& proj) {
  // Shapes: q, k n x d; E kp x n; E K kp x d; result n x kp.
  detail::check_attention_shapes("linformer_attention_matrix", q, k, k);
  check_projections("linformer_attention_matrix", proj, k.rows());
  // Pass 1: project the keys along the sequence axis, n rows -> kp rows.
  const Mat<T> k_proj = proj.e * k;
  // Pass 2: scores of every query against the kp projected keys.
  Mat<T> scores = (q * k_proj.transpose()) * (T(1) / std::sqrt(static_cast<T>(q.cols())));
  // Pass 3: row softmax over the kp projected positions; softmax_rows_inplace subtracts
  // each row's maximum so logits of any size neither overflow nor give 0/0.
  softmax_rows_inplace(scores);
  return scores;
}

template <typename T>
Mat<T> linformer_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const LinformerProjections<T>& proj) {
  // Shapes: q, k n x d; v n x dv; E, F kp x n; attention n x kp; F V kp x dv; output n x dv.
  detail::check_attention_shapes("linformer_attention", q, k, v);
  check_projections("linformer_attention", proj, k.rows());
  // Passes 1-3: the n x kp attention matrix over projected keys.
  const Mat<T> p = linformer_attention_matrix(q, k, proj);
  // Pass 4: project the values along the sequence axis and mix them.
  return p * (proj.f * v);
}

template <typename T>
HeadStack<T> linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                 const LinformerProjections<T>& proj) {
  return detail::map_heads(q, k, v, [&proj](const Mat<T>& qh, const Mat<T>& kh, const Mat<T>& vh) {
    return linformer_attention(qh, kh, vh, proj);
  });
}

template <typename T>
HeadStack<T> fast_linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const LinformerProjections<T>& proj) {
  detail::check_same_heads(q, k, v);
  detail::check_attention_shapes("linformer_attention", q[0], k[0], v[0]);
  check_projections("linformer_attention", proj, k.n());
  const Eigen::Index count = q.count(), d = q.d(), dv = v.d();
  const detail::RowBlocks keys{k.n(), kFastRowBlock}, queries{q.n(), kFastRowBlock};
  // Pass 1: per key block, [E_j K_j, F_j V_j], (kp, d + d_v).
  auto part = detail::summarise_key_blocks<T>(count, keys, [&](Eigen::Index h, Eigen::Index j0, Eigen::Index b) {
    Mat<T> s(proj.k(), d + dv);
    auto ek = s.leftCols(d), fv = s.rightCols(dv);
    broadcast_gemm(ek, proj.e.middleCols(j0, b), strided_view(k[h].middleRows(j0, b)), false);
    broadcast_gemm(fv, proj.f.middleCols(j0, b), strided_view(v[h].middleRows(j0, b)), false);
    return s;
  });
  const auto ekfv = detail::add_blocks(std::move(part), count, keys.count());
  // Pass 3: softmax(Q_i (E K)^T / sqrt(d)) (F V), scores (b, kp) one row per query.
  auto out = HeadStack<T>::uninitialized(q.batch(), q.heads(), q.n(), dv);
  const T scale = T(1) / std::sqrt(static_cast<T>(d));
  detail::answer_query_blocks(count, queries, [&](Eigen::Index h, Eigen::Index i0, Eigen::Index b) {
    const Mat<T>& s = ekfv[static_cast<std::size_t>(h)];
    detail::softmax_rows_times(q[h].middleRows(i0, b), scale, s.leftCols(d), s.rightCols(dv),
                               out[h].middleRows(i0, b));
  });
  return out;
}

template <typename T>
Mat<T> linformer_reference_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  detail::check_attention_shapes("linformer_reference_attention", q, k, v);
  // Shapes: q n_q x d, k n_k x d; v n_k x dv; a block of P rows x n_k; output n_q x dv.
  const Eigen::Index n = q.rows(), block = 256;
  Mat<T> out(n, v.cols());
  for (Eigen::Index r0 = 0; r0 < n; r0 += block) {
    const Eigen::Index rows = std::min(block, n - r0);
    // The block's rows of P = softmax(Q K^T / sqrt(d)) (softmax_attention_matrix), then V mixed.
    out.middleRows(r0, rows).noalias() = softmax_attention_matrix<T>(q.middleRows(r0, rows), k) * v;
  }
  return out;
}

BestRankAttention::BestRankAttention(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v) {
  const Mat<double> p = softmax_attention_matrix(q, k);
  Eigen::BDCSVD<Mat<double>> svd(p, Eigen::ComputeFullU | Eigen::ComputeFullV);
  u_ = svd.matrixU();
  sigma_ = svd.singularValues();
  // Check the decomposition before trusting the truncations (backward error first).
  const Mat<double> rebuilt = u_ * sigma_.asDiagonal() * svd.matrixV().transpose();
  reconstruction_ratio_ = (rebuilt - p).norm() /
                          (static_cast<double>(p.rows()) * p.norm() * std::numeric_limits<double>::epsilon());
  c_ = svd.matrixV().transpose() * v;
  const Mat<double> exact = p * v;
  exact_column_norms_ = exact.colwise().norm().transpose();
  exact_norm_ = exact.norm();
}

Mat<double> BestRankAttention::output(Eigen::Index rank) const {
  if (rank < 0 || rank > n())
    throw std::invalid_argument("BestRankAttention: rank (= " + str(rank) + ") outside [0, " + str(n()) + "]");
  return u_.leftCols(rank) * (sigma_.head(rank).asDiagonal() * c_.topRows(rank));
}

Vec<double> BestRankAttention::column_errors(Eigen::Index rank) const {
  if (rank < 0 || rank > n())
    throw std::invalid_argument("BestRankAttention: rank (= " + str(rank) + ") outside [0, " + str(n()) + "]");
  // (P - P_r) w = U_{>r} S_{>r} (W^T w)_{>r}, and U has orthonormal columns, so the error
  // norm is the norm of the tail coefficients: no n x n product per rank.
  const Eigen::Index tail = n() - rank;
  const Mat<double> t = sigma_.tail(tail).asDiagonal() * c_.bottomRows(tail);
  Vec<double> e(c_.cols());
  for (Eigen::Index j = 0; j < c_.cols(); ++j) e(j) = t.col(j).norm() / exact_column_norms_(j);
  return e;
}

double BestRankAttention::output_error(Eigen::Index rank) const {
  if (rank < 0 || rank > n())
    throw std::invalid_argument("BestRankAttention: rank (= " + str(rank) + ") outside [0, " + str(n()) + "]");
  const Eigen::Index tail = n() - rank;
  return (sigma_.tail(tail).asDiagonal() * c_.bottomRows(tail)).norm() / exact_norm_;
}

Vec<double> round_trip_direct(const Vec<double>& w, Eigen::Index k, Rng& rng) {
  require_positive("round_trip_direct", "k", k);
  const Mat<double> r = gaussian_matrix(k, w.size(), rng, 1.0 / std::sqrt(static_cast<double>(k)));
  return r.transpose() * (r * w);
}

double chi_square_variate(double dof, Rng& rng) {
  if (!(dof > 0)) throw std::invalid_argument("chi_square_variate: dof (= " + std::to_string(dof) + ") must be positive");
  // Marsaglia and Tsang (2000) for Gamma(a), a >= 1; a < 1 by Gamma(a) = Gamma(a + 1) U^(1/a).
  double a = dof / 2, boost = 1.0;
  if (a < 1) {
    boost = std::pow(rng.uniform(), 1.0 / a);
    a += 1;
  }
  const double dd = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * dd);
  for (;;) {
    const double x = rng.normal();
    double t = 1.0 + c * x;
    if (t <= 0) continue;
    t = t * t * t;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x || std::log(u) < 0.5 * x * x + dd * (1.0 - t + std::log(t)))
      return 2.0 * dd * t * boost;
  }
}

Vec<double> round_trip_sampled(const Vec<double>& w, Eigen::Index k, Rng& rng) {
  require_positive("round_trip_sampled", "k", k);
  const double norm = w.norm();
  if (norm == 0) return Vec<double>::Zero(w.size());  // R^T R 0 = 0 for every R
  const Vec<double> unit = w / norm;
  const double c = chi_square_variate(static_cast<double>(k), rng);
  Vec<double> h = gaussian_matrix(w.size(), 1, rng);
  h -= unit * unit.dot(h);  // the part orthogonal to w
  return (norm / static_cast<double>(k)) * (c * unit + std::sqrt(c) * h);
}

#define ATTNLAB_LINFORMER_INSTANTIATE(T)                                                                     \
  template Mat<T> linformer_attention<T>(const Mat<T>&, const Mat<T>&, const Mat<T>&,                      \
                                         const LinformerProjections<T>&);                                   \
  template HeadStack<T> linformer_attention<T>(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&, \
                                               const LinformerProjections<T>&);                             \
  template Mat<T> linformer_attention_matrix<T>(const Mat<T>&, const Mat<T>&, const LinformerProjections<T>&); \
  template HeadStack<T> fast_linformer_attention<T>(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&, \
                                                    const LinformerProjections<T>&);                          \
  template Mat<T> linformer_reference_attention<T>(const Mat<T>&, const Mat<T>&, const Mat<T>&);
ATTNLAB_LINFORMER_INSTANTIATE(float)
ATTNLAB_LINFORMER_INSTANTIATE(double)
#undef ATTNLAB_LINFORMER_INSTANTIATE

}  // namespace attnlab
