// The Moore-Penrose pseudoinverse by SVD with an explicit cutoff, and the Penrose conditions.
#pragma once

#include <Eigen/Dense>

#include "attnlab/qk_split.hpp"

namespace attnlab {

template <typename T>
struct SvdPinv {
  Mat<T> z;                  // cols x rows: the pseudoinverse
  double cutoff = 0;         // singular values <= cutoff were treated as zero
  Eigen::Index rank = 0;     // singular values kept
  double sigma_max = 0, sigma_min_kept = 0;
};

// Pseudoinverse V diag(1/s_i) U^T over the singular values s_i > cutoff, where
// cutoff = rcond * s_max. rcond < 0 means max(rows, cols) * eps_T, the tolerance of
// numpy.linalg.matrix_rank and of numerical_rank.hpp: below it a singular value is
// indistinguishable from rounding noise, and inverting it would amplify that noise.
// Example: auto p = svd_pinv(a); p.z, p.cutoff. An empty matrix gives an empty pseudoinverse.
template <typename T>
SvdPinv<T> svd_pinv(const Mat<T>& a, double rcond = -1);

// The four Penrose conditions, each as a unitless relative residual in Frobenius norm:
// ||AZA - A|| / ||A||, ||ZAZ - Z|| / ||Z||, ||AZ - (AZ)^T|| / ||AZ||, ||ZA - (ZA)^T|| / ||ZA||.
// Z is the Moore-Penrose pseudoinverse exactly when all four vanish.
struct PenroseResiduals {
  double azA = 0, zaz = 0, az_sym = 0, za_sym = 0;
  double max() const { return std::max(std::max(azA, zaz), std::max(az_sym, za_sym)); }
};

template <typename T>
PenroseResiduals penrose_residuals(const Mat<T>& a, const Mat<T>& z);

}  // namespace attnlab
