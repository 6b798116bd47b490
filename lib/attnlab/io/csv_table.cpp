// CSV tables with a fixed, typed header, exact numbers and atomic writes.
#include "attnlab/io/csv_table.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "attnlab/io/atomic_file.hpp"

namespace attnlab {

std::string format_real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // fmt's default format for double is the shortest string that round-trips.
  return fmt::format("{}", v);
}

std::string quote_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

CsvTable::CsvTable(std::vector<Column> columns) : columns_(std::move(columns)) {
  if (columns_.empty()) throw std::invalid_argument("CsvTable: a table needs at least one column");
}

namespace {

// One cell in its column's format, after checking its type and finiteness.
std::string format_cell(const Column& col, const Cell& cell) {
  const auto& v = cell.value();
  switch (col.type) {
    case ColumnType::integer:
      if (!std::holds_alternative<std::int64_t>(v))
        throw std::invalid_argument("CsvTable: column '" + col.name + "' expects an integer");
      return fmt::format("{}", std::get<std::int64_t>(v));
    case ColumnType::real: {
      double x;
      if (std::holds_alternative<double>(v)) x = std::get<double>(v);
      else if (std::holds_alternative<std::int64_t>(v)) x = static_cast<double>(std::get<std::int64_t>(v));
      else throw std::invalid_argument("CsvTable: column '" + col.name + "' expects a number");
      if (!std::isfinite(x) && !col.allow_nonfinite)
        throw NonFiniteError(fmt::format("non-finite value {} in column '{}'", format_real(x), col.name));
      return format_real(x);
    }
    case ColumnType::text:
      if (!std::holds_alternative<std::string>(v))
        throw std::invalid_argument("CsvTable: column '" + col.name + "' expects text");
      return quote_field(std::get<std::string>(v));
  }
  return {};
}

}  // namespace

void CsvTable::add_row(std::vector<Cell> row) {
  if (row.size() != columns_.size())
    throw std::invalid_argument(fmt::format("CsvTable: row has {} cells, header has {} columns",
                                            row.size(), columns_.size()));
  std::string line;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (i) line += ',';
    line += format_cell(columns_[i], row[i]);
  }
  rows_.push_back(std::move(line));
}

CsvTable CsvTable::with_column(Column column, const Cell& value) const {
  const std::string field = format_cell(column, value);
  for (const auto& c : columns_)
    if (c.name == column.name) throw std::invalid_argument("CsvTable: column '" + column.name + "' exists already");
  CsvTable out = *this;
  out.columns_.push_back(std::move(column));
  for (auto& r : out.rows_) r += ',' + field;
  return out;
}

std::string CsvTable::header_line() const {
  std::string line;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i) line += ',';
    line += quote_field(columns_[i].name);
  }
  return line;
}

std::string CsvTable::to_csv() const {
  std::string out = header_line() + '\n';
  for (const auto& r : rows_) out += r + '\n';
  return out;
}

void CsvTable::write(const std::filesystem::path& path) const { write_file_atomically(path, to_csv()); }

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool in_quotes = false, field_started = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') { field += '"'; ++i; }
        else in_quotes = false;
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') { in_quotes = true; field_started = true; }
    else if (c == ',') { row.push_back(std::move(field)); field.clear(); field_started = true; }
    else if (c == '\r') {}
    else if (c == '\n') {
      row.push_back(std::move(field));
      rows.push_back(std::move(row));
      row.clear(); field.clear(); field_started = false;
    } else { field += c; field_started = true; }
  }
  if (in_quotes) throw std::invalid_argument("parse_csv: unterminated quoted field");
  if (field_started || !row.empty()) { row.push_back(std::move(field)); rows.push_back(std::move(row)); }
  return rows;
}

std::vector<std::vector<std::string>> read_csv_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return parse_csv(ss.str());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

}  // namespace attnlab
