// An experiment on trained models (checkpoint_experiment.hpp).
#include "attnlab/lab/checkpoint_experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>

#include "attnlab/core/rng.hpp"
#include "attnlab/lab/fashion_mnist_option.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "attnlab/model/training_protocol.hpp"
#include "attnlab/model/vit_copy.hpp"

namespace attnlab {

namespace {

// What differs between the two testbeds' checkpoints: who trains them, where they live, how one is read, and the
// quick mode's models.
template <typename Model>
struct Trained;

template <typename T>
struct Trained<ViT<T>> {
  static constexpr const char* trainer = "exp_vit_training";
  static constexpr const char* root = "checkpoints";  // relative(method, k) is <root>/<method>/seed-<k>
  static std::string relative(const std::string& method, int k) { return run_checkpoint_relative(method, k); }
  static std::int64_t step(const std::filesystem::path& dir) { return read_checkpoint_info(dir).step; }
  // A checkpoint loaded into a model of its own configuration; CheckpointError or std::invalid_argument (widths a
  // ViT refuses) escape.
  static std::unique_ptr<ViT<T>> load(const std::filesystem::path& dir) {
    const CheckpointInfo info = read_checkpoint_info(dir);
    auto model = std::make_unique<ViT<T>>(info.config);
    load_checkpoint(*model, dir);
    return model;
  }
  static std::int64_t quick_steps() { return kQuickTrainImages / kTrainingBatch; }
  static std::string quick_steps_text() { return fmt::format("{} steps of {} images each", quick_steps(), kTrainingBatch); }
};

template <typename T>
struct Trained<RecallModel<T>> {
  static constexpr const char* trainer = "exp_recall_training";
  static constexpr const char* root = "checkpoints/recall";
  static std::string relative(const std::string& method, int k) { return recall_checkpoint_relative(method, k); }
  static std::int64_t step(const std::filesystem::path& dir) { return read_recall_checkpoint_info(dir).step; }
  static std::unique_ptr<RecallModel<T>> load(const std::filesystem::path& dir) {
    const RecallCheckpointInfo info = read_recall_checkpoint_info(dir);
    auto model = std::make_unique<RecallModel<T>>(info.config);
    load_checkpoint(*model, dir);
    return model;
  }
  static std::int64_t quick_steps() { return kQuickRecallSteps; }
  static std::string quick_steps_text() { return fmt::format("{} steps of {} sequences each", quick_steps(), kQuickRecallBatch); }
};

template <typename Model>
std::string origin_of(const ExperimentCli& cli, const std::filesystem::path& dir, const std::vector<std::string>& methods) {
  using Tr = Trained<Model>;
  // --quick says the same whether its models were read from the trainer's --quick checkpoints or trained here
  // (the same bits), so that a sharded run and a one-process run write the same ledger.
  if (cli.options().quick)
    return fmt::format("--quick: {} --quick's tiny {} models ({}, seeds {} + 0..{}), read from its checkpoints or trained here alike",
                       Tr::trainer, fmt::join(methods, ", "), Tr::quick_steps_text(), cli.options().seed, kTrainingSeeds - 1);
  int seeds = 0;
  while (!methods.empty() && std::filesystem::is_regular_file(dir / Tr::relative(methods.front(), seeds) / "manifest.json")) ++seeds;
  std::string steps;
  try {
    steps = fmt::format(", {} steps each", Tr::step(dir / Tr::relative(methods.front(), 0)));
  } catch (const CheckpointError&) {
    // The note says less; the judgement does not rest on it.
  }
  return fmt::format("{}'s {} checkpoints {}/<method>/seed-<k> (seeds {} + 0..{}{})", Tr::trainer, fmt::join(methods, ", "),
                     cli.evidence_path(Tr::root), cli.options().seed, std::max(seeds, 1) - 1, steps);
}

}  // namespace

std::vector<std::int64_t> seeded_sample(std::int64_t total, std::int64_t count, std::uint64_t seed, std::uint64_t salt) {
  Rng rng(derive_seed(seed, salt));
  std::vector<std::int64_t> sample = shuffled_indices(total, rng);
  sample.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(count, 0, total)));
  return sample;
}

std::string checkpoints_origin(const ExperimentCli& cli, const std::filesystem::path& dir, const std::vector<std::string>& methods) {
  return origin_of<ViT<float>>(cli, dir, methods);
}

