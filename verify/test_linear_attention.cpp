// Checks of the two linear attentions: agreement with their formed matrices, row sums, huge inputs.
#include <doctest/doctest.h>

#include <stdexcept>

#include "attention_test_support.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j') straight from Katharopoulos et al.'s definition.
Eigen::MatrixXd naive_elu_attention(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v) {
  auto phi = [](double x) { return x > 0 ? x + 1 : std::exp(x); };
  Eigen::MatrixXd out(q.rows(), v.cols());
  for (Eigen::Index i = 0; i < q.rows(); ++i) {
    Eigen::VectorXd w(k.rows());
    for (Eigen::Index j = 0; j < k.rows(); ++j) {
      w(j) = 0;
      for (Eigen::Index c = 0; c < q.cols(); ++c) w(j) += phi(q(i, c)) * phi(k(j, c));
    }
    out.row(i) = (w.transpose() * v) / w.sum();
  }
  return out;
}

template <typename T>
void check_linear_forms() {
  Rng rng(kAttentionTestSeed + 10);
  INFO("seed " << kAttentionTestSeed + 10);
  for (const auto& family : attention_families()) {
    for (Eigen::Index n : attention_test_sizes(rng)) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 8);
      const auto in = typed_inputs<T>(family, n, d, rng);
      INFO(family << " n=" << n << " d=" << d);
      const double nd = static_cast<double>(n + d);
      const double vmax = std::max(1.0, static_cast<double>(in.v.cwiseAbs().maxCoeff()));
      // The linear and the quadratic orders sum the same convex combination of values in a
      // different order: each differs from the exact value by at most c (n + d) eps max|v|, c = 4.
      const double tol = 8 * (nd + 4) * eps<T>() * vmax;
      const Mat<T> p = efficient_attention_matrix(in.q, in.k);
      CHECK((efficient_attention(in.q, in.k, in.v) - p * in.v).cwiseAbs().maxCoeff() <= tol);
      CHECK((p.rowwise().sum().array() - T(1)).abs().maxCoeff() <= 4 * (nd + 2) * eps<T>());
      const Mat<T> pe = elu_linear_attention_matrix(in.q, in.k);
      CHECK((elu_linear_attention(in.q, in.k, in.v) - pe * in.v).cwiseAbs().maxCoeff() <= tol);
      CHECK((pe.rowwise().sum().array() - T(1)).abs().maxCoeff() <= 4 * (nd + 2) * eps<T>());
      const Eigen::MatrixXd ref = naive_elu_attention(in.q.template cast<double>(), in.k.template cast<double>(),
                                                      in.v.template cast<double>());
      CHECK((elu_linear_attention(in.q, in.k, in.v).template cast<double>() - ref).cwiseAbs().maxCoeff() <= tol);
    }
  }
}

}  // namespace

TEST_CASE("linear attentions agree with their attention matrices whose rows sum to 1 in float and double") {
  check_linear_forms<double>();
  check_linear_forms<float>();
}

TEST_CASE("efficient attention by hand on a 2 x 1 example") {
  // softmax_row of a single feature is 1, so the output is softmax_col(K)^T V for every query.
  Eigen::MatrixXd q(2, 1), k(2, 1), v(2, 1);
  q << 5, -3;
  k << 0, std::log(3.0);
  v << 1, 5;
  const Eigen::MatrixXd out = efficient_attention(q, k, v);
  // softmax over keys (0, log 3) is (1/4, 3/4): 1/4 + 15/4 = 4.
  CHECK(out(0, 0) == doctest::Approx(4.0).epsilon(1e-15));
  CHECK(out(1, 0) == doctest::Approx(4.0).epsilon(1e-15));
}

TEST_CASE("the association (Q K^T) V = Q (K^T V) holds to rounding (scaled residual < 30)") {
  Rng rng(kAttentionTestSeed + 11);
  INFO("seed " << kAttentionTestSeed + 11);
  for (Eigen::Index n : attention_test_sizes(rng)) {
    const auto in = typed_inputs<double>("gaussian", n, 5, rng);
    const Eigen::MatrixXd a = unnormalised_attention_quadratic(in.q, in.k, in.v);
    const Eigen::MatrixXd b = unnormalised_attention_linear(in.q, in.k, in.v);
    // Both are backward stable products of three factors: the residual is O((n + d) eps ||Q|| ||K|| ||V||).
    const double scale = in.q.norm() * in.k.norm() * in.v.norm() / 5.0;
    ATTNLAB_CHECK_RATIO_LT(residual_ratio<double>((a - b).norm(), static_cast<double>(n + 5), scale),
                           kResidualRatioThreshold, "(Q K^T) V against Q (K^T V)");
  }
}

TEST_CASE("linear attentions stay finite for inputs of +-1e4") {
  for (double sign : {1.0, -1.0}) {
    Eigen::MatrixXd q = Eigen::MatrixXd::Constant(3, 2, 1e4 * sign), k = Eigen::MatrixXd::Constant(4, 2, -1e4);
    q(0, 1) = -1e4;
    k(1, 0) = 1e4 * sign;
    const Eigen::MatrixXd v = Eigen::MatrixXd::Ones(4, 2);
    for (const Eigen::MatrixXd& out : {efficient_attention(q, k, v), elu_linear_attention(q, k, v)}) {
      CHECK(out.allFinite());
      CHECK((out.array() - 1.0).abs().maxCoeff() <= 1e-12);  // any weights average ones to one
    }
    CHECK(elu_linear_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>()).allFinite());
    CHECK(efficient_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>()).allFinite());
  }
  // All entries far below -745: elu(x) + 1 = exp(x) underflows to 0, the bug the rescaling prevents.
  const Eigen::MatrixXd q = Eigen::MatrixXd::Constant(2, 2, -1e4), k = Eigen::MatrixXd::Constant(3, 2, -2e4);
  Eigen::MatrixXd v(3, 1);
  v << 1, 2, 3;
  CHECK(elu_linear_attention(q, k, v).allFinite());
}

TEST_CASE("linear attentions: size 1 handled and empty rejected") {
  Eigen::MatrixXd one(1, 1);
  one << 2.0;
  CHECK(efficient_attention(one, one, one) == one);
  CHECK(elu_linear_attention(one, one, one)(0, 0) == doctest::Approx(2.0));
  CHECK_THROWS_WITH_AS(efficient_attention(Eigen::MatrixXd(0, 1), one, one), doctest::Contains("n = 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(elu_linear_attention(one, Eigen::MatrixXd(0, 1), Eigen::MatrixXd(0, 1)),
                       doctest::Contains("n = 0"), std::invalid_argument);
}
