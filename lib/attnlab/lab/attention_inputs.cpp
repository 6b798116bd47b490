// Named input families for attention accuracy experiments (--family).
#include "attnlab/lab/attention_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace attnlab {

const std::vector<std::string>& attention_families() {
  static const std::vector<std::string> names = {"gaussian_small", "gaussian", "gaussian_large", "uniform",
                                                 "low_rank",       "local",    "clustered"};
  return names;
}

bool attention_family_centered(const std::string& family) {
  const auto& all = attention_families();
  if (std::find(all.begin(), all.end(), family) == all.end())
    throw std::invalid_argument("unknown input family '" + family + "'");
  return family != "uniform";
}

namespace {

Eigen::MatrixXd low_rank_plus_noise(Eigen::Index n, Eigen::Index d, Rng& rng) {
  const Eigen::Index r = std::min<Eigen::Index>(4, d);
  // G H has entries of variance 1 when H ~ N(0, 1/r).
  return gaussian_matrix(n, r, rng) * gaussian_matrix(r, d, rng, 1.0 / std::sqrt(static_cast<double>(r))) +
         gaussian_matrix(n, d, rng, 0.01);
}

// Row i is a feature vector of position i whose dot products decay with |i - j|:
// q_i . k_j = c^2 sum_f cos(w_f (i - j)), so logits peak on the diagonal.
Eigen::MatrixXd positional(Eigen::Index n, Eigen::Index d, Rng& rng) {
  Eigen::MatrixXd x(n, d);
  const Eigen::Index pairs = std::max<Eigen::Index>(1, d / 2);
  Eigen::VectorXd freq(pairs), phase(pairs);
  for (Eigen::Index f = 0; f < pairs; ++f) {
    freq(f) = std::numbers::pi * rng.uniform() / 8.0;  // periods of 16 positions and longer
    phase(f) = 2 * std::numbers::pi * rng.uniform();
  }
  // Scaled so the diagonal logit sum_f c^2 / sqrt(d) is about 4 sqrt(d): a clear but finite peak.
  const double c = std::sqrt(8.0 * std::sqrt(static_cast<double>(d)) / static_cast<double>(pairs));
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < d; ++j) {
      const Eigen::Index f = std::min(j / 2, pairs - 1);
      const double angle = freq(f) * static_cast<double>(i) + phase(f);
      x(i, j) = c * (j % 2 == 0 ? std::cos(angle) : std::sin(angle));
    }
  return x;
}

Eigen::MatrixXd clustered(Eigen::Index n, Eigen::Index d, const Eigen::MatrixXd& centres, Rng& rng) {
  Eigen::MatrixXd x(n, d);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto c = static_cast<Eigen::Index>(rng.uniform() * static_cast<double>(centres.rows()));
    x.row(i) = centres.row(c) + gaussian_matrix(1, d, rng, 0.1);
  }
  return x;
}

}  // namespace

AttentionInputs make_attention_inputs(const std::string& family, Eigen::Index n, Eigen::Index d, Rng& rng) {
  if (n < 1 || d < 1)
    throw std::invalid_argument("make_attention_inputs: n (= " + std::to_string(n) + ") and d (= " +
                                std::to_string(d) + ") must be at least 1");
  AttentionInputs in;
  if (family == "gaussian_small" || family == "gaussian" || family == "gaussian_large") {
    const double s = family == "gaussian_small" ? 0.25 : family == "gaussian" ? 1.0 : 2.0;
    in.q = gaussian_matrix(n, d, rng, s);
    in.k = gaussian_matrix(n, d, rng, s);
  } else if (family == "uniform") {
    in.q = uniform_matrix(n, d, rng);
    in.k = uniform_matrix(n, d, rng);
    in.v = uniform_matrix(n, d, rng);
    return in;
  } else if (family == "low_rank") {
    in.q = low_rank_plus_noise(n, d, rng);
    in.k = low_rank_plus_noise(n, d, rng);
  } else if (family == "local") {
    in.q = positional(n, d, rng);
    in.k = in.q;
  } else if (family == "clustered") {
    // Centres of norm about sqrt(d) / 2 keep the within-cluster logits O(1)-O(d^0.5).
    const Eigen::MatrixXd centres = gaussian_matrix(8, d, rng, 0.5);
    in.q = clustered(n, d, centres, rng);
    in.k = clustered(n, d, centres, rng);
  } else {
    throw std::invalid_argument("unknown input family '" + family + "'");
  }
  in.v = gaussian_matrix(n, d, rng);
  return in;
}

}  // namespace attnlab
