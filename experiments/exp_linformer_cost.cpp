// U7, L2: Linformer's time and memory against n (fixed k), k and d: counts, timings, peak memory.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <malloc.h>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/lab/peak_rss.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/lab/fit_table.hpp"

using namespace attnlab;

namespace exp_linformer_cost {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* d = "d";
constexpr const char* exponentials = "exponentials";
constexpr const char* input_bytes_double = "input_bytes_double";
constexpr const char* k = "k";
constexpr const char* measured_peak_bytes = "measured_peak_bytes";
constexpr const char* median_seconds = "median_seconds";
constexpr const char* min_seconds = "min_seconds";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* multiply_adds_per_second = "multiply_adds_per_second";
constexpr const char* n = "n";
constexpr const char* precision = "precision";
constexpr const char* quantity = "quantity";
constexpr const char* repeats = "repeats";
constexpr const char* sweep = "sweep";
constexpr const char* workspace_bytes = "workspace_bytes";
constexpr const char* workspace_bytes_double = "workspace_bytes_double";
}  // namespace col

// Fixed before the run: a cost is "linear" in a size when its fitted exponent lies within
// this distance of 1 (timings of small GEMMs bend the curve; 0.2 leaves room for that but
// tells n from n^1.5 or n^2).
constexpr double kExponentTolerance = 0.2;

struct Point {
  std::string sweep;  // "n", "k" or "d": the size varied
  Eigen::Index n, d, k;
};

std::vector<Point> make_points(bool quick) {
  std::vector<Point> p;
  const std::vector<Eigen::Index> ns = quick ? std::vector<Eigen::Index>{512, 1024, 2048, 4096}
                                             : std::vector<Eigen::Index>{1024, 2048, 4096, 8192, 16384};
  const std::vector<Eigen::Index> ks = quick ? std::vector<Eigen::Index>{16, 32, 64, 128}
                                             : std::vector<Eigen::Index>{32, 64, 128, 256, 512};
  const std::vector<Eigen::Index> ds = quick ? std::vector<Eigen::Index>{8, 16, 32, 64}
                                             : std::vector<Eigen::Index>{16, 32, 64, 128, 256};
  const Eigen::Index n0 = quick ? 2048 : 4096, k0 = quick ? 64 : 256, d0 = 64;
  for (Eigen::Index n : ns) p.push_back({"n", n, d0, k0});
  for (Eigen::Index k : ks) p.push_back({"k", n0, d0, k});
  for (Eigen::Index d : ds) p.push_back({"d", n0, d, quick ? 32 : 128});
  return p;
}

struct Measured {
  double median = 0, min = 0;
  double peak_bytes = std::numeric_limits<double>::quiet_NaN();  // NaN: /proc could not be reset or read
};

// Times one head of Linformer on Gaussian inputs in precision T, single-threaded, and measures
// the resident-memory growth of one call above the inputs already in memory.
template <typename T>
Measured measure(const Point& p, int repeats, std::uint64_t seed) {
  Rng rng(seed);
  const Mat<T> q = gaussian_matrix<T>(p.n, p.d, rng), k = gaussian_matrix<T>(p.n, p.d, rng),
               v = gaussian_matrix<T>(p.n, p.d, rng);
  const auto proj = gaussian_projections(p.n, p.k, ProjectionSharing::separate, rng).template cast<T>();
  Measured m;
  if (reset_peak_rss()) {
    const auto before = peak_rss_bytes();
    { const Mat<T> out = linformer_attention(q, k, v, proj); keep_alive(out); }
    const auto after = peak_rss_bytes();
    if (before && after) m.peak_bytes = *after - *before;
  }
  const auto seconds = time_repeats([&] { const Mat<T> out = linformer_attention(q, k, v, proj); keep_alive(out); }, repeats);
  m.median = median(seconds);
  m.min = *std::min_element(seconds.begin(), seconds.end());
  return m;
}

constexpr const char* kCountsTable = "linformer_cost.csv";
constexpr const char* kTimingTable = "linformer_cost_timing.csv";
constexpr const char* kCountFitsTable = "linformer_cost_fits.csv";
constexpr const char* kTimeFitsTable = "linformer_cost_fits_timing.csv";

