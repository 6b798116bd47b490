// Linear attention, trainable: Katharopoulos et al.'s elu(x) + 1 features ("linear-elu") and Shen et
// al.'s efficient attention ("linear-shen"), the definitions of linear_attention.hpp.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What linear-elu's backward needs: the forward's passes (elu_linear_attention() in linear_attention.hpp,
// with the features' derivatives: 1 where x > 0, else phi), the values and the output.
template <typename T>
struct EluLinearTape : AttentionTape, EluLinearPasses<T> {
  Mat<T> v;    // n x d_v
  Mat<T> out;  // n x d_v
};

// out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)), phi(x) = elu(x) + 1, no
// scale (Katharopoulos et al. 2020; elu_linear_attention() in linear_attention.hpp). No parameters.
template <typename T>
class EluLinearTrain final : public TrainableAttention<T> {
 public:
  explicit EluLinearTrain(const detail::TrainShape& shape) : shape_(shape) {}
  std::string name() const override { return "linear-elu"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
};

// What linear-shen's backward needs: the forward's passes (efficient_attention() in linear_attention.hpp:
// the two softmaxes and the context) and the values.
template <typename T>
struct ShenLinearTape : AttentionTape, EfficientAttentionPasses<T> {
  Mat<T> v;  // n x d_v
};

// out = softmax_row(Q) (softmax_col(K)^T V), no scale (Shen et al. 2018; efficient_attention() in
// linear_attention.hpp). No parameters.
template <typename T>
class ShenLinearTrain final : public TrainableAttention<T> {
 public:
  explicit ShenLinearTrain(const detail::TrainShape& shape) : shape_(shape) {}
  std::string name() const override { return "linear-shen"; }
  std::string describe() const override;
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

 private:
  detail::TrainShape shape_;
};

}  // namespace attnlab
