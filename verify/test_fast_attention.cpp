// Checks of the fast linear (elu + 1 and Shen's), Linformer and Nystrom kernels against their reference kernels.
#include <doctest/doctest.h>
#include <omp.h>

#include <functional>
#include <stdexcept>

#include "attention_test_support.hpp"
#include "attnlab/attention/fast_passes.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/nystrom.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

constexpr Eigen::Index kLandmarks = 8, kProjected = 8;

template <typename T>
struct Stacks {
  HeadStack<T> q, k, v;
};

// batch 1, heads 2 of one family, so a stack and its heads can be compared with the references.
template <typename T>
Stacks<T> family_stacks(const std::string& family, Eigen::Index n, Eigen::Index d, Rng& rng) {
  Stacks<T> s{HeadStack<T>(1, 2, n, d), HeadStack<T>(1, 2, n, d), HeadStack<T>(1, 2, n, d)};
  for (Eigen::Index i = 0; i < 2; ++i) {
    const auto in = typed_inputs<T>(family, n, d, rng);
    s.q[i] = in.q, s.k[i] = in.k, s.v[i] = in.v;
  }
  return s;
}

// Sizes across the block boundary (kFastRowBlock = 512) besides the edge and random ones.
std::vector<Eigen::Index> fast_sizes(Rng& rng) {
  std::vector<Eigen::Index> s = attention_test_sizes(rng);
  for (Eigen::Index n : {kFastRowBlock, kFastRowBlock + 1, 2 * kFastRowBlock + 70}) s.push_back(n);
  return s;
}

template <typename T>
double max_diff(const Mat<T>& a, const Mat<T>& b) {
  return static_cast<double>((a - b).cwiseAbs().maxCoeff());
}

// elu + 1 linear attention: phi > 0, so the denominators are sums of positive terms (relative error
// <= (n + d) eps) and each numerator entry errs by <= (n + d) eps sum_j w_j |v_j| <= (n + d) eps max|v|
// times the denominator. Per kernel |out - exact| <= 4 (n + d + 4) eps max|v|; twice that between two.
// Shen's efficient attention has the same shape of error: softmax_col(K)^T V is, per feature, a convex
// combination of V's rows whose n weights err relatively by <= (n + 4) eps (exps relative to the column's
// maximum, a sum of n positive terms, one division; the blocks' rescaling adds a few eps), and each output
// row a convex combination of the d context rows with weights erring by <= (d + 4) eps. So the same bound.
template <typename T>
double linear_bound(const Mat<T>& v, Eigen::Index n, Eigen::Index d) {
  return 8 * static_cast<double>(n + d + 4) * eps<T>() * std::max(1.0, static_cast<double>(v.cwiseAbs().maxCoeff()));
}

// Linformer: E K and F V err by <= n eps (|E| |K|) and n eps (|F| |V|) entrywise (dot products of
// length n), so a logit q_i . (E K)_p / sqrt(d) errs by <= (d + n) eps s_abs with s_abs the largest
// |q_i| . (|E| |K|)_p / sqrt(d); exp() turns that into a relative weight error, and the kp-term
// average of F V rows adds kp eps. Per kernel 4 ((d + n) s_abs + n + kp + 4) eps max(|F| |V|); twice between two.
template <typename T>
double linformer_bound(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const LinformerProjections<T>& p) {
  const Mat<double> ek = p.e.template cast<double>().cwiseAbs() * k.template cast<double>().cwiseAbs();
  const Mat<double> fv = p.f.template cast<double>().cwiseAbs() * v.template cast<double>().cwiseAbs();
  const double n = static_cast<double>(k.rows()), d = static_cast<double>(q.cols()), kp = static_cast<double>(p.k());
  const double s_abs = (q.template cast<double>().cwiseAbs() * ek.transpose()).maxCoeff() / std::sqrt(d);
  return 8 * ((d + n) * s_abs + n + kp + 4) * eps<T>() * std::max(1.0, fv.maxCoeff());
}

