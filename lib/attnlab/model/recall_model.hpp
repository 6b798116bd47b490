// The attnlab recall model (recall_spec.md): a token embedding, the ViT's pre-LayerNorm blocks
// (transformer_blocks.hpp) with any of the library's attention methods, and a head at every query position.
// Parameters in manifest order, a forward pass that keeps a tape, and a backward pass that accumulates
// gradients, for one chunk of sequences at a time, as the ViT (the same trainer, checkpoints, analysis).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/model/query_head.hpp"
#include "attnlab/model/recall_task.hpp"
#include "attnlab/model/tensor_ref.hpp"
#include "attnlab/model/transformer_blocks.hpp"

namespace attnlab {

// The task, the widths and the attention method; the defaults are the widths recall_spec.md describes (the
// protocol that trains them is model/recall_protocol.hpp's).
struct RecallConfig {
  RecallTask task;
  Eigen::Index D = 64;  // embedding width
  Eigen::Index heads = 4;
  Eigen::Index key_width = 0;  // d_k of every head; 0 means D / heads (as ViTConfig::key_width)
  Eigen::Index layers = 2;
  Eigen::Index mlp = 128;  // MLP hidden width
  std::uint64_t seed = 0;  // initialisation (weights and the method's own draws)
  // The method and its options; n, d_k, d_v, heads and seed are filled in per layer by the model.
  // kNoAttentionBaseline (model/identity_mixer.hpp) puts the identity in place of attention.
  TrainableAttentionConfig attention{"exact"};

  Eigen::Index tokens() const { return task.length(); }
  Eigen::Index classes() const { return task.values; }
  Eigen::Index head_width() const { return D / heads; }  // d_v
  Eigen::Index key_head_width() const { return key_width > 0 ? key_width : head_width(); }  // d_k
  BlockShape blocks() const { return {D, heads, key_head_width(), layers, mlp}; }
};

// "" when a model of `config` is possible (a drawable task, D a positive multiple of heads, positive widths) and
// its parameters and one sequence's forward pass fit in the memory this process may still use, else one line
// naming the problem. From the widths alone, before anything is allocated.
std::string recall_config_problem(const RecallConfig& config, std::size_t scalar_bytes);

// The library's methods by name, and the identity for kNoAttentionBaseline: what a RecallModel is built with.
template <typename T>
std::unique_ptr<TrainableAttention<T>> make_recall_attention(const TrainableAttentionConfig& config);

// Every learned tensor of the model except the attention method's own. The same struct holds the gradients.
template <typename T>
struct RecallParams {
  Mat<T> keys;    // (K, D): row k is key k's embedding
  Mat<T> values;  // (V, D): row v is value v's
  Mat<T> query;   // (1, D): the marker of a query token
  std::vector<BlockParams<T>> blocks;
  Vec<T> head_ln_gamma, head_ln_beta;  // (D)
  Mat<T> head_W;                       // (D, V)
  Vec<T> head_b;                       // (V)
};

template <typename T>
struct RecallGrads {
  RecallParams<T> params;
  std::vector<std::vector<Mat<T>>> method;  // [layer][parameter]
};

// What a forward pass keeps for the backward, and the backward's scratch, for one chunk of B sequences of n = 2N
// tokens (the image chunk's counterpart: reused from step to step).
template <typename T>
struct RecallActivations {
  using Block = BlockTape<T>;
  std::vector<std::int32_t> key, value;  // (B n): the chunk's tokens (recall_task.hpp)
  std::vector<std::int64_t> query_rows;  // (B N): the query tokens' rows, sequence by sequence in position order
  std::vector<Mat<T>> x;                 // x[l]: input of block l (B n, D); x[L] the final residual stream
  std::vector<Block> blocks;
  QueryHeadTape<T> head;
  Mat<T> logits, dlogits;                // (B N, V)
  Mat<T> dx, dh, dz, dtmp;               // (B n, D) gradient scratch
};

template <typename T>
class RecallModel {
 public:
  using Scalar = T;
  using Activations = RecallActivations<T>;
  using Grads = RecallGrads<T>;
  using Data = RecallSet;  // what it trains on (trainer.hpp)
  using Config = RecallConfig;
  using AttentionFactory = attnlab::AttentionFactory<T>;

  // Builds the model with freshly initialised weights (recall_spec.md: the embedding tables, the query marker and
  // every weight matrix ~ N(0, 0.02^2) drawn from Rng(config.seed) in manifest order, each matrix column by
  // column; biases 0; LayerNorm gamma 1, beta 0). Layer l's method is factory(config.attention with n, d_k, d_v,
  // heads and seed derive_seed(config.seed, 1000 + l)). Throws std::invalid_argument for a config
  // recall_config_problem refuses.
  RecallModel(const RecallConfig& config, const AttentionFactory& factory);
  // The same with make_recall_attention<T>: the model every experiment trains.
  explicit RecallModel(const RecallConfig& config);

  const RecallConfig& config() const { return config_; }
  RecallParams<T>& params() { return params_; }
  const RecallParams<T>& params() const { return params_; }
  TrainableAttention<T>& attention(Eigen::Index layer) { return *attention_[static_cast<std::size_t>(layer)]; }
  const TrainableAttention<T>& attention(Eigen::Index layer) const { return *attention_[static_cast<std::size_t>(layer)]; }

  // Every learned tensor in manifest order: embed.keys, embed.values, embed.query, the blocks (vit_spec.md's
  // names, the method's after block{l}.attn.bo), head.ln.gamma, head.ln.beta, head.W, head.b.
  std::vector<TensorRef<T>> parameter_tensors();
  std::vector<TensorRef<T>> gradient_tensors(RecallGrads<T>& grads);
  // The methods' fixed buffers (block{l}.attn.method.<name>), saved in checkpoints, never trained.
  std::vector<TensorRef<T>> buffer_tensors();
  Eigen::Index parameter_count();
  RecallGrads<T> zero_grads() const;

  // The tokens of sequences `items` of `data` into act (their task must be the model's). The labels that go with
  // them are data.append_labels' (one per query, in position order).
  void set_inputs(RecallActivations<T>& act, const RecallSet& data, std::span<const std::int64_t> items) const;

  // One chunk (set_inputs first). Runs the forward pass; logits (one row per query) in act.logits. With grads not
  // null it keeps the tape and ADDS the gradient of scale * sum over the queries of CE(logits, labels) into
  // *grads. Returns scale * sum CE (0 when labels is empty, as in an evaluation without labels).
  double forward_backward(RecallActivations<T>& act, std::span<const std::uint8_t> labels, double scale,
                          RecallGrads<T>* grads) const;

 private:
  RecallConfig config_;
  RecallParams<T> params_;
  std::vector<std::unique_ptr<TrainableAttention<T>>> attention_;
};

}  // namespace attnlab
