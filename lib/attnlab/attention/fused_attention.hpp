// Fast exact softmax attention, fused per block of queries: Q K^T, vectorised exp and the product
// with V in one pass over each block, never the n x n matrix; with a key block, the streaming form.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Queries per block of the fused kernels: 64 x n_k float scores stay in L2 up to n_k = 4096,
// and 64 columns keep Eigen's GEMM micro-kernel busy.
inline constexpr Eigen::Index kFusedQueryBlock = 64;
// Keys per block of the streaming form: 256 x 64 scores (64 KiB in float) stay in L1/L2.
inline constexpr Eigen::Index kFusedKeyBlock = 256;

// softmax(Q K^T / sqrt(d)) V, the fast counterpart of softmax_attention() (same result up to
// rounding). For each block of kFusedQueryBlock queries: S = K Q_b^T / sqrt(d) by Eigen's GEMM
// (keys x queries, so each query's scores are contiguous), exp(S - column max) with Eigen's
// vectorised exp, the column sums, then S^T V scaled by 1 / sum. key_block = 0 takes all keys
// at once (n_k x 64 scores per thread); key_block > 0 streams keys in blocks with a running
// maximum and normaliser (the online softmax of streaming_attention()), so scores take
// key_block x 64 whatever n_k. Throws std::invalid_argument on bad shapes or key_block < 0.
template <typename T>
Mat<T> fused_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block = 0);

// Every head of a (batch, heads, n, d) stack, in parallel (OpenMP) over (head, query block)
// pairs: all threads stay busy for one long head as for many short ones, and each block is
// computed identically whatever the thread count.
template <typename T>
HeadStack<T> fused_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                             Eigen::Index key_block = 0);

}  // namespace attnlab
