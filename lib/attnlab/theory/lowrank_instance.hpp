// One instance of seed 004's weighted low-rank regression min ||B - X Z X^T||_F^2 s.t. rank(Z) <= r,
// measured the way claims G4, G5 and G6 judge it: the recipe's excess over the true rank-r minimum and
// Remark 2.1's value against the attained minimum, in units of their own rounding.
// exp_lowrank_regression (random families of X) and exp_trained_regression (X the inputs of a trained
// layer) both call measure_lowrank_instance, so the two verdicts use one metric.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/rng.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/theory/weighted_lowrank.hpp"

namespace attnlab {

// cond(X) over its nonzero singular values (those above pinv_svd's default cutoff), ||X||_2 and the
// numerical rank.
struct XSpectrum {
  double cond = 1;
  double norm2 = 0;
  Eigen::Index rank = 0;
};
XSpectrum x_spectrum(const Mat<double>& x);

// The unit of rounding for an objective value, X n x d: max(n, d) eps cond(X)^2 ||B||_F^2.
double objective_unit(Eigen::Index n, Eigen::Index d, const XSpectrum& sx, double b_norm2);

// ||grad f(Z)|| in units of its own rounding: n eps ||X||_2^2 (||B|| + ||X||_2^2 ||Z||).
double gradient_ratio(const Mat<double>& b, const Mat<double>& x, const Mat<double>& z, const XSpectrum& sx);

// G4-G6 on one (X, B, r). Objective values f; "_rel" over ||B||_F^2; "_ratio" in objective_unit.
struct LowRankInstance {
  double x_cond = 0, b_norm2 = 0;
  Eigen::Index x_rank = 0;
  double f_recipe = 0;            // f at the rank-r truncated SVD of Z* = X^+ B X^+T (the seed's recipe)
  double f_closed = 0, f_closed_predicted = 0, unreachable = 0;  // closed_form_lowrank: attained, predicted, ||B - PBP||^2
  double f_factored = 0;          // the independent factored search (its best start)
  bool factored_converged = false;
  double factored_stationarity = 0;
  double closed_minus_factored = 0;  // (f_closed - f_factored) / ||B||^2
  double f_min = 0;                  // min(f_closed, f_factored): the attained rank-r minimum
  double recipe_gap = 0;             // G5: (f_recipe - f_min) / ||B||^2
  double recipe_gap_ratio = 0;       // G5: max(0, f_recipe - f_min) / objective_unit
  double remark21 = 0;               // G6: sum_{i>r} sigma_i(Z*)^2
  double remark21_ratio = 0;         // G6: |remark21 - f_min| / objective_unit
  double grad_zstar_ratio = 0;           // G4: gradient_ratio at Z* from the SVD pseudoinverse
  double grad_zstar_formula_ratio = 0;   // G4: the same with (X^T X)^{-1} X^T
};

// Measures one instance; the factored search draws its starts from `rng` (and nothing else does).
// Throws std::invalid_argument when Z* = X^+ B X^+T overflows double (an X of tiny scale), naming the
// scales, instead of returning NaN objectives.
LowRankInstance measure_lowrank_instance(const Mat<double>& b, const Mat<double>& x, Eigen::Index r, Rng& rng,
                                         const FactoredSearchOptions& search);

}  // namespace attnlab
