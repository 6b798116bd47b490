// U19 (U16 on a task that needs attention): a model trained here on bidirectional multi-query associative recall
// (recall_spec.md) with each attention method, over several seeds; which attention is the most accurate (U17's
// rule), beside the same model without attention (the identity in its place: chance by construction) and the
// capacity curve over the number of pairs; and U19.c, what is true instead, on a confirming sweep of its own.
#include <fmt/format.h>
#include <malloc.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/mean_bands.hpp"
#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/most_accurate.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/recall_tables.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/fit.hpp"
#include "attnlab/model/flops.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/recall_protocol.hpp"

using namespace attnlab;
namespace rt = attnlab::recall_tables;

namespace exp_recall_training {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// The protocol: model/recall_protocol.hpp (chosen on exact attention and the validation split, then fixed).
// U19 is judged at the main point (kRecallPairs) by U17's rule (lab/most_accurate.hpp) over seed 002's methods;
// symmetric and the baseline without attention are trained and reported beside them, not part of the claim.
//
// U19.c, the corrected statement of U19 (lab/corrections.tsv), was formulated on the committed main sweep and its
// capacity curve (base seed, N = 4 to 64) and is confirmed on a sweep that did not suggest it: seed 002's methods,
// as many seeds as the main point, from confirming_seed(base), at a number of pairs the main sweep never trained,
// kConfirmPairs, with the protocol otherwise unchanged. Its runs go to recall_training_confirm.csv only (no
// checkpoints, no curves) and are judged by judge_exact_best_linformer_below (lab/most_accurate.hpp).
constexpr Eigen::Index kConfirmPairs = 48, kQuickConfirmPairs = 6;
//
// "Learned to recall" (fixed before the sweep): the exact models' 95% Student-t interval of the mean query accuracy
// lies above the baseline's, and both chance lines are reported beside: 1/V (a guess among the values) and 1/N
// (copying some value present in the sequence).

struct Run {
  std::string method;
  Eigen::Index pairs;
  int seed_index;
  bool confirm = false;  // of U19.c's confirming sweep: seeds from confirming_seed(base)
};

// The sweep: the main point (every method, every seed), then the capacity curve (every other number of pairs,
// every method, seed index 0), then U19.c's confirming sweep at confirm_pairs (0: none; seed 002's methods, every
// seed), in this order whatever the shard count; a run's seeds come from its base seed and seed index only.
std::vector<Run> sweep(const std::string& method, Eigen::Index pairs, int seeds, const std::vector<Eigen::Index>& capacity,
                       Eigen::Index confirm_pairs) {
  const std::vector<std::string> methods = method == "all" ? recall_sweep_methods() : std::vector<std::string>{method};
  std::vector<Run> runs;
  for (const auto& m : methods)
    for (int s = 0; s < seeds; ++s) runs.push_back({m, pairs, s});
  for (Eigen::Index n : capacity)
    if (n != pairs)
      for (const auto& m : methods) runs.push_back({m, n, 0});
  if (confirm_pairs > 0)
    for (const auto& m : seed002_methods())
      for (int s = 0; s < seeds; ++s) runs.push_back({m, confirm_pairs, s, true});
  return runs;
}

// The tables of a sweep, their columns in the order they are written.
struct Tables {
  CsvTable steps{{text_col(rt::kMethod), int_col(rt::kPairs), int_col(rt::kSeed), int_col("step"), real_col("lr"),
                  real_col("train_loss")}};
  // test_loss over the queries with finite logits (test_nonfinite counts the others, as wrong); NaN only when none.
  CsvTable evals{{text_col(rt::kMethod), int_col(rt::kPairs), int_col(rt::kSeed), int_col(rt::kEvaluation), int_col(rt::kStep),
                  text_col(rt::kSplit), real_col("test_loss", true), real_col(rt::kAccuracy), int_col("correct"),
                  int_col(rt::kQueries), int_col(rt::kNonfinite)}};
  CsvTable runs{{text_col(rt::kMethod), int_col(rt::kPairs), int_col(rt::kSeed), text_col("attention"), text_col(rt::kSplit),
                 real_col(rt::kAccuracy), real_col("accuracy_lower95"), real_col("accuracy_upper95"), int_col("correct"),
                 int_col(rt::kQueries), int_col(rt::kSequences), int_col(rt::kSteps), int_col(rt::kPlannedSteps), int_col(rt::kBatch), real_col(rt::kPeakLr),
                 text_col("schedule"), text_col("optimizer"), int_col(rt::kKeys), int_col(rt::kValues), int_col(rt::kTokens),
                 int_col(rt::kD), int_col(rt::kHeads), int_col(rt::kLayers), int_col(rt::kMlp), int_col("parameters"),
                 text_col(rt::kStatus), int_col(rt::kNonfinite), text_col(rt::kCheckpoint)}};
  CsvTable timing{{text_col(rt::kMethod), int_col(rt::kPairs), int_col(rt::kSeed), int_col("steps"), real_col("seconds_per_step"),
                   real_col("eval_seconds"), real_col("train_sequences_per_second"), int_col("threads")}};
  CsvTable confirm{runs.columns()};  // U19.c's confirming runs, apart
};

struct Sweep {
  const ExperimentCli& cli;
  const RecallShape& shape;  // the main point's (a capacity run changes its pairs)
  std::int64_t test_sequences;
  RecallSplit split;
  Tables& tables;
  Progress& progress;
};

const char* split_name(RecallSplit s) { return s == RecallSplit::test ? "test" : "validation"; }

// Trains one run's model, records its rows, and keeps the main point's checkpoints in checkpoints/recall/<method>/seed-<k>/
// for the experiments on trained models and for users.
// A confirming run records its runs row only, in the confirming table, and keeps no checkpoint.
void train_run(const Sweep& x, const Run& run) {
  const std::uint64_t base = run.confirm ? confirming_seed(x.cli.options().seed) : x.cli.options().seed;
  const std::uint64_t seed = base + static_cast<std::uint64_t>(run.seed_index);
  RecallShape shape = x.shape;
  shape.task.pairs = run.pairs;
  const bool main_point = !run.confirm && run.pairs == x.shape.task.pairs;
  RecallModel<float> model(recall_training_config(run.method, seed, shape));
  Trainer<float, RecallModel<float>> trainer(model);
  const RecallSet eval = recall_set(shape.task, base, x.split, x.test_sequences);
  const std::string& m = run.method;
  const Eigen::Index N = run.pairs;
  const int s = run.seed_index;
  const std::int64_t per_eval = shape.steps / shape.evaluations;
  const FitResult fitted = fit<float, RecallModel<float>>(
      trainer, recall_training_stream(shape, seed), eval, recall_fit_options(shape, x.test_sequences),
      [&](const StepRecord& r) {
        if (!run.confirm) x.tables.steps.add_row({m, N, s, r.step, r.lr, r.loss});
        x.progress.tick();
      },
      [&](const EpochRecord& r) {
        if (!run.confirm)
          x.tables.evals.add_row({m, N, s, r.epoch, r.epoch * per_eval, split_name(x.split), r.test.loss, r.test.accuracy(),
                                  r.test.correct, r.test.count, r.test.nonfinite});
        x.progress.milestone(fmt::format("{}{} N={} seed {}: step {}/{}: {} query accuracy {:.4f}, {:.0f} sequences/s",
                                         run.confirm ? "confirming " : "", m, N, s + 1, r.epoch * per_eval, shape.steps,
                                         split_name(x.split), r.test.accuracy(), static_cast<double>(r.steps * shape.batch) / r.train_seconds));
      });
  const Evaluation& last = fitted.test;
  if (fitted.diverged) {
    x.progress.tick(static_cast<std::size_t>(shape.steps - fitted.steps));
    x.progress.milestone(fmt::format("{} N={} seed {} DIVERGED at step {}: training loss {}{}; stopped there, {} query accuracy {:.4f} "
                                     "with the weights before that step ({} of {} queries with non-finite logits)",
                                     m, N, s + 1, fitted.steps, format_real(fitted.loss),
                                     std::isfinite(fitted.loss) ? " with a non-finite gradient" : "", split_name(x.split),
                                     last.accuracy(), last.nonfinite, last.count));
  }
  const Interval cp = clopper_pearson(static_cast<std::size_t>(last.correct), static_cast<std::size_t>(last.count));
  const RecallConfig& c = model.config();
  const std::string checkpoint = main_point ? recall_checkpoint_relative(m, s, N) : "-";
  (run.confirm ? x.tables.confirm : x.tables.runs).add_row({m, N, s, model.attention(0).describe(), split_name(x.split), last.accuracy(), cp.lower, cp.upper,
                         last.correct, last.count, x.test_sequences, fitted.steps, shape.steps, shape.batch, shape.lr,
                         "cosine to 0 over the run's steps", "Adam(0.9, 0.999, eps 1e-8, no weight decay)", c.task.keys,
                         c.task.values, c.tokens(), c.D, c.heads, c.layers, c.mlp, model.parameter_count(),
                         fitted.diverged ? rt::kDiverged : rt::kCompleted, last.nonfinite, checkpoint});
  if (run.confirm) return;
  const auto computed = static_cast<double>(fitted.steps_computed);
  x.tables.timing.add_row({m, N, s, fitted.steps_computed, fitted.train_seconds / computed, fitted.eval_seconds,
                           computed * static_cast<double>(shape.batch) / fitted.train_seconds, x.cli.options().threads});
  if (main_point) {
    save_checkpoint(model, recall_checkpoint_dir(x.cli.options().out, m, s, N), fitted.steps);
    x.cli.add_artifact_dir(checkpoint);
  }
}

void measure_training(const ExperimentCli& cli, const Shard& shard, const std::string& method, const RecallShape& shape,
                      int seeds, const std::vector<Eigen::Index>& capacity, Eigen::Index confirm_pairs, RecallSplit split) {
  const bool quick = cli.options().quick;
  const std::int64_t test_sequences = quick ? kQuickRecallTestSequences : kRecallTestSequences;
  const std::vector<Run> all = sweep(method, shape.task.pairs, seeds, capacity, confirm_pairs);
  // Shards cut the sweep by each run's counted FLOPs (a run at 64 pairs costs about four at 16), so that they take
  // about equal times; a run's seeds come from its index, never from the cut.
  std::vector<double> costs;
  for (const Run& r : all) {
    RecallShape s = shape;
    s.task.pairs = r.pairs;
    costs.push_back(recall_run_flops(recall_training_config(r.method, 0, s), s.steps, s.batch, test_sequences, s.evaluations));
  }
  const Shard::Range range = shard.range(costs);
  Tables tables;
  Progress progress(cli.name(), range.size() * static_cast<std::size_t>(shape.steps), Progress::lines);
  const Sweep x{cli, shape, test_sequences, split, tables, progress};
  for (std::size_t i = range.begin; i < range.end; ++i) train_run(x, all[i]);
  progress.finish();
  cli.write_table(tables.steps, rt::kStepsFile);
  cli.write_table(tables.evals, rt::kEvalsFile);
  cli.write_table(tables.runs, rt::kRunsFile);
  cli.write_table(tables.timing, rt::kTimingFile);
  if (confirm_pairs > 0) cli.write_table(tables.confirm, rt::kConfirmFile);
}

std::string interval_text(const MeanInterval& m) {
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", m.mean, m.interval.lower, m.interval.upper);
}

// The judge's derived tables, each mean over seeds with its 95% Student-t interval (the intervals U19 is judged by):
// the main point's training curve (per method and evaluation step), the main point's accuracy per method (the
// report's side-by-side table with U17's), and the capacity curve (per method and number of pairs; one seed at the
// other numbers). The chance lines are the figure's and the note's: 1/V and 1/N.
void write_curves(const ExperimentCli& cli, const std::filesystem::path& dir, std::int64_t main_pairs) {
  const TableReader evals(dir / rt::kEvalsFile), runs(dir / rt::kRunsFile);
  const auto at_main = [&](const TableReader& t) { return [&t, main_pairs](std::size_t r) { return t.integer(r, rt::kPairs) == main_pairs; }; };
  cli.write_table(mean_band_table(evals, {text_col(rt::kMethod), int_col(rt::kPairs)}, int_col(rt::kStep), rt::kAccuracy,
                                  rt::kSeedsCount, at_main(evals)),
                  rt::kEvalMeansFile);
  cli.write_table(mean_band_table(runs, {text_col(rt::kMethod)}, int_col(rt::kPairs), rt::kAccuracy, rt::kSeedsCount, at_main(runs)),
                  rt::kMethodMeansFile);
  cli.write_table(mean_band_table(runs, {text_col(rt::kMethod)}, int_col(rt::kPairs), rt::kAccuracy, rt::kSeedsCount), rt::kCapacityFile);
}

// U19.c from its confirming sweep's table (recall_training_confirm.csv): untested when the run made none.
ClaimRow judge_u19c(const ExperimentCli& cli, const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / rt::kConfirmFile))
    return correction_row("U19.c", Verdict::untested, 0, "",
                          "the run made no confirming sweep (it trains one only with --method all at the default --pairs)");
  const TableReader t(dir / rt::kConfirmFile);
  std::map<std::string, std::vector<double>> accuracy;
  for (std::size_t r = 0; r < t.rows(); ++r) accuracy[t.text(r, rt::kMethod)].push_back(t.real(r, rt::kAccuracy));
  for (const auto& m : seed002_methods())
    if (accuracy[m].size() < 2)
      return correction_row("U19.c", Verdict::untested, 0, "",
                            fmt::format("the confirming sweep has {} run(s) of {}; an interval needs two seeds (--seeds)", accuracy[m].size(), m));
  const Judgement j = judge_exact_best_linformer_below(accuracy);
  std::string means;
  for (const auto& m : seed002_methods()) means += fmt::format("{}{} {}", means.empty() ? "" : "; ", m, interval_text(student_t_mean_interval(accuracy[m])));
  const std::string note = fmt::format(
      "{} Confirming sweep (the statement was formulated on the main sweep and its capacity curve): N = {} pairs, {} seeds "
      "from base seed {} (confirming_seed of the run's), its own test set of {} sequences, the main protocol otherwise; mean "
      "query accuracy with 95% Student-t intervals: {}.{}",
      j.note, t.integer(0, rt::kPairs), accuracy["exact"].size(), confirming_seed(cli.options().seed), t.integer(0, rt::kSequences),
      means, cli.options().quick ? " --quick: a few steps, not a test of the statement." : "");
  return correction_row("U19.c", j.verdict, j.observed, cli.evidence_path(rt::kConfirmFile), note);
}

