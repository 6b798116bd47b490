// Named families of the inputs of seed 004's low-rank regression: the token matrix X (n x d) and the
// target B (n x n).
#pragma once

#include <string>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

// The families of X, in a fixed order; `full_column_rank` says whether X has rank d:
//   orthogonal_square   a Haar orthogonal d x d matrix
//   orthonormal         2d x d with orthonormal columns
//   scaled_orthonormal  3 times an orthonormal one
//   gaussian            2d x d, N(0, 1) entries
//   well_conditioned    2d x d, singular values spread geometrically over 1 .. 1/10
//   ill_conditioned     2d x d, singular values spread over five decades
//   rank_deficient      d/2 x d, N(0, 1): rank d/2 < d
struct RegressionFamily {
  const char* name;
  bool full_column_rank;
};
const std::vector<RegressionFamily>& regression_families();

// The families of the corrected statements' confirming sweeps (lab/correction.hpp): those above and three that
// no claim's sweep draws, rank-deficient in ways the families above are not:
//   orthonormal_rows         d/2 x d with orthonormal rows (X X^T = I): every nonzero singular value 1
//   scaled_partial_isometry  2d x d, 3 U V^T with U, V orthonormal of d/2 columns: rank d/2, every nonzero
//                            singular value 3
//   low_rank                 2d x d, the product of N(0, 1) matrices 2d x d/2 and d/2 x d: rank d/2 with
//                            unequal singular values, neither full row nor full column rank
const std::vector<RegressionFamily>& regression_confirming_families();

// The rows n of family's X (of either list) at width d (d, d/2 or 2d).
Eigen::Index regression_rows(const std::string& family, Eigen::Index d);

// X of `family` (n = regression_rows(family, d)); an unknown name draws the gaussian family.
Mat<double> regression_x(const std::string& family, Eigen::Index d, Rng& rng);

// B of kind "random" (n x n, N(0, 1)) or "attention": grad_S L + X W_Q W_K^T X^T of a small attention
// loss at d_k = 2 (regression_target), the target seed 004 derives for one gradient step.
Mat<double> regression_b(const std::string& kind, const Mat<double>& x, Rng& rng);

}  // namespace attnlab
