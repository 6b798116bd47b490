// Fast exact softmax attention, fused per block of queries: Q K^T, vectorised exp and the product
// with V in one pass over each block, never the n x n matrix; with a key block, the streaming form.
// Beside it its backward (issue 17), FlashAttention-2 style: P recomputed block by block from the
// forward's row statistics, so neither direction holds an n x n matrix.
#pragma once

#include <Eigen/Dense>
#include <vector>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Queries per block of the fused kernels: 64 x n_k float scores stay in L2 up to n_k = 4096,
// and 64 rows are one row tile of broadcast_gemm's kernel (four 16-float vectors).
inline constexpr Eigen::Index kFusedQueryBlock = 64;
// Keys per block of the streaming form: 256 x 64 scores (64 KiB in float) stay in L1/L2.
inline constexpr Eigen::Index kFusedKeyBlock = 256;

// softmax(Q K^T / sqrt(d)) V, the fast counterpart of softmax_attention() (same result up to
// rounding). For each block of kFusedQueryBlock queries: S = Q_b K^T / sqrt(d) by broadcast_gemm
// (linalg/broadcast_gemm.hpp; queries x keys, so each key's column of 64 scores is contiguous and
// K^T is read in place), exp(S - row max) with Eigen's vectorised exp down those columns, the row
// sums, then S V (broadcast_gemm again, V read in place) scaled by 1 / sum. key_block = 0 takes all keys
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

// The same forward (bit for bit the same output) written into the caller's `out`, which may be `q` itself.
// A distinct `out` is resized to (n_q, d_v) unless it has that shape (then its storage is reused); `out` == `q`
// must have that shape already (d_v = d), else std::invalid_argument and q is left as it was; `out` may not be k
// or v (std::invalid_argument: every block reads all of them). Overwriting q is
// safe because each block of queries is copied into its thread's workspace before that block's output rows
// are written, and no other block reads them. Why: a loop of calls that reuses one output does not allocate
// (and, with glibc's default heap settings, fault in) a new output each call (README "Performance": those
// faults were half the linear kernels' time in such a loop; the per-call workspace is still allocated), and a
// forward over Q holds Q, K and V alone, 3 n d numbers instead of 4 (issue 17's streaming row at n = 131072:
// the inputs and a separate output are 128 MiB by themselves).
template <typename T>
void fused_attention_into(Mat<T>& out, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block = 0);
template <typename T>
void fused_attention_into(HeadStack<T>& out, const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                          Eigen::Index key_block = 0);

// The same forward (bit for bit the same output) over heads held in C order, as NumPy holds a (batch, heads, n, d)
// array: head h's queries are the n_q x d row-major matrix at q[h] (row i at q[h] + i d), its keys and values the
// n_k x d and n_k x d_v ones at k[h] and v[h], and its output is written row-major, n_q x d_v, at out[h] (which must
// not overlap the inputs). No transposing copy of the inputs or the output: each block's queries are copied into
// the workspace as from a column-major head, and broadcast_gemm reads K^T and V through their strides, so the
// products are the same in the same order. Throws std::invalid_argument for unequal head counts, none, n_q, n_k or
// d below 1, d_v below 0, or key_block < 0.
template <typename T>
void fused_attention_c_order(const std::vector<T*>& out, const std::vector<const T*>& q, const std::vector<const T*>& k,
                             const std::vector<const T*>& v, Eigen::Index n_q, Eigen::Index n_k, Eigen::Index d,
                             Eigen::Index d_v, Eigen::Index key_block = 0);

// The same forward (bit for bit the same output), also writing what the backward needs: lse (n_q),
// lse(i) = m_i + log l_i, the log of query i's softmax normaliser over its scaled scores (m_i their
// maximum, l_i = sum_j exp(s_ij - m_i) >= 1), so that P_ij = exp(s_ij - lse_i) can be recomputed.
template <typename T>
Mat<T> fused_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Eigen::Index key_block, Vec<T>& lse);

// Blocks of the backward: a task is one key block (its dK and dV rows) against every query block. Taller
// key blocks make each product's row count larger and load (transpose) each query block fewer times:
// 512 x 128 ran 1.2x faster than 128 x 128 at b32 h4 n2048 d64 and n 4096 (2026-11-26, side by side; 256
// keys in between, 1024 no faster), with P^T and dS^T at 256 KiB each per thread in float.
inline constexpr Eigen::Index kBackwardQueryBlock = 128;
inline constexpr Eigen::Index kBackwardKeyBlock = 512;

template <typename T>
struct AttentionGradients {
  Mat<T> dq, dk, dv;  // (n_q, d), (n_k, d), (n_k, d_v)
};

// Gradients of softmax(Q K^T / sqrt(d)) V given d_out = dL/d(out), from the forward's out and lse.
// Shapes: q (n_q, d), k (n_k, d), v (n_k, d_v), out and d_out (n_q, d_v), lse (n_q).
//   pass 0: D_i = sum_c dO_ic O_ic (= sum_j P_ij dP_ij: the softmax backward's row term).
//   pass 1, per block of keys j (in parallel), over the query blocks i in order:
//     S^T = K_j Q_i^T / sqrt(d), P^T = exp(S^T - lse_i) (every exponent <= 0 up to rounding: no overflow),
//     dV_j += P^T dO_i, dP^T = V_j dO_i^T, dS^T = P^T o (dP^T - D_i), dK_j += dS^T Q_i / sqrt(d),
//     dQ_i += dS_ij K_j / sqrt(d), added in the order j = 0, 1, ... (a key block waits for its turn).
// FlashAttention-2's five block products per block pair: four by broadcast_gemm, dS_ij K_j by Eigen's (its left
// factor has no contiguous rows). A task owns its dK and dV rows, and dQ's rows take
// their key blocks' terms in one fixed order, so the gradients are bit for bit the same for any thread
// count; memory beyond the inputs and gradients is two block x block and three block x d matrices per
// thread, never n_q x n_k.
// Throws std::invalid_argument on mismatched shapes or a non-finite lse.
template <typename T>
AttentionGradients<T> fused_attention_backward(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& out,
                                               const Vec<T>& lse, const Mat<T>& d_out);

// Every head of a (batch, heads, n, d) stack: out and lse from the forward overload above per head.
template <typename T>
struct StackGradients {
  HeadStack<T> dq, dk, dv;
};
template <typename T>
StackGradients<T> fused_attention_backward(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                           const HeadStack<T>& out, const std::vector<Vec<T>>& lse,
                                           const HeadStack<T>& d_out);

}  // namespace attnlab
