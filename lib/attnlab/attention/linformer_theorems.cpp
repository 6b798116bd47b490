// Linformer's Theorems 1 and 2 as stated: their k, and Theorem 1's measurements.
#include "attnlab/attention/linformer_theorems.hpp"

#include <algorithm>
#include <cmath>

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

std::size_t theorem1_successes(const Theorem1Problem& pr, Eigen::Index k, double eps, int trials, std::uint64_t seed) {
  Rng rng(seed);
  const Eigen::Index n = pr.p.rows(), d = pr.v.cols();
  Mat<double> y(n, trials);
  for (int t = 0; t < trials; ++t) y.col(t) = round_trip_sampled(pr.v.col(t % d), k, rng);
  const Mat<double> py = pr.p * y;  // one GEMM for all trials
  std::size_t ok = 0;
  for (int t = 0; t < trials; ++t)
    if ((py.col(t) - pr.pv.col(t % d)).norm() < eps * pr.pv.col(t % d).norm()) ++ok;
  return ok;
}

namespace {

Eigen::Index grid_k(int j) { return static_cast<Eigen::Index>(std::llround(std::pow(2.0, j / 2.0))); }

}  // namespace

KNeeded theorem1_k_needed(const Theorem1Problem& pr, double eps, int trials, double target_rate, int grid_steps,
                          std::uint64_t seed) {
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
