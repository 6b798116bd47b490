// Bad input to an experiment: one line naming the problem, exit status 2, no file written.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

#include "support.hpp"

using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

namespace {
// Any experiment shares the command line; the smallest one keeps this fast.
constexpr const char* kCliExperiment = "exp_qk_precision";
}

TEST_CASE("bad flags give exit status 2, one line, and no output file") {
  ScratchDir dir;
  std::ofstream(dir.path() / "a-file") << "x";
  const std::string out = (dir.path() / "out").string();
  const std::vector<std::vector<std::string>> cases = {
      {"--bogus"},
      {"--seed", "abc"},
      {"--seed", "-1"},
      {"--seed", "1e3"},
      {"--threads", "0"},
      {"--threads", "1.5"},
      {"--threads", "nan"},
      {"--out", (dir.path() / "a-file").string()},
      {"--out", (dir.path() / "a-file" / "below").string()},
  };
  for (auto args : cases) {
    if (args[0] != "--out") {
      args.push_back("--out");
      args.push_back(out);
    }
    INFO("args: " << args[0] << " " << (args.size() > 1 ? args[1] : ""));
    const auto r = run_binary(kCliExperiment, args);
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find(kCliExperiment) == 0);
    CHECK((!std::filesystem::exists(out) || std::filesystem::is_empty(out)));
  }
  CHECK(dir.files() == std::vector<std::string>{"a-file"});
}

TEST_CASE("--help prints the common flags and exits 0") {
  const auto r = run_binary(kCliExperiment, {"--help"});
  CHECK(r.exit_status == 0);
  for (const char* flag : {"--seed", "--quick", "--out", "--threads"}) CHECK(r.output.find(flag) != std::string::npos);
}

TEST_CASE("a shard's stamp records the experiment's own flags, not the common ones") {
  // attnlab_merge refuses shards whose flags differ (test_shards.cpp): the stamp must carry them.
  ScratchDir dir;
  const auto out = dir.path() / "shard";
  const auto r = run_binary("exp_qk_merge", {"--quick", "--repeats", "7", "--threads", "1", "--seed", "5", "--shard",
                                              "1/2", "--out", out.string()});
  REQUIRE(r.exit_status == 0);
  std::ifstream in(out / "exp_qk_merge.shard.json");
  const std::string stamp((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(stamp);
  CHECK(stamp.find("\"options\": \"--repeats 7\",") != std::string::npos);
  CHECK(stamp.find("\"seed\": \"5\"") != std::string::npos);
}

TEST_CASE("integers are decimal: a leading zero is refused, never read as octal") {
  // CLI11 converts with base 0, where "010" is 8: the validators refuse leading zeros (cli_validators.hpp).
  ScratchDir dir;
  const std::string out = (dir.path() / "out").string();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"exp_qk_merge", "--seed", "010"},
                                               {"exp_qk_merge", "--repeats", "010"}, {"exp_qk_merge", "--threads", "01"},
                                               {"exp_vit_training", "--layers", "-01"}, {"exp_qk_merge", "--seed", "0x10"}}) {
    INFO(args[0] << " " << args[1] << " " << args[2]);
    const auto r = run_binary(args[0], {args[1], args[2], "--quick", "--out", out});
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find("'" + args[2] + "'") != std::string::npos);
    CHECK(!std::filesystem::exists(out));
  }
  // Zero itself is a plain decimal integer.
  const auto zero = run_binary("exp_qk_merge", {"--seed", "0", "--quick", "--threads", "1", "--shard", "1/2", "--out", out});
  CHECK(zero.exit_status == 0);
}

TEST_CASE("bug: a refusal found after setup (exp_vit_training --quick --batch 60000) created --out and replaced a finished run's stamp") {
  // The batch is checked against the training images only once the data set is loaded; the refusal used to come
  // after --out was created, marked quick and stamped unfinished, so a directory holding a finished run was then
  // refused by the report. Now nothing is written before the run's first file.
  ScratchDir dir;
  const std::filesystem::path fresh = dir.path() / "fresh";
  auto r = run_binary("exp_vit_training", {"--quick", "--method", "exact", "--batch", "60000", "--out", fresh.string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("--batch 60000") != std::string::npos);
  CHECK(!std::filesystem::exists(fresh));

  // A finished run keeps every byte, its stamp included.
  const std::filesystem::path done = dir.path() / "done";
  r = run_binary("exp_vit_training", {"--quick", "--method", "exact", "--threads", "2", "--out", done.string()});
  REQUIRE(r.exit_status == 0);
  std::map<std::string, std::string> before;
  for (const auto& e : std::filesystem::recursive_directory_iterator(done))
    if (e.is_regular_file()) before[e.path().string()] = attnlab::testing::read_text(e.path());
  r = run_binary("exp_vit_training", {"--quick", "--method", "exact", "--batch", "60000", "--out", done.string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  std::map<std::string, std::string> after;
  for (const auto& e : std::filesystem::recursive_directory_iterator(done))
    if (e.is_regular_file()) after[e.path().string()] = attnlab::testing::read_text(e.path());
  CHECK(after == before);
}
