// Checks of the three eigen paths of S_w against the dense oracle, float and double.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

#include "attnlab/lab/qk_weights.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/qk/sym_eigen.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kSymEigenSeed = attnlab::testing::test_seed(20251122);  // ATTNLAB_TEST_SEED overrides it

// Every returned eigenvalue must be within c d eps ||S|| of some oracle eigenvalue
// (Weyl: a backward-stable solver perturbs eigenvalues by at most its backward error).
template <typename T>
double eigenvalue_gap_ratio(const EigenPairs<T>& p, const EigenPairs<T>& oracle, double scale) {
  double worst = 0;
  for (Eigen::Index i = 0; i < p.values.size(); ++i)
    worst = std::max(worst, static_cast<double>((oracle.values.array() - p.values(i)).abs().minCoeff()));
  return residual_ratio<T>(worst, static_cast<double>(oracle.values.size()), scale);
}

// The Lanczos path's results over a run: those on operators of rank >= nev, and how many of them passed
// every check (residual, orthogonality, eigenvalues against the oracle).
struct LanczosTally {
  int well_posed = 0, passed = 0;
};

template <typename T>
void check_low_rank_paths(const QkWeights& w64, const std::string& what, LanczosTally& tally) {
  const Mat<T> wq = w64.wq.cast<T>(), wk = w64.wk.cast<T>();
  const Eigen::Index d = wq.rows(), dk = wq.cols();
  INFO(what << " d=" << d << " d_k=" << dk << " seed=" << kSymEigenSeed << " precision=" << (sizeof(T) == 4 ? "float" : "double"));
  const EigenPairs<T> oracle = eigen_dense<T>(symmetric_part(qk_product(wq, wk)));
  REQUIRE(oracle.status == EigenStatus::ok);
  const double scale = symmetric_part_norm(wq, wk);
  ATTNLAB_CHECK_RATIO_LE(eigen_residual_ratio(wq, wk, oracle), kResidualRatioThreshold, "dense oracle eigen residual");
  ATTNLAB_CHECK_RATIO_LE(orthogonality_ratio(oracle.vectors), kResidualRatioThreshold, "dense oracle orthogonality");

  const EigenPairs<T> qr = eigen_low_rank_qr(wq, wk);
  REQUIRE(qr.status == EigenStatus::ok);
  CHECK(qr.values.size() == std::min(d, 2 * dk));
  ATTNLAB_CHECK_RATIO_LE(eigen_residual_ratio(wq, wk, qr), kResidualRatioThreshold, "QR path eigen residual");
  ATTNLAB_CHECK_RATIO_LE(orthogonality_ratio(qr.vectors), kResidualRatioThreshold, "QR path orthogonality");
  ATTNLAB_CHECK_RATIO_LE(eigenvalue_gap_ratio(qr, oracle, scale), kResidualRatioThreshold, "QR path eigenvalues against the oracle");
  // The QR path returns every nonzero eigenvalue: the oracle's others are rounding noise.
  for (Eigen::Index i = qr.values.size(); i < d; ++i)
    ATTNLAB_CHECK_RATIO_LE(residual_ratio<T>(std::abs(static_cast<double>(oracle.values(i))), static_cast<double>(d), scale),
                           kResidualRatioThreshold, "an oracle eigenvalue the QR path omits");

  const Eigen::Index nev = 2 * dk;
  const EigenPairs<T> lz = eigen_lanczos(wq, wk, nev);
  if (nev >= d) {
    CHECK(lz.status == EigenStatus::not_applicable);
    return;
  }
  // The Lanczos path, asserted in every case. Debian's Spectra 1.0.1 fails in known ways, handled here as
  // sym_eigen.hpp and exp_qk_eigen_cost handle them (the caller checks the residual and orthogonality, and a
  // failure is recorded, never hidden): on an operator of rank below nev it may throw (solver_error) or
  // return wrong pairs as a success (upstream issue 159); its Lanczos start loses orthogonality, mostly when
  // one eigenvalue dominates (spectra_init_residual_not_reorthogonalized below), at any d though rarer as d
  // grows; on spectra spread over decades its Ritz tolerance, not eps, bounds the residual. So: a solver
  // error only where the rank is below nev; a success either passes every check or fails the residual or
  // orthogonality check callers run (a wrong eigenvalue never passes unnoticed); and on operators of rank
  // >= nev most results pass (run_all's tally).
  const Eigen::Index rank = count_nonzero_eigenvalues<T>(oracle.values, d);
  INFO("Lanczos status " << to_string(lz.status) << " (" << lz.detail << "), rank of S_w " << rank << ", nev " << nev);
  CHECK((lz.status == EigenStatus::ok || rank < nev));
  if (lz.status != EigenStatus::ok) return;
  CHECK(lz.values.size() == nev);
  const double residual = eigen_residual_ratio(wq, wk, lz), orthogonality = orthogonality_ratio(lz.vectors);
  const double gap = eigenvalue_gap_ratio(lz, oracle, scale);
  const bool passes = std::max({residual, orthogonality, gap}) <= kResidualRatioThreshold;
  const bool flagged = std::max(residual, orthogonality) > kResidualRatioThreshold;
  INFO("Lanczos ratios: residual " << residual << ", orthogonality " << orthogonality << ", eigenvalues against the oracle " << gap);
  CHECK((passes || flagged));
  if (rank >= nev) {
    ++tally.well_posed;
    tally.passed += passes;
  }
}

