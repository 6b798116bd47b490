// W_Q W_K^T and its symmetric/skew split, formed or applied implicitly.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// M = W_Q W_K^T (d x d). Forms the d x d matrix: use only where a check needs it.
template <typename T>
Mat<T> qk_product(const Mat<T>& wq, const Mat<T>& wk) {
  return wq * wk.transpose();
}

// S_w = (M + M^T) / 2 and R_w = (M - M^T) / 2; M = S_w + R_w.
template <typename T>
Mat<T> symmetric_part(const Mat<T>& m) {
  return (m + m.transpose()) / T(2);
}
template <typename T>
Mat<T> skew_part(const Mat<T>& m) {
  return (m - m.transpose()) / T(2);
}

// ||S_w||_F from the factors in O(d d_k^2), without forming S_w:
// ||S||_F^2 = (||M||_F^2 + tr(M M)) / 2 with ||M||_F^2 = tr((W_Q^T W_Q)(W_K^T W_K))
// and tr(M M) = tr((W_K^T W_Q)^2).
template <typename T>
double symmetric_part_norm(const Mat<T>& wq, const Mat<T>& wk) {
  const Mat<double> q = wq.template cast<double>(), k = wk.template cast<double>();
  const Mat<double> kq = k.transpose() * q;
  const double m2 = ((q.transpose() * q) * (k.transpose() * k)).trace();
  const double tr_mm = (kq * kq).trace();
  return std::sqrt(std::max(0.0, 0.5 * (m2 + tr_mm)));
}

// The operator y = S_w x applied in O(d d_k) as (W_Q (W_K^T x) + W_K (W_Q^T x)) / 2,
// in the shape Spectra's solvers expect (rows, cols, perform_op).
template <typename T>
class SymmetricPartOp {
 public:
  using Scalar = T;
  SymmetricPartOp(const Mat<T>& wq, const Mat<T>& wk) : wq_(wq), wk_(wk) {}

  Eigen::Index rows() const { return wq_.rows(); }
  Eigen::Index cols() const { return wq_.rows(); }

  void perform_op(const T* x_in, T* y_out) const {
    Eigen::Map<const Vec<T>> x(x_in, rows());
    Eigen::Map<Vec<T>> y(y_out, rows());
    y.noalias() = wq_ * (wk_.transpose() * x);
    y.noalias() += wk_ * (wq_.transpose() * x);
    y *= T(0.5);
  }

  // Multiply-adds of one perform_op: four d x d_k matrix-vector products.
  double multiply_adds() const { return 4.0 * static_cast<double>(wq_.rows()) * static_cast<double>(wq_.cols()); }

 private:
  const Mat<T>& wq_;
  const Mat<T>& wk_;
};

}  // namespace attnlab
