// U1-U3 (seed 002): is linear attention equivalent to softmax attention, is (QK^T)V = Q(K^T V),
// and do time and memory scale as the report's Table 1 says?
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/attention_error.hpp"
#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/family_option.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/fit_table.hpp"
#include "attnlab/lab/correction.hpp"

using namespace attnlab;

namespace exp_linear_attention {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* assoc_ratio_double = "assoc_ratio_double";
constexpr const char* assoc_ratio_float = "assoc_ratio_float";
constexpr const char* claimed_exponent = "claimed_exponent";
constexpr const char* d = "d";
constexpr const char* efficient_matrix_max_abs = "efficient_matrix_max_abs";
constexpr const char* efficient_rel_error = "efficient_rel_error";
constexpr const char* efficient_residual_ratio = "efficient_residual_ratio";
constexpr const char* elu_matrix_max_abs = "elu_matrix_max_abs";
constexpr const char* elu_rel_error = "elu_rel_error";
constexpr const char* elu_residual_ratio = "elu_residual_ratio";
constexpr const char* family = "family";
constexpr const char* linear_rel_error = "linear_rel_error";
constexpr const char* log2_error_ratio = "log2_error_ratio";
constexpr const char* median_seconds = "median_seconds";
constexpr const char* method = "method";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* n = "n";
constexpr const char* ops_exponent = "ops_exponent";
constexpr const char* quantity = "quantity";
constexpr const char* repeats = "repeats";
constexpr const char* sweep = "sweep";
constexpr const char* trial = "trial";
constexpr const char* uniform_rel_error = "uniform_rel_error";
constexpr const char* workspace_bytes = "workspace_bytes";
}  // namespace col

// U1: "equivalent" = the difference is rounding: ||E - S||_F / (n ||S||_F eps) <= 30 (LAPACK's
// threshold). "Approximately equal", the looser reading, = relative Frobenius error <= 1e-3.
constexpr double kEquivalentRatio = kResidualRatioThreshold;
constexpr double kApproximateRelError = 1e-3;
// U3: a measured exponent disagrees with the claimed one when it is more than 0.3 away from it
// and the claimed value lies outside its 95% interval (timings on a shared machine are noisy).
constexpr double kExponentTolerance = 0.3;
// U1.c: the corrected statement's domain, head widths from 16 (below it the two errors drift further apart).
constexpr Eigen::Index kU1cSmallestWidth = 16;

struct AccuracyConfig {
  std::string family;
  Eigen::Index n, d;
  int trial;
};

struct AccuracyResult {
  double eff_rel = 0, eff_ratio = 0, eff_matrix_maxabs = 0, elu_rel = 0, elu_ratio = 0, elu_matrix_maxabs = 0;
  double assoc_ratio_double = 0, assoc_ratio_float = 0;
};

template <typename T>
double association_ratio(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v) {
  const Mat<T> qt = q.cast<T>(), kt = k.cast<T>(), vt = v.cast<T>();
  const Mat<T> a = unnormalised_attention_quadratic(qt, kt, vt), b = unnormalised_attention_linear(qt, kt, vt);
  // Both orders are backward stable products of three factors: the difference is bounded by
  // c (n + d) eps ||Q|| ||K|| ||V|| / d, the scale the ratio divides by.
  const double d = static_cast<double>(q.cols());
  const double scale = static_cast<double>(qt.norm()) * static_cast<double>(kt.norm()) * static_cast<double>(vt.norm()) / d;
  const double diff = (a.template cast<double>() - b.template cast<double>()).norm();
  return residual_ratio<T>(diff, static_cast<double>(q.rows() + q.cols()), scale);
}

