// bench_r7 (issue 6): R7's low-rank eigen path (thin QR of [W_Q W_K]) against the dense eigen solver of
// the formed S_w, at d = 4096, d_k = 64 in float; both checked by their residuals.
#include <fmt/format.h>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/qk/qk_split.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/qk/sym_eigen.hpp"
#include "attnlab/lab/timing.hpp"

using namespace attnlab;

int main(int argc, char** argv) {
  ExperimentCli cli("bench_r7", "R7's low-rank eigen path against the dense solver (d = 4096, d_k = 64)");
  int repeats = 5;
  cli.add_integer("--repeats", repeats, "at most this many timed runs of each path, after a warm-up (as many as fit 5 s; a run longer than that is timed alone), 1 to 1000",
                  1, 1000, true);
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const bool quick = cli.options().quick;
    const Eigen::Index d = quick ? 256 : 4096, dk = quick ? 16 : 64;
    Rng rng(derive_seed(cli.options().seed, 7));
    const double stddev = 1.0 / std::sqrt(static_cast<double>(d));
    const Mat<float> wq = gaussian_matrix<float>(d, dk, rng, stddev), wk = gaussian_matrix<float>(d, dk, rng, stddev);
    // Each path as R7 states it: dense forms S_w = (W_Q W_K^T + W_K W_Q^T) / 2 and solves all d pairs.
    EigenPairs<float> low, dense;
    // As bench_attention: as many runs as fit 5 s after a warm-up; the dense solver's first run (about
    // 19 s here) is longer than that and is its measurement.
    const BudgetedTiming low_t = time_within_budget([&] { low = eigen_low_rank_qr(wq, wk); }, repeats, kBenchTimingBudgetSeconds);
    const BudgetedTiming dense_t = time_within_budget(
        [&] { dense = eigen_dense<float>(symmetric_part(qk_product(wq, wk))); }, repeats, kBenchTimingBudgetSeconds);
    const double low_s = low_t.median_s, dense_s = dense_t.median_s;
    const double low_ratio = eigen_residual_ratio(wq, wk, low), dense_ratio = eigen_residual_ratio(wq, wk, dense);
    CsvTable table({int_col("d"), int_col("d_k"), int_col("threads"), real_col("low_rank_median_s"),
                    int_col("low_rank_repeats"), real_col("dense_median_s"), int_col("dense_repeats"),
                    real_col("speedup"), real_col("low_rank_residual_ratio"), real_col("dense_residual_ratio")});
    table.add_row({d, dk, cli.options().threads, low_s, low_t.runs, dense_s, dense_t.runs, dense_s / low_s, low_ratio,
                   dense_ratio});
    table.write(cli.output_path("bench_r7.csv"));
    fmt::print(stderr, "R7 at d = {}, d_k = {}: low-rank {:.4g} s, dense {:.4g} s, {:.0f}x faster\n", d, dk, low_s,
               dense_s, dense_s / low_s);
  });
}
