// Softmax, numerically stable for logits of any size: by rows, by columns, and block by block (online).
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace attnlab {

// Replaces each row of `logits` (rows x cols) by its softmax.
// Pass 1: the row maximum. Pass 2: exp(x - max) and the row sum. Pass 3: divide.
// Subtracting the maximum changes nothing mathematically; it only keeps exp()
// from overflowing (every exponent is <= 0 and the largest term is exactly 1, so
// the sum is in [1, cols] and never underflows to zero).
template <typename Derived>
void softmax_rows_inplace(Eigen::MatrixBase<Derived>& logits) {
  using T = typename Derived::Scalar;
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    const T row_max = logits.row(i).maxCoeff();
    T sum = T(0);
    for (Eigen::Index j = 0; j < logits.cols(); ++j) {
      const T e = std::exp(logits(i, j) - row_max);
      logits(i, j) = e;
      sum += e;
    }
    logits.row(i) /= sum;
  }
}

// x = exp(x - shift) in place, by Eigen's vectorised exp; returns the sum of the new entries. With
// shift = max(x) ("subtract the max, then exp") every exponent is <= 0 and the largest term is exactly
// 1, so the sum is >= 1. The column softmaxes of the reference kernels are written with it (the row
// softmax above stays scalar: its std::exp and Eigen's vectorised exp may differ in the last bit).
template <typename Derived>
typename Derived::Scalar exp_shifted_inplace(Eigen::MatrixBase<Derived>& x, typename Derived::Scalar shift) {
  x = (x.array() - shift).exp().matrix();
  return x.sum();
}

// e = exp(src - row max) for each row of src (queries down the rows: the layout of online_softmax_block_rows,
// column by column so each step is a vector operation down a contiguous column), e of src's shape, and e may
// be src itself; returns the row sums, each >= 1 (the maximal term is exactly exp(0)), and the row maxima in
// *row_max if given. src has >= 1 column. Written from src into another matrix, it saves the pass of copying
// src first (the linear kernels' queries).
template <typename DerivedE, typename DerivedS>
Eigen::Matrix<typename DerivedS::Scalar, Eigen::Dynamic, 1> exp_rows(
    Eigen::MatrixBase<DerivedE>& e, const Eigen::MatrixBase<DerivedS>& src,
    Eigen::Matrix<typename DerivedS::Scalar, Eigen::Dynamic, 1>* row_max = nullptr) {
  Eigen::Matrix<typename DerivedS::Scalar, Eigen::Dynamic, 1> m = src.col(0);
  for (Eigen::Index j = 1; j < src.cols(); ++j) m = m.cwiseMax(src.col(j));
  for (Eigen::Index j = 0; j < src.cols(); ++j) e.col(j) = (src.col(j) - m).array().exp().matrix();
  if (row_max != nullptr) *row_max = m;
  m = e.col(0);  // from here the row sums, added in column order
  for (Eigen::Index j = 1; j < src.cols(); ++j) m += e.col(j);
  return m;
}

// The same in place: s = exp(s - row max).
template <typename Derived>
Eigen::Matrix<typename Derived::Scalar, Eigen::Dynamic, 1> exp_rows_inplace(
    Eigen::MatrixBase<Derived>& s, Eigen::Matrix<typename Derived::Scalar, Eigen::Dynamic, 1>* row_max = nullptr) {
  return exp_rows(s, s, row_max);
}

// One block of keys of the online softmax (Milakov & Gimelshein 2018; FlashAttention), for every
// query: s holds the block's logits, keys down the columns (one column per query); m and l are each
// query's running maximum and normaliser (-inf and 0 before the first block). Per query: the new
// maximum m' = max(m, max s), correction = exp(m - m') (the factor for what was summed relative to
// m; exp(-inf) = 0 on the first block), s = exp(s - m') (never overflows), l = l correction + sum s.
template <typename DerivedS, typename DerivedV>
void online_softmax_block(Eigen::MatrixBase<DerivedS>& s, Eigen::MatrixBase<DerivedV>& m,
                          Eigen::MatrixBase<DerivedV>& l, Eigen::MatrixBase<DerivedV>& correction) {
  using T = typename DerivedS::Scalar;
  for (Eigen::Index i = 0; i < s.cols(); ++i) {
    auto col = s.col(i);
    const T m_new = std::max(m(i), col.maxCoeff());
    correction(i) = std::exp(m(i) - m_new);
    const T sum = exp_shifted_inplace(col, m_new);
    l(i) = l(i) * correction(i) + sum;
    m(i) = m_new;
  }
}

// The same block step with the scores held one row per query (queries down the rows, keys across the
// columns: the fused kernel's layout, in which a column of queries is contiguous, so each step below is
// a vector operation over queries, with no reduction across vector lanes). Per query i: m' = max(m,
// max_j s_ij), correction = exp(m - m') (0 on the first block, m = -inf), s_ij = exp(s_ij - m') (never
// overflows), l = l correction + sum_j s_ij.
template <typename DerivedS, typename DerivedV>
void online_softmax_block_rows(Eigen::MatrixBase<DerivedS>& s, Eigen::MatrixBase<DerivedV>& m,
                               Eigen::MatrixBase<DerivedV>& l, Eigen::MatrixBase<DerivedV>& correction) {
  // Column by column: each step is a vector operation down a contiguous column, which Eigen vectorises
  // (exp() over s.colwise() - m fell back to scalar expf for every entry: 59% of the kernel's time, perf).
  correction = m;  // the new maximum m', for now
  for (Eigen::Index j = 0; j < s.cols(); ++j) correction = correction.cwiseMax(s.col(j));
  for (Eigen::Index j = 0; j < s.cols(); ++j) s.col(j) = (s.col(j) - correction).array().exp().matrix();
  m.swap(correction.derived());  // m = m'; correction holds the old maximum
  correction = (correction - m).array().exp().matrix();
  l.array() *= correction.array();
  for (Eigen::Index j = 0; j < s.cols(); ++j) l += s.col(j);
}

// Returns softmax of each row of `logits`.
template <typename Derived>
typename Derived::PlainObject softmax_rows(const Eigen::MatrixBase<Derived>& logits) {
  typename Derived::PlainObject p = logits;
  softmax_rows_inplace(p);
  return p;
}

}  // namespace attnlab
