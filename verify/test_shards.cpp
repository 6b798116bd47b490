// Sharded sweeps (issue 16): Shard's blocks, TableReader, stamps and merge_shards, on made-up shards.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/quick_marker.hpp"
#include "attnlab/lab/shard.hpp"
#include "attnlab/lab/shard_merge.hpp"
#include "attnlab/lab/shard_stamp.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::ScratchDir;

TEST_CASE("Shard: the blocks of every N partition a sweep in order, and each timing sweep has one owner") {
  for (std::size_t size : {0, 1, 2, 3, 7, 64, 101})
    for (int n : {1, 2, 3, 5, 64, 200}) {
      INFO("size " << size << ", shards " << n);
      std::size_t next = 0;
      for (int i = 1; i <= n; ++i) {
        const Shard::Range r = Shard(i, n).range(size);
        CHECK(r.begin == next);  // contiguous and in shard order
        CHECK(r.end >= r.begin);
        CHECK(r.size() <= size / static_cast<std::size_t>(n) + 1);  // balanced
        next = r.end;
      }
      CHECK(next == size);
    }
  for (int n : {1, 2, 3, 7})
    for (std::size_t k = 0; k < 10; ++k) {
      int owners = 0;
      for (int i = 1; i <= n; ++i) owners += Shard(i, n).runs_whole(k) ? 1 : 0;
      CHECK(owners == 1);
    }
  CHECK(Shard().whole());
  CHECK(Shard().range(5).size() == 5);
}

TEST_CASE("Shard::range(costs): blocks of about equal cost partition a sweep in order, whatever the costs") {
  // Random and edge sweeps (sizes 0 to 3 and longer, equal and very unequal costs): the blocks are
  // contiguous, in shard order, cover the sweep, and each costs within one configuration of total / N.
  Rng rng(attnlab::testing::test_seed(16));
  std::vector<std::vector<double>> sweeps = {{}, {1.0}, {2.0, 1.0}, {1.0, 1.0, 1.0}, {1e-300, 1e300}, {5, 1, 1, 1, 1, 1}};
  for (int k = 0; k < 20; ++k) {
    std::vector<double> c(1 + static_cast<std::size_t>(rng.uniform() * 40));
    for (auto& x : c) x = std::exp(6 * rng.uniform());  // costs over more than two decades
    sweeps.push_back(c);
  }
  for (const auto& costs : sweeps)
    for (int n : {1, 2, 3, 5, 8, 64}) {
      INFO("sweep of " << costs.size() << ", shards " << n);
      double total = 0, largest = 0;
      for (double x : costs) total += x, largest = std::max(largest, x);
      std::size_t next = 0;
      for (int i = 1; i <= n; ++i) {
        const Shard s(i, n);
        const Shard::Range r = s.range(costs);
        CHECK(r.begin == next);
        CHECK(r.end >= r.begin);
        double cost = 0;
        for (std::size_t j = r.begin; j < r.end; ++j) cost += costs[j];
        CHECK(std::abs(cost - total / n) <= largest * (1 + 1e-12));
        CHECK(s.sweep_sizes() == std::vector<std::size_t>{costs.size()});
        next = r.end;
      }
      CHECK(next == costs.size());
    }
  // Equal costs cut as range(size) does, give or take the rounding of a midpoint on a boundary.
  const std::vector<double> equal(9, 3.0);
  CHECK(Shard(2, 3).range(equal).begin == 3);
  CHECK(Shard(2, 3).range(equal).end == 6);
  // The cut balances cost, not count: one heavy configuration fills a block of its own.
  const std::vector<double> heavy = {1, 1, 1, 1, 4};
  CHECK(Shard(1, 2).range(heavy).size() == 4);
  CHECK(Shard(2, 2).range(heavy).size() == 1);
  CHECK(Shard().range(heavy).size() == 5);
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    INFO(bad);
    const std::vector<double> costs = {1.0, bad};
    CHECK_THROWS_AS(Shard(1, 2).range(costs), std::invalid_argument);
  }
  const std::vector<double> huge = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  CHECK_THROWS_AS(Shard(1, 2).range(huge), std::invalid_argument);
}

