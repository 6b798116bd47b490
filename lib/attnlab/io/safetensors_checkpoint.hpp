// A model's weights in safetensors: one file, or the shards model.safetensors.index.json lists.
//
//   const SafetensorsCheckpoint c = SafetensorsCheckpoint::open("llama-7b/");  // index or single file
//   const auto& [file, t] = c.locate("model.layers.0.self_attn.q_proj.weight");
//   file.read_rows(t, 0, 128, rows.data());
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/io/safetensors.hpp"

namespace attnlab {

// The index file of a sharded checkpoint, and the bound on its size (the largest published indexes are
// well under 1 MB).
inline constexpr const char* kSafetensorsIndexName = "model.safetensors.index.json";
inline constexpr std::uint64_t kSafetensorsMaxIndexBytes = 64u << 20;

class SafetensorsCheckpoint {
 public:
  // `path` is a .safetensors file, an index (.json: {"metadata": {...}, "weight_map": {name: file}}), or a
  // directory holding model.safetensors.index.json, model.safetensors, or exactly one of either kind.
  // Every shard is opened and checked (SafetensorsFile); the index's files must be plain names in its
  // directory, and every name it maps must be in the file it names. Throws SafetensorsError naming the
  // file and the problem.
  static SafetensorsCheckpoint open(const std::filesystem::path& path);

  // What was opened (the file or the index), and the directory holding it (where config.json lives).
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path directory() const { return path_.parent_path(); }
  std::size_t shards() const { return files_.size(); }

  // Every tensor name, sorted (with an index: the names it maps).
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  // The file holding `name` and its entry; SafetensorsError naming the checkpoint when there is none.
  std::pair<const SafetensorsFile&, const SafetensorsTensor&> locate(const std::string& name) const;
  // The first file's "__metadata__" (a single file's own).
  const std::map<std::string, std::string>& metadata() const { return files_.front().header().metadata; }

 private:
  std::filesystem::path path_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, std::size_t> where_;  // tensor name -> index into files_
};

}  // namespace attnlab