// Nystrom: the fast kernel forms A with the reference's own expression, so Z is the same to the bit
// (Eigen single-threaded) and only F, B V and the products with Z differ in rounding. F's and B's
// logits err by <= d eps s_max (s_max over both logit sets); B V sums n terms. Per kernel
// |out - exact| <= 4 (d s_max + n + m + 4) eps max(|F| |Z| |B| |V|); twice that between two.
template <typename T>
double nystrom_bound(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index m) {
  const NystromFactors<T> fac = nystrom_factors(q, k, m);
  const Mat<double> z = iterative_pinv(fac.a, kNystromformerPinvIterations).template cast<double>().cwiseAbs();
  const Mat<double> chain = fac.f.template cast<double>() * (z * (fac.b.template cast<double>() * v.template cast<double>().cwiseAbs()));
  const Mat<T> q_l = segment_means(q, m), k_l = segment_means(k, m);
  const double d = static_cast<double>(q.cols()), n = static_cast<double>(k.rows());
  const double s_max = std::max(q.rowwise().norm().maxCoeff() * k_l.rowwise().norm().maxCoeff(),
                                q_l.rowwise().norm().maxCoeff() * k.rowwise().norm().maxCoeff()) / std::sqrt(d);
  return 8 * (d * s_max + n + static_cast<double>(m) + 4) * eps<T>() * std::max(1.0, chain.maxCoeff());
}

template <typename T>
void check_against_references() {
  Eigen::setNbThreads(1);  // the references' products serial too, as in every experiment (ExperimentCli)
  Rng rng(kAttentionTestSeed + 9);
  INFO("seed " << kAttentionTestSeed + 9);
  for (const auto& family : attention_families())
    for (Eigen::Index n : fast_sizes(rng)) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 16);
      const auto s = family_stacks<T>(family, n, d, rng);
      const auto proj = gaussian_projections(n, std::min(kProjected, n), ProjectionSharing::shared, rng).cast<T>();
      const Eigen::Index m = std::min(kLandmarks, n);
      const HeadStack<T> lin = fast_elu_linear_attention(s.q, s.k, s.v);
      const HeadStack<T> shen = fast_efficient_attention(s.q, s.k, s.v);
      const HeadStack<T> lf = fast_linformer_attention(s.q, s.k, s.v, proj);
      const HeadStack<T> ny = fast_nystrom_attention(s.q, s.k, s.v, m);
      for (Eigen::Index i = 0; i < 2; ++i) {
        INFO(family << " n=" << n << " d=" << d << " head " << i);
        CHECK(max_diff(lin[i], elu_linear_attention(s.q[i], s.k[i], s.v[i])) <= linear_bound(s.v[i], n, d));
        CHECK(max_diff(shen[i], efficient_attention(s.q[i], s.k[i], s.v[i])) <= linear_bound(s.v[i], n, d));
        CHECK(max_diff(lf[i], linformer_attention(s.q[i], s.k[i], s.v[i], proj)) <=
              linformer_bound(s.q[i], s.k[i], s.v[i], proj));
        CHECK(max_diff(ny[i], nystrom_attention(s.q[i], s.k[i], s.v[i], NystromOptions{.landmarks = m})) <=
              nystrom_bound(s.q[i], s.k[i], s.v[i], m));
      }
    }
}

}  // namespace

TEST_CASE("fast linear (elu + 1, Shen's), Linformer and Nystrom attention agree with the references in float and double") {
  check_against_references<double>();
  check_against_references<float>();
}

TEST_CASE("fast linear attention: all-negative keys and queries (exp underflow in float) stay finite and agree") {
  Rng rng(kAttentionTestSeed + 10);
  HeadStack<float> q(1, 1, 40, 4), k = q, v = q;
  q[0] = (gaussian_matrix<float>(40, 4, rng).cwiseAbs().array() + 200.0f).matrix() * -1.0f;
  k[0] = (gaussian_matrix<float>(40, 4, rng).cwiseAbs().array() + 300.0f).matrix() * -1.0f;
  v[0] = gaussian_matrix<float>(40, 4, rng);
  const HeadStack<float> out = fast_elu_linear_attention(q, k, v);
  REQUIRE(out[0].allFinite());
  CHECK(max_diff(out[0], elu_linear_attention(q[0], k[0], v[0])) <= linear_bound(v[0], 40, 4));
}

