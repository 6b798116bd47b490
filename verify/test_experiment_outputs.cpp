// What an experiment does with its output directory (issue 18): quick and full results never share a
// directory, interrupted runs leave neither temporaries nor half-written tables, seeds are never clamped.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "attnlab/lab/shard_stamp.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::run_binary;
using attnlab::testing::RunResult;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

// The quickest experiment with a ledger: a few tables and claims in well under a second.
constexpr const char* kOutputsExperiment = "exp_random_features";

std::string bin(const char* name) { return std::string(ATTNLAB_BIN_DIR) + "/" + name; }

bool one_line_naming(const RunResult& r, const std::string& what) {
  return std::count(r.output.begin(), r.output.end(), '\n') == 1 && r.output.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("a quick run refuses a directory holding a full run's ledger, and a full run a quick directory") {
  ScratchDir full, quick;
  const std::string ledger = "id,source,verdict,metric,observed,threshold,evidence,note,experiment\n";
  std::ofstream(full.path() / "claims.csv") << ledger;
  const auto r = run_binary(kOutputsExperiment, {"--quick", "--out", full.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(one_line_naming(r, "full run"));
  CHECK(read_text(full.path() / "claims.csv") == ledger);
  CHECK(full.files() == std::vector<std::string>{"claims.csv"});

  REQUIRE(run_binary(kOutputsExperiment, {"--quick", "--out", quick.path().string()}).exit_status == 0);
  CHECK(fs::exists(quick.path() / ".attnlab-quick"));
  const std::string before = read_text(quick.path() / "claims.csv");
  const auto f = run_binary(kOutputsExperiment, {"--out", quick.path().string()});
  INFO(f.output);
  CHECK(f.exit_status == 2);
  CHECK(one_line_naming(f, "--quick results"));
  CHECK(read_text(quick.path() / "claims.csv") == before);
  // A second quick run into the quick directory is fine.
  CHECK(run_binary(kOutputsExperiment, {"--quick", "--out", quick.path().string()}).exit_status == 0);
}

TEST_CASE("a quick run without --out writes quick-results, never results") {
  ScratchDir cwd;
  const ProcessResult r =
      run_process("/bin/sh", {"-c", "cd \"$0\" && exec \"$1\" --quick", cwd.path().string(), bin(kOutputsExperiment)}, true);
  INFO(r.output);
  CHECK(r.exit_status == 0);
  CHECK(fs::exists(cwd.path() / "quick-results" / "claims.csv"));
  CHECK(!fs::exists(cwd.path() / "results"));
}

TEST_CASE("seeds and counts are integers as written: never clamped, never hexadecimal or exponent forms") {
  ScratchDir out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"exp_random_features", "--seed", "18446744073709551616"},
        {"exp_random_features", "--seed", "340282366920938463463374607431768211456"},
        {"exp_random_features", "--seed", "0x10"},
        {"exp_lowrank_regression", "--starts", "1e2"},
        {"exp_lowrank_regression", "--starts", "0x10"}}) {
    INFO(args[0] << " " << args[1] << " " << args[2]);
    const auto r = run_binary(args[0], {args[1], args[2], "--quick", "--out", out.path().string()});
    INFO(r.output);
    CHECK(r.exit_status == 2);
    CHECK(one_line_naming(r, args[1]));
    CHECK(r.output.find(args[2]) != std::string::npos);
  }
  // The largest seed is accepted as itself.
  CHECK(run_binary(kOutputsExperiment, {"--seed", "18446744073709551615", "--quick", "--out", out.path().string()})
            .exit_status == 0);
}

TEST_CASE("interrupted runs leave no temporary file and no half-written table") {
  // SIGINT or SIGTERM at moments drawn from a printed seed, over and over, into one directory; then
  // every file there must be a complete table (the atomic writes) and nothing else.
  const std::uint64_t seed = attnlab::testing::test_seed(20251125);
  INFO("seed " << seed);
  Rng rng(seed);
  ScratchDir out;
  for (int i = 0, repeat = attnlab::testing::test_repeat(40); i < repeat; ++i) {
    // posix_spawn with the signals' default actions restored: a signal that arrives before exec must
    // not run the test framework's own handlers in the child.
    const std::string exe = bin(kOutputsExperiment), dir = out.path().string();
    std::vector<char*> argv = {const_cast<char*>(exe.c_str()), const_cast<char*>("--quick"),
                               const_cast<char*>("--out"), const_cast<char*>(dir.c_str()), nullptr};
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, exe.c_str(), nullptr, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    REQUIRE(rc == 0);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<long>(rng.uniform() * 400000)));
    ::kill(pid, i % 2 == 0 ? SIGINT : SIGTERM);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  for (const auto& e : fs::directory_iterator(out.path())) {
    const std::string name = e.path().filename().string();
    INFO("file " << name);
    CHECK(name.find(".tmp.") == std::string::npos);
    if (name == ".attnlab-quick" || name == ".claims.csv.lock") continue;
    if (name.ends_with(".run.json")) {  // finished or not, a whole stamp (written atomically)
      CHECK_NOTHROW(read_stamp(e.path()));
      continue;
    }
    CHECK(name.ends_with(".csv"));
    const std::string text = read_text(e.path());
    REQUIRE(!text.empty());
    CHECK(text.back() == '\n');
    const auto rows = read_csv_file(e.path());
    REQUIRE(rows.size() >= 2);
    for (const auto& row : rows) CHECK(row.size() == rows[0].size());
  }
}

