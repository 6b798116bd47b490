// A trained model with another attention method swapped in, no retraining (claims R12 and U18).
#pragma once

#include <stdexcept>
#include <string>

#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/trainable.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// A ViT with `trained`'s widths and seed whose every layer uses `attention` (method and options; n,
// d_k, d_v, heads and the per-layer seed are filled in by the ViT as always), carrying all of
// `trained`'s own tensors (embedding, projections, LayerNorms, MLPs, head). The new method's own
// parameters and buffers (Linformer's E, F; random-feature draws) are its fresh initialisation from the
// per-layer seed: nothing is trained. Throws what the ViT constructor throws for bad options.
template <typename T>
ViT<T> with_attention(const ViT<T>& trained, const TrainableAttentionConfig& attention) {
  ViTConfig config = trained.config();
  config.attention = attention;
  ViT<T> out(config);
  out.params() = trained.params();
  return out;
}

// Sets a Linformer method's E and F (k x n each) to the segment-mean projections (row s averages the s-th
// of k contiguous segments of the sequence: L3's untrained choice that needs no random draw). Throws
// std::invalid_argument when `method` has no parameters named E and F.
template <typename T>
void set_segment_mean_projections(TrainableAttention<T>& method) {
  const auto names = method.parameter_names();
  const auto mats = method.parameters();
  if (names.size() != 2 || names[0] != "E" || names[1] != "F")
    throw std::invalid_argument("set_segment_mean_projections: " + method.name() + " has no E and F");
  const LinformerProjections<double> p = segment_mean_projections(mats[0]->cols(), mats[0]->rows());
  *mats[0] = p.e.cast<T>();
  *mats[1] = p.f.cast<T>();
}

}  // namespace attnlab
