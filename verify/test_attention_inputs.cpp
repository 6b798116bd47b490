// Checks of the named attention input families.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "attnlab/lab/attention_inputs.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kInputsSeed = attnlab::testing::test_seed(1);  // ATTNLAB_TEST_SEED overrides it

}  // namespace

TEST_CASE("every family gives finite n x d inputs, the same for the same seed") {
  INFO("seed " << kInputsSeed);
  for (const auto& fam : attention_families())
    for (auto [n, d] : std::vector<std::pair<int, int>>{{1, 1}, {2, 3}, {3, 2}, {37, 16}}) {
      INFO(fam << " n=" << n << " d=" << d);
      Rng a(kInputsSeed), b(kInputsSeed);
      const AttentionInputs x = make_attention_inputs(fam, n, d, a);
      const AttentionInputs y = make_attention_inputs(fam, n, d, b);
      for (const auto* m : {&x.q, &x.k, &x.v}) {
        CHECK(m->rows() == n);
        CHECK(m->cols() == d);
        CHECK(m->allFinite());
      }
      CHECK(x.q == y.q);
      CHECK(x.k == y.k);
      CHECK(x.v == y.v);
    }
}

TEST_CASE("the local family concentrates attention near the diagonal") {
  INFO("seed " << kInputsSeed + 1);
  Rng rng(kInputsSeed + 1);
  const AttentionInputs in = make_attention_inputs("local", 64, 16, rng);
  const Eigen::MatrixXd logits = in.q * in.k.transpose();
  // Each row's largest logit is its own position (q_i = k_i maximises q_i . k_j).
  int on_diagonal = 0;
  for (Eigen::Index i = 0; i < 64; ++i) {
    Eigen::Index j;
    logits.row(i).maxCoeff(&j);
    on_diagonal += j == i;
  }
  CHECK(on_diagonal == 64);
}

TEST_CASE("attention_family_centered: the mean of Q, K and V is small against their spread exactly where it says") {
  INFO("seed " << kInputsSeed + 3);
  for (const auto& fam : attention_families()) {
    INFO(fam);
    // Over several draws (the clustered centres and the local phases are random per draw), the mean entry of
    // each matrix against its root mean square: about 1 / sqrt(entries) if centred, 1/2 / sqrt(1/3) for U[0, 1).
    double largest = 0;
    for (int draw = 0; draw < 16; ++draw) {
      Rng rng(derive_seed(kInputsSeed + 3, static_cast<std::uint64_t>(draw)));
      const AttentionInputs in = make_attention_inputs(fam, 256, 16, rng);
      for (const auto* m : {&in.q, &in.k, &in.v})
        largest = std::max(largest, std::abs(m->mean()) / std::sqrt(m->squaredNorm() / static_cast<double>(m->size())));
    }
    // Centred families stay below 0.5 (clustered's 8 centres and local's sinusoids move the mean of one draw
    // the most); uniform is at 0.87.
    if (attention_family_centered(fam)) CHECK(largest < 0.5);
    else CHECK(largest > 0.8);
  }
  CHECK_THROWS_WITH_AS(attention_family_centered("gaussian_huge"), doctest::Contains("gaussian_huge"), std::invalid_argument);
}

TEST_CASE("unknown families and empty shapes are rejected by name") {
  Rng rng(kInputsSeed + 2);
  CHECK_THROWS_WITH_AS(make_attention_inputs("nope", 4, 4, rng), "unknown input family 'nope'", std::invalid_argument);
  CHECK_THROWS_AS(make_attention_inputs("gaussian", 0, 4, rng), std::invalid_argument);
}
