// One merged W' = W_Q W_K^T against two factors (seed 001): parameter counts, multiply-add
// counts of the two score computations, and the computations themselves.
#pragma once

#include <cstdint>

#include "attnlab/qk/qk_split.hpp"
#include "attnlab/qk/reparameterized_attention.hpp"

namespace attnlab {

// Parameters: d^2 for a merged d x d matrix, 2 d d_k for W_Q and W_K.
inline std::int64_t merged_parameter_count(std::int64_t d) { return d * d; }
inline std::int64_t factored_parameter_count(std::int64_t d, std::int64_t d_k) { return 2 * d * d_k; }

// Multiply-adds of factored_scores below: X W_Q and X W_K (n d d_k each), then
// Q K^T (n^2 d_k). A dense GEMM of (a x b)(b x c) performs exactly a b c multiply-adds.
inline double factored_score_multiply_adds(double n, double d, double d_k) { return 2 * n * d * d_k + n * n * d_k; }
// Multiply-adds of merged_scores below: X W' (n d^2), then (X W') X^T (n^2 d).
inline double merged_score_multiply_adds(double n, double d) { return n * d * d + n * n * d; }

// The factored form is cheaper in multiply-adds iff d_k < d (d + n) / (2 d + n): the
// crossover d_k lies between d/2 (n << d) and d (n >> d).
inline double crossover_head_dim(double n, double d) { return d * (d + n) / (2 * d + n); }

// The score computations themselves, factored_scores and merged_scores, live in
// reparameterized_attention.hpp.

}  // namespace attnlab
