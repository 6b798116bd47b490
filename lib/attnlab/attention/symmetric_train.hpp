// Seed 000's reparameterised attention, trainable: scores from the symmetric part S_w of W_Q W_K^T.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What the symmetric method's backward needs: the inputs and the attention matrix, stored transposed.
template <typename T>
struct SymmetricTape : AttentionTape {
  Mat<T> q, k, v;  // n x d_k, n x d_k, n x d_v
  Mat<T> pt;       // n x n: P^T, column i is query i's attention over the keys
};

// With q = X W_Q and k = X W_K, X S_w X^T = (q k^T + k q^T) / 2 (claims R4, R11), so the scores
// (q k^T + k q^T) / (2 sqrt(d_k)) are what a layer whose W_Q W_K^T is replaced by S_w computes
// (claim R12's "a model trained with S_w scores"). No parameters, no buffers.
template <typename T>
class SymmetricTrain final : public TrainableAttention<T> {
 public:
  explicit SymmetricTrain(const detail::TrainShape& shape) : shape_(shape) {}
  std::string name() const override { return "symmetric"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
};

}  // namespace attnlab
