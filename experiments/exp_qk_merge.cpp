// Seed 001 (S1-S3): one merged W_QK against W_Q and W_K: parameters, counted and timed
// score computations, and the head split of a d_model x d_model projection; and the corrected
// statement of S2's count (S2.c) on its own confirming grid.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/theory/attention_params.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/interleaved_timing.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/qk/qk_merge.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/timed_medians.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/lab/timing_verdict.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/weight_claims.hpp"

using namespace attnlab;

namespace exp_qk_merge {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* crossover_d_k = "crossover_d_k";
constexpr const char* d = "d";
constexpr const char* d_gt_2dk = "d_gt_2dk";
constexpr const char* d_k = "d_k";
constexpr const char* d_model = "d_model";
constexpr const char* factored = "factored";
constexpr const char* factored_cheaper = "factored_cheaper";
constexpr const char* factored_cheaper_by_count = "factored_cheaper_by_count";
constexpr const char* factored_lower95 = "factored_lower95";
constexpr const char* factored_madds = "factored_madds";
constexpr const char* factored_median_cpu_seconds = "factored_median_cpu_seconds";
constexpr const char* factored_smaller = "factored_smaller";
constexpr const char* factored_upper95 = "factored_upper95";
constexpr const char* faster = "faster";
constexpr const char* form = "form";
constexpr const char* gemm_bitwise = "gemm_bitwise";
constexpr const char* gemm_ratio = "gemm_ratio";
constexpr const char* h = "h";
constexpr const char* merged = "merged";
constexpr const char* margin = "margin";
constexpr const char* merged_lower95 = "merged_lower95";
constexpr const char* merged_madds = "merged_madds";
constexpr const char* merged_median_cpu_seconds = "merged_median_cpu_seconds";
constexpr const char* merged_upper95 = "merged_upper95";
constexpr const char* n = "n";
constexpr const char* precision = "precision";
constexpr const char* reference_bitwise = "reference_bitwise";
constexpr const char* repeats = "repeats";
constexpr const char* time_ratio = "time_ratio";
constexpr const char* time_ratio_lower95 = "time_ratio_lower95";
constexpr const char* time_ratio_upper95 = "time_ratio_upper95";
}  // namespace col

constexpr double kRatioThreshold = kResidualRatioThreshold;

// S3 in precision T: a d x d nn.Linear computed whole then split, against h separate
// (d/h) x d projections. Entrywise ratio against the rounding bound of a d-term dot
// product plus bias: d eps (|X||W|^T + |b|).
struct SplitResult {
  bool reference_bitwise = true;  // fixed-order kernel
  bool gemm_bitwise = true;       // Eigen's GEMM
  double gemm_ratio = 0;
};
template <typename T>
SplitResult head_split(Eigen::Index n, Eigen::Index d, Eigen::Index h, Rng& rng) {
  const Mat<T> x = gaussian_matrix<T>(n, d, rng), w = gaussian_matrix<T>(d, d, rng);
  const Vec<T> b = gaussian_matrix<T>(d, 1, rng);
  const Mat<T> full_ref = linear_forward_reference(x, w, b), full = linear_forward(x, w, b);
  const Mat<double> bound = ((x.cwiseAbs() * w.cwiseAbs().transpose()).template cast<double>().rowwise() +
                             b.cwiseAbs().template cast<double>().transpose()) *
                            (double(d) * std::numeric_limits<T>::epsilon());
  SplitResult r;
  const Eigen::Index dh = d / h;
  for (Eigen::Index i = 0; i < h; ++i) {
    const Mat<T> wi = head_rows(w, h, i);
    const Vec<T> bi = head_rows(b, h, i);
    const Mat<T> ref_i = linear_forward_reference(x, wi, bi), gemm_i = linear_forward(x, wi, bi);
    r.reference_bitwise = r.reference_bitwise && (ref_i.array() == full_ref.middleCols(i * dh, dh).array()).all();
    const Mat<T> diff = gemm_i - full.middleCols(i * dh, dh);
    r.gemm_bitwise = r.gemm_bitwise && (diff.array() == T(0)).all();
    const Mat<double> ratio = diff.template cast<double>().cwiseAbs().array() /
                              bound.middleCols(i * dh, dh).array().max(std::numeric_limits<double>::min());
    r.gemm_ratio = std::max(r.gemm_ratio, ratio.maxCoeff());
  }
  return r;
}

