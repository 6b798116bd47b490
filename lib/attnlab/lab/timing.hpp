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
// At most this many timed runs per configuration (bench_attention's --repeats default; the PyTorch peer's
// MAX_RUNS is its twin). 11 rather than 5 since 2026-11-27: on this shared machine a millisecond kernel's five
// runs fit inside one slow stretch of the machine (two runs that day each had one cell timed at twice its
// neighbours' time); a median of 11 outvotes a stretch shorter than half its runs, not one that lasts the whole
// configuration (0.2-1 s stretches were seen: README "Performance"); `make bench` takes about 1.5 minutes longer.
inline constexpr int kBenchMaxRuns = 11;

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
