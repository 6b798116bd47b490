// Moore-Penrose pseudoinverses three ways (SVD with a cutoff, complete orthogonal
// decomposition, normal equations) and the four Penrose conditions that judge them.
#pragma once

#include <Eigen/Dense>
#include <algorithm>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// A pseudoinverse and the numerical rank it was computed with.
template <typename T>
struct Pseudoinverse {
  Mat<T> pinv;            // cols x rows
  Eigen::Index rank = 0;  // singular values (or R's diagonal) kept above the cutoff
  double cutoff = 0;      // the absolute cutoff used
  double sigma_max = 0;       // largest singular value (SVD only)
  double sigma_min_kept = 0;  // smallest singular value above the cutoff (SVD only): kappa = sigma_max / this
};

// A^+ = V diag(1/s_i for s_i > cutoff) U^T from the checked thin SVD of A (m x n; checked_svd.hpp). A negative
// `cutoff` means the default of rank_tolerance: max(m, n) * eps * s_max. Example:
//   const auto p = pinv_svd<double>(x);   // p.pinv is n x m, p.rank = numerical rank
template <typename T>
Pseudoinverse<T> pinv_svd(const Mat<T>& a, double cutoff = -1);

// The same with a cutoff relative to the largest singular value: rcond * s_max (as
// numpy.linalg.pinv's rcond). A negative `rcond` means max(m, n) * eps, the default above.
template <typename T>
Pseudoinverse<T> pinv_svd_relative(const Mat<T>& a, double rcond);

// A^+ from Eigen's CompleteOrthogonalDecomposition (rank-revealing QR, then an RZ step);
// Eigen's own threshold decides the rank.
template <typename T>
Pseudoinverse<T> pinv_cod(const Mat<T>& a);

// The formula (A^T A)^{-1} A^T, solved by partial-pivoting LU of A^T A as written.
// It is the Moore-Penrose inverse only when A has full column rank (m >= n, rank n);
// `valid` reports that check (numerical rank of A equals n). When it is false the
// result is whatever LU makes of a singular A^T A and may hold huge or non-finite entries.
template <typename T>
struct NormalEquationsPinv {
  Mat<T> pinv;
  bool valid = false;
  Eigen::Index rank = 0;  // numerical rank of A
};
template <typename T>
NormalEquationsPinv<T> pinv_normal_equations(const Mat<T>& a);

// Full column rank in the numerical sense: rows >= cols and rank(A) = cols at the
// default rank tolerance. The condition under which (A^T A)^{-1} A^T is A^+.
template <typename T>
bool has_full_column_rank(const Mat<T>& a);

// Frobenius norms of the four Penrose residuals of a candidate P for A:
// A P A - A, P A P - P, (A P)^T - A P, (P A)^T - P A. All four are zero iff P = A^+.
// The relative forms divide each by its natural scale (||A||, ||P||, ||AP||, ||PA||);
// a zero scale leaves the absolute value.
struct PenroseResiduals {
  double apa = 0, pap = 0, ap_sym = 0, pa_sym = 0;
  double a_norm = 0, p_norm = 0, ap_norm = 0, pa_norm = 0;

  double apa_relative() const { return relative(apa, a_norm); }
  double pap_relative() const { return relative(pap, p_norm); }
  double ap_sym_relative() const { return relative(ap_sym, ap_norm); }
  double pa_sym_relative() const { return relative(pa_sym, pa_norm); }
  double max_relative() const {
    return std::max(std::max(apa_relative(), pap_relative()), std::max(ap_sym_relative(), pa_sym_relative()));
  }

 private:
  static double relative(double num, double den) { return den > 0 ? num / den : num; }
};
template <typename T>
PenroseResiduals penrose_residuals(const Mat<T>& a, const Mat<T>& p);

}  // namespace attnlab
