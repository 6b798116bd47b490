// Properties of the weighted low-rank regression: gradient, Z*, closed form, factored minimiser.
#include <doctest/doctest.h>

#include <limits>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/theory/attention_loss.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/theory/lowrank_instance.hpp"
#include "attnlab/theory/weighted_lowrank.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kWeightedLowrankSeed = attnlab::testing::test_seed(4104);  // ATTNLAB_TEST_SEED overrides it

// Central difference of f along E against <grad f, E>. f is quadratic in Z, so the
// difference has no truncation error at any step h; what remains is rounding. With
// S = ||B|| + ||X||^2 ||Z + hE|| the residual carries an error <= n eps S per entry-norm,
// so each f value is off by <= 2 n eps S^2 (+ lower order), the difference quotient by
// 2 n eps S^2 / h, and <G, E> by 2 n eps ||X||^2 S ||E||. The check allows 30 times that.
template <typename T>
void check_gradient(int n, int d, double h, Rng& rng) {
  INFO("n " << n << " d " << d << " h " << h);
  const Mat<T> b = gaussian_matrix<T>(n, n, rng), x = gaussian_matrix<T>(n, d, rng),
               z = gaussian_matrix<T>(d, d, rng);
  Mat<T> e = gaussian_matrix<T>(d, d, rng);
  e /= e.norm();
  const double fp = lowrank_objective<T>(b, x, Mat<T>(z + T(h) * e));
  const double fm = lowrank_objective<T>(b, x, Mat<T>(z - T(h) * e));
  const double fd = (fp - fm) / (2 * h);
  const double dir = lowrank_gradient<T>(b, x, z).template cast<double>().cwiseProduct(e.template cast<double>()).sum();
  const double eps = std::numeric_limits<T>::epsilon();
  const double x2 = x.template cast<double>().squaredNorm();
  const double s = b.template cast<double>().norm() + x2 * (z.template cast<double>().norm() + h);
  const double tol = 30 * std::max(n, d) * eps * (2 * s * s / h + 2 * x2 * s);
  CHECK(std::abs(fd - dir) <= tol);
  // The check can fail: a gradient off by a factor 2 would miss by |dir|.
  CHECK(std::abs(dir) > tol);
}

}  // namespace

TEST_CASE("grad f matches central differences, float and double") {
  Rng rng(kWeightedLowrankSeed);
  INFO("seed " << kWeightedLowrankSeed);
  for (int n : {1, 2, 3, 9})
    for (int d : {1, 2, 3, 6}) {
      check_gradient<double>(n, d, 1e-3, rng);
      check_gradient<double>(n, d, 1.0, rng);
      check_gradient<float>(n, d, 1.0, rng);
    }
}

TEST_CASE("Z* = X^+ B X^+T zeroes the gradient, full column rank and rank-deficient X") {
  Rng rng(kWeightedLowrankSeed + 1);
  INFO("seed " << kWeightedLowrankSeed + 1);
  for (const auto& [n, d] : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {12, 5}, {2, 3}, {4, 9}}) {
    INFO(n << "x" << d);
    const Mat<double> b = gaussian_matrix(n, n, rng), x = gaussian_matrix(n, d, rng);
    const Mat<double> z = unconstrained_minimiser(b, x);
    const Mat<double> g = lowrank_gradient<double>(b, x, z);
    const double x2 = pinv_svd<double>(x).pinv.norm() * x.norm();  // cond-like factor of X
    // Rounding of Z* propagates through X^T X (.) X^T X: c n eps ||X||^2 ||B|| times cond^2.
    ATTNLAB_CHECK_RATIO_LE(g.norm() / (std::max(n, d) * 2.2e-16 * x.squaredNorm() * b.norm() * x2 * x2), 30,
                           "gradient at Z*");
  }
}

TEST_CASE("closed form: attains its predicted minimum and beats random rank-r perturbations") {
  Rng rng(kWeightedLowrankSeed + 2);
  INFO("seed " << kWeightedLowrankSeed + 2);
  for (const auto& [n, d, r] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {3, 2, 1}, {10, 6, 2}, {4, 8, 3}}) {
    INFO(n << "x" << d << " r " << r);
    const Mat<double> b = gaussian_matrix(n, n, rng), x = gaussian_matrix(n, d, rng);
    const auto cf = closed_form_lowrank(b, x, r);
    const double f = lowrank_objective<double>(b, x, cf.factors.product());
    CHECK(f == doctest::Approx(cf.predicted_minimum()).epsilon(1e-10).scale(b.squaredNorm()));
    for (int t = 0, repeat = attnlab::testing::test_repeat(20); t < repeat; ++t) {
      LowRankFactors p = cf.factors;
      p.left += 1e-3 * gaussian_matrix(d, p.left.cols(), rng);
      p.right += 1e-3 * gaussian_matrix(d, p.right.cols(), rng);
      CHECK(lowrank_objective<double>(b, x, p.product()) >= f - 1e-12 * b.squaredNorm());
    }
  }
}

