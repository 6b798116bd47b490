// Runs one experiment (named by $ATTNLAB_EXPERIMENT) whole in --quick mode, then as N shards (N = 1, 3
// and one more shard than its smallest sweep has configurations, so a shard runs nothing of it), merges the shards with
// attnlab_merge, judges the merged directory with --judge, and checks that the merged and judged
// directory holds the whole run's tables and ledger, byte for byte (issue 16). Timings are measured
// anew by every run, so timing tables are compared by shape, and a claim that rests on timings by its
// identity (id, source, metric, threshold, evidence file), not its value.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/shard_stamp.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

namespace {

bool is_timing_table(const std::string& name) { return name.ends_with("_timing.csv"); }
// The ledgers (claims.csv, corrections.csv) cite their run's own paths: compared row by row below.
bool is_table(const std::string& name) { return name.ends_with(".csv") && name != kClaimsFile && name != kCorrectionsFile; }

// Whether a ledger row's verdict, observed value and note rest on wall-clock times: its evidence is a
// timing table, or its metric measures time ("time and memory"). Only asked of experiments that time.
bool rests_on_timings(const ClaimRow& row) {
  return is_timing_table(std::filesystem::path(row.evidence).filename().string()) ||
         row.metric.find("time") != std::string::npos;
}
bool note_cites_timings(const ClaimRow& row) {
  return row.note.find("_timing.csv") != std::string::npos || row.note.find("time ~") != std::string::npos;
}

// A table's rows without the columns named like times (seconds, rates, *_s), so a timing table's shape and
// configurations can be compared across runs.
std::vector<std::vector<std::string>> untimed_cells(const std::filesystem::path& file) {
  auto rows = read_csv_file(file);
  if (rows.empty()) return rows;
  std::vector<bool> keep;
  for (const auto& h : rows[0])
    keep.push_back(!(h.find("second") != std::string::npos || h.ends_with("_s") || h.find("per_s") != std::string::npos ||
                     h.find("gflop") != std::string::npos || h.find("time") != std::string::npos ||
                     h.find("rate") != std::string::npos || h.find("speed") != std::string::npos ||
                     // Derived from times as well: repeats chosen from a first timing, exponents (slopes)
                     // fitted to times with their intervals, intercepts and fit quality, the resident set's measured peak (as
                     // noisy as a time), which method was fastest or faster or tied (a tie in one run may be
                     // decided in another), and the margins of those outcomes (lab/timing_verdict.hpp).
                     h == "repeats" || h.find("exponent") != std::string::npos || h.ends_with("95") ||
                     h == "r2" || h == "slope" || h == "intercept" ||  // and a timing fit's (lab/fit_table.hpp)
                     h.find("peak") != std::string::npos || h == "fastest" || h.ends_with("_fastest") ||
                     h == "faster" || h.ends_with("_faster") || h == "tied" || h == "margin" ||
                     h == "threads"));  // the whole run uses 2 threads, the shards 1
  for (auto& r : rows) {
    std::vector<std::string> kept;
    for (std::size_t c = 0; c < r.size() && c < keep.size(); ++c)
      if (keep[c]) kept.push_back(r[c]);
    r = std::move(kept);
  }
  return rows;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("sharded quick run: shards merged and judged equal the whole run") {
  const char* name = std::getenv("ATTNLAB_EXPERIMENT");
  REQUIRE_MESSAGE(name != nullptr, "set ATTNLAB_EXPERIMENT to an experiment's name");
  INFO("experiment: " << name);
  ScratchDir whole;
  const auto w = run_binary(name, {"--quick", "--seed", "7", "--threads", "2", "--out", whole.path().string()});
  INFO(w.output);
  REQUIRE(w.exit_status == 0);
  std::vector<std::string> tables;
  std::size_t most_rows = 0;
  bool times = false;
  for (const auto& f : whole.files())
    if (is_table(f)) {
      tables.push_back(f);
      times = times || is_timing_table(f);
      most_rows = std::max(most_rows, read_csv_file(whole.path() / f).size() - 1);
    }
  REQUIRE(!tables.empty());
  const auto whole_ledger = read_ledger(whole.path() / kClaimsFile);
  REQUIRE(!whole_ledger.empty());
  // The corrected statements' ledger, where the experiment judges any.
  const bool corrects = std::filesystem::exists(whole.path() / kCorrectionsFile);
  const auto whole_corrections = corrects ? read_ledger(whole.path() / kCorrectionsFile) : std::vector<ClaimRow>{};

  // One more shard than the largest sweep has configurations (a 1/1 shard's stamp lists the sweep sizes):
  // the shards past a sweep's configurations run none of it.
  // The 1/1 shard (run with 2 threads, the shards below with 1) is also the one-shard case of the loop.
  std::size_t largest = 0, smallest = 0;
  ScratchDir one;
  {
    const auto r = run_binary(name, {"--quick", "--seed", "7", "--threads", "2", "--shard", "1/1", "--out", one.path().string()});
    INFO(r.output);
    REQUIRE(r.exit_status == 0);
    const ShardStamp stamp = read_stamp(shard_stamp_path(one.path(), name));
    for (auto size : stamp.sweeps) {
      largest = std::max<std::size_t>(largest, size);
      smallest = smallest == 0 ? size : std::min<std::size_t>(smallest, size);
    }
    CHECK(largest <= most_rows);  // every configuration writes at least one row
  }
  // 1 shard, 3 (uneven cuts of every sweep with more than 3 configurations) and one more than the smallest
  // sweep has configurations (the last shard runs none of that sweep, and uneven parts of the others).
  // Two shards would add a cut of the same kind as three, and one more than the largest sweep tens of
  // processes that each set up the trained experiments' models: those dominate the test's time.
  const int many = static_cast<int>(smallest + 1);
  std::vector<int> cuts = {1, 3};
  if (many != 3) cuts.push_back(many);
  for (int n : cuts) {
    INFO("shards: " << n);
    ScratchDir shards, merged;
    std::vector<std::string> merge_args = {"--out", merged.path().string()};
    for (int i = 1; i <= n; ++i) {
      const auto dir = n == 1 ? one.path() : shards.path() / std::to_string(i);
      if (n > 1) {
        const auto r = run_binary(name, {"--quick", "--seed", "7", "--threads", "1", "--shard", fmt::format("{}/{}", i, n),
                                         "--out", dir.string()});
        INFO("shard " << i << ": " << r.output);
        REQUIRE(r.exit_status == 0);
      }
      CHECK(std::filesystem::exists(dir / (std::string(name) + ".shard.json")));
      // A shard measures; only the judge writes the ledgers.
      CHECK(!std::filesystem::exists(dir / kClaimsFile));
      CHECK(!std::filesystem::exists(dir / kCorrectionsFile));
      merge_args.push_back(dir.string());
    }
    const auto m = run_binary("attnlab_merge", merge_args);
    INFO(m.output);
    REQUIRE(m.exit_status == 0);
    const auto j = run_binary(name, {"--judge", merged.path().string()});
    INFO(j.output);
    REQUIRE(j.exit_status == 0);

    for (const auto& f : tables) {
      INFO("table: " << f);
      REQUIRE(std::filesystem::exists(merged.path() / f));
      if (is_timing_table(f))
        CHECK(untimed_cells(merged.path() / f) == untimed_cells(whole.path() / f));
      else
        CHECK(read_text(merged.path() / f) == read_text(whole.path() / f));
    }
    const auto compare_ledgers = [&](const char* file, const std::vector<ClaimRow>& whole_rows) {
      INFO("ledger: " << file);
      const auto ledger = read_ledger(merged.path() / file);
      REQUIRE(ledger.size() == whole_rows.size());
      for (std::size_t r = 0; r < ledger.size(); ++r) {
        const ClaimRow &a = ledger[r], &b = whole_rows[r];
        INFO("claim " << b.id);
        CHECK(a.id == b.id);
        CHECK(a.corrects == b.corrects);
        CHECK(a.metric == b.metric);
        CHECK(a.threshold == b.threshold);
        CHECK(a.experiment == b.experiment);
        CHECK(std::filesystem::path(a.evidence).filename() == std::filesystem::path(b.evidence).filename());
        if (times && rests_on_timings(b)) continue;
        CHECK(a.verdict == b.verdict);
        CHECK(a.observed == b.observed);  // std::optional<double>: the same double, bit for bit, or both absent
        // Notes may cite evidence paths, which differ by directory only.
        if (!(times && note_cites_timings(b))) CHECK(a.note == replace_all(b.note, whole.path().string(), merged.path().string()));
      }
    };
    compare_ledgers(kClaimsFile, whole_ledger);
    CHECK(std::filesystem::exists(merged.path() / kCorrectionsFile) == corrects);
    if (corrects) compare_ledgers(kCorrectionsFile, whole_corrections);
  }
}
