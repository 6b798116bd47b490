// How well other attention methods reproduce a trained exact model's attention on its own q, k, v (claim
// U18): each method run on every head of every layer of one image's forward pass.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// A method's relative output error on one layer: ||approx(q, k, v) - o||_F / ||o||_F per head (o the trained
// model's own head output), its mean and largest over the heads.
struct LayerSwapError {
  double mean = 0, max = 0;
};

// One forward pass of `trained` on test item `item` (an image, a sequence), then each of `swapped` (models whose
// layers hold the methods to compare, as with_attention makes them) on that pass's q, k, v of every head and layer.
// Result [m * L + l]: swapped model m, layer l. Model: ViT<float> or RecallModel<float>.
template <typename Model>
std::vector<LayerSwapError> item_swap_errors(const Model& trained, const std::vector<std::unique_ptr<Model>>& swapped,
                                             const typename Model::Data& test, std::int64_t item);

}  // namespace attnlab
