// A checkpoint's attention weights read head by head: a safetensors checkpoint under a layout
// (qk_layout.hpp), or an attnlab checkpoint directory (checkpoint.hpp). What attnlab_inspect reads.
//
//   auto c = QkCheckpoint::open("gpt2/model.safetensors", options);
//   for (Eigen::Index l = 0; l < c->plan().layers; ++l) {
//     c->load_layer(l, false);
//     HeadWeights<float> w;
//     c->head(0, w);   // w.wq, w.wk: d x d_k
//   }
#pragma once

#include <filesystem>
#include <memory>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/qk_layout.hpp"

namespace attnlab {

// One query head's weights with the key head it reads: W_Q,h and W_K,h (d x d_k each) such that the
// head's scores are (x W_Q,h + b_q,h) (x' W_K,h + b_k,h)^T, and the biases (zero where the model has none).
template <typename T>
struct HeadWeights {
  Mat<T> wq, wk;
  Vec<T> bq, bk;
};

class QkCheckpoint {
 public:
  // Opens `path` under options.layout: with "attnlab" or "auto", a directory holding manifest.json is an attnlab
  // checkpoint (loaded whole, float32); everything else is a safetensors checkpoint
  // (SafetensorsCheckpoint::open) resolved by plan_qk_layout. Throws QkLayoutError, SafetensorsError or
  // CheckpointError, each one line naming the file.
  static std::unique_ptr<QkCheckpoint> open(const std::filesystem::path& path, const QkLayoutOptions& options);
  virtual ~QkCheckpoint() = default;

  const QkLayoutPlan& plan() const { return plan_; }
  // What the checkpoint is, for messages and tables: the file, index or directory opened.
  const std::filesystem::path& path() const { return path_; }

  // Reads what layer l's heads need whole (in x out weights: the whole tensors; out x in ones are read
  // head by head), in double or in float; the previous layer's is released. Then head() may be called
  // from several threads at once.
  virtual void load_layer(Eigen::Index l, bool in_double) = 0;
  // Query head h (0 <= h < heads) of the loaded layer with its key head plan().kv_head(h), in the
  // precision load_layer was given. Throws SafetensorsError for a non-finite weight.
  virtual void head(Eigen::Index h, HeadWeights<float>& out) const = 0;
  virtual void head(Eigen::Index h, HeadWeights<double>& out) const = 0;

 protected:
  QkLayoutPlan plan_;
  std::filesystem::path path_;
};

}  // namespace attnlab