// S1's grid: every (d, d_k) with d_k stepping by max(1, d / 64).
struct ParamPoint {
  std::int64_t d, dk;
};
std::vector<ParamPoint> param_grid(bool quick) {
  std::vector<ParamPoint> grid;
  for (std::int64_t d : quick ? std::vector<std::int64_t>{8, 64} : std::vector<std::int64_t>{8, 64, 512, 768, 4096})
    for (std::int64_t dk = 1; dk <= d; dk += std::max<std::int64_t>(1, d / 64)) grid.push_back({d, dk});
  return grid;
}

// S2's count grid: n x d x (d_k / d), the same in quick and full runs (counting costs nothing).
const std::vector<double> kFractions = {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 3.0 / 4, 1.0};
struct CostPoint {
  double n, d, dk;
};
std::vector<CostPoint> cost_grid() {
  std::vector<CostPoint> grid;
  for (double n : {16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0})
    for (double d : {64.0, 256.0, 1024.0, 4096.0})
      for (double fraction : kFractions) grid.push_back({n, d, fraction * d});
  return grid;
}

// S2.c's confirming grid (lab/correction.hpp): lengths and widths the grid above does not use, edge sizes 1, 2, 3
// among them, every d_k up to d = 64, and beyond it d_k every d/64 plus the integers around the crossover. Counting
// draws nothing, so fresh sizes are what confirms.
std::vector<CostPoint> confirming_cost_grid() {
  std::vector<CostPoint> grid;
  for (std::int64_t n : {1, 2, 3, 10, 100, 1000, 3000})
    for (std::int64_t d : {1, 2, 3, 7, 50, 300, 2000}) {
      std::vector<std::int64_t> dks;
      for (std::int64_t dk = 1; dk <= d; dk += std::max<std::int64_t>(1, d / 64)) dks.push_back(dk);
      const auto cross = static_cast<std::int64_t>(crossover_head_dim(double(n), double(d)));
      for (std::int64_t dk = cross - 1; dk <= cross + 2; ++dk)
        if (dk >= 1 && dk <= d) dks.push_back(dk);
      std::sort(dks.begin(), dks.end());
      dks.erase(std::unique(dks.begin(), dks.end()), dks.end());
      for (std::int64_t dk : dks) grid.push_back({double(n), double(d), double(dk)});
    }
  return grid;
}

// S2's timed configurations.
struct TimedConfig {
  Eigen::Index n, d, dk;
};
std::vector<TimedConfig> timed_grid(bool quick) {
  std::vector<TimedConfig> timed;
  for (Eigen::Index n : quick ? std::vector<Eigen::Index>{32, 64} : std::vector<Eigen::Index>{64, 256, 1024})
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{32} : std::vector<Eigen::Index>{64, 256})
      for (Eigen::Index dk : {d / 8, d / 4, d / 2, 3 * d / 4, d}) timed.push_back({n, d, dk});
  return timed;
}

// S3's trials: float and double, several widths, head counts and lengths.
struct SplitTrial {
  Eigen::Index n, d, h;
  bool single;
};
std::vector<SplitTrial> split_trials(bool quick) {
  std::vector<SplitTrial> trials;
  for (Eigen::Index n : quick ? std::vector<Eigen::Index>{1, 7} : std::vector<Eigen::Index>{1, 7, 64})
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{8, 64} : std::vector<Eigen::Index>{8, 64, 512})
      for (Eigen::Index h : {1, 2, 4, 8})
        for (bool single : {false, true}) trials.push_back({n, d, h, single});
  return trials;
}

constexpr const char* kParamsTable = "qk_merge_params.csv";
constexpr const char* kCostsTable = "qk_merge_costs.csv";
constexpr const char* kCostsConfirmTable = "qk_merge_costs_confirm.csv";
constexpr const char* kTimingTable = "qk_merge_timing.csv";
// Written by S2's judge from the timed runs: per configuration, both forms' medians with their 95% intervals,
// the ratio factored / merged with its interval, and which form is faster (or a tie).
constexpr const char* kRatioTable = "qk_merge_time_ratio_timing.csv";
constexpr const char* kSplitTable = "qk_merge_head_split.csv";