TEST_CASE("closed form in float: attains its predicted minimum and the double value within float's rounding, rank-deficient X too") {
  Rng rng(kWeightedLowrankSeed + 6);
  INFO("seed " << kWeightedLowrankSeed + 6);
  const double eps = std::numeric_limits<float>::epsilon();
  for (const auto& [n, d, r, deficient] :
       std::vector<std::tuple<int, int, int, bool>>{{1, 1, 1, false}, {3, 2, 1, false}, {12, 6, 2, false}, {12, 6, 2, true}, {9, 10, 3, true}}) {
    INFO(n << "x" << d << " r " << r << (deficient ? " (last column a combination of the others)" : ""));
    const Mat<double> b = gaussian_matrix(n, n, rng);
    Mat<double> x = gaussian_matrix(n, d, rng);
    if (deficient) x.col(d - 1) = x.leftCols(d - 1) * gaussian_matrix(d - 1, 1, rng);  // as [z | 1] of a LayerNorm's output
    const Mat<float> bf = b.cast<float>(), xf = x.cast<float>();
    const auto cf = closed_form_lowrank(bf, xf, r);
    const auto cd = closed_form_lowrank(b, x, r);
    CHECK(cf.x_rank == cd.x_rank);
    // The unit of G5, G6 and G11.c: max(n, d) eps cond(X)^2 ||B||_F^2, with float's eps.
    const double unit = objective_unit(n, d, x_spectrum(x), b.squaredNorm()) * eps / std::numeric_limits<double>::epsilon();
    const double f = lowrank_objective<float>(bf, xf, Mat<float>(cf.factors.product().cast<float>()));
    ATTNLAB_CHECK_RATIO_LE(std::abs(f - cf.predicted_minimum()) / unit, 30, "float: attained against predicted");
    ATTNLAB_CHECK_RATIO_LE(std::abs(cf.predicted_minimum() - cd.predicted_minimum()) / unit, 30, "float against double");
    // B outside range(X) x range(X) where rank(X) < n: the term Remark 2.1 omits.
    if (cd.x_rank < n) CHECK(cd.unreachable > 1e-3 * b.squaredNorm());
  }
}

TEST_CASE("factored minimiser: the known answer on orthonormal X, never below the closed form") {
  Rng rng(kWeightedLowrankSeed + 3);
  INFO("seed " << kWeightedLowrankSeed + 3);
  for (const auto& [n, d, r] : std::vector<std::tuple<int, int, int>>{{2, 2, 1}, {3, 3, 2}, {12, 6, 2}, {20, 8, 3}}) {
    INFO(n << "x" << d << " r " << r);
    const Mat<double> b = gaussian_matrix(n, n, rng);
    // Orthonormal columns Q: f(Z) = ||B - Q Q^T B Q Q^T||^2 + ||Q^T B Q - Z||^2, so the
    // minimum is that first term plus the Eckart-Young tail of Q^T B Q.
    const Mat<double> q = random_orthonormal(n, d, rng);
    const Mat<double> c = q.transpose() * b * q;
    const Vec<double> sc = Eigen::JacobiSVD<Mat<double>>(c).singularValues();
    const double known = (b - q * c * q.transpose()).squaredNorm() + sc.tail(d - r).squaredNorm();
    const auto fm = factored_minimiser(b, q, r, rng);
    CHECK(fm.best_value == doctest::Approx(known).epsilon(1e-9).scale(b.squaredNorm()));
    CHECK(fm.stationarity < 1e-6);
    // Generic X: the closed form is never beaten by more than rounding.
    const Mat<double> x = gaussian_matrix(n, d, rng);
    const auto cf = closed_form_lowrank(b, x, r);
    const auto fx = factored_minimiser(b, x, r, rng);
    CHECK(fx.best_value >= cf.predicted_minimum() - 1e-10 * b.squaredNorm());
    CHECK(fx.best_value == doctest::Approx(cf.predicted_minimum()).epsilon(1e-7).scale(b.squaredNorm()));
  }
}

TEST_CASE("recipe: optimal when X has orthonormal columns up to scale, not on a generic X") {
  Rng rng(kWeightedLowrankSeed + 4);
  INFO("seed " << kWeightedLowrankSeed + 4);
  const int n = 14, d = 7, r = 2;
  const Mat<double> b = gaussian_matrix(n, n, rng);
  const Mat<double> q = 3.0 * random_orthonormal(n, d, rng);
  const double f_recipe_q = lowrank_objective<double>(b, q, recipe_lowrank(b, q, r).product());
  CHECK(f_recipe_q == doctest::Approx(closed_form_lowrank(b, q, r).predicted_minimum()).epsilon(1e-10).scale(b.squaredNorm()));
  const Mat<double> x = matrix_with_singular_values(n, d, geometric_spectrum(d, 100), rng);
  const double f_recipe_x = lowrank_objective<double>(b, x, recipe_lowrank(b, x, r).product());
  CHECK(f_recipe_x > closed_form_lowrank(b, x, r).predicted_minimum() + 1e-6 * b.squaredNorm());
}

TEST_CASE("attention loss: dL/dS matches central differences and softmax rows sum to one") {
  Rng rng(kWeightedLowrankSeed + 5);
  INFO("seed " << kWeightedLowrankSeed + 5);
  for (int n : {1, 2, 3, 8}) {
    const int d = 4, dv = 3;
    AttentionLoss<double> loss(gaussian_matrix(n, d, rng), gaussian_matrix(d, dv, rng), gaussian_matrix(dv, d, rng),
                               gaussian_matrix(n, d, rng));
    const Mat<double> s = gaussian_matrix(n, n, rng);
    const Mat<double> a = softmax_rows(s);
    CHECK((a.rowwise().sum().array() - 1).abs().maxCoeff() <= 4 * n * 2.2e-16);
    const Mat<double> g = loss.gradient(s);
    // Central differences have O(h^2) truncation error; h = 1e-5 leaves ~1e-10 of it
    // and ~1e-11 of rounding for O(1) values.
    const double h = 1e-5;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        Mat<double> sp = s, sm = s;
        sp(i, j) += h;
        sm(i, j) -= h;
        const double fd = (loss.value(sp) - loss.value(sm)) / (2 * h);
        CHECK(fd == doctest::Approx(g(i, j)).epsilon(1e-6).scale(1.0));
      }
    // Rows of dL/dS sum to zero: softmax is invariant to adding a constant to a row.
    CHECK(g.rowwise().sum().cwiseAbs().maxCoeff() <= 1e-12 * (1 + g.norm()));
  }
}
