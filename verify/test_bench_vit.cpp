// bench_vit in --quick mode: the CSV schema, both batch sizes, finite positive values and a FLOP count that
// is vit_training_flops' (never the timings themselves).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/model/flops.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

TEST_CASE("bench_vit --quick writes one row per batch with its counted FLOPs and the sgemm share, and the profile") {
  ScratchDir dir;
  const auto r = run_binary("bench_vit", {"--quick", "--threads", "2", "--out", dir.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const auto rows = read_csv_file(dir.path() / "bench_vit.csv");
  REQUIRE(rows.size() == 3);
  const auto& h = rows[0];
  const auto col = [&](const std::string& name) {
    const auto it = std::find(h.begin(), h.end(), name);
    REQUIRE_MESSAGE(it != h.end(), name);
    return static_cast<std::size_t>(it - h.begin());
  };
  const std::vector<std::string> batches = {"16", "32"};
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    REQUIRE(row.size() == h.size());
    CHECK(row[col("method")] == "exact");
    CHECK(row[col("impl")] == "attnlab");
    CHECK(row[col("threads")] == "2");
    CHECK(row[col("batch")] == batches[i - 1]);
    for (const char* c : {"median_s", "min_s", "max_s", "images_per_s", "gflops", "gemm_gflops", "gemm_before_gflops",
                          "gemm_after_gflops", "gemm_share"}) {
      INFO(c << " = " << row[col(c)]);
      const double x = std::stod(row[col(c)]);
      CHECK(std::isfinite(x));
      CHECK(x > 0);
    }
    const double gflop = std::stod(row[col("counted_gflop_per_step")]);
    CHECK(gflop == doctest::Approx(vit_training_flops(ViTConfig{}, std::stol(row[col("batch")])) * 1e-9).epsilon(1e-12));
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
  // The profile: every part once, the whole chunk's share 1, counted rates only where FLOPs are counted.
  const auto profile = read_csv_file(dir.path() / "bench_vit_profile.csv");
  REQUIRE(profile.size() == 11);
  REQUIRE(profile[0].size() >= 5);
  CHECK(profile[0][0] == "part");
  CHECK(profile[0][2] == "share_of_chunk");
  CHECK(profile[9][0] == "whole chunk (forward_backward)");
  CHECK(std::stod(profile[9][2]) == 1.0);
  CHECK(std::stod(profile[9][3]) == doctest::Approx(vit_training_flops(ViTConfig{}, 8) * 1e-9).epsilon(1e-12));
  // Parts timed directly take a positive time; the differences of two timings (projections = MHA - attention,
  // mlp linears = MLP - GELU, other = whole - parts) only need to be finite: noise can make them negative.
  for (std::size_t i = 1; i < profile.size(); ++i) {
    INFO(profile[i][0] << ": " << profile[i][1]);
    const double seconds = std::stod(profile[i][1]);
    CHECK(std::isfinite(seconds));
    const bool difference = profile[i][0].rfind("projections", 0) == 0 || profile[i][0] == "mlp linears" ||
                            profile[i][0].rfind("other", 0) == 0;
    if (!difference) CHECK(seconds > 0);
  }
  CHECK(dir.files() == std::vector<std::string>{".attnlab-quick", "bench_vit.csv", "bench_vit_profile.csv"});
}

TEST_CASE("bench_vit: a bad --repeats is a usage error, nothing written") {
  ScratchDir dir;
  const auto r = run_binary("bench_vit", {"--repeats", "0", "--out", dir.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(r.output.find("bench_vit") == 0);
  CHECK(dir.files().empty());
}
