// U14, U15: time and memory of the report's five attentions against n, and its Figure 3 grid on this CPU.
// Each method is timed in the kernel a user would run (its fast kernel where it has one, from the
// registry) with its reference kernel timed beside it (the `impl` column).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/core/head_stack.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/fit_table.hpp"
#include "attnlab/lab/interleaved_timing.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/timed_medians.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/lab/timing_verdict.hpp"
#include "attnlab/lab/verdict.hpp"

using namespace attnlab;

namespace exp_five_attentions_cost {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* batch = "batch";
constexpr const char* d = "d";
constexpr const char* fastest = "fastest";
constexpr const char* heads = "heads";
constexpr const char* impl = "impl";
constexpr const char* linear_fastest = "linear_fastest";
constexpr const char* margin = "margin";
constexpr const char* method = "method";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* n = "n";
constexpr const char* quantity = "quantity";
constexpr const char* threads = "threads";
constexpr const char* tied = "tied";
constexpr const char* user_kernel = "user_kernel";
constexpr const char* workspace_bytes = "workspace_bytes";
}  // namespace col

// Method parameters: 64 landmarks as the report's runs; k and D fixed at 64 as well, so
// every approximation does O(n * 64 * d) work.
constexpr Eigen::Index kLandmarks = 64, kProjected = 64, kFeatures = 64;
// Table 1's entries are O() bounds: a measured exponent agrees with one when it exceeds
// it by at most 0.3 (cache effects and lower-order terms move exponents by a tenth or
// two); a smaller exponent agrees too.
constexpr double kExponentTolerance = 0.3;
// U14.c's workspace exponents in n, as its statement in corrections.tsv fixed them before its confirming run: exact
// attention n^2 (its n x n scores), every other method n; a counted exponent agrees within kExponentTolerance.
double corrected_memory_exponent(const std::string& method) { return method == "exact" ? 2 : 1; }

using Stack = HeadStack<float>;

struct Method {
  const AttentionMethod& method;    // the registry's entry: name, kernels, cost model
  double table1_time_exponent_n;    // Table 1, as an exponent of n
  double table1_memory_exponent_n;  // Table 1's memory column, as an exponent of n

  const std::string& name() const { return method.name; }
  // The kernel a user runs: the fast one where the method has one.
  Impl user_impl() const { return method.has_fast() ? Impl::fast : Impl::reference; }
  // The kernels timed: the user's, then the reference beside it.
  std::vector<Impl> impls() const {
    return method.has_fast() ? std::vector<Impl>{Impl::fast, Impl::reference} : std::vector<Impl>{Impl::reference};
  }
};

// The five methods of the report (linear attention in both forms the sources mean).
// Table 1: softmax O(d^2 n + d n^2) time, O(n d^2) memory; linear O(d^2 n), O(dn + d^2);
// Linformer O(n), O(n); random features O(nd), O(4D + 2Dd) (no n at all); Nystrom O(n), O(n).
std::vector<Method> methods() {
  return {{attention_method("exact"), 2, 1},     {attention_method("linear-shen"), 1, 1},
          {attention_method("linear-elu"), 1, 1}, {attention_method("linformer"), 1, 1},
          {attention_method("random-fourier"), 1, 0}, {attention_method("nystrom"), 1, 1}};
}

// The methods' parameters at length n: k, D and m of 64 (k and m capped at n), one E = F for Linformer.
MethodParams params_at(Eigen::Index n) {
  MethodParams p;
  p.projected = std::min(kProjected, n);
  p.share_kv = true;
  p.features = kFeatures;
  p.nystrom.landmarks = std::min(kLandmarks, n);
  return p;
}

Stack gaussian_stack(Eigen::Index batch, Eigen::Index heads, Eigen::Index n, Eigen::Index d, Rng& rng) {
  Stack s(batch, heads, n, d);
  for (Eigen::Index i = 0; i < s.count(); ++i) s[i] = gaussian_matrix<float>(n, d, rng);
  return s;
}

