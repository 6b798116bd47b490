// The attnlab vision Transformer (vit_spec.md): parameters in manifest order, a forward pass that keeps
// a tape, and a backward pass that accumulates gradients, for one chunk of images at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/model/image_set.hpp"
#include "attnlab/model/layernorm.hpp"
#include "attnlab/model/mha.hpp"
#include "attnlab/model/mlp.hpp"
#include "attnlab/model/tensor_ref.hpp"
#include "attnlab/model/transformer_blocks.hpp"

namespace attnlab {

// Widths and the attention method; the defaults are vit_spec.md's.
struct ViTConfig {
  int image = 28;        // side of the square input image, pixels
  // Tokens: patch x patch windows every `stride` pixels of the image zero-padded by `pad` (overlapping
  // when stride < patch): 4x4 windows every 2 pixels with padding 1 give the 14 x 14 = 196 tokens of
  // 2x2 patches, each seeing its neighbours' pixels too (vit_spec.md).
  int patch = 4;         // side of a window, pixels
  int stride = 2;        // pixels between neighbouring windows
  int pad = 1;           // background (0) pixels added on each side
  Eigen::Index D = 64;   // embedding width
  Eigen::Index heads = 4;
  // The query/key width d_k of every head; 0 means D / heads (the default, vit_spec.md). Values and the
  // attention's output keep D / heads per head, so only Wq, Wk (D, heads d_k) and bq, bk (heads d_k)
  // change shape, and the method's 1/sqrt(d_k) follows this width.
  Eigen::Index key_width = 0;
  Eigen::Index layers = 2;
  Eigen::Index mlp = 128;  // MLP hidden width
  Eigen::Index classes = 10;
  std::uint64_t seed = 0;  // initialisation (weights and the method's own draws)
  // The method and its options (method, projection_k, features, landmarks, pinv_iterations);
  // n, d_k, d_v, heads and seed are filled in per layer by the model.
  TrainableAttentionConfig attention{"exact"};

  // 0 for windows that do not fit (check_config and the checkpoint reader refuse those first).
  Eigen::Index grid() const { return stride > 0 && image + 2 * pad >= patch ? (image + 2 * pad - patch) / stride + 1 : 0; }
  Eigen::Index tokens() const { return grid() * grid(); }
  Eigen::Index patch_values() const { return static_cast<Eigen::Index>(patch) * patch; }
  Eigen::Index head_width() const { return D / heads; }  // d_v: the value width of a head
  Eigen::Index key_head_width() const { return key_width > 0 ? key_width : head_width(); }  // d_k
  BlockShape blocks() const { return {D, heads, key_head_width(), layers, mlp}; }
};

// The least memory a model of `config` takes, in bytes, for scalars of `scalar_bytes` bytes: its
// parameters, one image's forward pass (the residual stream and a block's tensors, and for exact and
// symmetric attention each head's n x n scores: attention_cost.hpp's workspace), and a KiB of objects
// per block. From the widths alone, before anything is allocated: a lower bound, so a refusal is sure.
double vit_memory_lower_bound(const ViTConfig& config, std::size_t scalar_bytes);

// "" when vit_memory_lower_bound fits in the memory this process may still use (available_memory()),
// else one line naming the widths, the need and what is available.
std::string vit_memory_problem(const ViTConfig& config, std::size_t scalar_bytes);

// Every learned tensor of the model except the attention method's own (those live in the method).
// The same struct holds the gradients.
template <typename T>
struct ViTParams {
  Mat<T> embed_W;    // (P, D), P = patch^2
  Vec<T> embed_b;    // (D)
  Mat<T> embed_pos;  // (n, D)
  std::vector<BlockParams<T>> blocks;
  Vec<T> head_ln_gamma, head_ln_beta;  // (D)
  Mat<T> head_W;                       // (D, C)
  Vec<T> head_b;                       // (C)
};

// Gradients: the model's tensors and, per layer, one per parameter of the method.
template <typename T>
struct ViTGrads {
  ViTParams<T> params;
  std::vector<std::vector<Mat<T>>> method;  // [layer][parameter]
};

// What a forward pass keeps for the backward, and the backward's scratch, for one chunk of images.
// Reused from step to step: after the first step no buffer is reallocated.
template <typename T>
struct ViTActivations {
  using Block = BlockTape<T>;
  Mat<T> patches;         // (B n, P)
  std::vector<Mat<T>> x;  // x[l]: input of block l (B n, D); x[L] the final residual stream
  std::vector<Block> blocks;
  LayerNormTape<T> head_ln;
  Mat<T> head_ln_out, pooled, logits, dlogits;  // (B n, D), (B, D), (B, C), (B, C)
  Mat<T> dx, dh, dz, dtmp;                      // (B n, D) gradient scratch
};

template <typename T>
class ViT {
 public:
  using Scalar = T;
  using Activations = ViTActivations<T>;
  using Grads = ViTGrads<T>;
  using Data = ImageSet;  // what it trains on (trainer.hpp)
  using AttentionFactory = attnlab::AttentionFactory<T>;

