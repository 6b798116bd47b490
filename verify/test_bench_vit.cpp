// bench_vit in --quick mode: the CSV schema, every method and both batch sizes of exact, finite positive values
// and a FLOP count that is vit_training_flops' (never the timings themselves), a profile per method; the same for
// the recall model's rows (recall_training_flops, each beside its method's ViT row).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/model/flops.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

TEST_CASE("bench_vit --quick writes a row per method and batch with its counted FLOPs and sgemm share, and a profile per method") {
  ScratchDir dir;
  const auto r = run_binary("bench_vit", {"--quick", "--threads", "2", "--out", dir.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const auto rows = read_csv_file(dir.path() / "bench_vit.csv");
  // Every trainable method at batch 16, then exact at 32 (--quick's stand-in for the peer's 256).
  const auto& methods = trainable_attention_names();
  REQUIRE(rows.size() == methods.size() + 2);
  const auto& h = rows[0];
  const auto col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    REQUIRE_MESSAGE(it != h.end(), name);
    return static_cast<std::size_t>(it - h.begin());
  };
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    REQUIRE(row.size() == h.size());
    const std::string method = i <= methods.size() ? methods[i - 1] : "exact";
    const std::string batch = i <= methods.size() ? "16" : "32";
    CHECK(row[col("method")] == method);
    CHECK(row[col("impl")] == "attnlab");
    CHECK(row[col("threads")] == "2");
    CHECK(row[col("batch")] == batch);
    for (const char* c : {"median_s", "min_s", "max_s", "images_per_s", "gflops", "gemm_gflops", "gemm_before_gflops",
                          "gemm_after_gflops", "gemm_share"}) {
      INFO(method << " " << c << " = " << row[col(c)]);
      const double x = std::stod(row[col(c)]);
      CHECK(std::isfinite(x));
      CHECK(x > 0);
    }
    ViTConfig config;
    config.attention.method = method;
    const double gflop = std::stod(row[col("counted_gflop_per_step")]);
    CHECK(gflop == doctest::Approx(vit_training_flops(config, std::stol(batch)) * 1e-9).epsilon(1e-12));
    CHECK(std::stod(row[col("gemm_share")]) ==
          doctest::Approx(std::stod(row[col("gflops")]) / std::stod(row[col("gemm_gflops")])).epsilon(1e-9));
    // The ceiling measured side by side (as bench_attention's): the better of the rates around the row, and the
    // rows chain (this row's "before" is the previous row's "after").
    CHECK(std::stod(row[col("gemm_gflops")]) ==
          std::max(std::stod(row[col("gemm_before_gflops")]), std::stod(row[col("gemm_after_gflops")])));
    CHECK(std::stod(row[col("gemm_gflops")]) ==
          std::max(std::stod(row[col("eigen_gemm_gflops")]), std::stod(row[col("openblas_gemm_gflops")])));
    if (i > 1) CHECK(row[col("gemm_before_gflops")] == rows[i - 1][col("gemm_after_gflops")]);
  }
  // The profile: per method, every part once, the whole chunk's share 1, counted rates only where FLOPs are counted.
  const auto profile = read_csv_file(dir.path() / "bench_vit_profile.csv");
  constexpr std::size_t kParts = 10;
  REQUIRE(profile.size() == 1 + kParts * methods.size());
  REQUIRE(profile[0].size() >= 6);
  CHECK(profile[0][0] == "method");
  CHECK(profile[0][1] == "part");
  CHECK(profile[0][3] == "share_of_chunk");
  for (std::size_t m = 0; m < methods.size(); ++m) {
    INFO(methods[m]);
    const std::size_t first = 1 + m * kParts;
    ViTConfig config;
    config.attention.method = methods[m];
    for (std::size_t k = 0; k < kParts; ++k) CHECK(profile[first + k][0] == methods[m]);
    CHECK(profile[first + 2][1] == "attention (" + methods[m] + ", every head)");
    CHECK(profile[first + 8][1] == "whole chunk (forward_backward)");
    CHECK(std::stod(profile[first + 8][3]) == 1.0);
    CHECK(std::stod(profile[first + 8][4]) == doctest::Approx(vit_training_flops(config, 8) * 1e-9).epsilon(1e-12));
    // Parts timed directly take a positive time; the differences of two timings (projections = MHA - attention,
    // mlp linears = MLP - GELU, other = whole - parts) only need to be finite: noise can make them negative.
    for (std::size_t k = 0; k < kParts; ++k) {
      const auto& row = profile[first + k];
      INFO(row[1] << ": " << row[2]);
      const double seconds = std::stod(row[2]);
      CHECK(std::isfinite(seconds));
      const bool difference = row[1].rfind("projections", 0) == 0 || row[1] == "mlp linears" || row[1].rfind("other", 0) == 0;
      if (!difference) CHECK(seconds > 0);
    }
  }
  // The recall model: every method and the baseline without attention at the sweep's batch, beside the ViT's rows.
  const auto recall = read_csv_file(dir.path() / "bench_recall.csv");
  const auto recall_methods = recall_sweep_methods();
  REQUIRE(recall.size() == recall_methods.size() + 1);
  const auto& rh = recall[0];
  const auto rcol = [&](const std::string& name) {
    const auto it = std::find(rh.begin(), rh.end(), name);
    REQUIRE_MESSAGE(it != rh.end(), name);
    return static_cast<std::size_t>(it - rh.begin());
  };
  for (std::size_t i = 1; i < recall.size(); ++i) {
    const auto& row = recall[i];
    const std::string& method = recall_methods[i - 1];
    INFO(method);
    REQUIRE(row.size() == rh.size());
    CHECK(row[rcol("method")] == method);
    CHECK(row[rcol("batch")] == std::to_string(kRecallBatch));
    CHECK(row[rcol("pairs")] == std::to_string(kRecallPairs));
    for (const char* c : {"median_s", "sequences_per_s", "gflops", "gemm_gflops", "gemm_share"}) CHECK(std::stod(row[rcol(c)]) > 0);
    const double gflop = std::stod(row[rcol("counted_gflop_per_step")]);
    CHECK(gflop ==
          doctest::Approx(recall_training_flops(recall_training_config(method, 0, RecallShape{}), kRecallBatch) * 1e-9).epsilon(1e-12));
    // Beside its ViT row (batch 16): that row's share, and the ratio of the two; none for the baseline (no ViT row).
    const auto vit_row = std::find_if(rows.begin() + 1, rows.end(), [&](const auto& r) { return r[col("method")] == method && r[col("batch")] == "16"; });
    if (vit_row == rows.end()) {
      CHECK(row[rcol("vit_gemm_share")] == "nan");
    } else {
      CHECK(row[rcol("vit_gemm_share")] == (*vit_row)[col("gemm_share")]);
      CHECK(std::stod(row[rcol("share_vs_vit")]) ==
            doctest::Approx(std::stod(row[rcol("gemm_share")]) / std::stod((*vit_row)[col("gemm_share")])).epsilon(1e-9));
    }
  }
  const auto recall_profile = read_csv_file(dir.path() / "bench_recall_profile.csv");
  constexpr std::size_t kRecallParts = 5;
  REQUIRE(recall_profile.size() == 1 + kRecallParts * recall_methods.size());
  for (std::size_t m = 0; m < recall_methods.size(); ++m) {
    const std::size_t first = 1 + m * kRecallParts;
    CHECK(recall_profile[first + 1][1] == "attention (" + recall_methods[m] + ", every head)");
    CHECK(recall_profile[first + 3][1] == "whole chunk (forward_backward)");
    CHECK(std::stod(recall_profile[first + 3][3]) == 1.0);
  }
  CHECK(dir.files() == std::vector<std::string>{".attnlab-quick", "bench_recall.csv", "bench_recall_profile.csv", "bench_vit.csv",
                                                "bench_vit_profile.csv"});
}

TEST_CASE("bench_vit: a bad --repeats is a usage error, nothing written") {
  ScratchDir dir;
  const auto r = run_binary("bench_vit", {"--repeats", "0", "--out", dir.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(r.output.find("bench_vit") == 0);
  CHECK(dir.files().empty());
}
