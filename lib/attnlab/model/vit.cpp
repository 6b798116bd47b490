// The ViT: initialisation, the parameter manifest, and the whole-model forward and backward passes.
#include "attnlab/model/vit.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <string>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/model/classifier_head.hpp"
#include "attnlab/model/patch_embedding.hpp"

namespace attnlab {

namespace {

constexpr double kInitStd = 0.02;

// The model's own tensors in manifest order; `method(l, out)` appends layer l's method tensors after bo.
template <typename T, typename MethodTensors>
std::vector<TensorRef<T>> manifest(ViTParams<T>& p, MethodTensors method) {
  std::vector<TensorRef<T>> out = {tensor_ref("embed.W", p.embed_W), tensor_ref("embed.b", p.embed_b),
                                   tensor_ref("embed.pos", p.embed_pos)};
  for (std::size_t l = 0; l < p.blocks.size(); ++l) append_block_tensors(out, p.blocks[l], l, method);
  out.push_back(tensor_ref("head.ln.gamma", p.head_ln_gamma));
  out.push_back(tensor_ref("head.ln.beta", p.head_ln_beta));
  out.push_back(tensor_ref("head.W", p.head_W));
  out.push_back(tensor_ref("head.b", p.head_b));
  return out;
}

template <typename T>
ViTParams<T> shaped_params(const ViTConfig& c) {
  const Eigen::Index D = c.D;
  ViTParams<T> p;
  p.embed_W = Mat<T>::Zero(c.patch_values(), D);
  p.embed_b = Vec<T>::Zero(D);
  p.embed_pos = Mat<T>::Zero(c.tokens(), D);
  p.blocks = shaped_blocks<T>(c.blocks());
  p.head_ln_gamma = p.head_ln_beta = Vec<T>::Zero(D);
  p.head_W = Mat<T>::Zero(D, c.classes);
  p.head_b = Vec<T>::Zero(c.classes);
  return p;
}

void check_config(const ViTConfig& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("ViT: " + what); };
  const int span = c.image + 2 * c.pad - c.patch;
  if (c.image <= 0 || c.patch <= 0 || c.stride <= 0 || c.pad < 0 || c.pad >= c.patch || span < 0 || span % c.stride != 0)
    bad("patch windows (patch " + std::to_string(c.patch) + ", stride " + std::to_string(c.stride) + ", pad " +
        std::to_string(c.pad) + ") must tile the padded image (image " + std::to_string(c.image) +
        "): patch, stride >= 1, 0 <= pad < patch, stride divides image + 2 pad - patch >= 0");
  if (c.D <= 0 || c.heads <= 0 || c.D % c.heads != 0)
    bad("D (= " + std::to_string(c.D) + ") must be a positive multiple of heads (= " + std::to_string(c.heads) + ")");
  if (c.key_width < 0) bad("key_width (= " + std::to_string(c.key_width) + ") must be >= 0 (0: D / heads)");
  if (c.layers <= 0) bad("layers (= " + std::to_string(c.layers) + ") must be positive");
  if (c.mlp <= 0) bad("mlp (= " + std::to_string(c.mlp) + ") must be positive");
  if (c.classes <= 0 || c.classes > 256) bad("classes (= " + std::to_string(c.classes) + ") must be in 1..256");
}

}  // namespace

double vit_memory_lower_bound(const ViTConfig& c, std::size_t scalar_bytes) {
  const double D = static_cast<double>(c.D), L = static_cast<double>(c.layers), M = static_cast<double>(c.mlp);
  const double n = static_cast<double>(c.tokens()), P = static_cast<double>(c.patch_values());
  const double H = static_cast<double>(c.heads), K = H * static_cast<double>(c.key_head_width());
  const double C = static_cast<double>(c.classes), s = static_cast<double>(scalar_bytes);
  // Parameters (shaped_params): embedding, positions, per block LayerNorms, W_Q, W_K (D x H d_k), W_V, W_O,
  // the MLP, and the head.
  const double block = 4 * D + 2 * (D * K + K) + 2 * (D * D + D) + D * M + M + M * D + D;
  const double parameters = P * D + D + n * D + L * block + 2 * D + D * C + C;
  // One image forward: its patches, the residual stream at every block, a block's tensors (LayerNorm and
  // attention outputs, the MLP's hidden layer).
  const double forward = n * P + (L + 1) * n * D + 6 * n * D + n * M;
  // Exact attention and its symmetric form hold every head's n x n scores; the other methods never do.
  const bool n_by_n = c.attention.method == "exact" || c.attention.method == "symmetric";
  const double head_matrices =
      n_by_n ? H * softmax_attention_cost(c.tokens(), static_cast<long long>(c.head_width()), scalar_bytes).workspace_bytes : 0;
  // The objects of a block (16 tensors, the method): their headers and the allocator's bookkeeping, at
  // least a KiB, whatever the widths.
  constexpr double kBlockObjects = 1024;
  return s * (parameters + forward) + head_matrices + L * kBlockObjects;
}