AccuracyResult measure_accuracy(const AccuracyConfig& c, const GivenInputs& given, std::uint64_t seed) {
  Rng rng(seed);
  const AttentionInputs in = given.attention_inputs_of(c.family, c.n, c.d, rng);
  const Eigen::MatrixXd p = softmax_attention_matrix(in.q, in.k);
  const Eigen::MatrixXd exact = p * in.v;
  AccuracyResult r;
  const double nn = static_cast<double>(c.n), ref_norm = exact.norm();
  const Eigen::MatrixXd eff = efficient_attention(in.q, in.k, in.v), elu = elu_linear_attention(in.q, in.k, in.v);
  r.eff_rel = relative_frobenius_error(eff, exact);
  r.eff_ratio = residual_ratio<double>((eff - exact).norm(), nn, ref_norm);
  r.elu_rel = relative_frobenius_error(elu, exact);
  r.elu_ratio = residual_ratio<double>((elu - exact).norm(), nn, ref_norm);
  r.eff_matrix_maxabs = max_abs_error(efficient_attention_matrix(in.q, in.k), p);
  r.elu_matrix_maxabs = max_abs_error(elu_linear_attention_matrix(in.q, in.k), p);
  r.assoc_ratio_double = association_ratio<double>(in.q, in.k, in.v);
  r.assoc_ratio_float = association_ratio<float>(in.q, in.k, in.v);
  return r;
}

struct TimingPoint {
  std::string method, sweep;
  Eigen::Index n, d;
  int repeats;
  double seconds;
  AttentionCost cost;
};

// Median time of one head in float, the report's precision, single-threaded. Fast kernels get
// more repeats (up to `kMaxRepeats`, about `kTargetSeconds` in all), so their medians are not noise.
constexpr double kTargetSeconds = 0.1;
constexpr int kMaxRepeats = 101;

TimingPoint time_method(const std::string& method, const std::string& sweep, Eigen::Index n, Eigen::Index d,
                        int min_repeats, std::uint64_t seed) {
  Rng rng(seed);
  const Mat<float> q = gaussian_matrix<float>(n, d, rng), k = gaussian_matrix<float>(n, d, rng),
                   v = gaussian_matrix<float>(n, d, rng);
  std::function<void()> work;
  AttentionCost cost;
  if (method == "softmax") {
    work = [&] { keep_alive(softmax_attention(q, k, v)); };
    cost = softmax_attention_cost(n, d, sizeof(float));
  } else if (method == "efficient") {
    work = [&] { keep_alive(efficient_attention(q, k, v)); };
    cost = efficient_attention_cost(n, d, sizeof(float));
  } else {
    work = [&] { keep_alive(elu_linear_attention(q, k, v)); };
    cost = elu_linear_attention_cost(n, d, sizeof(float));
  }
  const double once = median_seconds(work, 1);
  const int repeats = std::clamp(static_cast<int>(kTargetSeconds / std::max(once, 1e-9)), min_repeats, kMaxRepeats);
  return {method, sweep, n, d, repeats, median_seconds(work, repeats), cost};
}

constexpr const char* kAccuracyTable = "linear_attention.csv";
constexpr const char* kTimingTable = "linear_attention_timing.csv";
constexpr const char* kFitsTable = "linear_attention_fits_timing.csv";
constexpr const char* kConfirmTable = "linear_attention_confirm.csv";

