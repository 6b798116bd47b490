// The score matrices of a trained exact-attention model (the ViT, or the recall model) and the loss's gradient with
// respect to them (seed 004, section 2: "the gradient with respect to the matrix S, just before the softmax"), and
// the loss when given offsets are added to them (claims G10, G11, G12).
//
// Shapes, for one item (an image, a recall sequence) of n tokens through a model of width D with H heads of
// query/key width d_k:
//   z[l]      (n, D)  the attention's input in layer l: LN1's output
//   s[l][h]   (n, n)  S = q k^T / sqrt(d_k), q = z Wq_h + bq_h, k = z Wk_h + bk_h (the scores, before the softmax)
//   g[l][h]   (n, n)  dL/dS for L = scale * CE(logits, labels) summed over the item's labelled rows (an image has one,
//                     a recall sequence one per query)
// The probe works one item at a time, so the head index a method receives names the (item, head) pair.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/recall_model.hpp"
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

template <typename T, typename Model = ViT<T>>
class ScoreProbe {
 public:
  using Data = typename Model::Data;
  // A copy of `model` (its widths, seed and every tensor) whose layers run the probing exact attention.
  // Throws std::invalid_argument unless every layer of `model` uses exact attention.
  explicit ScoreProbe(const Model& model);

  const Model& model() const { return *model_; }

  // One item's forward and backward: fills out, ADDS the parameter gradient of scale * CE into *grads when
  // not null, returns scale * CE (summed over the item's labelled rows). Throws std::out_of_range for an item
  // outside data.
  double run(const Data& data, std::int64_t item, double scale, ImageScores<T>& out, typename Model::Grads* grads = nullptr);

  // One item's scale * CE with offsets[h] (n, n) added to layer `layer`'s head-h scores before the softmax
  // (an empty offsets[h] adds nothing; offsets must have one entry per head). Forward only.
  double loss_with_offsets(const Data& data, std::int64_t item, Eigen::Index layer, const std::vector<Mat<T>>& offsets,
                           double scale);

 private:
  // The item's tokens into act_ and its labels into labels_.
  void load_item(const Data& data, std::int64_t item);

  // unique_ptr: the layers' methods keep pointers to these, so they must not move.
  std::vector<std::unique_ptr<ScoreProbeLayer<T>>> layers_;
  std::unique_ptr<Model> model_;
  typename Model::Activations act_;
  typename Model::Grads scratch_;  // the gradient when the caller wants none
  std::vector<std::uint8_t> labels_;
};

}  // namespace attnlab
