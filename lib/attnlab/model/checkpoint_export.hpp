// An attnlab checkpoint (a directory of float32 .npy files and manifest.json, checkpoint.hpp) loaded as a
// model, and written as one safetensors file that PyTorch's safetensors package loads.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "attnlab/model/vit.hpp"

namespace attnlab {

// The ViT a checkpoint directory describes, built from its manifest and loaded (load_checkpoint: every
// tensor checked). Throws CheckpointError naming the directory.
std::unique_ptr<ViT<float>> load_vit_checkpoint(const std::filesystem::path& dir);

// The "__metadata__" of an exported checkpoint: "format" (kCheckpointFormat), "version", "method", "step",
// "seed", "key_width" and every width of checkpoint_widths ("D", "H", "L", ...), as decimal strings.
std::map<std::string, std::string> exported_metadata(const ViT<float>& model, std::int64_t step);

// Writes every parameter and buffer of the checkpoint in `dir` into the safetensors file `path`
// (atomically), under the manifest's names ("block0.attn.Wq", ...), F32, in the manifest's shapes and C
// order: the .npy files' exact values. Weights keep attnlab's convention, input x output (y = x W + b):
// Wq of shape (D, H d_k), head h owning columns h d_k .. (h+1) d_k - 1. Returns the tensor count.
std::size_t export_checkpoint_safetensors(const std::filesystem::path& dir, const std::filesystem::path& path);

}  // namespace attnlab
