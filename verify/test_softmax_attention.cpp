// Checks of exact and streaming softmax attention: agreement, row sums, huge logits, edge sizes.
#include <doctest/doctest.h>

#include <stdexcept>

#include "attention_test_support.hpp"
#include "attnlab/attention/attention_error.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/streaming_attention.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

template <typename T>
void check_agreement_with_naive() {
  Rng rng(kAttentionTestSeed);
  INFO("seed " << kAttentionTestSeed);
  for (const auto& family : attention_families()) {
    for (Eigen::Index n : attention_test_sizes(rng)) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 8);
      const auto in = typed_inputs<T>(family, n, d, rng);
      const Eigen::MatrixXd ref = naive_softmax_attention(in.q.template cast<double>(), in.k.template cast<double>(),
                                                          in.v.template cast<double>());
      const double bound = softmax_output_bound(in.q, in.k, in.v);
      INFO(family << " n=" << n << " d=" << d << " bound=" << bound);
      const Mat<T> exact = softmax_attention(in.q, in.k, in.v);
      CHECK((exact.template cast<double>() - ref).cwiseAbs().maxCoeff() <= bound);
      // The transposed-layout kernel against the reference matrix route P V.
      const Mat<T> via_matrix = softmax_attention_matrix(in.q, in.k) * in.v;
      CHECK((exact - via_matrix).cwiseAbs().maxCoeff() <= 2 * bound);
      for (Eigen::Index block : {Eigen::Index(1), Eigen::Index(3), kDefaultKeyBlock}) {
        const Mat<T> streamed = streaming_attention(in.q, in.k, in.v, block);
        CHECK((streamed.template cast<double>() - ref).cwiseAbs().maxCoeff() <= bound);
      }
      // Rows of P sum to 1 up to the n roundings of the sum and the division.
      const Mat<T> p = softmax_attention_matrix(in.q, in.k);
      CHECK((p.rowwise().sum().array() - T(1)).abs().maxCoeff() <= 2 * (static_cast<double>(n) + 2) * eps<T>());
      CHECK(p.minCoeff() >= T(0));
    }
  }
}

}  // namespace

TEST_CASE("softmax and streaming attention agree with the definition in float and double") {
  check_agreement_with_naive<double>();
  check_agreement_with_naive<float>();
}

TEST_CASE("streaming attention vs exact attention in float with a tolerance from n and eps") {
  Rng rng(kAttentionTestSeed + 1);
  INFO("seed " << kAttentionTestSeed + 1);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(65), Eigen::Index(200), Eigen::Index(513)}) {
    const auto in = typed_inputs<float>("gaussian", n, 16, rng);
    const Mat<float> exact = softmax_attention(in.q, in.k, in.v);
    const Mat<float> streamed = streaming_attention(in.q, in.k, in.v, 64);
    // Both are within the forward bound of the exact value, so within twice it of each other.
    const double bound = 2 * softmax_output_bound(in.q, in.k, in.v);
    INFO("n=" << n << " bound=" << bound);
    CHECK((exact - streamed).cwiseAbs().maxCoeff() <= bound);
  }
}

TEST_CASE("logits of +-1e4 give finite softmax attention that picks the arg-max key") {
  for (double sign : {1.0, -1.0}) {
    // q = 100 e_1 and keys +-100 e_1 scaled so the logits are +-1e4 / sqrt(d) with d = 1.
    Eigen::MatrixXd q(2, 1), k(3, 1), v(3, 2);
    q << 100 * sign, -100 * sign;
    k << 100, -100, 50;
    v << 1, 2, 3, 4, 5, 6;
    for (auto* fn : {+[](const Mat<double>& a, const Mat<double>& b, const Mat<double>& c) {
                       return softmax_attention(a, b, c);
                     },
                     +[](const Mat<double>& a, const Mat<double>& b, const Mat<double>& c) {
                       return streaming_attention(a, b, c, 1);
                     }}) {
      const Eigen::MatrixXd out = fn(q, k, v);
      CHECK(out.allFinite());
      // Query 0 with sign + attends only to key 0; query 1 to key 1 (and the reverse for sign -).
      const Eigen::Index key0 = sign > 0 ? 0 : 1, key1 = sign > 0 ? 1 : 0;
      CHECK(out.row(0) == v.row(key0));
      CHECK(out.row(1) == v.row(key1));
    }
    const Mat<float> outf = streaming_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>(), 2);
    CHECK(outf.allFinite());
  }
}

