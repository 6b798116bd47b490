// R8: does the reparameterization make evaluating attention linear in n? Counts and timings.
#include <fmt/format.h>

#include <limits>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/qk_weights.hpp"
#include "attnlab/qk/reparameterized_attention.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/interleaved_timing.hpp"
#include "attnlab/lab/timed_medians.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/lab/timing_verdict.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/fit_table.hpp"

using namespace attnlab;

namespace exp_qk_attention_cost {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* computation = "computation";
constexpr const char* d = "d";
constexpr const char* d_k = "d_k";
constexpr const char* eigenpairs = "eigenpairs";
constexpr const char* factored_multiply_adds = "factored_multiply_adds";
constexpr const char* n = "n";
constexpr const char* projection_only_multiply_adds = "projection_only_multiply_adds";
constexpr const char* quantity = "quantity";
constexpr const char* reparameterized_multiply_adds = "reparameterized_multiply_adds";
constexpr const char* softmax_exponentials = "softmax_exponentials";
}  // namespace col

// O(n d_k) is linear in n; an exponent is called consistent with it when it (for counts) or its whole 95%
// interval (for timings) is at most 1.3; a timed interval that contains 1.3 cannot decide.
constexpr double kLinearExponentMax = 1.3;
// R8.c's bands, as its statement in corrections.tsv fixed them before its confirming run: the output's time exponent
// in n within 2 +- 0.3, the projection X U's within 1 +- 0.2.
constexpr double kQuadratic = 2, kQuadraticTolerance = 0.3, kLinear = 1, kLinearTolerance = 0.2;

struct Shape {
  Eigen::Index d, dk;
  std::vector<Eigen::Index> ns;
  Eigen::Index fit_from;  // smallest n in the fits: below it fixed costs dominate
};

// The sweep over n at one (d, d_k); given weights keep the sweep (X is drawn) at their own d and d_k.
Shape sweep(bool quick, const ExperimentCli& cli) {
  Shape shape = quick ? Shape{64, 8, {1, 2, 3, 16, 64, 128, 256, 512}, 64}
                      : Shape{256, 32, {1, 2, 3, 16, 64, 256, 512, 1024, 2048, 4096}, 256};
  if (cli.uses_given()) {
    shape.d = cli.given().matrix("wq").rows();
    shape.dk = cli.given().matrix("wq").cols();
  }
  return shape;
}

constexpr const char* kCountsTable = "qk_attention_cost.csv";
constexpr const char* kTimingTable = "qk_attention_cost_timing.csv";
// The judge's power laws in n (n >= the shape's fit_from) of every count and every timing, drawn by the report.
constexpr const char* kCountFitsTable = "qk_attention_cost_fits.csv";
constexpr const char* kTimeFitsTable = "qk_attention_cost_fits_timing.csv";
constexpr const char* kMediansTable = "qk_attention_cost_medians_timing.csv";  // the judge's medians of the timed runs

// The three computations timed, in the order of every round: the factored and the reparameterized attention
// output, and the projection X U alone (what is linear in n).
constexpr const char* kComputations[] = {"factored", "reparameterized", "projection_only"};

std::vector<Column> timing_keys() { return {int_col(col::n), text_col(col::computation)}; }

// R8.c's confirming sweep: from the confirming seed, at a d and d_k the main sweep does not use and fresh n, all
// n >= d (the statement's range); the reparameterized output and the projection X U timed round-robin.
struct ConfirmShape {
  Eigen::Index d, dk;
  std::vector<Eigen::Index> ns;
};
ConfirmShape confirm_shape(bool quick) {
  return quick ? ConfirmShape{48, 6, {80, 160, 320, 640}} : ConfirmShape{192, 24, {384, 768, 1536, 2560}};
}
constexpr const char* kConfirmTable = "qk_attention_cost_confirm_timing.csv";
constexpr const char* kConfirmMediansTable = "qk_attention_cost_confirm_medians_timing.csv";
constexpr const char* kConfirmFitsTable = "qk_attention_cost_confirm_fits_timing.csv";
constexpr const char* kConfirmComputations[] = {"reparameterized", "projection_only"};
std::vector<Column> confirm_keys() { return {int_col(col::n), int_col(col::d), int_col(col::d_k), text_col(col::computation)}; }

