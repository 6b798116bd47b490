// U14, U15: time and memory of the report's five attentions against n, and its Figure 3 grid on this CPU.
// Each method is timed in the kernel a user would run (its fast kernel where it has one, from the
// registry) with its reference kernel timed beside it (the `impl` column).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/core/head_stack.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/timing.hpp"
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
constexpr const char* median_seconds = "median_seconds";
constexpr const char* method = "method";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* n = "n";
constexpr const char* threads = "threads";
constexpr const char* workspace_bytes = "workspace_bytes";
}  // namespace col

// Method parameters: 64 landmarks as the report's runs; k and D fixed at 64 as well, so
// every approximation does O(n * 64 * d) work.
constexpr Eigen::Index kLandmarks = 64, kProjected = 64, kFeatures = 64;
// Table 1's entries are O() bounds: a measured exponent agrees with one when it exceeds
// it by at most 0.3 (cache effects and lower-order terms move exponents by a tenth or
// two); a smaller exponent agrees too.
constexpr double kExponentTolerance = 0.3;

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

// Median seconds of one kernel of a method on one input stack (its draws made beforehand, so only
// the kernel is timed); the first run is the warm-up and a check that the output is usable.
double time_method(const Method& m, Impl impl, const MethodParams& p, const MethodDraws& draws, const Stack& q,
                   const Stack& k, const Stack& v, int repeats) {
  const auto run = [&] { return run_attention(m.method, impl, q, k, v, p, draws); };
  {
    const Stack probe = run();
    for (Eigen::Index i = 0; i < probe.count(); ++i)
      if (!probe[i].allFinite())
        throw std::runtime_error(m.name() + " (" + to_string(impl) + ") produced a non-finite output at n = " +
                                 std::to_string(q.n()));
  }
  return median_seconds([&] { keep_alive(run()); }, repeats, false);
}

constexpr const char* kCountsTable = "five_attentions_cost.csv";
constexpr const char* kScalingTable = "five_attentions_scaling_timing.csv";
constexpr const char* kGridTable = "five_attentions_grid_timing.csv";

// U14's shape: one head, d = 64 (32 in --quick), n growing.
struct ScalingShape {
  Eigen::Index d;
  std::vector<Eigen::Index> ns;
};

