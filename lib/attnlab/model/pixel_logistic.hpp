// The linear baseline of the training tables: softmax regression on an image's normalised pixels, trained by
// the ViT's engine (Trainer, fit, evaluate: the same chunks, optimiser, schedule and evaluation). What a
// model must beat before "it learned" means more than a linear classifier on the raw pixels does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/image_set.hpp"
#include "attnlab/model/tensor_ref.hpp"

namespace attnlab {

// Its name in the training tables and in results/checkpoints/: a "method" row beside the attention methods,
// named so that nobody reads it as linear *attention*.
inline constexpr const char* kPixelLogisticBaseline = "pixel-logistic-baseline";

template <typename T>
struct PixelLogisticActivations {
  Mat<T> pixels;   // (B, P), P = side^2: (pixel/255 - mean) / std, vit_spec.md's normalisation
  Mat<T> logits;   // (B, C)
  Mat<T> dlogits;  // (B, C)
};

template <typename T>
struct PixelLogisticGrads {
  Mat<T> W;  // (P, C)
  Vec<T> b;  // (C)
};

template <typename T>
class PixelLogistic {
 public:
  using Scalar = T;
  using Activations = PixelLogisticActivations<T>;
  using Grads = PixelLogisticGrads<T>;
  using Data = ImageSet;  // what it trains on (trainer.hpp)

  // W (side^2, classes) ~ N(0, 0.02^2) drawn from Rng(seed) column by column, b = 0: vit_spec.md's rule for
  // weight matrices and biases. Throws std::invalid_argument for side < 1 or classes outside 1..256.
  PixelLogistic(int side, Eigen::Index classes, std::uint64_t seed);

  int side() const { return side_; }
  Eigen::Index classes() const { return W_.cols(); }
  std::uint64_t seed() const { return seed_; }
  const Mat<T>& W() const { return W_; }
  const Vec<T>& b() const { return b_; }
  std::string describe() const;

  // "head.W" (P, C) and "head.b" (C), the names a classifier's weights have in a ViT checkpoint.
  std::vector<TensorRef<T>> parameter_tensors();
  std::vector<TensorRef<T>> gradient_tensors(Grads& grads);
  Grads zero_grads() const;
  Eigen::Index parameter_count() const { return W_.size() + b_.size(); }

  // act.pixels from images `images` of `pixels` (side x side uint8 each, row-major, one after another).
  void set_inputs(Activations& act, std::span<const std::uint8_t> pixels, int side, std::span<const std::int64_t> images) const;
  // The same from a data set (the trainer's call).
  void set_inputs(Activations& act, const ImageSet& data, std::span<const std::int64_t> images) const {
    set_inputs(act, data.pixels, data.side, images);
  }

  // Logits = pixels W + b into act.logits; with grads, ADDS the gradient of scale * sum_b CE(logits_b,
  // labels_b) into *grads. Returns scale * sum_b CE (0 when labels is empty).
  double forward_backward(Activations& act, std::span<const std::uint8_t> labels, double scale, Grads* grads) const;

 private:
  int side_;
  std::uint64_t seed_;
  Mat<T> W_;
  Vec<T> b_;
};

// Writes W and b as float32 .npy files (C order, the y = x W convention) and manifest.json into `dir`
// (created if needed; each file atomically, the manifest last): {"format": "attnlab-pixel-logistic",
// "version": 1, "method", "image", "classes", "seed", "step", "parameters": [{"name", "file", "shape",
// "dtype", "kind"}...]}, loadable by numpy.load as a ViT checkpoint is.
template <typename T>
void save_pixel_logistic(const PixelLogistic<T>& model, const std::filesystem::path& dir, std::int64_t step);

}  // namespace attnlab
