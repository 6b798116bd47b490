// bench_attention and bench_r7 in --quick mode: the CSV schema and finite, positive values (never timings).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/timing.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

namespace {

// Every field of `numeric` parses whole as a finite number, and the `positive` ones are > 0.
void check_numbers(const std::vector<std::string>& header, const std::vector<std::string>& row,
                   const std::set<std::string>& numeric, const std::set<std::string>& positive) {
  REQUIRE(row.size() == header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    if (!numeric.count(header[c])) continue;
    INFO(header[c] << " = " << row[c]);
    std::size_t used = 0;
    const double x = std::stod(row[c], &used);
    CHECK(used == row[c].size());
    CHECK(std::isfinite(x));
    if (positive.count(header[c])) CHECK(x > 0);
  }
}

}  // namespace

TEST_CASE("bench_attention --quick writes the issue's columns, every method, finite values") {
  ScratchDir dir;
  const auto r = run_binary("bench_attention", {"--quick", "--threads", "2", "--out", dir.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const auto rows = read_csv_file(dir.path() / "bench_attention.csv");
  REQUIRE(rows.size() > 1);
  const std::vector<std::string> required = {"method", "impl", "batch", "heads", "n", "d", "threads",
                                             "median_s", "gflops", "peak_mib", "gemm_gflops"};
  const auto& header = rows[0];
  REQUIRE(header.size() >= required.size());
  CHECK(std::vector<std::string>(header.begin(), header.begin() + static_cast<long>(required.size())) == required);
  std::set<std::string> methods, libraries;
  bool long_sequence = false;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    check_numbers(header, rows[i],
                  {"batch", "heads", "n", "d", "threads", "median_s", "gflops", "peak_mib", "gemm_gflops",
                   "gemm_before_gflops", "gemm_after_gflops", "repeats",
                   "warmed_up", "user_s", "sys_s", "minor_faults", "memory_gbs", "roofline_gflops"},
                  {"batch", "heads", "n", "d", "threads", "median_s", "gflops", "gemm_gflops", "gemm_before_gflops",
                   "gemm_after_gflops"});
    CHECK(rows[i][1] == "attnlab");
    CHECK(rows[i][6] == "2");
    // CPU time and page faults per run beside the wall time (issue 17): present, never negative.
    for (const char* column : {"user_s", "sys_s", "minor_faults"}) {
      const auto at = std::find(header.begin(), header.end(), column);
      REQUIRE_MESSAGE(at != header.end(), column);
      CHECK(std::stod(rows[i][static_cast<std::size_t>(at - header.begin())]) >= 0);
    }
    // The roofline: a positive bandwidth, and a bound no higher than the GEMM rate (the lower of two ceilings).
    const auto column = [&](const char* name) {
      const auto at = std::find(header.begin(), header.end(), name);
      REQUIRE_MESSAGE(at != header.end(), name);
      return std::stod(rows[i][static_cast<std::size_t>(at - header.begin())]);
    };
    // Each row's ceiling is the better of the sgemm rates measured just before and just after it (in the
    // pass the row was taken from), of the library found faster at the start (the ceiling table's start row).
    CHECK(column("gemm_gflops") == std::max(column("gemm_before_gflops"), column("gemm_after_gflops")));
    const auto library = std::find(header.begin(), header.end(), "gemm_library");
    REQUIRE(library != header.end());
    libraries.insert(rows[i][static_cast<std::size_t>(library - header.begin())]);
    // Every quick configuration stops at the cap on runs, far inside the budget, so it has a second pass
    // (bench_second_pass_due), and the row is the pass with the lower median.
    CHECK(column("repeats") == kBenchMaxRuns);
    CHECK(column("passes") == kBenchPasses);
    const auto medians_at = std::find(header.begin(), header.end(), "pass_medians_s");
    REQUIRE(medians_at != header.end());
    std::istringstream medians(rows[i][static_cast<std::size_t>(medians_at - header.begin())]);
    std::vector<double> per_pass;
    for (double x; medians >> x;) per_pass.push_back(x);
    CHECK(medians.eof());
    REQUIRE(per_pass.size() == static_cast<std::size_t>(kBenchPasses));
    CHECK(column("median_s") == *std::min_element(per_pass.begin(), per_pass.end()));
    CHECK(column("memory_gbs") > 0);
    CHECK(column("roofline_gflops") > 0);
    CHECK(column("roofline_gflops") <= column("gemm_gflops"));
    // Every quick configuration is far shorter than the 5 s budget: timed after a warm-up.
    const auto warmed = std::find(header.begin(), header.end(), "warmed_up");
    REQUIRE(warmed != header.end());
    CHECK(rows[i][static_cast<std::size_t>(warmed - header.begin())] == "1");
    methods.insert(rows[i][0]);
    long_sequence = long_sequence || (rows[i][2] == "1" && rows[i][3] == "1");
  }
  CHECK(methods == std::set<std::string>{"exact", "streaming", "streaming-inplace", "linear-elu", "linear-shen",
                                         "linformer", "nystrom", "exact-backward"});
  CHECK(long_sequence);
  // The ceilings at the start and at the end of the run: the first configuration's "before" and the last one's "after".
  const auto ceiling = read_csv_file(dir.path() / "bench_attention_ceiling.csv");
  REQUIRE(ceiling.size() == 3);
  CHECK(ceiling[0] == std::vector<std::string>{"when", "gemm_gflops", "eigen_gemm_gflops", "openblas_gemm_gflops", "memory_gbs"});
  CHECK(ceiling[1][0] == "start");
  const bool openblas_faster = std::stod(ceiling[1][3]) >= std::stod(ceiling[1][2]);
  CHECK(libraries == std::set<std::string>{openblas_faster ? "openblas" : "eigen"});
  CHECK(ceiling[2][0] == "end");
  for (std::size_t i = 1; i < 3; ++i) {
    for (std::size_t c = 1; c < 5; ++c) CHECK(std::stod(ceiling[i][c]) > 0);
    CHECK(std::stod(ceiling[i][1]) == std::max(std::stod(ceiling[i][2]), std::stod(ceiling[i][3])));
  }
  const auto at = [&](const char* name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  // The start is the first configuration's "before" when its first pass was the lower; the end follows the
  // last configuration of the second pass (the last configuration here, every one having two).
  if (rows[1][at("median_s")] == rows[1][at("pass_medians_s")].substr(0, rows[1][at("pass_medians_s")].find(' ')))
    CHECK(ceiling[1][openblas_faster ? 3 : 2] == rows[1][at("gemm_before_gflops")]);
  if (rows.back()[at("median_s")] != rows.back()[at("pass_medians_s")].substr(0, rows.back()[at("pass_medians_s")].find(' ')))
    CHECK(ceiling[2][openblas_faster ? 3 : 2] == rows.back()[at("gemm_after_gflops")]);
  CHECK(dir.files() == std::vector<std::string>{".attnlab-quick", "bench_attention.csv", "bench_attention_ceiling.csv"});
}

TEST_CASE("bench_r7 --quick writes both paths' times and residual ratios") {
  ScratchDir dir;
  const auto r = run_binary("bench_r7", {"--quick", "--out", dir.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  const auto rows = read_csv_file(dir.path() / "bench_r7.csv");
  REQUIRE(rows.size() == 2);
  check_numbers(rows[0], rows[1], {"low_rank_median_s", "dense_median_s", "speedup", "low_rank_residual_ratio", "dense_residual_ratio"},
                {"low_rank_median_s", "dense_median_s", "speedup"});
}

TEST_CASE("bench_attention: a bad --run-one or --repeats is a usage error, nothing written") {
  ScratchDir dir;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--run-one", "exact:1:1:0:8"}, {"--run-one", "bogus:1:1:8:8"}, {"--run-one", "exact:1:1"}, {"--repeats", "0"}}) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--out", dir.path().string()});
    const auto r = run_binary("bench_attention", full);
    INFO(args[0] << " " << args[1] << ": " << r.output);
    CHECK(r.exit_status == 2);
    CHECK(r.output.find("bench_attention") == 0);
  }
  CHECK(dir.files().empty());
}
