// The medians of a table of timed runs (lab/interleaved_timing.hpp: one row per run), each CPU time with its 95%
// order-statistic interval: what a judge of a timing claim reads, and the table the report draws the intervals
// from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/median_interval.hpp"
#include "attnlab/lab/timing_verdict.hpp"

namespace attnlab {

// const TimedMedians m(TableReader(dir / "x_timing.csv"), {text_col("method"), int_col("n")});
// for (std::size_t i : m.where({{"method", "exact"}})) fit(m.real(i, "n"), m.time(i).median);  // CPU seconds
class TimedMedians {
 public:
  // One configuration per distinct combination of the `keys` cells of `runs`, in first-seen order, with the
  // median of its runs' cpu_seconds and median_interval at 0.95, and the median of their wall_seconds. Throws
  // TableReadError for a column `runs` lacks or a cell of the wrong type, and std::invalid_argument naming the
  // file and the configuration when a configuration has too few runs for the interval.
  TimedMedians(TableReader runs, std::vector<Column> keys);

  std::size_t size() const { return first_row_.size(); }
  const MedianInterval& time(std::size_t i) const { return times_.at(i); }  // of the CPU seconds
  double median_wall_seconds(std::size_t i) const { return walls_.at(i); }
  Estimate estimate(std::size_t i) const { return estimate_of(time(i)); }
  // Configuration i's cell in `column` (a key, or any column constant over its runs), read from its first run.
  const std::string& text(std::size_t i, const std::string& column) const { return runs_.text(first_row_.at(i), column); }
  double real(std::size_t i, const std::string& column) const { return runs_.real(first_row_.at(i), column); }
  std::int64_t integer(std::size_t i, const std::string& column) const { return runs_.integer(first_row_.at(i), column); }

  // The configurations whose cells in the named columns read as the given text, in first-seen order.
  std::vector<std::size_t> where(const std::vector<std::pair<std::string, std::string>>& cells) const;
  // The distinct combinations of these columns' cells, in first-seen order (TableReader::distinct of the runs).
  std::vector<std::vector<std::string>> distinct(const std::vector<std::string>& columns) const { return runs_.distinct(columns); }

  // The keys, then repeats (the runs), median_cpu_seconds, lower95 and upper95 (its interval), and
  // median_wall_seconds: one row per configuration.
  CsvTable table() const;
  const std::filesystem::path& path() const { return runs_.path(); }

 private:
  TableReader runs_;
  std::vector<Column> keys_;
  std::vector<std::size_t> first_row_;
  std::vector<MedianInterval> times_;
  std::vector<double> walls_;
};

}  // namespace attnlab