// One kernel of a method on one input stack (its draws made beforehand, so only the kernel is timed): what the
// sweeps time round-robin with the other kernels of their sweep (U14) or grid cell (U15).
struct TimedKernel {
  const Method* method;
  Impl impl;
  const MethodParams* params;
  const MethodDraws* draws;
  const Stack *q, *k, *v;
  Stack run() const { return run_attention(method->method, impl, *q, *k, *v, *params, *draws); }
  bool user() const { return impl == method->user_impl(); }
};

// Runs every kernel once, the warm-up, checking that its output is usable; then times them all round-robin,
// kTimedRounds rounds (A B C A B C ...: a stretch of load slows every kernel of the sweep or cell alike).
// runs[i] holds kernel i's runs, in round order.
std::vector<std::vector<TimedRun>> time_kernels(const std::vector<TimedKernel>& kernels, Progress& progress) {
  std::vector<std::function<void()>> works;
  for (const TimedKernel& t : kernels) {
    const Stack probe = t.run();
    for (Eigen::Index i = 0; i < probe.count(); ++i)
      if (!probe[i].allFinite())
        throw std::runtime_error(t.method->name() + " (" + to_string(t.impl) + ") produced a non-finite output at n = " +
                                 std::to_string(t.q->n()));
    works.push_back([&t] { keep_alive(t.run()); });
  }
  progress.tick();
  return time_interleaved(works, kTimedRounds, false, &progress);
}

constexpr const char* kCountsTable = "five_attentions_cost.csv";
constexpr const char* kScalingTable = "five_attentions_scaling_timing.csv";
constexpr const char* kGridTable = "five_attentions_grid_timing.csv";
// Written by the judges from the two tables of timed runs: each kernel's median with its 95% interval, U14's
// fitted time exponents, and U15's outcome per grid cell.
constexpr const char* kScalingMediansTable = "five_attentions_scaling_medians_timing.csv";
constexpr const char* kScalingFitsTable = "five_attentions_scaling_fits_timing.csv";
constexpr const char* kGridMediansTable = "five_attentions_grid_medians_timing.csv";
constexpr const char* kGridCellsTable = "five_attentions_grid_cells_timing.csv";
// U14.c's confirming sweep (each user kernel's timed runs, with its counted workspace) and the judge's medians and fits.
constexpr const char* kConfirmTable = "five_attentions_confirm_timing.csv";
constexpr const char* kConfirmMediansTable = "five_attentions_confirm_medians_timing.csv";
constexpr const char* kConfirmFitsTable = "five_attentions_confirm_fits_timing.csv";

// The key columns of the two tables of timed runs (timed_run_columns adds round and seconds).
std::vector<Column> scaling_keys() {
  return {text_col(col::method), text_col(col::impl), text_col(col::user_kernel), int_col(col::n), int_col(col::d)};
}
std::vector<Column> grid_keys() {
  return {text_col(col::method), text_col(col::impl), text_col(col::user_kernel), int_col(col::batch), int_col(col::heads),
          int_col(col::n),       int_col(col::d),     int_col(col::threads)};
}

// U14's shape: one head, d = 64 (32 in --quick), n growing.
struct ScalingShape {
  Eigen::Index d;
  std::vector<Eigen::Index> ns;
};

ScalingShape scaling_shape(bool quick) {
  return {quick ? 32 : 64, quick ? std::vector<Eigen::Index>{128, 256, 512, 1024}
                                 : std::vector<Eigen::Index>{256, 512, 1024, 2048, 4096, 8192}};
}

// U14.c's confirming shape: a d and lengths n the main sweep does not use.
ScalingShape confirm_shape(bool quick) {
  return {quick ? 24 : 48, quick ? std::vector<Eigen::Index>{192, 384, 768, 1536}
                                 : std::vector<Eigen::Index>{384, 768, 1536, 3072, 6144}};
}
std::vector<Column> confirm_keys() {
  return {text_col(col::method), text_col(col::impl), int_col(col::n), int_col(col::d), real_col(col::workspace_bytes)};
}

