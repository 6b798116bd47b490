// Checkpoints: the manifest (written by hand, read by a small strict JSON parser) and the .npy files.
#include "attnlab/model/checkpoint.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <variant>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/npy.hpp"

namespace attnlab {

namespace {

constexpr const char* kFormat = "attnlab-vit-checkpoint";
// Version 2: the patch windows' stride and pad (version 1 had non-overlapping patches only).
constexpr int kVersion = 2;

// ---- a minimal JSON reader: objects, arrays, strings (simple escapes), numbers, true/false/null ----
struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>, std::shared_ptr<JsonObject>> v;
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  Json parse() {
    Json j = value();
    skip();
    if (i_ != s_.size()) fail("trailing characters");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("malformed JSON at byte {}: {}", i_, what));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unterminated escape");
        const char e = s_[i_++];
        if (e == '"' || e == '\\' || e == '/') out += e;
        else if (e == 'n') out += '\n';
        else if (e == 't') out += '\t';
        else fail("unsupported escape");
      } else {
        out += c;
      }
    }
  }
  Json value() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      auto obj = std::make_shared<JsonObject>();
      if (!eat('}')) {
        do {
          skip();
          std::string key = string();
          expect(':');
          (*obj)[key] = value();
        } while (eat(','));
        expect('}');
      }
      return Json{obj};
    }
    if (c == '[') {
      ++i_;
      auto arr = std::make_shared<JsonArray>();
      if (!eat(']')) {
        do arr->push_back(value());
        while (eat(','));
        expect(']');
      }
      return Json{arr};
    }
    if (c == '"') return Json{string()};
    for (const auto& [word, val] : {std::pair<const char*, Json>{"true", Json{true}}, {"false", Json{false}}, {"null", Json{nullptr}}})
      if (s_.compare(i_, std::string(word).size(), word) == 0) {
        i_ += std::string(word).size();
        return val;
      }
    std::size_t used = 0;
    double d = 0;
    try {
      d = std::stod(s_.substr(i_, 40), &used);
    } catch (const std::exception&) {
      fail("expected a value");
    }
    i_ += used;
    return Json{d};
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

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

template <typename T>
std::vector<Entry<T>> entries(ViT<T>& model) {
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

// The manifest's widths, as integers, in the order they are written and compared.
std::vector<std::pair<std::string, std::int64_t>> widths(const ViTConfig& c) {
  return {{"D", c.D},         {"H", c.heads},           {"L", c.layers},        {"mlp", c.mlp},
          {"n", c.tokens()},  {"patch", c.patch},       {"stride", c.stride},   {"pad", c.pad},
          {"image", c.image}, {"classes", c.classes},
          {"projection_k", c.attention.projection_k},   {"features", c.attention.features},
          {"landmarks", c.attention.landmarks},         {"pinv_iterations", c.attention.pinv_iterations}};
}

const JsonObject& as_object(const Json& j, const std::string& what) {
  if (auto p = std::get_if<std::shared_ptr<JsonObject>>(&j.v)) return **p;
  throw std::runtime_error(what + " is not an object");
}
const Json& field(const JsonObject& o, const std::string& key) {
  const auto it = o.find(key);
  if (it == o.end()) throw std::runtime_error("no \"" + key + "\"");
  return it->second;
}
std::string string_field(const JsonObject& o, const std::string& key) {
  if (auto p = std::get_if<std::string>(&field(o, key).v)) return *p;
  throw std::runtime_error("\"" + key + "\" is not a string");
}
std::int64_t int_field(const JsonObject& o, const std::string& key) {
  if (auto p = std::get_if<double>(&field(o, key).v)) {
    const double d = *p;
    if (d == static_cast<double>(static_cast<std::int64_t>(d)) && std::abs(d) < 9e15) return static_cast<std::int64_t>(d);
  }
  throw std::runtime_error("\"" + key + "\" is not an integer");
}

struct Manifest {
  CheckpointInfo info;
  std::map<std::string, std::pair<std::string, std::vector<std::size_t>>> tensors;  // name -> (file, shape)
};

Manifest read_manifest(const std::filesystem::path& dir) {
  const auto path = dir / "manifest.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(fmt::format("checkpoint {}: cannot read {}", dir.string(), path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  try {
    const Json root = JsonParser(text).parse();
    const JsonObject& o = as_object(root, "manifest");
    if (string_field(o, "format") != kFormat) throw std::runtime_error("format is not \"" + std::string(kFormat) + "\"");
    if (int_field(o, "version") != kVersion) throw std::runtime_error("version is not " + std::to_string(kVersion));
    Manifest m;
    ViTConfig& c = m.info.config;
    c.attention.method = string_field(o, "method");
    c.D = int_field(o, "D");
    c.heads = int_field(o, "H");
    c.layers = int_field(o, "L");
    c.mlp = int_field(o, "mlp");
    c.patch = static_cast<int>(int_field(o, "patch"));
    c.stride = static_cast<int>(int_field(o, "stride"));
    c.pad = static_cast<int>(int_field(o, "pad"));
    c.image = static_cast<int>(int_field(o, "image"));
    c.classes = int_field(o, "classes");
    c.attention.projection_k = int_field(o, "projection_k");
    c.attention.features = int_field(o, "features");
    c.attention.landmarks = int_field(o, "landmarks");
    c.attention.pinv_iterations = static_cast<int>(int_field(o, "pinv_iterations"));
    // The seed is information only (a 64-bit seed need not survive a JSON number): not compared.
    if (auto p = std::get_if<double>(&field(o, "seed").v); p != nullptr && *p >= 0 && *p < 1.8e19)
      c.seed = static_cast<std::uint64_t>(*p);
    if (const int span = c.image + 2 * c.pad - c.patch;
        c.image < 1 || c.patch < 1 || c.stride < 1 || c.pad < 0 || c.pad >= c.patch || span < 0 || span % c.stride != 0)
      throw std::runtime_error("patch windows (patch " + std::to_string(c.patch) + ", stride " + std::to_string(c.stride) +
                               ", pad " + std::to_string(c.pad) + ") do not tile the image (" + std::to_string(c.image) + ")");
    if (int_field(o, "n") != c.tokens()) throw std::runtime_error("n does not equal ((image + 2 pad - patch) / stride + 1)^2");
    m.info.step = int_field(o, "step");
    const auto* arr = std::get_if<std::shared_ptr<JsonArray>>(&field(o, "parameters").v);
    if (arr == nullptr) throw std::runtime_error("\"parameters\" is not an array");
    for (const Json& e : **arr) {
      const JsonObject& t = as_object(e, "a parameters entry");
      const auto* shape = std::get_if<std::shared_ptr<JsonArray>>(&field(t, "shape").v);
      if (shape == nullptr) throw std::runtime_error("a \"shape\" is not an array");
      std::vector<std::size_t> s;
      for (const Json& d : **shape) {
        const auto* v = std::get_if<double>(&d.v);
        if (v == nullptr || *v < 0 || *v != static_cast<double>(static_cast<std::size_t>(*v)))
          throw std::runtime_error("a shape entry is not a size");
        s.push_back(static_cast<std::size_t>(*v));
      }
      m.tensors[string_field(t, "name")] = {string_field(t, "file"), s};
    }
    return m;
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("checkpoint {}: manifest.json: {}", dir.string(), e.what()));
  }
}

}  // namespace

