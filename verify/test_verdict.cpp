// Checks of the one triage every judge ends in (holds / conditional / fails, and the interval triage
// holds / fails / inconclusive), of the outcomes collected per group, of the "best of" verdict (issue 14):
// holds, fails and inconclusive from 95% intervals, touching and tied intervals, and the ledger's
// handling of the inconclusive verdict.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/most_accurate.hpp"
#include "attnlab/lab/verdict.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

// The verdict for every order of the methods: the verdict must not depend on it.
Verdict verdict_any_order(std::vector<MethodInterval> ms, const std::string& best) {
  std::sort(ms.begin(), ms.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  const Verdict first = judge_best_of(ms, best).verdict;
  while (std::next_permutation(ms.begin(), ms.end(), [](const auto& a, const auto& b) { return a.name < b.name; })) {
    const Judgement j = judge_best_of(ms, best);
    CHECK(j.verdict == first);
  }
  return first;
}

}  // namespace

TEST_CASE("triage: every combination of in full and in part") {
  CHECK(triage(true, true) == Verdict::holds);
  CHECK(triage(true, false) == Verdict::holds);  // in full implies in part
  CHECK(triage(false, true) == Verdict::conditional);
  CHECK(triage(false, false) == Verdict::fails);
  // A NaN measurement compared as value <= threshold counts as a failure.
  const double nan = std::nan("");
  CHECK(triage(nan <= 30.0, nan <= 1e3) == Verdict::fails);
}

TEST_CASE("separate: holds, fails or inconclusive; both sides at once is a contradiction") {
  CHECK(separate(true, false) == Verdict::holds);
  CHECK(separate(false, true) == Verdict::fails);
  CHECK(separate(false, false) == Verdict::inconclusive);
  CHECK_THROWS_AS(separate(true, true), std::logic_error);
}

TEST_CASE("group outcomes: a group passes only if all its outcomes pass; first-seen order") {
  GroupOutcomes g;
  CHECK(g.empty());
  CHECK_THROWS_AS(g.verdict(), std::invalid_argument);
  g.add("zeta", true);
  g.add("alpha", true);
  g.add("zeta", true);
  CHECK(g.verdict() == Verdict::holds);
  CHECK(g.passing() == std::vector<std::string>{"zeta", "alpha"});
  CHECK(g.failing().empty());

  g.add("mid", false);
  g.add("mid", true);  // a later pass does not undo a failure
  CHECK(g.verdict() == Verdict::conditional);
  CHECK(g.passing() == std::vector<std::string>{"zeta", "alpha"});
  CHECK(g.failing() == std::vector<std::string>{"mid"});

  g.add("zeta", false);
  g.add("alpha", false);
  CHECK(g.verdict() == Verdict::fails);
  CHECK(g.passing().empty());
  CHECK(g.failing() == std::vector<std::string>{"zeta", "alpha", "mid"});
}

TEST_CASE("best of: holds when the claimed best's interval lies strictly above every other's") {
  const std::vector<MethodInterval> ms{{"softmax", 0.85, 0.89}, {"linformer", 0.90, 0.92}, {"linear", 0.80, 0.84}};
  const Judgement j = judge_best_of(ms, "linformer");
  CHECK(j.verdict == Verdict::holds);
  CHECK(j.observed == doctest::Approx(0.01).epsilon(1e-12));
  CHECK(j.observed > kSeparationThreshold);
  CHECK(j.note == "linformer's 95% interval [0.9, 0.92] lies strictly above every other's; the nearest is softmax's [0.85, 0.89].");
  CHECK(verdict_any_order(ms, "linformer") == Verdict::holds);
}