// The key columns of the table of S2's timed runs (timed_run_columns adds round and seconds).
std::vector<Column> timing_keys() { return {int_col(col::n), int_col(col::d), int_col(col::d_k), text_col(col::form)}; }

// Measures the shard's share of S1's and S2's count grids and of S3's trials, and S2's timing sweep (timing
// sweep 0) whole if it falls to this shard; writes all four tables.
void measure_merge(const ExperimentCli& cli, const Shard& shard, int repeats) {
  const bool quick = cli.options().quick;
  const std::uint64_t seed = cli.options().seed;

  // S1: exact parameter counts; the claim's rule "factored smaller iff d > 2 d_k".
  CsvTable params({int_col(col::d), int_col(col::d_k), int_col(col::merged), int_col(col::factored),
                   text_col(col::factored_smaller), text_col(col::d_gt_2dk)});
  const auto grid = param_grid(quick);
  const Shard::Range params_range = shard.range(grid.size());
  for (std::size_t i = params_range.begin; i < params_range.end; ++i) {
    const auto [d, dk] = grid[i];
    const bool smaller = factored_parameter_count(d, dk) < merged_parameter_count(d);
    params.add_row({d, dk, merged_parameter_count(d), factored_parameter_count(d, dk), smaller, d > 2 * dk});
  }
  cli.write_table(params, kParamsTable);

  // S2 counts: multiply-adds of the two computations over a wide grid.
  CsvTable costs({int_col(col::n), int_col(col::d), int_col(col::d_k), real_col(col::factored_madds),
                  real_col(col::merged_madds), real_col(col::crossover_d_k), text_col(col::factored_cheaper)});
  const auto cost_points = cost_grid();
  const Shard::Range costs_range = shard.range(cost_points.size());
  for (std::size_t i = costs_range.begin; i < costs_range.end; ++i) {
    const auto [n, d, dk] = cost_points[i];
    const double fac = factored_score_multiply_adds(n, d, dk), mer = merged_score_multiply_adds(n, d);
    costs.add_row({long(n), long(d), long(dk), fac, mer, crossover_head_dim(n, d), fac < mer});
  }
  cli.write_table(costs, kCostsTable);

  // S2.c: the same counts over its confirming grid, in a table of their own.
  CsvTable confirm({int_col(col::n), int_col(col::d), int_col(col::d_k), real_col(col::factored_madds),
                    real_col(col::merged_madds), real_col(col::crossover_d_k), text_col(col::factored_cheaper)});
  const auto confirm_points = confirming_cost_grid();
  const Shard::Range confirm_range = shard.range(confirm_points.size());
  for (std::size_t i = confirm_range.begin; i < confirm_range.end; ++i) {
    const auto [n, d, dk] = confirm_points[i];
    const double fac = factored_score_multiply_adds(n, d, dk), mer = merged_score_multiply_adds(n, d);
    confirm.add_row({long(n), long(d), long(dk), fac, mer, crossover_head_dim(n, d), fac < mer});
  }
  cli.write_table(confirm, kCostsConfirmTable);

  // S2 timing: float, one thread, serially so runs never compete; both forms of every configuration round-robin,
  // `repeats` rounds, every run a row (the judge takes the medians and their intervals).
  CsvTable timing(timed_run_columns(timing_keys()));
  if (shard.runs_whole(0)) {
    struct Inputs {
      Mat<float> x, wq, wk, w;
    };
    const auto timed = timed_grid(quick);
    std::vector<Inputs> inputs;
    for (std::size_t i = 0; i < timed.size(); ++i) {
      const auto& c = timed[i];
      Rng rng(derive_seed(seed, i));
      Inputs in;
      in.x = gaussian_matrix<float>(c.n, c.d, rng);
      in.wq = gaussian_matrix<float>(c.d, c.dk, rng);
      in.wk = gaussian_matrix<float>(c.d, c.dk, rng);
      in.w = in.wq * in.wk.transpose();
      inputs.push_back(std::move(in));
    }
    std::vector<std::function<void()>> works;
    for (const Inputs& in : inputs) {
      works.push_back([&in] { keep_alive(factored_scores(in.x, in.wq, in.wk)); });
      works.push_back([&in] { keep_alive(merged_scores(in.x, in.w)); });
    }
    Progress progress("S2 timing", static_cast<std::size_t>(repeats) + 1);
    const auto seconds = time_interleaved(works, repeats, true, &progress);
    for (std::size_t j = 0; j < works.size(); ++j) {
      const auto& c = timed[j / 2];
      add_timed_runs(timing, {c.n, c.d, c.dk, j % 2 ? "merged" : "factored"}, seconds[j]);
    }
  }
  cli.write_table(timing, kTimingTable);

  // S3: the head split, in parallel; each trial's seed from its index in the whole sweep.
  const auto trials = split_trials(quick);
  const Shard::Range split_range = shard.range(trials.size());
  std::vector<SplitResult> split(split_range.size());
  const auto count = static_cast<std::ptrdiff_t>(split_range.size());
#pragma omp parallel for schedule(dynamic)
  for (std::ptrdiff_t j = 0; j < count; ++j) {
    const std::size_t i = split_range.begin + static_cast<std::size_t>(j);
    Rng rng(derive_seed(seed ^ 0x5bd1e995ULL, i));
    const auto& t = trials[i];
    split[static_cast<std::size_t>(j)] = t.single ? head_split<float>(t.n, t.d, t.h, rng) : head_split<double>(t.n, t.d, t.h, rng);
  }
  CsvTable split_table({int_col(col::n), int_col(col::d_model), int_col(col::h), text_col(col::precision),
                        text_col(col::reference_bitwise), text_col(col::gemm_bitwise), real_col(col::gemm_ratio)});
  for (std::size_t j = 0; j < split.size(); ++j) {
    const auto& t = trials[split_range.begin + j];
    split_table.add_row({t.n, t.d, t.h, t.single ? "float" : "double", split[j].reference_bitwise, split[j].gemm_bitwise,
                         split[j].gemm_ratio});
  }
  cli.write_table(split_table, kSplitTable);
}