template <typename T>
void save_checkpoint(ViT<T>& model, const std::filesystem::path& dir, std::int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ensure_writable_directory(dir);
  const ViTConfig& c = model.config();
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
  std::string head = fmt::format("{{\n  \"format\": \"{}\",\n  \"version\": {},\n  \"method\": \"{}\",\n  \"method_description\": \"{}\",\n",
                                 kFormat, kVersion, json_escape(c.attention.method),
                                 json_escape(model.attention(0).describe()));
  for (const auto& [key, value] : widths(c)) head += fmt::format("  \"{}\": {},\n", key, value);
  head += fmt::format("  \"seed\": {},\n  \"step\": {},\n  \"parameters\": [\n{}\n  ]\n}}\n", c.seed, step, params_json);
  write_file_atomically(dir / "manifest.json", head);
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir) { return read_manifest(dir).info; }

template <typename T>
void load_checkpoint(ViT<T>& model, const std::filesystem::path& dir) {
  const Manifest m = read_manifest(dir);
  const ViTConfig& want = model.config();
  const std::string where = "checkpoint " + dir.string();
  if (m.info.config.attention.method != want.attention.method)
    throw CheckpointError(fmt::format("{}: method \"{}\" does not match the model's \"{}\"", where,
                                      m.info.config.attention.method, want.attention.method));
  const auto got_w = widths(m.info.config), want_w = widths(want);
  for (std::size_t i = 0; i < got_w.size(); ++i)
    if (got_w[i].second != want_w[i].second)
      throw CheckpointError(fmt::format("{}: {} = {} does not match the model's {}", where, got_w[i].first,
                                        got_w[i].second, want_w[i].second));
  auto list = entries(model);
  if (m.tensors.size() != list.size())
    throw CheckpointError(fmt::format("{}: {} tensors in the manifest, the model has {}", where, m.tensors.size(), list.size()));
  // Read everything first, so a bad file leaves the model unchanged.
  std::vector<std::vector<double>> values;
  for (const auto& [t, kind] : list) {
    const auto it = m.tensors.find(t.name);
    if (it == m.tensors.end()) throw CheckpointError(fmt::format("{}: no {} \"{}\" in the manifest", where, kind, t.name));
    const auto shape = shape_of(t);
    if (it->second.second != shape)
      throw CheckpointError(fmt::format("{}: \"{}\" has shape {} in the manifest, the model's is {}", where, t.name,
                                        shape_text(it->second.second), shape_text(shape)));
    const std::string& file = it->second.first;
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
    values.push_back(std::move(a.values));
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& t = list[i].ref;
    for (Eigen::Index r = 0; r < t.rows; ++r)
      for (Eigen::Index k = 0; k < t.cols; ++k)
        t.data[k * t.rows + r] = static_cast<T>(values[i][static_cast<std::size_t>(r * t.cols + k)]);
  }
}

template void save_checkpoint<float>(ViT<float>&, const std::filesystem::path&, std::int64_t);
template void save_checkpoint<double>(ViT<double>&, const std::filesystem::path&, std::int64_t);
template void load_checkpoint<float>(ViT<float>&, const std::filesystem::path&);
template void load_checkpoint<double>(ViT<double>&, const std::filesystem::path&);

}  // namespace attnlab
