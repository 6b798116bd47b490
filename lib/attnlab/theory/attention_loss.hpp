// A small single-head attention loss L(S) and its gradients, for building the
// regression target B = grad_S L + X W_Q W_K^T X^T of seed 004.
#pragma once

#include <Eigen/Dense>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/softmax.hpp"

namespace attnlab {

// L(S) = 1/2 ||softmax_row(S) V W_O + X - target||_F^2 with V = X W_V: one head of
// seed 004's block (Y = H W_O + X) with a squared-error loss against a fixed target.
// Shapes: X n x d, W_V d x d_v, W_O d_v x d, target n x d, S n x n.
template <typename T>
class AttentionLoss {
 public:
  AttentionLoss(Mat<T> x, const Mat<T>& wv, Mat<T> wo, Mat<T> target)
      : x_(std::move(x)), v_(x_ * wv), wo_(std::move(wo)), target_(std::move(target)) {}

  const Mat<T>& x() const { return x_; }

  T value(const Mat<T>& s) const {
    const Mat<T> y = softmax_rows(s) * v_ * wo_ + x_;
    return T(0.5) * (y - target_).squaredNorm();
  }

  // dL/dS (n x n) by the chain rule, pass by pass:
  //   pass 1  A = softmax_row(S), Y = A V W_O + X
  //   pass 2  dY = Y - target, dA = dY (V W_O)^T
  //   pass 3  dS_ij = A_ij (dA_ij - sum_k A_ik dA_ik)   (the row softmax's backward, core/softmax.hpp)
  Mat<T> gradient(const Mat<T>& s) const {
    const Mat<T> a = softmax_rows(s);
    const Mat<T> vo = v_ * wo_;  // n x d
    const Mat<T> dy = a * vo + x_ - target_;
    const Mat<T> da = dy * vo.transpose();
    return softmax_rows_backward(a, da);
  }

 private:
  Mat<T> x_;
  Mat<T> v_;
  Mat<T> wo_;
  Mat<T> target_;
};

// S = scale * X W_Q W_K^T X^T, computed as (X W_Q)(X W_K)^T.
template <typename T>
Mat<T> attention_scores(const Mat<T>& x, const Mat<T>& wq, const Mat<T>& wk, T scale) {
  return scale * ((x * wq) * (x * wk).transpose());
}

// Gradients of L(S(W_Q, W_K)) given G = dL/dS: dL/dW_Q = scale X^T G X W_K and
// dL/dW_K = scale X^T G^T X W_Q.
template <typename T>
struct FactorGradients {
  Mat<T> wq;
  Mat<T> wk;
};
template <typename T>
FactorGradients<T> factor_gradients(const Mat<T>& x, const Mat<T>& wq, const Mat<T>& wk, T scale, const Mat<T>& g) {
  const Mat<T> xt_g = x.transpose() * g;            // d x n
  const Mat<T> xt_gt = x.transpose() * g.transpose();
  return {scale * (xt_g * (x * wk)), scale * (xt_gt * (x * wq))};
}

// Seed 004's regression target B = grad_S L(S) + X W_Q W_K^T X^T at S = scale X W_Q W_K^T X^T.
template <typename T>
Mat<T> regression_target(const AttentionLoss<T>& loss, const Mat<T>& wq, const Mat<T>& wk, T scale) {
  const Mat<T>& x = loss.x();
  return loss.gradient(attention_scores(x, wq, wk, scale)) + (x * wq) * (x * wk).transpose();
}

}  // namespace attnlab
