// Round-robin timing of several pieces of work.
#include "attnlab/lab/interleaved_timing.hpp"

#include <chrono>
#include <stdexcept>

#include "attnlab/lab/progress.hpp"

namespace attnlab {

std::vector<std::vector<double>> time_interleaved(const std::vector<std::function<void()>>& works, int rounds, bool warm_up,
                                                  Progress* progress) {
  if (works.empty()) throw std::invalid_argument("time_interleaved: no work to time");
  if (rounds < 1) throw std::invalid_argument("time_interleaved: rounds must be at least 1");
  if (warm_up) {
    for (const auto& work : works) work();
    if (progress) progress->tick();
  }
  std::vector<std::vector<double>> seconds(works.size());
  for (auto& s : seconds) s.reserve(static_cast<std::size_t>(rounds));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t w = 0; w < works.size(); ++w) {
      const auto t0 = std::chrono::steady_clock::now();
      works[w]();
      const auto t1 = std::chrono::steady_clock::now();
      seconds[w].push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    if (progress) progress->tick();
  }
  return seconds;
}

std::vector<Column> timed_run_columns(std::vector<Column> keys) {
  keys.push_back(int_col("round"));
  keys.push_back(real_col("seconds"));
  return keys;
}

void add_timed_runs(CsvTable& table, const std::vector<Cell>& keys, const std::vector<double>& seconds) {
  for (std::size_t r = 0; r < seconds.size(); ++r) {
    std::vector<Cell> row = keys;
    row.emplace_back(static_cast<long long>(r + 1));
    row.emplace_back(seconds[r]);
    table.add_row(std::move(row));
  }
}

}  // namespace attnlab
