// Row-wise softmax, numerically stable for logits of any size.
#pragma once

#include <Eigen/Dense>
#include <cmath>

namespace attnlab {

// Replaces each row of `logits` (rows x cols) by its softmax.
// Pass 1: the row maximum. Pass 2: exp(x - max) and the row sum. Pass 3: divide.
// Subtracting the maximum changes nothing mathematically; it only keeps exp()
// from overflowing (every exponent is <= 0 and the largest term is exactly 1, so
// the sum is in [1, cols] and never underflows to zero).
template <typename Derived>
void softmax_rows_inplace(Eigen::MatrixBase<Derived>& logits) {
  using T = typename Derived::Scalar;
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    const T row_max = logits.row(i).maxCoeff();
    T sum = T(0);
    for (Eigen::Index j = 0; j < logits.cols(); ++j) {
      const T e = std::exp(logits(i, j) - row_max);
      logits(i, j) = e;
      sum += e;
    }
    logits.row(i) /= sum;
  }
}

// Returns softmax of each row of `logits`.
template <typename Derived>
typename Derived::PlainObject softmax_rows(const Eigen::MatrixBase<Derived>& logits) {
  typename Derived::PlainObject p = logits;
  softmax_rows_inplace(p);
  return p;
}

}  // namespace attnlab
