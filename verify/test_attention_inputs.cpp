// Checks of the named attention input families.
#include <doctest/doctest.h>

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

TEST_CASE("unknown families and empty shapes are rejected by name") {
  Rng rng(kInputsSeed + 2);
  CHECK_THROWS_WITH_AS(make_attention_inputs("nope", 4, 4, rng), "unknown input family 'nope'", std::invalid_argument);
  CHECK_THROWS_AS(make_attention_inputs("gaussian", 0, 4, rng), std::invalid_argument);
}
