// Where a checkpoint keeps each layer's W_Q and W_K: the naming and storage conventions of the common
// Transformer checkpoints (docs/inspect.md), resolved against a safetensors checkpoint's tensor names,
// shapes and the config.json beside it.
//
//   QkLayoutOptions o;
//   o.layout = "gpt2";
//   const QkLayoutPlan plan = plan_qk_layout(SafetensorsCheckpoint::open("gpt2/"), o);
//   plan.q_name(3);   // "transformer.h.3.attn.c_attn.weight"
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/io/safetensors_checkpoint.hpp"

namespace attnlab {

// A layout that does not fit the checkpoint (no tensor found, a shape that does not split into heads,
// a config.json that disagrees); what() is one line naming the file and the problem. Exit status 2.
struct QkLayoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How a projection's weight is stored.
enum class QkStorage {
  out_in,           // nn.Linear: (heads d_k, d), y = x W^T + b; head h owns rows h d_k .. (h+1) d_k - 1
  in_out,           // (d, heads d_k), y = x W + b; head h owns columns h d_k .. (h+1) d_k - 1 (attnlab, --transpose)
  fused_qkv_in_out  // GPT-2's Conv1D c_attn: (d, 3 d), y = x W + b, columns Q | K | V, then heads within each
};
std::string describe(QkStorage storage);

// The layouts by name, in the order --help lists them: bert, roberta, vit, gpt2, llama, attnlab, custom, and auto
// (the named layout whose names the checkpoint has: detect_qk_layout).
std::vector<std::string> qk_layout_names();

// The one named layout (not custom) whose layer-0 query weight the checkpoint has under some prefix: bert and
// roberta name theirs alike and are told apart by a prefix holding "roberta". QkLayoutError naming what the
// checkpoint has when no layout fits, or the layouts that fit when several do.
std::string detect_qk_layout(const SafetensorsCheckpoint& checkpoint);

struct QkLayoutOptions {
  std::string layout;            // one of qk_layout_names()
  std::optional<std::string> prefix;  // prepended to the layout's names; found in the checkpoint when absent
  // custom: the names of layer {l}'s weights (biases optional), stored out x in unless transpose.
  std::string q_pattern, k_pattern, q_bias_pattern, k_bias_pattern;
  bool transpose = false;
  Eigen::Index heads = 0, kv_heads = 0;  // 0: from config.json (or the checkpoint's metadata)
};

// The layout resolved on one checkpoint: every layer's names, the widths and where they came from.
struct QkLayoutPlan {
  std::string layout, prefix;
  QkStorage storage = QkStorage::out_in;
  bool rotary = false;  // positions enter as rotations of q and k (LLaMA): W_Q W_K^T is the score form at relative position 0 only
  Eigen::Index layers = 0, d = 0, heads = 0, kv_heads = 0, d_k = 0;
  std::string heads_from;  // "config.json", "--heads", "__metadata__"
  std::vector<std::string> q, k, q_bias, k_bias;  // per layer; a bias name is "" where the model has none
  bool has_q_bias() const { return !q_bias.empty() && !q_bias.front().empty(); }
  bool has_k_bias() const { return !k_bias.empty() && !k_bias.front().empty(); }
  bool needs_double = false;  // some weight or bias is F64 (float would round it)
  std::vector<std::string> dtypes;  // the weights' and biases' dtypes, each once
  // The key head query head h reads: grouped-query attention shares each key head among heads / kv_heads
  // consecutive query heads (Hugging Face's repeat_kv).
  Eigen::Index kv_head(Eigen::Index h) const { return h / (heads / kv_heads); }
};

// Resolves `options` on `checkpoint` (layout auto: detect_qk_layout's): the prefix (unless given) from the names that end in the layout's
// layer-0 query name, the layer count from the names present (0 .. L-1, none missing), the head count from
// options.heads, else config.json beside the weights (num_attention_heads or n_head; hidden_size or n_embd
// checked against the weights; num_key_value_heads; head_dim), else the checkpoint's "__metadata__" "H"
// (attnlab's export). Checks every layer's tensors: present, a float dtype, the same shapes, divisible into
// heads. Throws QkLayoutError (a layout finding nothing names what it looked for and three names the
// checkpoint has), SafetensorsError for an unreadable config.json.
QkLayoutPlan plan_qk_layout(const SafetensorsCheckpoint& checkpoint, const QkLayoutOptions& options);

// What a model's config.json says about attention widths (absent keys stay 0).
struct QkConfig {
  std::filesystem::path path;
  Eigen::Index heads = 0, hidden = 0, kv_heads = 0, head_dim = 0;
};

// What plan_qk_widths reads: a tensor's shape by name, the config.json beside the weights (read when needed;
// nullopt where there is none) and where it would be, the checkpoint's "__metadata__", and the file a refusal
// names ("<file>: <problem>"; none for arrays in memory, whose refusals are the problem alone).
struct QkWidthSource {
  std::function<std::vector<std::uint64_t>(const std::string& name)> shape;
  std::function<std::optional<QkConfig>()> config;
  std::filesystem::path config_file;
  std::map<std::string, std::string> metadata;
  std::optional<std::filesystem::path> file;
};

// The widths from layer 0's weights into `p`, whose storage and names (q, k, q_bias, k_bias) are set: d, the
// heads (options.heads, else config.json, else the metadata's "H"), d_k and the key heads, each checked against
// the weights' shapes, config.json and options.kv_heads. plan_qk_layout's last step, and QkArrays' (qk_arrays.hpp).
// Throws QkLayoutError.
void plan_qk_widths(QkLayoutPlan& p, const QkLayoutOptions& options, const QkWidthSource& source);
// config.json in `dir`, or nullopt when there is none. Throws QkLayoutError for one that is not a JSON
// object, or whose widths are not positive integers (or disagree: num_attention_heads against n_head).
std::optional<QkConfig> read_qk_config(const std::filesystem::path& dir);

}  // namespace attnlab
