// A checkpoint's manifest.json, read strictly (checkpoint_manifest.hpp).
#include "attnlab/model/checkpoint_manifest.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/printable.hpp"

namespace attnlab {

namespace {

// Widths and options are small: bounding them keeps every product below (a grid squared, a count of
// weights) inside int64 and every narrowing to int exact.
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;

std::int64_t width_field(const JsonObject& o, const std::string& key) {
  const std::int64_t v = json_int_field(o, key);
  if (v < 0 || v > kMaxWidth) throw std::runtime_error(fmt::format("\"{}\" = {} is outside [0, {}]", key, v, kMaxWidth));
  return v;
}

// The "parameters" list: each entry's name, file, shape, dtype (float32 only) and kind, no name twice.
std::map<std::string, CheckpointTensor> tensor_entries(const JsonObject& o) {
  std::map<std::string, CheckpointTensor> tensors;
  const auto* arr = std::get_if<std::shared_ptr<JsonArray>>(&json_field(o, "parameters").v);
  if (arr == nullptr) throw std::runtime_error("\"parameters\" is not an array");
  for (const Json& e : **arr) {
    const JsonObject& t = json_object(e, "a parameters entry");
    const auto* shape = std::get_if<std::shared_ptr<JsonArray>>(&json_field(t, "shape").v);
    if (shape == nullptr) throw std::runtime_error("a \"shape\" is not an array");
    std::vector<std::size_t> s;
    for (const Json& d : **shape) {
      // Range first: converting a double outside size_t's range is undefined behaviour.
      const auto* v = std::get_if<double>(&d.v);
      if (v == nullptr || !(*v >= 0 && *v <= 9007199254740992.0) || *v != std::floor(*v))
        throw std::runtime_error("a shape entry is not a size");
      s.push_back(static_cast<std::size_t>(*v));
    }
    const std::string name = json_string_field(t, "name");
    CheckpointTensor tensor{json_string_field(t, "file"), s, json_string_field(t, "kind")};
    if (const std::string dtype = json_string_field(t, "dtype"); dtype != kCheckpointDtype)
      throw std::runtime_error(fmt::format("\"{}\" has dtype \"{}\"; a checkpoint's tensors are {}", escaped(name),
                                           escaped(dtype), kCheckpointDtype));
    if (tensor.kind != "parameter" && tensor.kind != "buffer")
      throw std::runtime_error(fmt::format("\"{}\" has kind \"{}\", neither parameter nor buffer", escaped(name),
                                           escaped(tensor.kind)));
    if (!tensors.emplace(name, std::move(tensor)).second)
      throw std::runtime_error(fmt::format("\"{}\" is listed twice", escaped(name)));
  }
  return tensors;
}

// The seed is information only (a 64-bit seed need not survive a JSON number): not compared.
std::uint64_t seed_field(const JsonObject& o) {
  if (auto p = std::get_if<double>(&json_field(o, "seed").v); p != nullptr && *p >= 0 && *p < 1.8e19)
    return static_cast<std::uint64_t>(*p);
  return 0;
}

}  // namespace

std::vector<std::pair<std::string, std::int64_t>> checkpoint_widths(const ViTConfig& c) {
  return {{"D", c.D},         {"H", c.heads},           {"L", c.layers},        {"mlp", c.mlp},
          {"n", c.tokens()},  {"patch", c.patch},       {"stride", c.stride},   {"pad", c.pad},
          {"image", c.image}, {"classes", c.classes},
          {"projection_k", c.attention.projection_k},   {"features", c.attention.features},
          {"landmarks", c.attention.landmarks},         {"pinv_iterations", c.attention.pinv_iterations}};
}

CheckpointManifest parse_checkpoint_manifest(const std::string& text, const std::string& where) {
  try {
    const Json root = parse_json(text);
    const JsonObject& o = json_object(root, "manifest");
    if (json_string_field(o, "format") != kCheckpointFormat)
      throw std::runtime_error("format is not \"" + std::string(kCheckpointFormat) + "\"");
    if (json_int_field(o, "version") != kCheckpointVersion)
      throw std::runtime_error("version is not " + std::to_string(kCheckpointVersion));
    CheckpointManifest m;
    ViTConfig& c = m.info.config;
    c.attention.method = json_string_field(o, "method");
    c.D = width_field(o, "D");
    c.heads = width_field(o, "H");
    c.layers = width_field(o, "L");
    c.mlp = width_field(o, "mlp");
    c.patch = static_cast<int>(width_field(o, "patch"));
    c.stride = static_cast<int>(width_field(o, "stride"));
    c.pad = static_cast<int>(width_field(o, "pad"));
    c.image = static_cast<int>(width_field(o, "image"));
    c.classes = width_field(o, "classes");
    c.attention.projection_k = width_field(o, "projection_k");
    c.attention.features = width_field(o, "features");
    c.attention.landmarks = width_field(o, "landmarks");
    c.attention.pinv_iterations = static_cast<int>(width_field(o, "pinv_iterations"));
    // Optional (absent in version-2 manifests of default models): the query/key width per head, 0 = D / H.
    if (o.count("key_width") != 0) c.key_width = width_field(o, "key_width");
    c.seed = seed_field(o);
    if (const int span = c.image + 2 * c.pad - c.patch;
        c.image < 1 || c.patch < 1 || c.stride < 1 || c.pad >= c.patch || span < 0 || span % c.stride != 0)
      throw std::runtime_error("patch windows (patch " + std::to_string(c.patch) + ", stride " + std::to_string(c.stride) +
                               ", pad " + std::to_string(c.pad) + ") do not tile the image (" + std::to_string(c.image) + ")");
    if (json_int_field(o, "n") != c.tokens())
      throw std::runtime_error("n does not equal ((image + 2 pad - patch) / stride + 1)^2");
    m.info.step = json_int_field(o, "step");
    m.tensors = tensor_entries(o);
    return m;
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("{}: manifest.json: {}", where, e.what()));
  }
}