// One head's inputs at one length of a scaling sweep, with each method's draws (one per method, in all's order).
struct ScalingInput {
  Stack q, k, v;
  MethodParams p;
  std::vector<MethodDraws> draws;
};

// The inputs of every length of `shape`, drawn in turn from `rng` in the sweep's order.
std::vector<ScalingInput> draw_scaling_inputs(const ScalingShape& shape, const std::vector<Method>& all, Rng& rng) {
  std::vector<ScalingInput> inputs;
  inputs.reserve(shape.ns.size());
  for (Eigen::Index n : shape.ns) {
    Stack q = gaussian_stack(1, 1, n, shape.d, rng), k = gaussian_stack(1, 1, n, shape.d, rng),
          v = gaussian_stack(1, 1, n, shape.d, rng);
    ScalingInput in{std::move(q), std::move(k), std::move(v), params_at(n), {}};
    for (const Method& m : all) in.draws.push_back(m.method.draw(in.p, n, shape.d, rng));
    inputs.push_back(std::move(in));
  }
  return inputs;
}

// U14's counted work and memory: exact functions of the shapes, so the shard's block of the
// configurations (n, method) in that nesting.
void measure_counts(const ExperimentCli& cli, const std::vector<Method>& all, const Shard& shard) {
  const ScalingShape shape = scaling_shape(cli.options().quick);
  CsvTable counts({text_col(col::method), int_col(col::n), int_col(col::d), real_col(col::multiply_adds),
                   real_col(col::workspace_bytes)});
  const Shard::Range range = shard.range(shape.ns.size() * all.size());
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const Eigen::Index n = shape.ns[i / all.size()];
    const Method& m = all[i % all.size()];
    const AttentionCost c = m.method.cost(params_at(n), n, shape.d, sizeof(float));
    counts.add_row({m.name(), n, shape.d, c.multiply_adds, c.workspace_bytes});
  }
  cli.write_table(counts, kCountsTable);
}

// The two timing sweeps, each whole in one shard (timing sweep 0: U14's times against n; timing sweep 1: U15's
// Figure 3 grid); a shard running neither writes their headers only. Both draw from one stream,
// derive_seed(seed, 0), U14 first: a shard timing the grid but not U14 draws U14's inputs untimed, so the
// grid's inputs are today's. Every timed run is a row (round and seconds); the judges take the medians.
void measure_timings(const ExperimentCli& cli, const std::vector<Method>& all, const Shard& shard) {
  const bool quick = cli.options().quick;
  const bool time_scaling = shard.runs_whole(0), time_grid = shard.runs_whole(1);
  Rng rng(derive_seed(cli.options().seed, 0));

  // 1. U14: one head, n growing: every kernel at every n, the whole sweep round-robin (its exponents compare
  //    the lengths, so a stretch of load must slow every length alike).
  const ScalingShape shape = scaling_shape(quick);
  CsvTable scaling(timed_run_columns(scaling_keys()));
  if (time_scaling || time_grid) {
    const std::vector<ScalingInput> inputs = draw_scaling_inputs(shape, all, rng);
    if (time_scaling) {
      std::vector<TimedKernel> kernels;
      for (const ScalingInput& in : inputs)
        for (std::size_t i = 0; i < all.size(); ++i)
          for (Impl impl : all[i].impls()) kernels.push_back({&all[i], impl, &in.p, &in.draws[i], &in.q, &in.k, &in.v});
      Progress p14("U14 scaling", kTimedRounds + 1);
      const auto seconds = time_kernels(kernels, p14);
      for (std::size_t j = 0; j < kernels.size(); ++j) {
        const TimedKernel& t = kernels[j];
        add_timed_runs(scaling, {t.method->name(), to_string(t.impl), t.user() ? "yes" : "no", t.q->n(), shape.d}, seconds[j]);
      }
    }
  }
  cli.write_table(scaling, kScalingTable);

  // 2. U15: Figure 3's grid (batch 32, heads 4, n in {128 .. 2048}, d in {32, 64}) on this CPU, every method
  //    on the same inputs, each cell's kernels round-robin (a cell's inputs alone fill hundreds of MB).
  CsvTable grid(timed_run_columns(grid_keys()));
  if (time_grid) {
    const Eigen::Index batch = quick ? 2 : 32, heads = quick ? 2 : 4;
    const std::vector<Eigen::Index> grid_n = quick ? std::vector<Eigen::Index>{128, 256} : std::vector<Eigen::Index>{128, 256, 512, 768, 1024, 2048};
    const std::vector<Eigen::Index> grid_d = quick ? std::vector<Eigen::Index>{32} : std::vector<Eigen::Index>{32, 64};
    Progress p15("U15 grid", grid_n.size() * grid_d.size() * (kTimedRounds + 1));
    for (Eigen::Index d : grid_d)
      for (Eigen::Index n : grid_n) {
        const Stack q = gaussian_stack(batch, heads, n, d, rng), k = gaussian_stack(batch, heads, n, d, rng),
                    v = gaussian_stack(batch, heads, n, d, rng);
        const MethodParams p = params_at(n);
        std::vector<MethodDraws> draws;
        for (const Method& m : all) draws.push_back(m.method.draw(p, n, d, rng));
        std::vector<TimedKernel> kernels;
        for (std::size_t i = 0; i < all.size(); ++i)
          for (Impl impl : all[i].impls()) kernels.push_back({&all[i], impl, &p, &draws[i], &q, &k, &v});
        const auto seconds = time_kernels(kernels, p15);
        for (std::size_t j = 0; j < kernels.size(); ++j) {
          const TimedKernel& t = kernels[j];
          add_timed_runs(grid, {t.method->name(), to_string(t.impl), t.user() ? "yes" : "no", batch, heads, n, d, cli.options().threads},
                         seconds[j]);
        }
      }
  }
  cli.write_table(grid, kGridTable);
}

