// Checks of the .npy reader and writer: NumPy's own files, round trips, and every malformed file refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "attnlab/io/npy.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

const fs::path kGood = fs::path(ATTNLAB_SOURCE_DIR) / "verify" / "npy_good";
const fs::path kMalformed = fs::path(ATTNLAB_SOURCE_DIR) / "verify" / "npy_malformed";

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::span<const unsigned char> as_bytes(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// The rows of a TSV file after its header line, keyed by the first column.
std::map<std::string, std::vector<std::string>> read_tsv(const fs::path& path) {
  std::ifstream in(path);
  std::map<std::string, std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    auto cols = split(line, '\t');
    rows[cols.at(0)] = cols;
  }
  return rows;
}

std::vector<std::string> npy_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".npy") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The message of the NpyError that `f` throws, or "" (a failed check) when it throws nothing.
template <typename F>
std::string npy_error(F&& f) {
  try {
    f();
  } catch (const NpyError& e) {
    return e.what();
  }
  FAIL_CHECK("no NpyError thrown");
  return "";
}

// One line of printable ASCII (file names here are ASCII).
bool one_printable_line(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

NpyArray sample(const std::vector<std::size_t>& shape, NpyDtype dtype, Rng& rng) {
  NpyArray a{shape, dtype, {}};
  std::size_t count = 1;
  for (std::size_t s : shape) count *= s;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = std::ldexp(rng.normal(), static_cast<int>(rng.uniform() * 60) - 30);
    a.values.push_back(dtype == NpyDtype::float32 ? static_cast<double>(static_cast<float>(v)) : v);
  }
  return a;
}

}  // namespace

TEST_CASE("files written by numpy read back with the manifest's shape and exact values") {
  const auto manifest = read_tsv(kGood / "MANIFEST.tsv");
  REQUIRE(manifest.size() >= 50);
  CHECK(manifest.size() == npy_files(kGood).size());  // no fixture left out of the manifest
  for (const auto& [file, row] : manifest) {
    INFO(file);
    REQUIRE(row.size() == 7);
    const NpyArray a = read_npy(kGood / file);
    CHECK(a.dtype == (row[1] == "<f4" ? NpyDtype::float32 : NpyDtype::float64));
    std::vector<std::size_t> shape;
    for (const auto& s : split(row[5], ',')) shape.push_back(std::stoull(s));
    CHECK(a.shape == shape);
    const auto values = row[6].empty() ? std::vector<std::string>{} : split(row[6], ' ');
    REQUIRE(a.values.size() == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      // strtod, not stod: stod throws on subnormals. Bitwise: -0.0 must stay -0.0.
      const double want = std::strtod(values[i].c_str(), nullptr);
      CHECK(std::bit_cast<std::uint64_t>(a.values[i]) == std::bit_cast<std::uint64_t>(want));
    }
  }
}

TEST_CASE("our header and data bytes are identical to what numpy writes for the same array") {
  int compared = 0;
  for (const auto& [file, row] : read_tsv(kGood / "MANIFEST.tsv")) {
    if (row[4] != "1") continue;  // a hand-written header variant, not numpy's output
    INFO(file);
    const NpyArray a = read_npy(kGood / file);
    const std::string ours = format_npy(a, {.fortran_order = row[2] == "F", .major_version = std::stoi(row[3])});
    CHECK(ours == file_bytes(kGood / file));
    ++compared;
  }
  CHECK(compared >= 50);
}

TEST_CASE("round trips: float and double, C and Fortran order, 1 to 4 dimensions, empty dimensions, versions 1 to 3") {
  Rng rng(attnlab::testing::test_seed(20250311));
  const std::vector<std::vector<std::size_t>> shapes = {{1}, {7}, {0}, {3, 4}, {1, 5}, {5, 1}, {0, 4}, {4, 0}, {2, 3, 4},
                                                        {3, 0, 2}, {2, 3, 2, 3}, {1, 1, 1, 1}, {2, 0, 3, 1}};
  for (const auto dtype : {NpyDtype::float32, NpyDtype::float64})
    for (const auto& shape : shapes)
      for (const bool fortran : {false, true})
        for (const int version : {0, 1, 2, 3}) {
          const NpyArray a = sample(shape, dtype, rng);
          const std::string bytes = format_npy(a, {.fortran_order = fortran, .major_version = version});
          CAPTURE(bytes.substr(0, 128));
          CHECK(bytes.size() % 64 == (a.values.size() * (dtype == NpyDtype::float32 ? 4 : 8)) % 64);  // data 64-byte aligned
          CHECK(static_cast<int>(bytes[6]) == (version == 0 ? 1 : version));
          const NpyArray b = parse_npy(as_bytes(bytes), "round trip");
          CHECK(b.shape == a.shape);
          CHECK(b.dtype == a.dtype);
          CHECK(b.values == a.values);
        }
}

