// exp_trained_regression (G11, G12, issue 15): its refusals of bad or missing checkpoints, a run on a user's
// checkpoint (tables, no ledger rows), and how the run's checkpoints are labelled in the tables.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "attnlab/lab/checkpoint_experiment.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/training_protocol.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kTrainedRegressionSeed = attnlab::testing::test_seed(20251128);  // ATTNLAB_TEST_SEED overrides it

}  // namespace

TEST_CASE("exp_trained_regression: bad or missing checkpoints are one line and exit status 2; --checkpoint writes no ledger") {
  using attnlab::testing::run_binary;
  using attnlab::testing::RunResult;
  using attnlab::testing::ScratchDir;
  ScratchDir out;
  const std::string missing = (out.path() / "no-such-checkpoint").string();
  RunResult r = run_binary("exp_trained_regression", {"--quick", "--checkpoint", missing, "--out", out.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(missing) != std::string::npos);
  CHECK(!std::filesystem::exists(out.path() / "claims.csv"));
  // A full run without exp_vit_training's checkpoint in --out names the directory it looked in.
  ScratchDir full;
  r = run_binary("exp_trained_regression", {"--out", full.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find((full.path() / "checkpoints" / "exact").string()) != std::string::npos);
  CHECK(!std::filesystem::exists(full.path() / "claims.csv"));

  // Another method has no scores S: refused, naming it.
  ViTConfig c;
  c.seed = kTrainedRegressionSeed;
  c.attention.method = "linear-elu";
  ViT<float> other(c);
  save_checkpoint(other, out.path() / "linear", 0);
  r = run_binary("exp_trained_regression", {"--quick", "--checkpoint", (out.path() / "linear").string(), "--out",
                                            (out.path() / "o").string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("linear-elu") != std::string::npos);

  // A user's exact checkpoint (an untrained, seeded default model): tables, no ledger rows.
  c.attention.method = "exact";
  ViT<float> model(c);
  save_checkpoint(model, out.path() / "mine", 0);
  ScratchDir run;
  r = run_binary("exp_trained_regression", {"--quick", "--checkpoint", (out.path() / "mine").string(), "--out", run.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(!std::filesystem::exists(run.path() / "claims.csv"));
  for (const char* f : {"trained_regression_target.csv", "trained_regression_lowrank.csv"})
    CHECK(std::filesystem::is_regular_file(run.path() / f));
}

TEST_CASE("The run's checkpoints are labelled by their path in the results, not by where a sharded run keeps them") {
  // A sharded run's --out links checkpoints/<method>/seed-<k> to the training shard that wrote it; resolving the link
  // put that shard's directory into the tables, different for every cut of the sweep and absent from results/.
  using attnlab::testing::ScratchDir;
  ScratchDir scratch;
  const std::filesystem::path shard = scratch.path() / "shards" / "exp_vit_training" / "3";
  const std::filesystem::path out = scratch.path() / "out";
  for (int k = 0; k < 2; ++k) {
    ViTConfig c;
    c.seed = run_seed(kTrainedRegressionSeed, k);
    ViT<float> model(c);
    save_checkpoint(model, run_checkpoint_dir(shard, "exact", k), 7 + k);
    std::filesystem::create_directories(run_checkpoint_dir(out, "exact", k).parent_path());
    std::filesystem::create_directory_symlink(run_checkpoint_dir(shard, "exact", k), run_checkpoint_dir(out, "exact", k));
  }
  ExperimentCli cli("exp_label_check", "labels of the run's checkpoints");
  CheckpointExperiment on(cli, "a checkpoint");
  std::string args[] = {"exp_label_check", "--out", out.string(), "--threads", "1"};
  char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), args[4].data()};
  cli.parse(5, argv);
  REQUIRE(on.prepare());
  const auto run = on.load_run<double>({"exact"}, 2);
  REQUIRE(run.has_value());
  REQUIRE(run->labels.size() == 1);
  REQUIRE(run->labels.front().size() == 2);
  for (int k = 0; k < 2; ++k) {
    const std::string& label = run->labels.front()[static_cast<std::size_t>(k)];
    INFO("label " << label);
    CHECK(label == fmt::format("checkpoints/exact/seed-{} (seed {}, step {})", k, run_seed(kTrainedRegressionSeed, k), 7 + k));
    CHECK(label.find("shards") == std::string::npos);
  }
}
