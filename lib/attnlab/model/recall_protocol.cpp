// The recall protocol (recall_protocol.hpp).
#include "attnlab/model/recall_protocol.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/trainer.hpp"

namespace attnlab {

Eigen::Index recall_summary_length(Eigen::Index tokens) { return (tokens + 7) / 8; }

std::vector<std::string> recall_sweep_methods() {
  std::vector<std::string> methods = trainable_attention_names();
  methods.push_back(kNoAttentionBaseline);
  return methods;
}

RecallShape quick_recall_shape() {
  RecallShape s;
  s.task.pairs = kQuickRecallPairs;
  s.batch = kQuickRecallBatch;
  s.steps = kQuickRecallSteps;
  s.evaluations = 1;
  return s;
}

RecallConfig recall_training_config(const std::string& method, std::uint64_t seed, const RecallShape& shape) {
  RecallConfig c;
  c.task = shape.task;
  c.D = shape.D;
  c.heads = shape.heads;
  c.layers = shape.layers;
  c.mlp = shape.mlp;
  c.seed = seed;
  c.attention.method = method;
  const Eigen::Index summary = recall_summary_length(c.tokens());
  if (method == "linformer") c.attention.projection_k = summary;
  if (method == "nystrom") c.attention.landmarks = summary;
  return c;
}

RecallSet recall_training_stream(const RecallShape& shape, std::uint64_t seed) {
  return recall_set(shape.task, seed, RecallSplit::train, shape.steps * shape.batch);
}

FitOptions recall_fit_options(const RecallShape& shape, std::int64_t test_sequences) {
  if (shape.evaluations < 1 || shape.steps % shape.evaluations != 0)
    throw std::invalid_argument(fmt::format("recall_fit_options: {} steps are not a whole number of {} evaluation intervals",
                                            shape.steps, shape.evaluations));
  FitOptions o;
  o.epochs = shape.evaluations;
  o.batch = shape.batch;
  o.lr = shape.lr;
  o.train_images = shape.steps / shape.evaluations * shape.batch;
  o.test_images = test_sequences;
  o.fresh = true;
  return o;
}

std::string recall_checkpoint_relative(const std::string& method, int seed_index, Eigen::Index pairs) {
  if (pairs == kRecallPairs) return fmt::format("checkpoints/recall/{}/seed-{}", method, seed_index);
  return fmt::format("checkpoints/recall/pairs-{}/{}/seed-{}", pairs, method, seed_index);
}

std::filesystem::path recall_checkpoint_dir(const std::filesystem::path& root, const std::string& method, int seed_index,
                                            Eigen::Index pairs) {
  return root / recall_checkpoint_relative(method, seed_index, pairs);
}

std::unique_ptr<RecallModel<float>> train_quick_recall(const std::string& method, std::uint64_t base_seed, int seed_index) {
  const RecallShape shape = quick_recall_shape();
  const std::uint64_t seed = base_seed + static_cast<std::uint64_t>(seed_index);
  auto model = std::make_unique<RecallModel<float>>(recall_training_config(method, seed, shape));
  Trainer<float, RecallModel<float>> trainer(*model);
  // exp_recall_training --quick's run without its evaluation (it changes no weight; the callers measure the model
  // themselves).
  FitOptions options = recall_fit_options(shape, 0);
  const RecallSet test = recall_set(shape.task, base_seed, RecallSplit::test, 0);
  const FitResult r = fit<float, RecallModel<float>>(trainer, recall_training_stream(shape, seed), test, options,
                                                     [](const StepRecord&) {}, [](const EpochRecord&) {});
  if (r.diverged)
    throw std::runtime_error(fmt::format("train_quick_recall: {} seed index {} diverged at step {} (training loss {})", method,
                                         seed_index, r.steps, r.loss));
  return model;
}

}  // namespace attnlab
