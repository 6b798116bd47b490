// Nystrom attention, trainable: segment-mean landmarks and Nystromformer's iterative pseudoinverse,
// differentiated through every iteration and through the initial scaling.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"

namespace attnlab {

// What Nystrom's backward needs (m landmarks, `iterations` pseudoinverse steps).
template <typename T>
struct NystromTape : AttentionTape {
  Mat<T> q, k, v;        // n x d_k, n x d_k, n x d_v
  Mat<T> q_l, k_l;       // m x d_k: landmarks (segment means)
  Mat<T> f_t;            // m x n: F^T, F = softmax(Q K~^T / sqrt(d_k))
  Mat<T> a_t;            // m x m: A^T, A = softmax(Q~ K~^T / sqrt(d_k))
  Mat<T> b_t;            // n x m: B^T, B = softmax(Q~ K^T / sqrt(d_k))
  T alpha = 0;           // Z_0 = alpha A^T
  Eigen::Index argmax_col = 0, argmax_row = 0;  // where ||A||_1 and ||A||_inf are attained
  std::vector<Mat<T>> z;                 // iterations + 1 iterates Z_0 .. Z_t (m x m)
  std::vector<PinvStepTerms<T>> steps;  // step s's A Z_s, inner_s, outer_s (iterative_pinv_step), s < t
  Mat<T> bv;             // m x d_v: B V
  Mat<T> zbv;            // m x d_v: Z B V
};

// F Z (B V) (Xiong et al. 2021; nystrom_attention() in nystrom.hpp with PinvInit::per_matrix):
// landmarks Q~, K~ are the means of m contiguous segments, segment s holding rows
// [floor(s n / m), floor((s + 1) n / m)) (segment_means(): lengths differ by at most one when m does
// not divide n); Z is `iterations` steps of Z <- 1/4 Z (13 I - AZ (15 I - AZ (7 I - AZ))) from
// Z_0 = A^T / (||A||_1 ||A||_inf). The backward differentiates through every iterate (the tape keeps
// them) and through Z_0's scale, taking the subgradient of each max at its first maximiser: exact
// wherever the maximiser is unique. ||A||_inf is a max of row sums that all equal 1 (A is
// row-stochastic), so it is constant in Q and K and any of its subgradients contributes exactly zero
// through the softmax; ||A||_1's maximising column is unique for all but a measure-zero set of
// inputs. Defaults: m = min(64, n) (seed 002's 64 landmarks), 6 iterations (Nystromformer's). No
// parameters, no buffers.
template <typename T>
class NystromTrain final : public TrainableAttention<T> {
 public:
  NystromTrain(const detail::TrainShape& shape, Eigen::Index landmarks, int iterations);
  std::string name() const override { return "nystrom"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

  Eigen::Index landmarks() const { return m_; }
  int iterations() const { return iterations_; }

 private:
  detail::TrainShape shape_;
  Eigen::Index m_;
  int iterations_;
};

}  // namespace attnlab
