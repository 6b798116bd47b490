// Counted floating-point operations of the ViT (issue 14's performance target): the one formula the
// benchmark uses to turn seconds per training step into GFLOP/s, and the one the training sweep's shards
// are cut by (Shard::range with costs).
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// Counted FLOPs of one image's forward pass, part by part: 2 per multiply-add of the matrix products
// (vit_spec.md's shapes, n tokens, D width, P = patch^2 pixels per window, M MLP width, C classes, L blocks).
// Element-wise work (LayerNorm, GELU, softmax's exp, residual adds, the mean pool) is not counted: it is
// O(n D) per layer against the products' O(n D^2) and O(n^2 D), and a GEMM rate is the yardstick.
struct ViTForwardFlops {
  double embed = 0;        // patches x W: 2 n P D
  double projections = 0;  // Q, K, V and the output projection, every block: L 4 (2 n D D)
  double attention = 0;    // the method's products, every head and block (exact: L 2 (2 n n D))
  double mlp = 0;          // z W1 and GELU(.) W2, every block: L 2 (2 n D M)
  double head = 0;         // pooled x W: 2 D C
  double total() const { return embed + projections + attention + mlp + head; }
};

// The forward count of one image for config.attention.method. Exact softmax attention and its symmetric
// form ("exact", "symmetric") count their n x n scores and weights x V; every other method counts the
// multiply-adds of attention/attention_cost.hpp (linformer_cost for Linformer) for one
// head of width d_k, times 2, the heads and the blocks, with the method's options resolved as
// make_trainable_attention resolves them (features 256, landmarks min(64, n) and 6 pseudoinverse
// iterations, projected length ceil(n / 8)). std::invalid_argument naming an unknown method.
ViTForwardFlops vit_forward_flops(const ViTConfig& config);

// The blocks' part of a forward pass over one sequence of n tokens (vit_forward_flops' projections, attention and
// mlp): the attention's as for the ViT, none for the identity of the recall task's baseline without attention.
struct BlockFlops {
  double projections = 0, attention = 0, mlp = 0;
};
BlockFlops blocks_forward_flops(const TrainableAttentionConfig& attention, const BlockShape& shape, Eigen::Index n);

// Counted FLOPs of one recall sequence's forward pass (recall_spec.md): the blocks over its 2N tokens and the head
// at its N queries, 2 N D V (the embedding is a table lookup: no product).
struct RecallForwardFlops {
  BlockFlops blocks;
  double head = 0;
  double total() const { return blocks.projections + blocks.attention + blocks.mlp + head; }
};
RecallForwardFlops recall_forward_flops(const RecallConfig& config);
// A training step on `batch` sequences (3 times the forward, as vit_training_flops), and a whole run: `steps`
// steps of `batch` and `evaluations` forward passes over `test_sequences`.
double recall_training_flops(const RecallConfig& config, Eigen::Index batch);
double recall_run_flops(const RecallConfig& config, std::int64_t steps, Eigen::Index batch, std::int64_t test_sequences,
                        int evaluations);

// Counted FLOPs of one training step on `batch` images: 3 times the forward count (the backward pass
// computes two products per forward product, one for the input's gradient and one for the weights'),
// the usual convention (and bench/bench_vit_torch.py's). Example: the default ViTConfig (exact, n 196,
// D 64, 2 blocks, MLP 128) counts 137,285,376 FLOPs per image, about 0.14 GFLOP as issue 14 says.
double vit_training_flops(const ViTConfig& config, Eigen::Index batch);

// Counted FLOPs of a whole training run: `epochs` passes of training over `train_images` images and an
// evaluation (one forward pass) of `test_images` after each. The cost by which the training sweep is cut
// into shards of about equal time (the optimiser's and the element-wise work are left out alike).
double vit_run_flops(const ViTConfig& config, std::int64_t train_images, std::int64_t test_images, int epochs);

// The same count for softmax regression on the raw pixels (a linear classifier: one inputs x classes
// product per image, 2 inputs classes FLOPs forward, 3 times that to train), so that a baseline run can be
// weighed in the same sweep as the ViT runs.
double softmax_regression_run_flops(Eigen::Index inputs, Eigen::Index classes, std::int64_t train_images,
                                    std::int64_t test_images, int epochs);

}  // namespace attnlab
