// Linear attention, trainable: Katharopoulos et al.'s elu(x) + 1 features ("linear-elu") and Shen et
// al.'s efficient attention ("linear-shen"), the definitions of linear_attention.hpp.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What linear-elu's backward needs. phi_q and phi_k are the feature maps as the forward used them
// (rescaled where it rescaled); dphi_q and dphi_k their entrywise derivatives.
template <typename T>
struct EluLinearTape : AttentionTape {
  Mat<T> v;                // n x d_v
  Mat<T> phi_q, phi_k;     // n x d_k
  Mat<T> dphi_q, dphi_k;   // n x d_k: 1 where x > 0, else phi (see forward)
  Mat<T> kv;               // d_k x d_v: phi(K)^T V
  Vec<T> ksum;             // d_k: phi(K)^T 1
  Vec<T> den;              // n: phi(Q) ksum
  Mat<T> out;              // n x d_v
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

// What linear-shen's backward needs: the two softmaxes and the context.
template <typename T>
struct ShenLinearTape : AttentionTape {
  Mat<T> v;      // n x d_v
  Mat<T> qr_t;   // d_k x n: softmax over the features of each query, stored transposed
  Mat<T> kc;     // n x d_k: softmax over the positions of each key feature
  Mat<T> ctx;    // d_k x d_v: kc^T V
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
