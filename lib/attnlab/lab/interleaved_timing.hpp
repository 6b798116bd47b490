// Timing the configurations a verdict compares round-robin (A B C A B C ...), every run kept: a stretch of load
// on a shared machine then falls on all of them alike instead of on one method's repeats, and a median with its
// interval (median_interval) is computed from the runs a table records.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attnlab/io/csv_table.hpp"

namespace attnlab {

class Progress;

// The timed rounds of every timing sweep that feeds a verdict. Nine is the fewest whose 95% interval for the
// median (median_interval) leaves out both the fastest and the slowest run, [x_(2), x_(8)] (coverage 0.961):
// one round slowed by a burst of load, or one lucky round, does not reach the interval. Six rounds, the
// fewest with any 95% interval, give [min, max], which a single burst widens; every round past nine costs
// another run of the whole sweep (make results' budget).
inline constexpr int kTimedRounds = 9;

// One timed run. cpu_seconds: the process's CPU time during the run (CLOCK_PROCESS_CPUTIME_ID, user and system,
// every thread): what the computation costs, and what the verdicts use. Why not the wall clock: on a machine
// shared with more runnable processes than cores, a run waits for a CPU for whole scheduler slices, so its wall
// time measures the queue as much as the method. Measured here under a load of 9 on 2 cores, a loop of 24 ms of CPU
// took 72 ms of wall time and one of 2.4 ms took 2.4 to 10 ms, while their CPU times stayed within 2%: wall-clock
// exponents bend with the load, CPU-time exponents do not. wall_seconds (steady clock) is kept beside it.
struct TimedRun {
  double cpu_seconds = 0, wall_seconds = 0;
};

// The process's CPU time so far, in nanoseconds (CLOCK_PROCESS_CPUTIME_ID): differences of it are exact, so a
// run's seconds are written as the clock counted them.
std::int64_t process_cpu_nanoseconds();

// Runs every work once untimed, in order (unless `warm_up` is false: the caller has already run each once,
// e.g. to check its output), then `rounds` rounds, each running every work once in the order given and timing
// each run; returns runs[w][r], the run of works[w] in round r. Ticks `progress` (if given) once per round, the
// warm-up included. Throws std::invalid_argument for no works or rounds < 1.
std::vector<std::vector<TimedRun>> time_interleaved(const std::vector<std::function<void()>>& works, int rounds,
                                                    bool warm_up = true, Progress* progress = nullptr);

// The columns of a table of timed runs: `keys` (what was timed: a method, a size), then round (1-based: the
// round-robin pass the run belongs to), cpu_seconds and wall_seconds. One row per run, so that anyone can
// recompute a median and its interval from the table.
std::vector<Column> timed_run_columns(std::vector<Column> keys);

// Adds one row per run of one configuration: `keys` followed by its round, CPU and wall seconds.
void add_timed_runs(CsvTable& table, const std::vector<Cell>& keys, const std::vector<TimedRun>& runs);

}  // namespace attnlab
