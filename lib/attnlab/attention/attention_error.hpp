// Error metrics of an approximate attention against the double-precision reference.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <stdexcept>

namespace attnlab {

// ||approx - reference||_F / ||reference||_F, computed in double. A zero reference gives
// the absolute error, so the metric is defined for every input.
template <typename DA, typename DR>
double relative_frobenius_error(const Eigen::MatrixBase<DA>& approx, const Eigen::MatrixBase<DR>& reference) {
  if (approx.rows() != reference.rows() || approx.cols() != reference.cols())
    throw std::invalid_argument("relative_frobenius_error: shapes differ");
  const Eigen::MatrixXd a = approx.template cast<double>(), r = reference.template cast<double>();
  const double diff = (a - r).norm(), scale = r.norm();
  return scale > 0 ? diff / scale : diff;
}

// max_ij |approx_ij - reference_ij|: the metric for attention matrices, whose entries are
// probabilities on a common scale.
template <typename DA, typename DR>
double max_abs_error(const Eigen::MatrixBase<DA>& approx, const Eigen::MatrixBase<DR>& reference) {
  if (approx.rows() != reference.rows() || approx.cols() != reference.cols())
    throw std::invalid_argument("max_abs_error: shapes differ");
  if (approx.size() == 0) return 0.0;
  return (approx.template cast<double>() - reference.template cast<double>()).cwiseAbs().maxCoeff();
}

// The relative error of uniform attention, the trivial baseline every approximation is compared with:
// each output row the mean of V's rows (attention weights 1/n everywhere, O(n d), no scores at all), against
// `reference` (n_q x d_v). relative_frobenius_error(mean of V replicated, reference). Throws
// std::invalid_argument for an empty V or a reference whose width is not V's.
//   uniform_attention_error(v, softmax_attention(q, k, v))
template <typename DV, typename DR>
double uniform_attention_error(const Eigen::MatrixBase<DV>& v, const Eigen::MatrixBase<DR>& reference) {
  if (v.rows() == 0 || v.cols() != reference.cols())
    throw std::invalid_argument("uniform_attention_error: V is empty or its width differs from the reference's");
  const Eigen::MatrixXd mean = v.template cast<double>().colwise().mean();
  return relative_frobenius_error(mean.replicate(reference.rows(), 1), reference);
}

}  // namespace attnlab
