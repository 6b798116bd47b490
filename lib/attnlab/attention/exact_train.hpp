// Exact softmax attention softmax(q k^T / sqrt(d_k)) v, trainable: forward and backward side by side.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What exact attention's backward needs: the inputs and the attention matrix, stored transposed.
template <typename T>
struct ExactTape : AttentionTape {
  Mat<T> q, k, v;  // n x d_k, n x d_k, n x d_v
  Mat<T> pt;       // n x n: P^T, column i is query i's attention over the keys
};

// One layer's exact attention (no parameters, no buffers); every head is the same function.
template <typename T>
class ExactTrain final : public TrainableAttention<T> {
 public:
  explicit ExactTrain(const detail::TrainShape& shape) : shape_(shape) {}
  std::string name() const override { return "exact"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
};

}  // namespace attnlab
