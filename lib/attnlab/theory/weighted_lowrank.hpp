// The weighted low-rank regression min ||B - X Z X^T||_F^2 s.t. rank(Z) <= r: objective,
// gradient, the seed-004 recipe, a closed form, and an independent factored minimiser.
#pragma once

#include <Eigen/Dense>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// Shapes throughout: B is n x n (n = d_s), X is n x d (d = d_e), Z is d x d.

// f(Z) = ||B - X Z X^T||_F^2, the residual formed in T and its squared norm summed in double.
template <typename T>
double lowrank_objective(const Mat<T>& b, const Mat<T>& x, const Mat<T>& z) {
  const Mat<T> r = b - x * z * x.transpose();
  return r.template cast<double>().squaredNorm();
}

// grad f(Z) = -2 X^T (B - X Z X^T) X (d x d), as seed 004 states it.
template <typename T>
Mat<T> lowrank_gradient(const Mat<T>& b, const Mat<T>& x, const Mat<T>& z) {
  const Mat<T> r = b - x * z * x.transpose();
  return T(-2) * (x.transpose() * r * x);
}

// Z = left * right^T with left, right d x r: the factored form W_Q W_K^T.
struct LowRankFactors {
  Mat<double> left;
  Mat<double> right;
  Mat<double> product() const { return left * right.transpose(); }
};

// Z* = X^+ B (X^+)^T with the SVD pseudoinverse at its default cutoff: the unconstrained
// minimiser of f (seed 004), for any X.
Mat<double> unconstrained_minimiser(const Mat<double>& b, const Mat<double>& x);

// Eckart-Young factors of a matrix: U_r S_r^{1/2} and V_r S_r^{1/2} from its SVD
// (r is clipped to min(rows, cols)).
LowRankFactors truncated_svd_factors(const Mat<double>& z, Eigen::Index r);

// Seed 004's recipe: the rank-r truncated SVD of Z* = X^+ B (X^+)^T, split as
// W_Q = U_r S_r^{1/2}, W_K = V_r S_r^{1/2}. One candidate, not the judge.
LowRankFactors recipe_lowrank(const Mat<double>& b, const Mat<double>& x, Eigen::Index r);

// Remark 2.1's claimed minimum: sum_{i > r} sigma_i(Z*)^2.
double remark21_value(const Mat<double>& z_star, Eigen::Index r);

// The closed form for any X. With the thin SVD X = U S V^T of numerical rank rho
// (U n x rho, S rho x rho, V d x rho) and P = U U^T,
//   X Z X^T = U Y U^T with Y = S V^T Z V S, and
//   f(Z) = ||B - P B P||^2 + ||U^T B U - Y||^2
// (the two terms are orthogonal). rank(Y) <= rank(Z), and every Y of rank <= r is
// reached by Z = V S^{-1} Y S^{-1} V^T, so the optimum truncates C = U^T B U (not Z*)
// and maps it back: Z_r = V S^{-1} [C]_r S^{-1} V^T. (For full column rank this is the
// thin-QR form X = QR: truncate Q^T B Q, map back through R^{-1}.)
struct ClosedFormLowRank {
  LowRankFactors factors;
  double unreachable = 0;  // ||B - P B P||_F^2, what no Z can fit
  double tail = 0;         // sum_{i > r} sigma_i(C)^2
  double predicted_minimum() const { return unreachable + tail; }
  Eigen::Index x_rank = 0;
};
// The float overload runs every pass in float (G11.c checks the identity in float and double): its factors are
// widened to double exactly, its two terms are float sums.
ClosedFormLowRank closed_form_lowrank(const Mat<double>& b, const Mat<double>& x, Eigen::Index r);
ClosedFormLowRank closed_form_lowrank(const Mat<float>& b, const Mat<float>& x, Eigen::Index r);

// Independent minimiser: alternating least squares over the factors of Z = A C^T,
// from `starts` Gaussian starts. Each half-step is the exact least-squares update
//   A <- X^+ B (K^+)^T with K = X C,   C <- X^+ B^T (J^+)^T with J = X A,
// with pseudoinverses from complete orthogonal decompositions, so f never increases.
// Nothing here uses the recipe or the closed form.
struct FactoredSearchOptions {
  int starts = 8;
  int max_sweeps = 400;
  double relative_tolerance = 1e-13;  // stop when a sweep lowers f by less than this fraction
};
struct FactoredSearchResult {
  LowRankFactors best;
  double best_value = 0;
  std::vector<double> start_values;  // final f of each start
  int sweeps_of_best = 0;
  bool best_converged = false;       // the best start stopped by tolerance, not by max_sweeps
  // ||(grad_A, grad_C)||_F of f(A C^T) at the best start, over ||X||_2^2 ||B||_F
  // (||A||_F + ||C||_F): a unitless stationarity measure.
  double stationarity = 0;
};
FactoredSearchResult factored_minimiser(const Mat<double>& b, const Mat<double>& x, Eigen::Index r, Rng& rng,
                                        const FactoredSearchOptions& options = {});

}  // namespace attnlab