// U14.c's confirming sweep (timing sweep 2), whole in one shard: one head at confirm_shape's d and lengths, inputs and
// each method's draws from one stream of the confirming seed; every method's user kernel at every length
// round-robin, kTimedRounds rounds, each with its counted workspace.
void measure_confirm(const ExperimentCli& cli, const std::vector<Method>& all, const Shard& shard) {
  CsvTable timing(timed_run_columns(confirm_keys()));
  if (shard.runs_whole(2)) {
    const ScalingShape shape = confirm_shape(cli.options().quick);
    Rng rng(derive_seed(confirming_seed(cli.options().seed), 0));
    const std::vector<ScalingInput> inputs = draw_scaling_inputs(shape, all, rng);
    std::vector<TimedKernel> kernels;
    for (const ScalingInput& in : inputs)
      for (std::size_t i = 0; i < all.size(); ++i) kernels.push_back({&all[i], all[i].user_impl(), &in.p, &in.draws[i], &in.q, &in.k, &in.v});
    Progress progress("U14.c confirming timing", kTimedRounds + 1);
    const auto seconds = time_kernels(kernels, progress);
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      const TimedKernel& t = kernels[j];
      const Eigen::Index n = t.q->n();
      add_timed_runs(timing, {t.method->name(), to_string(t.impl), n, shape.d,
                              t.method->method.cost(*t.params, n, shape.d, sizeof(float)).workspace_bytes}, seconds[j]);
    }
  }
  cli.write_table(timing, kConfirmTable);
}

