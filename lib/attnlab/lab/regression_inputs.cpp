// Named families of the inputs of seed 004's low-rank regression.
#include "attnlab/lab/regression_inputs.hpp"

#include <algorithm>
#include <cmath>

#include "attnlab/theory/attention_loss.hpp"

namespace attnlab {

namespace {

constexpr double kWellCond = 10.0;
constexpr double kIllCond = 1e5;
constexpr double kScale = 3.0;  // the scaled orthonormal family is kScale * Q

}  // namespace

const std::vector<RegressionFamily>& regression_families() {
  static const std::vector<RegressionFamily> families = {
      {"orthogonal_square", true},  {"orthonormal", true}, {"scaled_orthonormal", true}, {"gaussian", true},
      {"well_conditioned", true},   {"ill_conditioned", true}, {"rank_deficient", false},
  };
  return families;
}

const std::vector<RegressionFamily>& regression_confirming_families() {
  static const std::vector<RegressionFamily> families = [] {
    std::vector<RegressionFamily> out = regression_families();
    out.push_back({"orthonormal_rows", false});
    out.push_back({"scaled_partial_isometry", false});
    out.push_back({"low_rank", false});
    return out;
  }();
  return families;
}

Eigen::Index regression_rows(const std::string& family, Eigen::Index d) {
  if (family == "orthogonal_square") return d;
  if (family == "rank_deficient" || family == "orthonormal_rows") return d / 2;  // d_s < d_e
  return 2 * d;
}

Mat<double> regression_x(const std::string& family, Eigen::Index d, Rng& rng) {
  const Eigen::Index n = regression_rows(family, d);
  if (family == "orthogonal_square" || family == "orthonormal") return random_orthonormal(n, d, rng);
  if (family == "scaled_orthonormal") return kScale * random_orthonormal(n, d, rng);
  if (family == "well_conditioned") return matrix_with_singular_values(n, d, geometric_spectrum(d, kWellCond), rng);
  if (family == "ill_conditioned") return matrix_with_singular_values(n, d, geometric_spectrum(d, kIllCond), rng);
  if (family == "orthonormal_rows") return random_orthonormal(d, n, rng).transpose();
  if (family == "scaled_partial_isometry") {
    Eigen::VectorXd s = Eigen::VectorXd::Zero(d);
    s.head(d / 2).setConstant(kScale);
    return matrix_with_singular_values(n, d, s, rng);
  }
  if (family == "low_rank") return gaussian_matrix(n, d / 2, rng) * gaussian_matrix(d / 2, d, rng);
  return gaussian_matrix(n, d, rng);  // gaussian, rank_deficient
}

Mat<double> regression_b(const std::string& kind, const Mat<double>& x, Rng& rng) {
  const Eigen::Index n = x.rows(), d = x.cols();
  if (kind == "random") return gaussian_matrix(n, n, rng);
  const Eigen::Index dk = 2, dv = std::max<Eigen::Index>(1, d / 2);
  const Mat<double> wq = gaussian_matrix(d, dk, rng, 1 / std::sqrt(double(d)));
  const Mat<double> wk = gaussian_matrix(d, dk, rng, 1 / std::sqrt(double(d)));
  AttentionLoss<double> loss(x, gaussian_matrix(d, dv, rng), gaussian_matrix(dv, d, rng), gaussian_matrix(n, d, rng));
  return regression_target(loss, wq, wk, 1 / std::sqrt(double(dk)));
}

}  // namespace attnlab
