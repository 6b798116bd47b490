// Rescaling a matrix by a power of two, which in binary floating point is exact: a normal number keeps every
// bit of its significand and only its exponent moves. Measuring scale-invariant quantities (ranks, eigenvalue
// counts, shares, residual ratios) on factors brought to unit scale this way gives the bits the same factors
// give at unit scale, whatever scale they were stored at, with no underflow or overflow in their products.
//
//   const int e = max_abs_exponent(w);        // max |w_ij| in [2^(e-1), 2^e)
//   const Mat<T> unit = scaled_by_power_of_two(w, -e);   // max |unit_ij| in [0.5, 1)
#pragma once

#include <Eigen/Core>
#include <cmath>

namespace attnlab {

// The e with max |a_ij| in [2^(e-1), 2^e) (std::frexp's exponent of the largest magnitude); 0 for an empty or
// all-zero matrix. The entries must be finite.
template <typename Derived>
int max_abs_exponent(const Eigen::MatrixBase<Derived>& a) {
  if (a.size() == 0) return 0;
  const auto largest = a.cwiseAbs().maxCoeff();
  if (!(largest > 0)) return 0;
  int e = 0;
  std::frexp(largest, &e);
  return e;
}

// a * 2^e, entry by entry with std::ldexp: exact while the results are normal numbers (scaling towards unit
// scale, as max_abs_exponent gives, never leaves them; only entries far below the largest can become subnormal).
template <typename Derived>
typename Derived::PlainObject scaled_by_power_of_two(const Eigen::MatrixBase<Derived>& a, int e) {
  return a.unaryExpr([e](typename Derived::Scalar x) { return std::ldexp(x, e); });
}

}  // namespace attnlab
