// U17 (U16 made testable): a vision Transformer trained here on Fashion-MNIST with each attention method,
// over several seeds; which attention is the most accurate (seed 002's protocol, scaled to this CPU).
#include <fmt/format.h>
#include <malloc.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/idx.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/fashion_mnist_option.hpp"
#include "attnlab/lab/mean_bands.hpp"
#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/fit.hpp"

using namespace attnlab;

namespace exp_vit_training {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// The protocol (vit_spec.md): Adam, peak learning rate 5e-4 (the seed's), cosine annealing to 0.
constexpr double kLearningRate = 5e-4;
// Batch 16, not the seed's GPU 256: on 2 cores the budget allows one pass over the data, and
// smaller batches take more optimiser steps from the same images (two chunks: one per core). Chosen
// on exact attention, first seed, one epoch (2026-11-26): batch 32 80.1%, 16 82.2%, 8 82.6%.
constexpr Eigen::Index kBatch = 16;
constexpr int kSeeds = 3;
// Chosen from the engine's measured throughput so that every method x 3 seeds fits 60 minutes (README).
constexpr int kFullEpochs = 1;
// --quick: eight steps of 16 images and 256 test images per run, every method and seed.
constexpr std::int64_t kQuickTrainImages = 128;
constexpr std::int64_t kQuickTestImages = 256;
// The methods compared for U17: seed 002's five attentions (both linear forms, both random-feature forms).
// "symmetric" (seed 000's reparameterization) is trained and reported beside them, not part of the claim.
const std::vector<std::string> kSeed002Methods = {"exact", "linear-elu", "linear-shen", "linformer",
                                                  "random-fourier", "favor", "nystrom"};

std::string interval_text(const MeanInterval& m) {
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", m.mean, m.interval.lower, m.interval.upper);
}

constexpr const char* kStepsFile = "vit_training_steps.csv";
constexpr const char* kEpochsFile = "vit_training_epochs.csv";
constexpr const char* kRunsFile = "vit_training_runs.csv";
constexpr const char* kTimingFile = "vit_training_timing.csv";
// Derived by the judge: mean test accuracy per method and epoch over the seeds, 95% interval (the report's band).
constexpr const char* kEpochMeansFile = "vit_training_epoch_means.csv";

// The model's widths and the batch: vit_spec.md's defaults, or the user's (--width, --heads, --layers, --mlp,
// --batch). Every run of a sweep shares them; vit_training_runs.csv records them per run.
struct Shape {
  Eigen::Index D = ViTConfig{}.D, heads = ViTConfig{}.heads, layers = ViTConfig{}.layers, mlp = ViTConfig{}.mlp;
  Eigen::Index batch = kBatch;
};

struct Run {
  std::string method;
  int seed_index;
};

// The sweep: every method, then every seed, in this order whatever the shard count; a run's seeds come
// from the base seed and its seed index only.
std::vector<Run> sweep(const std::string& method) {
  const std::vector<std::string> methods = method == "all" ? trainable_attention_names() : std::vector<std::string>{method};
  std::vector<Run> runs;
  for (const auto& m : methods)
    for (int s = 0; s < kSeeds; ++s) runs.push_back({m, s});
  return runs;
}

// Trains the shard's runs and writes their rows; in full mode also the first seed's checkpoint per method.
void measure_training(const ExperimentCli& cli, const Shard& shard, const FashionMnist& data, const std::string& method,
                      int epochs, const Shape& shape) {
  const bool quick = cli.options().quick;
  const int n_epochs = epochs > 0 ? epochs : (quick ? 1 : kFullEpochs);
  const std::vector<Run> all = sweep(method);
  const Shard::Range range = shard.range(all.size());
  const ImageSet train{data.train_images.pixels, data.train_labels, 28};
  const ImageSet test{data.test_images.pixels, data.test_labels, 28};
  FitOptions fit_options;
  fit_options.epochs = n_epochs;
  fit_options.batch = shape.batch;
  fit_options.lr = kLearningRate;
  fit_options.train_images = quick ? kQuickTrainImages : -1;
  fit_options.test_images = quick ? kQuickTestImages : -1;
  const std::int64_t train_images = quick ? kQuickTrainImages : train.count();
  const std::int64_t run_steps = steps_per_epoch(train_images, shape.batch) * n_epochs;

  CsvTable steps({text_col("method"), int_col("seed"), int_col("epoch"), int_col("step"), real_col("lr"),
                  real_col("train_loss")});
  CsvTable epoch_table({text_col("method"), int_col("seed"), int_col("epoch"), real_col("test_loss"),
                        real_col("test_accuracy"), int_col("test_correct"), int_col("test_images")});
  CsvTable runs({text_col("method"), int_col("seed"), text_col("attention"), real_col("test_accuracy"),
                 real_col("accuracy_lower95"), real_col("accuracy_upper95"), int_col("test_correct"),
                 int_col("test_images"), int_col("train_images"), int_col("epochs"), int_col("steps"), int_col("batch"),
                 real_col("peak_lr"), text_col("schedule"), text_col("optimizer"), int_col("D"), int_col("heads"),
                 int_col("layers"), int_col("mlp"), int_col("tokens"), int_col("patch"), int_col("stride"), int_col("pad"),
                 int_col("parameters")});
  CsvTable timing({text_col("method"), int_col("seed"), int_col("steps"), real_col("seconds_per_step"),
                   real_col("train_seconds_per_epoch"), real_col("eval_seconds_per_epoch"),
                   real_col("train_images_per_second"), int_col("threads")});

  const auto start = std::chrono::steady_clock::now();
  const double total_steps = static_cast<double>(range.size()) * static_cast<double>(run_steps);
  double steps_done = 0;
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const std::string& m = all[i].method;
    const int s = all[i].seed_index;
    ViTConfig config;
    config.seed = cli.options().seed + static_cast<std::uint64_t>(s);
    config.attention.method = m;
    config.D = shape.D;
    config.heads = shape.heads;
    config.layers = shape.layers;
    config.mlp = shape.mlp;
    ViT<float> model(config);
    Trainer<float> trainer(model);
    fit_options.shuffle_seed = derive_seed(config.seed, 1);
    double train_seconds = 0, eval_seconds = 0;
    Evaluation last;
    fit<float>(
        trainer, train, test, fit_options,
        [&](const StepRecord& r) {
          steps.add_row({m, s, r.epoch, r.step, r.lr, r.loss});
          steps_done += 1;
        },
        [&](const EpochRecord& r) {
          epoch_table.add_row({m, s, r.epoch, r.test.loss, r.test.accuracy(), r.test.correct, r.test.count});
          train_seconds += r.train_seconds;
          eval_seconds += r.eval_seconds;
          last = r.test;
          if (!quick) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double eta = elapsed / steps_done * (total_steps - steps_done);
            fmt::print(stderr, "{}: {} seed {}/{} epoch {}/{}: test accuracy {:.4f}, {:.0f} images/s, ETA {:.0f} min\n",
                       cli.name(), m, s + 1, kSeeds, r.epoch, n_epochs, r.test.accuracy(),
                       static_cast<double>(r.steps * shape.batch) / r.train_seconds, eta / 60);
          }
        });
    const Interval cp = clopper_pearson(static_cast<std::size_t>(last.correct), static_cast<std::size_t>(last.count));
    runs.add_row({m, s, model.attention(0).describe(), last.accuracy(), cp.lower, cp.upper, last.correct, last.count,
                   train_images, n_epochs, run_steps, shape.batch, kLearningRate, "cosine to 0 over the run's steps",
                   "Adam(0.9, 0.999, eps 1e-8, no weight decay)", config.D, config.heads, config.layers, config.mlp,
                   config.tokens(), config.patch, config.stride, config.pad, model.parameter_count()});
    timing.add_row({m, s, run_steps, train_seconds / static_cast<double>(run_steps), train_seconds / n_epochs,
                    eval_seconds / n_epochs, static_cast<double>(run_steps * shape.batch) / train_seconds,
                    cli.options().threads});
    // One full-run checkpoint per method (seed index 0), for the next experiments and for users.
    if (!quick && s == 0) {
      const std::string dir = "checkpoints/" + m;
      save_checkpoint(model, cli.options().out / dir, run_steps);
      cli.add_artifact_dir(dir);
    }
  }
  cli.write_table(steps, kStepsFile);
  cli.write_table(epoch_table, kEpochsFile);
  cli.write_table(runs, kRunsFile);
  cli.write_table(timing, kTimingFile);
}

