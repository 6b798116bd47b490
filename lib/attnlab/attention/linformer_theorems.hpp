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

// The scale Theorem 1's error is measured against: as the theorem states it, eps ||P w|| (the norm of the
// attention output), or eps ||P||_F ||w||, the Johnson-Lindenstrauss scale its proof reaches: entry i of
// P R^T R w is the inner product (R p_i).(R w), off by about ||p_i|| ||w|| / sqrt(k). Exactly,
//   E ||P R^T R w - P w||^2 = (||P||_F^2 ||w||^2 + ||P w||^2) / k,
// so the stated scale needs k of about (1 + ||P||_F^2 ||w||^2 / ||P w||^2) / eps^2, which is about n / eps^2
// when w has mean zero (E ||P w||^2 = ||P||_F^2 for w of i.i.d. zero-mean unit entries).
enum class Theorem1Scale { output, johnson_lindenstrauss };

// How many of `trials` draws of R (k x n, N(0, 1/k), round_trip_sampled) give ||P R^T R w - P w|| <
// eps ||P w|| (or eps ||P||_F ||w|| with Theorem1Scale::johnson_lindenstrauss), w = column (t mod d) of V for
// trial t; the draws come from Rng(seed).
std::size_t theorem1_successes(const Theorem1Problem& problem, Eigen::Index k, double eps, int trials,
                               std::uint64_t seed, Theorem1Scale scale = Theorem1Scale::output);

// The smallest k on the grid k_j = round(2^(j / steps_per_octave)), j = 0 .. grid_steps, whose success rate
// (Theorem1Scale::output) reaches `target_rate`, found by bisection on the grid (the rate grows with k:
// R^T R w -> w as k grows); the rate there. k = -1 when even the grid's largest k falls short. Grid point k
// draws from derive_seed(seed, k). Throws std::invalid_argument for steps_per_octave < 1.
struct KNeeded {
  Eigen::Index k = -1;
  double rate = 0;
};
KNeeded theorem1_k_needed(const Theorem1Problem& problem, double eps, int trials, double target_rate, int grid_steps,
                          std::uint64_t seed, int steps_per_octave = 2);

// What Theorem 2 compares a draw of E, F with: exact attention, ||softmax(w)|| of each row w of QK^T/sqrt(d),
// and ||V||_2 (the spectral norm, the operator norm a bound on ||softmax(w) V|| uses).
struct Theorem2Problem {
  Mat<double> q, k, v, exact;  // exact = softmax(QK^T / sqrt(d)) V
  Vec<double> p_norm;          // ||softmax(w_i)||, row i of P
  double v_norm = 0;           // ||V||_2
};
Theorem2Problem theorem2_problem(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v);

// Theorem 2's normalised error of every row: ||softmax(w E^T) F V - softmax(w) V|| / (||softmax(w)|| ||V||_2),
// which the theorem bounds by eps at its k.
Vec<double> theorem2_normalised_errors(const Theorem2Problem& problem, const LinformerProjections<double>& projections);

// The smallest rank r with ||(P - P_r) w|| <= eps ||P w|| for every column w of V, P_r the best rank-r
// approximation (bisection: each column's error decreases with r): what any projection of P to r rows
// could reach at best.
Eigen::Index best_rank_needed(const BestRankAttention& best, double eps);

}  // namespace attnlab
