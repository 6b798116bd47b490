// The iterative pseudoinverse of Razavi et al. (2014) used by Nystromformer:
// Z <- 1/4 Z (13 I - A Z (15 I - A Z (7 I - A Z))), with the initialisations used in practice.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <vector>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Z_0 = alpha A^T; the variants differ only in alpha. The iteration converges to pinv(A) when
// 0 < alpha < 2 / sigma_max(A)^2, and it is slower the smaller alpha sigma_min^2 is.
enum class PinvInit {
  per_matrix,        // alpha = 1 / (||A||_1 ||A||_inf) per matrix: the paper's Z_0; always convergent
  per_matrix_one,    // alpha = 1 / ||A||_1 per matrix: Nystromformer's init_option != "original",
                     // exact when ||A||_inf = 1 (row-stochastic A); may diverge otherwise
  batch_max_one,     // alpha = 1 / max over the batch of ||A_b||_1: Nystromformer's "original"
  batch_max_both,    // alpha = 1 / (max_b ||A_b||_1 * max_b ||A_b||_inf): lucidrains' nystrom-attention
};

const std::vector<PinvInit>& pinv_inits();
std::string to_string(PinvInit init);

// The number of iterations Nystromformer uses.
inline constexpr int kNystromformerPinvIterations = 6;

// Runs `iterations` steps on every square matrix of the batch (one head's landmark kernel each),
// in parallel over the batch. Throws std::invalid_argument on a non-square or empty matrix, or
// on iterations < 0, naming the value.
template <typename T>
std::vector<Mat<T>> iterative_pinv(const std::vector<Mat<T>>& batch, int iterations, PinvInit init);

// One matrix; with a batch of one, every initialisation is one of the two per-matrix ones.
template <typename T>
Mat<T> iterative_pinv(const Mat<T>& a, int iterations, PinvInit init = PinvInit::per_matrix);

// The products one step forms (each m x m): az = A Z, inner = 15 I - AZ (7 I - AZ), outer = 13 I - AZ inner;
// the step is Z <- 1/4 Z outer. Kept by a caller that differentiates through the iteration (NystromTrain).
template <typename T>
struct PinvStepTerms {
  Mat<T> az, inner, outer;
};

// One step Z <- 1/4 Z (13 I - A Z (15 I - A Z (7 I - A Z))) in place, for callers that watch the
// iterates (the convergence experiment, the trainable Nystrom, which also takes the step's products in
// *terms); iterative_pinv() is Z_0 = alpha A^T and `iterations` of these.
template <typename T>
void iterative_pinv_step(const Mat<T>& a, Mat<T>& z, PinvStepTerms<T>* terms = nullptr);

// The step size alpha of Z_0 = alpha A^T for every matrix of the batch.
template <typename T>
std::vector<double> pinv_initial_scale(const std::vector<Mat<T>>& batch, PinvInit init);

// PinvInit::per_matrix's alpha = 1 / (||A||_1 ||A||_inf) of one matrix (0 for the zero matrix), with the
// first column and the first row where the two norms are attained: what a caller that differentiates
// alpha needs (NystromTrain's backward). Throws as iterative_pinv does on a non-square or empty matrix.
struct PinvScale {
  double alpha = 0;
  Eigen::Index argmax_col = 0, argmax_row = 0;  // ||A||_1 = column argmax_col's sum, ||A||_inf row argmax_row's
};
template <typename T>
PinvScale per_matrix_pinv_scale(const Mat<T>& a);

}  // namespace attnlab