TEST_CASE("a temporary left by a killed process is removed by the next run; a live one is kept") {
  ScratchDir out;
  // A pid that has certainly ended: a child that exited and was reaped.
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  const fs::path stale = out.path() / (".table.csv.tmp." + std::to_string(dead) + ".AbC123");
  const fs::path live = out.path() / (".table.csv.tmp." + std::to_string(::getpid()) + ".XyZ789");
  const fs::path other = out.path() / ".notes.tmp.txt";
  for (const fs::path& p : {stale, live, other}) std::ofstream(p) << "partial";
  REQUIRE(run_binary(kOutputsExperiment, {"--quick", "--out", out.path().string()}).exit_status == 0);
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
}

TEST_CASE("--family with given inputs is refused, not ignored") {
  ScratchDir dir;
  const Mat<double> x = Mat<double>::Constant(6, 3, 0.25);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(dir.path() / name, to_npy(x));
  const fs::path out = dir.path() / "out";
  const auto r = run_binary(kOutputsExperiment, {"--q", (dir.path() / "q.npy").string(), "--k", (dir.path() / "k.npy").string(),
                                          "--v", (dir.path() / "v.npy").string(), "--family", "gaussian", "--quick",
                                          "--out", out.string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(one_line_naming(r, "--family"));
  CHECK(!fs::exists(out / "claims.csv"));
}

TEST_CASE("valid but degenerate given inputs: defined values or one line naming the input, never an internal column") {
  ScratchDir dir;
  Rng rng(attnlab::testing::test_seed(11));
  write_npy(dir.path() / "zero.npy", to_npy(Mat<double>(Mat<double>::Zero(8, 4))));
  write_npy(dir.path() / "tiny_x.npy", to_npy(Mat<double>(1e-300 * gaussian_matrix(8, 4, rng))));
  write_npy(dir.path() / "b.npy", to_npy(gaussian_matrix(8, 8, rng)));
  const std::string zero = (dir.path() / "zero.npy").string();
  // Zero W_Q and W_K: the scores are exactly zero on every route, so the errors are 0 (the identity
  // holds exactly) and a relative change away from zero scores is 0 or infinite, not 0/0.
  for (const char* name : {"exp_qk_precision", "exp_param_growth"}) {
    INFO(name);
    const fs::path out = dir.path() / name;
    const auto r = run_binary(name, {"--wq", zero, "--wk", zero, "--out", out.string()});
    INFO(r.output);
    CHECK(r.exit_status == 0);
    CHECK(r.output.find("non-finite") == std::string::npos);
  }
  // X = 1e-300 N: Z* overflows double; refused as bad input, naming --x.
  const auto r = run_binary("exp_lowrank_regression", {"--x", (dir.path() / "tiny_x.npy").string(), "--b",
                                                       (dir.path() / "b.npy").string(), "--out",
                                                       (dir.path() / "lr").string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(one_line_naming(r, "--x"));
  CHECK(!fs::exists(dir.path() / "lr" / "lowrank_regression.csv"));
}

TEST_CASE("--help reads as a person writes it: type names, ranges and defaults in words, the families listed") {
  for (const char* exe : {kOutputsExperiment, "exp_nystrom", "exp_vit_training", "attend"}) {
    const auto r = run_binary(exe, {"--help"});
    INFO(exe << "\n" << r.output);
    CHECK(r.exit_status == 0);
    // CLI11's own forms, e.g. "--seed UINT:UINT=20250311" and "--threads INT:(UINT) AND (INT in [1 - 1024])".
    for (const char* machine : {":UINT", ":(UINT)", " AND ", "INT:in [", ":FAMILY", "=20250311", ":DIR"})
      CHECK(r.output.find(machine) == std::string::npos);
    CHECK(r.output.find("(default 20250311)") != std::string::npos);
    CHECK(r.output.find("1 to 1024") != std::string::npos);
  }
  const auto r = run_binary(kOutputsExperiment, {"--help"});
  for (const char* family : {"gaussian_small", "gaussian_large", "uniform", "low_rank", "local", "clustered"})
    CHECK(r.output.find(family) != std::string::npos);
}
