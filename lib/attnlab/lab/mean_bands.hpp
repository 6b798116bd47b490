// A curve's mean over replicates (seeds) with its 95% Student-t interval, as a table: the bands the report
// shades are computed once, here, by the same interval the judges use (issue 13 item 5), not re-derived by
// the report.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"

namespace attnlab {

// One row per distinct (keys..., x) of `t`, in the order each first appears there: the key and x cells as
// typed in `keys` and `x`, then `count_name` (how many rows of `t` the mean is over), "<y>_mean", lower95
// and upper95 (student_t_mean_interval at 0.95; lower95 = upper95 = the mean for a single row).
// With `keep`, only the rows r of `t` for which keep(r) is true. Throws TableReadError for a column `t` lacks or a
// cell of the wrong type, NonFiniteError for a non-finite mean or bound.
CsvTable mean_band_table(const TableReader& t, const std::vector<Column>& keys, const Column& x, const std::string& y,
                         const std::string& count_name, const std::function<bool(std::size_t)>& keep = {});

}  // namespace attnlab
