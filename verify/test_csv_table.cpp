// Checks of CSV tables: exact numbers, quoting, refused non-finite values, atomic writes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::ScratchDir;

TEST_CASE("reals are written in a form that reads back to the same double") {
  Rng rng(attnlab::testing::test_seed(3));
  std::vector<double> values = {0.1, 1.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 123456789.0};
  for (int i = 0; i < 1000; ++i) values.push_back(std::ldexp(rng.normal(), static_cast<int>(rng.uniform() * 200) - 100));
  for (double v : values) {
    const std::string s = format_real(v);
    INFO(s);
    // strtod, not stod: stod throws on subnormals, which are valid doubles.
    CHECK(std::strtod(s.c_str(), nullptr) == v);
  }
  CHECK(format_real(0.1) == "0.1");  // shortest form, not 0.10000000000000001
}

TEST_CASE("rows are checked against the typed header") {
  CsvTable t({text_col("name"), int_col("n"), real_col("x")});
  t.add_row({"a,b", 3, 0.5});
  t.add_row({"say \"hi\"", 4L, 2});  // an integer is accepted in a real column
  CHECK(t.to_csv() == "name,n,x\n\"a,b\",3,0.5\n\"say \"\"hi\"\"\",4,2\n");
  CHECK_THROWS_AS(t.add_row({"a", 1}), std::invalid_argument);             // too few cells
  CHECK_THROWS_AS(t.add_row({"a", 1.5, 1.0}), std::invalid_argument);      // real in an integer column
  CHECK_THROWS_AS(t.add_row({1, 1, 1.0}), std::invalid_argument);          // number in a text column
  CHECK(t.row_count() == 2);
  const auto parsed = parse_csv(t.to_csv());
  REQUIRE(parsed.size() == 3);
  CHECK(parsed[1][0] == "a,b");
  CHECK(parsed[2][0] == "say \"hi\"");
}

TEST_CASE("NaN and infinity are refused unless the column allows them") {
  CsvTable t({real_col("strict"), real_col("loose", true)});
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(t.add_row({nan, 1.0}), NonFiniteError);
  CHECK_THROWS_AS(t.add_row({-inf, 1.0}), NonFiniteError);
  t.add_row({1.0, nan});
  t.add_row({1.0, -inf});
  CHECK(t.to_csv() == "strict,loose\n1,nan\n1,-inf\n");
}

TEST_CASE("a write replaces the file whole, and a failed write leaves nothing behind") {
  ScratchDir dir;
  CsvTable t({int_col("n")});
  t.add_row({1});
  const auto path = dir.path() / "t.csv";
  t.write(path);
  CHECK(attnlab::testing::read_text(path) == "n\n1\n");
  t.add_row({2});
  t.write(path);
  CHECK(attnlab::testing::read_text(path) == "n\n1\n2\n");
  CHECK(dir.files() == std::vector<std::string>{"t.csv"});

  // A target whose parent is a regular file cannot be created: an error naming it, and
  // no temporary file anywhere.
  CHECK_THROWS_AS(t.write(path / "child.csv"), OutputError);
  // Renaming onto a directory fails after the temporary file was written: it must be removed.
  std::filesystem::create_directory(dir.path() / "occupied");
  CHECK_THROWS_AS(t.write(dir.path() / "occupied"), OutputError);
  CHECK(dir.files() == std::vector<std::string>{"t.csv"});
  CHECK(attnlab::testing::read_text(path) == "n\n1\n2\n");
}

TEST_CASE("ensure_writable_directory creates the directory and rejects a file") {
  ScratchDir dir;
  ensure_writable_directory(dir.path() / "a" / "b");
  CHECK(std::filesystem::is_directory(dir.path() / "a" / "b"));
  CHECK(std::filesystem::is_empty(dir.path() / "a" / "b"));
  std::ofstream(dir.path() / "file") << "x";
  CHECK_THROWS_AS(ensure_writable_directory(dir.path() / "file"), OutputError);
  CHECK_THROWS_AS(ensure_writable_directory(dir.path() / "file" / "sub"), OutputError);
}

TEST_CASE("the CSV parser handles quotes, empty fields and a missing final newline") {
  const auto rows = parse_csv("a,,\"x\ny\"\r\n1,2,3");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == std::vector<std::string>{"a", "", "x\ny"});
  CHECK(rows[1] == std::vector<std::string>{"1", "2", "3"});
  CHECK_THROWS_AS(parse_csv("a,\"unterminated"), std::invalid_argument);
}

TEST_CASE("with_column appends a constant column to every row, quoted like any field") {
  CsvTable t({text_col("a"), int_col("n")});
  t.add_row({"x", 1});
  t.add_row({"y", 2});
  const CsvTable w = t.with_column(text_col("inputs"), "given: wq=a.npy, wk=b.npy");
  CHECK(w.to_csv() == "a,n,inputs\nx,1,\"given: wq=a.npy, wk=b.npy\"\ny,2,\"given: wq=a.npy, wk=b.npy\"\n");
  CHECK(t.columns().size() == 2);  // the original is untouched
  CHECK_THROWS_AS(t.with_column(text_col("n"), "dup"), std::invalid_argument);
  CHECK_THROWS_AS(t.with_column(int_col("m"), "text"), std::invalid_argument);
}

TEST_CASE("TableReader::distinct and row_groups: each value (or combination) once, in the order the rows first name it") {
  ScratchDir dir;
  CsvTable t({text_col("family"), int_col("n"), real_col("error")});
  t.add_row({std::string("b"), 64, 0.5});
  t.add_row({std::string("b"), 16, 0.25});
  t.add_row({std::string("a"), 64, 0.125});
  t.add_row({std::string("b"), 64, 1.0});
  t.add_row({std::string("a"), 16, 2.0});
  t.write(dir.path() / "t.csv");
  const TableReader r(dir.path() / "t.csv");
  CHECK(r.distinct("family") == std::vector<std::string>{"b", "a"});
  CHECK(r.distinct_integers("n") == std::vector<std::int64_t>{64, 16});
  CHECK(r.distinct(std::vector<std::string>{"family", "n"}) ==
        std::vector<std::vector<std::string>>{{"b", "64"}, {"b", "16"}, {"a", "64"}, {"a", "16"}});
  // The rows of each combination, in the same order, each group's rows in table order.
  CHECK(r.row_groups({"family", "n"}) == std::vector<std::vector<std::size_t>>{{0, 3}, {1}, {2}, {4}});
  CHECK(r.row_groups({"family"}) == std::vector<std::vector<std::size_t>>{{0, 1, 3}, {2, 4}});
  CHECK_THROWS_AS(r.row_groups({"nope"}), TableReadError);
  // A cell typed by its column.
  CHECK(std::get<std::int64_t>(r.cell(1, int_col("n")).value()) == 16);
  CHECK(std::get<double>(r.cell(2, real_col("error")).value()) == 0.125);
  CHECK(std::get<std::string>(r.cell(2, text_col("family")).value()) == "a");
  CHECK_THROWS_AS(r.cell(0, int_col("family")), TableReadError);
  CHECK_THROWS_AS(r.distinct("nope"), TableReadError);
  CHECK_THROWS_AS(r.distinct_integers("family"), TableReadError);  // "b" is not an integer: named with its row
  // A table with a header and no rows has no values.
  CsvTable empty({text_col("family")});
  empty.write(dir.path() / "empty.csv");
  CHECK(TableReader(dir.path() / "empty.csv").distinct("family").empty());
}
