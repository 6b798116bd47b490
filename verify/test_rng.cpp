// Checks of the portable generator: golden values, ranges, moments, random matrix families.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/core/rng.hpp"

using namespace attnlab;

TEST_CASE("mt19937_64 is the standard's engine: its 10000th output is fixed by [rand.predef]") {
  Rng rng(5489u);  // the default seed named by the standard
  std::uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = rng.next_u64();
  CHECK(x == 9981545732273789042ULL);
}

TEST_CASE("golden values: a seed means the same uniforms, normals and trial seeds everywhere") {
  // Recorded from this implementation; any change to the transforms breaks reproducibility
  // of every committed table, so it must show up here first.
  Rng u(1);
  CHECK(u.uniform() == 0.13387664401253263);
  CHECK(u.uniform() == 0.13640703636619722);
  CHECK(u.uniform() == 0.45121490384453811);
  Rng g(1);
  // Box-Muller may round differently in the last bit with another libm: compare to 1e-15.
  CHECK(g.normal() == doctest::Approx(0.35099249780849107).epsilon(1e-15));
  CHECK(g.normal() == doctest::Approx(0.40529019332161598).epsilon(1e-15));
  CHECK(g.normal() == doctest::Approx(1.0859449105047105).epsilon(1e-15));
  CHECK(derive_seed(1, 2) == 165782222531465380ULL);
}

TEST_CASE("uniform draws lie in [0, 1) and normal draws have mean 0 and variance 1") {
  Rng rng(123);
  constexpr int n = 200000;
  double sum = 0, sum2 = 0, umin = 1, umax = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    umin = std::min(umin, u);
    umax = std::max(umax, u);
    const double z = rng.normal();
    sum += z;
    sum2 += z * z;
  }
  CHECK(umin >= 0.0);
  CHECK(umax < 1.0);
  // Standard errors: 1/sqrt(n) for the mean, sqrt(2/n) for the variance; 5 of them is a
  // false alarm once in ~3.5 million runs.
  CHECK(std::abs(sum / n) < 5.0 / std::sqrt(n));
  CHECK(std::abs(sum2 / n - 1.0) < 5.0 * std::sqrt(2.0 / n));
}

TEST_CASE("derived seeds differ between trials and between bases") {
  std::set<std::uint64_t> seen;
  for (std::uint64_t base : {0ULL, 1ULL, 2ULL})
    for (std::uint64_t i = 0; i < 1000; ++i) seen.insert(derive_seed(base, i));
  CHECK(seen.size() == 3000);
}

TEST_CASE("random orthonormal matrices have orthonormal columns, edge sizes included") {
  Rng rng(7);
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {2, 2}, {3, 3}, {50, 7}, {64, 64}}) {
    const Eigen::MatrixXd q = random_orthonormal(rows, cols, rng);
    // Householder QR is backward stable: ||Q^T Q - I|| <= c n eps with a small c.
    const double err = (q.transpose() * q - Eigen::MatrixXd::Identity(cols, cols)).norm();
    INFO("rows " << rows << " cols " << cols);
    CHECK(err <= 10.0 * rows * 2.2e-16);
  }
  CHECK_THROWS_AS(random_orthonormal(2, 3, rng), std::invalid_argument);
}

TEST_CASE("matrices with prescribed singular values reproduce them") {
  Rng rng(11);
  const Eigen::VectorXd s = geometric_spectrum(6, 1e6);
  CHECK(s(0) == 1.0);
  CHECK(s(5) == doctest::Approx(1e-6));
  const Eigen::MatrixXd a = matrix_with_singular_values(20, 6, s, rng);
  const Eigen::VectorXd got = Eigen::JacobiSVD<Eigen::MatrixXd>(a).singularValues();
  // Singular values are perfectly conditioned: errors of order n eps ||A||.
  CHECK((got - s).cwiseAbs().maxCoeff() <= 100 * 2.2e-16);
  CHECK_THROWS_AS(geometric_spectrum(3, 0.5), std::invalid_argument);
}
