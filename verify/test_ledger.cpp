// Checks of the claims ledger: merging, ordering, validation.
#include <doctest/doctest.h>

#include <fstream>
#include <thread>
#include <vector>
#include <limits>

#include "attnlab/io/ledger.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::ScratchDir;

namespace {
ClaimRow row(const std::string& id, Verdict v, double observed, const std::string& note = "") {
  return {id, v, "metric", observed, 1.0, "results/x.csv", note, "exp_x"};
}
}  // namespace

TEST_CASE("claim ids sort by letter, then by number") {
  CHECK(claim_id_less("R2", "R10"));
  CHECK_FALSE(claim_id_less("R10", "R2"));
  CHECK(claim_id_less("L4", "R1"));
  CHECK(claim_id_less("R11", "S1"));
}

TEST_CASE("an experiment replaces its own rows and leaves the others untouched") {
  ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  merge_into_ledger(ledger, {row("R10", Verdict::holds, 1), row("R2", Verdict::fails, 2)});
  merge_into_ledger(ledger, {row("S1", Verdict::holds, 3)});
  merge_into_ledger(ledger, {row("R2", Verdict::conditional, 4, "only when x, since y")});
  const std::string text = attnlab::testing::read_text(ledger);
  CHECK(text ==
        "id,source,verdict,metric,observed,threshold,evidence,note,experiment\n"
        "R2,000_b0b7043ddc03e9e4.txt,conditional,metric,4,1,results/x.csv,\"only when x, since y\",exp_x\n"
        "R10,000_b0b7043ddc03e9e4.txt,holds,metric,1,1,results/x.csv,,exp_x\n"
        "S1,001_f879b028757d0e8d.txt,holds,metric,3,1,results/x.csv,,exp_x\n");
  const auto rows = read_ledger(ledger);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].note == "only when x, since y");
  CHECK(rows[0].observed == 4.0);
  CHECK(rows[0].experiment == "exp_x");
  CHECK(dir.files() == std::vector<std::string>{".claims.csv.lock", "claims.csv"});  // the writers' lock file stays
}

TEST_CASE("rows that break the ledger's rules are refused and the ledger is unchanged") {
  ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  merge_into_ledger(ledger, {row("R1", Verdict::holds, 1)});
  const std::string before = attnlab::testing::read_text(ledger);
  CHECK_THROWS_AS(merge_into_ledger(ledger, {row("R2", Verdict::conditional, 1)}), std::invalid_argument);  // no note
  CHECK_THROWS_AS(merge_into_ledger(ledger, {row("R2", Verdict::holds, 1), row("R2", Verdict::holds, 1)}),
                  std::invalid_argument);  // duplicate
  ClaimRow no_evidence = row("R3", Verdict::fails, 1);
  no_evidence.evidence.clear();
  CHECK_THROWS_AS(merge_into_ledger(ledger, {no_evidence}), std::invalid_argument);
  ClaimRow nan = row("R4", Verdict::fails, std::numeric_limits<double>::quiet_NaN());
  CHECK_THROWS_AS(merge_into_ledger(ledger, {nan}), std::invalid_argument);
  // Provenance: every row names the experiment that wrote it.
  ClaimRow anonymous = row("R6", Verdict::holds, 1);
  anonymous.experiment.clear();
  CHECK_THROWS_AS(merge_into_ledger(ledger, {anonymous}), std::invalid_argument);
  ClaimRow untested{"U16", Verdict::untested, "accuracy", std::nullopt, std::nullopt, "", "", "exp_x"};
  CHECK_THROWS_AS(merge_into_ledger(ledger, {untested}), std::invalid_argument);  // untested needs a reason
  CHECK(attnlab::testing::read_text(ledger) == before);
  untested.note = "needs a dataset that is not available offline";
  merge_into_ledger(ledger, {untested});
  CHECK(read_ledger(ledger).back().verdict == Verdict::untested);
}

TEST_CASE("a ledger with a wrong header is rejected with the file named") {
  ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  {
    std::ofstream(ledger) << "id,verdict\nR1,holds\n";
  }
  try {
    read_ledger(ledger);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("claims.csv") != std::string::npos);
  }
}