// S1 from qk_merge_params.csv: the grid points where "factored smaller" and "d > 2 d_k" disagree.
ClaimRow judge_s1(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kParamsTable);
  S1Tally s1;
  for (std::size_t i = 0; i < t.rows(); ++i)
    s1.add(t.integer(i, col::d), t.integer(i, col::d_k), t.integer(i, col::merged), t.integer(i, col::factored));
  const Judgement j = s1.judge();
  return {"S1", j.verdict, kS1Metric, j.observed, kNoMismatch, cli.evidence_path(kParamsTable),
          fmt::format("{} (d, d_k) points; exact integer counts d^2 and 2 d d_k", t.rows())};
}

// S2's timed comparison from qk_merge_timing.csv (the timed runs): per configuration, which form's median is
// faster, decided only where its 95% interval lies strictly below the other's (the ratio's interval then lies
// below or above 1), a tie otherwise; written to qk_merge_time_ratio_timing.csv. Returns the note's sentence.
std::string judge_s2_timing(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TimedMedians timing(TableReader(dir / kTimingTable), timing_keys());
  CsvTable ratios({int_col(col::n), int_col(col::d), int_col(col::d_k), int_col(col::repeats), real_col(col::factored_median_cpu_seconds),
                   real_col(col::factored_lower95), real_col(col::factored_upper95), real_col(col::merged_median_cpu_seconds),
                   real_col(col::merged_lower95), real_col(col::merged_upper95), real_col(col::time_ratio),
                   real_col(col::time_ratio_lower95), real_col(col::time_ratio_upper95), text_col(col::faster),
                   text_col(col::factored_cheaper_by_count), real_col(col::margin, true)});
  int factored = 0, merged = 0, ties = 0, agree = 0;
  std::size_t repeats = 0;
  std::string nearest;  // the decided configuration nearest to a tie, and its margin
  double nearest_margin = std::numeric_limits<double>::infinity();
  for (const auto& config : timing.distinct({col::n, col::d, col::d_k})) {
    const auto at = [&](const char* form) {
      const auto i = timing.where({{col::n, config[0]}, {col::d, config[1]}, {col::d_k, config[2]}, {col::form, form}});
      if (i.size() != 1)
        throw std::runtime_error(fmt::format("{}: {} timed configuration(s) of the {} form at n = {}, d = {}, d_k = {}",
                                             timing.path().string(), i.size(), form, config[0], config[1], config[2]));
      return i[0];
    };
    const std::size_t f = at("factored"), m = at("merged");
    const Estimate ef = timing.estimate(f), em = timing.estimate(m);
    const Estimate r = ratio_estimate(ef, em);
    const double margin = separation_margin(ef, em);  // > 1: factored faster, < -1: merged faster
    // The ratio's interval lies below 1 exactly when factored's interval lies strictly below merged's.
    const std::string faster = ef.upper < em.lower ? "factored" : em.upper < ef.lower ? "merged" : "tie";
    const std::int64_t n = timing.integer(f, col::n), d = timing.integer(f, col::d), dk = timing.integer(f, col::d_k);
    const bool by_count = factored_score_multiply_adds(double(n), double(d), double(dk)) < merged_score_multiply_adds(double(n), double(d));
    ratios.add_row({n, d, dk, static_cast<long long>(timing.time(f).count), ef.value, ef.lower, ef.upper, em.value, em.lower,
                    em.upper, r.value, r.lower, r.upper, faster, by_count, margin});
    repeats = timing.time(f).count;
    if (faster == "tie") {
      ++ties;
    } else {
      (faster == "factored" ? factored : merged) += 1;
      agree += (faster == "factored") == by_count;
    }
    if (faster != "tie" && std::abs(margin) < std::abs(nearest_margin)) {
      nearest_margin = margin;
      nearest = fmt::format("n = {}, d = {}, d_k = {}", n, d, dk);
    }
  }
  cli.write_table(ratios, kRatioTable);
  return fmt::format("timed (float, 1 thread, both forms round-robin, the median CPU time of {} runs with its 95% interval): factored faster in {}, "
                     "merged faster in {}, a tie (the intervals overlap) in {} of {} configurations; the faster form is the "
                     "cheaper by count in {} of the {} decided ({}){}",
                     repeats, factored, merged, ties, factored + merged + ties, agree, factored + merged, cli.evidence_path(kRatioTable),
                     nearest.empty() ? std::string(".")
                                     : fmt::format("; the decided configuration nearest to a tie: {}, margin {} half-widths of the "
                                                   "intervals (beyond +-1 decided, + factored faster).",
                                                   nearest, margin_text(nearest_margin)));
}

