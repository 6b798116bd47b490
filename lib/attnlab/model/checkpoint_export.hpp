// An attnlab checkpoint (a directory of float32 .npy files and manifest.json, checkpoint.hpp) of either model, the
// ViT or the recall model, loaded as a model, and written as one safetensors file that PyTorch's safetensors
// package loads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/tensor_ref.hpp"
#include "attnlab/model/transformer_blocks.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// The ViT a checkpoint directory describes, built from its manifest and loaded (load_checkpoint: every
// tensor checked). Throws CheckpointError naming the directory.
std::unique_ptr<ViT<float>> load_vit_checkpoint(const std::filesystem::path& dir);

// The same for a recall model's checkpoint (format kRecallCheckpointFormat).
std::unique_ptr<RecallModel<float>> load_recall_checkpoint(const std::filesystem::path& dir);

// The model of either format a checkpoint directory holds (read_checkpoint_format picks the loader; a manifest
// of neither format is refused by the ViT's, which names the format it read). Exactly one of vit, recall is set.
struct LoadedCheckpoint {
  std::unique_ptr<ViT<float>> vit;
  std::unique_ptr<RecallModel<float>> recall;
  std::int64_t step = 0;

  // The pre-LayerNorm blocks both models share, and their widths.
  const std::vector<BlockParams<float>>& blocks() const;
  BlockShape shape() const;
  // Every parameter, then every buffer, under the manifest's names.
  std::vector<TensorRef<float>> tensors() const;
  // The "__metadata__" of its export: "format" (the manifest's), "version", "method", "step", "seed",
  // "key_width" and every width of checkpoint_widths or recall_checkpoint_widths ("D", "H", "L", ...), as
  // decimal strings.
  std::map<std::string, std::string> metadata() const;
};
LoadedCheckpoint load_attnlab_checkpoint(const std::filesystem::path& dir);

// Writes every parameter and buffer of the checkpoint in `dir` (either format) into the safetensors file `path`
// (atomically), under the manifest's names ("block0.attn.Wq", ...), F32, in the manifest's shapes and C
// order: the .npy files' exact values. Weights keep attnlab's convention, input x output (y = x W + b):
// Wq of shape (D, H d_k), head h owning columns h d_k .. (h+1) d_k - 1. Returns the tensor count.
std::size_t export_checkpoint_safetensors(const std::filesystem::path& dir, const std::filesystem::path& path);

}  // namespace attnlab