template <typename T>
void run_all() {
  Rng rng(kSymEigenSeed);
  LanczosTally tally;
  // Edge sizes first, then random sizes.
  for (auto [d, dk] : std::vector<std::pair<Eigen::Index, Eigen::Index>>{{1, 1}, {2, 1}, {2, 2}, {3, 1}, {3, 2}, {3, 3}})
    for (const auto& f : qk_weight_families()) check_low_rank_paths<T>(make_qk_weights(f.name, d, dk, rng), f.name, tally);
  for (int trial = 0, repeat = attnlab::testing::test_repeat(6); trial < repeat; ++trial) {
    const auto d = static_cast<Eigen::Index>(4 + rng.uniform() * 60);
    const auto dk = static_cast<Eigen::Index>(1 + rng.uniform() * static_cast<double>(d));
    for (const auto& f : qk_weight_families()) check_low_rank_paths<T>(make_qk_weights(f.name, d, dk, rng), f.name, tally);
  }
  // Spectra's failures on operators of rank >= nev are the exception (a few percent of draws at d = 3, a
  // fraction of a percent at d = 40): a path that failed wholesale, even if every failure were flagged,
  // must not pass. At most a fifth of them may fail (two where there are fewer than ten).
  INFO("Lanczos results on operators of rank >= nev: " << tally.passed << " of " << tally.well_posed << " passed every check");
  CHECK(tally.well_posed > 0);
  CHECK(tally.well_posed - tally.passed <= std::max(2, tally.well_posed / 5));
}

}  // namespace

TEST_CASE("eigen paths of S_w agree with the dense oracle (double)") { run_all<double>(); }
TEST_CASE("eigen paths of S_w agree with the dense oracle (float)") { run_all<float>(); }

TEST_CASE("Lanczos on a well-posed operator (rank = nev) finds the right eigenpairs") {
  Rng rng(kSymEigenSeed + 1);
  for (Eigen::Index dk : {1, 2, 5}) {
    const QkWeights w = make_qk_weights("gaussian", 60, dk, rng);
    const EigenPairs<double> lz = eigen_lanczos<double>(w.wq, w.wk, 2 * dk);
    REQUIRE(lz.status == EigenStatus::ok);
    ATTNLAB_CHECK_RATIO_LE(eigen_residual_ratio<double>(w.wq, w.wk, lz), kResidualRatioThreshold, "Lanczos eigen residual");
    ATTNLAB_CHECK_RATIO_LE(orthogonality_ratio<double>(lz.vectors), kResidualRatioThreshold, "Lanczos orthogonality");
  }
}

TEST_CASE("rank 0: zero weights give zero eigenvalues on every path, without throwing") {
  const Mat<double> zero = Mat<double>::Zero(10, 2);
  const EigenPairs<double> lz = eigen_lanczos<double>(zero, zero, 4);
  CHECK(lz.status == EigenStatus::ok);
  CHECK(lz.values.cwiseAbs().maxCoeff() == 0.0);
  CHECK(orthogonality_ratio<double>(lz.vectors) == 0.0);
  const EigenPairs<double> qr = eigen_low_rank_qr<double>(zero, zero);
  CHECK(qr.status == EigenStatus::ok);
  CHECK(qr.values.cwiseAbs().maxCoeff() == 0.0);
  ATTNLAB_CHECK_RATIO_LE(orthogonality_ratio<double>(qr.vectors), kResidualRatioThreshold, "QR path orthogonality at rank 0");
  CHECK(count_nonzero_eigenvalues<double>(qr.values, 10) == 0);
}

TEST_CASE("rank 1: tied weights with d_k = 1 give one positive eigenvalue ||w||^2") {
  Rng rng(kSymEigenSeed + 2);
  const QkWeights w = make_qk_weights("tied", 30, 1, rng);
  const EigenPairs<double> qr = eigen_low_rank_qr<double>(w.wq, w.wk);
  REQUIRE(qr.status == EigenStatus::ok);
  CHECK(count_nonzero_eigenvalues<double>(qr.values, 30) == 1);
  CHECK(qr.values(0) == doctest::Approx(w.wq.squaredNorm()).epsilon(30 * 30 * 2.2e-16));
}

