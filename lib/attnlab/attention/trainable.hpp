// The contract between the trainer (lib/attnlab/model/) and each attention method's trainable
// forward and backward pass (lib/attnlab/attention/<method>_train.*).
//
// Shapes, for one head of one image:
//   q, k : n x d_k   (projected queries and keys, NOT yet scaled: the method applies its own 1/sqrt(d_k))
//   v    : n x d_v
//   out  : n x d_v
// One TrainableAttention object serves every head of one layer. Parameters of the method itself
// (Linformer's learned E and F) and fixed random draws (random-feature projections) belong to that
// object; forward and backward are const and keep no state between calls, so the trainer may run
// heads and images on any thread in any order and reduce their parameter gradients itself in a fixed
// order (bit-identical results for any thread count).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// What a forward pass keeps for its backward pass; each method derives its own.
struct AttentionTape {
  virtual ~AttentionTape() = default;
};

// Everything a method needs to build itself for one layer. Zero means "the method's stated default",
// which make_trainable_attention resolves and describe() reports.
struct TrainableAttentionConfig {
  std::string method;            // a canonical name from trainable_attention_names()
  Eigen::Index n = 0;            // tokens per sequence
  Eigen::Index d_k = 0;          // query/key width per head
  Eigen::Index d_v = 0;          // value width per head
  Eigen::Index heads = 1;        // heads of the layer (methods may share their parameters across them)
  std::uint64_t seed = 0;        // for parameter initialisation and fixed random draws
  Eigen::Index projection_k = 0; // Linformer: projected length k
  Eigen::Index features = 0;     // random-fourier / favor: number of random features
  Eigen::Index landmarks = 0;    // nystrom: number of landmarks (segment means)
  int pinv_iterations = 0;       // nystrom: iterations of the iterative pseudoinverse
};

template <typename T>
class TrainableAttention {
 public:
  virtual ~TrainableAttention() = default;

  // The canonical name and a one-line description with every resolved option (for tables and notes).
  virtual std::string name() const = 0;
  virtual std::string describe() const = 0;

  // Learned parameters of the method itself, in a fixed order (empty for most methods). The trainer
  // updates them with its optimiser and saves them in checkpoints under these names.
  virtual std::vector<std::string> parameter_names() const { return {}; }
  virtual std::vector<Mat<T>*> parameters() { return {}; }
  // Fixed, non-learned state (e.g. random-feature projections): saved in checkpoints, never updated.
  virtual std::vector<std::string> buffer_names() const { return {}; }
  virtual std::vector<Mat<T>*> buffers() { return {}; }

  // out = attention(q, k, v) for head `head`. When tape is not null, *tape receives what backward needs.
  virtual void forward(Eigen::Index head, const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, Mat<T>& out,
                       std::unique_ptr<AttentionTape>* tape) const = 0;

  // Given d_out = dL/d out for the forward that filled `tape`: writes dL/dq, dL/dk, dL/dv (resized and
  // overwritten) and ADDS dL/d(parameter) into param_grads[i] for parameters()[i] (param_grads has one
  // entry per parameter, already sized; pass nullptr or an empty vector when the method has none).
  virtual void backward(Eigen::Index head, const AttentionTape& tape, const Mat<T>& d_out, Mat<T>& d_q,
                        Mat<T>& d_k, Mat<T>& d_v, std::vector<Mat<T>>* param_grads) const = 0;
};

// The canonical names, in the order tables list them:
// exact, linear-elu, linear-shen, linformer, random-fourier, favor, nystrom, symmetric.
const std::vector<std::string>& trainable_attention_names();

// Builds the method named config.method (std::invalid_argument naming the bad value and the valid
// names when unknown, or when an option is out of range for n and d_k).
template <typename T>
std::unique_ptr<TrainableAttention<T>> make_trainable_attention(const TrainableAttentionConfig& config);

}  // namespace attnlab