TEST_CASE("fast Shen attention over several key blocks: maxima that differ by block merged without overflow") {
  // Heads longer than 2048 rows are cut into blocks of kFastRowBlock keys; logits growing along the sequence
  // (up to about 1e3) give every block its own maxima, so pass 2's rescaling exp(m_j - max) is exercised.
  Rng rng(kAttentionTestSeed + 13);
  const Eigen::Index n = 2 * 2048 + 5, d = 8;
  HeadStack<float> q(1, 2, n, d), k = q, v = q;
  for (Eigen::Index i = 0; i < 2; ++i) {
    q[i] = gaussian_matrix<float>(n, d, rng, 30.0);
    k[i] = gaussian_matrix<float>(n, d, rng);
    for (Eigen::Index j = 0; j < n; ++j) k[i].row(j) *= 300.0f * static_cast<float>(j + 1) / static_cast<float>(n);
    v[i] = gaussian_matrix<float>(n, d, rng);
  }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const HeadStack<float> one = fast_efficient_attention(q, k, v);
  omp_set_num_threads(2);
  const HeadStack<float> two = fast_efficient_attention(q, k, v);
  omp_set_num_threads(saved);
  for (Eigen::Index i = 0; i < 2; ++i) {
    REQUIRE(one[i].allFinite());
    CHECK(one[i] == two[i]);
    CHECK(max_diff(one[i], efficient_attention(q[i], k[i], v[i])) <= linear_bound(v[i], n, d));
  }
}

TEST_CASE("fast kernels: bit for bit the same with 1 and 2 threads, one long head or many") {
  Rng rng(kAttentionTestSeed + 11);
  const int saved = omp_get_max_threads();
  for (Eigen::Index heads : {1, 3}) {
    const Eigen::Index n = 2 * kFastRowBlock + 37, d = 8;
    HeadStack<float> q(1, heads, n, d), k = q, v = q;
    for (Eigen::Index i = 0; i < heads; ++i) {
      q[i] = gaussian_matrix<float>(n, d, rng), k[i] = gaussian_matrix<float>(n, d, rng);
      v[i] = gaussian_matrix<float>(n, d, rng);
    }
    const auto proj = gaussian_projections(n, kProjected, ProjectionSharing::shared, rng).cast<float>();
    const std::vector<std::function<HeadStack<float>()>> kernels = {
        [&] { return fast_elu_linear_attention(q, k, v); }, [&] { return fast_efficient_attention(q, k, v); },
        [&] { return fast_linformer_attention(q, k, v, proj); },
        [&] { return fast_nystrom_attention(q, k, v, kLandmarks); }};
    for (const auto& run : kernels) {
      omp_set_num_threads(1);
      const HeadStack<float> one = run();
      omp_set_num_threads(2);
      const HeadStack<float> two = run();
      for (Eigen::Index i = 0; i < heads; ++i) CHECK(one[i] == two[i]);
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("fast kernels refuse bad shapes and landmark counts") {
  HeadStack<float> q(1, 1, 10, 4), k(1, 1, 10, 4), v(1, 1, 10, 4), k_short(1, 1, 9, 4), other(2, 1, 10, 4);
  Rng rng(kAttentionTestSeed + 12);
  const auto proj = gaussian_projections(9, 4, ProjectionSharing::shared, rng).cast<float>();
  CHECK_THROWS_AS(fast_elu_linear_attention(q, k_short, v), std::invalid_argument);
  CHECK_THROWS_AS(fast_elu_linear_attention(q, k, other), std::invalid_argument);
  CHECK_THROWS_AS(fast_efficient_attention(q, k_short, v), std::invalid_argument);
  CHECK_THROWS_AS(fast_efficient_attention(q, k, other), std::invalid_argument);
  CHECK_THROWS_AS(fast_linformer_attention(q, k, v, proj), std::invalid_argument);
  CHECK_THROWS_AS(fast_nystrom_attention(q, k, v, 0), std::invalid_argument);
  CHECK_THROWS_AS(fast_nystrom_attention(q, k, v, 11), std::invalid_argument);
}
