// Numerical rank from singular values, with the tolerance LAPACK and NumPy use.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <limits>

#include "attnlab/linalg/checked_svd.hpp"
#include "attnlab/linalg/decompositions.hpp"

namespace attnlab {

// Singular values below max(rows, cols) * eps * sigma_max are indistinguishable from
// rounding noise of a backward-stable SVD (the default of numpy.linalg.matrix_rank and
// of LAPACK's xGELSS with RCOND = -1).
template <typename Scalar>
double rank_tolerance(const Eigen::Matrix<Scalar, Eigen::Dynamic, 1>& singular_values, Eigen::Index rows,
                      Eigen::Index cols) {
  const double smax = singular_values.size() ? static_cast<double>(singular_values.maxCoeff()) : 0.0;
  return static_cast<double>(std::max(rows, cols)) * static_cast<double>(std::numeric_limits<Scalar>::epsilon()) * smax;
}

// Number of singular values above `tolerance`; a negative tolerance means the default above.
template <typename Derived>
Eigen::Index numerical_rank(const Eigen::MatrixBase<Derived>& a, double tolerance = -1) {
  using Scalar = typename Derived::Scalar;
  if (a.size() == 0) return 0;
  // Checked values: Eigen's BDCSVD returns wrong ones for some matrices, and a wrong rank with them (checked_svd.hpp).
  const Eigen::Matrix<Scalar, Eigen::Dynamic, 1> s =
      checked_singular_values<Scalar>(Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>(a.eval()));
  const double tol = tolerance < 0 ? rank_tolerance<Scalar>(s, a.rows(), a.cols()) : tolerance;
  Eigen::Index r = 0;
  for (Eigen::Index i = 0; i < s.size(); ++i)
    if (static_cast<double>(s(i)) > tol) ++r;
  return r;
}

}  // namespace attnlab
