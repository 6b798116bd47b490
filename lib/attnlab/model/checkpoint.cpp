// Checkpoints: the manifest (written by hand, read by checkpoint_manifest.cpp) and the .npy files.
#include "attnlab/model/checkpoint.hpp"

#include <fmt/format.h>

#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/npy.hpp"

namespace attnlab {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

template <typename T>
struct Entry {
  TensorRef<T> ref;
  const char* kind;
};

template <typename Model, typename T = typename Model::Scalar>
std::vector<Entry<T>> entries(Model& model) {
  std::vector<Entry<T>> out;
  for (const auto& t : model.parameter_tensors()) out.push_back({t, "parameter"});
  for (const auto& t : model.buffer_tensors()) out.push_back({t, "buffer"});
  return out;
}

std::vector<std::size_t> shape_of(const TensorRef<float>& t) {
  return t.is_vector ? std::vector<std::size_t>{static_cast<std::size_t>(t.rows)}
                     : std::vector<std::size_t>{static_cast<std::size_t>(t.rows), static_cast<std::size_t>(t.cols)};
}
std::vector<std::size_t> shape_of(const TensorRef<double>& t) {
  return t.is_vector ? std::vector<std::size_t>{static_cast<std::size_t>(t.rows)}
                     : std::vector<std::size_t>{static_cast<std::size_t>(t.rows), static_cast<std::size_t>(t.cols)};
}

std::string shape_text(const std::vector<std::size_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// manifest.json's text, bounded and non-blocking: a FIFO is refused at once, /dev/zero before a byte is read.
std::string read_manifest_text(const std::filesystem::path& dir) {
  const auto path = dir / "manifest.json";
  try {
    return read_bounded_text(path, kMaxManifestBytes, "the 16 MiB a manifest may hold");
  } catch (const BoundedFileError& e) {
    throw CheckpointError(fmt::format("checkpoint {}: cannot read {}: {}", dir.string(), path.string(), e.problem()));
  }
}

CheckpointManifest read_manifest(const std::filesystem::path& dir) {
  const std::string where = "checkpoint " + dir.string();
  CheckpointManifest m = parse_checkpoint_manifest(read_manifest_text(dir), where);
  // The widths against the memory left, before a model of them is built (ViT's constructor checks again).
  if (const std::string problem = vit_memory_problem(m.info.config, sizeof(float)); !problem.empty())
    throw CheckpointError(fmt::format("{}: manifest.json: {}", where, problem));
  return m;
}

RecallCheckpointManifest read_recall_manifest(const std::filesystem::path& dir) {
  const std::string where = "checkpoint " + dir.string();
  RecallCheckpointManifest m = parse_recall_checkpoint_manifest(read_manifest_text(dir), where);
  if (const std::string problem = recall_config_problem(m.info.config, sizeof(float)); !problem.empty())
    throw CheckpointError(fmt::format("{}: manifest.json: {}", where, problem));
  return m;
}

// Writes every tensor of the model as a float32 .npy into dir; returns the manifest's "parameters" entries.
template <typename Model>
std::string write_tensors(Model& model, const std::filesystem::path& dir) {
  std::string params_json;
  for (const auto& [t, kind] : entries(model)) {
    const std::string file = t.name + ".npy";
    NpyArray a;
    a.shape = shape_of(t);
    a.dtype = NpyDtype::float32;
    a.values.resize(static_cast<std::size_t>(t.size()));
    // Column-major storage -> C order: entry (r, c) at r * cols + c.
    for (Eigen::Index r = 0; r < t.rows; ++r)
      for (Eigen::Index k = 0; k < t.cols; ++k)
        a.values[static_cast<std::size_t>(r * t.cols + k)] = static_cast<double>(t.data[k * t.rows + r]);
    write_npy(dir / file, a);
    std::string shape = "[";
    for (std::size_t i = 0; i < a.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape[i]);
    params_json += fmt::format("{}    {{\"name\": \"{}\", \"file\": \"{}\", \"shape\": {}], \"dtype\": \"float32\", \"kind\": \"{}\"}}",
                               params_json.empty() ? "" : ",\n", json_escape(t.name), json_escape(file), shape, kind);
  }
  return params_json;
}

// Every tensor of the model from the manifest's entries and their files: each must be present with its shape and
// kind (and no other), each file a float32 .npy of that shape, else CheckpointError naming the first mismatch.
// Everything is read first, so a bad file leaves the model unchanged.
template <typename Model>
void read_tensors(Model& model, const std::map<std::string, CheckpointTensor>& tensors, const std::filesystem::path& dir,
                  const std::string& where) {
  auto list = entries(model);
  if (tensors.size() != list.size())
    throw CheckpointError(fmt::format("{}: {} tensors in the manifest, the model has {}", where, tensors.size(), list.size()));
  std::vector<std::vector<double>> values;
  for (const auto& [t, kind] : list) {
    const auto it = tensors.find(t.name);
    if (it == tensors.end()) throw CheckpointError(fmt::format("{}: no {} \"{}\" in the manifest", where, kind, t.name));
    const auto shape = shape_of(t);
    if (it->second.shape != shape)
      throw CheckpointError(fmt::format("{}: \"{}\" has shape {} in the manifest, the model's is {}", where, t.name,
                                        shape_text(it->second.shape), shape_text(shape)));
    if (it->second.kind != kind)
      throw CheckpointError(fmt::format("{}: \"{}\" is a {} in the manifest, the model's is a {}", where, t.name,
                                        it->second.kind, kind));
    const std::string& file = it->second.file;
    if (file.empty() || file.find('/') != std::string::npos || file.find("..") != std::string::npos)
      throw CheckpointError(fmt::format("{}: \"{}\" names the file \"{}\", not a plain file name", where, t.name, file));
    NpyArray a;
    try {
      a = read_npy(dir / file);
    } catch (const NpyError& e) {
      throw CheckpointError(fmt::format("{}: {}", where, e.what()));
    }
    if (a.shape != shape)
      throw CheckpointError(fmt::format("{}: {} has shape {}, \"{}\" needs {}", where, file, shape_text(a.shape), t.name,
                                        shape_text(shape)));
    if (a.dtype != NpyDtype::float32)
      throw CheckpointError(fmt::format("{}: {} holds float64, but the manifest says \"{}\" is {}", where, file, t.name,
                                        kCheckpointDtype));
    values.push_back(std::move(a.values));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& t = list[i].ref;
    for (Eigen::Index r = 0; r < t.rows; ++r)
      for (Eigen::Index k = 0; k < t.cols; ++k)
        t.data[k * t.rows + r] = static_cast<typename Model::Scalar>(values[i][static_cast<std::size_t>(r * t.cols + k)]);
  }
}

// The widths a manifest gives against the model's, in their order; CheckpointError naming the first that differs.
void compare_widths(const std::vector<std::pair<std::string, std::int64_t>>& got,
                    const std::vector<std::pair<std::string, std::int64_t>>& want, const std::string& where) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i].second != want[i].second)
      throw CheckpointError(fmt::format("{}: {} = {} does not match the model's {}", where, got[i].first, got[i].second,
                                        want[i].second));
}

}  // namespace

