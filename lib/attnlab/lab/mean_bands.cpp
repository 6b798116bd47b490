// Means over replicates with their Student-t intervals, as a table.
#include "attnlab/lab/mean_bands.hpp"

#include <algorithm>

#include "attnlab/lab/mean_interval.hpp"

namespace attnlab {

CsvTable mean_band_table(const TableReader& t, const std::vector<Column>& keys, const Column& x, const std::string& y,
                         const std::string& count_name, const std::function<bool(std::size_t)>& keep) {
  std::vector<Column> columns = keys;
  columns.push_back(x);
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  // Each combination's kept rows, in the order its first kept row appears.
  std::vector<std::vector<std::size_t>> groups;
  for (std::vector<std::size_t>& rows : t.row_groups(names)) {
    if (keep) std::erase_if(rows, [&](std::size_t r) { return !keep(r); });
    if (!rows.empty()) groups.push_back(std::move(rows));
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  columns.insert(columns.end(), {int_col(count_name), real_col(y + "_mean"), real_col("lower95"), real_col("upper95")});
  CsvTable out(columns);
  for (const std::vector<std::size_t>& rows : groups) {
    std::vector<Cell> cells;  // the keys and x, typed
    for (std::size_t c = 0; c < names.size(); ++c) cells.push_back(t.cell(rows.front(), columns[c]));
    std::vector<double> values;
    for (std::size_t r : rows) values.push_back(t.real(r, y));
    const MeanInterval m = student_t_mean_interval(values, 0.95);
    cells.insert(cells.end(), {Cell(static_cast<long long>(m.count)), m.mean, m.interval.lower, m.interval.upper});
    out.add_row(std::move(cells));
  }
  return out;
}

}  // namespace attnlab