// U1, U2: configurations (family, n, d, trial) in that nesting, configuration i drawn from
// derive_seed(seed, i); the given n and d replace the shapes.
void measure_accuracy_sweep(const ExperimentCli& cli, const std::vector<std::string>& families, const Shard& shard) {
  const auto& opt = cli.options();
  const GivenInputs& given = cli.given();
  std::vector<Eigen::Index> ns = opt.quick ? std::vector<Eigen::Index>{32, 128} : std::vector<Eigen::Index>{64, 256, 1024};
  std::vector<Eigen::Index> ds = opt.quick ? std::vector<Eigen::Index>{8, 32} : std::vector<Eigen::Index>{16, 64};
  int trials = opt.quick ? 1 : 2;
  if (given.used()) {
    ns = {given.matrix("q").rows()};
    ds = {given.matrix("q").cols()};
    trials = 1;
  }
  std::vector<AccuracyConfig> configs;
  for (const auto& f : families)
    for (auto n : ns)
      for (auto d : ds)
        for (int t = 0; t < trials; ++t) configs.push_back({f, n, d, t});
  const Shard::Range range = shard.range(configs.size());
  const auto results = run_trials<AccuracyResult>(range.size(), "U1-U2 accuracy", [&](std::size_t j) {
    const std::size_t i = range.begin + j;
    return measure_accuracy(configs[i], given, derive_seed(opt.seed, i));
  });
  CsvTable acc({text_col(col::family), int_col(col::n), int_col(col::d), int_col(col::trial),
                real_col(col::efficient_rel_error), real_col(col::efficient_residual_ratio),
                real_col(col::efficient_matrix_max_abs), real_col(col::elu_rel_error),
                real_col(col::elu_residual_ratio), real_col(col::elu_matrix_max_abs), real_col(col::assoc_ratio_double),
                real_col(col::assoc_ratio_float)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const auto& c = configs[range.begin + j];
    const auto& r = results[j];
    acc.add_row({c.family, c.n, c.d, c.trial, r.eff_rel, r.eff_ratio, r.eff_matrix_maxabs, r.elu_rel, r.elu_ratio,
                 r.elu_matrix_maxabs, r.assoc_ratio_double, r.assoc_ratio_float});
  }
  cli.write_table(acc, kAccuracyTable);
}

// U1.c's confirming sweep: linear attention's and uniform attention's errors against softmax attention on sizes
// the main sweep does not use, from the confirming seed. Configurations (family, n, d, trial) in that nesting,
// configuration i drawn from derive_seed(confirming_seed(seed), i).
void measure_confirm(const ExperimentCli& cli, const std::vector<std::string>& families, const Shard& shard) {
  const auto& opt = cli.options();
  const std::vector<Eigen::Index> ns = opt.quick ? std::vector<Eigen::Index>{48, 96} : std::vector<Eigen::Index>{128, 512};
  const std::vector<Eigen::Index> ds = opt.quick ? std::vector<Eigen::Index>{16, 24} : std::vector<Eigen::Index>{32, 128};
  const int trials = opt.quick ? 1 : 2;
  std::vector<AccuracyConfig> configs;
  for (const auto& f : families)
    for (auto n : ns)
      for (auto d : ds)
        for (int t = 0; t < trials; ++t) configs.push_back({f, n, d, t});
  const std::uint64_t seed = confirming_seed(opt.seed);
  const Shard::Range range = shard.range(configs.size());
  const auto errors = run_trials<std::pair<double, double>>(range.size(), "U1.c confirming", [&](std::size_t j) {
    const AccuracyConfig& c = configs[range.begin + j];
    Rng rng(derive_seed(seed, range.begin + j));
    const AttentionInputs in = make_attention_inputs(c.family, c.n, c.d, rng);
    const Eigen::MatrixXd exact = softmax_attention(in.q, in.k, in.v);
    return std::pair{relative_frobenius_error(efficient_attention(in.q, in.k, in.v), exact),
                     uniform_attention_error(in.v, exact)};
  });
  CsvTable t({text_col(col::family), int_col(col::n), int_col(col::d), int_col(col::trial), real_col(col::linear_rel_error),
              real_col(col::uniform_rel_error), real_col(col::log2_error_ratio)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const AccuracyConfig& c = configs[range.begin + j];
    const auto [linear, uniform] = errors[j];
    t.add_row({c.family, c.n, c.d, c.trial, linear, uniform, std::log2(linear / uniform)});
  }
  cli.write_table(t, kConfirmTable);
}

// U3: time and counted memory against n and d, single head, float, one thread at a time. A timing
// sweep (its exponents are fitted over wall-clock times), so it runs whole in one shard, the first
// of the experiment's timing sweeps; the others write its header only. Point i is drawn from
// derive_seed(seed, 1000 + i).
void measure_timing(const ExperimentCli& cli, const Shard& shard) {
  const auto& opt = cli.options();
  CsvTable timing({text_col(col::method), text_col(col::sweep), int_col(col::n), int_col(col::d), int_col(col::repeats),
                   real_col(col::median_seconds), real_col(col::multiply_adds), real_col(col::workspace_bytes)});
  if (shard.runs_whole(0)) {
    const int repeats = opt.quick ? 3 : 5;
    const std::vector<Eigen::Index> tn = opt.quick ? std::vector<Eigen::Index>{64, 128, 256}
                                                   : std::vector<Eigen::Index>{256, 512, 1024, 2048};
    const std::vector<Eigen::Index> td = opt.quick ? std::vector<Eigen::Index>{8, 16, 32}
                                                   : std::vector<Eigen::Index>{16, 32, 64, 128};
    const Eigen::Index fixed_d = opt.quick ? 16 : 64, fixed_n = opt.quick ? 128 : 1024;
    std::vector<TimingPoint> points;
    std::uint64_t tseed = 0;
    for (const auto& m : {"softmax", "efficient", "elu"}) {
      for (auto n : tn) points.push_back(time_method(m, "n", n, fixed_d, repeats, derive_seed(opt.seed, 1000 + tseed++)));
      for (auto d : td) points.push_back(time_method(m, "d", fixed_n, d, repeats, derive_seed(opt.seed, 1000 + tseed++)));
    }
    for (const auto& p : points)
      timing.add_row({p.method, p.sweep, p.n, p.d, p.repeats, p.seconds, p.cost.multiply_adds, p.cost.workspace_bytes});
  }
  cli.write_table(timing, kTimingTable);
}

// U1, U2 from linear_attention.csv.
std::vector<ClaimRow> judge_accuracy(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kAccuracyTable);
  double eff_worst_ratio = 0, eff_min_rel = std::numeric_limits<double>::infinity(), eff_max_rel = 0;
  double elu_worst_ratio = 0, elu_min_rel = std::numeric_limits<double>::infinity(), elu_max_rel = 0;
  double assoc_d = 0, assoc_f = 0;
  GroupOutcomes approximate;  // per family (in the table's order): every config within 1e-3
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const double eff_rel = t.real(i, col::efficient_rel_error), elu_rel = t.real(i, col::elu_rel_error);
    approximate.add(t.text(i, col::family), !(eff_rel > kApproximateRelError));
    eff_worst_ratio = std::max(eff_worst_ratio, t.real(i, col::efficient_residual_ratio));
    eff_min_rel = std::min(eff_min_rel, eff_rel);
    eff_max_rel = std::max(eff_max_rel, eff_rel);
    elu_worst_ratio = std::max(elu_worst_ratio, t.real(i, col::elu_residual_ratio));
    elu_min_rel = std::min(elu_min_rel, elu_rel);
    elu_max_rel = std::max(elu_max_rel, elu_rel);
    assoc_d = std::max(assoc_d, t.real(i, col::assoc_ratio_double));
    assoc_f = std::max(assoc_f, t.real(i, col::assoc_ratio_float));
  }
  const std::vector<std::string> approx_families = approximate.passing();  // families where every config is within 1e-3
  const std::string acc_evidence = cli.evidence_path(kAccuracyTable);

  ClaimRow u1{"U1", Verdict::fails, "largest residual ratio ||E - S||_F / (n ||S||_F eps) of "
              "softmax_row(Q)(softmax_col(K)^T V) against exact softmax attention (double), over families, n, d",
              eff_worst_ratio, kEquivalentRatio, acc_evidence, ""};
  const std::string approx = approx_families.empty() ? "none" : fmt::format("{}", fmt::join(approx_families, ", "));
  const std::string numbers = fmt::format(
      "Shen form relative error {:.3g} to {:.3g}; elu+1 form {:.3g} to {:.3g} (ratio up to {:.3g}); "
      "families within {:g} (approximately equal): {}", eff_min_rel, eff_max_rel, elu_min_rel, elu_max_rel,
      elu_worst_ratio, kApproximateRelError, approx);
  // In full: rounding-level everywhere; in part: approximately equal (within 1e-3) on some families.
  u1.verdict = triage(eff_worst_ratio <= kEquivalentRatio, !approx_families.empty());
  if (u1.verdict == Verdict::holds) {
    u1.note = "rounding-level everywhere; " + numbers;
  } else if (u1.verdict == Verdict::conditional) {
    u1.note = "not equivalent (not rounding-level); only approximately equal, and only on the families listed: " + numbers;
  } else {
    u1.note = "a different attention, not an equivalent one: " + numbers;
  }
  const double assoc = std::max(assoc_d, assoc_f);
  ClaimRow u2{"U2", assoc <= kResidualRatioThreshold ? Verdict::holds : Verdict::fails,
              "largest scaled residual ||(QK^T)V - Q(K^T V)||_F / ((n + d) ||Q|| ||K|| ||V|| / d eps), float and double",
              assoc, kResidualRatioThreshold, acc_evidence,
              fmt::format("double up to {:.3g}, float up to {:.3g}; the identity drops the softmax, so it says "
                          "nothing about U1", assoc_d, assoc_f)};
  return {u1, u2};
}

