// One instance of the weighted low-rank regression measured as G4-G6 judge it.
#include "attnlab/theory/lowrank_instance.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/linalg/residual_ratio.hpp"

namespace attnlab {

XSpectrum x_spectrum(const Mat<double>& x) {
  const auto p = pinv_svd<double>(x);  // its rank, and the checked SVD's extreme singular values kept
  return {p.sigma_max / p.sigma_min_kept, p.sigma_max, p.rank};
}

double objective_unit(Eigen::Index n, Eigen::Index d, const XSpectrum& sx, double b_norm2) {
  return std::max<double>(n, d) * std::numeric_limits<double>::epsilon() * sx.cond * sx.cond * b_norm2;
}

double gradient_ratio(const Mat<double>& b, const Mat<double>& x, const Mat<double>& z, const XSpectrum& sx) {
  const Mat<double> g = lowrank_gradient<double>(b, x, z);
  const double scale = sx.norm2 * sx.norm2 * (b.norm() + sx.norm2 * sx.norm2 * z.norm());
  return residual_ratio<double>(g.norm(), double(std::max(x.rows(), x.cols())), scale);
}

LowRankInstance measure_lowrank_instance(const Mat<double>& b, const Mat<double>& x, Eigen::Index r, Rng& rng,
                                         const FactoredSearchOptions& search) {
  const XSpectrum sx = x_spectrum(x);
  LowRankInstance row;
  row.x_cond = sx.cond;
  row.x_rank = sx.rank;
  row.b_norm2 = b.squaredNorm();
  // G5, G6: the recipe, the closed form and the factored search, each judged by f itself.
  const Mat<double> z_star = unconstrained_minimiser(b, x);
  // A given X of tiny scale (1e-300 N, say) is a valid input whose Z* = X^+ B (X^+)^T lies outside
  // double's range: every objective would be inf - inf. Say so, as bad input, instead of writing NaN.
  if (!z_star.allFinite()) {
    std::ostringstream msg;  // %.3g, as the rest of the ledger's notes
    msg << std::setprecision(3) << "Z* = X^+ B (X^+)^T overflows double (||X||_2 = " << sx.norm2
        << ", cond(X) = " << sx.cond << ", ||B||_F = " << b.norm()
        << "); rescale X (the recipe's answer scales as 1 / scale(X)^2)";
    throw std::invalid_argument(msg.str());
  }
  row.f_recipe = lowrank_objective<double>(b, x, truncated_svd_factors(z_star, r).product());
  const auto cf = closed_form_lowrank(b, x, r);
  row.f_closed = lowrank_objective<double>(b, x, cf.factors.product());
  row.f_closed_predicted = cf.predicted_minimum();
  row.unreachable = cf.unreachable;
  const auto fm = factored_minimiser(b, x, r, rng, search);
  row.f_factored = fm.best_value;
  row.factored_converged = fm.best_converged;
  row.factored_stationarity = fm.stationarity;
  row.closed_minus_factored = (row.f_closed - row.f_factored) / row.b_norm2;
  row.f_min = std::min(row.f_closed, row.f_factored);
  const double unit = objective_unit(x.rows(), x.cols(), sx, row.b_norm2);
  row.recipe_gap = (row.f_recipe - row.f_min) / row.b_norm2;
  row.recipe_gap_ratio = std::max(0.0, row.f_recipe - row.f_min) / unit;
  row.remark21 = remark21_value(z_star, r);
  row.remark21_ratio = std::abs(row.remark21 - row.f_min) / unit;
  // G4: Z* from the Moore-Penrose inverse, and from the document's formula.
  row.grad_zstar_ratio = gradient_ratio(b, x, z_star, sx);
  const Mat<double> xf = pinv_normal_equations<double>(x).pinv;
  row.grad_zstar_formula_ratio = gradient_ratio(b, x, Mat<double>(xf * b * xf.transpose()), sx);
  return row;
}

}  // namespace attnlab
