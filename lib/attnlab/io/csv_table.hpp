// CSV tables with a fixed, typed header, exact numbers and atomic writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attnlab {

enum class ColumnType { integer, real, text };

struct Column {
  std::string name;
  ColumnType type = ColumnType::real;
  bool allow_nonfinite = false;  // NaN/inf are refused unless a column says it may hold them
};

// Shorthands for declaring a schema: {int_col("n"), real_col("error"), text_col("family")}.
inline Column int_col(std::string name) { return {std::move(name), ColumnType::integer, false}; }
inline Column real_col(std::string name, bool allow_nonfinite = false) {
  return {std::move(name), ColumnType::real, allow_nonfinite};
}
inline Column text_col(std::string name) { return {std::move(name), ColumnType::text, false}; }

// Thrown when a non-finite number reaches a column that does not allow it.
struct NonFiniteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One value of a row; the constructors spell out which C++ types map to which column type.
class Cell {
 public:
  Cell(int v) : value_(static_cast<std::int64_t>(v)) {}
  Cell(long v) : value_(static_cast<std::int64_t>(v)) {}
  Cell(long long v) : value_(static_cast<std::int64_t>(v)) {}
  Cell(unsigned v) : value_(static_cast<std::int64_t>(v)) {}
  Cell(unsigned long v) : value_(static_cast<std::int64_t>(v)) {}
  Cell(double v) : value_(v) {}
  Cell(float v) : value_(static_cast<double>(v)) {}
  Cell(std::string v) : value_(std::move(v)) {}
  Cell(const char* v) : value_(std::string(v)) {}
  Cell(bool v) : value_(std::string(v ? "true" : "false")) {}

  const std::variant<std::int64_t, double, std::string>& value() const { return value_; }

 private:
  std::variant<std::int64_t, double, std::string> value_;
};

// A table whose header is fixed at construction. Reals are written in the shortest
// form that reads back to the same double, so a table is an exact record.
class CsvTable {
 public:
  explicit CsvTable(std::vector<Column> columns);

  // Appends a row after checking its width and types; an integer is accepted in a
  // real column. Throws std::invalid_argument on a schema mismatch and
  // NonFiniteError on a NaN or infinity in a column that does not allow it.
  void add_row(std::vector<Cell> row);

  // A copy with `column` appended, holding `value` in every row (a run's context, such
  // as which inputs it used). Throws as add_row does, or on a name the table has already.
  CsvTable with_column(Column column, const Cell& value) const;

  const std::vector<Column>& columns() const { return columns_; }
  std::size_t row_count() const { return rows_.size(); }
  std::string header_line() const;
  std::string to_csv() const;

  // Writes the table atomically (see write_file_atomically).
  void write(const std::filesystem::path& path) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::string> rows_;  // each row already formatted, without newline
};

// Formats a double in its shortest round-trip form ("0.1", "1e-300", "nan", "inf").
std::string format_real(double v);

// Quotes a text field when it holds a comma, quote or newline (RFC 4180).
std::string quote_field(std::string_view text);

// Parses RFC 4180 CSV text into rows of fields. Throws std::invalid_argument on an
// unterminated quote.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

// Reads and parses a CSV file; throws std::runtime_error naming the file if it cannot be read.
std::vector<std::vector<std::string>> read_csv_file(const std::filesystem::path& path);

}  // namespace attnlab
