// W_Q and W_K already in memory (a model held in PyTorch or NumPy: the Python module's attnlab.inspect_heads), read
// head by head in place as a QkCheckpoint: what attnlab_inspect's custom layout does with named tensors of a file.
//
//   QkArraysSpec s;
//   s.wq = {wq.data(), QkArrayDtype::f32, {768, 768}, {768, 1}};   // nn.Linear's (out, in), C order
//   s.wk = {wk.data(), QkArrayDtype::f32, {768, 768}, {768, 1}};
//   s.heads = 12;
//   QkArrays c(std::move(s));   // c.plan(): as --layout custom --heads 12 would resolve it
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/model/qk_checkpoint.hpp"

namespace attnlab {

enum class QkArrayDtype { f16, f32, f64 };

// One array in memory: element (i_0, i_1, ...) at data + sum_k i_k strides[k] elements (not bytes). Any
// non-negative strides, as a NumPy view has them; the memory must outlive the QkArrays reading it.
struct QkArray {
  const void* data = nullptr;
  QkArrayDtype dtype = QkArrayDtype::f32;
  std::vector<std::int64_t> shape, strides;
};

struct QkArraysSpec {
  // The weights as nn.Linear stores them, (heads d_k, d) output x input, or with `transpose` as x W uses them,
  // (d, heads d_k); 3-D for several layers, the layers first. W_K has kv_heads d_k outputs (grouped-query
  // attention: kv_heads divides heads).
  QkArray wq, wk;
  std::optional<QkArray> bq, bk;  // (outputs) or (layers, outputs)
  Eigen::Index heads = 0;
  Eigen::Index kv_heads = 0;  // 0: from W_K's shape
  bool transpose = false;
  std::string name = "arrays";  // the model, as the title and the claims' notes name it
};

class QkArrays : public QkCheckpoint {
 public:
  // Plans the widths as plan_qk_widths does for a custom layout (the weights' names are "Wq", "Wk", "bq", "bk",
  // "Wq[l]" for layer l of a stack). Throws QkLayoutError for a shape that fits the storage convention asked for
  // in no way (never transposed to fit the other one), a dtype other than F16, F32 and F64, or negative strides.
  explicit QkArrays(QkArraysSpec spec);

  void load_layer(Eigen::Index l, bool in_double) override;
  // Throws QkLayoutError naming the first non-finite value of the head's weights or biases, as the safetensors
  // reader words it (nonfinite_weight_problem).
  void head(Eigen::Index h, HeadWeights<float>& out) const override;
  void head(Eigen::Index h, HeadWeights<double>& out) const override;

 private:
  template <typename T>
  void read_head(Eigen::Index h, HeadWeights<T>& out) const;

  QkArraysSpec spec_;
  bool stacked_ = false;
  Eigen::Index layer_ = -1;
  bool in_double_ = false;
};

}  // namespace attnlab
