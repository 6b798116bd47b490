// Counted FLOPs of the ViT's matrix products.
#include "attnlab/model/flops.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/linformer_train.hpp"
#include "attnlab/attention/nystrom_train.hpp"
#include "attnlab/attention/random_features_train.hpp"
#include "attnlab/attention/trainable.hpp"
#include "attnlab/model/identity_mixer.hpp"

namespace attnlab {

namespace {

void require_nonnegative(const char* what, std::int64_t value) {
  if (value < 0) throw std::invalid_argument(std::string("flops: ") + what + " = " + std::to_string(value) + " is negative");
}

// Multiply-adds of one head of the method at n tokens, key width dk and value width dv, its options
// resolved as make_trainable_attention resolves them.
double head_multiply_adds(const TrainableAttentionConfig& a, Eigen::Index n, Eigen::Index dk, Eigen::Index dv) {
  const std::string& m = a.method;
  const std::size_t bytes = sizeof(float);  // the workspace is not used here; any width will do
  if (m == "linear-elu") return elu_linear_attention_cost(n, dk, bytes).multiply_adds;
  if (m == "linear-shen") return efficient_attention_cost(n, dk, bytes).multiply_adds;
  if (m == "linformer") {
    const Eigen::Index k = a.projection_k > 0 ? a.projection_k : LinformerTrain<float>::default_projection_k(n);
    return linformer_cost(n, dk, dv, k, bytes).multiply_adds;
  }
  const Eigen::Index features = a.features > 0 ? a.features : kTrainDefaultFeatures;
  if (m == "random-fourier") return random_fourier_attention_cost(n, dk, features, bytes).multiply_adds;
  if (m == "favor") return favor_attention_cost(n, dk, features, bytes).multiply_adds;
  if (m == "nystrom") {
    // The method's own defaults (landmarks, iterations), read from the object the factory builds.
    TrainableAttentionConfig c = a;
    c.n = n, c.d_k = dk, c.d_v = dv, c.heads = 1;
    const auto built = make_trainable_attention<float>(c);
    const auto* nystrom = dynamic_cast<const NystromTrain<float>*>(built.get());
    if (nystrom == nullptr) throw std::logic_error("vit_forward_flops: the factory's nystrom is not NystromTrain");
    return nystrom_attention_cost(n, dk, nystrom->landmarks(), nystrom->iterations(), bytes).multiply_adds;
  }
  throw std::invalid_argument("vit_forward_flops: method '" + m + "' has no counted attention cost");
}

}  // namespace

BlockFlops blocks_forward_flops(const TrainableAttentionConfig& attention, const BlockShape& b, Eigen::Index tokens) {
  const std::string& method = attention.method;
  const auto n = static_cast<double>(tokens), D = static_cast<double>(b.D), M = static_cast<double>(b.mlp);
  const auto L = static_cast<double>(b.layers);
  BlockFlops f;
  // Q and K are D x H d_k, V and the output D x D; with the default key width H d_k = D.
  const auto Dk = static_cast<double>(b.heads * b.key_width);
  f.projections = L * (2 * (2 * n * D * Dk) + 2 * (2 * n * D * D));
  if (method == "exact" || method == "symmetric")
    f.attention = L * (2 * n * n * Dk + 2 * n * n * D);  // per head q k^T (n x n x d_k), then P v (n x n x d_v)
  else if (method == kNoAttentionBaseline)
    f.attention = 0;  // the identity: out = v
  else
    f.attention = L * static_cast<double>(b.heads) * 2 * head_multiply_adds(attention, tokens, b.key_width, b.D / b.heads);
  f.mlp = L * 2 * (2 * n * D * M);
  return f;
}

ViTForwardFlops vit_forward_flops(const ViTConfig& c) {
  const auto n = static_cast<double>(c.tokens()), D = static_cast<double>(c.D), P = static_cast<double>(c.patch_values());
  const BlockFlops b = blocks_forward_flops(c.attention, c.blocks(), c.tokens());
  ViTForwardFlops f;
  f.embed = 2 * n * P * D;
  f.projections = b.projections;
  f.attention = b.attention;
  f.mlp = b.mlp;
  f.head = 2 * D * static_cast<double>(c.classes);
  return f;
}

RecallForwardFlops recall_forward_flops(const RecallConfig& c) {
  RecallForwardFlops f;
  f.blocks = blocks_forward_flops(c.attention, c.blocks(), c.tokens());
  f.head = 2 * static_cast<double>(c.task.pairs) * static_cast<double>(c.D) * static_cast<double>(c.task.values);
  return f;
}

double recall_training_flops(const RecallConfig& config, Eigen::Index batch) {
  if (batch < 0) throw std::invalid_argument("recall_training_flops: batch = " + std::to_string(batch) + " is negative");
  return 3 * recall_forward_flops(config).total() * static_cast<double>(batch);
}

double recall_run_flops(const RecallConfig& config, std::int64_t steps, Eigen::Index batch, std::int64_t test_sequences,
                        int evaluations) {
  require_nonnegative("steps", steps);
  require_nonnegative("test_sequences", test_sequences);
  require_nonnegative("evaluations", evaluations);
  const double forward = recall_forward_flops(config).total();
  return forward * (3 * static_cast<double>(steps) * static_cast<double>(batch) +
                    static_cast<double>(evaluations) * static_cast<double>(test_sequences));
}

double vit_training_flops(const ViTConfig& config, Eigen::Index batch) {
  if (batch < 0) throw std::invalid_argument("vit_training_flops: batch = " + std::to_string(batch) + " is negative");
  return 3 * vit_forward_flops(config).total() * static_cast<double>(batch);
}

double vit_run_flops(const ViTConfig& config, std::int64_t train_images, std::int64_t test_images, int epochs) {
  require_nonnegative("train_images", train_images);
  require_nonnegative("test_images", test_images);
  require_nonnegative("epochs", epochs);
  const double forward = vit_forward_flops(config).total();
  return static_cast<double>(epochs) * forward * (3 * static_cast<double>(train_images) + static_cast<double>(test_images));
}

double softmax_regression_run_flops(Eigen::Index inputs, Eigen::Index classes, std::int64_t train_images,
                                    std::int64_t test_images, int epochs) {
  require_nonnegative("inputs", inputs);
  require_nonnegative("classes", classes);
  require_nonnegative("train_images", train_images);
  require_nonnegative("test_images", test_images);
  require_nonnegative("epochs", epochs);
  const double forward = 2 * static_cast<double>(inputs) * static_cast<double>(classes);
  return static_cast<double>(epochs) * forward * (3 * static_cast<double>(train_images) + static_cast<double>(test_images));
}

}  // namespace attnlab
