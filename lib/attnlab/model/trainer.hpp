// Deterministic data-parallel training and evaluation of the ViT (and of the linear baseline beside it,
// model/pixel_logistic.hpp, by the same code): each batch is cut into chunks of a fixed number of images (a
// constant, not the thread count), each chunk's gradient goes to its own buffer (OpenMP over chunks, Eigen
// single-threaded inside), and the chunks are summed in index order, so weights, losses and accuracies are
// bit-identical for any thread count.
//
// A model the trainer takes (ViT<T>, PixelLogistic<T>) provides: the types Scalar (T), Activations (with a
// `logits` matrix) and Grads; parameter_tensors(), gradient_tensors(Grads&) in one order; zero_grads();
// set_inputs(act, pixels, side, images), which fills its input from images; and forward_backward(act,
// labels, scale, grads or nullptr), which ADDS scale * the gradient of the summed cross-entropy into grads.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/pixel_logistic.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// Images per chunk: the unit of parallel work and of the fixed reduction order (8: a batch of 16 is one
// chunk per core; each chunk's GEMMs still have 8 * 196 rows).
inline constexpr Eigen::Index kChunkImages = 8;

// A set of labelled square uint8 images, row-major, one after another (views: the caller owns the data).
struct ImageSet {
  std::span<const std::uint8_t> pixels;  // count * side * side
  std::span<const std::uint8_t> labels;  // count
  int side = 28;
  std::int64_t count() const { return static_cast<std::int64_t>(labels.size()); }
};

// 0 .. count-1 in a random order: Fisher-Yates with rng (j = floor(uniform() * (i + 1))).
std::vector<std::int64_t> shuffled_indices(std::int64_t count, Rng& rng);

template <typename T, typename Model = ViT<T>>
class Trainer {
 public:
  explicit Trainer(Model& model, const AdamOptions& adam = {});
  // Continues with an optimiser's state (e.g. a copy of another trainer's adam(), reset() where a tensor
  // changed shape); its tensors must match the model's in number and size (checked at each step).
  Trainer(Model& model, Adam<T> state);

  // One optimiser step on the images data[batch]: the mean cross-entropy's gradient, summed chunk by
  // chunk in index order, then Adam with learning rate lr. Returns the batch's mean loss (before the step).
  // When that loss or any entry of the gradient is not finite (a method whose forward divides by an
  // estimate that can reach zero, such as random Fourier attention), Adam is NOT applied: the model and
  // the optimiser stay as they were, finite, and last_step_applied() says so. The run has diverged there.
  // Throws std::runtime_error if Adam's update itself makes a weight non-finite (a learning rate near the
  // largest float).
  double step(const ImageSet& data, std::span<const std::int64_t> batch, double lr);
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

struct Evaluation {
  double loss = 0.0;          // mean cross-entropy over the images with finite logits (NaN when there are none)
  std::int64_t correct = 0;   // argmax (first maximum) equals the label; an image with a non-finite logit is wrong
  std::int64_t count = 0;
  std::int64_t nonfinite = 0; // images whose logits hold a NaN or an infinity (counted wrong, left out of loss)
  double accuracy() const { return count > 0 ? static_cast<double>(correct) / static_cast<double>(count) : 0.0; }
};

// Mean loss and accuracy over the first `count` images of data (all when count < 0), in chunks of
// kChunkImages over OpenMP threads, the chunks' losses summed in index order. Images whose logits are not
// finite are counted in `nonfinite`, as wrong, and left out of the mean loss.
template <typename Model>
Evaluation evaluate(const Model& model, const ImageSet& data, std::int64_t count = -1);

// The logits (images.size(), classes) of data[images], one chunk after another on this thread.
template <typename Model>
Mat<typename Model::Scalar> predict_logits(const Model& model, const ImageSet& data, std::span<const std::int64_t> images);

}  // namespace attnlab
