// The recall model: initialisation, the parameter manifest, and the whole-model forward and backward passes.
#include "attnlab/model/recall_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/model/classifier_head.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/token_embedding.hpp"

namespace attnlab {

namespace {

constexpr double kRecallInitStd = 0.02;  // vit_spec.md's, for every matrix and table

// The model's own tensors in manifest order; `method(l, pre, out)` appends layer l's method tensors after bo.
template <typename T, typename MethodTensors>
std::vector<TensorRef<T>> manifest(RecallParams<T>& p, MethodTensors method) {
  std::vector<TensorRef<T>> out = {tensor_ref("embed.keys", p.keys), tensor_ref("embed.values", p.values),
                                   tensor_ref("embed.query", p.query)};
  for (std::size_t l = 0; l < p.blocks.size(); ++l) append_block_tensors(out, p.blocks[l], l, method);
  out.push_back(tensor_ref("head.ln.gamma", p.head_ln_gamma));
  out.push_back(tensor_ref("head.ln.beta", p.head_ln_beta));
  out.push_back(tensor_ref("head.W", p.head_W));
  out.push_back(tensor_ref("head.b", p.head_b));
  return out;
}

template <typename T>
RecallParams<T> shaped_params(const RecallConfig& c) {
  RecallParams<T> p;
  p.keys = Mat<T>::Zero(c.task.keys, c.D);
  p.values = Mat<T>::Zero(c.task.values, c.D);
  p.query = Mat<T>::Zero(1, c.D);
  p.blocks = shaped_blocks<T>(c.blocks());
  p.head_ln_gamma = p.head_ln_beta = Vec<T>::Zero(c.D);
  p.head_W = Mat<T>::Zero(c.D, c.task.values);
  p.head_b = Vec<T>::Zero(c.task.values);
  return p;
}

// The least memory a model of `c` takes, in bytes: its parameters and one sequence's forward pass (the residual
// stream at every block, a block's tensors, and for exact and symmetric attention each head's n x n scores), a
// lower bound as vit_memory_lower_bound's.
double recall_memory_lower_bound(const RecallConfig& c, std::size_t scalar_bytes) {
  const double D = static_cast<double>(c.D), L = static_cast<double>(c.layers), M = static_cast<double>(c.mlp);
  const double n = static_cast<double>(c.tokens()), K = static_cast<double>(c.task.keys), V = static_cast<double>(c.task.values);
  const double Dk = static_cast<double>(c.heads * c.key_head_width()), s = static_cast<double>(scalar_bytes);
  const double block = 4 * D + 2 * (D * Dk + Dk) + 2 * (D * D + D) + D * M + M + M * D + D;
  const double parameters = (K + V + 1) * D + L * block + 2 * D + D * V + V;
  const double forward = (L + 1) * n * D + 6 * n * D + n * M;
  const bool n_by_n = c.attention.method == "exact" || c.attention.method == "symmetric";
  const double head_matrices =
      n_by_n ? static_cast<double>(c.heads) *
                   softmax_attention_cost(c.tokens(), static_cast<long long>(c.head_width()), scalar_bytes).workspace_bytes
             : 0;
  return s * (parameters + forward) + head_matrices + L * 1024;
}

}  // namespace

std::string recall_config_problem(const RecallConfig& c, std::size_t scalar_bytes) {
  if (const std::string problem = recall_task_problem(c.task); !problem.empty()) return problem;
  constexpr Eigen::Index kMaxWidth = Eigen::Index{1} << 20;  // as a checkpoint's widths
  if (c.D <= 0 || c.heads <= 0 || c.D > kMaxWidth || c.D % c.heads != 0)
    return fmt::format("D (= {}) must be a positive multiple of heads (= {}), at most {}", c.D, c.heads, kMaxWidth);
  if (c.key_width < 0 || c.key_width > kMaxWidth) return fmt::format("key_width (= {}) must be in 0..{}", c.key_width, kMaxWidth);
  if (c.layers <= 0 || c.layers > 1024) return fmt::format("layers (= {}) must be in 1..1024", c.layers);
  if (c.mlp <= 0 || c.mlp > kMaxWidth) return fmt::format("mlp (= {}) must be in 1..{}", c.mlp, kMaxWidth);
  const double need = recall_memory_lower_bound(c, scalar_bytes), avail = available_memory();
  if (need > avail)
    return fmt::format("a recall model of D = {}, L = {}, mlp = {}, heads = {} on {} tokens with {} keys and {} values needs at "
                       "least {} (its parameters and one sequence's forward pass), {} available",
                       c.D, c.layers, c.mlp, c.heads, c.tokens(), c.task.keys, c.task.values, gib_text(need),
                       gib_text(std::max(avail, 0.0)));
  return {};
}

template <typename T>
std::unique_ptr<TrainableAttention<T>> make_recall_attention(const TrainableAttentionConfig& config) {
  if (config.method == kNoAttentionBaseline)
    return std::make_unique<IdentityMixer<T>>(detail::TrainShape{config.n, config.d_k, config.d_v, config.heads});
  return make_trainable_attention<T>(config);
}

template <typename T>
RecallModel<T>::RecallModel(const RecallConfig& config, const AttentionFactory& factory) : config_(config) {
  // Before anything is allocated: a model that cannot be, or cannot fit, is refused in one line.
  if (const std::string problem = recall_config_problem(config_, sizeof(T)); !problem.empty())
    throw std::invalid_argument("RecallModel: " + problem);
  params_ = shaped_params<T>(config_);
  attention_ = make_block_attention<T>(config_.attention, config_.blocks(), config_.tokens(), config_.seed, factory, "RecallModel");
  // Initialisation in manifest order: gamma 1, other vectors 0, matrices (the tables and the marker included)
  // N(0, 0.02^2) column by column. The method's own tensors are initialised by the method and skipped here.
  Rng rng(config_.seed);
  initialise_tensors(manifest(params_, [](std::size_t, const std::string&, std::vector<TensorRef<T>>&) {}), rng, kRecallInitStd);
}

template <typename T>
RecallModel<T>::RecallModel(const RecallConfig& config) : RecallModel(config, make_recall_attention<T>) {}

template <typename T>
std::vector<TensorRef<T>> RecallModel<T>::parameter_tensors() {
  return manifest(params_, [this](std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out) {
    append_method_parameters(attention_, l, pre, out);
  });
}

template <typename T>
std::vector<TensorRef<T>> RecallModel<T>::gradient_tensors(RecallGrads<T>& grads) {
  return manifest(grads.params, [this, &grads](std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out) {
    append_method_gradients(attention_, grads.method, l, pre, out);
  });
}

template <typename T>
std::vector<TensorRef<T>> RecallModel<T>::buffer_tensors() {
  return method_buffer_tensors(attention_);
}

template <typename T>
Eigen::Index RecallModel<T>::parameter_count() {
  Eigen::Index total = 0;
  for (const auto& t : parameter_tensors()) total += t.size();
  return total;
}

template <typename T>
RecallGrads<T> RecallModel<T>::zero_grads() const {
  RecallGrads<T> g;
  g.params = shaped_params<T>(config_);
  g.method = zero_method_grads(attention_);
  return g;
}

template <typename T>
void RecallModel<T>::set_inputs(RecallActivations<T>& act, const RecallSet& data, std::span<const std::int64_t> items) const {
  if (!(data.task == config_.task))
    throw std::invalid_argument(fmt::format("RecallModel: sequences of {} pairs, {} keys, {} values; the model's task has {}, {}, {}",
                                            data.task.pairs, data.task.keys, data.task.values, config_.task.pairs,
                                            config_.task.keys, config_.task.values));
  const Eigen::Index n = config_.tokens();
  act.key.clear();
  act.value.clear();
  act.query_rows.clear();
  for (std::size_t b = 0; b < items.size(); ++b) {
    const RecallSequence s = data.sequence(items[b]);
    act.key.insert(act.key.end(), s.key.begin(), s.key.end());
    act.value.insert(act.value.end(), s.value.begin(), s.value.end());
    for (Eigen::Index t = 0; t < n; ++t)
      if (s.label[static_cast<std::size_t>(t)] >= 0) act.query_rows.push_back(static_cast<std::int64_t>(b) * n + t);
  }
}

template <typename T>
double RecallModel<T>::forward_backward(RecallActivations<T>& act, std::span<const std::uint8_t> labels, double scale,
                                        RecallGrads<T>* grads) const {
  const Eigen::Index n = config_.tokens(), H = config_.heads;
  const auto L = static_cast<std::size_t>(config_.layers);
  const RecallParams<T>& p = params_;
  const bool train = grads != nullptr;
  act.x.resize(L + 1);

  // ---- forward ----
  // pass 1: tokens -> embeddings: x[0] (B n, D).
  token_embedding_forward(act.key, act.value, p.keys, p.values, p.query, act.x[0]);
  // pass 2: the pre-LayerNorm blocks, each sequence of n tokens on its own.
  blocks_forward(p.blocks, attention_, n, H, act.x, act.blocks, train);
  // pass 3: at every query position, the final LayerNorm and the logits over the values (B N, V).
  query_head_forward(act.x[L], act.query_rows, p.head_ln_gamma, p.head_ln_beta, p.head_W, p.head_b, act.logits, act.head);
  if (labels.empty()) return 0.0;
  const double loss = cross_entropy(act.logits, labels, scale, train ? &act.dlogits : nullptr);
  if (!train) return loss;

  // ---- backward: the forward's passes in reverse, gradients ADDED into *grads ----
  RecallParams<T>& g = grads->params;
  // pass 3: logits -> the blocks' output; dx = dL/dx[L] (zero at context rows: they have no output).
  query_head_backward(act.query_rows, act.x[L].rows(), p.head_ln_gamma, p.head_W, act.dlogits, act.head, act.dx,
                      g.head_ln_gamma, g.head_ln_beta, g.head_W, g.head_b);
  // pass 2: blocks in reverse.
  blocks_backward(p.blocks, attention_, n, H, act.blocks, act.dx, act.dh, act.dz, act.dtmp, g.blocks, grads->method);
  // pass 1: into the tables' rows and the marker.
  token_embedding_backward(act.key, act.value, act.dx, g.keys, g.values, g.query);
  return loss;
}

template class RecallModel<float>;
template class RecallModel<double>;
template std::unique_ptr<TrainableAttention<float>> make_recall_attention<float>(const TrainableAttentionConfig&);
template std::unique_ptr<TrainableAttention<double>> make_recall_attention<double>(const TrainableAttentionConfig&);

}  // namespace attnlab
