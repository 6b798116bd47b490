// Nystrom attention (Xiong et al. 2021): softmax(Q K~^T) pinv(softmax(Q~ K~^T)) softmax(Q~ K^T) V
// with landmarks Q~, K~ the means of m contiguous segments of the sequence.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Means of m contiguous segments of the rows of X (n x d): m x d. Segment s holds rows
// [floor(s n / m), floor((s + 1) n / m)), so the segments differ in length by at most one when
// m does not divide n (Nystromformer's reshape needs m | n). Throws unless 1 <= m <= n.
template <typename T>
Mat<T> segment_means(const Mat<T>& x, Eigen::Index m);

// The three softmax kernels of the approximation (all with the 1/sqrt(d) scale; rows sum to 1):
template <typename T>
struct NystromFactors {
  Mat<T> f;  // n_q x m: softmax(Q K~^T / sqrt(d))
  Mat<T> a;  // m x m:   softmax(Q~ K~^T / sqrt(d)), the matrix to pseudo-invert
  Mat<T> b;  // m x n_k: softmax(Q~ K^T / sqrt(d))
};

template <typename T>
NystromFactors<T> nystrom_factors(const Mat<T>& q, const Mat<T>& k, Eigen::Index landmarks);

enum class PinvMethod { svd, iterative };

struct NystromOptions {
  Eigen::Index landmarks = 64;                     // m, as in the UCU report's runs
  PinvMethod pinv = PinvMethod::iterative;         // Nystromformer's choice
  int iterations = kNystromformerPinvIterations;   // for PinvMethod::iterative
  PinvInit init = PinvInit::per_matrix;            // for PinvMethod::iterative
  double rcond = -1;                               // for PinvMethod::svd: see pinv_svd_relative
};

// F Z (B V) with Z the chosen pseudoinverse of A: n_q x d_v, in O(n m d + m^2 d + m^3).
// Example: nystrom_attention(q, k, v, {.landmarks = 32, .pinv = PinvMethod::svd}).
template <typename T>
Mat<T> nystrom_attention(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const NystromOptions& options);

// The n_q x n_k matrix F Z B, for checks only (it is what the method avoids forming).
template <typename T>
Mat<T> nystrom_attention_matrix(const Mat<T>& q, const Mat<T>& k, const NystromOptions& options);

// The pseudoinverse the options ask for, of every matrix of a batch (batch-wide inits need all).
template <typename T>
std::vector<Mat<T>> nystrom_pinv(const std::vector<Mat<T>>& a, const NystromOptions& options);

// Every head; the landmark kernels of all heads form the batch that batch-wide inits scale by.
template <typename T>
HeadStack<T> nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                               const NystromOptions& options);

// The fast kernel of nystrom_attention() on every head with `landmarks` segment-mean landmarks and
// Nystromformer's iterative pseudoinverse (kNystromformerPinvIterations steps, PinvInit::per_matrix):
// the reference's default options. The three passes of fast_passes.hpp, in parallel over (head, block)
// pairs; checked against the reference in verify/test_fast_attention.cpp.
template <typename T>
HeadStack<T> fast_nystrom_attention(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v,
                                    Eigen::Index landmarks);

}  // namespace attnlab
