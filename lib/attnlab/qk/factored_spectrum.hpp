// One head's M = W_Q W_K^T and S_w measured from the factors alone, in O(d d_k^2) (R7's path): a thin QR
// of [W_Q W_K] and problems of order 2 d_k, never a d x d matrix. What attnlab_inspect reports per head.
//
//   const FactoredSpectrum f = factored_spectrum<float>(wq, wk);  // wq, wk: d x d_k
//   f.skew_share;   // ||R_w||_F / ||M||_F
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// [W_Q W_K] = Q [R_1 R_2] (Householder QR; Q never formed) gives M = Q C Q^T with C = R_1 R_2^T (m x m,
// m = min(d, 2 d_k)) and S_w = Q T Q^T with T = (C + C^T) / 2: M's singular values are C's, S_w's nonzero
// eigenvalues are T's, and the Frobenius norms of M, S_w and R_w are those of C, T and (C - C^T) / 2.
// Since R_1 is upper triangular, C's rows below min(m, d_k) are zero, so M's singular values are those of
// the first min(m, d_k) rows of C.
struct FactoredSpectrum {
  double m_norm = 0;                 // ||M||_F
  double skew_share = 0;             // ||R_w||_F / ||M||_F (0 when M = 0)
  Eigen::Index rank_m = 0;           // R2: singular values of M above max(d, d) eps sigma_max (numerical_rank's tolerance)
  Eigen::Index nonzero_s = 0;        // R5: eigenvalues of S_w above d eps max|lambda| (count_eigenvalue_signs),
  Eigen::Index positive_s = 0;       //     and how many of those are positive
  Eigen::Index negative_s = 0;       //     and negative
  double s_norm = 0;                 // ||S_w||_F
  double kept_share = 1;             // R6: sum of the d_k largest lambda_i^2 over ||S_w||_F^2 (1 when S_w = 0)
  double lambda_next = 0;            // |lambda_{d_k+1}|, the largest eigenvalue magnitude the d_k pairs leave out
  double r6_ratio = 0;               // R6 at its worst y: |lambda_{d_k+1}| / (d eps ||S_w||_F), see below
  double flops = 0;                  // floating-point operations counted as LAPACK counts them (see .cpp)
};

// The quantities above for W_Q, W_K (d x d_k each, d >= 1, d_k >= 1), computed in precision T with
// eps = eps_T. R6's scaled error |y^T M y - sum_{i <= d_k} lambda_i (u_i^T y)^2| / (d ||S_w|| ||y||^2 eps)
// is y^T (S_w - S_{d_k}) y / (...) with S_{d_k} the d_k leading pairs; its largest value over y is
// |lambda_{d_k+1}| / (d eps ||S_w||_F), attained at y = u_{d_k+1}: exp_qk_spectrum measures the same error
// on random y, which can only be smaller. Throws std::invalid_argument for shapes that differ or are empty.
// Any scale of W_Q and W_K gives the same bits but for the three norms, which scale with them: the factors are
// measured at unit scale (power_of_two_scaling.hpp). Those norms are infinite where ||W_Q|| ||W_K|| is past the
// largest double; the caller refuses such a head.
template <typename T>
FactoredSpectrum factored_spectrum(const Mat<T>& wq, const Mat<T>& wk);

}  // namespace attnlab
