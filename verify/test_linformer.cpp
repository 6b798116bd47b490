// Checks of the Linformer kernels: reductions to exact attention, stability, edge sizes, the rank-r reference.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/linformer_theorems.hpp"
#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/core/softmax.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kLinformerSeed = attnlab::testing::test_seed(31337);  // ATTNLAB_TEST_SEED overrides it

// The attention formula written out once more, independently of the library's kernels.
template <typename T>
Mat<T> direct_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  return softmax_rows(Mat<T>(q * k.transpose() / std::sqrt(static_cast<T>(q.cols())))) * v;
}

// Sizes: the edge sizes 1, 2, 3 and four random ones in [4, 63].
std::vector<Eigen::Index> sizes(Rng& rng) { return attnlab::testing::test_sizes(rng, {4, 63}, 4); }

template <typename T>
void check_identity_reduction() {
  Rng rng(kLinformerSeed);
  INFO("seed " << kLinformerSeed);
  for (Eigen::Index n : sizes(rng)) {
    const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 16);
    const Mat<T> q = gaussian_matrix<T>(n, d, rng), k = gaussian_matrix<T>(n, d, rng), v = gaussian_matrix<T>(n, d, rng);
    const auto proj = identity_projections(n).cast<T>();
    INFO("n " << n << " d " << d);
    // E = F = I: E K = K exactly, so the two computations differ only by GEMM summation
    // order; softmax is backward stable and rows of P are convex weights, so the output
    // error is within c n eps ||V|| (ratio against the LAPACK threshold).
    const double diff = (linformer_attention(q, k, v, proj) - direct_attention(q, k, v)).template cast<double>().norm();
    ATTNLAB_CHECK_RATIO_LT(residual_ratio<T>(diff, static_cast<double>(n), static_cast<double>(v.norm())),
                           kResidualRatioThreshold, "linformer with E = F = I against the formula");
    // The row-blocked reference against the formula (n up to 67 spans one block; n = 600 below spans three).
    const double diff_ref =
        (linformer_reference_attention(q, k, v) - direct_attention(q, k, v)).template cast<double>().norm();
    ATTNLAB_CHECK_RATIO_LT(residual_ratio<T>(diff_ref, static_cast<double>(n), static_cast<double>(v.norm())),
                           kResidualRatioThreshold, "row-blocked reference against the formula");
  }
}

}  // namespace

TEST_CASE("linformer: E = F = I reproduces exact softmax attention, float and double") {
  check_identity_reduction<float>();
  check_identity_reduction<double>();
}

TEST_CASE("linformer: row-blocked reference matches the full formula across block boundaries") {
  Rng rng(kLinformerSeed + 1);
  INFO("seed " << kLinformerSeed + 1);
  const Eigen::Index n = 600, d = 8;
  const Mat<double> q = gaussian_matrix(n, d, rng), k = gaussian_matrix(n, d, rng), v = gaussian_matrix(n, d, rng);
  const double diff = (linformer_reference_attention(q, k, v) - direct_attention(q, k, v)).norm();
  ATTNLAB_CHECK_RATIO_LT(residual_ratio<double>(diff, n, v.norm()), kResidualRatioThreshold,
                         "row-blocked reference against the formula");
}

TEST_CASE("linformer: float kernel agrees with the double kernel on the same projections") {
  Rng rng(kLinformerSeed + 2);
  INFO("seed " << kLinformerSeed + 2);
  for (Eigen::Index n : sizes(rng)) {
    const Eigen::Index d = 8, kp = std::max<Eigen::Index>(1, n / 2);
    const Mat<double> q = gaussian_matrix(n, d, rng), k = gaussian_matrix(n, d, rng), v = gaussian_matrix(n, d, rng);
    const auto proj = gaussian_projections(n, kp, ProjectionSharing::separate, rng);
    const Mat<double> ref = linformer_attention(q, k, v, proj);
    const Mat<float> got = linformer_attention<float>(q.cast<float>(), k.cast<float>(), v.cast<float>(),
                                                      proj.cast<float>());
    INFO("n " << n << " k " << kp);
    // Float rounding of inputs and every product: error within c n eps_float times the output's
    // natural scale ||P~|| ||F V|| <= ||F V||_F (rows of P~ are convex weights, logits are O(1)).
    const double scale = (proj.f * v).norm();
    ATTNLAB_CHECK_RATIO_LT(residual_ratio<float>((got.cast<double>() - ref).norm(), static_cast<double>(n), scale),
                           kResidualRatioThreshold, "float kernel against the double kernel");
  }
}