TEST_CASE("Shard::parse: I/N with 1 <= I <= N, anything else refused with the text named") {
  CHECK(Shard::parse("2/3").index() == 2);
  CHECK(Shard::parse("2/3").count() == 3);
  CHECK(Shard::parse("1/1").whole());
  CHECK(Shard::parse("3/3").label() == "3/3");
  for (const char* bad : {"", "/", "1/", "/2", "0/3", "4/3", "1/0", "-1/2", "1/-2", "a/b", "1/2/3", " 1/2", "1/2 ",
                          "1.5/2", "1/100001", "99999999999/99999999999"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(Shard::parse(bad), std::invalid_argument);
  }
  CHECK_THROWS_AS(Shard(0, 1), std::invalid_argument);
}

TEST_CASE("TableReader: a CsvTable read back gives the written values bit for bit") {
  ScratchDir dir;
  CsvTable t({text_col("name"), int_col("n"), real_col("x", true)});
  const std::vector<double> xs = {0.1, 1.0 / 3.0, -0.0, 5e-324, std::numeric_limits<double>::max(), 1e-300,
                                  std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (std::size_t i = 0; i < xs.size(); ++i) t.add_row({fmt::format("a, \"b\" {}", i), static_cast<long>(i) - 3, xs[i]});
  t.add_row({"nan", 9, std::numeric_limits<double>::quiet_NaN()});
  t.write(dir.path() / "t.csv");
  const TableReader r(dir.path() / "t.csv");
  REQUIRE(r.rows() == xs.size() + 1);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    CHECK(r.text(i, "name") == fmt::format("a, \"b\" {}", i));
    CHECK(r.integer(i, "n") == static_cast<std::int64_t>(i) - 3);
    CHECK(std::signbit(r.real(i, "x")) == std::signbit(xs[i]));
    CHECK(r.real(i, "x") == xs[i]);
  }
  CHECK(std::isnan(r.real(xs.size(), "x")));
  CHECK(r.has("n"));
  CHECK(!r.has("m"));
  CHECK_THROWS_AS(r.real(0, "m"), TableReadError);        // unknown column
  CHECK_THROWS_AS(r.real(0, "name"), TableReadError);     // not a number
  CHECK_THROWS_AS(r.integer(0, "x"), TableReadError);     // 0.1 is no integer
  CHECK_THROWS_AS(r.text(xs.size() + 1, "n"), TableReadError);
  CHECK_THROWS_AS(TableReader(dir.path() / "missing.csv"), TableReadError);
  write_file_atomically(dir.path() / "ragged.csv", "a,b\n1,2\n3\n");
  CHECK_THROWS_WITH_AS(TableReader(dir.path() / "ragged.csv"), doctest::Contains("ragged.csv"), TableReadError);
}

namespace {

// A made-up experiment's shard: table "t.csv" with rows [first, first + count), stamped as shard i of n.
void write_shard(const std::filesystem::path& dir, int i, int n, int first, int count, std::uint64_t seed = 7,
                 const std::string& build = "b1", bool quick = true) {
  std::filesystem::create_directories(dir);
  CsvTable t({int_col("k"), real_col("v")});
  for (int r = first; r < first + count; ++r) t.add_row({r, r * 0.5});
  t.write(dir / "t.csv");
  if (quick) write_file_atomically(dir / kQuickMarker, kQuickMarkerText);
  ShardStamp s;
  s.experiment = "exp_made_up";
  s.shard = i;
  s.shards = n;
  s.seed = seed;
  s.quick = quick;
  s.build = build;
  s.sweeps = {5};
  s.hosts = {{i, "host", "cpu"}};
  s.tables = {{"t.csv", digest_file(dir / "t.csv")}};
  write_file_atomically(shard_stamp_path(dir, "exp_made_up"), stamp_json(s));
}

}  // namespace

TEST_CASE("stamps: written and read back; malformed ones refused naming the file") {
  ScratchDir dir;
  write_shard(dir.path() / "a", 2, 3, 0, 4, 18446744073709551615ULL);
  const ShardStamp s = read_stamp(shard_stamp_path(dir.path() / "a", "exp_made_up"));
  CHECK(!s.merged);
  CHECK(s.shard == 2);
  CHECK(s.shards == 3);
  CHECK(s.seed == 18446744073709551615ULL);  // every 64-bit seed survives the JSON
  CHECK(s.tables.size() == 1);
  CHECK(s.sweeps == std::vector<std::uint64_t>{5});
  CHECK(s.options.empty());
  CHECK_NOTHROW(check_stamped_tables(s, dir.path() / "a"));
  for (const char* bad : {"", "{}", "[1]", "{\"format\": \"attnlab-shard-9\"}",
                          "{\"format\": \"attnlab-shard-2\", \"experiment\": \"e\", \"shard\": 4, \"shards\": 3, \"seed\": \"1\", "
                          "\"quick\": true, \"build\": \"b\", \"hosts\": [], \"tables\": []}",
                          "{\"format\": \"attnlab-shard-2\", \"experiment\": \"e\", \"shard\": 1, \"shards\": 1, \"seed\": \"-1\", "
                          "\"quick\": true, \"build\": \"b\", \"hosts\": [], \"tables\": []}",
                          "{\"format\": \"attnlab-shard-2\", \"experiment\": \"e\", \"shard\": 1, \"shards\": 1, \"seed\": \"1\", "
                          "\"quick\": true, \"build\": \"b\", \"hosts\": [], \"tables\": [{\"file\": \"../x.csv\", \"bytes\": 1, \"crc32\": 1}]}"}) {
    INFO(bad);
    write_file_atomically(dir.path() / "bad.shard.json", bad);
    CHECK_THROWS_WITH_AS(read_stamp(dir.path() / "bad.shard.json"), doctest::Contains("bad.shard.json"), StampError);
  }
}

TEST_CASE("stamps: counts past an int, more shards than a run may have, and a path as the experiment are refused") {
  ScratchDir dir;
  // A shard stamp as stamp_json lays it out, with `shard`, `shards`, `experiment` and `format` replaced.
  auto stamp = [](const std::string& shard, const std::string& shards, const std::string& experiment,
                  const std::string& format = "attnlab-shard-2") {
    return fmt::format("{{\"format\": \"{}\", \"experiment\": \"{}\", \"shard\": {}, \"shards\": {}, \"seed\": \"1\", "
                       "\"quick\": true, \"build\": \"b\", \"options\": \"\", \"sweeps\": [], "
                       "\"hosts\": [{{\"shard\": {}, \"host\": \"h\", \"cpu\": \"c\"}}], \"tables\": [], \"artifacts\": []}}",
                       format, experiment, shard, shards, shard);
  };
  const auto path = dir.path() / "e.shard.json";
  auto read = [&](const std::string& text) {
    write_file_atomically(path, text);
    return read_stamp(path);
  };
  CHECK(read(stamp("2", "3", "e")).shard == 2);
  CHECK(read(stamp("1", "100000", "e")).shards == 100000);  // Shard's own bound
  // 2^32 + 2 of 2^32 + 3 once wrapped, in a 32-bit int, to shard 2 of 3.
  for (const auto& [shard, shards] : std::vector<std::pair<std::string, std::string>>{
           {"4294967298", "4294967299"}, {"2", "4294967299"}, {"1", "100001"}, {"1", "2000000000"}, {"-4294967295", "3"}}) {
    INFO(shard << " of " << shards);
    CHECK_THROWS_WITH_AS(read(stamp(shard, shards, "e")), doctest::Contains("e.shard.json: "), StampError);
  }
  // The merged stamp is written to <out>/<experiment>.merged.json: a path there would leave --out.
  for (const char* experiment : {"../../e", "sub/e", "", ".e", "/e"}) {
    INFO("experiment '" << experiment << "'");
    CHECK_THROWS_WITH_AS(read(stamp("1", "1", experiment)), doctest::Contains("is not a plain name"), StampError);
  }
  // A message quoting the file's own text stays one line.
  try {
    read(stamp("1", "1", "e", "attnlab-shard-2\\nsecond line"));
    FAIL("accepted a stamp of an unknown format");
  } catch (const StampError& e) {
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
    CHECK(std::string(e.what()).find("attnlab-shard-2\\x0asecond line") != std::string::npos);
  }
}

TEST_CASE("merge_shards: a shard stamp naming a path as its experiment writes nothing outside --out") {
  ScratchDir d;
  const auto s1 = d.path() / "in" / "s1", out = d.path() / "in" / "out";
  write_shard(s1, 1, 1, 0, 1);
  std::string text = read_text(shard_stamp_path(s1, "exp_made_up"));
  text.replace(text.find("\"exp_made_up\""), 13, "\"../../exp_made_up\"");
  write_file_atomically(shard_stamp_path(s1, "exp_made_up"), text);
  CHECK_THROWS_AS(merge_shards({s1}, out), MergeError);
  CHECK(!std::filesystem::exists(d.path() / "exp_made_up.merged.json"));
}

TEST_CASE("merge_shards: concatenates in shard order; refuses missing, duplicate, foreign and changed shards") {
  ScratchDir d;
  const auto s1 = d.path() / "s1", s2 = d.path() / "s2", s3 = d.path() / "s3", out = d.path() / "out";
  write_shard(s1, 1, 3, 0, 2);
  write_shard(s2, 2, 3, 2, 0);  // a shard with no configurations: header only
  write_shard(s3, 3, 3, 2, 3);
  const auto names = merge_shards({s3, s1, s2}, out);  // given in any order, merged in shard order
  CHECK(names == std::vector<std::string>{"exp_made_up"});
  CsvTable whole({int_col("k"), real_col("v")});
  for (int r = 0; r < 5; ++r) whole.add_row({r, r * 0.5});
  CHECK(read_text(out / "t.csv") == whole.to_csv());
  const ShardStamp m = read_stamp(merged_stamp_path(out, "exp_made_up"));
  CHECK(m.merged);
  CHECK(m.hosts.size() == 3);
  CHECK_NOTHROW(check_stamped_tables(m, out));
  CHECK(std::filesystem::exists(out / kQuickMarker));

  auto refused = [&](const std::vector<std::filesystem::path>& dirs, const std::string& named) {
    const auto fresh = d.path() / "fresh";
    CHECK_THROWS_WITH_AS(merge_shards(dirs, fresh), doctest::Contains(named.c_str()), MergeError);
    CHECK(!std::filesystem::exists(fresh));  // nothing written
  };
  refused({s1, s3}, "shard 2/3 missing");
  refused({s1, s2, s2, s3}, "given twice");
  write_shard(d.path() / "seed", 2, 3, 2, 0, 8);
  refused({s1, d.path() / "seed", s3}, "seed 8");
  write_shard(d.path() / "build", 2, 3, 2, 0, 7, "b2");
  refused({s1, d.path() / "build", s3}, "build b2");
  write_shard(d.path() / "full", 2, 3, 2, 0, 7, "b1", false);
  refused({s1, d.path() / "full", s3}, "mode full");
  write_shard(d.path() / "count", 2, 4, 2, 0);
  refused({s1, d.path() / "count", s3}, "shard count 4");
  write_shard(d.path() / "sweeps", 2, 3, 2, 0);
  {
    ShardStamp s = read_stamp(shard_stamp_path(d.path() / "sweeps", "exp_made_up"));
    s.sweeps = {5, 1};  // another version of the experiment enumerated other sweeps
    write_file_atomically(shard_stamp_path(d.path() / "sweeps", "exp_made_up"), stamp_json(s));
  }
  refused({s1, d.path() / "sweeps", s3}, "sweep sizes [5, 1]");
  write_shard(d.path() / "options", 2, 3, 2, 0);
  {
    ShardStamp s = read_stamp(shard_stamp_path(d.path() / "options", "exp_made_up"));
    s.options = "--epochs 3";  // the same sweep measured with another flag
    write_file_atomically(shard_stamp_path(d.path() / "options", "exp_made_up"), stamp_json(s));
  }
  refused({s1, d.path() / "options", s3}, "options '--epochs 3' differs from");
  // A table changed after its stamp (or a rerun killed midway that wrote a table but no stamp yet).
  write_shard(d.path() / "changed", 2, 3, 2, 0);
  write_file_atomically(d.path() / "changed" / "t.csv", "k,v\n9,9\n");
  refused({s1, d.path() / "changed", s3}, "changed or half-written");
  std::filesystem::remove(shard_stamp_path(d.path() / "changed", "exp_made_up"));
  refused({s1, d.path() / "changed", s3}, "no <experiment>.shard.json");
  refused({s1, s2, s3, d.path() / "nothing-here"}, "nothing-here: not a directory");
  CHECK_THROWS_WITH_AS(merge_shards({s1, s2, s3}, s1), doctest::Contains("one of the shard directories"), MergeError);
}

TEST_CASE("merge_shards: artifacts (checkpoints) are copied from their shard; two shards writing one are refused") {
  ScratchDir d;
  const auto s1 = d.path() / "s1", s2 = d.path() / "s2";
  write_shard(s1, 1, 2, 0, 1);
  write_shard(s2, 2, 2, 1, 1);
  auto add_artifact = [](const std::filesystem::path& dir, const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((dir / rel).parent_path());
    write_file_atomically(dir / rel, text);
    ShardStamp s = read_stamp(shard_stamp_path(dir, "exp_made_up"));
    s.artifacts.push_back({rel, digest_file(dir / rel)});
    write_file_atomically(shard_stamp_path(dir, "exp_made_up"), stamp_json(s));
  };
  add_artifact(s1, "checkpoints/a/w.npy", "one");
  add_artifact(s2, "checkpoints/b/w.npy", "two");
  merge_shards({s1, s2}, d.path() / "out");
  CHECK(read_text(d.path() / "out" / "checkpoints/a/w.npy") == "one");
  CHECK(read_text(d.path() / "out" / "checkpoints/b/w.npy") == "two");
  CHECK(read_stamp(merged_stamp_path(d.path() / "out", "exp_made_up")).artifacts.size() == 2);
  add_artifact(s2, "checkpoints/a/w.npy", "three");
  CHECK_THROWS_WITH_AS(merge_shards({s1, s2}, d.path() / "out2"), doctest::Contains("both wrote checkpoints/a/w.npy"), MergeError);
  write_file_atomically(s1 / "checkpoints/a/w.npy", "changed");
  CHECK_THROWS_WITH_AS(merge_shards({s1, s2}, d.path() / "out3"), doctest::Contains("w.npy"), MergeError);
}
