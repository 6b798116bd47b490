// Checks of random feature attention: unbiased estimators over many seeds, agreement with the
// formula, orthogonal draws, huge logits, misuse.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "attention_test_support.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/attention/softmax_attention.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// Mean and standard error of `draws` values of an estimator.
struct MeanSe {
  double mean = 0, se = 0;
};

template <typename Estimate>
MeanSe mean_over_draws(int draws, std::uint64_t seed, Estimate estimate) {
  double sum = 0, sum_sq = 0;
  for (int s = 0; s < draws; ++s) {
    Rng rng(derive_seed(seed, static_cast<std::uint64_t>(s)));
    const double e = estimate(rng);
    sum += e;
    sum_sq += e * e;
  }
  const double m = sum / draws;
  const double var = std::max(0.0, (sum_sq - draws * m * m) / (draws - 1));
  return {m, std::sqrt(var / draws)};
}

}  // namespace

TEST_CASE("random Fourier features: the mean of phi(x).phi(y) is exp(-stddev^2 ||x - y||^2 / 2) within 4 standard errors") {
  INFO("seed " << kAttentionTestSeed + 20);
  Eigen::MatrixXd x(1, 3), y(1, 3);
  x << 0.3, -0.2, 0.5;
  y << -0.4, 0.1, 0.9;
  const double dist2 = (x - y).squaredNorm();
  for (double stddev : {0.5, 1.0, 2.0}) {
    for (Eigen::Index D : {Eigen::Index(1), Eigen::Index(8)}) {
      const auto r = mean_over_draws(4000, kAttentionTestSeed + 20, [&](Rng& rng) {
        const auto draw = draw_fourier_features(3, D, stddev, rng);
        return (fourier_features(x, draw) * fourier_features(y, draw).transpose())(0, 0);
      });
      const double truth = std::exp(-stddev * stddev * dist2 / 2);
      INFO("stddev=" << stddev << " D=" << D << " mean=" << r.mean << " se=" << r.se << " truth=" << truth);
      CHECK(std::abs(r.mean - truth) <= 4 * r.se);
      CHECK(r.se > 0);
    }
  }
}

TEST_CASE("FAVOR+ positive features: the mean of phi+(x).phi+(y) is exp(x.y) for iid and orthogonal draws within 4 standard errors") {
  INFO("seed " << kAttentionTestSeed + 21);
  Eigen::MatrixXd x(1, 3), y(1, 3);
  x << 0.3, -0.2, 0.1;
  y << -0.2, 0.4, 0.2;
  const double truth = std::exp((x * y.transpose())(0, 0));
  for (bool orthogonal : {false, true}) {
    const auto r = mean_over_draws(4000, kAttentionTestSeed + 21, [&](Rng& rng) {
      const auto draw = draw_favor_features(3, 5, orthogonal, rng);
      const Eigen::MatrixXd px = favor_features(x, draw), py = favor_features(y, draw);
      CHECK(px.minCoeff() > 0);  // positive features: the point of FAVOR+
      return (px * py.transpose())(0, 0);
    });
    INFO("orthogonal=" << orthogonal << " mean=" << r.mean << " se=" << r.se << " truth=" << truth);
    CHECK(std::abs(r.mean - truth) <= 4 * r.se);
  }
}

TEST_CASE("orthogonal draws: rows orthogonal within each block of d") {
  Rng rng(kAttentionTestSeed + 22);
  INFO("seed " << kAttentionTestSeed + 22);
  for (Eigen::Index d : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(5)}) {
    const auto draw = draw_favor_features(d, 2 * d + 1, true, rng);
    REQUIRE(draw.features() == 2 * d + 1);
    for (Eigen::Index b0 = 0; b0 < draw.features(); b0 += d) {
      const Eigen::Index rows = std::min(d, draw.features() - b0);
      const Eigen::MatrixXd block = draw.w.middleRows(b0, rows);
      Eigen::MatrixXd g = block * block.transpose();
      const Eigen::VectorXd norms = g.diagonal().cwiseSqrt();
      g = norms.cwiseInverse().asDiagonal() * g * norms.cwiseInverse().asDiagonal();
      // Householder QR gives orthonormal columns to c d eps (backward stable).
      CHECK((g - Eigen::MatrixXd::Identity(rows, rows)).cwiseAbs().maxCoeff() <= 10 * d * eps<double>());
    }
  }
}

