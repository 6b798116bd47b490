// The singular values of an attention matrix P = softmax(Q K^T / sqrt(d_k)) and the rank that holds
// a given share of ||P||_F^2 (claim L5: "trained attention matrices are low rank").
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// P = softmax(q k^T / sqrt(d_k)) row by row (q, k: n x d_k), in double.
Mat<double> softmax_attention_matrix(const Mat<double>& q, const Mat<double>& k);

// The singular values of p, descending (Eigen's BDCSVD in double). Checked before they are returned:
// sum_i sigma_i^2 must equal ||p||_F^2 to within kSpectrumCheckTolerance relative (a backward-stable
// SVD gets about n eps); std::runtime_error naming both sums otherwise.
inline constexpr double kSpectrumCheckTolerance = 1e-10;
Eigen::VectorXd attention_singular_values(const Mat<double>& p);

// cumulative(i) = sum_{j <= i} sigma_j^2 / sum_j sigma_j^2 (the energy captured by the best rank-(i+1)
// approximation, Eckart-Young); the last entry is 1.
Eigen::VectorXd cumulative_energy(const Eigen::VectorXd& singular_values);

// The smallest r >= 1 whose best rank-r approximation holds at least `fraction` of ||P||_F^2: the first
// i + 1 with cumulative(i) >= fraction. Throws std::invalid_argument for fraction outside (0, 1] or
// an empty or all-zero spectrum.
Eigen::Index energy_rank(const Eigen::VectorXd& singular_values, double fraction);

}  // namespace attnlab
