// Helpers shared by the attention kernel checks: sizes, seeded inputs and naive references.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/qk/qk_split.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

namespace attnlab::testing {

// The seed of every attention check (ATTNLAB_TEST_SEED overrides it), printed by each test through INFO.
inline const std::uint64_t kAttentionTestSeed = test_seed(20251122);

// The attention checks' sizes: edge sizes 1, 2, 3 and two random sizes in [4, 40] (support.hpp, test_sizes).
inline std::vector<Eigen::Index> attention_test_sizes(Rng& rng) { return test_sizes(rng, {4, 40}); }

template <typename T>
struct TypedInputs {
  Mat<T> q, k, v;
};

template <typename T>
TypedInputs<T> typed_inputs(const std::string& family, Eigen::Index n, Eigen::Index d, Rng& rng) {
  const AttentionInputs in = make_attention_inputs(family, n, d, rng);
  return {in.q.cast<T>(), in.k.cast<T>(), in.v.cast<T>()};
}

template <typename T>
double eps() {
  return static_cast<double>(std::numeric_limits<T>::epsilon());
}

// A forward-error bound for one output entry of softmax attention in precision T: each logit
// s_ij carries an absolute error up to d eps |q_i| |k_j| / sqrt(d), which exp() turns into a
// relative error of the weight; normalising and summing n weighted values adds n eps. So
// |out - exact| <= c (d s_max + n) eps max|v|, with c = 4 for the few extra roundings.
template <typename T>
double softmax_output_bound(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  const double d = static_cast<double>(q.cols()), n = static_cast<double>(k.rows());
  const double s_max = q.rowwise().norm().maxCoeff() * k.rowwise().norm().maxCoeff() / std::sqrt(d);
  return 4 * (d * s_max + n + 4) * eps<T>() * std::max(1.0, static_cast<double>(v.cwiseAbs().maxCoeff()));
}

// softmax(Q K^T / sqrt(d)) V straight from the definition, in long double and without the
// maximum subtraction: valid for the moderate logits the agreement checks use.
inline Eigen::MatrixXd naive_softmax_attention(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k,
                                               const Eigen::MatrixXd& v) {
  Eigen::MatrixXd out(q.rows(), v.cols());
  const long double scale = 1.0L / std::sqrt(static_cast<long double>(q.cols()));
  for (Eigen::Index i = 0; i < q.rows(); ++i) {
    std::vector<long double> w(static_cast<std::size_t>(k.rows()));
    long double sum = 0;
    for (Eigen::Index j = 0; j < k.rows(); ++j) {
      long double s = 0;
      for (Eigen::Index c = 0; c < q.cols(); ++c) s += static_cast<long double>(q(i, c)) * k(j, c);
      w[static_cast<std::size_t>(j)] = std::exp(s * scale);
      sum += w[static_cast<std::size_t>(j)];
    }
    for (Eigen::Index c = 0; c < v.cols(); ++c) {
      long double acc = 0;
      for (Eigen::Index j = 0; j < k.rows(); ++j) acc += w[static_cast<std::size_t>(j)] * v(j, c);
      out(i, c) = static_cast<double>(acc / sum);
    }
  }
  return out;
}

}  // namespace attnlab::testing
