#include "attnlab/io/table_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>

namespace attnlab {

TableReader::TableReader(const std::filesystem::path& path) : path_(path) {
  std::vector<std::vector<std::string>> rows;
  try {
    rows = read_csv_file(path);
  } catch (const std::exception& e) {
    throw TableReadError(e.what());
  }
  if (rows.empty()) throw TableReadError(fmt::format("{}: empty table (no header)", path.string()));
  for (std::size_t c = 0; c < rows[0].size(); ++c)
    if (!index_.emplace(rows[0][c], c).second)
      throw TableReadError(fmt::format("{}: column '{}' appears twice in the header", path.string(), rows[0][c]));
  for (std::size_t r = 1; r < rows.size(); ++r) {
    if (rows[r].size() != rows[0].size())
      throw TableReadError(fmt::format("{}: row {} has {} fields, the header {}", path.string(), r, rows[r].size(),
                                       rows[0].size()));
    cells_.push_back(std::move(rows[r]));
  }
}

std::size_t TableReader::column_index(const std::string& column) const {
  const auto it = index_.find(column);
  if (it == index_.end()) throw TableReadError(fmt::format("{}: no column '{}'", path_.string(), column));
  return it->second;
}

const std::string& TableReader::text(std::size_t row, const std::string& column) const {
  const std::size_t c = column_index(column);
  if (row >= cells_.size())
    throw TableReadError(fmt::format("{}: row {} asked for, the table has {}", path_.string(), row + 1, cells_.size()));
  return cells_[row][c];
}

double TableReader::real(std::size_t row, const std::string& column) const {
  const std::string& s = text(row, column);
  // The spellings format_real writes for non-finite values.
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    throw TableReadError(fmt::format("{}: row {}, column '{}': '{}' is not a number", path_.string(), row + 1, column, s));
  return v;
}

std::int64_t TableReader::integer(std::size_t row, const std::string& column) const {
  const std::string& s = text(row, column);
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw TableReadError(fmt::format("{}: row {}, column '{}': '{}' is not an integer", path_.string(), row + 1, column, s));
  return v;
}

Cell TableReader::cell(std::size_t row, const Column& column) const {
  switch (column.type) {
    case ColumnType::integer: return Cell(static_cast<long long>(integer(row, column.name)));
    case ColumnType::real: return Cell(real(row, column.name));
    case ColumnType::text: break;
  }
  return Cell(text(row, column.name));
}

std::vector<std::vector<std::size_t>> TableReader::row_groups(const std::vector<std::string>& columns) const {
  std::vector<std::size_t> index;
  for (const auto& c : columns) index.push_back(column_index(c));
  std::vector<std::vector<std::size_t>> groups;  // first-seen order
  std::map<std::vector<std::string>, std::size_t> group_of;
  for (std::size_t r = 0; r < cells_.size(); ++r) {
    std::vector<std::string> key;
    for (std::size_t c : index) key.push_back(cells_[r][c]);
    const auto [it, inserted] = group_of.emplace(std::move(key), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  return groups;
}

std::vector<std::vector<std::string>> TableReader::distinct(const std::vector<std::string>& columns) const {
  std::vector<std::vector<std::string>> seen;
  for (const auto& rows : row_groups(columns)) {
    std::vector<std::string> key;
    for (const auto& c : columns) key.push_back(text(rows.front(), c));
    seen.push_back(std::move(key));
  }
  return seen;
}

std::vector<std::string> TableReader::distinct(const std::string& column) const {
  std::vector<std::string> values;
  for (auto& key : distinct(std::vector<std::string>{column})) values.push_back(std::move(key.front()));
  return values;
}

std::vector<std::int64_t> TableReader::distinct_integers(const std::string& column) const {
  // The first row of each distinct cell, parsed there (so a malformed cell is reported with its row).
  std::vector<std::int64_t> values;
  std::vector<std::string> seen;
  const std::size_t c = column_index(column);
  for (std::size_t r = 0; r < cells_.size(); ++r)
    if (std::find(seen.begin(), seen.end(), cells_[r][c]) == seen.end()) {
      seen.push_back(cells_[r][c]);
      values.push_back(integer(r, column));
    }
  return values;
}

}  // namespace attnlab
