// bench_attention (issue 6): the five attentions' fast kernels timed on the report's grid and on long
// sequences, each configuration in a fresh process, beside this machine's measured sgemm rate.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "attnlab/attention/fused_attention.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/peak_rss.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "attnlab/lab/timing.hpp"
#include "gemm_rate.hpp"
#include "memory_rate.hpp"

using namespace attnlab;

namespace {

// Linformer's projected length and Nystrom's landmarks: 64, as the report's runs.
constexpr Eigen::Index kProjected = 64, kLandmarks = 64;
// The registry's methods with a fast kernel, by its names; each timed in that kernel.
const std::vector<std::string> kMethods = {"exact", "streaming", "linear-elu", "linear-shen", "linformer", "nystrom"};
// Exact attention's backward (fused_attention_backward: dQ, dK, dV from dO, out and lse), issue 17.
const std::string kBackward = "exact-backward";
// The streaming kernel writing its output over Q (fused_attention_into(q, q, k, v)): issue 17's memory
// target at the longest sequence, where Q, K, V and a separate output would be 128 MiB by themselves.
const std::string kInPlace = "streaming-inplace";
constexpr Eigen::Index kLongestN = 131072;  // the streaming kernel's longest sequence, in place
// Each configuration times as many runs as fit this budget after its warm-up (the warm-up's duration
// decides), at least 1 and at most --repeats: a 1 ms configuration is timed --repeats times, a 3 s one
// once after its warm-up, and one whose first run takes longer than the budget (25 s) is timed by that
// run alone (time_within_budget, kBenchTimingBudgetSeconds). The CSV's `repeats` and `warmed_up` say which.
// A configuration whose runs stopped at --repeats (all of them shorter than the budget together) is timed
// again in a second pass over the configurations, and the lower of its two medians counts (kBenchPasses,
// bench_second_pass_due); the CSV's `passes` and `pass_medians_s` record both.

using Stack = HeadStack<float>;

struct Config {
  std::string method;
  Eigen::Index batch = 1, heads = 1, n = 1, d = 1;

