// Checks of broadcast_gemm (linalg/broadcast_gemm.hpp), the attention kernels' block product: against the
// product in double with the entrywise bound of floating-point dot products, at edge and random sizes around
// its 64 x 6 tile, with B in both orientations, C inside a larger matrix (nothing outside it written).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/linalg/broadcast_gemm.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// Entries uniform in [-1, 1), in float.
Mat<float> uniform_float(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  return uniform_matrix(rows, cols, rng, -1.0, 1.0).cast<float>();
}

// Sizes around the tile's edges (16-row vectors, 64 rows, 6 columns) and random ones.
std::vector<Eigen::Index> row_sizes(Rng& rng) { return test_sizes(rng, {1, 200}, 2, {1, 2, 3, 15, 16, 17, 63, 64, 65, 130}); }
std::vector<Eigen::Index> col_sizes(Rng& rng) { return test_sizes(rng, {1, 100}, 2, {1, 2, 3, 5, 6, 7, 11, 12, 13, 32, 64}); }

// max over entries of |C - C_exact| / (gamma |C0| + gamma |A| |B|), gamma = (k + 1) eps / 2: a dot product
// of length k summed into C0 in float is within gamma_{k+1} (|C0| + |A||B|) of the exact value (Higham,
// Accuracy and Stability, 3.1), the unit roundoff u = eps / 2. A ratio <= 1 is what theory promises.
double error_ratio(const Mat<float>& c, const Mat<double>& c0, const Mat<double>& a, const Mat<double>& b) {
  const double gamma = static_cast<double>(a.cols() + 1) * std::numeric_limits<float>::epsilon() / 2;
  const Mat<double> exact = c0 + a * b;
  const Mat<double> scale = gamma * (c0.cwiseAbs() + a.cwiseAbs() * b.cwiseAbs());
  double worst = 0;
  for (Eigen::Index j = 0; j < c.cols(); ++j)
    for (Eigen::Index i = 0; i < c.rows(); ++i) {
      const double err = std::abs(static_cast<double>(c(i, j)) - exact(i, j));
      worst = std::max(worst, scale(i, j) > 0 ? err / scale(i, j) : (err == 0 ? 0 : HUGE_VAL));
    }
  return worst;
}

}  // namespace

TEST_CASE("broadcast_gemm: C = A B and C += A B within the dot-product bound, B in both orientations") {
  const std::uint64_t seed = test_seed(20261127);
  Rng rng(seed);
  INFO("seed " << seed << ", AVX-512 kernel: " << detail::broadcast_sgemm_available());
  const float sentinel = 12345.f;
  for (Eigen::Index m : row_sizes(rng))
    for (Eigen::Index n : col_sizes(rng)) {
      const Eigen::Index k = 1 + static_cast<Eigen::Index>(rng.uniform() * 150);
      // A as rows [1, 1 + m) of a taller matrix (leading dimension > m), B given as itself and as the transpose of
      // a block of a wider matrix (row stride > 1), C as a block inside a larger matrix filled with a sentinel.
      const Mat<float> a_big = uniform_float(m + 3, k, rng);
      const auto a = a_big.middleRows(1, m);
      const Mat<float> b = uniform_float(k, n, rng);
      const Mat<float> bt_big = uniform_float(n + 2, k + 1, rng);
      const auto bt = bt_big.block(2, 1, n, k);  // B' = bt^T, k x n, entry (p, j) at stride n + 2 across p
      for (bool transposed : {false, true})
        for (bool accumulate : {false, true}) {
          INFO("m=" << m << " n=" << n << " k=" << k << " transposed=" << transposed << " accumulate=" << accumulate);
          Mat<float> c_big = Mat<float>::Constant(m + 5, n + 2, sentinel);
          auto c = c_big.block(3, 1, m, n);
          c = uniform_float(m, n, rng);
          const Mat<double> c0 = accumulate ? Mat<double>(c.cast<double>()) : Mat<double>::Zero(m, n);
          const Mat<double> b_exact = transposed ? Mat<double>(bt.transpose().cast<double>()) : b.cast<double>();
          if (transposed)
            broadcast_gemm(c, a, strided_view(bt.transpose()), accumulate);
          else
            broadcast_gemm(c, a, strided_view(b), accumulate);
          ATTNLAB_CHECK_RATIO_LE(error_ratio(c, c0, a.cast<double>(), b_exact), 1.0, "|C - AB| / gamma_(k+1) (|C0| + |A||B|)");
          // Nothing outside C written: the masked stores of a partial tile stop at its last row and column.
          Mat<float> outside = c_big;
          outside.block(3, 1, m, n).setConstant(sentinel);
          CHECK((outside.array() == sentinel).all());
        }
    }
}

