// The trained experiments' plumbing: the per-seed summaries (SeedMeans, PairedChange), the seeds' blocks of a
// sharded sweep, the linear-baseline sentence, Progress's lines; and the chain exp_vit_training -> exp_trained_*
// through the checkpoint layout checkpoints/<method>/seed-<k>/: the experiments read the quick run's checkpoints
// and measure exactly what they measure on the models they train in-process.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/baseline_comparison.hpp"
#include "attnlab/lab/checkpoint_experiment.hpp"
#include "attnlab/lab/paired_change.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/seed_means.hpp"
#include "attnlab/lab/training_tables.hpp"
#include "attnlab/model/pixel_logistic.hpp"
#include "attnlab/model/training_protocol.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

TEST_CASE("SeedMeans: per condition in first-seen order, values in seed order, the worst kept by raise") {
  SeedMeans m;
  m.set("b", 1, 2.0);
  m.set("a", 0, 1.0);
  m.set("b", 0, 4.0);
  m.set("a", 1, 3.0);
  m.set("a", 1, 5.0);  // replaces
  CHECK(m.conditions() == std::vector<std::string>{"b", "a"});
  CHECK(m.values("b") == std::vector<double>{4.0, 2.0});
  CHECK(m.mean("a").mean == 3.0);
  CHECK(m.mean("a").count == 2);
  m.raise("w", 0, 1.0);
  m.raise("w", 0, 0.5);
  m.raise("w", 0, 2.0);
  CHECK(m.values("w") == std::vector<double>{2.0});
  const auto intervals = m.intervals("x", "{:.1f}");
  REQUIRE(intervals.size() == 3);
  CHECK(intervals[1].description.find("a (x 3.0 [") == 0);
  CHECK(intervals[1].lower < 3.0);
  CHECK(intervals[1].upper > 3.0);
  CHECK_THROWS(m.values("none"));
}

TEST_CASE("PairedChange: counts of the pairs, the mean over replicates of each replicate's mean change") {
  PairedChange p;
  CHECK_THROWS_AS(p.mean_over_replicates(), std::invalid_argument);
  for (int k = 0; k < 3; ++k) {
    p.add(k, 1, 3);  // +2
    p.add(k, 1, 1);  // 0
    p.add(k, 2, 1 + 0.1 * k);  // -0.9 .. -1.0
  }
  CHECK(p.higher() == 3);
  CHECK(p.lower() == 3);
  CHECK(p.equal() == 3);
  CHECK(p.cases() == 9);
  const MeanInterval m = p.mean_over_replicates();
  CHECK(m.count == 3);  // the replicates, not the 9 cases
  CHECK(m.mean == doctest::Approx((2 - 1.0 + 2 - 0.9 + 2 - 0.8) / 9));
  CHECK(p.text().find("(a rise)") != std::string::npos);
  PairedChange none;
  none.add(0, 1, 1);
  none.add(1, 1, 1);
  CHECK(none.text().find("(no measurable change)") != std::string::npos);
}

TEST_CASE("seed_block and block_after: a shard's part of each seed's block and of what follows them") {
  const Shard::Range r{5, 14};
  CHECK(seed_block(r, 4, 0).empty());
  CHECK(seed_block(r, 4, 1).first == 1);
  CHECK(seed_block(r, 4, 1).last == 4);
  CHECK(seed_block(r, 4, 2).first == 0);
  CHECK(seed_block(r, 4, 2).last == 4);
  CHECK(seed_block(r, 4, 3).last == 2);
  CHECK(block_after(r, 12).first == 0);
  CHECK(block_after(r, 12).last == 2);
  CHECK(block_after(r, 20).empty());
  CHECK(seeded_sample(10, 3, 7, 5) == seeded_sample(10, 3, 7, 5));
  CHECK(seeded_sample(10, 30, 7, 5).size() == 10);
}

TEST_CASE("compare_with_baseline: above, not above, and not measured") {
  ScratchDir d;
  const auto write = [&](const std::vector<std::pair<std::string, double>>& rows) {
    CsvTable t({text_col(training_tables::kMethod), int_col(training_tables::kSeed), real_col(training_tables::kTestAccuracy)});
    int k = 0;
    for (const auto& [m, a] : rows) t.add_row({m, k++ % 3, a});
    t.write(d.path() / training_tables::kRunsFile);
  };
  const std::string base = kPixelLogisticBaseline;
  write({{"exact", 0.86}, {"exact", 0.861}, {"exact", 0.859}, {base, 0.84}, {base, 0.841}, {base, 0.839}});
  BaselineComparison c = compare_with_baseline(d.path() / training_tables::kRunsFile);
  CHECK(c.measured);
  CHECK(c.above);
  CHECK(c.sentence.find("lies above the baseline's") != std::string::npos);
  write({{"exact", 0.80}, {"exact", 0.86}, {"exact", 0.83}, {base, 0.84}, {base, 0.841}, {base, 0.839}});
  c = compare_with_baseline(d.path() / training_tables::kRunsFile);
  CHECK(c.measured);
  CHECK(!c.above);
  CHECK(c.sentence.find("does NOT lie above") != std::string::npos);
  c = compare_with_baseline(d.path() / "none.csv");
  CHECK(!c.measured);
  CHECK(c.sentence.find("did not compare") != std::string::npos);
}

TEST_CASE("Progress: durations in words") {
  CHECK(Progress::duration_text(0.4) == "0 s");
  CHECK(Progress::duration_text(59) == "59 s");
  CHECK(Progress::duration_text(725) == "12 min 5 s");
  CHECK(Progress::duration_text(7380) == "2 h 03 min");
}