// U14 from five_attentions_cost.csv (counted work and workspace) and five_attentions_scaling_timing.csv (the
// timed runs), by a rule fixed here: each method's time exponent (fitted to the medians of its user kernel's
// runs) and memory exponent (from counted workspace) may exceed Table 1's by at most 0.3. The memory exponent is
// exact; the time exponent counts only by its 95% interval: within when the whole interval is, beyond when all
// of it is, undecided when the interval contains the line (judge_intervals_by_condition's ladder, where an
// undecided method makes holds or fails inconclusive).
ClaimRow judge_scaling(const ExperimentCli& cli, const std::vector<Method>& all, const std::filesystem::path& dir) {
  const TableReader counts(dir / kCountsTable);
  const TimedMedians medians(TableReader(dir / kScalingTable), scaling_keys());
  cli.write_table(medians.table(), kScalingMediansTable);
  std::vector<double> x;  // the lengths, in the sweep's order
  for (std::int64_t n : counts.distinct_integers(col::n)) x.push_back(static_cast<double>(n));
  std::int64_t d = 0;
  std::map<std::string, std::vector<double>> work, mem;
  for (std::size_t i = 0; i < counts.rows(); ++i) {
    d = counts.integer(i, col::d);
    work[counts.text(i, col::method)].push_back(counts.real(i, col::multiply_adds));
    mem[counts.text(i, col::method)].push_back(counts.real(i, col::workspace_bytes));
  }
  CsvTable fit_table(fit_columns({text_col(col::method), text_col(col::quantity)}));
  std::vector<ConditionInterval> table1;
  std::string fits;
  std::vector<TimedOutcome> outcomes;  // each method's time and memory against Table 1's + 0.3, with margins
  for (const Method& m : all) {
    const std::string& name = m.name();
    std::vector<double> tx, secs;
    for (std::size_t i : medians.where({{col::method, name}, {col::user_kernel, "yes"}})) {
      tx.push_back(medians.real(i, col::n));
      secs.push_back(medians.time(i).median);
    }
    const PowerLawFit t = fit_power_law(tx, secs);
    const PowerLawFit w = fit_power_law(x, work[name]);
    const PowerLawFit b = fit_power_law(x, mem[name]);
    fit_table.add_row(fit_row({name, "time"}, t));
    const double t1 = m.table1_time_exponent_n, m1 = m.table1_memory_exponent_n;
    table1.push_back({name + "_time", name + " time (Table 1: n^" + format_real(t1) + ")", t.slope_interval.lower - t1,
                      t.slope_interval.upper - t1});
    // Counted, so exact: an interval of zero width.
    table1.push_back({name + "_memory", name + " memory (Table 1: n^" + format_real(m1) + ")", b.slope - m1, b.slope - m1});
    const BandJudgement time = judge_band({t.slope - t1, t.slope_interval.lower - t1, t.slope_interval.upper - t1},
                                          -std::numeric_limits<double>::infinity(), kExponentTolerance);
    const BandJudgement memory = judge_band(exact_estimate(b.slope - m1), -std::numeric_limits<double>::infinity(), kExponentTolerance);
    outcomes.push_back({name + "'s time exponent", time.outcome, time.margin});
    outcomes.push_back({name + "'s memory exponent (counted)", memory.outcome, memory.margin});
    fits += fmt::format("{} ({}): time ~ n^{:.2f} [{:.2f}, {:.2f}] (margin {}), counted work ~ n^{:.2f}, workspace ~ n^{:.2f}; ",
                        name, to_string(m.user_impl()), t.slope, t.slope_interval.lower, t.slope_interval.upper,
                        margin_text(time.margin), w.slope, b.slope);
  }
  cli.write_table(fit_table, kScalingFitsTable);
  Judgement u14 = judge_intervals_by_condition(table1, kExponentTolerance);
  u14.note = (u14.note.empty() ? "" : u14.note + " ") + fits +
             fmt::format("d = {}, one head, float; each method timed in its fast kernel where it has one, the reference "
                         "beside it, every kernel and length round-robin, {} rounds; median CPU times and their intervals in {}. {}",
                         d, kTimedRounds, kScalingMediansTable, margin_sentence(deciding_outcome(outcomes, u14.verdict)));
  return {"U14", u14.verdict,
          "max (upper 95% bound of the fitted exponent in n - Table 1's exponent) over five methods, time (timed) and "
          "memory (counted, exact); Table 1 gives upper bounds",
          u14.observed, kExponentTolerance, cli.evidence_path(kScalingTable), u14.note};
}

