// Named families of query/key weight pairs (W_Q, W_K) for the seed-000 claims.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "attnlab/core/rng.hpp"

namespace attnlab {

struct QkWeights {
  Eigen::MatrixXd wq, wk;  // d x d_k each, in double; cast for float runs
};

struct QkFamily {
  std::string name;
  std::string description;  // one phrase, used in verdict notes
};

// The families, in a fixed order:
//   gaussian         W_Q, W_K ~ N(0, 1/d): a freshly initialised layer
//   ill_conditioned  singular values of W_Q and W_K spread over 1 .. 1e-6 (Haar singular vectors)
//   clustered        W_Q = O (I + 1e-6 G + R), W_K = O with O orthonormal, G symmetric, R skew:
//                    S_w has d_k eigenvalues clustered at 1, and R_w is O(1)
//   tied             W_K = W_Q ~ N(0, 1/d): W_Q W_K^T is symmetric positive semidefinite
//   large_norm       gaussian scaled by 1e3: scores of order 1e6
const std::vector<QkFamily>& qk_weight_families();

// The families of the corrected statements' confirming sweeps (lab/correction.hpp): those above and one that
// no claim's sweep draws, so that a statement found on the families above meets a fresh one:
//   symmetric_indefinite  W_Q ~ N(0, 1/d), W_K = W_Q D with D = diag(+-1) of random signs: W_Q W_K^T is
//                         symmetric (R_w = 0) without W_K = W_Q, and S_w has eigenvalues of both signs
const std::vector<QkFamily>& qk_confirming_families();

// The description of a family of either list by name ("given" for the user's weights, see given_inputs.hpp); throws std::invalid_argument for an unknown one.
const std::string& qk_family_description(const std::string& family);

QkWeights make_qk_weights(const std::string& family, Eigen::Index d, Eigen::Index dk, Rng& rng);

}  // namespace attnlab
