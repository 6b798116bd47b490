// A table written by CsvTable, read back by column name: the judgement of a claim is computed from the
// tables on disk (issue 13 item 4), so a sweep measured in pieces and merged (issue 16) is judged by the
// same code as one measured whole. Reals were written in their shortest round-trip form, so the values
// read back are the doubles that were written, bit for bit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"

namespace attnlab {

// Thrown for a missing or malformed table; the message names the file (and the row and column).
struct TableReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TableReader {
 public:
  // Reads and parses `path`: a header and rows of its width. Throws TableReadError otherwise.
  explicit TableReader(const std::filesystem::path& path);

  std::size_t rows() const { return cells_.size(); }
  bool has(const std::string& column) const { return index_.count(column) > 0; }

  // The cell of `row` in `column`, as written. Each throws TableReadError naming the file, the row and
  // the column for an unknown column, a row out of range, or a cell that is not of that type
  // ("nan"/"inf"/"-inf" are reals; integers are whole decimal numbers).
  const std::string& text(std::size_t row, const std::string& column) const;
  double real(std::size_t row, const std::string& column) const;
  std::int64_t integer(std::size_t row, const std::string& column) const;
  // The cell of `row` in `column` typed as the column says (an integer, a real or a text Cell): what a judge
  // copies into a derived table's key columns. Throws as the accessors above.
  Cell cell(std::size_t row, const Column& column) const;

  // The values of `column` in the order the rows first name them, each once (a sweep's families, its
  // lengths): what a judge groups its rows by. As text, or each parsed as integer() parses it.
  std::vector<std::string> distinct(const std::string& column) const;
  std::vector<std::int64_t> distinct_integers(const std::string& column) const;
  // The same for several columns at once: each combination of their cells that occurs, in first-occurrence
  // order (one vector of cells per combination, in the order of `columns`).
  std::vector<std::vector<std::string>> distinct(const std::vector<std::string>& columns) const;
  // The rows of each of those combinations, in the same order (each group's rows in table order): what a judge
  // that summarises replicates per configuration (a mean over seeds, a median over timed runs) iterates over.
  std::vector<std::vector<std::size_t>> row_groups(const std::vector<std::string>& columns) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::size_t column_index(const std::string& column) const;
  std::filesystem::path path_;
  std::map<std::string, std::size_t> index_;
  std::vector<std::vector<std::string>> cells_;
};

}  // namespace attnlab
