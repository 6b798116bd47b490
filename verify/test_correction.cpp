// The corrected statements' rows (lab/correction): definitions read from corrections.tsv, and a statement judged
// by condition against its own threshold, on planted worst values that must hold, be conditional and fail.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "attnlab/lab/correction.hpp"

using namespace attnlab;

TEST_CASE("correction_definition: every statement corrects the claim its id names, with a finite threshold") {
  REQUIRE(!correction_definitions().empty());
  for (const auto& c : correction_definitions()) {
    INFO(c.id);
    CHECK(c.id == c.corrects + ".c");
    CHECK(std::isfinite(c.threshold));
    CHECK(!c.metric.empty());
    CHECK(!c.statement.empty());
  }
  CHECK_THROWS_AS(correction_definition("no-such-claim.c"), std::logic_error);
}

TEST_CASE("correction_by_condition: holds, conditional and fails against the definition's threshold") {
  // R4.c's threshold is 30 (a scaled residual); the rows take its metric and threshold, not the caller's.
  const CorrectionDefinition& def = correction_definition("R4.c");
  REQUIRE(def.threshold == 30);
  WorstByCondition all;
  all.add("tied", "tied weights", 0.5);
  all.add("gaussian", "gaussian weights", 29);
  const ClaimRow holds = correction_by_condition("R4.c", all, "dir/qk_identities_confirm.csv", "288 configurations");
  CHECK(holds.verdict == Verdict::holds);
  CHECK(holds.observed == 29);
  CHECK(holds.threshold == def.threshold);
  CHECK(holds.metric == def.metric);
  CHECK(holds.corrects == "R4");
  CHECK(holds.evidence == "dir/qk_identities_confirm.csv");
  CHECK(holds.note == "288 configurations");

  WorstByCondition some = all;
  some.add("gaussian", "gaussian weights", 31);  // just past the threshold
  const ClaimRow conditional = correction_by_condition("R4.c", some, "e.csv", "288 configurations");
  CHECK(conditional.verdict == Verdict::conditional);
  CHECK(conditional.observed == 31);
  // The judgement's note (where it fails) first, then the caller's.
  CHECK(conditional.note == "holds only for tied weights. Fails for gaussian weights. 288 configurations");
  CHECK(correction_by_condition("R4.c", some, "e.csv", "").note == "holds only for tied weights. Fails for gaussian weights.");

  WorstByCondition none;
  none.add("tied", "tied weights", std::nan(""));  // NaN is a failure, never a pass
  none.add("gaussian", "gaussian weights", 1e10);
  CHECK(correction_by_condition("R4.c", none, "e.csv", "").verdict == Verdict::fails);
  CHECK_THROWS_AS(correction_by_condition("R4.c", WorstByCondition{}, "e.csv", ""), std::invalid_argument);
  CHECK_THROWS_AS(correction_by_condition("X9.c", all, "e.csv", ""), std::logic_error);
}
