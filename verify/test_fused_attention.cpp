// Checks of the fused exact and streaming kernels against the reference softmax_attention().
#include <doctest/doctest.h>
#include <omp.h>

#include <array>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention_test_support.hpp"
#include "attnlab/attention/fused_attention.hpp"
#include "attnlab/attention/softmax_attention.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// Sizes around the query block (kFusedQueryBlock = 64) besides the usual edge and random ones.
std::vector<Eigen::Index> fused_sizes(Rng& rng) {
  std::vector<Eigen::Index> s = attention_test_sizes(rng);
  for (Eigen::Index n : {kFusedQueryBlock, kFusedQueryBlock + 1, 2 * kFusedQueryBlock + 3}) s.push_back(n);
  return s;
}

template <typename T>
void check_against_reference() {
  Rng rng(kAttentionTestSeed + 6);
  INFO("seed " << kAttentionTestSeed + 6);
  for (const auto& family : attention_families())
    for (Eigen::Index n : fused_sizes(rng)) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 40);
      const auto in = typed_inputs<T>(family, n, d, rng);
      const Mat<T> ref = softmax_attention(in.q, in.k, in.v);
      // Both kernels are within softmax_output_bound of the exact result, hence within twice it of each other.
      const double bound = 2 * softmax_output_bound(in.q, in.k, in.v);
      for (Eigen::Index block : {Eigen::Index(0), Eigen::Index(1), Eigen::Index(3), kFusedKeyBlock}) {
        INFO(family << " n=" << n << " d=" << d << " key_block=" << block << " bound=" << bound);
        const Mat<T> fused = fused_attention(in.q, in.k, in.v, block);
        CHECK(fused.allFinite());
        CHECK(static_cast<double>((fused - ref).cwiseAbs().maxCoeff()) <= bound);
      }
    }
}

}  // namespace

TEST_CASE("fused attention agrees with softmax_attention in float and double, for every key block") {
  check_against_reference<double>();
  check_against_reference<float>();
}

TEST_CASE("fused attention on a stack: every head as alone, bit for bit with 1 and 2 threads") {
  Rng rng(kAttentionTestSeed + 7);
  HeadStack<float> q(2, 3, 3 * kFusedQueryBlock + 5, 16), k = q, v = q;
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    q[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
    k[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
    v[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
  }
  const int saved = omp_get_max_threads();
  for (Eigen::Index block : {Eigen::Index(0), kFusedKeyBlock}) {
    omp_set_num_threads(1);
    const HeadStack<float> one = fused_attention(q, k, v, block);
    omp_set_num_threads(2);
    const HeadStack<float> two = fused_attention(q, k, v, block);
    for (Eigen::Index i = 0; i < q.count(); ++i) {
      CHECK(one[i] == two[i]);
      CHECK(one[i] == fused_attention(q[i], k[i], v[i], block));
    }
  }
  omp_set_num_threads(saved);
}

TEST_CASE("fused attention: logits of 1e6 stay finite, bad arguments throw") {
  Rng rng(kAttentionTestSeed + 8);
  const Mat<float> q = gaussian_matrix<float>(70, 8, rng, 1e3), k = gaussian_matrix<float>(300, 8, rng, 1e3),
                   v = gaussian_matrix<float>(300, 5, rng);
  for (Eigen::Index block : {Eigen::Index(0), Eigen::Index(7)}) {
    const Mat<float> out = fused_attention(q, k, v, block);
    REQUIRE(out.allFinite());
    // With logits this far apart each query attends to its best key alone (up to rounding).
    CHECK((out - softmax_attention(q, k, v)).cwiseAbs().maxCoeff() <= 1e-5f);
  }
  CHECK_THROWS_AS(fused_attention(q, k, v, -1), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention(q, Mat<float>(k.leftCols(7)), v), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention(q, k, Mat<float>(v.topRows(299))), std::invalid_argument);
}

TEST_CASE("fused_attention_into: the same bits into a new, a reused or the query's own storage; bad outputs throw") {
  const std::uint64_t seed = kAttentionTestSeed + 9;
  Rng rng(seed);
  INFO("seed " << seed);
  std::vector<Eigen::Index> sizes = fused_sizes(rng);
  for (Eigen::Index n : sizes)
    for (Eigen::Index block : {Eigen::Index(0), Eigen::Index(3), kFusedKeyBlock}) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 20);
      const Mat<float> q = gaussian_matrix<float>(n, d, rng), k = gaussian_matrix<float>(n + 2, d, rng),
                       v = gaussian_matrix<float>(n + 2, d, rng);
      INFO("n=" << n << " d=" << d << " key_block=" << block);
      const Mat<float> expected = fused_attention(q, k, v, block);
      Mat<float> fresh;  // empty: resized
      fused_attention_into(fresh, q, k, v, block);
      CHECK(fresh == expected);
      // Reused: the same storage, every entry overwritten (a sentinel left anywhere would differ).
      Mat<float> reused = Mat<float>::Constant(n, d, std::numeric_limits<float>::quiet_NaN());
      const float* storage = reused.data();
      fused_attention_into(reused, q, k, v, block);
      CHECK(reused.data() == storage);
      CHECK(reused == expected);
      // Over the queries: each block's output rows are written after its queries were read.
      Mat<float> over = q;
      fused_attention_into(over, over, k, v, block);
      CHECK(over == expected);
    }
  // A stack, in place, as each head alone.
  HeadStack<double> q(2, 2, 2 * kFusedQueryBlock + 1, 6), k = q, v = q;
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    q[i] = gaussian_matrix<double>(q.n(), q.d(), rng);
    k[i] = gaussian_matrix<double>(q.n(), q.d(), rng);
    v[i] = gaussian_matrix<double>(q.n(), q.d(), rng);
  }
  const HeadStack<double> expected = fused_attention(q, k, v, kFusedKeyBlock);
  HeadStack<double> over = q;
  fused_attention_into(over, over, k, v, kFusedKeyBlock);
  for (Eigen::Index i = 0; i < q.count(); ++i) CHECK(over[i] == expected[i]);
  // The output cannot be q when v's width differs (q is left as it was), nor k or v.
  const Mat<float> k2 = gaussian_matrix<float>(9, 4, rng), v2 = gaussian_matrix<float>(9, 3, rng);
  Mat<float> q2 = gaussian_matrix<float>(5, 4, rng);
  const Mat<float> before = q2;
  CHECK_THROWS_AS(fused_attention_into(q2, q2, k2, v2), std::invalid_argument);
  CHECK(q2 == before);
  Mat<float> k3 = k2, v3 = gaussian_matrix<float>(9, 4, rng);
  CHECK_THROWS_AS(fused_attention_into(k3, q2, k3, v3), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_into(v3, q2, k3, v3), std::invalid_argument);
  HeadStack<double> q4(1, 1, 5, 4), k4(1, 1, 7, 4), v4(1, 1, 7, 3);
  CHECK_THROWS_AS(fused_attention_into(q4, q4, k4, v4), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_into(k4, q4, k4, v4), std::invalid_argument);
}

