// Linformer attention, trainable: learned sequence-axis projections E, F shared by the heads of a layer.
#pragma once

#include <memory>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// What Linformer's backward needs (kp is the projected length).
template <typename T>
struct LinformerTape : AttentionTape {
  Mat<T> q, k, v;  // n x d_k, n x d_k, n x d_v
  Mat<T> ek;       // kp x d_k: E K
  Mat<T> fv;       // kp x d_v: F V
  Mat<T> pt;       // kp x n: P^T, column i is query i's attention over the kp projected keys
};

// out = softmax(q (E k)^T / sqrt(d_k)) (F v) (Wang et al. 2020, eq. 7; linformer_attention() in
// linformer.hpp), E and F learned (kp x n), one pair shared by every head of the layer (the paper's
// headwise sharing), separate for keys and values. Initialised N(0, 1/kp), Theorem 1's scaling, by
// gaussian_projections(n, kp, separate, Rng(seed)): E first, then F from the same stream.
// Default kp = ceil(n / 8): seed 002's "reduced embedding size by 8 times" read as the sequence
// length projected to an eighth (Linformer projects the sequence axis, not the embedding).
template <typename T>
class LinformerTrain final : public TrainableAttention<T> {
 public:
  LinformerTrain(const detail::TrainShape& shape, Eigen::Index projection_k, std::uint64_t seed);
  std::string name() const override { return "linformer"; }
  std::string describe() const override;
  std::vector<std::string> parameter_names() const override { return {"E", "F"}; }
  std::vector<Mat<T>*> parameters() override { return {&e_, &f_}; }
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override;
  // param_grads[0] += dL/dE, param_grads[1] += dL/dF.
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k,
                Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const override;

  // ceil(n / 8), the default projected length.
  static Eigen::Index default_projection_k(Eigen::Index n) { return (n + 7) / 8; }

 private:
  detail::TrainShape shape_;
  std::uint64_t seed_;
  Mat<T> e_, f_;  // kp x n each
};

}  // namespace attnlab