std::string recall_checkpoints_origin(const ExperimentCli& cli, const std::filesystem::path& dir,
                                      const std::vector<std::string>& methods) {
  return origin_of<RecallModel<float>>(cli, dir, methods);
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

bool CheckpointExperiment::user_recall() const {
  try {
    return user() && read_checkpoint_format(checkpoint_) == kRecallCheckpointFormat;
  } catch (const CheckpointError&) {
    return false;
  }
}

RecallSet CheckpointExperiment::recall_test(const RecallTask& task) const {
  return recall_set(task, cli_.options().seed, RecallSplit::test,
                    cli_.options().quick ? kQuickRecallTestSequences : kRecallTestSequences);
}

template <typename T, typename Model>
std::optional<TrainedModels<T, Model>> CheckpointExperiment::load_user_models(const std::vector<std::string>& methods,
                                                                              const std::string& why) const {
  TrainedModels<T, Model> out;
  if (cli_.judging()) return out;
  try {
    auto model = Trained<Model>::load(checkpoint_);
    const std::string& method = model->config().attention.method;
    if (!methods.empty() && std::find(methods.begin(), methods.end(), method) == methods.end()) {
      fmt::print(stderr, "{}: --checkpoint {}: method \"{}\"; {}\n", cli_.name(), checkpoint_, method, why);
      return std::nullopt;
    }
    out.methods = {method};
    out.labels = {{fmt::format("{} (seed {}, step {})", checkpoint_, model->config().seed, Trained<Model>::step(checkpoint_))}};
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
std::optional<TrainedModels<T>> CheckpointExperiment::load_user(const std::vector<std::string>& methods, const std::string& why) const {
  return load_user_models<T, ViT<T>>(methods, why);
}

template <typename T>
std::optional<RecallModels<T>> CheckpointExperiment::load_user_recall(const std::vector<std::string>& methods,
                                                                      const std::string& why) const {
  return load_user_models<T, RecallModel<T>>(methods, why);
}

template <typename T, typename Model>
std::optional<TrainedModels<T, Model>> CheckpointExperiment::load_run_models(const std::vector<std::string>& methods, int seeds,
                                                                             bool required) const {
  using Tr = Trained<Model>;
  TrainedModels<T, Model> out;
  if (cli_.judging()) return out;
  const bool quick = cli_.options().quick;
  const std::filesystem::path& root = cli_.options().out;
  // --quick uses the run's checkpoints when the trainer's --quick run wrote them all into --out (make results
  // --quick), else trains the same models here: either way the same bits.
  bool present = true, any = false;
  for (const auto& m : methods)
    for (int k = 0; k < seeds; ++k) {
      const bool here = std::filesystem::is_regular_file(root / Tr::relative(m, k) / "manifest.json");
      present = present && here;
      any = any || here;
    }
  const bool train_here = quick && !present;
  // A full run without any of this task's checkpoints did not train the task: its claims are judged on the other.
  if (!quick && !required && !any) return out;
  out.methods = methods;
  out.origin = origin_of<Model>(cli_, root, methods);
  try {
    for (const auto& m : methods) {
      out.models.emplace_back();
      out.labels.emplace_back();
      for (int k = 0; k < seeds; ++k) {
        const std::filesystem::path dir = root / Tr::relative(m, k);
        // --quick labels its models alike either way, so that a run that trained them and one that read them write the
        // same tables.
        const std::string quick_label = fmt::format("{} seed-{} (--quick, seed {}, {} steps)", m, k, run_seed(cli_.options().seed, k),
                                                    Tr::quick_steps());
        if (train_here) {
          if constexpr (std::is_same_v<Model, ViT<T>>)
            out.models.back().push_back(copy_vit<T>(*train_quick_vit(m, cli_.options().seed, k, train_, test_)));
          else
            out.models.back().push_back(copy_recall_model<T>(*train_quick_recall(m, cli_.options().seed, k)));
          out.labels.back().push_back(quick_label);
          continue;
        }
        if (!std::filesystem::is_regular_file(dir / "manifest.json")) {
          fmt::print(stderr, "{}: {} holds no checkpoint: run {} with the same --out first, or give --checkpoint DIR\n", cli_.name(),
                     dir.string(), Tr::trainer);
          return std::nullopt;
        }
        auto model = Tr::load(dir);
        if (model->config().attention.method != m) {
          fmt::print(stderr, "{}: {}: the checkpoint's method is \"{}\", not \"{}\"\n", cli_.name(), dir.string(),
                     model->config().attention.method, m);
          return std::nullopt;
        }
        // The label names the checkpoint relative to the output directory, as the published results hold it: the
        // same in every run whatever the layout of its tasks (a sharded run's --out links to the training shard
        // that wrote it; its path there would differ from one cut to another, and from results/).
        out.labels.back().push_back(quick ? quick_label
                                          : fmt::format("{} (seed {}, step {})", Tr::relative(m, k), model->config().seed,
                                                        Tr::step(dir)));
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

template <typename T>
std::optional<TrainedModels<T>> CheckpointExperiment::load_run(const std::vector<std::string>& methods, int seeds, bool required) const {
  return load_run_models<T, ViT<T>>(methods, seeds, required);
}

template <typename T>
std::optional<RecallModels<T>> CheckpointExperiment::load_recall_run(const std::vector<std::string>& methods, int seeds,
                                                                     bool required) const {
  return load_run_models<T, RecallModel<T>>(methods, seeds, required);
}

int CheckpointExperiment::run(const ExperimentParts& parts) const {
  if (!user()) return run_experiment(cli_, parts);
  return run_experiment(cli_.name(), [&] {
    parts.measure(Shard());
    fmt::print(stderr, "{}: --checkpoint: tables written, no ledger rows (a verdict is about the models trained here)\n", cli_.name());
  });
}

#define ATTNLAB_LOADERS(T)                                                                                             \
  template std::optional<TrainedModels<T>> CheckpointExperiment::load_user<T>(const std::vector<std::string>&,             \
                                                                              const std::string&) const;               \
  template std::optional<RecallModels<T>> CheckpointExperiment::load_user_recall<T>(const std::vector<std::string>&,       \
                                                                                    const std::string&) const;         \
  template std::optional<TrainedModels<T>> CheckpointExperiment::load_run<T>(const std::vector<std::string>&, int, bool) const; \
  template std::optional<RecallModels<T>> CheckpointExperiment::load_recall_run<T>(const std::vector<std::string>&, int, bool) const;
ATTNLAB_LOADERS(float)
ATTNLAB_LOADERS(double)
#undef ATTNLAB_LOADERS

}  // namespace attnlab
