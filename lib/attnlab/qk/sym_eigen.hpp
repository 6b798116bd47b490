// The eigen-decomposition of S_w three ways: dense, Lanczos (Spectra), thin QR.
#pragma once

#include <Eigen/Dense>
#include <string>

#include "attnlab/qk/qk_split.hpp"

namespace attnlab {

enum class EigenStatus {
  ok,              // the solver reported success (still check the residual!)
  not_converged,   // the iterative solver ran out of iterations
  not_applicable,  // the method cannot answer this shape (e.g. Lanczos with nev >= d)
  solver_error,    // the solver threw or reported a numerical issue
};
std::string to_string(EigenStatus s);

// Eigenpairs sorted by decreasing |lambda|; vectors are the columns of `vectors`.
template <typename T>
struct EigenPairs {
  Vec<T> values;
  Mat<T> vectors;
  EigenStatus status = EigenStatus::ok;
  std::string detail;                  // why, when status is not ok
  long operator_applications = 0;      // S_w x products (Lanczos only)
};

// Dense oracle: Eigen's SelfAdjointEigenSolver on the formed S_w, all d pairs, O(d^3).
template <typename T>
EigenPairs<T> eigen_dense(const Mat<T>& s);

// Lanczos on the implicit operator (Spectra SymEigsSolver, largest magnitude), asking
// for `nev` pairs; O(d d_k) per product. Spectra 1.0.1 throws on the zero operator and
// can converge to wrong values on very low-rank operators while reporting success
// (Spectra issue 159): the zero operator is answered directly, exceptions become
// solver_error, and callers must check the residual.
template <typename T>
EigenPairs<T> eigen_lanczos(const Mat<T>& wq, const Mat<T>& wk, Eigen::Index nev);

// Low-rank path in O(d d_k^2): [W_Q W_K] = Q R (thin Householder QR), so
// S_w = Q T Q^T with T = (R_1 R_2^T + R_2 R_1^T) / 2 small (at most 2 d_k square);
// T = V L V^T gives U = Q V. Returns min(d, 2 d_k) pairs: S_w has rank up to 2 d_k.
template <typename T>
EigenPairs<T> eigen_low_rank_qr(const Mat<T>& wq, const Mat<T>& wk);

// The first `count` pairs (by |lambda|) of a decomposition.
template <typename T>
EigenPairs<T> leading_pairs(const EigenPairs<T>& pairs, Eigen::Index count);

// Backward-error checks, computed in double from the factors (S_w is never formed):
// ||S_w V - V L||_F / (d ||S_w||_F eps_T)  and  ||V^T V - I||_F / (d eps_T).
template <typename T>
double eigen_residual_ratio(const Mat<T>& wq, const Mat<T>& wk, const EigenPairs<T>& pairs);
template <typename T>
double orthogonality_ratio(const Mat<T>& v);

// Number of eigenvalues with |lambda| above d * eps_T * max|lambda| (the numerical-rank
// tolerance applied to a symmetric spectrum).
template <typename T>
Eigen::Index count_nonzero_eigenvalues(const Vec<T>& values, Eigen::Index d);

// The nonzero eigenvalues (the tolerance above) and how many of them are positive and negative.
struct EigenvalueSigns {
  Eigen::Index nonzero = 0, positive = 0, negative = 0;
};
template <typename T>
EigenvalueSigns count_eigenvalue_signs(const Vec<T>& values, Eigen::Index d);

}  // namespace attnlab
