// The medians of timed runs with their intervals.
#include "attnlab/lab/timed_medians.hpp"

#include <fmt/format.h>
#include <stdexcept>

#include "attnlab/lab/statistics.hpp"

namespace attnlab {

TimedMedians::TimedMedians(TableReader runs, std::vector<Column> keys) : runs_(std::move(runs)), keys_(std::move(keys)) {
  std::vector<std::string> names;
  for (const Column& c : keys_) names.push_back(c.name);
  for (const std::vector<std::size_t>& rows : runs_.row_groups(names)) {
    std::vector<double> cpu, wall;
    for (std::size_t r : rows) {
      cpu.push_back(runs_.real(r, "cpu_seconds"));
      wall.push_back(runs_.real(r, "wall_seconds"));
    }
    try {
      times_.push_back(median_interval(std::move(cpu), 0.95));
      walls_.push_back(median(std::move(wall)));
    } catch (const std::invalid_argument& e) {
      std::vector<std::string> key;
      for (const std::string& name : names) key.push_back(name + " " + runs_.text(rows.front(), name));
      throw std::invalid_argument(fmt::format("{}: {}: {}", runs_.path().string(), fmt::join(key, ", "), e.what()));
    }
    first_row_.push_back(rows.front());
  }
}

std::vector<std::size_t> TimedMedians::where(const std::vector<std::pair<std::string, std::string>>& cells) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < size(); ++i) {
    bool match = true;
    for (const auto& [column, value] : cells) match = match && text(i, column) == value;
    if (match) out.push_back(i);
  }
  return out;
}

CsvTable TimedMedians::table() const {
  std::vector<Column> columns = keys_;
  columns.insert(columns.end(), {int_col("repeats"), real_col("median_cpu_seconds"), real_col("lower95"), real_col("upper95"),
                                 real_col("median_wall_seconds")});
  CsvTable out(columns);
  for (std::size_t i = 0; i < size(); ++i) {
    std::vector<Cell> row;
    for (const Column& c : keys_) row.push_back(runs_.cell(first_row_[i], c));
    const MedianInterval& m = times_[i];
    row.insert(row.end(), {Cell(static_cast<long long>(m.count)), m.median, m.interval.lower, m.interval.upper, walls_[i]});
    out.add_row(std::move(row));
  }
  return out;
}

}  // namespace attnlab
