// The recall task's baseline without attention (recall_spec.md): every layer's attention replaced by the identity,
// each token's output its own value (out = v). The model then never sees another token, so on recall it cannot do
// better than chance: it says what "the model learned to recall" means.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/trainable.hpp"

namespace attnlab {

// Its name in the training tables and in results/checkpoints/recall/: a "method" row beside the attention methods.
inline constexpr const char* kNoAttentionBaseline = "no-attention-baseline";

template <typename T>
class IdentityMixer final : public TrainableAttention<T> {
 public:
  struct Tape final : AttentionTape {
    Eigen::Index n = 0, d_k = 0;
  };
  explicit IdentityMixer(const detail::TrainShape& shape) : shape_(shape) {}
  std::string name() const override { return kNoAttentionBaseline; }
  std::string describe() const override {
    return "none: the identity in place of attention (each token's output is its own value; no token sees another)";
  }
  // out = v; q and k are unused.
  void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
               std::unique_ptr<AttentionTape>* tape) const override {
    detail::check_train_call("identity mixer", shape_, head, q, k, v);
    out = v;
    if (tape != nullptr) {
      std::unique_ptr<Tape> local;
      Tape& t = detail::reuse_tape(tape, local);
      t.n = q.rows();
      t.d_k = q.cols();
    }
  }
  // d_v = d_out; q and k get no gradient (zero).
  void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q, Mat<T>& d_k, Mat<T>& d_v,
                std::vector<Mat<T>>* /*no parameters*/) const override {
    const auto& t = detail::tape_as<Tape>("identity mixer", tape);
    detail::check_train_d_out("identity mixer", shape_, d_out);
    if (head < 0 || head >= shape_.heads) throw std::invalid_argument("identity mixer: head outside the layer's");
    d_q.setZero(t.n, t.d_k);
    d_k.setZero(t.n, t.d_k);
    d_v = d_out;
  }

 private:
  detail::TrainShape shape_;
};

}  // namespace attnlab