// U19 from recall_training_runs.csv, by U17's rule (judge_most_accurate) at the main point: the first run's pairs.
std::vector<ClaimRow> judge_u19(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / rt::kRunsFile);
  if (t.rows() == 0) throw std::runtime_error(fmt::format("{}: no runs to judge", t.path().string()));
  const std::int64_t main_pairs = t.integer(0, rt::kPairs);
  write_curves(cli, dir, main_pairs);
  const std::string split = t.text(0, rt::kSplit);
  std::map<std::string, std::vector<double>> accuracy;
  std::string diverged, capacity;
  std::map<std::string, std::string> capacity_by_method;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    const std::string& m = t.text(r, rt::kMethod);
    if (t.integer(r, rt::kPairs) == main_pairs) {
      accuracy[m].push_back(t.real(r, rt::kAccuracy));
    } else {
      auto& line = capacity_by_method[m];
      line += fmt::format("{}N={} {:.3f}", line.empty() ? "" : ", ", t.integer(r, rt::kPairs), t.real(r, rt::kAccuracy));
    }
    if (t.text(r, rt::kStatus) == rt::kDiverged)
      diverged += fmt::format("{}{} N={} seed {} at step {} of {} ({} query accuracy {:.4f}, {} queries with non-finite logits)",
                              diverged.empty() ? "" : "; ", m, t.integer(r, rt::kPairs), t.integer(r, rt::kSeed),
                              t.integer(r, rt::kSteps), t.integer(r, rt::kPlannedSteps), split,
                              t.real(r, rt::kAccuracy), t.integer(r, rt::kNonfinite));
  }
  if (split != "test") {
    fmt::print(stderr, "{}: the runs were scored on the {} split (choosing a protocol): tables written, no ledger row\n",
               cli.name(), split);
    return {};
  }
  // The main point's test set as files any tool can score a model on (recall_spec.md): written by the judge, the one
  // step that runs once whatever the sharding, into the directory that holds the tables.
  const RecallTask task{main_pairs, t.integer(0, rt::kKeys), t.integer(0, rt::kValues)};
  write_recall_set(recall_set(task, cli.options().seed, RecallSplit::test, t.integer(0, rt::kSequences)), dir / rt::kTestSetDir);
  for (const auto& m : recall_sweep_methods())
    if (capacity_by_method.count(m) != 0)
      capacity += fmt::format("{}{}: {}", capacity.empty() ? "" : "; ", m, capacity_by_method[m]);
  const MostAccurate best =
      judge_most_accurate(accuracy, {"symmetric", kNoAttentionBaseline}, {"seed 000's symmetric", "the model without attention"});
  if (!best.judged) {
    fmt::print(stderr, "{}: U19 needs linformer and another method; no ledger row written\n", cli.name());
    return {};
  }
  const Judgement& j = best.judgement;
  // The row of the first attention run: the protocol's widths (every run of the main point shares them).
  std::size_t row = 0;
  while (row + 1 < t.rows() && t.text(row, rt::kMethod) == kNoAttentionBaseline) ++row;
  const auto cell = [&](const char* column) { return t.integer(row, column); };
  const double chance_values = 1.0 / static_cast<double>(cell(rt::kValues)), chance_pairs = 1.0 / static_cast<double>(main_pairs);
  std::string learned;
  if (accuracy.count("exact") != 0 && accuracy.count(kNoAttentionBaseline) != 0) {
    const MeanInterval e = student_t_mean_interval(accuracy["exact"]), b = student_t_mean_interval(accuracy[kNoAttentionBaseline]);
    learned = fmt::format(
        "Without attention (the identity in its place, trained the same way): mean query accuracy {} over {} seeds, against "
        "exact's {}: {} (a margin of {:.4f} between exact's lower and the baseline's upper bound). Chance: 1/V = {:.4f} (a "
        "guess among the {} values), 1/N = {:.4f} (copying some value of the sequence).",
        interval_text(b), b.count, interval_text(e),
        e.interval.lower > b.interval.upper
            ? "exact's interval lies above the baseline's"
            : "exact's interval does NOT lie above the baseline's, so the exact models are not shown to recall",
        e.interval.lower - b.interval.upper, chance_values, cell(rt::kValues), chance_pairs);
  }
  if (!diverged.empty())
    diverged = " Diverged (a non-finite training loss or gradient; the run stopped there and counts with the accuracy of the "
               "weights it stopped with): " + diverged + ".";
  const std::string note = fmt::format(
      "{}{} Mean query accuracy over {} seeds, 95% Student-t intervals: {}. {} Bidirectional stacked multi-query associative "
      "recall (recall_spec.md): N = {} pairs ({} tokens), {} keys, {} values, {} test sequences ({} queries); model D={} H={} "
      "L={} mlp={}; Adam, peak lr {:g} cosine, {} steps of {} fresh sequences. Capacity curve (one seed per point): {}. "
      "Per-run Clopper-Pearson intervals in {}; the curves in {} and {}; the test set in {}/ (recall_spec.md).{}",
      j.note, diverged, best.seeds, best.means, learned, main_pairs, cell(rt::kTokens), cell(rt::kKeys), cell(rt::kValues),
      cell(rt::kSequences), cell(rt::kQueries), cell(rt::kD), cell(rt::kHeads), cell(rt::kLayers), cell(rt::kMlp),
      t.real(row, rt::kPeakLr), cell(rt::kPlannedSteps), cell(rt::kBatch), capacity.empty() ? "not run" : capacity,
      cli.evidence_path(rt::kRunsFile), cli.evidence_path(rt::kCapacityFile), cli.evidence_path(rt::kEvalMeansFile),
      cli.evidence_path(rt::kTestSetDir), cli.options().quick ? " --quick: a few steps, not a test of the claim." : "");
  return {ClaimRow{"U19", j.verdict,
                   "lower 95% bound of Linformer's mean query accuracy on recall minus the highest upper bound of the other "
                   "seed-002 methods (fraction)",
                   j.observed, kSeparationThreshold, cli.evidence_path(rt::kRunsFile), note},
          judge_u19c(cli, dir)};
}

}  // namespace