// S2 from qk_merge_costs.csv (the verdict) and qk_merge_timing.csv (the timed comparison, in the note).
// Fixed rule: holds if the factored form is cheaper at every grid point, fails if at none, conditional
// otherwise (the condition being the exact crossover). A grid point per condition: judge_by_condition's
// verdict is that rule; the note is this claim's own.
ClaimRow judge_s2(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader costs(dir / kCostsTable);
  S2Tally s2;
  double min_cross_frac = 1, max_cross_frac = 0;
  std::vector<int> cheaper_at(kFractions.size(), 0), points_at(kFractions.size(), 0);  // by d_k / d
  for (std::size_t i = 0; i < costs.rows(); ++i) {
    const std::int64_t n = costs.integer(i, col::n), d = costs.integer(i, col::d), dk = costs.integer(i, col::d_k);
    std::size_t fi = 0;
    while (fi < kFractions.size() && long(kFractions[fi] * double(d)) != dk) ++fi;
    if (fi == kFractions.size())
      throw std::runtime_error(fmt::format("{}: row {}: d_k = {} is no grid fraction of d = {}", costs.path().string(), i + 1, dk, d));
    const bool fac_cheaper = costs.real(i, col::factored_madds) < costs.real(i, col::merged_madds);
    s2.add(n, d, dk, costs.real(i, col::factored_madds), costs.real(i, col::merged_madds));
    cheaper_at[fi] += fac_cheaper;
    ++points_at[fi];
    const double cross_frac = costs.real(i, col::crossover_d_k) / double(d);
    min_cross_frac = std::min(min_cross_frac, cross_frac);
    max_cross_frac = std::max(max_cross_frac, cross_frac);
  }
  std::string by_fraction;
  for (std::size_t fi = 0; fi < kFractions.size(); ++fi)
    by_fraction += fmt::format("{}d_k/d = {:.4g}: {}/{}", fi ? "; " : "", kFractions[fi], cheaper_at[fi], points_at[fi]);
  const Judgement j = s2.judge();
  return {"S2", j.verdict, kS2Metric, j.observed, 1.0, cli.evidence_path(kCostsTable),
          fmt::format("counts equal the comment's formulas 2 n d d_k + n^2 d_k and n d^2 + n^2 d exactly (Eigen GEMM does a b c "
                      "multiply-adds); factored is cheaper iff d_k < d (d + n) / (2 d + n), which over the grid lies between "
                      "{:.3f} d and {:.3f} d; factored cheaper at [{}]; {}",
                      min_cross_frac, max_cross_frac, by_fraction, judge_s2_timing(cli, dir))};
}

