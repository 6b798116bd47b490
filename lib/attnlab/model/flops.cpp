// Counted FLOPs of the ViT's matrix products.
#include "attnlab/model/flops.hpp"

#include <stdexcept>
#include <string>

namespace attnlab {

ViTForwardFlops vit_forward_flops(const ViTConfig& c) {
  const std::string& method = c.attention.method;
  if (method != "exact" && method != "symmetric")
    throw std::invalid_argument("vit_forward_flops: method '" + method +
                                "' has no counted attention cost here (exact and symmetric only)");
  const auto n = static_cast<double>(c.tokens()), D = static_cast<double>(c.D), M = static_cast<double>(c.mlp);
  const auto L = static_cast<double>(c.layers), P = static_cast<double>(c.patch_values());
  ViTForwardFlops f;
  f.embed = 2 * n * P * D;
  // Q and K are D x H d_k, V and the output D x D; with the default key width H d_k = D.
  const auto Dk = static_cast<double>(c.heads * c.key_head_width());
  f.projections = L * (2 * (2 * n * D * Dk) + 2 * (2 * n * D * D));
  f.attention = L * (2 * n * n * Dk + 2 * n * n * D);  // per head q k^T (n x n x d_k), then P v (n x n x d_v)
  f.mlp = L * 2 * (2 * n * D * M);
  f.head = 2 * D * static_cast<double>(c.classes);
  return f;
}

double vit_training_flops(const ViTConfig& config, Eigen::Index batch) {
  if (batch < 0) throw std::invalid_argument("vit_training_flops: batch = " + std::to_string(batch) + " is negative");
  return 3 * vit_forward_flops(config).total() * static_cast<double>(batch);
}

}  // namespace attnlab