ScalingShape scaling_shape(bool quick) {
  return {quick ? 32 : 64, quick ? std::vector<Eigen::Index>{128, 256, 512, 1024}
                                 : std::vector<Eigen::Index>{256, 512, 1024, 2048, 4096, 8192}};
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

// The two timing sweeps, each whole in one shard (timing sweep 0: U14's median times against n;
// timing sweep 1: U15's Figure 3 grid); a shard running neither writes their headers only. Both draw
// from one stream, derive_seed(seed, 0), U14 first: a shard timing the grid but not U14 replays U14's
// draws untimed, so the grid's inputs are today's.
void measure_timings(const ExperimentCli& cli, const std::vector<Method>& all, const Shard& shard) {
  const bool quick = cli.options().quick;
  const bool time_scaling = shard.runs_whole(0), time_grid = shard.runs_whole(1);
  Rng rng(derive_seed(cli.options().seed, 0));

  // 1. U14: one head, n growing: median times of every kernel.
  const ScalingShape shape = scaling_shape(quick);
  CsvTable scaling(
      {text_col(col::method), text_col(col::impl), int_col(col::n), int_col(col::d), real_col(col::median_seconds)});
  if (time_scaling || time_grid) {
    Progress p14("U14 scaling", time_scaling ? shape.ns.size() * all.size() : 0);
    for (Eigen::Index n : shape.ns) {
      const Stack q = gaussian_stack(1, 1, n, shape.d, rng), k = gaussian_stack(1, 1, n, shape.d, rng),
                  v = gaussian_stack(1, 1, n, shape.d, rng);
      const MethodParams p = params_at(n);
      for (const Method& m : all) {
        const MethodDraws draws = m.method.draw(p, n, shape.d, rng);
        if (!time_scaling) continue;
        for (Impl impl : m.impls())
          scaling.add_row({m.name(), to_string(impl), n, shape.d, time_method(m, impl, p, draws, q, k, v, quick ? 3 : 5)});
        p14.tick();
      }
    }
  }
  cli.write_table(scaling, kScalingTable);

  // 2. U15: Figure 3's grid (batch 32, heads 4, n in {128 .. 2048}, d in {32, 64}) on
  //    this CPU, every method on the same inputs; which is fastest where.
  CsvTable grid({text_col(col::method), text_col(col::impl), int_col(col::batch), int_col(col::heads), int_col(col::n),
                 int_col(col::d), int_col(col::threads), real_col(col::median_seconds), text_col(col::fastest)});
  if (time_grid) {
    const Eigen::Index batch = quick ? 2 : 32, heads = quick ? 2 : 4;
    const std::vector<Eigen::Index> grid_n = quick ? std::vector<Eigen::Index>{128, 256} : std::vector<Eigen::Index>{128, 256, 512, 768, 1024, 2048};
    const std::vector<Eigen::Index> grid_d = quick ? std::vector<Eigen::Index>{32} : std::vector<Eigen::Index>{32, 64};
    Progress p15("U15 grid", grid_n.size() * grid_d.size() * all.size());
    for (Eigen::Index d : grid_d)
      for (Eigen::Index n : grid_n) {
        const Stack q = gaussian_stack(batch, heads, n, d, rng), k = gaussian_stack(batch, heads, n, d, rng),
                    v = gaussian_stack(batch, heads, n, d, rng);
        const MethodParams p = params_at(n);
        std::vector<double> t;                              // the user's kernel of each method
        std::vector<std::vector<double>> t_impl(all.size());  // every kernel timed, in impls() order
        for (std::size_t i = 0; i < all.size(); ++i) {
          const MethodDraws draws = all[i].method.draw(p, n, d, rng);
          for (Impl impl : all[i].impls()) {
            t_impl[i].push_back(time_method(all[i], impl, p, draws, q, k, v, 3));
            if (impl == all[i].user_impl()) t.push_back(t_impl[i].back());
          }
          p15.tick();
        }
        // The fastest method compares the kernels a user would run; reference rows are never "yes".
        const auto best = static_cast<std::size_t>(std::min_element(t.begin(), t.end()) - t.begin());
        for (std::size_t i = 0; i < all.size(); ++i) {
          const std::vector<Impl> impls = all[i].impls();
          for (std::size_t j = 0; j < impls.size(); ++j)
            grid.add_row({all[i].name(), to_string(impls[j]), batch, heads, n, d, cli.options().threads, t_impl[i][j],
                          i == best && impls[j] == all[i].user_impl() ? "yes" : "no"});
        }
      }
  }
  cli.write_table(grid, kGridTable);
}

// U14 from five_attentions_cost.csv (counted work and workspace) and five_attentions_scaling_timing.csv
// (the user's kernel's median times), by a rule fixed here: each method's time exponent (from timings)
// and memory exponent (from counted workspace) may exceed Table 1's by at most 0.3.
ClaimRow judge_scaling(const ExperimentCli& cli, const std::vector<Method>& all, const std::filesystem::path& dir) {
  const TableReader counts(dir / kCountsTable), scaling(dir / kScalingTable);
  std::vector<double> x;  // the lengths, in the sweep's order
  for (std::int64_t n : counts.distinct_integers(col::n)) x.push_back(static_cast<double>(n));
  std::int64_t d = 0;
  std::map<std::string, std::vector<double>> secs, work, mem;
  for (std::size_t i = 0; i < counts.rows(); ++i) {
    d = counts.integer(i, col::d);
    work[counts.text(i, col::method)].push_back(counts.real(i, col::multiply_adds));
    mem[counts.text(i, col::method)].push_back(counts.real(i, col::workspace_bytes));
  }
  for (const Method& m : all)
    for (std::size_t i = 0; i < scaling.rows(); ++i)
      if (scaling.text(i, col::method) == m.name() && scaling.text(i, col::impl) == to_string(m.user_impl()))
        secs[m.name()].push_back(scaling.real(i, col::median_seconds));
  WorstByCondition table1;
  std::string fits;
  for (const Method& m : all) {
    const std::string& name = m.name();
    const PowerLawFit t = fit_power_law(x, secs[name]);
    const PowerLawFit w = fit_power_law(x, work[name]);
    const PowerLawFit b = fit_power_law(x, mem[name]);
    table1.add(name + "_time", name + " time (Table 1: n^" + format_real(m.table1_time_exponent_n) + ")",
               t.slope - m.table1_time_exponent_n);
    table1.add(name + "_memory", name + " memory (Table 1: n^" + format_real(m.table1_memory_exponent_n) + ")",
               b.slope - m.table1_memory_exponent_n);
    fits += fmt::format("{} ({}): time ~ n^{:.2f} [{:.2f}, {:.2f}], counted work ~ n^{:.2f}, workspace ~ n^{:.2f}; ", name,
                        to_string(m.user_impl()), t.slope, t.slope_interval.lower, t.slope_interval.upper, w.slope, b.slope);
  }
  Judgement u14 = judge_by_condition(table1, kExponentTolerance);
  u14.note = (u14.note.empty() ? "" : u14.note + " ") + fits +
             fmt::format("d = {}, one head, float; each method timed in its fast kernel where it has one, the reference "
                         "beside it; timings in {}.", d, kScalingTable);
  return {"U14", u14.verdict, "max (fitted exponent in n - Table 1's exponent) over five methods, time and memory; Table 1 gives upper bounds",
          u14.observed, kExponentTolerance, cli.evidence_path(kCountsTable), u14.note};
}

// U15 from five_attentions_grid_timing.csv, fixed here: holds if a linear form is the fastest method in
// every cell; conditional if in some; fails if in none.
ClaimRow judge_grid(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader grid(dir / kGridTable);
  WorstByCondition linear_fastest;  // per cell: 0 when a linear form is fastest, 1 otherwise
  std::string fastest_list;
  std::int64_t threads = 0;  // of the run that timed the grid
  for (std::size_t i = 0; i < grid.rows(); ++i) {
    threads = grid.integer(i, col::threads);
    if (grid.text(i, col::fastest) != "yes") continue;  // one row per cell, in the grid's order
    const std::string& best = grid.text(i, col::method);
    const bool linear = best.starts_with("linear");
    linear_fastest.add(linear ? "linear" : "other", linear ? "cells where a linear form is fastest" : "cells where another method is fastest",
                       linear ? 0.0 : 1.0);
    fastest_list += fmt::format("{}(n={},d={}) ", best, grid.integer(i, col::n), grid.integer(i, col::d));
  }
  Judgement u15 = judge_by_condition(linear_fastest, 0.5);
  u15.note = (u15.note.empty() ? "" : u15.note + " ") + "fastest per cell: " + fastest_list +
             fmt::format("(CPU, float, {} threads, fast kernels where a method has one; the report measured a T4 GPU).", threads);
  return {"U15", u15.verdict, "1 if in some grid cell a method other than linear attention is fastest, else 0",
          u15.observed, 0.5, cli.evidence_path(kGridTable), u15.note};
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
  };
  const auto judge = [&](const std::filesystem::path& dir) {
    return std::vector<ClaimRow>{judge_scaling(cli, all, dir), judge_grid(cli, dir)};
  };
  return run_experiment(cli, {measure, judge});
}

}  // namespace exp_five_attentions_cost