TEST_CASE("linformer: attention rows sum to 1 and logits of +-1e4 give finite output") {
  Rng rng(kLinformerSeed + 3);
  INFO("seed " << kLinformerSeed + 3);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3), Eigen::Index(57)}) {
    const Eigen::Index d = 4, kp = std::max<Eigen::Index>(1, n / 3);
    Mat<double> q = gaussian_matrix(n, d, rng), k = gaussian_matrix(n, d, rng);
    const auto proj = gaussian_projections(n, kp, ProjectionSharing::shared, rng);
    // Scale Q so the largest projected logit has magnitude 1e4.
    const Mat<double> logits = q * (proj.e * k).transpose() / 2.0;
    q *= 1e4 / logits.cwiseAbs().maxCoeff();
    for (int precision = 0; precision < 2; ++precision) {
      INFO("n " << n << " precision " << (precision ? "float" : "double"));
      Vec<double> sums;
      bool finite = false;
      if (precision == 0) {
        const Mat<double> p = linformer_attention_matrix(q, k, proj);
        sums = p.rowwise().sum();
        finite = p.allFinite() && linformer_attention(q, k, gaussian_matrix(n, 3, rng), proj).allFinite();
      } else {
        const auto pf = proj.cast<float>();
        const Mat<float> p = linformer_attention_matrix<float>(q.cast<float>(), k.cast<float>(), pf);
        sums = p.rowwise().sum().cast<double>();
        finite = p.allFinite() &&
                 linformer_attention<float>(q.cast<float>(), k.cast<float>(), gaussian_matrix<float>(n, 3, rng), pf)
                     .allFinite();
      }
      CHECK(finite);
      // A row sum of kp terms in [0, 1] is exact to within kp eps of the precision.
      const double eps = precision ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
      CHECK((sums.array() - 1.0).abs().maxCoeff() <= 2.0 * static_cast<double>(kp) * eps);
    }
  }
}