  // Builds the model with freshly initialised weights (vit_spec.md: weight matrices and positions
  // ~ N(0, 0.02^2) drawn from Rng(config.seed) in manifest order, each matrix column by column;
  // biases 0; LayerNorm gamma 1, beta 0). Layer l's method is factory(config.attention with n, d_k,
  // d_v, heads filled in and seed derive_seed(config.seed, 1000 + l)). Throws std::invalid_argument
  // for widths that do not fit (D not divisible by heads, patch not dividing image, ...) and, before
  // allocating anything, for a model larger than the memory left (vit_memory_problem).
  ViT(const ViTConfig& config, const AttentionFactory& factory);
  // The same with the library's methods (make_trainable_attention<T>): the model every experiment trains.
  explicit ViT(const ViTConfig& config);

  const ViTConfig& config() const { return config_; }
  ViTParams<T>& params() { return params_; }
  const ViTParams<T>& params() const { return params_; }
  TrainableAttention<T>& attention(Eigen::Index layer) { return *attention_[static_cast<std::size_t>(layer)]; }
  const TrainableAttention<T>& attention(Eigen::Index layer) const { return *attention_[static_cast<std::size_t>(layer)]; }

  // Every learned tensor in manifest order (vit_spec.md), the method's after block{l}.attn.bo.
  std::vector<TensorRef<T>> parameter_tensors();
  // The gradients in the same order (grads from zero_grads()).
  std::vector<TensorRef<T>> gradient_tensors(ViTGrads<T>& grads);
  // The methods' fixed buffers (block{l}.attn.method.<name>), saved in checkpoints, never trained.
  std::vector<TensorRef<T>> buffer_tensors();
  // Number of learned scalars.
  Eigen::Index parameter_count();

  // Gradients shaped like the parameters, all zero.
  ViTGrads<T> zero_grads() const;

  // act.patches (B n, P) of images `images` of `pixels` (side x side uint8 each, one after another): patchify
  // with the configuration's windows.
  void set_inputs(ViTActivations<T>& act, std::span<const std::uint8_t> pixels, int side,
                  std::span<const std::int64_t> images) const;
  // The same from a data set (the trainer's call).
  void set_inputs(ViTActivations<T>& act, const ImageSet& data, std::span<const std::int64_t> images) const {
    set_inputs(act, data.pixels, data.side, images);
  }

  // One chunk: act.patches (B n, P) must be filled (set_inputs, or patchify). Runs the forward pass; with grads not null
  // it keeps the tape and ADDS the gradient of scale * sum_b CE(logits_b, labels_b) into *grads.
  // Returns scale * sum_b CE (labels may be empty when grads is null: then returns 0). Logits in act.logits.
  double forward_backward(ViTActivations<T>& act, std::span<const std::uint8_t> labels, double scale,
                          ViTGrads<T>* grads) const;

 private:
  ViTConfig config_;
  ViTParams<T> params_;
  std::vector<std::unique_ptr<TrainableAttention<T>>> attention_;
};

}  // namespace attnlab
