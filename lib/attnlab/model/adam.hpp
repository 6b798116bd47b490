// Adam (PyTorch's torch.optim.Adam, no weight decay) and the cosine learning-rate schedule (vit_spec.md).
#pragma once

#include <cstdint>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/tensor_ref.hpp"

namespace attnlab {

struct AdamOptions {
  double lr = 5e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// lr_t = base (1 + cos(pi t / total)) / 2 for step t = 0 .. total - 1: cosine annealing to 0 over the run.
double cosine_lr(double base, std::int64_t t, std::int64_t total);

template <typename T>
class Adam {
 public:
  // State (first and second moments, zero) for tensors of these sizes, in the order step() receives them.
  Adam(const std::vector<TensorRef<T>>& params, const AdamOptions& options = {});

  // One update of every tensor with learning rate lr, as torch.optim.Adam's single-tensor path:
  //   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;  t += 1
  //   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
  // The scalar factors in double, the element-wise arithmetic in T.
  void step(const std::vector<TensorRef<T>>& params, const std::vector<TensorRef<T>>& grads, double lr);

  // Restarts tensor `index`'s state as PyTorch does for a parameter replaced by a new tensor of `size`
  // scalars: zero moments and a step count of its own from 0 (its bias correction starts again), the
  // other tensors' state untouched. For a model whose tensor changed shape (key_growth.hpp).
  void reset(std::size_t index, Eigen::Index size);

  std::int64_t steps() const { return t_; }
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
  std::int64_t t_ = 0;
  std::vector<std::int64_t> count_;  // per tensor: steps since its state started (t_ unless reset)
  std::vector<Vec<T>> m_, v_;
};

}  // namespace attnlab
