// Multi-head attention parameters: counts for any (d_e, d_k, d_v, h), bias by
// augmentation, zero-padded growth of W_Q, W_K (seed 004) and the head split of a
// d_model x d_model projection (seed 001).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

struct AttentionShape {
  std::int64_t d_e = 0, d_k = 0, d_v = 0, h = 1;
  bool bias = false;  // one extra row per weight matrix (seed 004, Remark 1.2)
};

// h heads exist only if every head gets whole columns: h >= 1 divides d_k and d_v.
bool head_count_allowed(const AttentionShape& shape);

// Parameters counted matrix by matrix: per head W_Q_i, W_K_i ((d_e [+1]) x d_k/h) and
// W_V_i ((d_e [+1]) x d_v/h), then W_O ((d_v [+1]) x d_e). Throws std::invalid_argument
// naming the shape when the head count is not allowed.
std::int64_t parameter_count(const AttentionShape& shape);

// Remark 1.1's expression (2 d_e d_k/h + d_e d_v/h) h + d_v d_e, evaluated in real
// arithmetic exactly as written (no bias).
double remark11_count(const AttentionShape& shape);

// [X | 1] (rows x (cols + 1)).
template <typename T>
Mat<T> append_ones_column(const Mat<T>& x) {
  Mat<T> out(x.rows(), x.cols() + 1);
  out << x, Mat<T>::Ones(x.rows(), 1);
  return out;
}

// [W; b^T] ((rows + 1) x cols).
template <typename T>
Mat<T> append_bias_row(const Mat<T>& w, const Vec<T>& b) {
  Mat<T> out(w.rows() + 1, w.cols());
  out << w, b.transpose();
  return out;
}

// [W | 0_p]: W (d x k) grown by p zero columns, as W'_Q and dW'_Q of Remark 2.2.
template <typename T>
Mat<T> zero_pad_columns(const Mat<T>& w, Eigen::Index p) {
  Mat<T> out = Mat<T>::Zero(w.rows(), w.cols() + p);
  out.leftCols(w.cols()) = w;
  return out;
}

// [0_k | W_new]: the new columns placed after k zero columns, as W_Q^new of Remark 2.2.
template <typename T>
Mat<T> new_columns_block(const Mat<T>& w_new, Eigen::Index k) {
  Mat<T> out = Mat<T>::Zero(w_new.rows(), k + w_new.cols());
  out.rightCols(w_new.cols()) = w_new;
  return out;
}

// nn.Linear(d_in, d_out): Y = X W^T + 1 b^T with W d_out x d_in, through Eigen's GEMM.
template <typename T>
Mat<T> linear_forward(const Mat<T>& x, const Mat<T>& w, const Vec<T>& b) {
  Mat<T> y = x * w.transpose();
  y.rowwise() += b.transpose();
  return y;
}

// The same map with each output a plain left-to-right dot product then the bias: the
// summation order of y_tj depends only on (x_t, w_j), never on the matrix shapes.
template <typename T>
Mat<T> linear_forward_reference(const Mat<T>& x, const Mat<T>& w, const Vec<T>& b) {
  Mat<T> y(x.rows(), w.rows());
  for (Eigen::Index t = 0; t < x.rows(); ++t)
    for (Eigen::Index j = 0; j < w.rows(); ++j) {
      T acc = 0;
      for (Eigen::Index c = 0; c < x.cols(); ++c) acc += x(t, c) * w(j, c);
      y(t, j) = acc + b(j);
    }
  return y;
}

// The rows of an (h * d_head) x d_in weight (or entries of a bias) that head i owns.
template <typename T>
Mat<T> head_rows(const Mat<T>& w, Eigen::Index h, Eigen::Index i) {
  const Eigen::Index d_head = w.rows() / h;
  return w.middleRows(i * d_head, d_head);
}
template <typename T>
Vec<T> head_rows(const Vec<T>& b, Eigen::Index h, Eigen::Index i) {
  const Eigen::Index d_head = b.size() / h;
  return b.segment(i * d_head, d_head);
}

}  // namespace attnlab