template <typename T>
void check_attention_formulas() {
  Rng rng(kAttentionTestSeed + 23);
  INFO("seed " << kAttentionTestSeed + 23);
  for (Eigen::Index n : attention_test_sizes(rng)) {
    const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 6), D = 16;
    const auto in = typed_inputs<double>("gaussian_small", n, d, rng);
    const double tau = std::sqrt(static_cast<double>(d));
    INFO("n=" << n << " d=" << d);
    // Random Fourier attention against its formula with both factors written out, in double.
    const auto fdraw = draw_fourier_features(d, D, 1 / std::sqrt(tau), rng);
    const Eigen::MatrixXd pq = fourier_features(in.q, fdraw), pk = fourier_features(in.k, fdraw);
    Eigen::MatrixXd w(n, n), wabs(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j < n; ++j) {
        const double f = std::exp(in.q.row(i).squaredNorm() / (2 * tau) + in.k.row(j).squaredNorm() / (2 * tau));
        w(i, j) = f * pq.row(i).dot(pk.row(j));
        wabs(i, j) = f;  // |phi(q).phi(k)| <= ||phi(q)|| ||phi(k)|| = 1
      }
    const Eigen::VectorXd den = w.rowwise().sum();
    const Eigen::MatrixXd ref = den.cwiseInverse().asDiagonal() * (w * in.v);
    const Mat<T> out = random_fourier_attention<T>(in.q.cast<T>(), in.k.cast<T>(), in.v.cast<T>(), fdraw, tau);
    const double vmax = in.v.cwiseAbs().maxCoeff();
    for (Eigen::Index i = 0; i < n; ++i) {
      // A sum of n terms of products of 2D-long dot products: c (n + 2D + d) eps, relative to
      // the sum of |terms| over the (possibly small) denominator.
      const double bound = 8 * static_cast<double>(n + 2 * D + d) * eps<T>() * wabs.row(i).sum() *
                           (vmax + ref.row(i).cwiseAbs().maxCoeff()) / std::abs(den(i));
      CHECK((out.row(i).template cast<double>() - ref.row(i)).cwiseAbs().maxCoeff() <= bound);
    }
    // FAVOR+ against its formula with the unshifted features of inputs scaled by d^(-1/4).
    const auto pdraw = draw_favor_features(d, D, true, rng);
    const double s = std::pow(static_cast<double>(d), -0.25);
    const Eigen::MatrixXd fq = favor_features(Eigen::MatrixXd(s * in.q), pdraw);
    const Eigen::MatrixXd fk = favor_features(Eigen::MatrixXd(s * in.k), pdraw);
    const Eigen::MatrixXd wf = fq * fk.transpose();
    const Eigen::MatrixXd reff = wf.rowwise().sum().cwiseInverse().asDiagonal() * (wf * in.v);
    const Mat<T> outf = favor_attention<T>(in.q.cast<T>(), in.k.cast<T>(), in.v.cast<T>(), pdraw);
    // Positive weights: a convex combination, each weight with relative error c (d + D + n) eps.
    const double amax = 1 + (s * in.q).rowwise().norm().maxCoeff() * pdraw.w.rowwise().norm().maxCoeff() +
                        (s * in.k).rowwise().norm().maxCoeff() * pdraw.w.rowwise().norm().maxCoeff();
    CHECK((outf.template cast<double>() - reff).cwiseAbs().maxCoeff() <=
          8 * static_cast<double>(n + D + d) * amax * eps<T>() * vmax);
  }
}

TEST_CASE("random feature attentions agree with their formulas in float and double") {
  check_attention_formulas<double>();
  check_attention_formulas<float>();
}

TEST_CASE("random feature attentions stay finite for logits of +-1e4") {
  Rng rng(kAttentionTestSeed + 24);
  INFO("seed " << kAttentionTestSeed + 24);
  // Entries +-100 with d = 1 give logits q k / sqrt(d) = +-1e4.
  Eigen::MatrixXd q(4, 1), k(5, 1);
  q << 100, -100, 100, -100;
  k << 100, -100, 100, -100, 100;
  const Eigen::MatrixXd v = gaussian_matrix(5, 2, rng);
  for (bool orthogonal : {false, true}) {
    const auto draw = draw_favor_features(1, 64, orthogonal, rng);
    CHECK(favor_attention(q, k, v, draw).allFinite());
    CHECK(favor_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>(), draw).allFinite());
  }
  const auto fdraw = draw_fourier_features(1, 64, 1.0, rng);
  CHECK(random_fourier_attention(q, k, v, fdraw, 1.0).allFinite());
  CHECK(random_fourier_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>(), fdraw, 1.0).allFinite());
}