  std::string spec() const { return fmt::format("{}:{}:{}:{}:{}", method, batch, heads, n, d); }
  static Config parse(const std::string& spec) {
    Config c;
    std::istringstream in(spec);
    char sep[4];
    std::getline(in, c.method, ':');
    in >> c.batch >> sep[0] >> c.heads >> sep[1] >> c.n >> sep[2] >> c.d;
    if (!in || !in.eof() || c.batch < 1 || c.heads < 1 || c.n < 1 || c.d < 1 ||
        (std::find(kMethods.begin(), kMethods.end(), c.method) == kMethods.end() && c.method != kBackward &&
         c.method != kInPlace))
      throw std::invalid_argument("--run-one: '" + spec + "' is not METHOD:BATCH:HEADS:N:D");
    return c;
  }
};

// The report's grid (batch 32, heads 4) and long sequences with batch * heads = 1; every method
// reaches n = 32768 (the fused exact kernel holds 64 x n scores per thread, not n x n), and the streaming
// kernel alone n = 131072, writing over Q (issue 17's memory target; about 25 s a run here; with --quick at
// the longest quick n).
std::vector<Config> configurations(bool quick) {
  const Eigen::Index batch = quick ? 2 : 32, heads = quick ? 2 : 4;
  const std::vector<Eigen::Index> grid_n = quick ? std::vector<Eigen::Index>{128, 256}
                                                 : std::vector<Eigen::Index>{128, 256, 512, 768, 1024, 2048};
  const std::vector<Eigen::Index> grid_d = quick ? std::vector<Eigen::Index>{32} : std::vector<Eigen::Index>{32, 64};
  const std::vector<Eigen::Index> long_n = quick ? std::vector<Eigen::Index>{1024}
                                                 : std::vector<Eigen::Index>{4096, 8192, 16384, 32768};
  std::vector<Config> all;
  for (Eigen::Index d : grid_d)
    for (Eigen::Index n : grid_n)
      for (const auto& m : kMethods) all.push_back({m, batch, heads, n, d});
  for (Eigen::Index n : long_n)
    for (const auto& m : kMethods) all.push_back({m, 1, 1, n, 64});
  all.push_back({kInPlace, 1, 1, quick ? long_n.back() : kLongestN, 64});
  // The backward at issue 17's sizes: the grid's n >= 1024 at d 64, and long sequences up to n = 32768
  // (where O(n^2) memory would be 4 GiB a matrix).
  for (Eigen::Index n : quick ? std::vector<Eigen::Index>{256} : std::vector<Eigen::Index>{1024, 2048})
    all.push_back({kBackward, batch, heads, n, quick ? 32 : 64});
  for (Eigen::Index n : quick ? std::vector<Eigen::Index>{1024} : std::vector<Eigen::Index>{4096, 32768})
    all.push_back({kBackward, 1, 1, n, 64});
  return all;
}

// The methods' parameters at length n: the streaming kernel's key block, k and m of 64 (capped at n),
// one E = F for Linformer.
MethodParams params_at(Eigen::Index n) {
  MethodParams p;
  p.key_block = kFusedKeyBlock;
  p.projected = std::min(kProjected, n);
  p.share_kv = true;
  p.nystrom.landmarks = std::min(kLandmarks, n);
  return p;
}

// Counted floating-point operations of one head (2 per multiply-add of the registry's cost model;
// streaming counts as exact: the same products).
// The backward counts FlashAttention-2's five n x n x d products (S, dP, dV, dQ, dK), 10 n^2 d flops, the
// products fused_attention_backward does.
double counted_flops(const std::string& method, Eigen::Index n, Eigen::Index d) {
  if (method == kBackward) return 10.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(d);
  return 2 * attention_method(method == kInPlace ? "streaming" : method).cost(params_at(n), n, d, sizeof(float)).multiply_adds;
}

// The fewest bytes one head must move, the roofline's denominator: the forward reads Q, K and V and writes
// its output (4 n d floats); the backward reads Q, K, V, out, dO and lse and writes dQ, dK and dV (8 n d + n).
// Workspace and Linformer's projection (shared by the heads) are not counted, so the bound is optimistic.
double minimal_bytes(const std::string& method, Eigen::Index n, Eigen::Index d) {
  const double nd = static_cast<double>(n) * static_cast<double>(d);
  return static_cast<double>(sizeof(float)) * (method == kBackward ? 8 * nd + static_cast<double>(n) : 4 * nd);
}

// Gaussian heads, tensor `which` of the configuration seeded `seed`: head i from its own stream
// (derive_seed(seed, which * count + i)), so the heads are drawn in parallel and the numbers do not depend on
// the thread count. Why parallel: drawing the inputs was a fifth of a grid configuration's process, and the
// grid's short configurations run twice (kBenchPasses).
// Each head is filled in place, column by column as gaussian_matrix fills its result: assigning a temporary
// matrix held two copies of a head for a moment, which the configuration's peak memory counted (at b1 h1
// n 131072 the last input's temporary made the in-place forward's peak 128.4 MiB, not Q, K and V's 96).
Stack gaussian_heads(const Config& c, std::uint64_t seed, std::uint64_t which) {
  Stack s = Stack::uninitialized(c.batch, c.heads, c.n, c.d);
  const Eigen::Index count = s.count();
#pragma omp parallel for schedule(static)
  for (Eigen::Index i = 0; i < count; ++i) {
    Rng rng(derive_seed(seed, which * static_cast<std::uint64_t>(count) + static_cast<std::uint64_t>(i)));
    Mat<float>& head = s[i];
    for (Eigen::Index col = 0; col < head.cols(); ++col)
      for (Eigen::Index row = 0; row < head.rows(); ++row) head(row, col) = static_cast<float>(rng.normal());
  }
  return s;
}

// What one configuration cost, measured in its own (fresh) process.
struct Measured {
  BudgetedTiming timing;  // time_within_budget's: median seconds, runs, warm-up or not, CPU seconds and faults per run
  double peak_bytes = 0;  // peak resident memory the configuration added (inputs, workspace, outputs)
};

// One configuration, in this (fresh) process. The user and system CPU seconds and minor page faults per
// timed run are recorded beside the wall time: a wall time dominated by system time and faults is the
// allocator's, not the kernel's (issue 17: PyTorch's fresh n x n tensors are new mmaps each call).
Measured run_configuration(const Config& c, std::uint64_t seed, int repeats) {
  // The OpenMP threads (and their stacks) exist before the baseline, so they are not counted.
#pragma omp parallel
  keep_alive(c);
  const double base = current_rss_bytes().value_or(0);
  if (!reset_peak_rss()) throw std::runtime_error("cannot reset the peak resident set (/proc/self/clear_refs)");
  // The same inputs for every method at one (batch, heads, n, d), and in both passes.
  const std::uint64_t inputs_seed = derive_seed(seed, static_cast<std::uint64_t>(c.n * 4096 + c.d * 64 + c.batch));
  Stack q = gaussian_heads(c, inputs_seed, 0);  // not const: the in-place form writes over it
  const Stack k = gaussian_heads(c, inputs_seed, 1), v = gaussian_heads(c, inputs_seed, 2);
  Rng rng(derive_seed(inputs_seed, 3));  // the methods' draws
  std::function<void()> timed, check;
  // The forward: the method's fast kernel. The backward: out and lse from the fused forward (not timed), a
  // Gaussian dO, then the gradients. The first run's result is checked (finite), untimed. Each run drops
  // the previous result first, so the peak holds one result, as when each run's result was a temporary.
  Stack out, d_out;
  std::vector<Vec<float>> lse;
  std::optional<Stack> result;
  std::optional<StackGradients<float>> grads;
  std::optional<MethodDraws> draws;
  const MethodParams params = params_at(c.n);
  const AttentionMethod* method = nullptr;
  if (c.method == kBackward) {
    out = q;
    lse.resize(static_cast<std::size_t>(q.count()));
    for (Eigen::Index i = 0; i < q.count(); ++i) out[i] = fused_attention(q[i], k[i], v[i], 0, lse[static_cast<std::size_t>(i)]);
    d_out = gaussian_heads(c, inputs_seed, 4);
    timed = [&] {
      grads.reset();
      grads = fused_attention_backward(q, k, v, out, lse, d_out);
    };
    check = [&] {
      for (Eigen::Index i = 0; i < q.count(); ++i)
        if (!grads->dq[i].allFinite() || !grads->dk[i].allFinite() || !grads->dv[i].allFinite())
          throw NonFiniteError(c.method + " produced a non-finite gradient at " + c.spec());
    };
  } else if (c.method == kInPlace) {
    // Each run's queries are the previous run's output: the same arithmetic on other numbers (convex
    // combinations of V's rows, so finite and of V's scale).
    timed = [&] { fused_attention_into(q, q, k, v, params.key_block); };
    check = [&] {
      for (Eigen::Index i = 0; i < q.count(); ++i)
        if (!q[i].allFinite()) throw NonFiniteError(c.method + " produced a non-finite output at " + c.spec());
    };
  } else {
    method = &attention_method(c.method);
    draws = method->draw(params, c.n, c.d, rng);
    timed = [&] {
      result.reset();
      result = run_attention(*method, Impl::fast, q, k, v, params, *draws);
    };
    check = [&] {
      for (Eigen::Index i = 0; i < result->count(); ++i)
        if (!(*result)[i].allFinite()) throw NonFiniteError(c.method + " produced a non-finite output at " + c.spec());
    };
  }
  Measured m;
  m.timing = time_within_budget(timed, repeats, kBenchTimingBudgetSeconds, check);
  const auto peak = peak_rss_bytes();
  if (!peak) throw std::runtime_error("cannot read the peak resident set (/proc/self/status)");
  m.peak_bytes = *peak - base;
  return m;
}

// One configuration in a fresh process: its peak memory is its own, not the largest so far.
// The child gets --quick too: quick and full runs refuse each other's --out directory.
Measured run_child(const std::string& self, const Config& c, const CommonOptions& opt, int repeats) {
  std::vector<std::string> args = {"--run-one", c.spec(), "--seed", std::to_string(opt.seed), "--threads",
                                   std::to_string(opt.threads), "--repeats", std::to_string(repeats),
                                   "--out", opt.out.string()};
  if (opt.quick) args.push_back("--quick");
  const ProcessResult r = run_process(self, args, false);
  std::istringstream in(r.output);
  Measured m;
  BudgetedTiming& t = m.timing;
  int warmed_up = 0;
  if (r.exit_status != 0 ||
      !(in >> t.median_s >> t.runs >> warmed_up >> m.peak_bytes >> t.user_s >> t.sys_s >> t.minor_faults))
    throw std::runtime_error(fmt::format("configuration {} failed (exit status {})", c.spec(), r.exit_status));
  t.warmed_up = warmed_up != 0;
  return m;
}

// One timing of one configuration, with the sgemm rates measured just before and just after it.
struct Pass {
  Measured m;
  double before = 0, after = 0;
};

// Each pass times its configurations in order, the sgemm rate measured between consecutive ones (a
// configuration's "after" is the next one's "before") and in full after the last configuration of all.
// Pass 1 times every configuration; pass 2 those bench_second_pass_due names, decided by pass 1's runs.
// A row's ceiling is the better of the rates measured just before and just after it: that never raises
// a share above what either measurement gives; tools/bench_report.py flags a row whose two differ by more
// than its threshold (the machine changed under it). `end` receives the full rate measured after the last.
std::vector<std::vector<Pass>> time_passes(const std::vector<Config>& configs, const std::string& self,
                                           const CommonOptions& opt, int repeats, bench::GemmProbe& probe,
                                           const std::pair<double, double>& start, bench::GemmProbe::Library library,
                                           std::pair<double, double>& end) {
  std::vector<std::vector<Pass>> passes(configs.size());
  double before = bench::rate_of(start, library);
  std::vector<std::size_t> todo(configs.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  for (int pass = 1; pass <= kBenchPasses && !todo.empty(); ++pass) {
    Progress progress(fmt::format("bench_attention, pass {} of {}", pass, kBenchPasses), todo.size());
    std::vector<std::size_t> again;
    for (std::size_t j = 0; j < todo.size(); ++j) {
      const std::size_t i = todo[j];
      const Measured m = run_child(self, configs[i], opt, repeats);
      if (pass < kBenchPasses && bench_second_pass_due(m.timing, repeats)) again.push_back(i);
      const bool last = j + 1 == todo.size() && (pass == kBenchPasses || again.empty());
      if (last) end = bench::full_ceiling(probe, opt.quick, " at the end");
      const double after = last ? bench::rate_of(end, library) : bench::beside_rate(probe, library);
      passes[i].push_back({m, before, after});
      before = after;
      progress.tick();
    }
    todo = std::move(again);
  }
  return passes;
}

// The table's rows: for each configuration, the pass with the lower median.
void add_rows(CsvTable& table, const std::vector<Config>& configs, const std::vector<std::vector<Pass>>& passes,
              const CommonOptions& opt, bench::GemmProbe::Library library, double memory_gbs) {
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    // The pass with the lower median is the measurement, with everything measured in it (its runs, CPU
    // time, faults, peak memory, and the sgemm rate measured beside it); the first on a tie.
    const auto& ps = passes[i];
    const Pass& p = *std::min_element(ps.begin(), ps.end(),
                                      [](const Pass& x, const Pass& y) { return x.m.timing.median_s < y.m.timing.median_s; });
    std::string pass_medians;
    for (const Pass& x : ps) {
      if (!pass_medians.empty()) pass_medians += ' ';
      pass_medians += format_real(x.m.timing.median_s);
    }
    const BudgetedTiming& t = p.m.timing;
    const double gemm = std::max(p.before, p.after);  // the ceiling this row is set against
    const double flops = counted_flops(c.method, c.n, c.d) * static_cast<double>(c.batch * c.heads);
    // The roofline: no kernel doing these flops on this many bytes can beat the lower of the two ceilings.
    const double roofline = std::min(gemm, counted_flops(c.method, c.n, c.d) / minimal_bytes(c.method, c.n, c.d) * memory_gbs);
    table.add_row({c.method, "attnlab", c.batch, c.heads, c.n, c.d, opt.threads, t.median_s,
                   flops / t.median_s * 1e-9, p.m.peak_bytes / (1024.0 * 1024.0), gemm,
                   std::string(bench::library_name(library)), p.before, p.after, t.runs,
                   t.warmed_up ? 1 : 0, t.user_s, t.sys_s, t.minor_faults, memory_gbs, roofline,
                   static_cast<int>(ps.size()), pass_medians});
  }
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("bench_attention", "issue 6: fast attention kernels timed on the report's grid and long sequences");
  int repeats = kBenchMaxRuns;
  std::string one;
  cli.add_integer("--repeats", repeats,
                  fmt::format("at most this many timed runs per configuration and pass, after one warm-up (as many as fit {} s; median reported), 1 to 1000",
                              kBenchTimingBudgetSeconds),
                  1, 1000, true);
  cli.add_text("--run-one", one, "internal: time one METHOD:BATCH:HEADS:N:D here and print 'seconds runs warmed_up peak_bytes user_s sys_s minor_faults' (the last three per timed run)");
  cli.parse(argc, argv);
  Config single;
  if (!one.empty()) {
    try {
      single = Config::parse(one);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "bench_attention: {}\n", e.what());
      return kExitUsage;
    }
  }
  return run_experiment(cli.name(), [&] {
    const auto& opt = cli.options();
    if (!one.empty()) {
      const Measured m = run_configuration(single, opt.seed, repeats);
      const BudgetedTiming& t = m.timing;
      fmt::print("{} {} {} {} {} {} {}\n", format_real(t.median_s), t.runs, t.warmed_up ? 1 : 0, format_real(m.peak_bytes),
                 format_real(t.user_s), format_real(t.sys_s), format_real(t.minor_faults));
      return;
    }
    // The GEMM ceiling is measured side by side with the kernels: in full (Eigen and OpenBLAS) at the start
    // and at the end of the run, briefly between consecutive configurations, there only the library found
    // faster at the start (bench/gemm_rate.hpp's beside_rate).
    Rng rng(derive_seed(opt.seed, 1));
    bench::GemmProbe probe = bench::ceiling_probe(opt.quick, opt.threads, rng);
    const auto start = bench::full_ceiling(probe, opt.quick, " at the start");
    const double memory_gbs = bench::memory_ceiling(opt.quick, opt.threads);
    const bench::GemmProbe::Library library = bench::faster_library(start);
    CsvTable table({text_col("method"), text_col("impl"), int_col("batch"), int_col("heads"), int_col("n"), int_col("d"),
                    int_col("threads"), real_col("median_s"), real_col("gflops"), real_col("peak_mib"),
                    real_col("gemm_gflops"), text_col("gemm_library"), real_col("gemm_before_gflops"), real_col("gemm_after_gflops"),
                    int_col("repeats"), int_col("warmed_up"), real_col("user_s"), real_col("sys_s"), real_col("minor_faults"),
                    real_col("memory_gbs"), real_col("roofline_gflops"),
                    int_col("passes"), text_col("pass_medians_s")});
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const auto configs = configurations(opt.quick);
    std::pair<double, double> end{};
    const auto passes = time_passes(configs, self, opt, repeats, probe, start, library, end);
    add_rows(table, configs, passes, opt, library, memory_gbs);
    // The bandwidth once more, after every configuration (the GEMM rate's end measurement is the last row's
    // "after"): tools/bench_report.py states both ends and says when they moved apart.
    const double memory_end = bench::memory_ceiling(opt.quick, opt.threads);
    table.write(cli.output_path("bench_attention.csv"));
    CsvTable ends({text_col("when"), real_col("gemm_gflops"), real_col("eigen_gemm_gflops"),
                   real_col("openblas_gemm_gflops"), real_col("memory_gbs")});
    ends.add_row({std::string("start"), std::max(start.first, start.second), start.first, start.second, memory_gbs});
    ends.add_row({std::string("end"), std::max(end.first, end.second), end.first, end.second, memory_end});
    ends.write(cli.output_path("bench_attention_ceiling.csv"));
  });
}
