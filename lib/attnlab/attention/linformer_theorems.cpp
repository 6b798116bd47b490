// Linformer's Theorems 1 and 2 as stated: their k, and Theorem 1's measurements.
#include "attnlab/attention/linformer_theorems.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

Eigen::Index theorem1_k(Eigen::Index n, double eps) {
  return std::max<Eigen::Index>(
      1, static_cast<Eigen::Index>(std::ceil(5.0 * std::log(static_cast<double>(n)) / (eps * eps - eps * eps * eps))));
}

Eigen::Index theorem2_k(Eigen::Index d, double eps) {
  const double dd = static_cast<double>(d);
  return std::max<Eigen::Index>(1, static_cast<Eigen::Index>(std::ceil(9.0 * dd * std::log(dd) / (eps * eps))));
}

std::size_t theorem1_successes(const Theorem1Problem& pr, Eigen::Index k, double eps, int trials, std::uint64_t seed,
                               Theorem1Scale scale) {
  Rng rng(seed);
  const Eigen::Index n = pr.p.rows(), d = pr.v.cols();
  Mat<double> y(n, trials);
  for (int t = 0; t < trials; ++t) y.col(t) = round_trip_sampled(pr.v.col(t % d), k, rng);
  const Mat<double> py = pr.p * y;  // one GEMM for all trials
  const double p_norm = scale == Theorem1Scale::johnson_lindenstrauss ? pr.p.norm() : 0.0;
  std::size_t ok = 0;
  for (int t = 0; t < trials; ++t) {
    const double bound = scale == Theorem1Scale::output ? pr.pv.col(t % d).norm() : p_norm * pr.v.col(t % d).norm();
    if ((py.col(t) - pr.pv.col(t % d)).norm() < eps * bound) ++ok;
  }
  return ok;
}

namespace {

Eigen::Index grid_point(int j, int steps_per_octave) {
  return static_cast<Eigen::Index>(std::llround(std::pow(2.0, j / static_cast<double>(steps_per_octave))));
}

}  // namespace

KNeeded theorem1_k_needed(const Theorem1Problem& pr, double eps, int trials, double target_rate, int grid_steps,
                          std::uint64_t seed, int steps_per_octave) {
  if (steps_per_octave < 1)
    throw std::invalid_argument("theorem1_k_needed: steps_per_octave (= " + std::to_string(steps_per_octave) + ") must be at least 1");
  const auto grid_k = [&](int j) { return grid_point(j, steps_per_octave); };
  const auto rate = [&](int j) {
    return static_cast<double>(theorem1_successes(pr, grid_k(j), eps, trials, derive_seed(seed, grid_k(j)))) / trials;
  };
  int lo = 0, hi = grid_steps;
  double hi_rate = rate(hi);
  if (hi_rate < target_rate) return {};
  if (double r0 = rate(lo); r0 >= target_rate) return {grid_k(lo), r0};
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    const double r = rate(mid);
    if (r >= target_rate) {
      hi = mid;
      hi_rate = r;
    } else {
      lo = mid;
    }
  }
  return {grid_k(hi), hi_rate};
}

Theorem2Problem theorem2_problem(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v) {
  Theorem2Problem pr{q, k, v, linformer_reference_attention(q, k, v), softmax_attention_matrix(q, k).rowwise().norm(), 0.0};
  const Mat<double> gram = v.transpose() * v;  // a Mat, so the solver's one compiled compute() takes it
  pr.v_norm = std::sqrt(Eigen::SelfAdjointEigenSolver<Mat<double>>(gram).eigenvalues().maxCoeff());
  return pr;
}

Vec<double> theorem2_normalised_errors(const Theorem2Problem& pr, const LinformerProjections<double>& projections) {
  const Mat<double> out = linformer_attention(pr.q, pr.k, pr.v, projections);
  return (out - pr.exact).rowwise().norm().cwiseQuotient(pr.p_norm) / pr.v_norm;
}

Eigen::Index best_rank_needed(const BestRankAttention& best, double eps) {
  Eigen::Index lo = -1, hi = best.n();
  while (hi - lo > 1) {
    const Eigen::Index mid = (lo + hi) / 2;
    if (best.column_errors(mid).maxCoeff() <= eps) hi = mid;
    else lo = mid;
  }
  return hi;
}

}  // namespace attnlab
