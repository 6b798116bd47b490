// A trained model with another attention method swapped in, no retraining (claims R12 and U18).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/trainable.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// A model (a ViT, a recall model) with `trained`'s widths and seed whose every layer uses `attention` (method and
// options; n, d_k, d_v, heads and the per-layer seed are filled in by the model as always), carrying all of
// `trained`'s own tensors (embedding, projections, LayerNorms, MLPs, head). The new method's own
// parameters and buffers (Linformer's E, F; random-feature draws) are its fresh initialisation from the
// per-layer seed: nothing is trained. Throws what the model's constructor throws for bad options.
template <typename Model>
Model with_attention(const Model& trained, const TrainableAttentionConfig& attention) {
  auto config = trained.config();
  config.attention = attention;
  Model out(config);
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

// One approximation to swap in (U18): a method and the value of its one size parameter. "linformer-segment-means"
// is Linformer with E, F set to segment means instead of its untrained Gaussian draws.
inline constexpr const char* kLinformerSegmentMeans = "linformer-segment-means";
struct SwapConfig {
  std::string method;     // a trainable method's name, or kLinformerSegmentMeans
  std::string parameter;  // "k" (Linformer's projected length), "D" (random features), "m" (landmarks) or "-" (none)
  Eigen::Index value = 0;
  std::string label() const { return parameter == "-" ? method : fmt::format("{} {} = {}", method, parameter, value); }
  TrainableAttentionConfig attention() const {
    TrainableAttentionConfig a;
    a.method = method == kLinformerSegmentMeans ? "linformer" : method;
    if (parameter == "k") a.projection_k = value;
    if (parameter == "D") a.features = value;
    if (parameter == "m") a.landmarks = value;
    return a;
  }
};

// `trained` with the approximation in every layer (with_attention, and segment means where asked).
template <typename Model>
std::unique_ptr<Model> swapped_model(const Model& trained, const SwapConfig& swap) {
  auto m = std::make_unique<Model>(with_attention(trained, swap.attention()));
  if (swap.method == kLinformerSegmentMeans)
    for (Eigen::Index l = 0; l < m->config().layers; ++l) set_segment_mean_projections(m->attention(l));
  return m;
}

// The approximation alone, in double, on one head's q, k, v (n x d each) with its own draws from `seed`: its
// relative output error ||approx - softmax(q k^T / sqrt(d)) v||_F / ||softmax(...) v||_F (U11, U12, L3's metric).
double swap_error_on(const SwapConfig& swap, const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, std::uint64_t seed);

}  // namespace attnlab
