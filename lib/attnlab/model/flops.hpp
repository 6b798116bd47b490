// Counted floating-point operations of the ViT (issue 14's performance target): the one formula the
// benchmark uses to turn seconds per training step into GFLOP/s.
#pragma once

#include <Eigen/Core>

#include "attnlab/model/vit.hpp"

namespace attnlab {

// Counted FLOPs of one image's forward pass, part by part: 2 per multiply-add of the matrix products
// (vit_spec.md's shapes, n tokens, D width, P = patch^2 pixels per window, M MLP width, C classes, L blocks).
// Element-wise work (LayerNorm, GELU, softmax's exp, residual adds, the mean pool) is not counted: it is
// O(n D) per layer against the products' O(n D^2) and O(n^2 D), and a GEMM rate is the yardstick.
struct ViTForwardFlops {
  double embed = 0;        // patches x W: 2 n P D
  double projections = 0;  // Q, K, V and the output projection, every block: L 4 (2 n D D)
  double attention = 0;    // exact scores Q K^T and weights x V, every head and block: L 2 (2 n n D)
  double mlp = 0;          // z W1 and GELU(.) W2, every block: L 2 (2 n D M)
  double head = 0;         // pooled x W: 2 D C
  double total() const { return embed + projections + attention + mlp + head; }
};

// The forward count of one image for exact softmax attention or its symmetric form ("exact",
// "symmetric": n x n scores); std::invalid_argument naming the method for the others, whose attention
// costs differ (attention_cost.hpp).
ViTForwardFlops vit_forward_flops(const ViTConfig& config);

// Counted FLOPs of one training step on `batch` images: 3 times the forward count (the backward pass
// computes two products per forward product, one for the input's gradient and one for the weights'),
// the usual convention (and bench/bench_vit_torch.py's). Example: the default ViTConfig (exact, n 196,
// D 64, 2 blocks, MLP 128) counts 137,285,376 FLOPs per image, about 0.14 GFLOP as issue 14 says.
double vit_training_flops(const ViTConfig& config, Eigen::Index batch);

}  // namespace attnlab
