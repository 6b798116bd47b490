// Named input families for attention accuracy experiments (--family).
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "attnlab/core/rng.hpp"

namespace attnlab {

// Q, K, V of one head, each n x d, in double: the reference precision. Cast for float runs.
struct AttentionInputs {
  Eigen::MatrixXd q, k, v;
};

// The family names, in a fixed order: approximation error depends on the inputs more
// than on anything else, so every accuracy claim is measured over all of them.
//   gaussian_small  Q, K ~ N(0, 0.25^2): logits QK^T/sqrt(d) ~ N(0, 0.004), attention nearly uniform
//   gaussian        Q, K ~ N(0, 1): logits ~ N(0, 1)
//   gaussian_large  Q, K ~ N(0, 2^2): logits ~ N(0, 16), attention sharply peaked
//   uniform         Q, K, V ~ U[0, 1): what the UCU report's timing code fed its methods
//   low_rank        Q, K = G H + 0.01 noise with inner rank 4: low-rank logits
//   local           rows of Q = K are sums of slow sinusoids of the position: attention
//                   concentrated on a band around the diagonal
//   clustered       keys and queries near 8 random centres (norm sqrt(d)) with 0.1 noise
// V ~ N(0, 1) except for uniform.
const std::vector<std::string>& attention_families();

// Whether every entry of the family's Q, K and V has mean zero: all but uniform, whose entries are U[0, 1)
// with mean 1/2. Several approximations' errors depend on it (a common mean of V dominates its norm, a
// common mean of the logits dominates random projections of them), so corrected statements name it.
// Throws std::invalid_argument naming an unknown family.
bool attention_family_centered(const std::string& family);

// Draws one head's inputs of the named family; throws std::invalid_argument naming an unknown family.
AttentionInputs make_attention_inputs(const std::string& family, Eigen::Index n, Eigen::Index d, Rng& rng);

}  // namespace attnlab
