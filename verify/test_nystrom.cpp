// Checks of Nystrom attention and the pseudoinverses it uses: segment means, m = n exactness,
// row sums, the Penrose conditions, the initialisations, huge logits, misuse.
#include <doctest/doctest.h>

#include <stdexcept>

#include "attention_test_support.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/attention/softmax_attention.hpp"

using namespace attnlab;
using namespace attnlab::testing;

TEST_CASE("segment means: uneven segments when m does not divide n") {
  Eigen::MatrixXd x(10, 1);
  for (int i = 0; i < 10; ++i) x(i, 0) = i;
  const Eigen::MatrixXd m3 = segment_means(x, 3);  // rows [0,3), [3,6), [6,10)
  CHECK(m3(0, 0) == 1.0);
  CHECK(m3(1, 0) == 4.0);
  CHECK(m3(2, 0) == 7.5);
  CHECK(segment_means(x, 10) == x);
  CHECK(segment_means(x, 1)(0, 0) == 4.5);
  CHECK_THROWS_WITH_AS(segment_means(x, 11), doctest::Contains("m (= 11)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(segment_means(x, 0), doctest::Contains("m (= 0)"), std::invalid_argument);
}

template <typename T>
void check_m_equals_n() {
  Rng rng(kAttentionTestSeed + 30);
  INFO("seed " << kAttentionTestSeed + 30);
  int full_rank_cases = 0, row_sum_cases = 0;
  for (const auto& family : attention_families()) {
    for (Eigen::Index n : attention_test_sizes(rng)) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 8);
      const auto in = typed_inputs<T>(family, n, d, rng);
      INFO(family << " n=" << n << " d=" << d);
      // With m = n the landmarks are Q and K themselves, F = A = B = P and F pinv(P) P = P by the
      // first Penrose condition: the error is rounding amplified by at most kappa(P) (kept singular
      // values only), c n eps kappa.
      const Mat<T> p = softmax_attention_matrix(in.q, in.k);
      const Pseudoinverse<T> pinv = pinv_svd(p);
      const double kappa = pinv.sigma_max / pinv.sigma_min_kept;
      const NystromOptions opt{.landmarks = n, .pinv = PinvMethod::svd};
      const Mat<T> approx = nystrom_attention_matrix(in.q, in.k, opt);
      const double tol = 16 * static_cast<double>(n + d) * eps<T>() * kappa;
      INFO("kappa=" << kappa << " rank=" << pinv.rank);
      if (pinv.rank == n) {
        ++full_rank_cases;
        CHECK((approx - p).cwiseAbs().maxCoeff() <= tol);
        const Mat<T> out = nystrom_attention(in.q, in.k, in.v, opt);
        const Mat<T> exact = softmax_attention(in.q, in.k, in.v);
        CHECK((out - exact).cwiseAbs().maxCoeff() <= tol * std::max<double>(1, in.v.cwiseAbs().maxCoeff()));
      }
      // With fewer landmarks and an invertible A, rows still sum to 1: A 1 = 1 gives A^-1 1 = 1,
      // so F A^-1 B 1 = F 1 = 1.
      const Eigen::Index m = std::max<Eigen::Index>(1, n / 2);
      const NystromFactors<T> fac = nystrom_factors(in.q, in.k, m);
      const Pseudoinverse<T> pa = pinv_svd(fac.a);
      if (pa.rank == m) {
        ++row_sum_cases;
        const Mat<T> pm = nystrom_attention_matrix(in.q, in.k, NystromOptions{.landmarks = m, .pinv = PinvMethod::svd});
        const double kappa_a = pa.sigma_max / pa.sigma_min_kept;
        CHECK((pm.rowwise().sum().array() - T(1)).abs().maxCoeff() <= 16 * static_cast<double>(n + d) * eps<T>() * kappa_a);
      }
    }
  }
  // Most softmax matrices are invertible; the checks above must not all have been skipped.
  CHECK(full_rank_cases > 20);
  CHECK(row_sum_cases > 20);
}

TEST_CASE("Nystrom with m = n and an exact pseudoinverse reproduces softmax attention in float and double") {
  check_m_equals_n<double>();
  check_m_equals_n<float>();
}

TEST_CASE("SVD pseudoinverse: Penrose conditions at rounding level with the cutoff reported on rank-deficient input") {
  Rng rng(kAttentionTestSeed + 31);
  INFO("seed " << kAttentionTestSeed + 31);
  for (Eigen::Index m : attention_test_sizes(rng)) {
    Eigen::VectorXd s = geometric_spectrum(m, 1e3);
    if (m > 2) s.tail(m / 2).setZero();  // exactly rank deficient
    const Eigen::MatrixXd a = matrix_with_singular_values(m, m, s, rng);
    const Pseudoinverse<double> p = pinv_svd(a);
    INFO("m=" << m << " rank=" << p.rank << " cutoff=" << p.cutoff);
    CHECK(p.rank == m - (m > 2 ? m / 2 : 0));
    CHECK(p.cutoff == doctest::Approx(static_cast<double>(m) * eps<double>() * s(0)));
    // Backward-stable SVD: each residual is c m eps kappa at most (kappa of the kept part, 1e3).
    CHECK(penrose_residuals(a, p.pinv).max_relative() <= 16 * static_cast<double>(m) * eps<double>() * 1e3);
  }
  CHECK(pinv_svd(Eigen::MatrixXd(Eigen::MatrixXd::Zero(2, 3))).pinv == Eigen::MatrixXd::Zero(3, 2));
  CHECK(pinv_svd(Eigen::MatrixXd(0, 0)).rank == 0);
}