TEST_CASE("best of: fails when some other's interval lies strictly above the claimed best's") {
  const std::vector<MethodInterval> ms{{"softmax", 0.88, 0.90}, {"linformer", 0.84, 0.87}, {"nystrom", 0.86, 0.89},
                                       {"favor", 0.875, 0.88}};
  const Judgement j = judge_best_of(ms, "linformer");
  CHECK(j.verdict == Verdict::fails);
  CHECK(j.observed == doctest::Approx(0.84 - 0.90).epsilon(1e-12));
  CHECK(j.note == "softmax's [0.88, 0.9] and favor's [0.875, 0.88] lie strictly above linformer's 95% interval [0.84, 0.87].");
  CHECK(verdict_any_order(ms, "linformer") == Verdict::fails);
  // One other above is enough, even with the rest far below.
  const Judgement one = judge_best_of({{"a", 0.1, 0.2}, {"b", 0.5, 0.6}, {"c", 0.0, 0.05}}, "a");
  CHECK(one.verdict == Verdict::fails);
  CHECK(one.note == "b's [0.5, 0.6] lies strictly above a's 95% interval [0.1, 0.2].");
}

TEST_CASE("best of: inconclusive when the intervals do not separate") {
  const std::vector<MethodInterval> ms{{"linformer", 0.87, 0.89}, {"softmax", 0.85, 0.88}, {"linear", 0.70, 0.75}};
  const Judgement j = judge_best_of(ms, "linformer");
  CHECK(j.verdict == Verdict::inconclusive);
  CHECK(j.observed == doctest::Approx(-0.01).epsilon(1e-12));
  CHECK(j.note == "linformer's 95% interval [0.87, 0.89] overlaps or touches softmax's [0.85, 0.88]: the intervals do not "
                  "separate, the data cannot decide.");
  CHECK(verdict_any_order(ms, "linformer") == Verdict::inconclusive);
  // An interval that contains the claimed best's, and one inside it.
  CHECK(judge_best_of({{"a", 0.4, 0.6}, {"b", 0.1, 0.9}}, "a").verdict == Verdict::inconclusive);
  CHECK(judge_best_of({{"a", 0.1, 0.9}, {"b", 0.4, 0.6}}, "a").verdict == Verdict::inconclusive);
  // Several overlapping: all named, in the order given.
  CHECK(judge_best_of({{"a", 0.5, 0.7}, {"b", 0.6, 0.8}, {"c", 0.65, 0.66}}, "a").note ==
        "a's 95% interval [0.5, 0.7] overlaps or touches b's [0.6, 0.8] and c's [0.65, 0.66]: the intervals do not separate, "
        "the data cannot decide.");
}

TEST_CASE("best of: touching and tied intervals do not separate") {
  // Touching from below: the other's upper equals the claimed best's lower. Not strictly above.
  const Judgement below = judge_best_of({{"best", 0.5, 0.6}, {"other", 0.4, 0.5}}, "best");
  CHECK(below.verdict == Verdict::inconclusive);
  CHECK(below.observed == 0.0);
  CHECK_FALSE(below.observed > kSeparationThreshold);
  // Touching from above: the other's lower equals the claimed best's upper. Not strictly above either.
  CHECK(judge_best_of({{"best", 0.5, 0.6}, {"other", 0.6, 0.7}}, "best").verdict == Verdict::inconclusive);
  // Identical intervals, and identical points (one seed's zero-width interval), tie.
  CHECK(judge_best_of({{"best", 0.5, 0.6}, {"other", 0.5, 0.6}}, "best").verdict == Verdict::inconclusive);
  CHECK(judge_best_of({{"best", 0.5, 0.5}, {"other", 0.5, 0.5}}, "best").verdict == Verdict::inconclusive);
  // Zero-width intervals one ulp apart do separate.
  const double above = std::nextafter(0.5, 1.0);
  CHECK(judge_best_of({{"best", above, above}, {"other", 0.5, 0.5}}, "best").verdict == Verdict::holds);
  CHECK(judge_best_of({{"best", 0.5, 0.5}, {"other", above, above}}, "best").verdict == Verdict::fails);
}