namespace {

// The tables of `dir` but the ledgers (whose notes say where the models came from).
std::vector<std::string> tables_of(const ScratchDir& dir) {
  std::vector<std::string> out;
  for (const auto& f : dir.files())
    if (f.ends_with(".csv") && f != "claims.csv" && f != "corrections.csv") out.push_back(f);  // the ledgers cite their run's paths
  return out;
}

}  // namespace

TEST_CASE("exp_vit_training --quick writes every run's checkpoint and progress lines; exp_trained_* read them and measure "
          "what they measure on the models they train in-process") {
  ScratchDir chain, alone;
  for (const char* method : {"exact", "symmetric", kPixelLogisticBaseline}) {
    const auto r = run_binary("exp_vit_training", {"--quick", "--method", method, "--seed", "9", "--out", chain.path().string()});
    INFO(r.output);
    REQUIRE(r.exit_status == 0);
    for (int k = 0; k < kTrainingSeeds; ++k) {
      CHECK(std::filesystem::is_regular_file(run_checkpoint_dir(chain.path(), method, k) / "manifest.json"));
      CHECK(r.output.find(fmt::format("{} seed {}/{} epoch 1/1: test accuracy", method, k + 1, kTrainingSeeds)) != std::string::npos);
    }
    CHECK(r.output.find("ETA") != std::string::npos);
    CHECK(r.output.find("wall") != std::string::npos);
  }
  CHECK(std::filesystem::is_regular_file(run_checkpoint_dir(chain.path(), kPixelLogisticBaseline, 0) / "head.W.npy"));
  const auto runs = read_csv_file(chain.path() / training_tables::kRunsFile);
  CHECK(runs.size() == 1 + kTrainingSeeds);  // the last --method's rows (each run rewrites the tables)
  for (const char* exp : {"exp_trained_attention", "exp_trained_regression"}) {
    INFO(exp);
    const auto a = run_binary(exp, {"--quick", "--seed", "9", "--out", chain.path().string()});
    INFO(a.output);
    REQUIRE(a.exit_status == 0);
    const auto b = run_binary(exp, {"--quick", "--seed", "9", "--out", alone.path().string()});
    INFO(b.output);
    REQUIRE(b.exit_status == 0);
  }
  // The same tables, byte for byte, from the checkpoints as from the models trained in-process.
  std::vector<std::string> compared;
  for (const auto& f : tables_of(alone)) {
    if (f.ends_with("_timing.csv")) continue;
    INFO("table: " << f);
    REQUIRE(std::filesystem::is_regular_file(chain.path() / f));
    CHECK(read_text(chain.path() / f) == read_text(alone.path() / f));
    compared.push_back(f);
  }
  CHECK(std::find(compared.begin(), compared.end(), "trained_attention_rank_images.csv") != compared.end());
  CHECK(std::find(compared.begin(), compared.end(), "trained_regression_target.csv") != compared.end());
}

TEST_CASE("exp_vit_training: a run that diverges is stopped there, reported with its checkpoint and named in U17's note") {
  // At a peak learning rate of 1e37 Adam's first step moves every weight by about 1e37, and the next forward
  // overflows: every run of the quick sweep diverges within its 8 steps.
  ScratchDir out;
  const auto r = run_binary("exp_vit_training", {"--quick", "--lr", "1e37", "--seed", "9", "--out", out.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(r.output.find("DIVERGED at step") != std::string::npos);
  const TableReader runs(out.path() / training_tables::kRunsFile);
  REQUIRE(runs.rows() == 9 * static_cast<std::size_t>(kTrainingSeeds));
  std::size_t diverged = 0;
  for (std::size_t i = 0; i < runs.rows(); ++i) {
    INFO(runs.text(i, training_tables::kMethod) << " seed " << runs.integer(i, training_tables::kSeed));
    const std::string status = runs.text(i, "status");
    CHECK((status == "diverged" || status == "completed"));
    if (status != "diverged") continue;
    ++diverged;
    CHECK(runs.integer(i, "steps") < 8);  // the quick run's 8 steps, not all applied
    CHECK(runs.real(i, "peak_lr") == 1e37);
    CHECK(runs.integer(i, "test_correct") + runs.integer(i, "test_nonfinite") <= runs.integer(i, training_tables::kTestImages));
    CHECK(std::filesystem::is_regular_file(
        run_checkpoint_dir(out.path(), runs.text(i, training_tables::kMethod), static_cast<int>(runs.integer(i, training_tables::kSeed))) /
        "manifest.json"));
  }
  CHECK(diverged >= 1);
  const std::string ledger = read_text(out.path() / "claims.csv");
  CHECK(ledger.find("U17") != std::string::npos);
  CHECK(ledger.find("Diverged (a non-finite training loss or gradient") != std::string::npos);
  CHECK(ledger.find("peak lr 1e+37") != std::string::npos);
  // A bad rate is one line and exit status 2, nothing written.
  ScratchDir bad;
  for (const char* lr : {"0", "-1", "nan", "inf", "2e37", "fast", "1e400"}) {
    INFO("--lr " << lr);
    const auto b = run_binary("exp_vit_training", {"--quick", "--lr", lr, "--out", (bad.path() / "o").string()});
    INFO(b.output);
    CHECK(b.exit_status == 2);
    CHECK(std::count(b.output.begin(), b.output.end(), '\n') == 1);
    CHECK(b.output.find(lr) != std::string::npos);
    CHECK(!std::filesystem::exists(bad.path() / "o"));
  }
}