TEST_CASE("iterative pseudoinverse converges to the SVD pseudoinverse for a well-conditioned A") {
  Rng rng(kAttentionTestSeed + 32);
  INFO("seed " << kAttentionTestSeed + 32);
  for (Eigen::Index m : attention_test_sizes(rng)) {
    const Eigen::MatrixXd a = matrix_with_singular_values(m, m, geometric_spectrum(m, 10.0), rng);
    const Eigen::MatrixXd zs = pinv_svd(a).pinv;
    for (PinvInit init : {PinvInit::per_matrix, PinvInit::batch_max_both}) {
      const Eigen::MatrixXd z = iterative_pinv(a, 20, init);
      INFO("m=" << m << " init=" << to_string(init));
      // Converged: the iteration's fixed point, accurate to c m eps kappa^2 (kappa = 10).
      CHECK((z - zs).norm() / zs.norm() <= 16 * static_cast<double>(m) * eps<double>() * 100);
      CHECK(penrose_residuals(a, z).max_relative() <= 16 * static_cast<double>(m) * eps<double>() * 100);
    }
    // Too few iterations leave it visibly unconverged: one step cannot invert kappa = 10.
    if (m > 1) CHECK((iterative_pinv(a, 1) - zs).norm() / zs.norm() > 1e-3);
  }
}

TEST_CASE("initial scales: per-matrix and one-norm and batch-wide variants") {
  Eigen::MatrixXd a(2, 2), b(2, 2);
  a << 1, 2, 3, 4;  // ||a||_1 = 6, ||a||_inf = 7
  b << 0.5, 0, 0, 0.5;
  const std::vector<Eigen::MatrixXd> batch = {a, b};
  CHECK(pinv_initial_scale(batch, PinvInit::per_matrix) == std::vector<double>{1.0 / 42, 1.0 / 0.25});
  CHECK(pinv_initial_scale(batch, PinvInit::per_matrix_one) == std::vector<double>{1.0 / 6, 1.0 / 0.5});
  CHECK(pinv_initial_scale(batch, PinvInit::batch_max_one) == std::vector<double>{1.0 / 6, 1.0 / 6});
  CHECK(pinv_initial_scale(batch, PinvInit::batch_max_both) == std::vector<double>{1.0 / 42, 1.0 / 42});
}

TEST_CASE("per_matrix_one_diverges_without_row_stochastic_A") {
  // A = 3 I: ||A||_1 = 3, so Z_0 = A^T / 3 = I and A Z_0 = 3 I, outside (0, 2): the iteration
  // diverges. Nystromformer's one-norm init is only safe because softmax rows give ||A||_inf = 1.
  const Eigen::MatrixXd a = 3 * Eigen::MatrixXd::Identity(3, 3);
  const Eigen::MatrixXd z = iterative_pinv(a, 3, PinvInit::per_matrix_one);
  CHECK(!(z.allFinite() && (z - a.inverse()).norm() < 1.0));
  CHECK((iterative_pinv(a, 3, PinvInit::per_matrix) - a.inverse()).norm() <= 1e-14);
}

TEST_CASE("Nystrom head stack equals per-head and is finite for logits of +-1e4 and misuse is rejected") {
  Rng rng(kAttentionTestSeed + 33);
  INFO("seed " << kAttentionTestSeed + 33);
  HeadStack<double> q(2, 2, 11, 3), k(2, 2, 11, 3), v(2, 2, 11, 3);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    const auto in = typed_inputs<double>("clustered", 11, 3, rng);
    q[i] = in.q;
    k[i] = in.k;
    v[i] = in.v;
  }
  const NystromOptions opt{.landmarks = 4};
  const auto out = nystrom_attention(q, k, v, opt);
  for (Eigen::Index i = 0; i < q.count(); ++i) CHECK(out[i] == nystrom_attention(q[i], k[i], v[i], opt));

  Eigen::MatrixXd qh(4, 1), kh(4, 1), vh = gaussian_matrix(4, 2, rng);
  qh << 100, -100, 100, -100;
  kh << 100, -100, -100, 100;
  for (PinvMethod method : {PinvMethod::svd, PinvMethod::iterative}) {
    const NystromOptions o{.landmarks = 2, .pinv = method};
    CHECK(nystrom_attention(qh, kh, vh, o).allFinite());
    CHECK(nystrom_attention<float>(qh.cast<float>(), kh.cast<float>(), vh.cast<float>(), o).allFinite());
  }
  const Eigen::MatrixXd one = Eigen::MatrixXd::Ones(1, 2);
  CHECK((nystrom_attention(one, one, one, NystromOptions{.landmarks = 1}) - one).norm() <= 1e-15);
  CHECK_THROWS_WITH_AS(nystrom_attention(one, one, one, NystromOptions{.landmarks = 2}),
                       doctest::Contains("m (= 2)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(iterative_pinv(Eigen::MatrixXd(2, 3), 1), doctest::Contains("2 x 3"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(iterative_pinv(Eigen::MatrixXd(Eigen::MatrixXd::Identity(2, 2)), -1), doctest::Contains("iterations (= -1)"),
                       std::invalid_argument);
}
