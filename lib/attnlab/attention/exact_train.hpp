// Exact softmax attention softmax(s) v, trainable: forward and backward side by side, with the scores s
// of exact attention or of seed 000's symmetric form.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What the backward needs: the inputs and the attention matrix, stored transposed.
template <typename T>
struct ExactTape : AttentionTape {
  Mat<T> q, k, v;  // n x d_k, n x d_k, n x d_v
  Mat<T> pt;       // n x n: P^T, column i is query i's attention over the keys
};

// The scores softmax(s) v is taken of:
//   exact      s = q k^T / sqrt(d_k) (the method "exact": the library's softmax_attention());
//   symmetric  s = (q k^T + k q^T) / (2 sqrt(d_k)) (the method "symmetric"). With q = X W_Q and k = X W_K,
//              X S_w X^T = (q k^T + k q^T) / 2 (claims R4, R11), so these are the scores of a layer whose
//              W_Q W_K^T is replaced by its symmetric part S_w (claim R12's "a model trained with S_w scores").
enum class ExactScores { exact, symmetric };

// One layer's exact attention (no parameters, no buffers); every head is the same function.
template <typename T>
class ExactTrain final : public TrainableAttention<T> {
 public:
  explicit ExactTrain(const detail::TrainShape& shape, ExactScores scores = ExactScores::exact)
      : shape_(shape), scores_(scores) {}
  std::string name() const override { return scores_ == ExactScores::exact ? "exact" : "symmetric"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
  ExactScores scores_;
};

}  // namespace attnlab