std::vector<std::pair<std::string, std::int64_t>> recall_checkpoint_widths(const RecallConfig& c) {
  return {{"pairs", c.task.pairs},   {"keys", c.task.keys},       {"values", c.task.values},
          {"n", c.tokens()},         {"D", c.D},                  {"H", c.heads},
          {"L", c.layers},           {"mlp", c.mlp},              {"projection_k", c.attention.projection_k},
          {"features", c.attention.features}, {"landmarks", c.attention.landmarks},
          {"pinv_iterations", c.attention.pinv_iterations}};
}

RecallCheckpointManifest parse_recall_checkpoint_manifest(const std::string& text, const std::string& where) {
  try {
    const Json root = parse_json(text);
    const JsonObject& o = json_object(root, "manifest");
    if (json_string_field(o, "format") != kRecallCheckpointFormat)
      throw std::runtime_error("format is not \"" + std::string(kRecallCheckpointFormat) + "\"");
    if (json_int_field(o, "version") != kRecallCheckpointVersion)
      throw std::runtime_error("version is not " + std::to_string(kRecallCheckpointVersion));
    RecallCheckpointManifest m;
    RecallConfig& c = m.info.config;
    c.attention.method = json_string_field(o, "method");
    c.task.pairs = width_field(o, "pairs");
    c.task.keys = width_field(o, "keys");
    c.task.values = width_field(o, "values");
    c.D = width_field(o, "D");
    c.heads = width_field(o, "H");
    c.layers = width_field(o, "L");
    c.mlp = width_field(o, "mlp");
    c.attention.projection_k = width_field(o, "projection_k");
    c.attention.features = width_field(o, "features");
    c.attention.landmarks = width_field(o, "landmarks");
    c.attention.pinv_iterations = static_cast<int>(width_field(o, "pinv_iterations"));
    if (o.count("key_width") != 0) c.key_width = width_field(o, "key_width");
    c.seed = seed_field(o);
    if (const std::string problem = recall_task_problem(c.task); !problem.empty()) throw std::runtime_error(problem);
    if (json_int_field(o, "n") != c.tokens()) throw std::runtime_error("n does not equal 2 pairs");
    m.info.step = json_int_field(o, "step");
    m.tensors = tensor_entries(o);
    return m;
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("{}: manifest.json: {}", where, e.what()));
  }
}

std::string checkpoint_format_of(const std::string& text) {
  try {
    const Json root = parse_json(text);
    return json_string_field(json_object(root, "manifest"), "format");
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace attnlab