template <typename T>
void save_checkpoint(ViT<T>& model, const std::filesystem::path& dir, std::int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ensure_writable_directory(dir);
  const ViTConfig& c = model.config();
  const std::string params_json = write_tensors(model, dir);
  std::string head = fmt::format("{{\n  \"format\": \"{}\",\n  \"version\": {},\n  \"method\": \"{}\",\n  \"method_description\": \"{}\",\n",
                                 kCheckpointFormat, kCheckpointVersion, json_escape(c.attention.method),
                                 json_escape(model.attention(0).describe()));
  for (const auto& [key, value] : checkpoint_widths(c)) head += fmt::format("  \"{}\": {},\n", key, value);
  // Only a model with its own query/key width says so: a default model's manifest is the same bytes as before.
  if (c.key_width != 0) head += fmt::format("  \"key_width\": {},\n", c.key_width);
  head += fmt::format("  \"seed\": {},\n  \"step\": {},\n  \"parameters\": [\n{}\n  ]\n}}\n", c.seed, step, params_json);
  write_file_atomically(dir / "manifest.json", head);
}

template <typename T>
void save_checkpoint(RecallModel<T>& model, const std::filesystem::path& dir, std::int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ensure_writable_directory(dir);
  const RecallConfig& c = model.config();
  const std::string params_json = write_tensors(model, dir);
  std::string head = fmt::format("{{\n  \"format\": \"{}\",\n  \"version\": {},\n  \"method\": \"{}\",\n  \"method_description\": \"{}\",\n",
                                 kRecallCheckpointFormat, kRecallCheckpointVersion, json_escape(c.attention.method),
                                 json_escape(model.attention(0).describe()));
  for (const auto& [key, value] : recall_checkpoint_widths(c)) head += fmt::format("  \"{}\": {},\n", key, value);
  if (c.key_width != 0) head += fmt::format("  \"key_width\": {},\n", c.key_width);
  head += fmt::format("  \"seed\": {},\n  \"step\": {},\n  \"parameters\": [\n{}\n  ]\n}}\n", c.seed, step, params_json);
  write_file_atomically(dir / "manifest.json", head);
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir) { return read_manifest(dir).info; }

