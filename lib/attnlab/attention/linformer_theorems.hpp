// Linformer's Theorems 1 and 2 as stated (Wang et al. 2020, as the UCU report quotes them): the k each
// theorem names, and the measurements that test Theorem 1's statement on one attention problem.
#pragma once

#include <Eigen/Dense>
#include <cstddef>
#include <cstdint>

#include "attnlab/attention/linformer.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Theorem 1's k = 5 ln n / (eps^2 - eps^3), at least 1 (the formula gives 0 at n = 1).
Eigen::Index theorem1_k(Eigen::Index n, double eps);
// Theorem 2's k = 9 d ln d / eps^2, at least 1 (the formula gives 0 at d = 1).
Eigen::Index theorem2_k(Eigen::Index d, double eps);

// One attention problem Theorem 1 speaks of: P (n x n), V (n x d) and P V.
struct Theorem1Problem {
  Mat<double> p, v, pv;
};

// How many of `trials` draws of R (k x n, N(0, 1/k), round_trip_sampled) give ||P R^T R w - P w|| <
// eps ||P w||, w = column (t mod d) of V for trial t; the draws come from Rng(seed).
std::size_t theorem1_successes(const Theorem1Problem& problem, Eigen::Index k, double eps, int trials,
                               std::uint64_t seed);

// The smallest k on the grid k_j = round(2^(j/2)), j = 0 .. grid_steps, whose success rate reaches
// `target_rate`, found by bisection on the grid (the rate grows with k: R^T R w -> w as k grows); the
// rate there. k = -1 when even the grid's largest k falls short. Grid point k draws from
// derive_seed(seed, k).
struct KNeeded {
  Eigen::Index k = -1;
  double rate = 0;
};
KNeeded theorem1_k_needed(const Theorem1Problem& problem, double eps, int trials, double target_rate, int grid_steps,
                          std::uint64_t seed);

// The smallest rank r with ||(P - P_r) w|| <= eps ||P w|| for every column w of V, P_r the best rank-r
// approximation (bisection: each column's error decreases with r): what any projection of P to r rows
// could reach at best.
Eigen::Index best_rank_needed(const BestRankAttention& best, double eps);

}  // namespace attnlab
