// Attention scores three ways: factored (XW_Q)(XW_K)^T, merged X M X^T, and through S_w's eigenpairs.
#pragma once

#include <Eigen/Dense>

#include "attnlab/qk/qk_split.hpp"
#include "attnlab/core/softmax.hpp"
#include "attnlab/qk/sym_eigen.hpp"

namespace attnlab {

// X: n x d, W_Q, W_K: d x d_k. Scores (X W_Q)(X W_K)^T, n x n: standard attention.
template <typename T>
Mat<T> factored_scores(const Mat<T>& x, const Mat<T>& wq, const Mat<T>& wk) {
  const Mat<T> q = x * wq, k = x * wk;
  return q * k.transpose();
}

// X M X^T for a formed d x d matrix M (W_Q W_K^T or S_w).
template <typename T>
Mat<T> merged_scores(const Mat<T>& x, const Mat<T>& m) {
  const Mat<T> xm = x * m;
  return xm * x.transpose();
}

// The reparameterization of seed 000: X S_w X^T = (X U) diag(lambda) (X U)^T with the
// given eigenpairs (all nonzero ones reproduce X S_w X^T; fewer give an approximation).
template <typename T>
Mat<T> reparameterized_scores(const Mat<T>& x, const EigenPairs<T>& pairs) {
  const Mat<T> z = x * pairs.vectors;  // n x r
  return (z * pairs.values.asDiagonal()) * z.transpose();
}

// softmax(scale * scores) V, row-wise softmax.
template <typename T>
Mat<T> attention_from_scores(Mat<T> scores, const Mat<T>& v, T scale) {
  scores *= scale;
  softmax_rows_inplace(scores);
  return scores * v;
}

// Multiply-adds of what the functions above do, for the full attention output
// softmax(scores / sqrt(d_k)) (X W_V) with X n x d and W_V d x d_v:
//  factored:        X W_Q, X W_K, X W_V (3 n d d_k-ish) + Q K^T (n^2 d_k) + P V (n^2 d_v)
//  reparameterized: X U (n d r) + (XU) diag (n r) + scores (n^2 r) + X W_V (n d d_v) + P V (n^2 d_v)
// The softmax's n^2 exponentials are reported separately.
double factored_attention_multiply_adds(double n, double d, double dk, double dv);
double reparameterized_attention_multiply_adds(double n, double d, double r, double dv);

}  // namespace attnlab