// The size a point's sweep varies, read back from a table row.
double size_of(const TableReader& t, std::size_t row) {
  const std::string& sweep = t.text(row, col::sweep);
  return static_cast<double>(t.integer(row, sweep == "n" ? col::n : sweep == "k" ? col::k : col::d));
}

// Counts and the buffer model: exact functions of the shapes, so the shard's block of the points.
void measure_counts(const ExperimentCli& cli, const Shard& shard) {
  const auto points = make_points(cli.options().quick);
  const Shard::Range range = shard.range(points.size());
  CsvTable counts({text_col(col::sweep), int_col(col::n), int_col(col::d), int_col(col::k),
                   real_col(col::multiply_adds), real_col(col::exponentials), real_col(col::workspace_bytes_double),
                   real_col(col::input_bytes_double)});
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const auto& p = points[i];
    const auto c = linformer_cost(p.n, p.d, p.d, p.k, sizeof(double));
    counts.add_row({p.sweep, p.n, p.d, p.k, c.multiply_adds, c.exponentials, c.workspace_bytes, c.input_bytes});
  }
  cli.write_table(counts, kCountsTable);
}

// Timings and peak memory of every point: a timing sweep (its exponents are fitted over wall-clock
// times), so it runs whole in one shard, the experiment's first timing sweep; the others write its
// header only. Point i is drawn from derive_seed(seed, i) in both precisions.
void measure_timing(const ExperimentCli& cli, const Shard& shard) {
  // Timings run one at a time on the main thread: a timing shares the machine with nothing of ours.
  CsvTable timing({text_col(col::sweep), text_col(col::precision), int_col(col::n), int_col(col::d), int_col(col::k),
                   int_col(col::repeats), real_col(col::median_seconds), real_col(col::min_seconds),
                   real_col(col::multiply_adds_per_second),
                   // NaN where /proc/self/clear_refs cannot reset the high-water mark (not Linux, no permission).
                   real_col(col::measured_peak_bytes, true), real_col(col::workspace_bytes)});
  if (shard.runs_whole(0)) {
    // Large buffers from mmap go back to the system when freed, so each call's growth of the
    // resident set shows its own buffers rather than reused heap.
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    const bool quick = cli.options().quick;
    const int repeats = quick ? 3 : 5;
    const auto points = make_points(quick);
    Progress progress("U7, L2 timing", points.size());
    for (std::size_t i = 0; i < points.size(); ++i, progress.tick()) {
      const auto& p = points[i];
      const auto c = linformer_cost(p.n, p.d, p.d, p.k, sizeof(double));
      const Measured md = measure<double>(p, repeats, derive_seed(cli.options().seed, i));
      const Measured mf = measure<float>(p, repeats, derive_seed(cli.options().seed, i));
      for (int prec = 0; prec < 2; ++prec) {
        const Measured& m = prec ? mf : md;
        timing.add_row({p.sweep, prec ? "float" : "double", p.n, p.d, p.k, repeats, m.median, m.min,
                        c.multiply_adds / m.median, m.peak_bytes,
                        linformer_cost(p.n, p.d, p.d, p.k, prec ? sizeof(float) : sizeof(double)).workspace_bytes});
      }
    }
  }
  cli.write_table(timing, kTimingTable);
}

