// A checkpoint's manifest.json (vit_spec.md): what it says about the model and its tensors, read
// strictly from text, so the loader and the fuzz target (fuzz/checkpoint_manifest_fuzz.cpp) share it.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/model/vit.hpp"

namespace attnlab {

// A checkpoint that cannot be read or does not match the model; what() is one line naming the
// directory and the mismatch. Executables map it to exit status 2.
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the manifest says about the model, enough to build a matching ViT before load_checkpoint.
struct CheckpointInfo {
  ViTConfig config;
  std::int64_t step = 0;
};

inline constexpr const char* kCheckpointFormat = "attnlab-vit-checkpoint";
// Version 2: the patch windows' stride and pad (version 1 had non-overlapping patches only). An optional
// "key_width" (ViTConfig::key_width, absent means 0: D / H) is written only by models that set it.
inline constexpr int kCheckpointVersion = 2;

struct CheckpointManifest {
  CheckpointInfo info;
  std::map<std::string, std::pair<std::string, std::vector<std::size_t>>> tensors;  // name -> (file, shape)
};

// The manifest's widths, as integers, in the order they are written and compared.
std::vector<std::pair<std::string, std::int64_t>> checkpoint_widths(const ViTConfig& c);

// Parses manifest.json's text. Throws CheckpointError "<where>: manifest.json: <problem>" for malformed
// JSON, another format or version, a missing or non-integer field, widths outside what a model can have
// (every width and option in [0, 2^20], patch windows that do not tile the image, n that is not their
// count), a tensor entry without name, file or a shape of sizes.
CheckpointManifest parse_checkpoint_manifest(const std::string& text, const std::string& where);

}  // namespace attnlab
