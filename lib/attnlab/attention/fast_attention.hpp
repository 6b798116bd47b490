// Fast linear (elu + 1), Linformer and Nystrom attention on head stacks: GEMM-shaped passes in
// parallel over (head, block) pairs, each checked against its reference kernel in verify/.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Rows per block of the fast kernels' parallel passes (keys summarised, queries answered).
inline constexpr Eigen::Index kFastRowBlock = 512;

// Every method below runs in three passes: (1) each block of keys is summarised (a d x d_v,
// k x d or m x d_v matrix) in parallel over (head, key block); (2) each head's summaries are
// added in block order; (3) each block of queries is answered from its head's summary, in
// parallel over (head, query block). The blocks are fixed (RowBlocks), so outputs are the same
// for any thread count, and one long head keeps every thread busy as many short ones do.
// Shapes are checked as the references check them (std::invalid_argument naming the value).

// elu_linear_attention() of every head (Katharopoulos et al.; the same underflow rescaling).
template <typename T>
HeadStack<T> fast_elu_linear_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v);

// linformer_attention() of every head with the shared projections E, F (kp x n).
template <typename T>
HeadStack<T> fast_linformer_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                      const LinformerProjections<T>& proj);

// nystrom_attention() of every head with `landmarks` segment-mean landmarks and Nystromformer's
// iterative pseudoinverse (kNystromformerPinvIterations steps, PinvInit::per_matrix): the
// reference's default options.
template <typename T>
HeadStack<T> fast_nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                    Eigen::Index landmarks);

}  // namespace attnlab
