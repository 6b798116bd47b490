// The weighted low-rank regression: recipe, closed form and factored minimiser.
#include "attnlab/theory/weighted_lowrank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attnlab/linalg/checked_svd.hpp"
#include "attnlab/linalg/numerical_rank.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"

namespace attnlab {

namespace {

template <typename T>
void check_shapes(const Mat<T>& b, const Mat<T>& x, Eigen::Index r, const char* who) {
  if (b.rows() != x.rows() || b.cols() != x.rows())
    throw std::invalid_argument(std::string(who) + ": B is " + std::to_string(b.rows()) + "x" +
                                std::to_string(b.cols()) + ", expected " + std::to_string(x.rows()) + "x" +
                                std::to_string(x.rows()));
  if (r < 0) throw std::invalid_argument(std::string(who) + ": rank (= " + std::to_string(r) + ") is negative");
}

}  // namespace

Mat<double> unconstrained_minimiser(const Mat<double>& b, const Mat<double>& x) {
  const Mat<double> xp = pinv_svd<double>(x).pinv;  // d x n
  return xp * b * xp.transpose();
}

LowRankFactors truncated_svd_factors(const Mat<double>& z, Eigen::Index r) {
  const CheckedSvd<double> svd = checked_svd<double>(z);
  const Eigen::Index k = std::min<Eigen::Index>(r, svd.s.size());
  const Vec<double> root = svd.s.head(k).cwiseSqrt();
  return {svd.u.leftCols(k) * root.asDiagonal(), svd.v.leftCols(k) * root.asDiagonal()};
}

LowRankFactors recipe_lowrank(const Mat<double>& b, const Mat<double>& x, Eigen::Index r) {
  check_shapes(b, x, r, "recipe_lowrank");
  return truncated_svd_factors(unconstrained_minimiser(b, x), r);
}

double remark21_value(const Mat<double>& z_star, Eigen::Index r) {
  const Vec<double> s = checked_svd<double>(z_star).s;
  double tail = 0;
  for (Eigen::Index i = r; i < s.size(); ++i) tail += s(i) * s(i);
  return tail;
}

namespace {

template <typename T>
ClosedFormLowRank closed_form_in(const Mat<T>& b, const Mat<T>& x, Eigen::Index r) {
  check_shapes(b, x, r, "closed_form_lowrank");
  // pass 1: thin SVD of X (checked: checked_svd.hpp), kept to its numerical rank rho, the rank pinv_svd gives.
  const CheckedSvd<T> svd = checked_svd<T>(x);
  const double tolerance = rank_tolerance<T>(svd.s, x.rows(), x.cols());
  const Eigen::Index rho = (svd.s.array().template cast<double>() > tolerance).count();
  const Mat<T> u = svd.u.leftCols(rho);                 // n x rho
  const Mat<T> v = svd.v.leftCols(rho);                 // d x rho
  const Vec<T> s_inv = svd.s.head(rho).cwiseInverse();  // rho
  // pass 2: C = U^T B U and the part of B outside range(X) x range(X).
  const Mat<T> c = u.transpose() * b * u;
  ClosedFormLowRank out;
  out.x_rank = rho;
  out.unreachable = static_cast<double>((b - u * c * u.transpose()).squaredNorm());
  // pass 3: Eckart-Young on C, where the Frobenius norm is unweighted.
  const CheckedSvd<T> svd_c = checked_svd<T>(c);
  const Vec<T>& sc = svd_c.s;
  const Eigen::Index k = std::min(r, rho);
  T tail = 0;
  for (Eigen::Index i = k; i < sc.size(); ++i) tail += sc(i) * sc(i);
  out.tail = static_cast<double>(tail);
  // pass 4: map the factors of [C]_r back through V S^{-1}.
  const Vec<T> root = sc.head(k).cwiseSqrt();
  const Mat<T> back = v * s_inv.asDiagonal();  // d x rho
  out.factors.left = (back * svd_c.u.leftCols(k) * root.asDiagonal()).template cast<double>();
  out.factors.right = (back * svd_c.v.leftCols(k) * root.asDiagonal()).template cast<double>();
  return out;
}

}  // namespace

ClosedFormLowRank closed_form_lowrank(const Mat<double>& b, const Mat<double>& x, Eigen::Index r) { return closed_form_in(b, x, r); }
ClosedFormLowRank closed_form_lowrank(const Mat<float>& b, const Mat<float>& x, Eigen::Index r) { return closed_form_in(b, x, r); }

FactoredSearchResult factored_minimiser(const Mat<double>& b, const Mat<double>& x, Eigen::Index r, Rng& rng,
                                        const FactoredSearchOptions& options) {
  check_shapes(b, x, r, "factored_minimiser");
  if (r < 1) throw std::invalid_argument("factored_minimiser: rank (= " + std::to_string(r) + ") must be >= 1");
  if (options.starts < 1) throw std::invalid_argument("factored_minimiser: starts must be >= 1");
  const Eigen::Index d = x.cols();
  const Mat<double> xp = pinv_cod<double>(x).pinv;  // d x n, fixed for every sweep
  const Mat<double> xp_b = xp * b, xp_bt = xp * b.transpose();
  const double b_norm2 = b.squaredNorm();
  FactoredSearchResult out;
  out.best_value = std::numeric_limits<double>::infinity();
  for (int start = 0; start < options.starts; ++start) {
    LowRankFactors f{gaussian_matrix(d, r, rng), gaussian_matrix(d, r, rng)};
    double value = lowrank_objective<double>(b, x, f.product());
    int sweep = 0;
    bool converged = false;
    while (sweep < options.max_sweeps) {
      ++sweep;
      f.left = xp_b * pinv_cod<double>(Mat<double>(x * f.right)).pinv.transpose();
      f.right = xp_bt * pinv_cod<double>(Mat<double>(x * f.left)).pinv.transpose();
      const double next = lowrank_objective<double>(b, x, f.product());
      // Exact block minimisation cannot raise f; a rise is rounding, so it also ends the run.
      const double drop = value - next;
      value = std::min(value, next);
      if (drop <= options.relative_tolerance * std::max(value, 1e-3 * b_norm2)) {
        converged = true;
        break;
      }
    }
    out.start_values.push_back(value);
    if (value < out.best_value) {
      out.best_value = value;
      out.best = f;
      out.sweeps_of_best = sweep;
      out.best_converged = converged;
    }
  }
  const Mat<double> g = lowrank_gradient<double>(b, x, out.best.product());
  const double grad_norm = std::sqrt((g * out.best.right).squaredNorm() + (g.transpose() * out.best.left).squaredNorm());
  const double x2 = checked_svd<double>(x).s(0);
  const double scale = x2 * x2 * std::sqrt(b_norm2) * (out.best.left.norm() + out.best.right.norm());
  out.stationarity = scale > 0 ? grad_norm / scale : grad_norm;
  return out;
}

}  // namespace attnlab