// U15 from five_attentions_grid_timing.csv (the timed runs), by a rule fixed here. In each grid cell the user
// kernels' medians, each with its 95% interval, decide (judge_group_fastest): the cell holds when a linear form's
// interval lies strictly below every other method's, fails when another method's lies strictly below both linear
// forms', and is a tie otherwise. Over the cells: holds if every cell holds; conditional if some hold and some
// fail; fails if every cell fails; inconclusive where ties decide it (judge_outcomes_by_condition).
ClaimRow judge_grid(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TimedMedians medians(TableReader(dir / kGridTable), grid_keys());
  cli.write_table(medians.table(), kGridMediansTable);
  const std::vector<std::string> linear = {"linear-shen", "linear-elu"};
  CsvTable cells({int_col(col::n), int_col(col::d), text_col(col::fastest), text_col(col::tied), text_col(col::linear_fastest),
                  real_col(col::margin, true)});
  std::vector<ConditionOutcome> outcomes;
  std::vector<TimedOutcome> margins;  // each cell's: the fastest linear form against the fastest other method
  std::string fastest_list;
  std::int64_t threads = 0;  // of the run that timed the grid
  std::size_t undecided_or_failing = 0;
  for (const auto& cell : medians.distinct({col::d, col::n})) {
    std::vector<NamedEstimate> user;  // the kernel a user runs of each method: the fastest compares those
    const std::vector<std::size_t> rows = medians.where({{col::d, cell[0]}, {col::n, cell[1]}, {col::user_kernel, "yes"}});
    for (std::size_t i : rows) user.push_back({medians.text(i, col::method), medians.estimate(i)});
    const std::int64_t n = medians.integer(rows.at(0), col::n), d = medians.integer(rows.at(0), col::d);
    threads = medians.integer(rows.at(0), col::threads);
    const GroupRace race = judge_group_fastest(user, linear);
    const std::string name = fmt::format("n={},d={}", n, d);
    const std::string fastest = race.candidates.size() == 1 ? race.candidates[0] : "tie";
    const std::string tied = race.candidates.size() == 1 ? "" : fmt::format("{}", fmt::join(race.candidates, " "));
    const char* linear_fastest = race.outcome == Verdict::holds ? "yes" : race.outcome == Verdict::fails ? "no" : "tie";
    cells.add_row({n, d, fastest, tied, linear_fastest, race.margin});
    std::string description = fmt::format("{} (fastest linear form [{:.3g}, {:.3g}] s, fastest other [{:.3g}, {:.3g}] s, margin {}",
                                          name, race.group_best.lower, race.group_best.upper, race.others_best.lower,
                                          race.others_best.upper, margin_text(race.margin));
    description += race.candidates.size() > 1 ? fmt::format("; tied: {})", fmt::join(race.candidates, ", ")) : ")";
    outcomes.push_back({name, description, race.outcome});
    margins.push_back({"the cell " + name, race.outcome, race.margin});
    undecided_or_failing += race.outcome != Verdict::holds;
    fastest_list += fmt::format("{}{}({}) ", fastest, tied.empty() ? "" : "[" + tied + "]", name);
  }
  cli.write_table(cells, kGridCellsTable);
  Judgement u15 = judge_outcomes_by_condition(outcomes, "The fastest methods' 95% intervals overlap (a tie)");
  u15.note = (u15.note.empty() ? "" : u15.note + " ") + "fastest per cell (a tie lists the methods that could be fastest): " +
             fastest_list +
             fmt::format("(CPU, float, {} threads, fast kernels where a method has one, each cell's kernels round-robin, {} "
                         "rounds, median CPU times with 95% intervals in {}, each cell's outcome in {}; the report measured a T4 GPU). {}",
                         threads, kTimedRounds, kGridMediansTable, kGridCellsTable, margin_sentence(deciding_outcome(margins, u15.verdict)));
  return {"U15", u15.verdict,
          "grid cells where linear attention is not separated-fastest (another method's 95% interval below both linear "
          "forms', or a tie)",
          static_cast<double>(undecided_or_failing), 0.0, cli.evidence_path(kGridTable), u15.note};
}