// U1.c from linear_attention_confirm.csv: per family, the largest |log2(linear error / uniform error)| at d >= 16.
ClaimRow judge_confirm(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kConfirmTable);
  // Per family (in the table's order): the ratio's range over its configurations.
  std::vector<std::string> families;
  std::map<std::string, std::pair<double, double>> range;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (t.integer(i, col::d) < kU1cSmallestWidth) continue;
    const std::string& f = t.text(i, col::family);
    const double r = t.real(i, col::log2_error_ratio);
    if (range.count(f) == 0) families.push_back(f), range[f] = {r, r};
    range[f] = {std::min(range[f].first, r), std::max(range[f].second, r)};
  }
  if (families.empty())
    return correction_row("U1.c", Verdict::untested, 0, "", "no configuration of the confirming sweep has d >= 16");
  WorstByCondition worst;
  std::string ranges;
  for (const auto& f : families) {
    const auto [lo, hi] = range[f];
    const std::string desc = fmt::format("{} {:.3g} to {:.3g}", f, std::exp2(lo), std::exp2(hi));
    worst.add(f, desc, std::max(std::abs(lo), std::abs(hi)));
    ranges += (ranges.empty() ? "" : "; ") + desc;
  }
  const Judgement j = judge_by_condition(worst, correction_definition("U1.c").threshold);
  return correction_row("U1.c", j.verdict, j.observed, cli.evidence_path(kConfirmTable),
                        "linear error / uniform-attention error by family: " + ranges + (j.note.empty() ? "" : "; " + j.note));
}

