// A thin SVD checked against its own backward error: Eigen's BDCSVD, and JacobiSVD in its place wherever
// BDCSVD's answer fails the check.
//
// Why: Eigen 3.4.0's BDCSVD (Debian 12's libeigen3-dev) returns wrong singular values for some matrices wider
// than its 16-column switch to Jacobi whose nonzero singular values repeat and whose others are exactly zero.
// For 40 x 20 matrices 3 U V^T of rank 10 (U, V Haar-random, orthonormal), 66 of 200 draws came back with
// sigma_10 between 1e-3 and 4e-2 instead of 3: U S V^T is then not A. A backward-stable SVD of A satisfies
//   ||A - U S V^T||_F / (max(m, n) ||A||_F eps) and ||U^T U - I||_F, ||V^T V - I||_F / (max(m, n) eps)
// of order one (LAPACK's dbdt01 and dort01), so a ratio beyond kResidualRatioThreshold flags a wrong answer;
// JacobiSVD (one-sided Jacobi after a pivoted QR) is then used. Where BDCSVD passes, its answer is returned
// as it was, bit for bit.
//
//   const CheckedSvd<double> svd = checked_svd<double>(x);  // svd.u (m x k), svd.s (k), svd.v (n x k)
#pragma once

#include "attnlab/core/matrix.hpp"

namespace attnlab {

template <typename T>
struct CheckedSvd {
  Mat<T> u;                 // m x k, k = min(m, n), orthonormal columns
  Vec<T> s;                 // k singular values, largest first
  Mat<T> v;                 // n x k, orthonormal columns
  double bdcsvd_ratio = 0;  // the worst of the three ratios above for BDCSVD's answer
  bool fallback = false;    // BDCSVD failed the check: u, s, v are JacobiSVD's
};

// The thin SVD of `a` (any shape; an empty `a` gives empty factors).
template <typename T>
CheckedSvd<T> checked_svd(const Mat<T>& a);

// The ratio checked_svd judges a decomposition by: the worst of ||A - U S V^T||_F / (max(m, n) ||A||_F eps),
// ||U^T U - I||_F / (max(m, n) eps) and ||V^T V - I||_F / (max(m, n) eps).
template <typename T>
double svd_check_ratio(const Mat<T>& a, const Mat<T>& u, const Vec<T>& s, const Mat<T>& v);

// The singular values of `a` alone, largest first: BDCSVD's where they pass a check that every SVD's values meet,
//   |sum_i sigma_i^2 - ||A||_F^2| / (max(m, n) ||A||_F^2 eps) <= kResidualRatioThreshold
// (a backward-stable SVD returns the exact values of some A + E with ||E|| of order max(m, n) eps ||A||, so the
// ratio is of order one), JacobiSVD's where they fail it. Why: the defect above also gives wrong values when BDCSVD
// computes no U or V; on the 40 x 20 matrices above, a third of the draws came back wrong, a tenth of them with the
// wrong numerical rank, and this check flagged every wrong draw and no right one. Where BDCSVD passes, its values
// are returned as they were, bit for bit; a non-finite `a` gets BDCSVD's values unchecked, as before.
template <typename T>
Vec<T> checked_singular_values(const Mat<T>& a);

// The ratio checked_singular_values judges values by (above); 0 for an empty or zero `a` with zero values.
template <typename T>
double singular_value_energy_ratio(const Mat<T>& a, const Vec<T>& s);

}  // namespace attnlab