TEST_CASE("linformer: empty inputs are rejected naming the value; size 1 returns V") {
  const Mat<double> empty(0, 4);
  Rng rng(kLinformerSeed + 4);
  CHECK_THROWS_WITH_AS(linformer_attention(empty, empty, empty, identity_projections(1)),
                       doctest::Contains("n = 0"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(gaussian_projections(8, 0, ProjectionSharing::shared, rng), doctest::Contains("k (= 0)"),
                       std::invalid_argument);
  const Mat<double> q = gaussian_matrix(5, 3, rng);
  CHECK_THROWS_WITH_AS(linformer_attention(q, q, q, identity_projections(4)), doctest::Contains("n = 5"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(linformer_reference_attention(Mat<double>(3, 0), Mat<double>(3, 0), q.topRows(3).eval()),
                       doctest::Contains("d (= 0)"), std::invalid_argument);
  // n = k = 1: the softmax of one logit is exactly 1, so the output is F V = f v, to one rounding.
  const Mat<double> one = gaussian_matrix(1, 3, rng);
  const auto proj = gaussian_projections(1, 1, ProjectionSharing::separate, rng);
  const Mat<double> out = linformer_attention(one, one, one, proj);
  CHECK((out - proj.f(0, 0) * one).norm() <= 2 * std::numeric_limits<double>::epsilon() * std::abs(proj.f(0, 0)) * one.norm());
}

TEST_CASE("linformer: the head-stack wrapper equals the per-head kernel for every head") {
  Rng rng(kLinformerSeed + 5);
  INFO("seed " << kLinformerSeed + 5);
  const Eigen::Index batch = 2, heads = 3, n = 20, d = 5, kp = 6;
  HeadStack<float> q(batch, heads, n, d), k(batch, heads, n, d), v(batch, heads, n, d);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    q[i] = gaussian_matrix<float>(n, d, rng);
    k[i] = gaussian_matrix<float>(n, d, rng);
    v[i] = gaussian_matrix<float>(n, d, rng);
  }
  const auto proj = gaussian_projections(n, kp, ProjectionSharing::separate, rng).cast<float>();
  const HeadStack<float> out = linformer_attention(q, k, v, proj);
  // The same kernel on the same data: bit-identical whatever thread ran the head.
  for (Eigen::Index i = 0; i < q.count(); ++i) CHECK(out[i] == linformer_attention(q[i], k[i], v[i], proj));
}

TEST_CASE("linformer: segment-mean and Gaussian projections have the stated structure") {
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(7), Eigen::Index(100)})
    for (Eigen::Index k : {Eigen::Index(1), Eigen::Index(3), n}) {
      if (k > n) continue;
      const auto p = segment_mean_projections(n, k);
      INFO("n " << n << " k " << k);
      // Every row averages a non-empty segment; every position belongs to exactly one segment.
      CHECK((p.e.rowwise().sum().array() - 1.0).abs().maxCoeff() < 1e-12);
      CHECK(((p.e.array() > 0).cast<int>().colwise().sum().array() == 1).all());
    }
  CHECK_THROWS_AS(segment_mean_projections(3, 4), std::invalid_argument);
  Rng rng(kLinformerSeed + 6);
  const auto shared = gaussian_projections(400, 50, ProjectionSharing::shared, rng);
  CHECK(shared.e == shared.f);
  const auto sep = gaussian_projections(400, 50, ProjectionSharing::separate, rng);
  CHECK(sep.e != sep.f);
  // 20000 N(0, 1/k) entries: the sample variance times k is 1 within 5 standard errors (sqrt(2/20000)).
  CHECK(std::abs(sep.e.squaredNorm() / 20000.0 * 50.0 - 1.0) < 5 * std::sqrt(2.0 / 20000.0));
}

TEST_CASE("best rank-r attention: exact at r = n, errors decrease with r, match a direct computation") {
  Rng rng(kLinformerSeed + 7);
  INFO("seed " << kLinformerSeed + 7);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3), Eigen::Index(40)}) {
    const Eigen::Index d = 4;
    const Mat<double> q = gaussian_matrix(n, d, rng, 2.0), k = gaussian_matrix(n, d, rng, 2.0),
                      v = gaussian_matrix(n, d, rng);
    const BestRankAttention best(q, k, v);
    INFO("n " << n);
    ATTNLAB_CHECK_RATIO_LT(best.reconstruction_ratio(), kResidualRatioThreshold, "best rank-r reconstruction");
    const Mat<double> exact = softmax_attention_matrix(q, k) * v;
    ATTNLAB_CHECK_RATIO_LT(residual_ratio<double>((best.output(n) - exact).norm(), n, exact.norm()), kResidualRatioThreshold,
                           "best rank-n output against exact attention");
    CHECK(best.output_error(n) < 1e-12);
    double previous = std::numeric_limits<double>::infinity();
    for (Eigen::Index r = 0; r <= n; ++r) {
      const double e = best.output_error(r);
      CHECK(e <= previous * (1 + 1e-12));
      previous = e;
      // The tail formula against forming P_r V.
      const double direct = (best.output(r) - exact).norm() / exact.norm();
      CHECK(std::abs(direct - e) <= 1e-10 * std::max(1.0, e));
      const Vec<double> col = best.column_errors(r);
      for (Eigen::Index j = 0; j < d; ++j)
        CHECK(std::abs(col(j) - (best.output(r) - exact).col(j).norm() / exact.col(j).norm()) <=
              1e-10 * std::max(1.0, col(j)));
    }
  }
}

TEST_CASE("round trip R^T R w: direct and sampled draws have mean w and E||R^T R w - w||^2 = ||w||^2 (n+1)/k") {
  const std::uint64_t seed = kLinformerSeed + 8;
  INFO("seed " << seed);
  Rng rng(seed);
  const Eigen::Index n = 30, k = 7, trials = 4000;
  const Vec<double> w = gaussian_matrix(n, 1, rng);
  const double expected = w.squaredNorm() * static_cast<double>(n + 1) / static_cast<double>(k);
  for (int sampled = 0; sampled < 2; ++sampled) {
    INFO((sampled ? "sampled" : "direct"));
    Vec<double> mean = Vec<double>::Zero(n);
    double sum = 0, sum_sq = 0;
    for (Eigen::Index t = 0; t < trials; ++t) {
      const Vec<double> y = sampled ? round_trip_sampled(w, k, rng) : round_trip_direct(w, k, rng);
      mean += y / static_cast<double>(trials);
      const double e = (y - w).squaredNorm();
      sum += e;
      sum_sq += e * e;
    }
    const double m = sum / trials, sd = std::sqrt(sum_sq / trials - m * m);
    // The second moment is where a wrong chi-square factor or a missing orthogonal part would show.
    CHECK(std::abs(m - expected) < 5 * sd / std::sqrt(static_cast<double>(trials)));
    // Each coordinate of the mean has standard error at most sqrt(expected / trials).
    CHECK((mean - w).cwiseAbs().maxCoeff() < 5 * std::sqrt(expected / trials));
  }
}