TEST_CASE("random features: misuse rejected naming the value") {
  Rng rng(1);
  CHECK_THROWS_WITH_AS(draw_fourier_features(3, 0, 1.0, rng), doctest::Contains("D (= 0)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(draw_favor_features(0, 4, false, rng), doctest::Contains("d (= 0)"), std::invalid_argument);
  CHECK_THROWS_AS(draw_fourier_features(3, 4, -1.0, rng), std::invalid_argument);
  const auto draw = draw_fourier_features(3, 4, 1.0, rng);
  const Eigen::MatrixXd x = Eigen::MatrixXd::Ones(2, 2);
  CHECK_THROWS_WITH_AS(fourier_features(x, draw), doctest::Contains("d = 2"), std::invalid_argument);
  const Eigen::MatrixXd one = Eigen::MatrixXd::Ones(1, 3);
  CHECK_THROWS_WITH_AS(random_fourier_attention(one, one, one, draw, 0.0), doctest::Contains("temperature"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(favor_attention(Eigen::MatrixXd(0, 3), one, one, draw), doctest::Contains("n = 0"),
                       std::invalid_argument);
  // One key: all the weight goes to it, whatever the features (a positive denominator for FAVOR+).
  const auto pdraw = draw_favor_features(3, 4, true, rng);
  CHECK((favor_attention(one, one, one, pdraw).array() - 1.0).abs().maxCoeff() <= 4 * eps<double>());
}

TEST_CASE("linear and random-feature head-stack wrappers equal the per-head kernels and share one draw") {
  Rng rng(kAttentionTestSeed + 25);
  INFO("seed " << kAttentionTestSeed + 25);
  HeadStack<float> q(2, 2, 7, 3), k(2, 2, 7, 3), v(2, 2, 7, 3);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    const auto in = typed_inputs<float>("gaussian", 7, 3, rng);
    q[i] = in.q;
    k[i] = in.k;
    v[i] = in.v;
  }
  const auto fdraw = draw_fourier_features(3, 8, std::pow(3.0, -0.25), rng);
  const auto pdraw = draw_favor_features(3, 8, true, rng);
  const auto rf = random_fourier_attention(q, k, v, fdraw, std::sqrt(3.0));
  const auto fa = favor_attention(q, k, v, pdraw);
  const auto ea = efficient_attention(q, k, v);
  const auto el = elu_linear_attention(q, k, v);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    CHECK(rf[i] == random_fourier_attention(q[i], k[i], v[i], fdraw, std::sqrt(3.0)));
    CHECK(fa[i] == favor_attention(q[i], k[i], v[i], pdraw));
    CHECK(ea[i] == efficient_attention(q[i], k[i], v[i]));
    CHECK(el[i] == elu_linear_attention(q[i], k[i], v[i]));
  }
}

TEST_CASE("random Fourier attention's predicted error: the formula written out, 1/sqrt(D), and the measured error") {
  const std::uint64_t seed = kAttentionTestSeed + 40;
  INFO("seed " << seed);
  Rng rng(seed);
  for (const std::string family : {"gaussian_small", "uniform", "clustered"}) {
    for (Eigen::Index n : {1, 2, 3, 24}) {
      INFO(family << " n = " << n);
      const auto in = typed_inputs<double>(family, n, 4, rng);
      const double tau = 2.0;  // sqrt(d)
      // The definition, term by term: sum_i sum_j b_j^2 ||v_j - s_i||^2 / (D (sum_j b_j kappa_ij)^2), over ||S||_F^2.
      const Eigen::MatrixXd s = softmax_attention(in.q, in.k, in.v);
      double total = 0;
      for (Eigen::Index i = 0; i < n; ++i) {
        double num = 0, den = 0;
        for (Eigen::Index j = 0; j < n; ++j) {
          const double b = std::exp(in.k.row(j).squaredNorm() / (2 * tau));
          const double kappa = std::exp(-(in.q.row(i) - in.k.row(j)).squaredNorm() / (2 * tau));
          num += b * b * (in.v.row(j) - s.row(i)).squaredNorm();
          den += b * kappa;
        }
        total += num / (den * den);
      }
      const double direct = std::sqrt(total / 16) / s.norm();
      const double pi16 = random_fourier_predicted_error(in.q, in.k, in.v, 16, tau);
      CHECK(std::abs(pi16 - direct) <= 1e-12 * direct + 1e-300);
      // D enters as 1 / sqrt(D) exactly.
      CHECK(std::abs(random_fourier_predicted_error(in.q, in.k, in.v, 64, tau) * 2 - pi16) <= 1e-13 * pi16 + 1e-300);
    }
  }
  // Against the method itself, where the prediction is small: the root mean square relative error over draws is
  // below it (the prediction bounds each cosine's variance by 1) and not negligible against it.
  const auto in = typed_inputs<double>("gaussian_small", 32, 4, rng);
  const Eigen::MatrixXd exact = softmax_attention(in.q, in.k, in.v);
  const double pi = random_fourier_predicted_error(in.q, in.k, in.v, 64, 2.0);
  REQUIRE(pi < 0.2);
  double sum_sq = 0;
  const int draws = 400;
  for (int t = 0; t < draws; ++t) {
    Rng draw_rng(derive_seed(seed, static_cast<std::uint64_t>(t)));
    const auto draw = draw_fourier_features(4, 64, 1 / std::sqrt(2.0), draw_rng);
    const double e = (random_fourier_attention(in.q, in.k, in.v, draw, 2.0) - exact).norm() / exact.norm();
    sum_sq += e * e;
  }
  const double rms = std::sqrt(sum_sq / draws);
  INFO("pi " << pi << " rms " << rms);
  CHECK(rms < pi);
  CHECK(rms > 0.05 * pi);
  CHECK_THROWS_WITH_AS(random_fourier_predicted_error(in.q, in.k, in.v, 0, 2.0), doctest::Contains("features (= 0)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(random_fourier_predicted_error(in.q, in.k, in.v, 8, 0.0), doctest::Contains("temperature"),
                       std::invalid_argument);
}