// Counts for the shard's share of n; the timings of every n (timing sweep 0) if that sweep falls to this
// shard. Both tables in every shard.
void measure_cost(const ExperimentCli& cli, const Shard& shard) {
  const bool quick = cli.options().quick;
  const Shape shape = sweep(quick, cli);
  Rng rng(derive_seed(cli.options().seed, 0));
  const QkWeights w = cli.uses_given() ? cli.given().qk_weights() : make_qk_weights("gaussian", shape.d, shape.dk, rng);
  const Eigen::MatrixXd wv = gaussian_matrix(shape.d, shape.dk, rng, 1.0 / std::sqrt(static_cast<double>(shape.d)));
  // The decomposition is computed once, outside the timed region, as the claim amortises it.
  const EigenPairs<double> pairs = leading_pairs(eigen_low_rank_qr<double>(w.wq, w.wk), 2 * shape.dk);
  const auto r = static_cast<double>(pairs.values.size());
  const double scale = 1.0 / std::sqrt(static_cast<double>(shape.dk));

  CsvTable counts({int_col(col::n), int_col(col::d), int_col(col::d_k), int_col(col::eigenpairs),
                   real_col(col::factored_multiply_adds), real_col(col::reparameterized_multiply_adds),
                   real_col(col::projection_only_multiply_adds), real_col(col::softmax_exponentials)});
  const Shard::Range range = shard.range(shape.ns.size());
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const Eigen::Index n = shape.ns[i];
    const auto nd = static_cast<double>(n), dd = static_cast<double>(shape.d), dk = static_cast<double>(shape.dk);
    counts.add_row({n, shape.d, shape.dk, pairs.values.size(), factored_attention_multiply_adds(nd, dd, dk, dk),
                    reparameterized_attention_multiply_adds(nd, dd, r, dk), nd * dd * r, nd * nd});
  }
  cli.write_table(counts, kCountsTable);

  // Every n and computation round-robin, kTimedRounds rounds: the exponents compare the lengths, so a stretch of
  // load must slow every length alike.
  CsvTable timing(timed_run_columns(timing_keys()));
  if (shard.runs_whole(0)) {
    std::vector<Eigen::MatrixXd> xs;  // X for each n, drawn in turn from the one stream after the weights
    for (Eigen::Index n : shape.ns) xs.push_back(gaussian_matrix(n, shape.d, rng));
    std::vector<std::function<void()>> works;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      works.push_back([&, i] { keep_alive(attention_from_scores<double>(factored_scores<double>(xs[i], w.wq, w.wk), xs[i] * wv, scale)); });
      works.push_back([&, i] { keep_alive(attention_from_scores<double>(reparameterized_scores(xs[i], pairs), xs[i] * wv, scale)); });
      works.push_back([&, i] { keep_alive(Eigen::MatrixXd(xs[i] * pairs.vectors)); });  // what is linear in n
    }
    Progress progress("attention cost", kTimedRounds + 1);
    const auto seconds = time_interleaved(works, kTimedRounds, true, &progress);
    for (std::size_t j = 0; j < works.size(); ++j) add_timed_runs(timing, {shape.ns[j / 3], kComputations[j % 3]}, seconds[j]);
  }
  cli.write_table(timing, kTimingTable);
}

// R8.c's confirming sweep (timing sweep 1), whole in one shard: weights, W_V and every X drawn in turn from one
// stream of the confirming seed; each n's two computations round-robin with every other n's, kTimedRounds rounds.
void measure_confirm(const ExperimentCli& cli, const Shard& shard) {
  CsvTable timing(timed_run_columns(confirm_keys()));
  if (shard.runs_whole(1)) {
    const ConfirmShape shape = confirm_shape(cli.options().quick);
    Rng rng(derive_seed(confirming_seed(cli.options().seed), 0));
    const QkWeights w = make_qk_weights("gaussian", shape.d, shape.dk, rng);
    const Eigen::MatrixXd wv = gaussian_matrix(shape.d, shape.dk, rng, 1.0 / std::sqrt(static_cast<double>(shape.d)));
    const EigenPairs<double> pairs = leading_pairs(eigen_low_rank_qr<double>(w.wq, w.wk), 2 * shape.dk);
    const double scale = 1.0 / std::sqrt(static_cast<double>(shape.dk));
    std::vector<Eigen::MatrixXd> xs;
    for (Eigen::Index n : shape.ns) xs.push_back(gaussian_matrix(n, shape.d, rng));
    std::vector<std::function<void()>> works;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      works.push_back([&, i] { keep_alive(attention_from_scores<double>(reparameterized_scores(xs[i], pairs), xs[i] * wv, scale)); });
      works.push_back([&, i] { keep_alive(Eigen::MatrixXd(xs[i] * pairs.vectors)); });
    }
    Progress progress("R8.c confirming timing", kTimedRounds + 1);
    const auto seconds = time_interleaved(works, kTimedRounds, true, &progress);
    for (std::size_t j = 0; j < works.size(); ++j)
      add_timed_runs(timing, {shape.ns[j / 2], shape.d, shape.dk, kConfirmComputations[j % 2]}, seconds[j]);
  }
  cli.write_table(timing, kConfirmTable);
}