RecallCheckpointInfo read_recall_checkpoint_info(const std::filesystem::path& dir) { return read_recall_manifest(dir).info; }

std::string read_checkpoint_format(const std::filesystem::path& dir) { return checkpoint_format_of(read_manifest_text(dir)); }

template <typename T>
void load_checkpoint(ViT<T>& model, const std::filesystem::path& dir) {
  const CheckpointManifest m = read_manifest(dir);
  const ViTConfig& want = model.config();
  const std::string where = "checkpoint " + dir.string();
  if (m.info.config.attention.method != want.attention.method)
    throw CheckpointError(fmt::format("{}: method \"{}\" does not match the model's \"{}\"", where,
                                      m.info.config.attention.method, want.attention.method));
  compare_widths(checkpoint_widths(m.info.config), checkpoint_widths(want), where);
  if (m.info.config.key_head_width() != want.key_head_width())
    throw CheckpointError(fmt::format("{}: key_width = {} does not match the model's {}", where,
                                      m.info.config.key_head_width(), want.key_head_width()));
  read_tensors(model, m.tensors, dir, where);
}

template <typename T>
void load_checkpoint(RecallModel<T>& model, const std::filesystem::path& dir) {
  const RecallCheckpointManifest m = read_recall_manifest(dir);
  const RecallConfig& want = model.config();
  const std::string where = "checkpoint " + dir.string();
  if (m.info.config.attention.method != want.attention.method)
    throw CheckpointError(fmt::format("{}: method \"{}\" does not match the model's \"{}\"", where,
                                      m.info.config.attention.method, want.attention.method));
  compare_widths(recall_checkpoint_widths(m.info.config), recall_checkpoint_widths(want), where);
  if (m.info.config.key_head_width() != want.key_head_width())
    throw CheckpointError(fmt::format("{}: key_width = {} does not match the model's {}", where,
                                      m.info.config.key_head_width(), want.key_head_width()));
  read_tensors(model, m.tensors, dir, where);
}

template void save_checkpoint<float>(ViT<float>&, const std::filesystem::path&, std::int64_t);
template void save_checkpoint<double>(ViT<double>&, const std::filesystem::path&, std::int64_t);
template void load_checkpoint<float>(ViT<float>&, const std::filesystem::path&);
template void load_checkpoint<double>(ViT<double>&, const std::filesystem::path&);
template void save_checkpoint<float>(RecallModel<float>&, const std::filesystem::path&, std::int64_t);
template void save_checkpoint<double>(RecallModel<double>&, const std::filesystem::path&, std::int64_t);
template void load_checkpoint<float>(RecallModel<float>&, const std::filesystem::path&);
template void load_checkpoint<double>(RecallModel<double>&, const std::filesystem::path&);

}  // namespace attnlab
