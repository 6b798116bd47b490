// An experiment on trained models (exp_trained_attention, exp_trained_regression, exp_trained_growth): its
// --checkpoint and --data options, the refusal of a user's checkpoint in a split run, loading and checking
// the models of both testbeds (the Fashion-MNIST ViT, the recall model), and the run itself (tables only for a
// user's checkpoint: a verdict is about the models trained here, a user's model yields a report about that model).
//
//   ExperimentCli cli("exp_trained_x", "...");
//   CheckpointExperiment on(cli, "a checkpoint directory to analyse instead of ...");
//   cli.split_measurement();
//   cli.parse(argc, argv);
//   if (!on.prepare()) return kExitUsage;                  // bad data, --checkpoint with --shard, ...
//   auto models = on.load_run<float>({"exact"}, "needs exact attention");   // nullopt: refused, one line printed
//   return on.run({measure, judge});
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/io/idx.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/shard.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/recall_task.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// The two testbeds the trained claims are measured on, as the tables' `task` column names them.
inline constexpr const char* kImageTask = "fashion-mnist";
inline constexpr const char* kRecallTask = "recall";
// The `inputs` column of the tables of an experiment measured on both (ExperimentCli::set_dataset).
inline constexpr const char* kTrainedTasksDataset = "fashion-mnist+recall";

// The models an experiment measures: models[m][k] is method m's model of seed index k (one model, seed
// index 0, for a user's checkpoint), labels[m][k] says where it came from: "checkpoints/<method>/seed-<k> (seed S,
// step N)" for the run's ViTs ("checkpoints/recall/<method>/seed-<k> ..." for its recall models), relative to the
// output directory; the directory as given for a user's; a fixed text in --quick. Empty (no methods) when the run
// has no models of this task (load_run with required false).
template <typename T, typename Model = ViT<T>>
struct TrainedModels {
  std::vector<std::string> methods;
  std::vector<std::vector<std::unique_ptr<Model>>> models;
  std::vector<std::vector<std::string>> labels;
  std::string origin;  // for the notes: the run's checkpoints, the quick models, or the user's directory
  bool empty() const { return models.empty(); }
  int seeds() const { return models.empty() ? 0 : static_cast<int>(models.front().size()); }
  const Model& at(std::size_t method, int seed_index) const { return *models[method][static_cast<std::size_t>(seed_index)]; }
};
template <typename T>
using RecallModels = TrainedModels<T, RecallModel<T>>;

// A sweep over the seeds' models laid out seed by seed, `per_seed` configurations each: the part of seed k's
// block [k per_seed, (k + 1) per_seed) that a shard's `range` covers, as offsets within the block.
struct SeedBlock {
  std::size_t first = 0, last = 0;
  std::size_t size() const { return last - first; }
  bool empty() const { return first >= last; }
};
inline SeedBlock seed_block(const Shard::Range& range, std::size_t per_seed, int k) {
  const std::size_t begin = per_seed * static_cast<std::size_t>(k), end = begin + per_seed;
  return {std::clamp(range.begin, begin, end) - begin, std::clamp(range.end, begin, end) - begin};
}

// The part of a sweep's configurations from `offset` on (what follows the seeds' blocks: the random families)
// that `range` covers, as offsets from `offset`.
inline SeedBlock block_after(const Shard::Range& range, std::size_t offset) {
  return {std::max(range.begin, offset) - offset, std::max(range.end, offset) - offset};
}

// `count` of images 0 .. total-1 in the order a shuffle by Rng(derive_seed(seed, salt)) puts them (all when
// count >= total): a fixed sample that every run and shard of an experiment shares.
std::vector<std::int64_t> seeded_sample(std::int64_t total, std::int64_t count, std::uint64_t seed, std::uint64_t salt);

// For the notes of a judge reading `dir`: where the models of `methods` came from, "exp_vit_training's exact,
// symmetric checkpoints results/checkpoints/<method>/seed-<k> (seeds 20250311 + 0..2, 11250 steps)", or in
// --quick without them "--quick: tiny models trained in-process (...)". A function of the directory, as the
// judgement is. recall_checkpoints_origin: the same for exp_recall_training's checkpoints/recall/<method>/seed-<k>.
std::string checkpoints_origin(const ExperimentCli& cli, const std::filesystem::path& dir, const std::vector<std::string>& methods);
std::string recall_checkpoints_origin(const ExperimentCli& cli, const std::filesystem::path& dir,
                                      const std::vector<std::string>& methods);

class CheckpointExperiment {
 public:
  // Adds --checkpoint DIR (described by `checkpoint_help`) and --data DIR. Call before cli.parse().
  CheckpointExperiment(ExperimentCli& cli, const std::string& checkpoint_help);

  // After cli.parse(): refuses --checkpoint with --shard or --judge, and (unless judging) reads the data
  // set. False after printing one line "<experiment>: <problem>": main returns kExitUsage.
  bool prepare();

  bool user() const { return !checkpoint_.empty(); }
  const std::string& user_checkpoint() const { return checkpoint_; }
  // Whether the user's checkpoint is a recall model's (its manifest's format; false when it cannot be read: the
  // ViT loader then names the problem).
  bool user_recall() const;
  // The data set (after prepare(), not when judging).
  const ImageSet& train() const { return train_; }
  const ImageSet& test() const { return test_; }

  // The user's checkpoint as a ViT<T> (load_user_recall: a RecallModel<T>), refused unless its method is one of
  // `methods` (`why` says why). One line and nullopt on a missing, malformed or refused checkpoint.
  template <typename T>
  std::optional<TrainedModels<T>> load_user(const std::vector<std::string>& methods, const std::string& why) const;
  template <typename T>
  std::optional<RecallModels<T>> load_user_recall(const std::vector<std::string>& methods, const std::string& why) const;

  // The run's models of `methods` and seed indices 0 .. seeds-1: exp_vit_training's checkpoints in
  // <out>/checkpoints/<method>/seed-<k>/ (load_recall_run: exp_recall_training's in
  // <out>/checkpoints/recall/<method>/seed-<k>/); in --quick, where they are absent, the same quick models trained
  // here (train_quick_vit, train_quick_recall). One line and nullopt when a full run lacks one or a checkpoint is
  // bad or of another method; with `required` false, a full run that holds none of them at all gets empty models
  // (the task was not trained in this run) rather than a refusal.
  template <typename T>
  std::optional<TrainedModels<T>> load_run(const std::vector<std::string>& methods, int seeds, bool required = true) const;
  template <typename T>
  std::optional<RecallModels<T>> load_recall_run(const std::vector<std::string>& methods, int seeds, bool required = true) const;

  // The recall test set a model of `task` is scored on: recall_spec.md's test split of the run's base seed,
  // kRecallTestSequences sequences (--quick: kQuickRecallTestSequences), as exp_recall_training scores it.
  RecallSet recall_test(const RecallTask& task) const;

  // Runs the experiment: for a user's checkpoint, parts.measure(Shard()) alone and a line saying that no
  // ledger rows were written; otherwise run_experiment(cli, parts).
  int run(const ExperimentParts& parts) const;

 private:
  template <typename T, typename Model>
  std::optional<TrainedModels<T, Model>> load_user_models(const std::vector<std::string>& methods, const std::string& why) const;
  template <typename T, typename Model>
  std::optional<TrainedModels<T, Model>> load_run_models(const std::vector<std::string>& methods, int seeds, bool required) const;

  ExperimentCli& cli_;
  std::string checkpoint_, data_dir_;
  std::optional<FashionMnist> data_;
  ImageSet train_, test_;
};

}  // namespace attnlab