int main(int argc, char** argv) {
  // Every step frees and reallocates the attention tapes: keep freed memory in the heap (exp_vit_training's reason).
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);

  ExperimentCli cli("exp_recall_training", "U19: a model trained on multi-query associative recall with each attention method "
                                           "(seed 002), beside the same model without attention, and the capacity curve");
  std::vector<std::string> choices = {"all"};
  for (const auto& m : recall_sweep_methods()) choices.push_back(m);
  std::string method = "all", split = "test", capacity_mode = "on";
  // The protocol's shape; pairs, batch, steps and evaluations 0 until resolved (the quick mode has its own).
  RecallShape shape;
  shape.task.pairs = shape.batch = shape.steps = shape.evaluations = 0;
  const auto resolve = [&] {
    const RecallShape d = cli.options().quick ? quick_recall_shape() : RecallShape{};
    if (shape.task.pairs == 0) shape.task.pairs = d.task.pairs;
    if (shape.batch == 0) shape.batch = d.batch;
    if (shape.steps == 0) shape.steps = d.steps;
    if (shape.evaluations == 0) shape.evaluations = std::min<int>(d.evaluations, static_cast<int>(shape.steps));
  };
  cli.add_choice("--method", method, "one attention method (or the baseline without attention), or all", choices);
  cli.add_integer("--pairs", shape.task.pairs,
                  fmt::format("N, the (key, value) pairs of a sequence (2N tokens), 1 to 1024 (default {}; --quick: {})", kRecallPairs,
                              kQuickRecallPairs), 1, 1024);
  cli.add_integer("--keys", shape.task.keys, "the key vocabulary, at least --pairs, up to 1048576", 1, kRecallMaxKeys, true);
  cli.add_integer("--values", shape.task.values, "the value vocabulary, 1 to 256", 1, kRecallMaxValues, true);
  cli.add_integer("--width", shape.D, "embedding width D, 1 to 4096 (a multiple of --heads)", 1, 4096, true);
  cli.add_integer("--heads", shape.heads, "attention heads per block, 1 to 64", 1, 64, true);
  cli.add_integer("--layers", shape.layers, "Transformer blocks, 1 to 64", 1, 64, true);
  cli.add_integer("--mlp", shape.mlp, "MLP hidden width, 1 to 16384", 1, 16384, true);
  cli.add_integer("--batch", shape.batch,
                  fmt::format("fresh sequences per Adam step, 1 to 4096 (default {}; --quick: {})", kRecallBatch, kQuickRecallBatch), 1,
                  4096);
  cli.add_integer("--steps", shape.steps,
                  fmt::format("Adam steps, 1 to 10000000 (default {}; --quick: {})", kRecallSteps, kQuickRecallSteps), 1, 10000000);
  cli.add_integer("--evaluations", shape.evaluations,
                  fmt::format("evaluations of the test set, evenly over the run, 1 to 1000, dividing --steps (default {}; --quick: 1)",
                              kRecallEvaluations), 1, 1000);
  cli.add_real("--lr", shape.lr, "Adam's peak learning rate, annealed to 0 by the cosine schedule, in (0, 1e37]", 0, 1e37);
  int seeds = kRecallSeeds;
  cli.add_integer("--seeds", seeds, "seeds per method at the main point (and in U19.c's confirming sweep), base + 0, 1, ..., 1 to 100",
                  1, 100, true);
  cli.add_choice("--split", split, "what the runs are scored on: the test set, or the validation split (for choosing a protocol: "
                                   "tables only, no ledger row)", {"test", "validation"});
  cli.add_choice("--capacity", capacity_mode, "with --method all at the default pairs: also train every method at the capacity "
                                              "curve's numbers of pairs (one seed each); U19.c's confirming sweep runs with --method all at the default pairs "
                                              "whatever this says", {"on", "off"});
  cli.add_parse_check("--width", [&shape] {
    return shape.D % shape.heads == 0 ? std::string() : fmt::format("{} is not a multiple of --heads {}", shape.D, shape.heads);
  });
  cli.add_parse_check("--keys", [&] {
    resolve();
    return shape.task.keys >= shape.task.pairs ? std::string()
                                               : fmt::format("{} keys cannot give {} pairs distinct keys", shape.task.keys, shape.task.pairs);
  });
  cli.add_parse_check("--evaluations", [&] {
    resolve();
    return shape.steps % shape.evaluations == 0 ? std::string()
                                                : fmt::format("{} does not divide --steps {}", shape.evaluations, shape.steps);
  });
  cli.split_measurement();
  cli.parse(argc, argv);
  resolve();
  cli.set_dataset("recall");
  const bool defaults = method == "all" && shape.task.pairs == (cli.options().quick ? kQuickRecallPairs : kRecallPairs);
  const std::vector<Eigen::Index> capacity =
      capacity_mode == "on" && defaults ? (cli.options().quick ? kQuickRecallCapacityPairs : kRecallCapacityPairs)
                                        : std::vector<Eigen::Index>{};
  const Eigen::Index confirm_pairs = method == "all" && defaults ? (cli.options().quick ? kQuickConfirmPairs : kConfirmPairs) : 0;
  const RecallSplit which = split == "test" ? RecallSplit::test : RecallSplit::validation;
  return run_experiment(cli, {[&](const Shard& shard) { measure_training(cli, shard, method, shape, seeds, capacity, confirm_pairs, which); },
                              [&](const std::filesystem::path& dir) { return judge_u19(cli, dir); }});
}

}  // namespace exp_recall_training
