// The trainable attention methods by name: the list the trainer offers and the factory that builds one.
#include "attnlab/attention/trainable.hpp"

#include <stdexcept>
#include <string>

#include "attnlab/attention/common_train.hpp"
#include "attnlab/attention/exact_train.hpp"
#include "attnlab/attention/linear_train.hpp"
#include "attnlab/attention/linformer_train.hpp"
#include "attnlab/attention/nystrom_train.hpp"
#include "attnlab/attention/random_features_train.hpp"

namespace attnlab {

const std::vector<std::string>& trainable_attention_names() {
  // The order tables list them in; a method joins the list when it is implemented and checked.
  static const std::vector<std::string> names = {"exact",          "linear-elu", "linear-shen", "linformer",
                                                 "random-fourier", "favor",      "nystrom",     "symmetric"};
  return names;
}

namespace {

std::string joined_names() {
  std::string s;
  for (const auto& name : trainable_attention_names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

void require_at_least(const char* what, Eigen::Index value, Eigen::Index lo) {
  if (value < lo)
    throw std::invalid_argument("make_trainable_attention: " + std::string(what) + " (= " + std::to_string(value) +
                                ") must be at least " + std::to_string(lo));
}

}  // namespace

template <typename T>
std::unique_ptr<TrainableAttention<T>> make_trainable_attention(const TrainableAttentionConfig& config) {
  require_at_least("n", config.n, 1);
  require_at_least("d_k", config.d_k, 1);
  require_at_least("d_v", config.d_v, 1);
  require_at_least("heads", config.heads, 1);
  // Options of other methods are ignored, but a negative one is a mistake whatever the method.
  require_at_least("projection_k", config.projection_k, 0);
  require_at_least("features", config.features, 0);
  require_at_least("landmarks", config.landmarks, 0);
  require_at_least("pinv_iterations", config.pinv_iterations, 0);
  const detail::TrainShape shape{config.n, config.d_k, config.d_v, config.heads};
  if (config.method == "exact") return std::make_unique<ExactTrain<T>>(shape);
  if (config.method == "linear-elu") return std::make_unique<EluLinearTrain<T>>(shape);
  if (config.method == "linear-shen") return std::make_unique<ShenLinearTrain<T>>(shape);
  if (config.method == "linformer") return std::make_unique<LinformerTrain<T>>(shape, config.projection_k, config.seed);
  if (config.method == "random-fourier")
    return std::make_unique<RandomFourierTrain<T>>(shape, config.features, config.seed);
  if (config.method == "favor") return std::make_unique<FavorTrain<T>>(shape, config.features, config.seed);
  if (config.method == "nystrom")
    return std::make_unique<NystromTrain<T>>(shape, config.landmarks, config.pinv_iterations);
  if (config.method == "symmetric") return std::make_unique<ExactTrain<T>>(shape, ExactScores::symmetric);
  throw std::invalid_argument("make_trainable_attention: method '" + config.method + "' is unknown; valid: " +
                              joined_names());
}

template std::unique_ptr<TrainableAttention<float>> make_trainable_attention(const TrainableAttentionConfig&);
template std::unique_ptr<TrainableAttention<double>> make_trainable_attention(const TrainableAttentionConfig&);

}  // namespace attnlab
