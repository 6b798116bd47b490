// A model's weights in safetensors: one file or an index's shards (safetensors_checkpoint.hpp).
#include "attnlab/io/safetensors_checkpoint.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/printable.hpp"

namespace attnlab {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void index_refuse(const fs::path& file, const std::string& problem) {
  throw SafetensorsError(escaped(file.string(), true) + ": " + problem);
}

bool name_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A directory stands for its index or its single file: the usual names first, else the only candidate.
fs::path resolve_directory(const fs::path& dir) {
  for (const char* name : {kSafetensorsIndexName, "model.safetensors"})
    if (fs::exists(dir / name)) return dir / name;
  std::vector<fs::path> indexes, files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name_ends_with(name, ".safetensors.index.json")) indexes.push_back(it->path());
    if (name_ends_with(name, ".safetensors")) files.push_back(it->path());
  }
  if (ec) index_refuse(dir, "cannot list the directory: " + ec.message());
  if (indexes.size() == 1) return indexes.front();
  if (indexes.empty() && files.size() == 1) return files.front();
  index_refuse(dir, fmt::format("holds {} *.safetensors.index.json and {} *.safetensors files and neither {} nor model.safetensors: "
                          "name the file or index to read",
                          indexes.size(), files.size(), kSafetensorsIndexName));
}

// The index's weight_map, each shard a plain file name in the index's directory (never a path: a
// hostile index must not send us elsewhere).
std::map<std::string, std::string> read_index(const fs::path& path) {
  const JsonObject obj = read_bounded_json_object(path, kSafetensorsMaxIndexBytes, "{\"metadata\", \"weight_map\"}");
  for (const auto& [key, value] : obj) {
    if (key == "metadata") {
      if (!std::holds_alternative<std::shared_ptr<JsonObject>>(value.v)) index_refuse(path, "\"metadata\" is not an object");
    } else if (key != "weight_map") {
      index_refuse(path, "unknown key \"" + escaped(key) + "\" (only \"metadata\" and \"weight_map\")");
    }
  }
  const auto it = obj.find("weight_map");
  if (it == obj.end()) index_refuse(path, "no \"weight_map\"");
  const auto* map = std::get_if<std::shared_ptr<JsonObject>>(&it->second.v);
  if (map == nullptr) index_refuse(path, "\"weight_map\" is not an object");
  if ((*map)->empty()) index_refuse(path, "\"weight_map\" names no tensor");
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : **map) {
    const auto* f = std::get_if<std::string>(&file.v);
    if (f == nullptr) index_refuse(path, "weight_map: tensor \"" + escaped(name) + "\" maps to no file name");
    if (f->empty() || *f == "." || *f == ".." || f->find('/') != std::string::npos || f->find('\0') != std::string::npos)
      index_refuse(path, "weight_map: tensor \"" + escaped(name) + "\" maps to \"" + escaped(*f) + "\", not a file name in the index's directory");
    out[name] = *f;
  }
  return out;
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const fs::path& given) {
  std::error_code ec;
  const fs::path path = fs::is_directory(given, ec) ? resolve_directory(given) : given;
  SafetensorsCheckpoint c;
  c.path_ = path;
  if (!name_ends_with(path.filename().string(), ".json")) {
    c.files_.emplace_back(path);
    for (const auto& t : c.files_.front().header().tensors) c.where_[t.name] = 0;
    if (c.where_.empty()) index_refuse(path, "holds no tensor");
    return c;
  }
  const auto map = read_index(path);
  std::map<std::string, std::size_t> shard_of;  // file name -> index into files_, in name order
  for (const auto& [name, file] : map) shard_of.emplace(file, 0);
  for (auto& [file, index] : shard_of) {
    index = c.files_.size();
    c.files_.emplace_back(path.parent_path() / file);
  }
  for (const auto& [name, file] : map) {
    const std::size_t index = shard_of.at(file);
    if (c.files_[index].header().find(name) == nullptr)
      index_refuse(path, "weight_map names tensor \"" + escaped(name) + "\" in " + escaped(file, true) + ", which does not hold it");
    c.where_[name] = index;
  }
  return c;
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, unused] : where_) out.push_back(name);
  return out;
}

std::pair<const SafetensorsFile&, const SafetensorsTensor&> SafetensorsCheckpoint::locate(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) index_refuse(path_, "no tensor \"" + escaped(name) + "\"");
  const SafetensorsFile& f = files_[it->second];
  return {f, f.tensor(name)};
}

}  // namespace attnlab
