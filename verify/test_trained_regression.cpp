// exp_trained_regression (G11, G12, issue 15): its refusals of bad or missing checkpoints and a run on a
// user's checkpoint (tables, no ledger rows).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "attnlab/model/checkpoint.hpp"
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
