// One regression instance measured as G4-G6 measure it (theory/lowrank_instance), the per-family verdict
// G5, G6 and G11 share (lab/family_verdict), the rank of a trained layer's X' = [z | 1] (issue 15), and the
// families of X the corrected statements' confirming sweeps draw (lab/regression_inputs).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <map>
#include <string>

#include "attnlab/core/rng.hpp"
#include "attnlab/lab/family_verdict.hpp"
#include "attnlab/lab/regression_inputs.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/theory/lowrank_instance.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kLowrankInstanceSeed = attnlab::testing::test_seed(20251127);  // ATTNLAB_TEST_SEED overrides it

}  // namespace

TEST_CASE("measure_lowrank_instance: recipe and Remark 2.1 exact on square orthogonal X, Remark 2.1 off on tall X") {
  Rng rng(kLowrankInstanceSeed);
  INFO("seed " << kLowrankInstanceSeed);
  FactoredSearchOptions search;
  search.starts = 3;
  for (int rep = 0, repeat = attnlab::testing::test_repeat(3); rep < repeat; ++rep) {
    // Square orthogonal X: range(X) is everything, the weights are uniform, Eckart-Young applies to Z* itself.
    const Mat<double> x = random_orthonormal(10, 10, rng), b = gaussian_matrix(10, 10, rng);
    const LowRankInstance r = measure_lowrank_instance(b, x, 3, rng, search);
    CHECK(r.x_rank == 10);
    ATTNLAB_CHECK_RATIO_LE(r.recipe_gap_ratio, kResidualRatioThreshold, "recipe gap");
    ATTNLAB_CHECK_RATIO_LE(r.remark21_ratio, kResidualRatioThreshold, "Remark 2.1 on square orthogonal X");
    CHECK(r.unreachable <= 1e-20 * r.b_norm2);
    CHECK(r.f_min > 0.1 * r.b_norm2);  // rank 3 of a 10 x 10 Gaussian leaves most of it
  }
  // Tall X (n > d): ||B - P B P||^2 > 0 is part of every attained value and absent from Remark 2.1, so its
  // ratio is far beyond rounding; the closed form and the factored search still agree.
  const Mat<double> x = gaussian_matrix(20, 6, rng), b = gaussian_matrix(20, 20, rng);
  const LowRankInstance r = measure_lowrank_instance(b, x, 2, rng, search);
  CHECK(r.x_rank == 6);
  CHECK(r.unreachable > 0.5 * r.b_norm2);
  ATTNLAB_CHECK_RATIO_GT(r.remark21_ratio, 1e6 * kResidualRatioThreshold, "Remark 2.1 on tall X");
  CHECK(std::abs(r.closed_minus_factored) <= 1e-8);
  CHECK(r.f_min == std::min(r.f_closed, r.f_factored));
  CHECK(r.recipe_gap >= -1e-12);
  // An X of tiny scale: Z* overflows, refused as bad input rather than NaN.
  CHECK_THROWS_AS(measure_lowrank_instance(b, Mat<double>(1e-300 * x), 2, rng, search), std::invalid_argument);
}

TEST_CASE("x_spectrum: a layer's X' = [z | 1] from LayerNorm has rank D, one less than its columns") {
  // Every row of LN's output satisfies sum_j (z_ij - beta_j) / gamma_j = 0, so with the 1-column the
  // columns of [z | 1] are dependent (G11's note relies on it).
  Rng rng(kLowrankInstanceSeed + 1);
  INFO("seed " << kLowrankInstanceSeed + 1);
  const Eigen::Index n = 40, D = 8;
  const Mat<double> in = gaussian_matrix(n, D, rng, 3.0);
  const Vec<double> gamma = (gaussian_matrix(D, 1, rng, 0.2).array() + 1.0).matrix(), beta = gaussian_matrix(D, 1, rng, 0.5);
  Mat<double> z(n, D);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Vec<double> row = in.row(i).transpose();
    const double mu = row.mean(), var = (row.array() - mu).square().mean();
    z.row(i) = (((row.array() - mu) / std::sqrt(var + 1e-5)) * gamma.array() + beta.array()).matrix().transpose();
  }
  Mat<double> x(n, D + 1);
  x << z, Mat<double>::Ones(n, 1);
  CHECK(x_spectrum(z).rank == D);
  CHECK(x_spectrum(x).rank == D);
  // Without the normalisation the same shape has full column rank: the check can tell.
  Mat<double> raw(n, D + 1);
  raw << in, Mat<double>::Ones(n, 1);
  CHECK(x_spectrum(raw).rank == D + 1);
}

TEST_CASE("judge_by_family: holds, conditional and fails, naming the families and their cond(X)") {
  std::map<std::string, std::pair<double, double>> cond{{"a", {1, 2}}, {"b", {10, 20}}};
  const FamilyJudgement all = judge_by_family({{"a", {3, 3}}, {"b", {2, 2}}}, &cond);
  CHECK(all.verdict == Verdict::holds);
  CHECK(all.note == "all instances pass in: [a 3/3; b 2/2]; not in: []; cond(X) in passing families 1..20");
  const FamilyJudgement some = judge_by_family({{"a", {3, 3}}, {"b", {1, 2}}}, &cond);
  CHECK(some.verdict == Verdict::conditional);
  CHECK(some.note == "all instances pass in: [a 3/3]; not in: [b 1/2]; cond(X) in passing families 1..2, in the others 10..20");
  const FamilyJudgement none = judge_by_family({{"a", {0, 3}}, {"b", {1, 2}}});
  CHECK(none.verdict == Verdict::fails);
  CHECK(none.note == "all instances pass in: []; not in: [a 0/3; b 1/2]");
  CHECK(judge_by_family({{"a", {0, 3}}, {"b", {1, 2}}}, &cond).note ==
        "all instances pass in: []; not in: [a 0/3; b 1/2]; cond(X) 1..20");
}


TEST_CASE("regression_confirming_families: the shapes, ranks and singular values their names promise") {
  Rng rng(kLowrankInstanceSeed + 3);
  INFO("seed " << kLowrankInstanceSeed + 3);
  // The claims' families come first, unchanged, so the claims' sweeps draw what they drew before.
  const auto& claims = regression_families();
  const auto& confirming = regression_confirming_families();
  REQUIRE(confirming.size() == claims.size() + 3);
  for (std::size_t i = 0; i < claims.size(); ++i) CHECK(std::string(confirming[i].name) == claims[i].name);
  for (Eigen::Index d : {4, 12, 20}) {
    for (const auto& fam : confirming) {
      INFO(fam.name << " d=" << d);
      const Mat<double> x = regression_x(fam.name, d, rng);
      CHECK(x.rows() == regression_rows(fam.name, d));
      CHECK(x.cols() == d);
      const XSpectrum sx = x_spectrum(x);
      CHECK((sx.rank == d) == fam.full_column_rank);
      const std::string name = fam.name;
      const double tol = 100 * double(d) * 2.2e-16;
      if (name == "orthonormal_rows") {
        CHECK(x.rows() == d / 2);
        CHECK((x * x.transpose() - Mat<double>::Identity(d / 2, d / 2)).norm() <= tol);
      } else if (name == "scaled_partial_isometry") {
        CHECK(sx.rank == d / 2);
        CHECK(sx.cond - 1 <= tol);
        CHECK(std::abs(sx.norm2 - 3) <= 3 * tol);
      } else if (name == "low_rank") {
        CHECK(sx.rank == d / 2);
        CHECK(sx.cond > 1.01);  // a generic product: unequal singular values
      }
    }
  }
}