// U17 from vit_training_runs.csv, by the rule fixed in judge_best_of: holds only if Linformer's 95%
// Student-t interval of the mean test accuracy lies above every other seed-002 method's; fails if one lies
// above Linformer's.
std::vector<ClaimRow> judge_u17(const ExperimentCli& cli, const std::filesystem::path& dir) {
  cli.write_table(mean_band_table(TableReader(dir / kEpochsFile), {text_col("method")}, int_col("epoch"), "test_accuracy", "seeds"),
                  kEpochMeansFile);
  const TableReader t(dir / kRunsFile);
  std::map<std::string, std::vector<double>> accuracy;
  for (std::size_t r = 0; r < t.rows(); ++r) accuracy[t.text(r, "method")].push_back(t.real(r, "test_accuracy"));
  std::vector<MethodInterval> intervals;
  std::vector<std::pair<std::string, MeanInterval>> groups;
  for (const auto& m : kSeed002Methods)
    if (accuracy.count(m) != 0) {
      groups.emplace_back(m, student_t_mean_interval(accuracy[m]));
      intervals.push_back({m, groups.back().second.interval.lower, groups.back().second.interval.upper});
    }
  if (accuracy.count("linformer") == 0 || groups.size() < 2) {
    fmt::print(stderr, "{}: U17 needs linformer and another method; no ledger row written\n", cli.name());
    return {};
  }
  // The run's protocol as the table records it (every run of a sweep shares it).
  const std::int64_t test_images = t.integer(0, "test_images"), train_images = t.integer(0, "train_images");
  const std::int64_t n_epochs = t.integer(0, "epochs");
  const bool quick = cli.options().quick;
  const Judgement j = judge_best_of(intervals, "linformer");
  std::string means;
  for (const auto& [name, g] : groups) means += fmt::format("{}{} {}", means.empty() ? "" : "; ", name, interval_text(g));
  if (accuracy.count("symmetric") != 0)
    means += "; beside them, seed 000's symmetric " + interval_text(student_t_mean_interval(accuracy["symmetric"]));
  const std::string note = fmt::format(
      "{} Mean test accuracy over {} seeds, 95% Student-t intervals: {}. Fashion-MNIST ({} test images) "
      "in place of CIFAR-10, {} training images per epoch; ViT D={} H={} L={} mlp={} on {} tokens ({}x{} windows every {} pixels, padding {}); Adam, lr 5e-4 cosine, batch {}; {} epoch(s), "
      "the budget of 60 minutes on 2 cores for every method (the seed trained 50 epochs on GPUs: "
      "bin/exp_vit_training --epochs 50 runs that protocol). Per-run Clopper-Pearson intervals in {}.{}",
      j.note, kSeeds, means, test_images, train_images, t.integer(0, "D"), t.integer(0, "heads"), t.integer(0, "layers"),
      t.integer(0, "mlp"), t.integer(0, "tokens"), t.integer(0, "patch"), t.integer(0, "patch"), t.integer(0, "stride"),
      t.integer(0, "pad"), t.integer(0, "batch"), n_epochs, cli.evidence_path(kRunsFile), quick ? " --quick: a few steps, not a test of the claim." : "");
  return {ClaimRow{"U17", j.verdict,
                   "lower 95% bound of Linformer's mean test accuracy minus the highest upper bound of the other seed-002 methods (fraction)",
                   j.observed, kSeparationThreshold, cli.evidence_path(kRunsFile), note}};
}

}  // namespace

