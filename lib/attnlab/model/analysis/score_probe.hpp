// The score matrices of a trained exact-attention ViT and the loss's gradient with respect to them
// (seed 004, section 2: "the gradient with respect to the matrix S, just before the softmax"), and the
// loss when given offsets are added to them (claims G10, G11, G12).
//
// Shapes, for one image of n tokens through a model of width D with H heads of query/key width d_k:
//   z[l]      (n, D)  the attention's input in layer l: LN1's output
//   s[l][h]   (n, n)  S = q k^T / sqrt(d_k), q = z Wq_h + bq_h, k = z Wk_h + bk_h (the scores, before the softmax)
//   g[l][h]   (n, n)  dL/dS for L = scale * CE(logits, label)
// The probe works one image at a time, so the head index a method receives names the (image, head) pair.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

template <typename T>
struct ImageScores {
  std::vector<Mat<T>> z;               // [layer] (n, D)
  std::vector<std::vector<Mat<T>>> s;  // [layer][head] (n, n)
  std::vector<std::vector<Mat<T>>> g;  // [layer][head] (n, n)
};

// What the probing attention of one layer reads (offsets) and writes (scores, score gradients).
template <typename T>
struct ScoreProbeLayer {
  std::vector<Mat<T>> offsets;  // [head]: added to S before the softmax; empty = none
  std::vector<Mat<T>> s, g;     // [head]: the last forward's S (without offset) and backward's dL/dS
};

template <typename T>
class ScoreProbe {
 public:
  // A copy of `model` (its widths, seed and every tensor) whose layers run the probing exact attention.
  // Throws std::invalid_argument unless every layer of `model` uses exact attention.
  explicit ScoreProbe(const ViT<T>& model);

  const ViT<T>& model() const { return *model_; }

  // One image's forward and backward: fills out, ADDS the parameter gradient of scale * CE into *grads when
  // not null, returns scale * CE. Throws std::out_of_range for an image outside data.
  double run(const ImageSet& data, std::int64_t image, double scale, ImageScores<T>& out, ViTGrads<T>* grads = nullptr);

  // One image's scale * CE with offsets[h] (n, n) added to layer `layer`'s head-h scores before the softmax
  // (an empty offsets[h] adds nothing; offsets must have one entry per head). Forward only.
  double loss_with_offsets(const ImageSet& data, std::int64_t image, Eigen::Index layer,
                           const std::vector<Mat<T>>& offsets, double scale);

 private:
  void load_image(const ImageSet& data, std::int64_t image);

  // unique_ptr: the layers' methods keep pointers to these, so they must not move.
  std::vector<std::unique_ptr<ScoreProbeLayer<T>>> layers_;
  std::unique_ptr<ViT<T>> model_;
  ViTActivations<T> act_;
  ViTGrads<T> scratch_;  // the gradient when the caller wants none
};

}  // namespace attnlab