std::string vit_memory_problem(const ViTConfig& c, std::size_t scalar_bytes) {
  const double need = vit_memory_lower_bound(c, scalar_bytes), avail = available_memory();
  if (need <= avail) return {};
  return fmt::format("a model of D = {}, L = {}, mlp = {}, heads = {} on {} tokens (image {}) needs at least {} (its "
                     "parameters and one image's forward pass), {} available",
                     c.D, c.layers, c.mlp, c.heads, c.tokens(), c.image, gib_text(need), gib_text(std::max(avail, 0.0)));
}

template <typename T>
ViT<T>::ViT(const ViTConfig& config, const AttentionFactory& factory) : config_(config) {
  check_config(config_);
  // Before anything is allocated: a model that cannot fit is refused in one line, not by the allocator.
  if (const std::string problem = vit_memory_problem(config_, sizeof(T)); !problem.empty())
    throw std::invalid_argument("ViT: " + problem);
  params_ = shaped_params<T>(config_);
  attention_ = make_block_attention<T>(config_.attention, config_.blocks(), config_.tokens(), config_.seed, factory, "ViT");
  // Initialisation in manifest order: gamma 1, other vectors 0, matrices N(0, 0.02^2) column by column.
  // The method's own tensors are initialised by the method and skipped here.
  Rng rng(config_.seed);
  initialise_tensors(manifest(params_, [](std::size_t, const std::string&, std::vector<TensorRef<T>>&) {}), rng, kInitStd);
}

template <typename T>
ViT<T>::ViT(const ViTConfig& config)
    : ViT(config, [](const TrainableAttentionConfig& a) { return make_trainable_attention<T>(a); }) {}

template <typename T>
std::vector<TensorRef<T>> ViT<T>::parameter_tensors() {
  return manifest(params_, [this](std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out) {
    append_method_parameters(attention_, l, pre, out);
  });
}

template <typename T>
std::vector<TensorRef<T>> ViT<T>::gradient_tensors(ViTGrads<T>& grads) {
  return manifest(grads.params, [this, &grads](std::size_t l, const std::string& pre, std::vector<TensorRef<T>>& out) {
    append_method_gradients(attention_, grads.method, l, pre, out);
  });
}

template <typename T>
std::vector<TensorRef<T>> ViT<T>::buffer_tensors() {
  return method_buffer_tensors(attention_);
}

template <typename T>
Eigen::Index ViT<T>::parameter_count() {
  Eigen::Index total = 0;
  for (const auto& t : parameter_tensors()) total += t.size();
  return total;
}

template <typename T>
ViTGrads<T> ViT<T>::zero_grads() const {
  ViTGrads<T> g;
  g.params = shaped_params<T>(config_);
  g.method = zero_method_grads(attention_);
  return g;
}

template <typename T>
void ViT<T>::set_inputs(ViTActivations<T>& act, std::span<const std::uint8_t> pixels, int side,
                        std::span<const std::int64_t> images) const {
  patchify<T>(pixels, images, side, config_.patch, config_.stride, config_.pad, act.patches);
}

template <typename T>
double ViT<T>::forward_backward(ViTActivations<T>& act, std::span<const std::uint8_t> labels, double scale,
                                ViTGrads<T>* grads) const {
  const Eigen::Index n = config_.tokens(), H = config_.heads;
  const auto L = static_cast<std::size_t>(config_.layers);
  const ViTParams<T>& p = params_;
  const bool train = grads != nullptr;
  act.x.resize(L + 1);

  // ---- forward ----
  // pass 1: patches -> tokens with positions: x[0] (B n, D).
  patch_embedding_forward(act.patches, p.embed_W, p.embed_b, p.embed_pos, act.x[0]);
  // pass 2: the pre-LayerNorm blocks: h = x + MHA(LN1(x)); x' = h + MLP(LN2(h)).
  blocks_forward(p.blocks, attention_, n, H, act.x, act.blocks, train);
  // pass 3: final LayerNorm, mean over tokens, logits.
  layernorm_forward(act.x[L], p.head_ln_gamma, p.head_ln_beta, act.head_ln_out, act.head_ln);
  classifier_forward(act.head_ln_out, n, p.head_W, p.head_b, act.pooled, act.logits);
  if (labels.empty()) return 0.0;
  const double loss = cross_entropy(act.logits, labels, scale, train ? &act.dlogits : nullptr);
  if (!train) return loss;

  // ---- backward: the forward's passes in reverse, gradients ADDED into *grads ----
  ViTParams<T>& g = grads->params;
  // pass 3: logits -> final LayerNorm's input, dx = dL/dx[L].
  classifier_backward(act.pooled, n, p.head_W, act.dlogits, act.dtmp, g.head_W, g.head_b);
  layernorm_backward(act.dtmp, act.head_ln, p.head_ln_gamma, act.dx, g.head_ln_gamma, g.head_ln_beta);
  // pass 2: blocks in reverse. The residual connections pass dx straight through and the branches add.
  blocks_backward(p.blocks, attention_, n, H, act.blocks, act.dx, act.dh, act.dz, act.dtmp, g.blocks, grads->method);
  // pass 1: into the embedding and the positions.
  patch_embedding_backward(act.patches, act.dx, g.embed_W, g.embed_b, g.embed_pos);
  return loss;
}

template class ViT<float>;
template class ViT<double>;

}  // namespace attnlab
