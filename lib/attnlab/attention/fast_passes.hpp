// The three passes of the fast kernels (linear elu + 1, Linformer, Nystrom) over head stacks: GEMM-shaped
// work in parallel over (head, block) pairs. Each method's fast kernel lives beside its reference
// (linear_attention.cpp, linformer.cpp, nystrom.cpp) and is checked against it in verify/.
#pragma once

#include <Eigen/Dense>
#include <utility>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/row_blocks.hpp"
#include "attnlab/core/softmax.hpp"
#include "attnlab/linalg/broadcast_gemm.hpp"

namespace attnlab {

// Rows per block of the fast kernels' parallel passes (keys summarised, queries answered).
inline constexpr Eigen::Index kFastRowBlock = 512;

// Every fast kernel runs in three passes: (1) each block of keys is summarised (a d x d_v,
// k x d or m x d_v matrix) in parallel over (head, key block); (2) each head's summaries are
// added in block order; (3) each block of queries is answered from its head's summary, in
// parallel over (head, query block). The blocks are fixed (RowBlocks), so outputs are the same
// for any thread count, and one long head keeps every thread busy as many short ones do.
// Shapes are checked as the references check them (std::invalid_argument naming the value).
namespace detail {

// Pass 1: summarise(h, j0, b) for every head h < count and key block [j0, j0 + b), in parallel;
// part[h * blocks + j] holds block j of head h.
template <typename T, typename Summarise>
std::vector<Mat<T>> summarise_key_blocks(Eigen::Index count, const RowBlocks& blocks, Summarise summarise) {
  std::vector<Mat<T>> part(static_cast<std::size_t>(count * blocks.count()));
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index t = 0; t < count * blocks.count(); ++t) {
    const Eigen::Index j = t % blocks.count();
    part[static_cast<std::size_t>(t)] = summarise(t / blocks.count(), blocks.begin(j), blocks.length(j));
  }
  return part;
}

// Pass 2 of the methods whose summary is a plain sum: each head's blocks added in block order. Takes the
// parts (their first block becomes the sum, moved, not copied: with one block per head, no work at all).
template <typename T>
std::vector<Mat<T>> add_blocks(std::vector<Mat<T>>&& part, Eigen::Index count, Eigen::Index blocks) {
  std::vector<Mat<T>> sum(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h) {
    Mat<T> s = std::move(part[static_cast<std::size_t>(h * blocks)]);
    for (Eigen::Index j = 1; j < blocks; ++j) s += part[static_cast<std::size_t>(h * blocks + j)];
    sum[static_cast<std::size_t>(h)] = std::move(s);
  }
  return sum;
}

// Pass 2 of the methods whose summaries are softmax sums relative to a block maximum (Shen's linear attention,
// Nystrom): each part is (r, d_v + 2) = [unnormalised products, each row's block maximum, each row's block
// sum]; per head, the blocks merged in block order (merge_softmax_partials, core/softmax.hpp): (r, d_v).
template <typename T>
std::vector<Mat<T>> merge_softmax_blocks(const std::vector<Mat<T>>& part, Eigen::Index count, Eigen::Index blocks) {
  std::vector<Mat<T>> merged(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < count; ++h)
    merged[static_cast<std::size_t>(h)] = merge_softmax_partials(&part[static_cast<std::size_t>(h * blocks)], blocks);
  return merged;
}

// Pass 3: answer(h, i0, b) for every head and query block, in parallel; each writes its own rows.
template <typename Answer>
void answer_query_blocks(Eigen::Index count, const RowBlocks& blocks, Answer answer) {
#pragma omp parallel for schedule(dynamic)
  for (Eigen::Index t = 0; t < count * blocks.count(); ++t) {
    const Eigen::Index i = t % blocks.count();
    answer(t / blocks.count(), blocks.begin(i), blocks.length(i));
  }
}

// Pass 3 of Linformer and Nystrom: out = softmax(Q_b K^T scale) V for a block of queries q_b (b, d) against a
// few keys held whole (Linformer's k projected keys, Nystrom's m landmarks): keys (r, d), values (r, d_v),
// out (b, d_v). Queries down the rows of the scores (b, r), as in the fused exact kernel: both products are
// broadcast_gemm's (keys read transposed in place), the softmax vector arithmetic over queries. The scale
// goes on the b x d queries rather than the b x r scores.
template <typename T, typename DerivedQ, typename DerivedK, typename DerivedV, typename DerivedOut>
void softmax_rows_times(const Eigen::MatrixBase<DerivedQ>& q_b, T scale, const Eigen::MatrixBase<DerivedK>& keys,
                        const Eigen::MatrixBase<DerivedV>& values, Eigen::MatrixBase<DerivedOut>&& out) {
  const Mat<T> q_s = q_b * scale;
  Mat<T> s(q_b.rows(), keys.rows());
  broadcast_gemm(s, q_s, strided_view(keys.transpose()), false);
  const Vec<T> sums = exp_rows_inplace(s);
  broadcast_gemm(out, s, strided_view(values), false);  // straight into the output, then divided in place
  out.array().colwise() *= sums.cwiseInverse().array();
}

}  // namespace detail

}  // namespace attnlab