// R8 from the tables on disk: power laws in n (n >= the shape's fit_from) of the counted multiply-adds and of
// the medians of the timed runs. Verdict, by a rule fixed here: holds if the counted exponent is <= 1.3 and the
// timed exponent's whole 95% interval is; fails if the counted exponent is above 1.3 or the whole timed interval
// is; inconclusive when the counts pass and the timed interval contains 1.3. Two criteria on one
// configuration, no condition to split by: not judge_by_condition's ladder.
std::vector<ClaimRow> judge_cost(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const Shape shape = sweep(cli.options().quick, cli);
  const TableReader counts(dir / kCountsTable);
  const TimedMedians timing(TableReader(dir / kTimingTable), timing_keys());
  cli.write_table(timing.table(), kMediansTable);
  if (counts.rows() == 0 || timing.size() != 3 * counts.rows())
    throw std::runtime_error(fmt::format("{} has {} rows and {} times {} configurations: three per n of the sweep expected",
                                         counts.path().string(), counts.rows(), timing.path().string(), timing.size()));
  // One fit per quantity over the n >= fit_from, each written as a row of `fits`; y(i) is the quantity at n_i.
  const auto fit_of = [&](const std::string& quantity, const std::function<double(std::int64_t)>& y, CsvTable& fits) {
    std::vector<double> x, ys;
    for (std::size_t i = 0; i < counts.rows(); ++i) {
      const std::int64_t n = counts.integer(i, col::n);
      if (n < shape.fit_from) continue;
      x.push_back(static_cast<double>(n));
      ys.push_back(y(static_cast<std::int64_t>(i)));
    }
    const PowerLawFit f = fit_power_law(x, ys);
    fits.add_row(fit_row({quantity}, f));
    return f;
  };
  CsvTable count_fits(fit_columns({text_col(col::quantity)})), time_fits(fit_columns({text_col(col::quantity)}));
  std::vector<PowerLawFit> by_counts, by_times;
  for (const char* column : {col::factored_multiply_adds, col::reparameterized_multiply_adds, col::projection_only_multiply_adds,
                             col::softmax_exponentials})
    by_counts.push_back(fit_of(column, [&](std::int64_t i) { return counts.real(static_cast<std::size_t>(i), column); }, count_fits));
  for (const char* computation : kComputations)
    by_times.push_back(fit_of(
        computation,
        [&](std::int64_t i) {
          const std::string n = counts.text(static_cast<std::size_t>(i), col::n);
          const auto at = timing.where({{col::n, n}, {col::computation, computation}});
          if (at.size() != 1)
            throw std::runtime_error(fmt::format("{}: {} timed configuration(s) of {} at n = {}", timing.path().string(), at.size(),
                                                 computation, n));
          return timing.time(at[0]).median;
        },
        time_fits));
  cli.write_table(count_fits, kCountFitsTable);
  cli.write_table(time_fits, kTimeFitsTable);
  const PowerLawFit& by_count = by_counts[1];  // reparameterized
  const PowerLawFit& by_time = by_times[1];
  const PowerLawFit& proj = by_times[2];
  const BandJudgement timed = judge_band(slope_estimate(by_time), -std::numeric_limits<double>::infinity(), kLinearExponentMax);
  const Verdict verdict = by_count.slope > kLinearExponentMax ? Verdict::fails : timed.outcome;
  const BandJudgement counted = judge_band(exact_estimate(by_count.slope), -std::numeric_limits<double>::infinity(), kLinearExponentMax);
  const std::vector<TimedOutcome> outcomes = {{"the counted exponent (exact)", counted.outcome, counted.margin},
                                              {"the timed exponent", timed.outcome, timed.margin}};
  const std::string note = fmt::format(
      "full attention output through (XU) diag(lambda) (XU)^T, n >= {}: counted multiply-adds ~ n^{:.3f}; median CPU time ~ n^{:.2f} "
      "[{:.2f}, {:.2f}] (margin {} against 1.3; median CPU times of {} interleaved rounds in {}). Only the projection X U is linear: time "
      "~ n^{:.2f} [{:.2f}, {:.2f}]; the n x n scores and softmax remain. {}",
      shape.fit_from, by_count.slope, by_time.slope, by_time.slope_interval.lower, by_time.slope_interval.upper,
      margin_text(timed.margin), kTimedRounds, cli.evidence_path(kMediansTable), proj.slope, proj.slope_interval.lower,
      proj.slope_interval.upper, margin_sentence(deciding_outcome(outcomes, verdict, true)));
  return {ClaimRow{"R8", verdict,
                   fmt::format("fitted exponent in n of counted multiply-adds of the attention output (d = {}, d_k = {})",
                               counts.integer(0, col::d), counts.integer(0, col::d_k)),
                   by_count.slope, kLinearExponentMax, cli.evidence_path(kCountsTable), note}};
}