// U14.c from five_attentions_confirm_timing.csv, by the statement's parts (judge_timed_parts: every part must hold):
// each method's time exponent in n (fitted to the medians of its user kernel's runs) with its whole 95% interval at
// or below Table 1's + 0.3 (judge_band), and its counted workspace exponent within 0.3 of the corrected one (exact,
// so an interval of zero width: decided either way).
ClaimRow judge_confirm(const ExperimentCli& cli, const std::vector<Method>& all, const std::filesystem::path& dir) {
  const TimedMedians medians(TableReader(dir / kConfirmTable), confirm_keys());
  cli.write_table(medians.table(), kConfirmMediansTable);
  CsvTable fit_table(fit_columns({text_col(col::method), text_col(col::quantity)}));
  std::vector<TimedPart> parts;
  std::int64_t d = 0;
  const double unbounded = std::numeric_limits<double>::infinity();
  for (const Method& m : all) {
    std::vector<double> x, secs, bytes;
    for (std::size_t i : medians.where({{col::method, m.name()}})) {
      d = medians.integer(i, col::d);
      x.push_back(static_cast<double>(medians.integer(i, col::n)));
      secs.push_back(medians.time(i).median);
      bytes.push_back(medians.real(i, col::workspace_bytes));
    }
    const PowerLawFit t = fit_power_law(x, secs), b = fit_power_law(x, bytes);
    fit_table.add_row(fit_row({m.name(), "time"}, t));
    fit_table.add_row(fit_row({m.name(), "workspace"}, b));
    const double t1 = m.table1_time_exponent_n, m1 = corrected_memory_exponent(m.name());
    const BandJudgement time = judge_band({t.slope - t1, t.slope_interval.lower - t1, t.slope_interval.upper - t1}, -unbounded,
                                          kExponentTolerance);
    const BandJudgement memory = judge_band(exact_estimate(b.slope), m1 - kExponentTolerance, m1 + kExponentTolerance);
    parts.push_back({{m.name() + "'s time exponent", time.outcome, time.margin},
                     fmt::format("{} time ~ n^{:.2f} [{:.2f}, {:.2f}], at most {:g} (margin {})", m.name(), t.slope,
                                 t.slope_interval.lower, t.slope_interval.upper, t1 + kExponentTolerance, margin_text(time.margin))});
    parts.push_back({{m.name() + "'s workspace exponent (counted)", memory.outcome, memory.margin},
                     fmt::format("{} workspace ~ n^{:.2f} (counted), within {:g} of {:g}", m.name(), b.slope, kExponentTolerance, m1)});
  }
  cli.write_table(fit_table, kConfirmFitsTable);
  const Judgement j = judge_timed_parts(parts);
  return correction_row("U14.c", j.verdict, j.observed, cli.evidence_path(kConfirmTable),
                        fmt::format("confirming sweep at d = {}, one head, float, each method's user kernel (confirming seed; median "
                                    "CPU times of {} interleaved rounds in {}, fits in {}): {}",
                                    d, kTimedRounds, kConfirmMediansTable, kConfirmFitsTable, j.note));
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_five_attentions_cost", "U14, U15: time and memory of the five attentions (seed 002, Table 1 and Figure 3)");
  cli.footer("Takes no .npy inputs: it times sizes, not values (the accuracy experiments take --q --k --v).");
  cli.split_measurement();
  cli.parse(argc, argv);
  const auto all = methods();
  const auto measure = [&](const Shard& shard) {
    measure_counts(cli, all, shard);
    measure_timings(cli, all, shard);
    measure_confirm(cli, all, shard);
  };
  const auto judge = [&](const std::filesystem::path& dir) {
    return std::vector<ClaimRow>{judge_scaling(cli, all, dir), judge_grid(cli, dir), judge_confirm(cli, all, dir)};
  };
  return run_experiment(cli, {measure, judge});
}

}  // namespace exp_five_attentions_cost
