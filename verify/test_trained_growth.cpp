// exp_trained_growth's command line: bad or missing checkpoints are one line and exit status 2; a user's
// exact checkpoint is grown and writes tables, no ledger row. (Its quick run, tables and thread-count
// reproducibility: quick.exp_trained_growth.)
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/vit.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::RunResult;
using attnlab::testing::ScratchDir;

TEST_CASE("exp_trained_growth: bad checkpoints are one line and exit 2; --checkpoint grows a user's model, no ledger") {
  ScratchDir out;
  const std::string missing = (out.path() / "no-such-checkpoint").string();
  RunResult r = run_binary("exp_trained_growth", {"--quick", "--checkpoint", missing, "--out", out.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(missing) != std::string::npos);
  CHECK(!std::filesystem::exists(out.path() / "claims.csv"));
  // Another method: growth is for exact attention.
  ViTConfig lin;
  lin.seed = 12;
  lin.attention.method = "linformer";
  ViT<float> other(lin);
  const auto linformer = out.path() / "linformer";
  save_checkpoint(other, linformer, 0);
  r = run_binary("exp_trained_growth", {"--quick", "--checkpoint", linformer.string(), "--out", out.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("method \"linformer\"") != std::string::npos);

  // A user's exact checkpoint with its own key width (an untrained, seeded model): grown from 3 to 9.
  ViTConfig c;
  c.seed = 11;
  c.key_width = 3;
  ViT<float> model(c);
  save_checkpoint(model, out.path() / "mine", 0);
  ScratchDir run;
  r = run_binary("exp_trained_growth", {"--quick", "--checkpoint", (out.path() / "mine").string(), "--out", run.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(!std::filesystem::exists(run.path() / "claims.csv"));
  const auto summary = read_csv_file(run.path() / "trained_growth_summary.csv");
  REQUIRE(summary.size() == 1 + 3 * 5);  // three seeds, five arms
  const auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(summary[0].begin(), summary[0].end(), name) - summary[0].begin());
  };
  for (std::size_t i = 1; i < summary.size(); ++i) {
    CHECK(summary[i][col("key_width_before")] == "3");
    CHECK(summary[i][col("key_width_after")] == (summary[i][col("arm")] == "e-no-growth" ? "3" : "9"));
  }
}