TEST_CASE("broadcast_gemm: the sum over the inner dimension runs in order, the same result on every call") {
  // k = 0 leaves C = 0 (or unchanged); a repeated call is bit for bit the same (no state, no threads).
  Rng rng(test_seed(20261128));
  const Mat<float> a = uniform_float(70, 0, rng), b = uniform_float(0, 9, rng);
  Mat<float> c = Mat<float>::Constant(70, 9, 2.f);
  broadcast_gemm(c, a, strided_view(b), true);
  CHECK((c.array() == 2.f).all());
  broadcast_gemm(c, a, strided_view(b), false);
  CHECK((c.array() == 0.f).all());
  const Mat<float> a2 = uniform_float(64, 257, rng), b2 = uniform_float(257, 13, rng);
  Mat<float> c1(64, 13), c2(64, 13);
  broadcast_gemm(c1, a2, strided_view(b2), false);
  broadcast_gemm(c2, a2, strided_view(b2), false);
  CHECK(c1 == c2);
}

// What only attnlab's AVX-512 kernel promises (without AVX-512 the product is Eigen's, which promises neither):
// the sum over the inner dimension in the order p = 0, 1, ..., and broadcast_gemm_tn as broadcast_gemm on A^T.
TEST_CASE("broadcast_gemm's AVX-512 kernel: sums in order, and broadcast_gemm_tn the same bits as broadcast_gemm on A^T") {
  if (!detail::broadcast_sgemm_available()) {
    skip_test("this CPU has no AVX-512 (or the build is not -march=native): the kernel's own promises are not checked");
    return;
  }
  const std::uint64_t seed = test_seed(20261132);
  Rng rng(seed);
  INFO("seed " << seed);
  // One row of A against a B column of ones is the running sum.
  const Mat<float> a = uniform_float(1, 257, rng);
  Mat<float> ones = Mat<float>::Ones(257, 1), out(1, 1);
  broadcast_gemm(out, a, strided_view(ones), false);
  float running = 0;
  for (Eigen::Index p = 0; p < 257; ++p) running += a(0, p);
  CHECK(out(0, 0) == running);
  // broadcast_gemm_tn transposes A and runs broadcast_gemm's tiles: the very same sums, bit for bit.
  for (Eigen::Index m : row_sizes(rng))
    for (Eigen::Index n : col_sizes(rng))
      for (Eigen::Index k : {Eigen::Index{1}, Eigen::Index{17}, 1 + static_cast<Eigen::Index>(rng.uniform() * 150)})
        for (bool accumulate : {false, true}) {
          INFO("m=" << m << " n=" << n << " k=" << k << " accumulate=" << accumulate);
          const Mat<float> a_big = uniform_float(k + 4, m + 2, rng);
          const auto at_block = a_big.block(3, 1, k, m);
          const Mat<float> b = uniform_float(k, n, rng), c_start = uniform_float(m, n, rng);
          Mat<float> c = c_start, c_ref = c_start;
          broadcast_gemm_tn(c, at_block, strided_view(b), accumulate);
          broadcast_gemm(c_ref, Mat<float>(at_block.transpose()), strided_view(b), accumulate);
          CHECK(c == c_ref);
        }
}

TEST_CASE("broadcast_gemm_tn: C = A^T B and C += A^T B within the dot-product bound") {
  const std::uint64_t seed = test_seed(20261129);
  Rng rng(seed);
  INFO("seed " << seed << ", AVX-512 kernel: " << detail::broadcast_sgemm_available());
  const float sentinel = 12345.f;
  for (Eigen::Index m : row_sizes(rng))
    for (Eigen::Index n : col_sizes(rng)) {
      // k around the transpose's 16 x 16 blocks as well as random.
      for (Eigen::Index k : {Eigen::Index{1}, Eigen::Index{16}, Eigen::Index{17}, 1 + static_cast<Eigen::Index>(rng.uniform() * 150)}) {
        // A as a block of a larger matrix (leading dimension > k), so A^T is read through its columns' stride.
        const Mat<float> a_big = uniform_float(k + 4, m + 2, rng);
        const auto a = a_big.block(3, 1, k, m);
        const Mat<float> b = uniform_float(k, n, rng);
        const Mat<float> at = a.transpose();
        for (bool accumulate : {false, true}) {
          INFO("m=" << m << " n=" << n << " k=" << k << " accumulate=" << accumulate);
          Mat<float> c_big = Mat<float>::Constant(m + 5, n + 2, sentinel);
          auto c = c_big.block(3, 1, m, n);
          c = uniform_float(m, n, rng);
          const Mat<double> c0 = accumulate ? Mat<double>(c.cast<double>()) : Mat<double>::Zero(m, n);
          broadcast_gemm_tn(c, a, strided_view(b), accumulate);
          ATTNLAB_CHECK_RATIO_LE(error_ratio(c, c0, at.cast<double>(), b.cast<double>()), 1.0,
                                 "|C - A^T B| / gamma_(k+1) (|C0| + |A^T||B|)");
          Mat<float> outside = c_big;
          outside.block(3, 1, m, n).setConstant(sentinel);
          CHECK((outside.array() == sentinel).all());
        }
      }
    }
}