TEST_CASE("the vocabularies come from their one definition: verdicts.tsv and claim_sources.tsv") {
  // Every verdict the TSV lists round-trips through its name, and the enum lists exactly those.
  std::ifstream in(std::filesystem::path(ATTNLAB_SOURCE_DIR) / "lib" / "attnlab" / "io" / "verdicts.tsv");
  REQUIRE(in);
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') names.push_back(line.substr(0, line.find('\t')));
  CHECK(names == std::vector<std::string>{"holds", "conditional", "fails", "inconclusive", "untested"});
  for (const auto& name : names) CHECK(to_string(verdict_from_string(name)) == name);
  CHECK_THROWS_AS(verdict_from_string("hold"), std::invalid_argument);
  // Each claim letter names its document; a letter without one is refused, and so is a ledger row
  // whose source column disagrees with the table.
  CHECK(claim_source("R12") == "000_b0b7043ddc03e9e4.txt");
  CHECK(claim_source("S1") == "001_f879b028757d0e8d.txt");
  CHECK(claim_source("U17") == "002_cfe0fd4ab08b70f3.txt");
  CHECK(claim_source("L5") == "003_cab8b9be341236c2.txt");
  CHECK(claim_source("G12") == "004_7846dec793ad03be.txt");
  for (const char* bad : {"X1", "", "r1"}) CHECK_THROWS_AS(claim_source(bad), std::invalid_argument);
  ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  CHECK_THROWS_AS(merge_into_ledger(ledger, {row("X1", Verdict::holds, 0.5)}), std::invalid_argument);
  merge_into_ledger(ledger, {row("R1", Verdict::holds, 0.5)});
  CHECK(attnlab::testing::read_text(ledger).find("R1,000_b0b7043ddc03e9e4.txt,holds,") != std::string::npos);
  std::string text = attnlab::testing::read_text(ledger);
  text.replace(text.find("000_b0b7043ddc03e9e4.txt"), 3, "002");
  std::ofstream(ledger) << text;
  CHECK_THROWS_WITH_AS(read_ledger(ledger), doctest::Contains("is not claim R1's document"), std::runtime_error);
}

TEST_CASE("bug: concurrent updates of one ledger lost rows (read, add, rename raced); now each waits its turn") {
  // 4 writers at once, 25 updates each, every update adding a row of its own: the ledger must end with
  // all 100. Without the lock, a writer's rename replaces a ledger read before another writer's rename.
  ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  constexpr int kWriters = 4, kUpdates = 25;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (int u = 0; u < kUpdates; ++u) merge_into_ledger(ledger, {row("R" + std::to_string(1 + w * kUpdates + u), Verdict::holds, u)});
    });
  for (auto& t : writers) t.join();
  CHECK(read_ledger(ledger).size() == static_cast<std::size_t>(kWriters * kUpdates));
}

TEST_CASE("corrected statements go to a second ledger, corrections.csv, with a corrects column") {
  ScratchDir dir;
  const auto file = dir.path() / kCorrectionsFile;
  ClaimRow a = row("R5.c", Verdict::holds, 2), b = row("R10.c", Verdict::fails, 3), c = row("R4.c", Verdict::holds, 0);
  a.corrects = "R5";
  b.corrects = "R10";
  c.corrects = "R4";
  merge_into_ledger(file, {a, b});
  merge_into_ledger(file, {c});
  CHECK(attnlab::testing::read_text(file) ==
        "id,source,verdict,metric,observed,threshold,evidence,note,experiment,corrects\n"
        "R4.c,000_b0b7043ddc03e9e4.txt,holds,metric,0,1,results/x.csv,,exp_x,R4\n"
        "R5.c,000_b0b7043ddc03e9e4.txt,holds,metric,2,1,results/x.csv,,exp_x,R5\n"
        "R10.c,000_b0b7043ddc03e9e4.txt,fails,metric,3,1,results/x.csv,,exp_x,R10\n");
  const auto rows = read_ledger(file);
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].id == "R5.c");
  CHECK(rows[1].corrects == "R5");
  // The claims' ledger keeps its nine columns, and reads back with no `corrects`.
  merge_into_ledger(dir.path() / kClaimsFile, {row("R5", Verdict::conditional, 2, "only when y")});
  CHECK(read_ledger(dir.path() / kClaimsFile).front().corrects.empty());
}

TEST_CASE("a corrected statement's rules: named <claim>.c, never mixed with claims, never in the claims' ledger") {
  ScratchDir dir;
  ClaimRow wrong_id = row("R5.fix", Verdict::holds, 1);
  wrong_id.corrects = "R5";
  CHECK_THROWS_AS(merge_into_ledger(dir.path() / kCorrectionsFile, {wrong_id}), std::invalid_argument);
  ClaimRow fine = row("R5.c", Verdict::holds, 1);
  fine.corrects = "R5";
  CHECK_THROWS_AS(merge_into_ledger(dir.path() / kCorrectionsFile, {fine, row("R6", Verdict::holds, 1)}), std::invalid_argument);
  merge_into_ledger(dir.path() / kClaimsFile, {row("R6", Verdict::holds, 1)});
  CHECK_THROWS_AS(merge_into_ledger(dir.path() / kClaimsFile, {fine}), std::invalid_argument);
  CHECK(read_ledger(dir.path() / kClaimsFile).size() == 1);
  CHECK_FALSE(std::filesystem::exists(dir.path() / kCorrectionsFile));
  CHECK(correction_id("U17") == "U17.c");
  CHECK(claim_id_less("R5", "R5.c"));
  CHECK(claim_id_less("R5.c", "R6"));
  CHECK(claim_id_less("R9.c", "R10"));
}