TEST_CASE("Theorem 1's error: E||P R^T R w - P w||^2 = (||P||_F^2 ||w||^2 + ||P w||^2) / k, for sharp and flat P") {
  const std::uint64_t seed = kLinformerSeed + 10;
  INFO("seed " << seed);
  Rng rng(seed);
  const Eigen::Index n = 24, k = 5, trials = 6000;
  for (const std::string family : {"gaussian_small", "gaussian_large", "uniform"}) {
    INFO(family);
    const AttentionInputs in = make_attention_inputs(family, n, 4, rng);
    const Mat<double> p = softmax_attention_matrix(in.q, in.k);
    const Vec<double> w = in.v.col(0), pw = p * w;
    const double expected = (p.squaredNorm() * w.squaredNorm() + pw.squaredNorm()) / static_cast<double>(k);
    double sum = 0, sum_sq = 0;
    for (Eigen::Index t = 0; t < trials; ++t) {
      const double e = (p * round_trip_sampled(w, k, rng) - pw).squaredNorm();
      sum += e;
      sum_sq += e * e;
    }
    const double m = sum / trials, sd = std::sqrt(sum_sq / trials - m * m);
    CHECK(std::abs(m - expected) < 5 * sd / std::sqrt(static_cast<double>(trials)));
  }
}

TEST_CASE("Theorem 1's success counts: the Johnson-Lindenstrauss scale is never stricter; k_needed lies on its grid") {
  const std::uint64_t seed = kLinformerSeed + 11;
  INFO("seed " << seed);
  Rng rng(seed);
  const AttentionInputs in = make_attention_inputs("gaussian", 64, 8, rng);
  Theorem1Problem pr;
  pr.p = softmax_attention_matrix(in.q, in.k);
  pr.v = in.v;
  pr.pv = pr.p * pr.v;
  for (Eigen::Index k : {1, 8, 64, 512}) {
    INFO("k = " << k);
    // The same draws (same seed) judged against eps ||P||_F ||w|| >= eps ||P w||: at least as many successes.
    const std::size_t out = theorem1_successes(pr, k, 0.2, 50, derive_seed(seed, k));
    const std::size_t jl = theorem1_successes(pr, k, 0.2, 50, derive_seed(seed, k), Theorem1Scale::johnson_lindenstrauss);
    CHECK(jl >= out);
    if (k == 512) CHECK(jl == 50);  // sqrt(2 / 512) is far below 0.2: every draw within the JL scale
  }
  for (int steps : {1, 2, 4}) {
    INFO("steps per octave " << steps);
    const KNeeded kn = theorem1_k_needed(pr, 0.5, 40, 0.9, 30 * steps, derive_seed(seed, 99), steps);
    REQUIRE(kn.k > 0);
    CHECK(kn.rate >= 0.9);
    // k is a grid point 2^(j / steps), and the grid point below it falls short (or k is the first point).
    const double j = std::round(std::log2(static_cast<double>(kn.k)) * steps);
    CHECK(std::llround(std::pow(2.0, j / steps)) == kn.k);
    const auto below = static_cast<Eigen::Index>(std::llround(std::pow(2.0, (j - 1) / steps)));
    if (j > 0 && below != kn.k) {  // small k repeat on a fine grid: the bisection's lower point is another j
      const std::size_t ok = theorem1_successes(pr, below, 0.5, 40, derive_seed(derive_seed(seed, 99), below));
      CHECK(static_cast<double>(ok) / 40 < 0.9);
    }
  }
  CHECK_THROWS_WITH_AS(theorem1_k_needed(pr, 0.5, 40, 0.9, 10, seed, 0), doctest::Contains("steps_per_octave (= 0)"),
                       std::invalid_argument);
}

TEST_CASE("chi-square variates have mean dof and variance 2 dof, for dof below and above 2") {
  Rng rng(kLinformerSeed + 9);
  for (double dof : {1.0, 3.0, 250.0}) {
    const int trials = 20000;
    double s = 0, s2 = 0;
    for (int i = 0; i < trials; ++i) {
      const double c = chi_square_variate(dof, rng);
      s += c;
      s2 += c * c;
    }
    const double mean = s / trials, var = s2 / trials - mean * mean;
    INFO("dof " << dof);
    CHECK(std::abs(mean - dof) < 5 * std::sqrt(2 * dof / trials));
    CHECK(std::abs(var / (2 * dof) - 1) < 0.1);
  }
}

TEST_CASE("linformer cost counts") {
  const auto c = linformer_cost(1000, 64, 32, 16, 8);
  CHECK(c.multiply_adds == doctest::Approx(2.0 * 1000 * 16 * (64 + 32)));
  CHECK(c.workspace_bytes == doctest::Approx(8.0 * (16 * 64 + 16 * 32 + 1000 * 16 + 1000 * 32)));
}