// S2.c from qk_merge_costs_confirm.csv: where the counted comparison and the statement's exact criterion
// d_k (2d + n) < d (d + n) disagree, and where the crossover d (d + n)/(2d + n) leaves (d/2, d), in integers.
ClaimRow judge_s2_correction(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kCostsConfirmTable);
  std::int64_t mismatches = 0, outside = 0, at_crossover = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::int64_t n = t.integer(i, col::n), d = t.integer(i, col::d), dk = t.integer(i, col::d_k);
    const bool counted = t.real(i, col::factored_madds) < t.real(i, col::merged_madds);
    mismatches += counted != (dk * (2 * d + n) < d * (d + n));
    outside += !(2 * d * (d + n) > d * (2 * d + n) && d * (d + n) < d * (2 * d + n));
    at_crossover += dk * (2 * d + n) == d * (d + n);
  }
  const std::int64_t failures = mismatches + outside;
  return correction_row("S2.c", failures <= correction_definition("S2.c").threshold ? Verdict::holds : Verdict::fails,
                        static_cast<double>(failures), cli.evidence_path(kCostsConfirmTable),
                        fmt::format("{} (n, d, d_k) points, n in {{{}}}, d in {{{}}}: the counted comparison disagrees with "
                                    "the criterion at {}, the crossover leaves (d/2, d) at {}; {} points sit exactly on the "
                                    "crossover (equal counts: not cheaper)",
                                    t.rows(), fmt::join(t.distinct_integers(col::n), ", "),
                                    fmt::join(t.distinct_integers(col::d), ", "), mismatches, outside, at_crossover));
}

// S3 from qk_merge_head_split.csv: the fixed-order kernel bitwise in every trial and Eigen's GEMM within
// rounding. Two criteria, both needed; no condition under which it holds in part.
ClaimRow judge_s3(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kSplitTable);
  std::size_t ref_bitwise = 0, gemm_bitwise = 0;
  double worst_split = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    ref_bitwise += t.text(i, col::reference_bitwise) == "true";
    gemm_bitwise += t.text(i, col::gemm_bitwise) == "true";
    worst_split = std::max(worst_split, t.real(i, col::gemm_ratio));
  }
  const bool holds = ref_bitwise == t.rows() && worst_split <= kRatioThreshold;
  return {"S3", holds ? Verdict::holds : Verdict::fails,
          "max entrywise |split GEMM - per-head GEMM| / (d eps (|X||W|^T + |b|)), float and double; the "
          "fixed-order kernel must be bitwise equal",
          worst_split, kRatioThreshold, cli.evidence_path(kSplitTable),
          fmt::format("fixed-order dot products: bitwise equal in {}/{} trials (each output uses only its own row of W); "
                      "Eigen's GEMM: bitwise in {}/{}, the rest equal at rounding level (Eigen chooses its product kernel "
                      "from the shapes, so the order of the d-term sums may differ between the whole and the split)",
                      ref_bitwise, t.rows(), gemm_bitwise, t.rows())};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_qk_merge", "seed 001: merged W_QK vs W_Q, W_K: parameters, cost, head split");
  cli.footer("Takes no .npy inputs: it counts parameters and operations and times sizes, none of which depend on weight values.");
  int repeats = kTimedRounds;
  cli.add_integer("--repeats", repeats,
                  fmt::format("timed runs of each form per configuration, round-robin (their median and its 95% interval "
                              "kept), {} to 1000", min_median_interval_count()),
                  static_cast<int>(min_median_interval_count()), 1000);
  cli.split_measurement();
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_merge(cli, shard, repeats); },
                              [&](const std::filesystem::path& dir) {
                                return std::vector<ClaimRow>{judge_s1(cli, dir), judge_s2(cli, dir), judge_s3(cli, dir),
                                                             judge_s2_correction(cli, dir)};
                              }});
}

}  // namespace exp_qk_merge
