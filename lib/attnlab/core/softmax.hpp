// Softmax and its backward, numerically stable for logits of any size: the library's one definition.
// By columns (the layout every kernel keeps probabilities in: one query's weights contiguous), by rows
// (the column softmax of the transpose, bit for bit), and the pieces of the online softmax (block by
// block, and the merge of partial results) that the fast kernels are built from. Reference kernels,
// fast kernels and trainable methods all call these; none writes its own.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace attnlab {

// x = exp(x - shift) in place, by Eigen's vectorised exp; returns the sum of the new entries. With
// shift = max(x) ("subtract the max, then exp") every exponent is <= 0 and the largest term is exactly
// 1, so the sum is >= 1.
template <typename Derived>
typename Derived::Scalar exp_shifted_inplace(Eigen::MatrixBase<Derived>& x, typename Derived::Scalar shift) {
  x = (x.array() - shift).exp().matrix();
  return x.sum();
}
template <typename Derived>
typename Derived::Scalar exp_shifted_inplace(Eigen::MatrixBase<Derived>&& x, typename Derived::Scalar shift) {
  return exp_shifted_inplace(x, shift);
}

// Replaces every column of `s` (keys down, queries across: column i holds query i's logits) by its
// softmax. Per column: pass 1 the maximum; pass 2 exp(x - max) and the sum; pass 3 multiply by 1 / sum.
// Subtracting the maximum changes nothing mathematically (it cancels between numerator and
// denominator); it only keeps exp() from overflowing: every exponent is <= 0 and the largest term is
// exactly 1, so the sum is in [1, rows] and never underflows to zero. One reciprocal per column, then
// products: a division per entry costs more than the product it replaces. Column-major storage makes a
// column contiguous, so each pass walks memory in order and Eigen vectorises the exp.
template <typename Derived>
void softmax_cols_inplace(Eigen::MatrixBase<Derived>& s) {
  using T = typename Derived::Scalar;
  for (Eigen::Index i = 0; i < s.cols(); ++i) {
    auto col = s.col(i);
    const T sum = exp_shifted_inplace(col, col.maxCoeff());
    col *= T(1) / sum;
  }
}
template <typename Derived>
void softmax_cols_inplace(Eigen::MatrixBase<Derived>&& s) {
  softmax_cols_inplace(s);
}

// The column softmax's backward in place: given p = softmax(s) column by column and dp = dL/dp, turns dp
// into dL/ds = p o (dp - <p, dp>) column by column (the Jacobian diag(p) - p p^T applied to dp). The
// maximum the forward subtracted has no gradient: the softmax is invariant to a shift of its column.
template <typename DerivedP, typename DerivedD>
void softmax_cols_backward_inplace(const Eigen::MatrixBase<DerivedP>& p, Eigen::MatrixBase<DerivedD>& dp) {
  using T = typename DerivedD::Scalar;
  for (Eigen::Index i = 0; i < p.cols(); ++i) {
    auto d = dp.col(i);
    const T mean = p.col(i).dot(d);
    d.array() = p.col(i).array() * (d.array() - mean);
  }
}

// Replaces each row of `logits` (rows x cols) by its softmax: the column softmax of the transpose, so a
// row softmax and a column softmax of the same numbers agree bit for bit (the copy costs less than
// walking a column-major row with stride).
template <typename Derived>
void softmax_rows_inplace(Eigen::MatrixBase<Derived>& logits) {
  Eigen::Matrix<typename Derived::Scalar, Eigen::Dynamic, Eigen::Dynamic> t = logits.transpose();
  softmax_cols_inplace(t);
  logits = t.transpose();
}

// Returns softmax of each row of `logits`.
template <typename Derived>
typename Derived::PlainObject softmax_rows(const Eigen::MatrixBase<Derived>& logits) {
  typename Derived::PlainObject p = logits;
  softmax_rows_inplace(p);
  return p;
}

// The row softmax's backward: dL/ds from p = softmax(s) row by row and dp = dL/dp, row i being
// p_i o (dp_i - <p_i, dp_i>): the column backward of the transposes.
template <typename DerivedP, typename DerivedD>
typename DerivedD::PlainObject softmax_rows_backward(const Eigen::MatrixBase<DerivedP>& p,
                                                     const Eigen::MatrixBase<DerivedD>& dp) {
  using M = Eigen::Matrix<typename DerivedD::Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  const M pt = p.transpose();
  M dt = dp.transpose();
  softmax_cols_backward_inplace(pt, dt);
  return dt.transpose();
}

// ---- The online softmax's pieces (unnormalised exponentials, running maxima, merges) -------------------

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

// The merge of `count` partial softmax results over disjoint blocks of keys, each (r, c + 2) =
// [unnormalised products, each row's block maximum m_j, each row's block sum l_j] (products and sums
// taken relative to m_j): the normalised result (r, c). Every block is rescaled to each row's overall
// maximum M by exp(m_j - M) <= 1 (exactly 1 for the block holding it: nothing overflows, the online
// softmax's rescaling), the blocks added in order, then divided by the merged sums (>= 1).
template <typename T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> merge_softmax_partials(
    const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>* parts, Eigen::Index count) {
  using M = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  const Eigen::Index c = parts[0].cols() - 2;
  V row_max = parts[0].col(c);
  for (Eigen::Index j = 1; j < count; ++j) row_max = row_max.cwiseMax(parts[j].col(c));
  M sum = M::Zero(parts[0].rows(), c);
  V sums = V::Zero(parts[0].rows());
  for (Eigen::Index j = 0; j < count; ++j) {
    const M& p = parts[j];
    const V factor = (p.col(c) - row_max).array().exp().matrix();
    sum.noalias() += factor.asDiagonal() * p.leftCols(c);
    sums += factor.cwiseProduct(p.col(c + 1));
  }
  M merged;
  merged.noalias() = sums.cwiseInverse().asDiagonal() * sum;
  return merged;
}

}  // namespace attnlab