TEST_CASE("the implicit operator applies S_w, and ||S_w|| from the factors matches the formed matrix") {
  Rng rng(kSymEigenSeed + 3);
  for (auto [d, dk] : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {40, 7}}) {
    const QkWeights w = make_qk_weights("gaussian", d, dk, rng);
    const Mat<double> s = symmetric_part(qk_product(w.wq, w.wk));
    SymmetricPartOp<double> op(w.wq, w.wk);
    const Vec<double> x = gaussian_matrix(d, 1, rng);
    Vec<double> y(d);
    op.perform_op(x.data(), y.data());
    // Both sides are sums of d_k-term products: errors of order d eps ||S|| ||x||.
    CHECK((y - s * x).norm() <= 10 * d * 2.2e-16 * s.norm() * x.norm());
    CHECK(symmetric_part_norm(w.wq, w.wk) == doctest::Approx(s.norm()).epsilon(1e-12));
    CHECK((symmetric_part(s) - s).norm() == 0.0);
    const Mat<double> r = skew_part(qk_product(w.wq, w.wk));
    CHECK((r + r.transpose()).norm() == 0.0);  // exactly skew: a - b and b - a round alike
  }
}

// Given inputs at d = 3, d_k = 1 showed the Lanczos path failing its own checks (ratios 30 to 1e4
// in about 6% of Gaussian draws at d = 3, fewer as d grows) while reporting success. The cause is in
// Spectra 1.0.1, not in our operator: Arnoldi::init forms the first residual f = A v1 - (v1' A v1) v1
// in one pass, without the reorthogonalization every later step gets. v1 = A v0 / ||A v0|| lies
// close to the dominant eigenvector when one eigenvalue dominates, so f is small against A v1 and
// v2 = f / ||f|| keeps a component along v1 of about eps ||A v1|| / ||f||; no later step removes it.
// The eigenvalues stay right; the eigenvectors lose orthogonality, and the checks catch it.
TEST_CASE("spectra_init_residual_not_reorthogonalized: caught by the Lanczos path's own checks") {
  Rng rng(18);  // eigenvalues about 1.84, -0.063 and 0: the first dominates
  const Mat<double> wq = gaussian_matrix(3, 1, rng), wk = gaussian_matrix(3, 1, rng);
  const EigenPairs<double> lz = eigen_lanczos<double>(wq, wk, 2);
  REQUIRE(lz.status == EigenStatus::ok);  // Spectra reports success
  const EigenPairs<double> oracle = eigen_dense<double>(symmetric_part(qk_product(wq, wk)));
  ATTNLAB_CHECK_RATIO_LE(eigenvalue_gap_ratio(lz, oracle, symmetric_part_norm(wq, wk)), kResidualRatioThreshold,
                         "Lanczos eigenvalues against the oracle");
  // The defect, as exp_qk_eigen_cost records it.
  ATTNLAB_CHECK_RATIO_GT(orthogonality_ratio(lz.vectors), kResidualRatioThreshold, "Lanczos orthogonality (Spectra's defect)");
  // The QR path, on the same weights, passes every check.
  const EigenPairs<double> qr = eigen_low_rank_qr<double>(wq, wk);
  ATTNLAB_CHECK_RATIO_LE(eigen_residual_ratio(wq, wk, qr), kResidualRatioThreshold, "QR path eigen residual");
  ATTNLAB_CHECK_RATIO_LE(orthogonality_ratio(qr.vectors), kResidualRatioThreshold, "QR path orthogonality");
}


TEST_CASE("qk_confirming_families: the claims' families, then W_K = W_Q D, symmetric with d_k eigenvalues of both signs") {
  Rng rng(kSymEigenSeed + 4);
  INFO("seed " << kSymEigenSeed + 4);
  const auto& claims = qk_weight_families();
  const auto& confirming = qk_confirming_families();
  REQUIRE(confirming.size() == claims.size() + 1);
  for (std::size_t i = 0; i < claims.size(); ++i) CHECK(confirming[i].name == claims[i].name);
  CHECK(qk_family_description("symmetric_indefinite") == confirming.back().description);
  int mixed = 0;
  for (auto [d, dk] : std::vector<std::pair<int, int>>{{1, 1}, {3, 2}, {12, 9}, {40, 10}, {60, 60}}) {
    INFO("d=" << d << " d_k=" << dk);
    const QkWeights w = make_qk_weights("symmetric_indefinite", d, dk, rng);
    for (Eigen::Index j = 0; j < dk; ++j) CHECK((w.wk.col(j) == w.wq.col(j) || w.wk.col(j) == -w.wq.col(j)));
    const Mat<double> m = qk_product(w.wq, w.wk);
    // Each entry of M and of M^T is a sum of the same d_k products: equal up to the order of summation.
    CHECK(skew_part(m).norm() <= 10 * dk * 2.2e-16 * m.norm());
    const Vec<double> lambda = Eigen::SelfAdjointEigenSolver<Mat<double>>(symmetric_part(m), Eigen::EigenvaluesOnly).eigenvalues();
    const EigenvalueSigns signs = count_eigenvalue_signs<double>(lambda, d);
    // M = W_Q D W_Q^T with W_Q of full column rank: its inertia is D's.
    const Eigen::Index flipped = (w.wk.array() != w.wq.array()).colwise().any().count();
    CHECK(signs.nonzero == dk);
    CHECK(signs.negative == flipped);
    mixed += signs.positive > 0 && signs.negative > 0;
  }
  CHECK(mixed >= 2);  // random signs: with d_k of 9, 10 and 60, both signs appear (all-equal has probability < 2^-8)
}
