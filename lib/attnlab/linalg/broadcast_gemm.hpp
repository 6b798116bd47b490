// C = A B (or C += A B) for the attention kernels' block products: A column-major with its rows
// contiguous (a block of rows of a column-major matrix), B any strided view (a block of a matrix or of
// its transpose), C column-major; and C = A^T B (broadcast_gemm_tn) for a transposed left factor. In float on
// a CPU with AVX-512, attnlab's own register-blocked kernel (broadcast_gemm.cpp); otherwise, and in double,
// Eigen's product.
//
// Why not Eigen's GEMM: at the attention kernels' shapes (64 queries x n keys x d = 32 or 64, and
// 64 x d_v x n) Eigen's sgemm ran at 56-82 GFLOP/s on one core here, where the core's FMA peak is
// about 115; this kernel at 100-110 (2026-11-27, one core, side by side). It needs no packing: each
// step over the inner dimension loads one column of A (up to 64 rows: four 16-float vectors) and
// broadcasts 6 entries of B wherever they are in memory, so B's layout costs nothing.
#pragma once

#include <Eigen/Core>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// A read-only view of a matrix through its strides: entry (i, j) at data[i * row_stride + j * col_stride].
// A block of a column-major matrix M has row_stride 1 and col_stride M.outerStride(); its transpose the
// two swapped.
template <typename T>
struct StridedView {
  const T* data;
  Eigen::Index rows, cols, row_stride, col_stride;
};

template <typename Derived>
StridedView<typename Derived::Scalar> strided_view(const Eigen::DenseBase<Derived>& m) {
  const auto& d = m.derived();
  return {d.data(), d.rows(), d.cols(), d.rowStride(), d.colStride()};
}

namespace detail {
// The float kernel (broadcast_gemm.cpp): c (m x n, leading dimension ldc) = or += a (m x k, leading
// dimension lda, rows contiguous) times b. Rows of C are taken 64 at a time and columns 6 at a time,
// each tile summed over p = 0, 1, ..., k - 1 in that order: the result does not depend on threads.
void broadcast_sgemm(Eigen::Index m, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda,
                     const StridedView<float>& b, float* c, Eigen::Index ldc, bool accumulate);
// The same for c (+)= a^T b, a (k x m, leading dimension lda) with its columns contiguous: each panel of 64
// columns of a is transposed into a buffer (16 x 16 blocks in registers), then multiplied as above.
void broadcast_sgemm_tn(Eigen::Index m, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda,
                        const StridedView<float>& b, float* c, Eigen::Index ldc, bool accumulate);
// Whether this build has the kernel (compiled with AVX-512F); without it broadcast_gemm uses Eigen.
bool broadcast_sgemm_available();

// The products in double, or without the kernel: c (+)= lhs b by Eigen, b mapped through its strides.
template <typename T, typename DerivedC, typename Lhs>
void eigen_block_product(Eigen::MatrixBase<DerivedC>& c, const Lhs& lhs, const StridedView<T>& b, bool accumulate) {
  const Eigen::Map<const Mat<T>, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>> bm(
      b.data, b.rows, b.cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(b.col_stride, b.row_stride));
  if (accumulate)
    c.noalias() += lhs * bm;
  else
    c.noalias() = lhs * bm;
}
}  // namespace detail

// c = a b (accumulate = false) or c += a b, where c is a column-major matrix or block of one (rows
// contiguous), a likewise, b any strided view. Shapes must agree (checked in debug builds only: a
// kernel's inner loop calls this; the kernels check their inputs' shapes once).
template <typename T, typename DerivedC, typename DerivedA>
void broadcast_gemm(Eigen::MatrixBase<DerivedC>& c, const Eigen::MatrixBase<DerivedA>& a, const StridedView<T>& b,
                    bool accumulate) {
  eigen_assert(a.rows() == c.rows() && a.cols() == b.rows && b.cols == c.cols());
  eigen_assert(a.innerStride() == 1 && c.innerStride() == 1);
  if constexpr (std::is_same_v<T, float>) {
    if (detail::broadcast_sgemm_available()) {
      detail::broadcast_sgemm(c.rows(), c.cols(), a.cols(), a.derived().data(), a.outerStride(), b,
                              c.derived().data(), c.outerStride(), accumulate);
      return;
    }
  }
  detail::eigen_block_product(c, a, b, accumulate);
}

// c = a^T b (accumulate = false) or c += a^T b: the products with a transposed left factor (phi(K)^T V and
// exp(K)^T V in the linear kernels' first pass, the backward's dS K), a a column-major matrix or block of one.
// Eigen's product packs a^T as part of every call (a third of its time in Shen's first pass, perf); this
// transposes a once per 64-column panel and runs broadcast_gemm's tiles. One core, side by side, the same
// operands, three runs on a busy afternoon (2026-11-27), GFLOP/s, Eigen -> this: d x n x d = 64 x 1024 x 64
// 36-46 -> 76-99 (a 4 KiB column stride: Eigen's packing reads across it), 64 x 2048 x 64 52-73 -> 63-99,
// 32 x 1024 x 32 39-59 -> 50-87, 128 x 128 x 128 53-80 -> 66-108.
template <typename T, typename DerivedC, typename DerivedA>
void broadcast_gemm_tn(Eigen::MatrixBase<DerivedC>& c, const Eigen::MatrixBase<DerivedA>& a, const StridedView<T>& b,
                       bool accumulate) {
  eigen_assert(a.cols() == c.rows() && a.rows() == b.rows && b.cols == c.cols());
  eigen_assert(a.innerStride() == 1 && c.innerStride() == 1);
  if constexpr (std::is_same_v<T, float>) {
    if (detail::broadcast_sgemm_available()) {
      detail::broadcast_sgemm_tn(c.rows(), c.cols(), a.rows(), a.derived().data(), a.outerStride(), b,
                                 c.derived().data(), c.outerStride(), accumulate);
      return;
    }
  }
  detail::eigen_block_product(c, a.transpose(), b, accumulate);
}

}  // namespace attnlab