// R8.c from qk_attention_cost_confirm_timing.csv, by the statement's parts (judge_timed_parts: both must hold): the
// fitted exponent in n (over the n >= d of the sweep) of the output's median CPU time within 2 +- 0.3, and of the
// projection's within 1 +- 0.2, each by its whole 95% interval (judge_band).
ClaimRow judge_confirm(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TimedMedians timing(TableReader(dir / kConfirmTable), confirm_keys());
  cli.write_table(timing.table(), kConfirmMediansTable);
  CsvTable fits(fit_columns({text_col(col::quantity)}));
  std::vector<TimedPart> parts;
  std::int64_t d = 0, dk = 0;
  for (const char* computation : kConfirmComputations) {
    std::vector<double> x, y;
    for (std::size_t i : timing.where({{col::computation, computation}})) {
      d = timing.integer(i, col::d);
      dk = timing.integer(i, col::d_k);
      const std::int64_t n = timing.integer(i, col::n);
      if (n < d) continue;  // the statement's range
      x.push_back(static_cast<double>(n));
      y.push_back(timing.time(i).median);
    }
    const PowerLawFit f = fit_power_law(x, y);
    fits.add_row(fit_row({computation}, f));
    const bool output = std::string(computation) == "reparameterized";
    const double centre = output ? kQuadratic : kLinear, tolerance = output ? kQuadraticTolerance : kLinearTolerance;
    const BandJudgement b = judge_band(slope_estimate(f), centre - tolerance, centre + tolerance);
    const std::string what = output ? "the output's exponent in n" : "the projection X U's exponent in n";
    parts.push_back({{what, b.outcome, b.margin}, fmt::format("{} {:.2f} [{:.2f}, {:.2f}], within {:g} +- {:g} (margin {})", what, f.slope,
                                                              f.slope_interval.lower, f.slope_interval.upper, centre, tolerance,
                                                              margin_text(b.margin))});
  }
  cli.write_table(fits, kConfirmFitsTable);
  const Judgement j = judge_timed_parts(parts);
  return correction_row("R8.c", j.verdict, j.observed, cli.evidence_path(kConfirmTable),
                        fmt::format("confirming sweep at d = {}, d_k = {} (confirming seed; median CPU times of {} interleaved "
                                    "rounds in {}, fits in {}): {}",
                                    d, dk, kTimedRounds, kConfirmMediansTable, kConfirmFitsTable, j.note));
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_qk_attention_cost", "R8: cost of attention through the S_w reparameterization vs n (seed 000)",
                    GivenKind::qk_weights);
  cli.split_measurement();
  // On given weights the sweep forms the n x n scores and attention at its largest n, from an n x d X.
  cli.given_memory_need([&cli](const GivenInputs&) {
    const Shape shape = sweep(cli.options().quick, cli);
    const Eigen::Index n = *std::max_element(shape.ns.begin(), shape.ns.end());
    return double_matrices(2, n, n, "the scores and the attention matrix") + double_matrices(1, n, shape.d, "X");
  });
  cli.parse(argc, argv);
  const auto measure = [&](const Shard& shard) {
    measure_cost(cli, shard);
    if (!cli.uses_given()) measure_confirm(cli, shard);  // the confirming sweep draws its own weights
  };
  const auto judge = [&](const std::filesystem::path& dir) {
    std::vector<ClaimRow> rows = judge_cost(cli, dir);
    if (!cli.uses_given()) rows.push_back(judge_confirm(cli, dir));
    return rows;
  };
  return run_experiment(cli, {measure, judge});
}

}  // namespace exp_qk_attention_cost
