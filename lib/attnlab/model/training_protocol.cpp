// The training protocol (training_protocol.hpp).
#include "attnlab/model/training_protocol.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/trainer.hpp"

namespace attnlab {

std::filesystem::path run_checkpoint_dir(const std::filesystem::path& root, const std::string& method, int seed_index) {
  return root / run_checkpoint_relative(method, seed_index);
}

std::string run_checkpoint_relative(const std::string& method, int seed_index) {
  return fmt::format("checkpoints/{}/seed-{}", method, seed_index);
}

ViTConfig training_config(const std::string& method, std::uint64_t seed, const TrainingShape& shape) {
  ViTConfig config;
  config.seed = seed;
  config.attention.method = method;
  config.D = shape.D;
  config.heads = shape.heads;
  config.layers = shape.layers;
  config.mlp = shape.mlp;
  return config;
}

FitOptions training_fit_options(bool quick, int epochs, Eigen::Index batch, std::uint64_t seed) {
  FitOptions o;
  o.epochs = epochs;
  o.batch = batch;
  o.lr = kTrainingLearningRate;
  o.train_images = quick ? kQuickTrainImages : -1;
  o.test_images = quick ? kQuickTestImages : -1;
  o.shuffle_seed = derive_seed(seed, 1);
  return o;
}

std::unique_ptr<ViT<float>> train_quick_vit(const std::string& method, std::uint64_t base_seed, int seed_index,
                                            const ImageSet& train, const ImageSet& test) {
  const std::uint64_t seed = run_seed(base_seed, seed_index);
  auto model = std::make_unique<ViT<float>>(training_config(method, seed));
  Trainer<float> trainer(*model);
  // exp_vit_training's options but no evaluation at the end of the epoch: it changes no weight, and the experiments
  // that call this measure the model themselves (a third of the time of a quick run of theirs).
  FitOptions options = training_fit_options(true, 1, kTrainingBatch, seed);
  options.test_images = 0;
  const FitResult r = fit<float>(trainer, train, test, options, [](const StepRecord&) {}, [](const EpochRecord&) {});
  if (r.diverged)
    throw std::runtime_error(fmt::format("train_quick_vit: {} seed index {} diverged at step {} (training loss {})", method,
                                         seed_index, r.steps, r.loss));
  return model;
}

}  // namespace attnlab