namespace {

// The heads of `m` (a column-major stack) written in C order, one row-major block per head.
template <typename T>
std::vector<std::vector<T>> c_order_heads(const HeadStack<T>& m) {
  std::vector<std::vector<T>> out;
  for (Eigen::Index h = 0; h < m.count(); ++h) {
    std::vector<T> rows(static_cast<std::size_t>(m.n() * m.d()));
    for (Eigen::Index i = 0; i < m.n(); ++i)
      for (Eigen::Index j = 0; j < m.d(); ++j) rows[static_cast<std::size_t>(i * m.d() + j)] = m[h](i, j);
    out.push_back(std::move(rows));
  }
  return out;
}

template <typename T>
std::vector<const T*> pointers(const std::vector<std::vector<T>>& heads) {
  std::vector<const T*> p;
  for (const auto& h : heads) p.push_back(h.data());
  return p;
}

template <typename T>
void check_c_order() {
  Rng rng(kAttentionTestSeed + 11);
  INFO("seed " << kAttentionTestSeed + 11);
  const int saved = omp_get_max_threads();
  // Edge sizes (1, 2, 3), the query block's edges, a d_v other than d, and one of zero columns.
  for (const auto& [n_q, n_k, d, d_v, count] : std::vector<std::array<Eigen::Index, 5>>{
           {1, 1, 1, 1, 1}, {2, 3, 2, 3, 2}, {3, 2, 3, 1, 3}, {kFusedQueryBlock + 1, 70, 13, 5, 2}, {2 * kFusedQueryBlock + 3, 37, 64, 64, 3},
           {5, 4, 3, 0, 1}}) {
    HeadStack<T> q(1, count, n_q, d), k(1, count, n_k, d), v(1, count, n_k, d_v);
    for (Eigen::Index h = 0; h < count; ++h) {
      q[h] = gaussian_matrix<T>(n_q, d, rng);
      k[h] = gaussian_matrix<T>(n_k, d, rng);
      v[h] = gaussian_matrix<T>(n_k, d_v, rng);
    }
    const auto qc = c_order_heads(q), kc = c_order_heads(k), vc = c_order_heads(v);
    for (Eigen::Index block : {Eigen::Index(0), Eigen::Index(7)})
      for (int threads : {1, 2}) {
        INFO("n_q " << n_q << " n_k " << n_k << " d " << d << " d_v " << d_v << " heads " << count << " key_block " << block
                    << " threads " << threads);
        omp_set_num_threads(threads);
        const HeadStack<T> want = fused_attention(q, k, v, block);
        std::vector<std::vector<T>> got(static_cast<std::size_t>(count), std::vector<T>(static_cast<std::size_t>(n_q * d_v), T(-1)));
        std::vector<T*> out;
        for (auto& g : got) out.push_back(g.data());
        fused_attention_c_order(out, pointers(qc), pointers(kc), pointers(vc), n_q, n_k, d, d_v, block);
        CHECK(got == c_order_heads(want));  // bit for bit
      }
  }
  omp_set_num_threads(saved);
}

}  // namespace

TEST_CASE("fused attention over C-order heads: bit for bit the stack's output, float and double; bad shapes throw") {
  check_c_order<float>();
  check_c_order<double>();
  std::vector<float> x(6), y(6);
  const std::vector<const float*> in{x.data()};
  const std::vector<float*> out{y.data()};
  CHECK_THROWS_AS(fused_attention_c_order<float>(out, in, in, in, 0, 2, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_c_order<float>(out, in, in, in, 2, 2, 0, 3), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_c_order<float>(out, in, in, in, 2, 2, 3, -1), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_c_order<float>(out, in, {}, in, 2, 2, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(fused_attention_c_order<float>(out, in, in, in, 2, 2, 3, 3, -1), std::invalid_argument);
}
