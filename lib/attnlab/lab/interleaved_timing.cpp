// Round-robin timing of several pieces of work.
#include "attnlab/lab/interleaved_timing.hpp"

#include <chrono>
#include <ctime>
#include <stdexcept>

#include "attnlab/lab/progress.hpp"

namespace attnlab {

std::int64_t process_cpu_nanoseconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) throw std::runtime_error("process_cpu_nanoseconds: clock_gettime failed");
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + static_cast<std::int64_t>(t.tv_nsec);
}

std::vector<std::vector<TimedRun>> time_interleaved(const std::vector<std::function<void()>>& works, int rounds, bool warm_up,
                                                    Progress* progress) {
  if (works.empty()) throw std::invalid_argument("time_interleaved: no work to time");
  if (rounds < 1) throw std::invalid_argument("time_interleaved: rounds must be at least 1");
  if (warm_up) {
    for (const auto& work : works) work();
    if (progress) progress->tick();
  }
  std::vector<std::vector<TimedRun>> runs(works.size());
  for (auto& r : runs) r.reserve(static_cast<std::size_t>(rounds));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t w = 0; w < works.size(); ++w) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::int64_t c0 = process_cpu_nanoseconds();
      works[w]();
      const std::int64_t c1 = process_cpu_nanoseconds();
      const auto t1 = std::chrono::steady_clock::now();
      // Whole nanoseconds divided once: the double nearest to the count, written in its shortest form.
      const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      runs[w].push_back({static_cast<double>(c1 - c0) / 1e9, static_cast<double>(wall_ns) / 1e9});
    }
    if (progress) progress->tick();
  }
  return runs;
}

std::vector<Column> timed_run_columns(std::vector<Column> keys) {
  keys.push_back(int_col("round"));
  keys.push_back(real_col("cpu_seconds"));
  keys.push_back(real_col("wall_seconds"));
  return keys;
}

void add_timed_runs(CsvTable& table, const std::vector<Cell>& keys, const std::vector<TimedRun>& runs) {
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::vector<Cell> row = keys;
    row.emplace_back(static_cast<long long>(r + 1));
    row.emplace_back(runs[r].cpu_seconds);
    row.emplace_back(runs[r].wall_seconds);
    table.add_row(std::move(row));
  }
}

}  // namespace attnlab