TEST_CASE("softmax attention: size-1 inputs are handled and empty ones rejected naming the value") {
  Eigen::MatrixXd q(1, 1), k(1, 1), v(1, 3);
  q << 0.3;
  k << -7;
  v << 1, 2, 3;
  CHECK(softmax_attention(q, k, v) == v);  // one key gets all the weight
  CHECK(streaming_attention(q, k, v) == v);
  const Eigen::MatrixXd empty(0, 1), no_cols(1, 0);
  CHECK_THROWS_WITH_AS(softmax_attention(q, empty, Eigen::MatrixXd(0, 3)), doctest::Contains("n = 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(streaming_attention(empty, k, v), doctest::Contains("n = 0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(softmax_attention(no_cols, no_cols, v), doctest::Contains("d (= 0)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(streaming_attention(q, k, v, 0), doctest::Contains("key_block (= 0)"), std::invalid_argument);
  CHECK_THROWS_AS(softmax_attention(q, k, Eigen::MatrixXd(2, 3)), std::invalid_argument);
}

TEST_CASE("head-stack wrappers equal the per-head kernels") {
  Rng rng(kAttentionTestSeed + 2);
  INFO("seed " << kAttentionTestSeed + 2);
  HeadStack<double> q(2, 3, 9, 4), k(2, 3, 9, 4), v(2, 3, 9, 4);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    const auto in = typed_inputs<double>("gaussian", 9, 4, rng);
    q[i] = in.q;
    k[i] = in.k;
    v[i] = in.v;
  }
  const auto exact = softmax_attention(q, k, v);
  const auto streamed = streaming_attention(q, k, v, 4);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    CHECK(exact[i] == softmax_attention(q[i], k[i], v[i]));
    CHECK(streamed[i] == streaming_attention(q[i], k[i], v[i], 4));
  }
  CHECK_THROWS_AS(softmax_attention(q, HeadStack<double>(1, 3, 9, 4), v), std::invalid_argument);
}

TEST_CASE("uniform attention's error: zero when softmax attention is uniform, the definition otherwise") {
  Rng rng(kAttentionTestSeed + 3);
  INFO("seed " << kAttentionTestSeed + 3);
  for (Eigen::Index n : {1, 2, 3, 17}) {
    INFO("n = " << n);
    const auto in = typed_inputs<double>("gaussian", n, 5, rng);
    // Equal keys make every score of a query equal: softmax attention is exactly uniform attention.
    const Eigen::MatrixXd same_keys = in.k.row(0).replicate(n, 1);
    CHECK(uniform_attention_error(in.v, softmax_attention(in.q, same_keys, in.v)) <= 4 * n * 1e-16);
    // Otherwise the definition: the mean of V's rows in every row, against the reference.
    const Eigen::MatrixXd exact = softmax_attention(in.q, in.k, in.v);
    Eigen::MatrixXd mean(n, 5);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j < 5; ++j) mean(i, j) = in.v.col(j).sum() / static_cast<double>(n);
    CHECK(uniform_attention_error(in.v, exact) == doctest::Approx((mean - exact).norm() / exact.norm()).epsilon(1e-12));
  }
  CHECK_THROWS_AS(uniform_attention_error(Eigen::MatrixXd(0, 5), Eigen::MatrixXd(2, 5)), std::invalid_argument);
  CHECK_THROWS_AS(uniform_attention_error(Eigen::MatrixXd(2, 4), Eigen::MatrixXd(2, 5)), std::invalid_argument);
}
