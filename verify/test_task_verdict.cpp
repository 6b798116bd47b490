// The rule that combines a claim's verdicts on the two trained testbeds into one ledger verdict
// (lab/task_verdict.hpp), on every pair of task verdicts, and the planted cases the issue names.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/task_verdict.hpp"

using namespace attnlab;

namespace {

TaskJudgement task(const std::string& name, Verdict v, double observed = 0.5, double threshold = 1.0) {
  return {name, true, {v, observed, name + "'s note."}, threshold};
}

}  // namespace

TEST_CASE("combine_task_judgements: the issue's cases") {
  // Fails on one task and holds on the other: conditional, naming where it holds.
  const CombinedJudgement a = combine_task_judgements({task("fashion-mnist", Verdict::fails, 2.0, 1.0), task("recall", Verdict::holds)});
  CHECK(a.judgement.verdict == Verdict::conditional);
  CHECK(a.judgement.note.find("holds on recall") != std::string::npos);
  CHECK(a.judgement.note.find("fails on fashion-mnist") != std::string::npos);
  CHECK(a.judgement.observed == 2.0);  // the failing task's numbers
  // Fails wherever it is decisive.
  CHECK(combine_task_judgements({task("a", Verdict::fails), task("b", Verdict::fails)}).judgement.verdict == Verdict::fails);
  CHECK(combine_task_judgements({task("a", Verdict::fails), task("b", Verdict::inconclusive)}).judgement.verdict == Verdict::fails);
  // Nothing fails and one task is inconclusive.
  const CombinedJudgement i = combine_task_judgements({task("a", Verdict::holds), task("b", Verdict::inconclusive, 0.7, 0.9)});
  CHECK(i.judgement.verdict == Verdict::inconclusive);
  CHECK(i.judgement.observed == 0.7);
  CHECK(i.threshold == 0.9);
  // Holds on both.
  CHECK(combine_task_judgements({task("a", Verdict::holds), task("b", Verdict::holds)}).judgement.verdict == Verdict::holds);
}

TEST_CASE("combine_task_judgements: every pair of verdicts, and a task not measured") {
  using V = Verdict;
  const std::vector<V> all = {V::holds, V::conditional, V::fails, V::inconclusive};
  // Expected, by the rule: conditional when some task is conditional or one holds and another fails; fails when some
  // fails and none holds; inconclusive when some is and none fails or is conditional; holds when both hold.
  const auto expected = [](V x, V y) {
    const auto any = [&](V v) { return x == v || y == v; };
    if (any(V::conditional) || (any(V::holds) && any(V::fails))) return V::conditional;
    if (any(V::fails)) return V::fails;
    if (any(V::inconclusive)) return V::inconclusive;
    return V::holds;
  };
  for (V x : all)
    for (V y : all) {
      INFO(to_string(x) << " and " << to_string(y));
      const CombinedJudgement c = combine_task_judgements({task("one", x), task("two", y)});
      CHECK(c.judgement.verdict == expected(x, y));
      // The same whatever the tasks' order.
      CHECK(combine_task_judgements({task("two", y), task("one", x)}).judgement.verdict == expected(x, y));
      // Every task's verdict and note is in the combined note.
      CHECK(c.judgement.note.find("On one: " + to_string(x)) != std::string::npos);
      CHECK(c.judgement.note.find("two's note.") != std::string::npos);
    }
  // A task without models is named and left out: the other decides alone.
  for (V x : all) {
    const CombinedJudgement c = combine_task_judgements({task("fashion-mnist", x), TaskJudgement{"recall"}});
    CHECK(c.judgement.verdict == x);
    CHECK(c.judgement.note.find("On recall: not measured") != std::string::npos);
  }
  CHECK(combine_task_judgements({TaskJudgement{"a"}, TaskJudgement{"b"}}).judgement.verdict == V::untested);
  CHECK_THROWS_AS(combine_task_judgements({}), std::invalid_argument);
}
