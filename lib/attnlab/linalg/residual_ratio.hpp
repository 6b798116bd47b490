// LAPACK-style unitless residual ratios and the thresholds they are judged by.
#pragma once

#include <cmath>
#include <limits>

namespace attnlab {

// The default pass threshold for a scaled residual, as LAPACK's test drivers keep it
// (dtest.in: THRESH = 30). A ratio of O(1)-O(10) is what backward-stable arithmetic gives.
inline constexpr double kResidualRatioThreshold = 30.0;

// ||residual|| / (n * ||A|| * eps_T): the residual in units of the rounding error that
// a backward-stable computation in precision T makes on a problem of size n and scale
// ||A||. A zero scale with a zero residual gives 0; with a non-zero residual, infinity.
template <typename T>
double residual_ratio(double residual_norm, double n, double scale_norm) {
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  const double denom = std::max(n, 1.0) * scale_norm * eps;
  if (denom == 0) return residual_norm == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return residual_norm / denom;
}

}  // namespace attnlab
