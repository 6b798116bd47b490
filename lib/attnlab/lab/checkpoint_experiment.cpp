// An experiment on trained ViTs (checkpoint_experiment.hpp).
#include "attnlab/lab/checkpoint_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attnlab/core/rng.hpp"
#include "attnlab/lab/fashion_mnist_option.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/training_protocol.hpp"
#include "attnlab/model/vit_copy.hpp"

namespace attnlab {

namespace {

// A checkpoint loaded into a model of its own configuration; CheckpointError or std::invalid_argument (widths a
// ViT refuses) escape.
template <typename T>
std::unique_ptr<ViT<T>> load_vit(const std::filesystem::path& dir) {
  const CheckpointInfo info = read_checkpoint_info(dir);
  auto model = std::make_unique<ViT<T>>(info.config);
  load_checkpoint(*model, dir);
  return model;
}

}  // namespace

std::vector<std::int64_t> seeded_sample(std::int64_t total, std::int64_t count, std::uint64_t seed, std::uint64_t salt) {
  Rng rng(derive_seed(seed, salt));
  std::vector<std::int64_t> sample = shuffled_indices(total, rng);
  sample.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(count, 0, total)));
  return sample;
}

std::string checkpoints_origin(const ExperimentCli& cli, const std::filesystem::path& dir, const std::vector<std::string>& methods) {
  // --quick says the same whether its models were read from exp_vit_training --quick's checkpoints or trained here
  // (the same bits), so that a sharded run and a one-process run write the same ledger.
  if (cli.options().quick)
    return fmt::format("--quick: exp_vit_training --quick's tiny {} models ({} steps of {} images each, seeds {} + 0..{}), read "
                       "from its checkpoints or trained here alike",
                       fmt::join(methods, ", "), kQuickTrainImages / kTrainingBatch, kTrainingBatch, cli.options().seed,
                       kTrainingSeeds - 1);
  int seeds = 0;
  while (!methods.empty() && std::filesystem::is_regular_file(run_checkpoint_dir(dir, methods.front(), seeds) / "manifest.json")) ++seeds;
  std::string steps;
  try {
    steps = fmt::format(", {} steps each", read_checkpoint_info(run_checkpoint_dir(dir, methods.front(), 0)).step);
  } catch (const CheckpointError&) {
    // The note says less; the judgement does not rest on it.
  }
  return fmt::format("exp_vit_training's {} checkpoints {}/<method>/seed-<k> (seeds {} + 0..{}{})", fmt::join(methods, ", "),
                     cli.evidence_path("checkpoints"), cli.options().seed, std::max(seeds, 1) - 1, steps);
}

CheckpointExperiment::CheckpointExperiment(ExperimentCli& cli, const std::string& checkpoint_help)
    : cli_(cli), data_dir_(kFashionMnistDir) {
  cli.add_text("--checkpoint", checkpoint_, checkpoint_help + "; writes tables, no ledger rows", "DIR");
  add_fashion_mnist_option(cli, data_dir_);
}

bool CheckpointExperiment::prepare() {
  cli_.set_dataset("fashion-mnist");
  if (user() && (cli_.sharded() || cli_.judging())) {
    fmt::print(stderr, "{}: --checkpoint runs write tables only; --shard and --judge split the sweep that is judged\n", cli_.name());
    return false;
  }
  // Judging reads the tables only: neither the data set nor the models need be on the judging machine.
  if (cli_.judging()) return true;
  data_ = load_fashion_mnist_for(cli_, data_dir_, 28);
  if (!data_) return false;
  train_ = {data_->train_images.pixels, data_->train_labels, 28};
  test_ = {data_->test_images.pixels, data_->test_labels, 28};
  return true;
}

template <typename T>
std::optional<TrainedModels<T>> CheckpointExperiment::load_user(const std::vector<std::string>& methods,
                                                                const std::string& why) const {
  TrainedModels<T> out;
  if (cli_.judging()) return out;
  try {
    auto model = load_vit<T>(checkpoint_);
    const std::string& method = model->config().attention.method;
    if (!methods.empty() && std::find(methods.begin(), methods.end(), method) == methods.end()) {
      fmt::print(stderr, "{}: --checkpoint {}: method \"{}\"; {}\n", cli_.name(), checkpoint_, method, why);
      return std::nullopt;
    }
    out.methods = {method};
    out.labels = {{fmt::format("{} (seed {}, step {})", checkpoint_, model->config().seed, read_checkpoint_info(checkpoint_).step)}};
    out.origin = "your checkpoint " + checkpoint_;
    out.models.emplace_back();
    out.models.back().push_back(std::move(model));
  } catch (const CheckpointError& e) {
    fmt::print(stderr, "{}: {}\n", cli_.name(), e.what());
    return std::nullopt;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "{}: checkpoint {}: {}\n", cli_.name(), checkpoint_, e.what());
    return std::nullopt;
  }
  return out;
}