// U7, L2 from linformer_cost.csv and linformer_cost_timing.csv: fitted exponents per sweep of the counts
// and model (deterministic, linformer_cost_fits.csv) and of the timings and measured peaks
// (machine-dependent, linformer_cost_fits_timing.csv).
std::vector<ClaimRow> judge_cost(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader counts(dir / kCountsTable), timing(dir / kTimingTable);
  CsvTable fits_count(fit_columns({text_col(col::sweep), text_col(col::quantity)}));
  CsvTable fits_time(fit_columns({text_col(col::sweep), text_col(col::quantity)}));
  double worst_time = 0, u7_time = 0, u7_mem = 0, u7_model = 0;
  std::string per_sweep;  // "L 1.02, k 1.07, d 0.54" for the note
  bool mem_measured = true;
  for (const std::string sweep : {"n", "k", "d"}) {
    std::vector<double> x, ops, model, xt, td, tf, mem;
    for (std::size_t i = 0; i < counts.rows(); ++i) {
      if (counts.text(i, col::sweep) != sweep) continue;
      x.push_back(size_of(counts, i));
      ops.push_back(counts.real(i, col::multiply_adds));
      model.push_back(counts.real(i, col::workspace_bytes_double));
    }
    for (std::size_t i = 0; i < timing.rows(); ++i) {
      if (timing.text(i, col::sweep) != sweep) continue;
      if (timing.text(i, col::precision) == "float") {
        tf.push_back(timing.real(i, col::median_seconds));
        continue;
      }
      xt.push_back(size_of(timing, i));
      td.push_back(timing.real(i, col::median_seconds));
      const double peak = timing.real(i, col::measured_peak_bytes);
      if (std::isfinite(peak) && peak > 0) mem.push_back(peak);
      else mem_measured = false;
    }
    const auto add = [&](CsvTable& t, const char* what, const std::vector<double>& xs, const std::vector<double>& y) {
      const PowerLawFit f = fit_power_law(xs, y);
      t.add_row(fit_row({sweep, what}, f));
      return f.slope;
    };
    add(fits_count, col::multiply_adds, x, ops);
    const double model_slope = add(fits_count, col::workspace_bytes, x, model);
    const double sd = add(fits_time, "median_seconds_double", xt, td);
    add(fits_time, "median_seconds_float", xt, tf);
    worst_time = std::max(worst_time, std::abs(sd - 1));
    per_sweep += fmt::format("{}{} {:.2f}", per_sweep.empty() ? "" : ", ", sweep == "n" ? "L" : sweep, sd);
    double mem_slope = std::numeric_limits<double>::quiet_NaN();
    if (mem.size() == xt.size()) mem_slope = add(fits_time, col::measured_peak_bytes, xt, mem);
    if (sweep == "n") u7_time = sd, u7_mem = mem_slope, u7_model = model_slope;
  }
  cli.write_table(fits_count, kCountFitsTable);
  cli.write_table(fits_time, kTimeFitsTable);

  const auto linear = [](double s) { return std::abs(s - 1) <= kExponentTolerance; };
  const bool mem_ok = linear(u7_model) && (!mem_measured || linear(u7_mem));
  return {{"U7", linear(u7_time) && mem_ok ? Verdict::holds : Verdict::fails,
           "fitted exponent of Linformer's median time in n at fixed k (double)", u7_time, 1 + kExponentTolerance,
           cli.evidence_path(kTimingTable),
           fmt::format("linear means |exponent - 1| <= {}; workspace model exponent {:.3f}; measured peak-memory exponent {}",
                       kExponentTolerance, u7_model, mem_measured ? fmt::format("{:.3f}", u7_mem) : "not measurable here")},
          {"L2", worst_time <= kExponentTolerance ? Verdict::holds : Verdict::fails,
           "largest |exponent - 1| of the median time (double) against L, k and d separately", worst_time,
           kExponentTolerance, cli.evidence_path(kTimingTable),
           "time exponents (double) " + per_sweep +
               "; the softmax's L k exponentials do not scale with d, so O(L k d') undercounts at small d'; "
               "fits in linformer_cost_fits_timing.csv, memory model L(d + k) + k d in linformer_cost.csv"}};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linformer_cost", "U7, L2: Linformer time and memory against n, k, d");
  cli.footer("Takes no .npy inputs: it times sizes, not values (exp_linformer_theorems and exp_linformer_rank take --q --k --v).");
  cli.split_measurement();
  cli.parse(argc, argv);
  const auto measure = [&](const Shard& shard) {
    measure_counts(cli, shard);
    measure_timing(cli, shard);
  };
  return run_experiment(cli, {measure, [&](const std::filesystem::path& dir) { return judge_cost(cli, dir); }});
}

}  // namespace exp_linformer_cost