TEST_CASE("best of: misuse throws") {
  CHECK_THROWS_AS(judge_best_of({{"a", 0, 1}}, "a"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({}, "a"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({{"a", 0, 1}, {"a", 0, 1}}, "a"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({{"a", 0, 1}, {"b", 0, 1}}, "c"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({{"a", 0.6, 0.5}, {"b", 0, 1}}, "a"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({{"a", 0, 1}, {"b", std::nan(""), 1}}, "a"), std::invalid_argument);
  CHECK_THROWS_AS(judge_best_of({{"a", 0, std::numeric_limits<double>::infinity()}, {"b", 0, 1}}, "a"), std::invalid_argument);
  try {
    judge_best_of({{"a", 0, 1}, {"b", 0, 1}}, "linformer");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "judge_best_of: the claimed best 'linformer' is not among the methods");
  }
}

TEST_CASE("the ledger records an inconclusive verdict, which needs a note") {
  attnlab::testing::ScratchDir dir;
  const auto ledger = dir.path() / "claims.csv";
  CHECK(to_string(Verdict::inconclusive) == "inconclusive");
  CHECK(verdict_from_string("inconclusive") == Verdict::inconclusive);
  ClaimRow row{"U17", Verdict::inconclusive, "margin", -0.01, 0.0, "e.csv", "", "exp_vit_training"};
  CHECK_THROWS_AS(merge_into_ledger(ledger, {row}), std::invalid_argument);  // no note
  row.note = "the intervals do not separate";
  merge_into_ledger(ledger, {row});
  const auto back = read_ledger(ledger);
  REQUIRE(back.size() == 1);
  CHECK(back[0].verdict == Verdict::inconclusive);
  CHECK(back[0].note == row.note);
  CHECK(attnlab::testing::read_text(ledger).find(",inconclusive,") != std::string::npos);
}

TEST_CASE("intervals by condition: holds, fails, conditional, and inconclusive where an interval straddles the threshold") {
  const auto c = [](const char* name, double lo, double hi) { return ConditionInterval{name, std::string(name) + " [..]", lo, hi}; };
  CHECK(judge_intervals_by_condition({c("a", 1, 2), c("b", 3, 25)}, 25).verdict == Verdict::holds);  // at the threshold passes
  CHECK(judge_intervals_by_condition({c("a", 26, 30), c("b", 25.5, 40)}, 25).verdict == Verdict::fails);
  const Judgement mixed = judge_intervals_by_condition({c("a", 1, 2), c("b", 30, 40), c("c", 20, 30)}, 25);
  CHECK(mixed.verdict == Verdict::conditional);  // decided whatever the straddling one turns out to be
  CHECK(mixed.note.find("Holds only for a [..]") != std::string::npos);
  CHECK(mixed.note.find("Fails for b [..]") != std::string::npos);
  CHECK(mixed.note.find("c [..]") != std::string::npos);
  CHECK(mixed.observed == 40);
  const Judgement open = judge_intervals_by_condition({c("a", 1, 2), c("c", 20, 30)}, 25);
  CHECK(open.verdict == Verdict::inconclusive);  // holds or conditional: the data cannot decide
  CHECK(open.note.find("cannot decide") != std::string::npos);
  CHECK(judge_intervals_by_condition({c("b", 30, 40), c("c", 20, 30)}, 25).verdict == Verdict::inconclusive);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Judgement bad = judge_intervals_by_condition({c("a", 1, 2), c("n", nan, nan)}, 25);
  CHECK(bad.verdict == Verdict::inconclusive);  // NaN never passes
  CHECK(std::isnan(bad.observed));
  CHECK_THROWS_AS(judge_intervals_by_condition({}, 25), std::invalid_argument);
  CHECK_THROWS_AS(judge_intervals_by_condition({c("r", 3, 2)}, 25), std::invalid_argument);
}

TEST_CASE("outcomes by condition (U15 over its cells, U14 over its methods): holds, conditional, fails, inconclusive") {
  const auto c = [](const char* name, Verdict v) { return ConditionOutcome{name, std::string(name) + " [..]", v}; };
  const std::string why = "The fastest methods' 95% intervals overlap (a tie)";
  CHECK(judge_outcomes_by_condition({c("a", Verdict::holds), c("b", Verdict::holds)}, why).verdict == Verdict::holds);
  CHECK(judge_outcomes_by_condition({c("a", Verdict::fails), c("b", Verdict::fails)}, why).verdict == Verdict::fails);
  // Another method separated-faster in one cell, linear in another: conditional, whatever the tie.
  const Judgement conditional =
      judge_outcomes_by_condition({c("a", Verdict::holds), c("b", Verdict::fails), c("t", Verdict::inconclusive)}, why);
  CHECK(conditional.verdict == Verdict::conditional);
  CHECK(conditional.note == "Holds only for a [..]. Fails for b [..]. " + why + " for t [..].");
  // A tie where every decided cell holds: the tie decides holds against conditional, so inconclusive, never a flip.
  const Judgement tie = judge_outcomes_by_condition({c("a", Verdict::holds), c("t", Verdict::inconclusive)}, why);
  CHECK(tie.verdict == Verdict::inconclusive);
  CHECK(tie.note == "Holds for a [..]. " + why + " for t [..]: the data cannot decide.");
  CHECK(judge_outcomes_by_condition({c("b", Verdict::fails), c("t", Verdict::inconclusive)}, why).verdict == Verdict::inconclusive);
  CHECK_THROWS_AS(judge_outcomes_by_condition({}, why), std::invalid_argument);
  CHECK_THROWS_AS(judge_outcomes_by_condition({c("a", Verdict::conditional)}, why), std::invalid_argument);
}

// U19.c's judge on planted per-seed accuracies (three seeds each): the data that must make it hold, fail, be
// conditional and be inconclusive, and what it refuses.
TEST_CASE("judge_exact_best_linformer_below: planted accuracies that hold, fail, are conditional and inconclusive") {
  using Acc = std::map<std::string, std::vector<double>>;
  // The committed main sweep's shape (exact at 1, favor just under it, Linformer near chance): every part holds.
  const Acc holds = {{"exact", {1, 1, 1}},           {"favor", {0.998, 0.997, 0.999}},      {"linear-elu", {0.80, 0.82, 0.84}},
                     {"linear-shen", {0.83, 0.86, 0.88}}, {"nystrom", {0.16, 0.18, 0.19}},  {"linformer", {0.01, 0.02, 0.04}},
                     {"random-fourier", {0.004, 0.004, 0.004}}};
  struct Planted {
    const char* what;
    Acc accuracy;
    Verdict verdict;
    double failed_parts;
    const char* in_note;
  };
  // Linformer first, exact last: every part decided against it.
  Acc fails = holds;
  fails["linformer"] = {0.99, 0.995, 0.999};
  fails["exact"] = {0.001, 0.002, 0.003};
  for (const char* m : {"favor", "linear-elu", "linear-shen", "nystrom"}) fails[m] = {0.5, 0.51, 0.52};
  // FAVOR above exact, Linformer below the rest: conditional, one part failed.
  Acc some = holds;
  some["exact"] = {0.90, 0.91, 0.92};
  // Linformer's interval overlapping Nystrom's, the other parts holding: inconclusive, nothing failed.
  Acc open = holds;
  open["linformer"] = {0.10, 0.17, 0.24};
  for (const Planted& c : {Planted{"holds", holds, Verdict::holds, 0, "Every part holds"},
                           Planted{"fails", fails, Verdict::fails, 6, "Every part fails"},
                           Planted{"conditional", some, Verdict::conditional, 1, "Fails for exact 0.9100 [0.8852, 0.9348] with favor"},
                           Planted{"inconclusive", open, Verdict::inconclusive, 0, "against nystrom"}}) {
    const Judgement j = judge_exact_best_linformer_below(c.accuracy);
    INFO(c.what << ": " << j.note);
    CHECK(j.verdict == c.verdict);
    CHECK(j.observed == c.failed_parts);
    CHECK(j.note.find(c.in_note) != std::string::npos);
  }

  // A method missing, or one seed only: no interval to judge.
  Acc missing = holds;
  missing.erase("nystrom");
  CHECK_THROWS_AS(judge_exact_best_linformer_below(missing), std::invalid_argument);
  Acc single = holds;
  single["favor"] = {0.99};
  CHECK_THROWS_AS(judge_exact_best_linformer_below(single), std::invalid_argument);
}
