// The common checkpoints' names and storage conventions for W_Q and W_K (qk_layout.hpp).
#include "attnlab/model/qk_layout.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <regex>
#include <set>

#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/printable.hpp"

namespace attnlab {

namespace {

namespace fs = std::filesystem;

// Names relative to the prefix, {l} standing for the layer. A named layout's prefix ("bert.",
// "transformer.", "model.", "vit.", ...) is whatever precedes its layer-0 query name in the checkpoint.
struct LayoutSpec {
  const char* name;
  const char *q, *k, *q_bias, *k_bias;
  QkStorage storage;
  bool rotary;
};
constexpr LayoutSpec kLayouts[] = {
    {"bert", "encoder.layer.{l}.attention.self.query.weight", "encoder.layer.{l}.attention.self.key.weight",
     "encoder.layer.{l}.attention.self.query.bias", "encoder.layer.{l}.attention.self.key.bias", QkStorage::out_in, false},
    {"roberta", "encoder.layer.{l}.attention.self.query.weight", "encoder.layer.{l}.attention.self.key.weight",
     "encoder.layer.{l}.attention.self.query.bias", "encoder.layer.{l}.attention.self.key.bias", QkStorage::out_in, false},
    {"vit", "encoder.layer.{l}.attention.attention.query.weight", "encoder.layer.{l}.attention.attention.key.weight",
     "encoder.layer.{l}.attention.attention.query.bias", "encoder.layer.{l}.attention.attention.key.bias", QkStorage::out_in, false},
    {"gpt2", "h.{l}.attn.c_attn.weight", "h.{l}.attn.c_attn.weight", "h.{l}.attn.c_attn.bias", "h.{l}.attn.c_attn.bias",
     QkStorage::fused_qkv_in_out, false},
    {"llama", "layers.{l}.self_attn.q_proj.weight", "layers.{l}.self_attn.k_proj.weight", "layers.{l}.self_attn.q_proj.bias",
     "layers.{l}.self_attn.k_proj.bias", QkStorage::out_in, true},
    {"attnlab", "block{l}.attn.Wq", "block{l}.attn.Wk", "block{l}.attn.bq", "block{l}.attn.bk", QkStorage::in_out, false},
};
constexpr std::int64_t kMaxLayers = 100000;
constexpr std::uint64_t kMaxConfigBytes = 16u << 20;

[[noreturn]] void layout_refuse(const fs::path& file, const std::string& problem) {
  throw QkLayoutError(escaped(file.string(), true) + ": " + problem);
}

std::string at_layer(const std::string& pattern, Eigen::Index l) {
  std::string out = pattern;
  for (std::size_t at = out.find("{l}"); at != std::string::npos; at = out.find("{l}", at)) out.replace(at, 3, std::to_string(l));
  return out;
}

std::string layout_quoted(const std::string& s) { return fmt::format("\"{}\"", escaped(s)); }

// Three names for a message about a layout that found nothing: attention-looking names first.
std::string some_names(const SafetensorsCheckpoint& c) {
  const auto names = c.names();
  std::vector<std::string> picked;
  for (const auto& n : names)
    if (picked.size() < 3 && (n.find("attn") != std::string::npos || n.find("attention") != std::string::npos ||
                              n.find("query") != std::string::npos || n.find("q_proj") != std::string::npos))
      picked.push_back(n);
  for (const auto& n : names)
    if (picked.size() < 3 && std::find(picked.begin(), picked.end(), n) == picked.end()) picked.push_back(n);
  std::string out;
  for (const auto& n : picked) out += (out.empty() ? "" : ", ") + layout_quoted(n);
  return fmt::format("{} ({} tensor{} in all)", out, names.size(), names.size() == 1 ? "" : "s");
}

// The prefixes p for which p + name is in the checkpoint, p empty or ending in '.'.
std::vector<std::string> prefixes_of(const SafetensorsCheckpoint& c, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& n : c.names())
    if (n.size() >= name.size() && n.compare(n.size() - name.size(), name.size(), name) == 0) {
      const std::string p = n.substr(0, n.size() - name.size());
      if (p.empty() || p.back() == '.') out.push_back(p);
    }
  return out;
}

// The layers present: every l with prefix + pattern(l) in the checkpoint, which must be 0 .. L-1. A name that
// has the pattern's form with something else where {l} stands, a number with a sign or a leading zero ("01",
// "-1") or of more than nine digits, is refused: skipped, it would hide a layer or make a gap look complete.
Eigen::Index count_layers(const SafetensorsCheckpoint& c, const std::string& full_pattern) {
  std::string strict, loose;
  for (std::size_t i = 0; i < full_pattern.size();) {
    if (full_pattern.compare(i, 3, "{l}") == 0) {
      strict += "(0|[1-9][0-9]{0,8})";
      loose += "([+-]?[0-9]+)";
      i += 3;
    } else {
      const std::string ch(1, full_pattern[i++]);
      const std::string literal = std::string("\\^$.|?*+()[]{}").find(ch) != std::string::npos ? "\\" + ch : ch;
      strict += literal;
      loose += literal;
    }
  }
  const std::regex pattern(strict), near(loose);
  std::set<std::int64_t> found;
  for (const auto& n : c.names()) {
    std::smatch m;
    if (std::regex_match(n, m, pattern)) found.insert(std::stoll(m[1].str()));
    else if (std::regex_match(n, m, near))
      layout_refuse(c.path(), fmt::format("tensor {}: layer index {} is not a layer number (0, 1, 2, ... in decimal, without a "
                                          "sign or leading zeros, below 10^9)",
                                          layout_quoted(n), layout_quoted(m[1].str())));
  }
  if (found.empty()) return 0;
  const std::int64_t last = *found.rbegin();
  if (last >= kMaxLayers) layout_refuse(c.path(), fmt::format("layer {} of {}: more than {} layers", last, layout_quoted(full_pattern), kMaxLayers));
  for (std::int64_t l = 0; l <= last; ++l)
    if (found.count(l) == 0) layout_refuse(c.path(), fmt::format("no {} for layer {}, though layer {} has one", layout_quoted(at_layer(full_pattern, l)), l, last));
  return last + 1;
}

Eigen::Index positive_width(const JsonObject& o, const std::string& key, const fs::path& file) {
  const auto it = o.find(key);
  if (it == o.end() || std::holds_alternative<std::nullptr_t>(it->second.v)) return 0;
  const auto* d = std::get_if<double>(&it->second.v);
  if (d == nullptr || !(*d >= 1) || *d > 1e9 || *d != std::floor(*d)) layout_refuse(file, layout_quoted(key) + " is not a positive integer");
  return static_cast<Eigen::Index>(*d);
}

Eigen::Index one_of(const JsonObject& o, const char* a, const char* b, const fs::path& file) {
  const Eigen::Index x = positive_width(o, a, file), y = positive_width(o, b, file);
  if (x != 0 && y != 0 && x != y) layout_refuse(file, fmt::format("\"{}\" is {} but \"{}\" is {}", a, x, b, y));
  return x != 0 ? x : y;
}

std::vector<std::uint64_t> tensor_shape(const SafetensorsCheckpoint& c, const std::string& name) { return c.locate(name).second.shape; }

std::string layout_shape_text(const std::vector<std::uint64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace

std::string describe(QkStorage storage) {
  switch (storage) {
    case QkStorage::out_in: return "out x in (nn.Linear, y = x W^T + b)";
    case QkStorage::in_out: return "in x out (y = x W + b)";
    case QkStorage::fused_qkv_in_out: return "in x out, Q | K | V fused along the output (Conv1D)";
  }
  return "";
}

std::vector<std::string> qk_layout_names() {
  std::vector<std::string> out;
  for (const auto& s : kLayouts) out.push_back(s.name);
  out.push_back("custom");
  out.push_back("auto");
  return out;
}

std::string detect_qk_layout(const SafetensorsCheckpoint& c) {
  // Every named layout whose layer-0 query weight the checkpoint has, under any prefix. BERT's and RoBERTa's names
  // are the same (so are their conventions): the prefix tells them apart where it can ("roberta."), else bert.
  std::vector<const LayoutSpec*> found;
  bool roberta_prefix = false;
  for (const auto& spec : kLayouts) {
    const auto prefixes = prefixes_of(c, at_layer(spec.q, 0));
    if (prefixes.empty()) continue;
    if (std::string(spec.name) == "roberta") {
      roberta_prefix = std::any_of(prefixes.begin(), prefixes.end(), [](const std::string& p) { return p.find("roberta") != std::string::npos; });
      continue;
    }
    found.push_back(&spec);
  }
  if (found.size() == 1) return std::string(found.front()->name) == "bert" && roberta_prefix ? "roberta" : found.front()->name;
  if (found.empty())
    layout_refuse(c.path(), fmt::format("layout auto: no layer-0 query weight of any layout ({}) is there; it has {}: give --layout "
                                        "custom with --q-pattern and --k-pattern", fmt::join(qk_layout_names(), ", "), some_names(c)));
  std::vector<std::string> names;
  for (const auto* spec : found) names.push_back(spec->name);
  layout_refuse(c.path(), fmt::format("layout auto: the names fit {} layouts ({}); choose one with --layout", found.size(), fmt::join(names, ", ")));
}

std::optional<QkConfig> read_qk_config(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const JsonObject obj = read_bounded_json_object(path, kMaxConfigBytes, "of model settings");
  QkConfig c;
  c.path = path;
  c.heads = one_of(obj, "num_attention_heads", "n_head", path);
  c.hidden = one_of(obj, "hidden_size", "n_embd", path);
  c.kv_heads = positive_width(obj, "num_key_value_heads", path);
  c.head_dim = positive_width(obj, "head_dim", path);
  return c;
}

void plan_qk_widths(QkLayoutPlan& p, const QkLayoutOptions& o, const QkWidthSource& source) {
  const auto refuse = [&](const std::string& problem) {
    if (source.file) layout_refuse(*source.file, problem);
    throw QkLayoutError(problem);
  };
  // Widths from the shapes: (rows, cols) of the query and key weights as stored.
  const auto qs = source.shape(p.q[0]), ks = source.shape(p.k[0]);
  if (qs.size() != 2 || ks.size() != 2)
    refuse(fmt::format("{} has shape {} and {} shape {}; weights are 2-D", layout_quoted(p.q[0]), layout_shape_text(qs), layout_quoted(p.k[0]), layout_shape_text(ks)));
  const bool rows_out = p.storage == QkStorage::out_in;
  const std::uint64_t d = rows_out ? qs[1] : qs[0], q_out = rows_out ? qs[0] : qs[1], k_out = rows_out ? ks[0] : ks[1];
  std::uint64_t q_width = q_out, k_width = k_out;
  if (p.storage == QkStorage::fused_qkv_in_out) {
    if (q_out % 3 != 0) refuse(fmt::format("{} has {} output columns, not Q | K | V of equal width", layout_quoted(p.q[0]), q_out));
    q_width = k_width = q_out / 3;
  }
  if ((rows_out ? ks[1] : ks[0]) != d)
    refuse(fmt::format("{} has shape {} but {} has {}: the input widths differ", layout_quoted(p.k[0]), layout_shape_text(ks), layout_quoted(p.q[0]), layout_shape_text(qs)));
  if (d == 0 || q_width == 0 || k_width == 0) refuse(fmt::format("{} has shape {}: an empty weight", layout_quoted(p.q[0]), layout_shape_text(qs)));
  for (const auto& [bias, width] : {std::pair{&p.q_bias, q_out}, std::pair{&p.k_bias, k_out}})
    if (!bias->front().empty() && source.shape(bias->front()) != std::vector<std::uint64_t>{width})
      refuse(fmt::format("{} has shape {}, its weight needs [{}]", layout_quoted(bias->front()), layout_shape_text(source.shape(bias->front())), width));
  p.d = static_cast<Eigen::Index>(d);

  // Heads: the flag, else config.json, else the checkpoint's own metadata.
  const auto config = source.config();
  const fs::path config_file = config ? config->path : source.config_file;
  const auto refuse_config = [&](const std::string& problem) { layout_refuse(config_file, problem); };
  if (o.heads > 0) {
    if (config && config->heads != 0 && config->heads != o.heads)
      throw QkLayoutError(fmt::format("--heads {} but {} says {} heads", o.heads, escaped(config_file.string(), true), config->heads));
    p.heads = o.heads, p.heads_from = "--heads";
  } else if (config && config->heads != 0) {
    p.heads = config->heads, p.heads_from = "config.json";
  } else if (const auto it = source.metadata.find("H"); it != source.metadata.end()) {
    if (it->second.empty() || it->second.size() > 9 || it->second.find_first_not_of("0123456789") != std::string::npos || std::stol(it->second) < 1)
      refuse("__metadata__ \"H\" is not a positive integer");
    p.heads = std::stol(it->second), p.heads_from = "__metadata__";
  } else {
    refuse("no config.json beside it naming num_attention_heads (or n_head): give --heads");
  }
  if (config && config->hidden != 0 && static_cast<std::uint64_t>(config->hidden) != d)
    refuse_config(fmt::format("hidden size {}, but {} takes inputs of width {}", config->hidden, layout_quoted(p.q[0]), d));
  if (q_width % static_cast<std::uint64_t>(p.heads) != 0)
    refuse(fmt::format("{}'s {} query outputs do not split into {} heads ({})", layout_quoted(p.q[0]), q_width, p.heads, p.heads_from));
  p.d_k = static_cast<Eigen::Index>(q_width) / p.heads;
  if (config && config->head_dim != 0 && config->head_dim != p.d_k)
    refuse_config(fmt::format("head_dim {}, but {} query outputs over {} heads give {}", config->head_dim, q_width, p.heads, p.d_k));
  if (k_width % static_cast<std::uint64_t>(p.d_k) != 0 || p.heads % static_cast<Eigen::Index>(k_width / static_cast<std::uint64_t>(p.d_k)) != 0)
    refuse(fmt::format("{}'s {} key outputs are not key heads of width {} shared by {} query heads", layout_quoted(p.k[0]), k_width, p.d_k, p.heads));
  p.kv_heads = static_cast<Eigen::Index>(k_width) / p.d_k;
  const Eigen::Index kv_said = o.kv_heads > 0 ? o.kv_heads : config ? config->kv_heads : 0;
  if (kv_said != 0 && kv_said != p.kv_heads) {
    const std::string problem = fmt::format("{} key heads said ({}), but {} holds {} of width {}", kv_said,
                                            o.kv_heads > 0 ? "--kv-heads" : "num_key_value_heads", layout_quoted(p.k[0]), p.kv_heads, p.d_k);
    if (o.kv_heads > 0) refuse(problem);
    refuse_config(problem);
  }
}

QkLayoutPlan plan_qk_layout(const SafetensorsCheckpoint& c, const QkLayoutOptions& given) {
  const fs::path& file = c.path();
  QkLayoutOptions o = given;
  if (o.layout == "auto") o.layout = detect_qk_layout(c);
  QkLayoutPlan p;
  p.layout = o.layout;
  std::string q, k, qb, kb;
  if (o.layout == "custom") {
    if (o.q_pattern.find("{l}") == std::string::npos || o.k_pattern.find("{l}") == std::string::npos)
      throw QkLayoutError("--layout custom needs --q-pattern and --k-pattern, each naming layer {l}'s weight with {l}");
    q = o.q_pattern, k = o.k_pattern, qb = o.q_bias_pattern, kb = o.k_bias_pattern;
    p.storage = o.transpose ? QkStorage::in_out : QkStorage::out_in;
  } else {
    const auto* spec = std::find_if(std::begin(kLayouts), std::end(kLayouts), [&](const LayoutSpec& s) { return o.layout == s.name; });
    if (spec == std::end(kLayouts)) throw QkLayoutError(fmt::format("unknown layout {} (one of {})", layout_quoted(o.layout), fmt::join(qk_layout_names(), ", ")));
    q = spec->q, k = spec->k, qb = spec->q_bias, kb = spec->k_bias;
    p.storage = spec->storage;
    p.rotary = spec->rotary;
  }

  // The prefix: given, or the one thing that precedes layer 0's query weight.
  if (o.prefix) {
    p.prefix = *o.prefix;
  } else if (o.layout != "custom") {
    const auto found = prefixes_of(c, at_layer(q, 0));
    if (found.empty())
      layout_refuse(file, fmt::format("layout {}: no tensor named {} (with any prefix such as \"bert.\", \"transformer.\" or \"model.\"); it has {}",
                               o.layout, layout_quoted(at_layer(q, 0)), some_names(c)));
    if (found.size() > 1) {
      std::vector<std::string> shown;
      for (const auto& f : found) shown.push_back(layout_quoted(f));
      layout_refuse(file, fmt::format("layout {}: {} is found under {} prefixes ({}); choose one with --prefix", o.layout,
                               layout_quoted(at_layer(q, 0)), found.size(), fmt::join(shown, ", ")));
    }
    p.prefix = found.front();
  }
  p.layers = count_layers(c, p.prefix + q);
  if (p.layers == 0)
    layout_refuse(file, fmt::format("layout {}: no tensor named {}; it has {}", o.layout, layout_quoted(p.prefix + at_layer(q, 0)), some_names(c)));
  const bool q_bias = !qb.empty() && c.has(p.prefix + at_layer(qb, 0)), k_bias = !kb.empty() && c.has(p.prefix + at_layer(kb, 0));
  std::set<std::string> dtypes;
  for (Eigen::Index l = 0; l < p.layers; ++l) {
    p.q.push_back(p.prefix + at_layer(q, l));
    p.k.push_back(p.prefix + at_layer(k, l));
    p.q_bias.push_back(q_bias ? p.prefix + at_layer(qb, l) : "");
    p.k_bias.push_back(k_bias ? p.prefix + at_layer(kb, l) : "");
    for (const auto* names : {&p.q, &p.k, &p.q_bias, &p.k_bias}) {
      const std::string& name = names->back();
      if (name.empty()) continue;
      if (!c.has(name)) layout_refuse(file, fmt::format("layout {}: no {} (layer 0 has its counterpart)", o.layout, layout_quoted(name)));
      const SafetensorsTensor& t = c.locate(name).second;
      if (!is_float_dtype(t.dtype))
        layout_refuse(file, fmt::format("tensor {} has dtype {}; an attention weight is read from F64, F32, F16 or BF16 only", layout_quoted(name), to_string(t.dtype)));
      const std::string& first = (*names)[0];
      if (t.shape != tensor_shape(c, first))
        layout_refuse(file, fmt::format("tensor {} has shape {}, but {} has {}", layout_quoted(name), layout_shape_text(t.shape), layout_quoted(first), layout_shape_text(tensor_shape(c, first))));
      dtypes.insert(to_string(t.dtype));
      p.needs_double = p.needs_double || t.dtype == SafetensorsDtype::F64;
    }
  }
  p.dtypes.assign(dtypes.begin(), dtypes.end());

  plan_qk_widths(p, o, {[&c](const std::string& name) { return tensor_shape(c, name); },
                        [&c] { return read_qk_config(c.directory()); }, c.directory() / "config.json", c.metadata(), file});
  return p;
}

}  // namespace attnlab
