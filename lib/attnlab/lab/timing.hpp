// Wall-clock timing by the median of repeated runs.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace attnlab {

// Runs `work` once to warm caches (unless `warm_up` is false: runs of seconds gain
// nothing from it), then `repeats` timed times; returns the seconds of each run.
std::vector<double> time_repeats(const std::function<void()>& work, int repeats, bool warm_up = true);

// Median seconds of `repeats` runs, after one warm-up unless `warm_up` is false.
double median_seconds(const std::function<void()>& work, int repeats, bool warm_up = true);

// What time_within_budget measured.
struct BudgetedTiming {
  double median_s = 0;    // median wall seconds of the timed runs
  int runs = 0;           // timed runs
  bool warmed_up = true;  // false: the first run took the whole budget and is the one timed run
  // Per timed run (getrusage, all threads): CPU seconds in user and kernel mode, minor page faults.
  double user_s = 0, sys_s = 0, minor_faults = 0;
};

// The benchmarks' budget per configuration (bench_attention, bench_r7; bench/bench_attention_torch.py's
// TIMING_BUDGET_S is its twin): make bench stays under 10 minutes with it.
inline constexpr double kBenchTimingBudgetSeconds = 5.0;
// At most this many timed runs per configuration and pass (bench_attention's --repeats default; the PyTorch
// peer's MAX_RUNS is its twin), in at most kBenchPasses passes.
inline constexpr int kBenchMaxRuns = 6;
// Passes over a benchmark's configurations (bench_attention and its PyTorch peer, whose PASSES is the twin).
// Why two: on this shared machine the speed drops for stretches of 0.2-1 s that steal no CPU time (contention
// from neighbours), and a millisecond kernel's runs all fit inside one: on 2026-11-27 three runs of make bench
// each had one or two cells timed at 1.6-2x their neighbours' time, with 5 and with 11 runs per configuration
// (a median outvotes a stretch shorter than half the runs, not one covering all of them). A second pass
// minutes later times such a configuration again, and the lower of the two medians is the measurement: a
// stretch would have to return at the same configuration. Which configurations get a second pass follows a
// rule fixed here (bench_second_pass_due: how long their runs took, never their shares or a target), and the
// CSV keeps both medians (pass_medians_s).
inline constexpr int kBenchPasses = 2;

// Whether a configuration timed by time_within_budget is timed again in a benchmark's second pass: when its
// runs stopped at max_runs rather than at the budget, i.e. all of them took less than the budget together
// (a stretch can cover them). A configuration whose runs filled the budget, or whose single run did, is not:
// a slow stretch moves its median little, and a second pass would double the benchmark's longest part.
inline bool bench_second_pass_due(const BudgetedTiming& t, int max_runs) { return t.warmed_up && t.runs >= max_runs; }

// Times `work` for a benchmark within a budget of about `budget_s` seconds. A first run is timed; if it
// took at least `budget_s`, it is the measurement (runs = 1, warmed_up = false): a run that long amortises
// what a warm-up would warm (caches, the first touch of its memory, thread start-up), and a second run
// would double the configuration's cost for nothing. Otherwise it was the warm-up, and
// min(max_runs, budget_s / its seconds) runs, at least 1, follow and are timed. `after_first` (if given)
// runs untimed after the first run, to check what it computed.
BudgetedTiming time_within_budget(const std::function<void()>& work, int max_runs, double budget_s,
                                  const std::function<void()>& after_first = {});

// Stops the optimiser from discarding a result whose only use is being timed.
template <typename T>
inline void keep_alive(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

}  // namespace attnlab