template <typename T>
std::optional<TrainedModels<T>> CheckpointExperiment::load_run(const std::vector<std::string>& methods, int seeds) const {
  TrainedModels<T> out;
  if (cli_.judging()) return out;
  const bool quick = cli_.options().quick;
  const std::filesystem::path& root = cli_.options().out;
  // --quick uses the run's checkpoints when exp_vit_training --quick wrote them all into --out (make results
  // --quick), else trains the same models here: either way the same bits.
  bool present = true;
  for (const auto& m : methods)
    for (int k = 0; k < seeds; ++k) present = present && std::filesystem::is_regular_file(run_checkpoint_dir(root, m, k) / "manifest.json");
  const bool train_here = quick && !present;
  out.methods = methods;
  out.origin = checkpoints_origin(cli_, root, methods);
  try {
    for (const auto& m : methods) {
      out.models.emplace_back();
      out.labels.emplace_back();
      for (int k = 0; k < seeds; ++k) {
        const std::filesystem::path dir = run_checkpoint_dir(root, m, k);
        // --quick labels its models alike either way, so that a run that trained them and one that read them write the
        // same tables.
        const std::string quick_label = fmt::format("{} seed-{} (--quick, seed {}, {} steps)", m, k, run_seed(cli_.options().seed, k),
                                                    kQuickTrainImages / kTrainingBatch);
        if (train_here) {
          out.models.back().push_back(copy_vit<T>(*train_quick_vit(m, cli_.options().seed, k, train_, test_)));
          out.labels.back().push_back(quick_label);
          continue;
        }
        if (!std::filesystem::is_regular_file(dir / "manifest.json")) {
          fmt::print(stderr, "{}: {} holds no checkpoint: run exp_vit_training with the same --out first, or give --checkpoint DIR\n",
                     cli_.name(), dir.string());
          return std::nullopt;
        }
        auto model = load_vit<T>(dir);
        if (model->config().attention.method != m) {
          fmt::print(stderr, "{}: {}: the checkpoint's method is \"{}\", not \"{}\"\n", cli_.name(), dir.string(),
                     model->config().attention.method, m);
          return std::nullopt;
        }
        // The label names the checkpoint relative to the output directory, as the published results hold it: the
        // same in every run whatever the layout of its tasks (a sharded run's --out links to the training shard
        // that wrote it; its path there would differ from one cut to another, and from results/).
        out.labels.back().push_back(quick ? quick_label
                                          : fmt::format("{} (seed {}, step {})", run_checkpoint_relative(m, k),
                                                        model->config().seed, read_checkpoint_info(dir).step));
        out.models.back().push_back(std::move(model));
      }
    }
  } catch (const CheckpointError& e) {
    fmt::print(stderr, "{}: {}\n", cli_.name(), e.what());
    return std::nullopt;
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "{}: {}\n", cli_.name(), e.what());
    return std::nullopt;
  }
  return out;
}

int CheckpointExperiment::run(const ExperimentParts& parts) const {
  if (!user()) return run_experiment(cli_, parts);
  return run_experiment(cli_.name(), [&] {
    parts.measure(Shard());
    fmt::print(stderr, "{}: --checkpoint: tables written, no ledger rows (a verdict is about the models trained here)\n", cli_.name());
  });
}

template std::optional<TrainedModels<float>> CheckpointExperiment::load_user<float>(const std::vector<std::string>&,
                                                                                   const std::string&) const;
template std::optional<TrainedModels<double>> CheckpointExperiment::load_user<double>(const std::vector<std::string>&,
                                                                                     const std::string&) const;
template std::optional<TrainedModels<float>> CheckpointExperiment::load_run<float>(const std::vector<std::string>&, int) const;
template std::optional<TrainedModels<double>> CheckpointExperiment::load_run<double>(const std::vector<std::string>&, int) const;

}  // namespace attnlab
