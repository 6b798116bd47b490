// A checkpoint's manifest.json (vit_spec.md, recall_spec.md): what it says about the model and its tensors, read
// strictly from text, so the loader and the fuzz target (fuzz/checkpoint_manifest_fuzz.cpp) share it.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/model/recall_model.hpp"
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

// The only element type a checkpoint's .npy files hold (save_checkpoint writes float32).
inline constexpr const char* kCheckpointDtype = "float32";

struct CheckpointTensor {
  std::string file;                // a plain file name in the checkpoint's directory
  std::vector<std::size_t> shape;  // as the .npy file must hold it
  std::string kind;                // "parameter" (trained) or "buffer" (a method's fixed draws)
};

struct CheckpointManifest {
  CheckpointInfo info;
  std::map<std::string, CheckpointTensor> tensors;  // by name
};

// The manifest's widths, as integers, in the order they are written and compared.
std::vector<std::pair<std::string, std::int64_t>> checkpoint_widths(const ViTConfig& c);

// Parses manifest.json's text. Throws CheckpointError "<where>: manifest.json: <problem>" for malformed
// JSON (a key given twice included), another format or version, a missing or non-integer field, widths
// outside what a model can have (every width and option in [0, 2^20], patch windows that do not tile the
// image, n that is not their count), a tensor entry without name, file or a shape of sizes, a name given
// twice (a second entry must not silently replace the first), a dtype other than float32, a kind other
// than parameter or buffer.
CheckpointManifest parse_checkpoint_manifest(const std::string& text, const std::string& where);

// The recall model's checkpoint (recall_spec.md): the same directory of float32 .npy files, with a manifest of
// format "attnlab-recall-checkpoint" whose widths are the task's and the model's.
inline constexpr const char* kRecallCheckpointFormat = "attnlab-recall-checkpoint";
inline constexpr int kRecallCheckpointVersion = 1;

struct RecallCheckpointInfo {
  RecallConfig config;
  std::int64_t step = 0;
};

struct RecallCheckpointManifest {
  RecallCheckpointInfo info;
  std::map<std::string, CheckpointTensor> tensors;  // by name
};

// The recall manifest's widths, in the order they are written and compared (an optional "key_width" apart, as the
// ViT's): pairs, keys, values, n (= 2 pairs), D, H, L, mlp and the method's options.
std::vector<std::pair<std::string, std::int64_t>> recall_checkpoint_widths(const RecallConfig& c);

// Parses a recall manifest's text, as strictly as parse_checkpoint_manifest (the same tensor entries and the
// same refusals; a task recall_task_problem refuses, n other than 2 pairs, widths outside [0, 2^20]).
RecallCheckpointManifest parse_recall_checkpoint_manifest(const std::string& text, const std::string& where);

// The "format" of a manifest's text ("" when the text is not a JSON object with a string "format"): which of the
// two parsers a directory's manifest is for.
std::string checkpoint_format_of(const std::string& text);

// A manifest is a few lines per tensor: a megabyte is thousands of tensors. read_checkpoint_info refuses
// a larger file (and anything but a regular file) before reading it.
inline constexpr std::uint64_t kMaxManifestBytes = std::uint64_t{16} << 20;

}  // namespace attnlab
