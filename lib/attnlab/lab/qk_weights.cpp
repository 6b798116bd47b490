// Named families of query/key weight pairs (W_Q, W_K) for the seed-000 claims.
#include "attnlab/lab/qk_weights.hpp"

#include "attnlab/lab/given_inputs.hpp"

#include <cmath>
#include <stdexcept>

namespace attnlab {

const std::vector<QkFamily>& qk_weight_families() {
  static const std::vector<QkFamily> families = {
      {"gaussian", "gaussian weights (W_Q, W_K ~ N(0, 1/d))"},
      {"ill_conditioned", "ill-conditioned weights (singular values 1 .. 1e-6)"},
      {"clustered", "a clustered S_w spectrum with an O(1) skew part"},
      {"tied", "tied weights (W_K = W_Q, so W_Q W_K^T is symmetric)"},
      {"large_norm", "large-norm weights (gaussian x 1e3)"},
  };
  return families;
}

const std::vector<QkFamily>& qk_confirming_families() {
  static const std::vector<QkFamily> families = [] {
    std::vector<QkFamily> out = qk_weight_families();
    out.push_back({"symmetric_indefinite", "symmetric indefinite weights (W_K = W_Q D, D = diag(+-1))"});
    return out;
  }();
  return families;
}

const std::string& qk_family_description(const std::string& family) {
  static const std::string given = "the given weights";
  for (const auto& f : qk_confirming_families())
    if (f.name == family) return f.description;
  if (family == kGivenFamily) return given;
  throw std::invalid_argument("unknown weight family '" + family + "'");
}

QkWeights make_qk_weights(const std::string& family, Eigen::Index d, Eigen::Index dk, Rng& rng) {
  if (d < 1 || dk < 1 || dk > d)
    throw std::invalid_argument("make_qk_weights: need 1 <= d_k <= d (d = " + std::to_string(d) +
                                ", d_k = " + std::to_string(dk) + ")");
  const double s = 1.0 / std::sqrt(static_cast<double>(d));
  QkWeights w;
  if (family == "gaussian") {
    w.wq = gaussian_matrix(d, dk, rng, s);
    w.wk = gaussian_matrix(d, dk, rng, s);
  } else if (family == "ill_conditioned") {
    const Eigen::VectorXd sv = geometric_spectrum(dk, 1e6);
    w.wq = matrix_with_singular_values(d, dk, sv, rng);
    w.wk = matrix_with_singular_values(d, dk, sv, rng);
  } else if (family == "clustered") {
    const Eigen::MatrixXd o = random_orthonormal(d, dk, rng);
    const Eigen::MatrixXd g = gaussian_matrix(dk, dk, rng);
    const Eigen::MatrixXd r = gaussian_matrix(dk, dk, rng, 1.0 / std::sqrt(static_cast<double>(dk)));
    const Eigen::MatrixXd c = Eigen::MatrixXd::Identity(dk, dk) + 0.5e-6 * (g + g.transpose()) + 0.5 * (r - r.transpose());
    w.wq = o * c;
    w.wk = o;
  } else if (family == "tied") {
    w.wq = gaussian_matrix(d, dk, rng, s);
    w.wk = w.wq;
  } else if (family == "large_norm") {
    w.wq = gaussian_matrix(d, dk, rng, 1e3 * s);
    w.wk = gaussian_matrix(d, dk, rng, 1e3 * s);
  } else if (family == "symmetric_indefinite") {
    w.wq = gaussian_matrix(d, dk, rng, s);
    w.wk = w.wq;
    for (Eigen::Index j = 0; j < dk; ++j)
      if (rng.uniform() < 0.5) w.wk.col(j) = -w.wk.col(j);  // an exact sign flip: M = W_Q D W_Q^T stays symmetric
  } else {
    throw std::invalid_argument("unknown weight family '" + family + "'");
  }
  return w;
}

}  // namespace attnlab
