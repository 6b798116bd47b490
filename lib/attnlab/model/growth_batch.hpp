// The growth batch (key_growth.hpp): per layer the stacked inputs X' = [z | 1] of a batch of images and
// per head the blocks of G = dL/dS, L the batch's mean cross-entropy, from the score probe in double.
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/model/key_growth.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// Runs the score probe (model/analysis/score_probe.hpp) image by image, in index order, on a double copy of
// `model` (exact attention in every layer), each image with scale 1 / count: the blocks add up to the G of the
// batch's mean cross-entropy. In double LayerNorm's null direction of X' sits at rounding level, so the
// pseudoinverse's default cutoff finds X''s rank (key_growth.hpp).
template <typename T>
GrowthBatch collect_growth_batch(ViT<T>& model, const ImageSet& data, std::span<const std::int64_t> images);

}  // namespace attnlab