TEST_CASE("write_npy and read_npy round trip a matrix and a head stack through a file") {
  ScratchDir dir;
  Rng rng(attnlab::testing::test_seed(5));
  const Mat<double> m = gaussian_matrix<double>(4, 3, rng);
  write_npy(dir.path() / "m.npy", to_npy(m), {.fortran_order = true});
  CHECK(read_npy_matrix<double>(dir.path() / "m.npy") == m);
  HeadStack<float> s(2, 3, 4, 5);
  for (Eigen::Index h = 0; h < s.count(); ++h) s[h] = gaussian_matrix<float>(4, 5, rng);
  write_npy(dir.path() / "s.npy", to_npy(s));
  const HeadStack<float> t = read_npy_head_stack<float>(dir.path() / "s.npy");
  for (Eigen::Index h = 0; h < s.count(); ++h) CHECK(t[h] == s[h]);
  CHECK(dir.files() == std::vector<std::string>{"m.npy", "s.npy"});  // no temporary left behind
}

TEST_CASE("every file in verify/npy_malformed is listed in EXPECTED.tsv and refused with its one-line message") {
  const auto expected = read_tsv(kMalformed / "EXPECTED.tsv");
  const auto files = npy_files(kMalformed);
  REQUIRE(files.size() >= 40);
  for (const auto& file : files) CHECK_MESSAGE(expected.count(file) == 1, file, " is not in EXPECTED.tsv");
  for (const auto& [file, row] : expected) {
    INFO(file);
    REQUIRE(row.size() == 2);
    REQUIRE(fs::exists(kMalformed / file));
    const fs::path path = kMalformed / file;
    const std::string from_file = npy_error([&] { read_npy(path); });
    CHECK(from_file.rfind(path.string() + ": ", 0) == 0);
    CHECK(from_file.find(row[1]) != std::string::npos);
    CHECK(one_printable_line(from_file));
    // parse_npy on the same bytes says the same thing: read_npy's bounded reads change nothing.
    const std::string bytes = file_bytes(path);
    CHECK(npy_error([&] { parse_npy(as_bytes(bytes), path.string()); }) == from_file);
  }
}

TEST_CASE("every truncation and every single-byte change of a valid file is read or refused, never more") {
  Rng rng(attnlab::testing::test_seed(11));
  const std::string good = format_npy(sample({2, 3}, NpyDtype::float64, rng), {.fortran_order = true});
  for (std::size_t n = 0; n < good.size(); ++n) {
    const std::string cut = good.substr(0, n);
    CHECK(npy_error([&] { parse_npy(as_bytes(cut), "cut"); }).rfind("cut: ", 0) == 0);
  }
  // Header bytes only: a changed data byte is just another value.
  for (std::size_t i = 0; i < 128; ++i)
    for (const unsigned char c : {0x00, 0x0a, 0x20, 0x27, 0x28, 0x29, 0x2c, 0x2d, 0x30, 0x39, 0x5c, 0x7b, 0x7d, 0x93, 0xff}) {
      std::string changed = good;
      changed[i] = static_cast<char>(c);
      try {
        parse_npy(as_bytes(changed), "changed");
      } catch (const NpyError& e) {
        CHECK(one_printable_line(e.what()));
      }
    }
}

TEST_CASE("file names and file contents in messages are escaped to one printable line") {
  const std::string bad = "bad\nname\x1b";
  const std::string bytes = "\x93NUMPY\x01\x00\x20\x00{'descr': '<f\xff', 'fortran_order': False, 'shape': (1,), }";
  const std::string message = npy_error([&] { parse_npy(as_bytes(bytes), bad); });
  CHECK(message.rfind("bad\\x0aname\\x1b: ", 0) == 0);
  CHECK(one_printable_line(message));
}

TEST_CASE("read_npy refuses what is not a readable regular file") {
  ScratchDir dir;
  CHECK(npy_error([&] { read_npy(dir.path() / "missing.npy"); }).find("no such file") != std::string::npos);
  CHECK(npy_error([&] { read_npy(dir.path()); }).find("is a directory") != std::string::npos);
  CHECK(npy_error([&] { read_npy("/dev/null"); }).find("not a regular file") != std::string::npos);
}

TEST_CASE("format_npy refuses arrays it cannot write") {
  const NpyArray nan{{2}, NpyDtype::float64, {1.0, std::nan("")}};
  CHECK_THROWS_AS(format_npy(nan), std::invalid_argument);
  const NpyArray too_big_for_float{{1}, NpyDtype::float32, {1e300}};
  CHECK_THROWS_AS(format_npy(too_big_for_float), std::invalid_argument);
  CHECK_THROWS_AS(format_npy(NpyArray{{}, NpyDtype::float64, {1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(format_npy(NpyArray{{1, 1, 1, 1, 1}, NpyDtype::float64, {1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(format_npy(NpyArray{{2, 2}, NpyDtype::float64, {1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(format_npy(NpyArray{{1}, NpyDtype::float64, {1.0}}, {.major_version = 4}), std::invalid_argument);
  // The product of the non-zero dimensions must fit, as in numpy, even for an empty array.
  CHECK_THROWS_AS(format_npy(NpyArray{{0, std::size_t{1} << 62, 4}, NpyDtype::float64, {}}), std::invalid_argument);
}