int main(int argc, char** argv) {
  // Every step frees and reallocates the attention tapes (up to 150 KiB each): keep freed memory in the
  // heap instead of returning it to the kernel, or page faults dominate (the BENCH_ENV of make bench).
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);

  ExperimentCli cli("exp_vit_training", "U17: a ViT trained on Fashion-MNIST with each attention method (seed 002)");
  std::vector<std::string> choices = {"all"};
  for (const auto& m : trainable_attention_names()) choices.push_back(m);
  std::string method = "all";
  int epochs = 0;
  std::string data_dir = kFashionMnistDir;
  cli.add_choice("--method", method, "one attention method, or all", choices);
  cli.add_integer("--epochs", epochs, fmt::format("passes over the training set, 1 to 1000 (default {}; --quick: 1)", kFullEpochs),
                  1, 1000);
  Shape shape;
  cli.add_integer("--width", shape.D, "embedding width D, 1 to 4096 (a multiple of --heads)", 1, 4096, true);
  cli.add_integer("--heads", shape.heads, "attention heads per block, 1 to 64", 1, 64, true);
  cli.add_integer("--layers", shape.layers, "Transformer blocks, 1 to 64", 1, 64, true);
  cli.add_integer("--mlp", shape.mlp, "MLP hidden width, 1 to 16384", 1, 16384, true);
  cli.add_integer("--batch", shape.batch, "training images per Adam step, 1 to 60000", 1, 60000, true);
  // Checked while parsing, before --out is created: a bad shape leaves nothing behind.
  cli.add_parse_check("--width", [&shape] {
    return shape.D % shape.heads == 0 ? std::string()
                                      : fmt::format("{} is not a multiple of --heads {}", shape.D, shape.heads);
  });
  add_fashion_mnist_option(cli, data_dir);
  cli.split_measurement();
  cli.parse(argc, argv);
  cli.set_dataset("fashion-mnist");
  // Judging reads the tables only: the data set need not be on the judging machine.
  std::optional<FashionMnist> loaded;
  if (!cli.judging()) {
    loaded = load_fashion_mnist_for(cli, data_dir, 28);
    if (!loaded) return kExitUsage;
  }
  return run_experiment(cli, {[&](const Shard& shard) { measure_training(cli, shard, *loaded, method, epochs, shape); },
                              [&](const std::filesystem::path& dir) { return judge_u17(cli, dir); }});
}

}  // namespace exp_vit_training
