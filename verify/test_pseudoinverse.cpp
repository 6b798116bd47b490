// Properties of the three pseudoinverses: Penrose conditions, agreement, validity of the formula.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "attnlab/linalg/numerical_rank.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kPseudoinverseSeed = attnlab::testing::test_seed(4004);  // ATTNLAB_TEST_SEED overrides it

// Shapes (rows, cols): edge sizes 1, 2, 3 and a few random ones, tall, square and wide.
std::vector<std::pair<int, int>> test_shapes(Rng& rng) {
  std::vector<std::pair<int, int>> shapes = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {3, 2}, {2, 3}, {3, 3}};
  for (int i = 0, repeat = attnlab::testing::test_repeat(6); i < repeat; ++i)
    shapes.emplace_back(1 + static_cast<int>(rng.uniform() * 20), 1 + static_cast<int>(rng.uniform() * 20));
  return shapes;
}

// A rows x cols matrix of rank `rank` with nonzero singular values in [1/cond, 1].
Eigen::MatrixXd ranked_matrix(int rows, int cols, int rank, double cond, Rng& rng) {
  Eigen::VectorXd s = Eigen::VectorXd::Zero(std::min(rows, cols));
  s.head(rank) = geometric_spectrum(rank, cond);
  return matrix_with_singular_values(rows, cols, s, rng);
}

template <typename T>
void check_penrose_svd_and_cod() {
  Rng rng(kPseudoinverseSeed);
  INFO("seed " << kPseudoinverseSeed);
  const double eps = std::numeric_limits<T>::epsilon();
  const double cond = 10;
  for (const auto& [m, n] : test_shapes(rng)) {
    for (int rank : {std::min(m, n), std::max(1, std::min(m, n) - 1)}) {
      INFO(m << "x" << n << " rank " << rank);
      const Mat<T> a = ranked_matrix(m, n, rank, cond, rng).template cast<T>();
      const auto ps = pinv_svd<T>(a);
      const auto pc = pinv_cod<T>(a);
      CHECK(ps.rank == rank);
      CHECK(pc.rank == rank);
      // Backward-stable SVD: each Penrose residual is c * max(m,n) * eps times ||A|| ||P|| (<= cond)
      // scaled by the norm of the term; ||P||_2 = cond for the kept part.
      const double tol = 30 * std::max(m, n) * eps * cond * cond;
      for (const auto* p : {&ps.pinv, &pc.pinv}) {
        const auto r = penrose_residuals<T>(a, *p);
        CHECK(r.apa <= tol * a.norm());
        CHECK(r.pap <= tol * p->norm());
        CHECK(r.ap_sym <= tol * std::sqrt(double(m)));
        CHECK(r.pa_sym <= tol * std::sqrt(double(n)));
      }
      // Both are A^+: they agree to the forward error of a cond-10 problem.
      CHECK((ps.pinv - pc.pinv).template cast<double>().norm() <= tol * ps.pinv.template cast<double>().norm());
    }
  }
}

}  // namespace

TEST_CASE("pinv_svd and pinv_cod satisfy the four Penrose conditions, full rank and rank-deficient") {
  check_penrose_svd_and_cod<double>();
  check_penrose_svd_and_cod<float>();
}

TEST_CASE("pseudoinverse of orthonormal columns is the transpose") {
  Rng rng(kPseudoinverseSeed + 1);
  INFO("seed " << kPseudoinverseSeed + 1);
  for (int n : {1, 2, 3, 7}) {
    const Eigen::MatrixXd q = random_orthonormal(n + 3, n, rng);
    ATTNLAB_CHECK_RATIO_LE((pinv_svd<double>(q).pinv - q.transpose()).norm() / ((n + 3) * 2.2e-16 * n), 30,
                           "pinv of orthonormal columns against the transpose");
  }
}

TEST_CASE("pinv_svd honours an explicit cutoff") {
  Rng rng(kPseudoinverseSeed + 2);
  Eigen::VectorXd s(4);
  s << 1, 1e-2, 1e-4, 1e-6;
  const Eigen::MatrixXd a = matrix_with_singular_values(6, 4, s, rng);
  CHECK(pinv_svd<double>(a).rank == 4);
  CHECK(pinv_svd<double>(a, 1e-3).rank == 2);
  CHECK(pinv_svd<double>(a, 1e-3).pinv.norm() == doctest::Approx(std::sqrt(1 + 1e4)).epsilon(1e-8));
}

TEST_CASE("(A^T A)^{-1} A^T is A^+ exactly when A has full column rank") {
  Rng rng(kPseudoinverseSeed + 3);
  INFO("seed " << kPseudoinverseSeed + 3);
  for (int n : {1, 2, 3, 5, 9}) {
    const int m = n + 1 + static_cast<int>(rng.uniform() * 6);
    const double cond = 10;
    const Eigen::MatrixXd a = ranked_matrix(m, n, n, cond, rng);
    const auto ne = pinv_normal_equations<double>(a);
    CHECK(ne.valid);
    CHECK(has_full_column_rank<double>(a));
    // Normal equations square the condition number: forward error c * n * cond^2 * eps.
    const Eigen::MatrixXd ps = pinv_svd<double>(a).pinv;
    ATTNLAB_CHECK_RATIO_LE((ne.pinv - ps).norm() / (m * cond * cond * 2.2e-16 * ps.norm()), 30,
                           "normal-equation pinv against the SVD's");
  }
  for (int n : {2, 3, 6}) {
    // Wide (d_s < d_e) and tall-but-rank-deficient: the formula is not A^+.
    for (const auto& a : {ranked_matrix(n - 1, n, n - 1, 10, rng), ranked_matrix(n + 4, n, n - 1, 10, rng)}) {
      const auto ne = pinv_normal_equations<double>(a);
      CHECK(!ne.valid);
      CHECK(!has_full_column_rank<double>(a));
      const Eigen::MatrixXd ps = pinv_svd<double>(a).pinv;
      const bool finite = ne.pinv.allFinite();
      // Either LU produced non-finite entries or the result is far from A^+.
      CHECK((!finite || (ne.pinv - ps).norm() > 0.1 * ps.norm()));
    }
  }
}
