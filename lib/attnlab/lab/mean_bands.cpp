// Means over replicates with their Student-t intervals, as a table.
#include "attnlab/lab/mean_bands.hpp"

#include <map>

#include "attnlab/lab/mean_interval.hpp"

namespace attnlab {

namespace {

Cell typed_cell(const TableReader& t, std::size_t row, const Column& c) {
  switch (c.type) {
    case ColumnType::integer: return Cell(static_cast<long long>(t.integer(row, c.name)));
    case ColumnType::real: return Cell(t.real(row, c.name));
    case ColumnType::text: break;
  }
  return Cell(t.text(row, c.name));
}

}  // namespace

CsvTable mean_band_table(const TableReader& t, const std::vector<Column>& keys, const Column& x, const std::string& y,
                         const std::string& count_name, const std::function<bool(std::size_t)>& keep) {
  std::vector<Column> columns = keys;
  columns.push_back(x);
  struct Group {
    std::vector<Cell> cells;  // the keys and x, typed
    std::vector<double> values;
  };
  std::vector<Group> groups;  // first-seen order
  std::map<std::vector<std::string>, std::size_t> index;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    if (keep && !keep(r)) continue;
    std::vector<std::string> id;
    for (const Column& c : columns) id.push_back(t.text(r, c.name));
    const auto [it, inserted] = index.emplace(id, groups.size());
    if (inserted) {
      Group g;
      for (const Column& c : columns) g.cells.push_back(typed_cell(t, r, c));
      groups.push_back(std::move(g));
    }
    groups[it->second].values.push_back(t.real(r, y));
  }
  columns.insert(columns.end(), {int_col(count_name), real_col(y + "_mean"), real_col("lower95"), real_col("upper95")});
  CsvTable out(columns);
  for (Group& g : groups) {
    const MeanInterval m = student_t_mean_interval(g.values, 0.95);
    g.cells.insert(g.cells.end(), {Cell(static_cast<long long>(m.count)), m.mean, m.interval.lower, m.interval.upper});
    out.add_row(std::move(g.cells));
  }
  return out;
}

}  // namespace attnlab
