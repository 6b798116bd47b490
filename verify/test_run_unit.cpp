// A run is a unit, and one directory takes several runs at once: the ledger's single writer, run stamps
// and the readers that refuse a mixed set, attnlab_merge over another run, a killed run, refusals that
// create nothing, non-finite results reported.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/lab/shard_stamp.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/vit.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::run_binary;
using attnlab::testing::RunResult;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace run_unit {

// What a claim row says, without its evidence path (a scratch directory's absolute path).
std::map<std::string, std::string> rows_of(const fs::path& dir, const std::string& experiment) {
  std::map<std::string, std::string> out;
  for (const auto& r : read_ledger(dir / "claims.csv"))
    if (r.experiment == experiment)
      out[r.id] = to_string(r.verdict) + " " + (r.observed ? std::to_string(*r.observed) : "-") + " " +
                  (r.threshold ? std::to_string(*r.threshold) : "-");
  return out;
}

std::string check_run_set_error(const fs::path& dir) {
  try {
    check_run_set(dir);
  } catch (const StampError& e) {
    return e.what();
  }
  return {};
}

// Runs two programs at once, each to the end.
std::pair<RunResult, RunResult> run_both(const std::string& a, const std::vector<std::string>& a_args, const std::string& b,
                                         const std::vector<std::string>& b_args) {
  RunResult ra, rb;
  std::thread t([&] { ra = run_binary(a, a_args); });
  rb = run_binary(b, b_args);
  t.join();
  return {ra, rb};
}

// bin/<name> started with `args`, output discarded; returns its pid.
pid_t start(const std::string& name, const std::vector<std::string>& args) {
  const std::string path = std::string(ATTNLAB_BIN_DIR) + "/" + name;
  std::vector<std::string> all = {path};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (FILE* null = std::freopen("/dev/null", "w", stdout)) (void)null;
    if (FILE* null = std::freopen("/dev/null", "w", stderr)) (void)null;
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace run_unit

TEST_CASE("bug: two experiments finishing together into one directory lost ledger rows; now every row stays (20 rounds)") {
  // exp_qk_identities and exp_param_growth, the two fastest --quick runs with ledger rows: first alone,
  // for the rows each writes at either seed, then together 20 times, into a fresh directory (each round's
  // ledger must hold both experiments' rows) and into one shared directory with the seeds alternating
  // (each experiment's rows must be those of the seed its run stamp names, and the set whole).
  const std::string a = "exp_qk_identities", b = "exp_param_growth";
  const std::vector<std::string> seeds = {"7", "8"};
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> alone;
  for (const auto& seed : seeds)
    for (const auto& e : {a, b}) {
      ScratchDir dir;
      const RunResult r = run_binary(e, {"--quick", "--threads", "1", "--seed", seed, "--out", dir.path().string()});
      INFO(r.output);
      REQUIRE(r.exit_status == 0);
      alone[{e, seed}] = run_unit::rows_of(dir.path(), e);
      REQUIRE(!alone[{e, seed}].empty());
    }
  ScratchDir shared;
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    ScratchDir fresh;
    const std::string sa = seeds[round % 2], sb = seeds[(round + 1) % 2];
    const auto [ra, rb] = run_unit::run_both(a, {"--quick", "--threads", "1", "--seed", "7", "--out", fresh.path().string()}, b,
                                             {"--quick", "--threads", "1", "--seed", "7", "--out", fresh.path().string()});
    INFO(ra.output << rb.output);
    REQUIRE(ra.exit_status == 0);
    REQUIRE(rb.exit_status == 0);
    CHECK(run_unit::rows_of(fresh.path(), a) == alone[{a, "7"}]);
    CHECK(run_unit::rows_of(fresh.path(), b) == alone[{b, "7"}]);
    CHECK(run_unit::check_run_set_error(fresh.path()).empty());

    const auto [sa_run, sb_run] = run_unit::run_both(a, {"--quick", "--threads", "1", "--seed", sa, "--out", shared.path().string()}, b,
                                                     {"--quick", "--threads", "1", "--seed", sb, "--out", shared.path().string()});
    INFO(sa_run.output << sb_run.output);
    REQUIRE(sa_run.exit_status == 0);
    REQUIRE(sb_run.exit_status == 0);
    CHECK(run_unit::rows_of(shared.path(), a) == alone[{a, sa}]);
    CHECK(run_unit::rows_of(shared.path(), b) == alone[{b, sb}]);
    CHECK(read_stamp(run_stamp_path(shared.path(), a)).seed == std::stoull(sa));
    CHECK(read_stamp(run_stamp_path(shared.path(), b)).seed == std::stoull(sb));
    CHECK(run_unit::check_run_set_error(shared.path()).empty());
  }
}

TEST_CASE("bug: attnlab_merge into a directory holding another run mixed the two; now refused, or replaced whole with --replace") {
  ScratchDir dir;
  const fs::path r = dir.path() / "R";
  const std::string e = "exp_qk_precision";
  RunResult run = run_binary(e, {"--quick", "--seed", "7", "--out", r.string()});
  INFO(run.output);
  REQUIRE(run.exit_status == 0);
  REQUIRE(fs::exists(r / "claims.csv"));
  std::vector<std::string> merge = {"--out", r.string()};
  for (const char* shard : {"1/2", "2/2"}) {
    const fs::path s = dir.path() / (std::string("s") + shard[0]);
    run = run_binary(e, {"--quick", "--shard", shard, "--out", s.string()});
    INFO(run.output);
    REQUIRE(run.exit_status == 0);
    merge.push_back(s.string());
  }
  const std::string ledger = read_text(r / "claims.csv");
  run = run_binary("attnlab_merge", merge);
  INFO(run.output);
  CHECK(run.exit_status == 2);
  CHECK(run.output.find("holds another run") != std::string::npos);
  CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
  CHECK(read_text(r / "claims.csv") == ledger);  // untouched
  CHECK(!fs::exists(r / (e + ".merged.json")));
  merge.insert(merge.begin(), "--replace");
  run = run_binary("attnlab_merge", merge);
  INFO(run.output);
  REQUIRE(run.exit_status == 0);
  // The old run is gone whole: no ledger, no run stamp; the merged tables and their stamp only.
  CHECK(!fs::exists(r / "claims.csv"));
  CHECK(!fs::exists(run_stamp_path(r, e)));
  CHECK(fs::exists(merged_stamp_path(r, e)));
  CHECK(read_stamp(merged_stamp_path(r, e)).seed != 7);
  run = run_binary(e, {"--judge", r.string()});
  INFO(run.output);
  CHECK(run.exit_status == 0);
  CHECK(run_unit::check_run_set_error(r).empty());
}

TEST_CASE("bug: SIGKILL during a training run left a mixed set that looked whole; now the set is the old run, the new one, or refused") {
  // A small exp_vit_training --quick (one method, a tiny model): an old run (seed 7), then a new one
  // (seed 5) killed at several points; each time the directory must be the old run whole, the new run
  // whole, or refused by the readers with the line naming what is whose.
  const std::vector<std::string> small = {"--quick", "--threads", "1", "--method", "exact", "--width", "8", "--heads", "2",
                                          "--layers", "1", "--mlp", "8"};
  const auto args = [&](const std::string& seed, const fs::path& out) {
    std::vector<std::string> a = small;
    a.insert(a.end(), {"--seed", seed, "--out", out.string()});
    return a;
  };
  ScratchDir dir;
  const fs::path d = dir.path() / "D", reference = dir.path() / "new";
  const auto started = std::chrono::steady_clock::now();
  RunResult r = run_binary("exp_vit_training", args("5", reference));
  const double whole_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  r = run_binary("exp_vit_training", args("7", d));
  REQUIRE(r.exit_status == 0);
  const ShardStamp old_stamp = read_stamp(run_stamp_path(d, "exp_vit_training"));
  const ShardStamp new_stamp = read_stamp(run_stamp_path(reference, "exp_vit_training"));
  // D's tables are those of run `s` (its timing table aside: a rerun measures other times).
  const auto tables_as = [&](const ShardStamp& s) {
    for (const auto& t : s.tables)
      if (!t.file.ends_with("_timing.csv") && (!fs::exists(d / t.file) || !(digest_file(d / t.file) == t.digest))) return false;
    return true;
  };
  int refused = 0;
  for (const double share : {0.02, 0.1, 0.3, 0.6, 0.9}) {
    INFO("killed after " << share << " of a whole run's " << whole_seconds << " s");
    const pid_t pid = run_unit::start("exp_vit_training", args("5", d));
    std::this_thread::sleep_for(std::chrono::duration<double>(share * whole_seconds));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string error = run_unit::check_run_set_error(d);
    INFO(error);
    if (error.empty()) {
      // Whole: the stamp's tables are all there as pinned, and they are the old run's or the new run's.
      CHECK((tables_as(old_stamp) || tables_as(new_stamp)));
    } else {
      ++refused;
      CHECK(error.find("exp_vit_training: run ") != std::string::npos);
      CHECK(error.find("did not finish") != std::string::npos);
      CHECK(error.find('\n') == std::string::npos);
    }
  }
  // A killed run is refused until a run finishes there.
  r = run_binary("exp_vit_training", args("5", d));
  REQUIRE(r.exit_status == 0);
  CHECK(run_unit::check_run_set_error(d).empty());
  CHECK(tables_as(new_stamp));
  MESSAGE(refused << " of 5 kills left a directory refused as mixed");
}

TEST_CASE("bug: a refused --checkpoint or --data created --out (and marked it quick); now a refusal creates nothing") {
  ScratchDir dir;
  const fs::path out = dir.path() / "out";
  RunResult r = run_binary("exp_trained_regression", {"--quick", "--checkpoint", (dir.path() / "none").string(), "--out", out.string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(!fs::exists(out));
  r = run_binary("exp_vit_training", {"--quick", "--data", (dir.path() / "none").string(), "--out", out.string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(!fs::exists(out));
  // An existing empty directory stays empty: no quick marker that would block a full run there.
  fs::create_directory(out);
  r = run_binary("exp_trained_attention", {"--quick", "--checkpoint", (dir.path() / "none").string(), "--out", out.string()});
  CHECK(r.exit_status == 2);
  CHECK(fs::is_empty(out));
}

TEST_CASE("bug: a checkpoint with one weight of 3e38 wrote nan cells with exit status 0; now exit 1 naming the table and column") {
  ScratchDir dir;
  ViTConfig c;
  c.seed = 11;
  ViT<float> model(c);
  save_checkpoint(model, dir.path() / "ckpt", 0);
  NpyArray wq = read_npy(dir.path() / "ckpt" / "block0.attn.Wq.npy");
  wq.values[0] = 3e38;  // one weight, finite, far beyond any trained one: the softmax of its head saturates
  write_npy(dir.path() / "ckpt" / "block0.attn.Wq.npy", wq);
  const RunResult r = run_binary("exp_trained_regression",
                                 {"--quick", "--checkpoint", (dir.path() / "ckpt").string(), "--out", (dir.path() / "out").string()});
  INFO(r.output);
  CHECK(r.exit_status == 1);
  CHECK(r.output.find("trained_regression_target.csv") != std::string::npos);
  CHECK(r.output.find("column '") != std::string::npos);
  CHECK(!fs::exists(dir.path() / "out" / "trained_regression_target.csv"));
}