// U3 from linear_attention_timing.csv: each claimed exponent against the fitted one (the fits written
// to linear_attention_fits_timing.csv).
ClaimRow judge_timing(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kTimingTable);
  std::int64_t fixed_n = 0, largest_d = 0;  // the d sweep's n and its largest d
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t.text(i, col::sweep) == "d") {
      fixed_n = t.integer(i, col::n);
      largest_d = std::max(largest_d, t.integer(i, col::d));
    }
  // Claimed exponents: softmax O(d n^2) time, O(n^2) memory; linear O(d^2 n) time, O(dn + d^2) memory.
  struct Claimed { std::string method, sweep, quantity; double exponent; };
  const std::vector<Claimed> claimed = {
      {"softmax", "n", "time", 2}, {"softmax", "d", "time", 1}, {"efficient", "n", "time", 1},
      {"efficient", "d", "time", 2}, {"elu", "n", "time", 1}, {"elu", "d", "time", 2},
      {"softmax", "n", "memory", 2}, {"softmax", "d", "memory", 0}, {"efficient", "n", "memory", 1},
      {"efficient", "d", "memory", 1}, {"elu", "n", "memory", 1}, {"elu", "d", "memory", 1}};
  CsvTable fits(fit_columns({text_col(col::method), text_col(col::sweep), text_col(col::quantity),
                             real_col(col::claimed_exponent), real_col(col::ops_exponent)}));
  bool n_ok = true, d_ok = true;
  int miss_count = 0;
  std::string misses;
  for (const auto& c : claimed) {
    std::vector<double> x, y, ops;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      if (t.text(i, col::method) != c.method || t.text(i, col::sweep) != c.sweep) continue;
      x.push_back(static_cast<double>(t.integer(i, c.sweep == "n" ? col::n : col::d)));
      y.push_back(t.real(i, c.quantity == "time" ? col::median_seconds : col::workspace_bytes));
      ops.push_back(t.real(i, col::multiply_adds));
    }
    const PowerLawFit fit = fit_power_law(x, y), ops_fit = fit_power_law(x, ops);
    fits.add_row(fit_row({c.method, c.sweep, c.quantity, c.exponent, ops_fit.slope}, fit));
    // Memory is counted, so its exponent is exact; the claim's O(dn + d^2) is linear in d for d < n.
    const bool inside = fit.slope_interval.lower <= c.exponent && c.exponent <= fit.slope_interval.upper;
    if (std::abs(fit.slope - c.exponent) > kExponentTolerance && !inside) {
      (c.sweep == "n" ? n_ok : d_ok) = false;
      ++miss_count;
      misses += fmt::format("{}{} {} vs {}: {:.2f} [{:.2f}, {:.2f}] (claimed {:g})", misses.empty() ? "" : "; ",
                            c.method, c.quantity, c.sweep, fit.slope, fit.slope_interval.lower,
                            fit.slope_interval.upper, c.exponent);
    }
  }
  cli.write_table(fits, kFitsTable);
  ClaimRow u3{"U3", triage(n_ok && d_ok, n_ok),
              "number of fitted exponents (time: median of repeats; memory: counted workspace bytes) more than "
              "0.3 from the claimed one with the claim outside their 95% interval, of 12",
              static_cast<double>(miss_count), 0.0, cli.evidence_path(kFitsTable), ""};
  // In full: both sweeps; in part: the n sweep only (the note names the d sweep's shape).
  if (u3.verdict == Verdict::holds) {
    u3.note = "every exponent within 0.3 of the claim or its interval covering it (memory counted, not measured)";
  } else if (u3.verdict == Verdict::conditional) {
    u3.note = fmt::format("holds in n; in d (n = {}, d <= {}) lower-order terms dominate: {}", fixed_n, largest_d, misses);
  } else {
    u3.note = "exponents in n (and possibly d) differ from the claim: " + misses;
  }
  return u3;
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linear_attention",
                    "U1-U3: linear attention vs softmax attention: equivalence, association, cost", GivenKind::attention);
  cli.footer("With --q --k --v, only the accuracy table (U1, U2) runs, on those inputs; the cost sweep (U3) "
                   "times sizes, not values.");
  const std::vector<std::string> families = parse_with_family(cli, argc, argv);
  const auto measure = [&](const Shard& shard) {
    measure_accuracy_sweep(cli, families, shard);
    if (cli.uses_given()) return;  // the cost sweep is about sizes, the confirming sweep about our families
    measure_confirm(cli, families, shard);
    measure_timing(cli, shard);
  };
  const auto judge = [&](const std::filesystem::path& dir) {
    std::vector<ClaimRow> rows = judge_accuracy(cli, dir);
    if (cli.uses_given()) return rows;  // the ledger skips rows of given inputs
    rows.push_back(judge_confirm(cli, dir));
    rows.push_back(judge_timing(cli, dir));
    return rows;
  };
  return run_experiment(cli, {measure, judge});
}

}  // namespace exp_linear_attention
