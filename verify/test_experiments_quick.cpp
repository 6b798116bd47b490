// Runs one experiment (named by $ATTNLAB_EXPERIMENT) in --quick mode and checks its outputs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/shard_stamp.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

namespace {

bool is_timing_table(const std::string& name) {
  return name.size() > 11 && name.compare(name.size() - 11, 11, "_timing.csv") == 0;
}

// Every table parses, has a header and rows of the header's width; every evidence table
// ends with the `inputs` column, "random" for our own draws ("fashion-mnist" for the ViT's training tables and
// exp_trained_growth's, "recall" for the recall model's, "fashion-mnist+recall" for the other trained_* tables,
// measured on both).
void check_tables(const ScratchDir& dir) {
  // A quick run marks its directory, so full runs refuse it and it never mixes with full results.
  CHECK(std::filesystem::is_regular_file(dir.path() / ".attnlab-quick"));
  for (const auto& f : dir.files()) {
    INFO("file: " << f);
    // The quick marker, the ledger writers' lock file, and the run's stamp (finished: its tables as written).
    if (f == ".attnlab-quick" || f == ".claims.csv.lock" || f == ".corrections.csv.lock") continue;
    if (f.ends_with(".run.json")) {
      CHECK(read_stamp(dir.path() / f).finished);
      continue;
    }
    CHECK(f.ends_with(".csv"));  // no temporary or stray files
    const auto rows = read_csv_file(dir.path() / f);
    REQUIRE(rows.size() >= 2);
    for (const auto& r : rows) CHECK(r.size() == rows[0].size());
    if (f == kClaimsFile || f == kCorrectionsFile) continue;
    CHECK(rows[0].back() == "inputs");
    const std::string inputs = f.starts_with("vit_training") || f.starts_with("trained_growth") ? "fashion-mnist"
                               : f.starts_with("recall_")                                      ? "recall"
                               : f.starts_with("trained_")                                     ? "fashion-mnist+recall"
                                                                                               : "random";
    for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].back() == inputs);
  }
}

}  // namespace

TEST_CASE("experiment quick run: schema, ledger and reproducibility across thread counts") {
  const char* name = std::getenv("ATTNLAB_EXPERIMENT");
  // ctest sets it for each quick.<experiment> test; run by hand, name the experiment.
  REQUIRE_MESSAGE(name != nullptr, "set ATTNLAB_EXPERIMENT to an experiment's name");
  INFO("experiment: " << name);
  ScratchDir one, two;
  const auto r1 = run_binary(name, {"--quick", "--seed", "7", "--threads", "1", "--out", one.path().string()});
  INFO(r1.output);
  REQUIRE(r1.exit_status == 0);
  const auto r2 = run_binary(name, {"--quick", "--seed", "7", "--threads", "2", "--out", two.path().string()});
  REQUIRE(r2.exit_status == 0);

  check_tables(one);
  // One finished run, as its stamp pins it.
  CHECK_NOTHROW(check_run_set(one.path()));
  const auto ledger = read_ledger(one.path() / "claims.csv");
  REQUIRE(!ledger.empty());
  for (const auto& row : ledger) {
    INFO("claim " << row.id);
    CHECK(row.experiment == name);  // provenance: the row names the experiment that wrote it
    // Every verdict the run wrote is also printed, one line each (run_experiment).
    CHECK(r1.output.find(row.id + ": " + to_string(row.verdict) + " (") != std::string::npos);
    if (row.verdict != Verdict::untested) {
      CHECK(std::filesystem::exists(row.evidence));
      CHECK(row.observed.has_value());
    }
  }

  // The corrected statements this experiment judges: each defined in corrections.tsv, correcting one of the claims
  // it just judged, printed, with evidence from the confirming run (a table of its own: *_confirm.csv, or
  // *_confirm_timing.csv for the timed runs of a timing claim's correction, which a rerun compares by header only).
  std::set<std::string> judged, corrected;
  for (const auto& row : ledger) judged.insert(row.id);
  for (const auto& row : read_ledger(one.path() / kCorrectionsFile)) {
    corrected.insert(row.id);
    INFO("correction " << row.id);
    CHECK(row.experiment == name);
    CHECK(judged.count(row.corrects) == 1);
    CHECK_NOTHROW(correction_definition(row.id));
    CHECK(r1.output.find(row.id + " (corrects " + row.corrects + "): " + to_string(row.verdict) + " (") != std::string::npos);
    if (row.verdict != Verdict::untested) {
      CHECK(std::filesystem::exists(row.evidence));
      const std::string table = std::filesystem::path(row.evidence).filename().string();
      CHECK((table.ends_with("_confirm.csv") || table.ends_with("_confirm_timing.csv")));
    }
  }
  // Every statement defined for a claim this experiment judges was judged.
  for (const auto& c : correction_definitions())
    if (judged.count(c.corrects) == 1) CHECK_MESSAGE(corrected.count(c.id) == 1, c.id << " is defined but was not judged");

  // Same seed and build: identical accuracy tables, whatever the thread count.
  REQUIRE(one.files() == two.files());
  for (const auto& f : one.files()) {
    // Timings vary; the ledger cites its own paths; a run stamp names its run.
    if (is_timing_table(f) || f == kClaimsFile || f == kCorrectionsFile || f.ends_with(".run.json")) continue;
    INFO("table: " << f);
    CHECK(attnlab::testing::read_text(one.path() / f) == attnlab::testing::read_text(two.path() / f));
  }
}
