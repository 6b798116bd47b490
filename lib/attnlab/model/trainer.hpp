// Deterministic data-parallel training and evaluation of the models trained here (the ViT, the linear baseline
// beside it, model/pixel_logistic.hpp, and the recall model, model/recall_model.hpp) by the same code: each batch
// is cut into chunks of a fixed number of items (a constant, not the thread count), each chunk's gradient goes to
// its own buffer (OpenMP over chunks, Eigen single-threaded inside), and the chunks are summed in index order, so
// weights, losses and accuracies are bit-identical for any thread count.
//
// A model the trainer takes (ViT<T>, PixelLogistic<T>, RecallModel<T>) provides: the types Scalar (T), Activations
// (with a `logits` matrix), Grads and Data (the data set it trains on); parameter_tensors(), gradient_tensors(Grads&)
// in one order; zero_grads(); set_inputs(act, data, items), which fills its input from items of data; and
// forward_backward(act, labels, scale, grads or nullptr), which ADDS scale * the gradient of the cross-entropy summed
// over its logits' rows into grads.
//
// A data set (ImageSet, model/image_set.hpp; RecallSet, model/recall_task.hpp) provides count() and
// append_labels(item, out): the item's labels, one per row of logits the model gives it (an image has one, a recall
// sequence one per query). A batch's loss is the mean cross-entropy over its labelled rows; an evaluation's
// accuracy is the share of rows whose first maximum is the label.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/image_set.hpp"
#include "attnlab/model/pixel_logistic.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// Items (images, sequences) per chunk: the unit of parallel work and of the fixed reduction order (8: a batch of
// 16 is one chunk per core; each chunk's GEMMs still have 8 * 196 rows).
inline constexpr Eigen::Index kChunkImages = 8;

template <typename T, typename Model = ViT<T>>
class Trainer {
 public:
  explicit Trainer(Model& model, const AdamOptions& adam = {});
  // Continues with an optimiser's state (e.g. a copy of another trainer's adam(), reset() where a tensor
  // changed shape); its tensors must match the model's in number and size (checked at each step).
  Trainer(Model& model, Adam<T> state);

  // One optimiser step on the items data[batch]: the gradient of the mean cross-entropy over their labelled rows,
  // summed chunk by chunk in index order, then Adam with learning rate lr. Returns the batch's mean loss (before
  // the step).
  // When that loss or any entry of the gradient is not finite (a method whose forward divides by an
  // estimate that can reach zero, such as random Fourier attention), Adam is NOT applied: the model and
  // the optimiser stay as they were, finite, and last_step_applied() says so. The run has diverged there.
  // Throws std::runtime_error if Adam's update itself makes a weight non-finite (a learning rate near the
  // largest float).
  double step(const typename Model::Data& data, std::span<const std::int64_t> batch, double lr);
  bool last_step_applied() const { return last_step_applied_; }

  // The last step's gradient (the chunks' sum), in manifest order.
  const std::vector<TensorRef<T>>& last_gradient() const { return grad_refs_.front(); }

  Model& model() { return model_; }
  const Adam<T>& adam() const { return adam_; }

 private:
  Model& model_;
  Adam<T> adam_;
  std::vector<typename Model::Activations> act_;     // per chunk
  std::vector<typename Model::Grads> grads_;         // per chunk
  std::vector<std::vector<TensorRef<T>>> grad_refs_; // per chunk, manifest order
  std::vector<std::vector<std::uint8_t>> labels_;    // per chunk
  std::vector<double> losses_;                       // per chunk
  bool last_step_applied_ = true;
};

// Counted over labelled rows: an image is one row, a recall sequence one per query.
struct Evaluation {
  double loss = 0.0;          // mean cross-entropy over the rows with finite logits (NaN when there are none)
  std::int64_t correct = 0;   // argmax (first maximum) equals the label; a row with a non-finite logit is wrong
  std::int64_t count = 0;
  std::int64_t nonfinite = 0; // rows whose logits hold a NaN or an infinity (counted wrong, left out of loss)
  double accuracy() const { return count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0.0; }
};

// Mean loss and accuracy over the labelled rows of the first `count` items of data (all when count < 0), in chunks
// of kChunkImages over OpenMP threads, the chunks' losses summed in index order. Rows whose logits are not
// finite are counted in `nonfinite`, as wrong, and left out of the mean loss.
template <typename Model>
Evaluation evaluate(const Model& model, const typename Model::Data& data, std::int64_t count = -1);

// The logits (rows of data[items], classes) of data[items], item after item, one chunk after another on this thread.
template <typename Model>
Mat<typename Model::Scalar> predict_logits(const Model& model, const typename Model::Data& data,
                                           std::span<const std::int64_t> items);

}  // namespace attnlab
