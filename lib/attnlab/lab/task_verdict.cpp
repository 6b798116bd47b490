// A claim's verdict over several tasks (task_verdict.hpp).
#include "attnlab/lab/task_verdict.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"

namespace attnlab {

namespace {

// Worse first: the task whose numbers the ledger row carries.
int severity(Verdict v) {
  switch (v) {
    case Verdict::fails: return 4;
    case Verdict::inconclusive: return 3;
    case Verdict::conditional: return 2;
    case Verdict::holds: return 1;
    default: return 0;
  }
}

std::string names(const std::vector<std::string>& tasks) { return fmt::format("{}", fmt::join(tasks, " and ")); }

}  // namespace

CombinedJudgement combine_task_judgements(const std::vector<TaskJudgement>& tasks) {
  if (tasks.empty()) throw std::invalid_argument("combine_task_judgements: no tasks");
  std::vector<std::string> holds, conditional, fails, inconclusive, unmeasured;
  const TaskJudgement* worst = nullptr;
  std::string per_task;
  for (const auto& t : tasks) {
    if (!t.measured) {
      unmeasured.push_back(t.task);
      per_task += fmt::format(" On {}: not measured (no models of this task in the run).", t.task);
      continue;
    }
    const Verdict v = t.judgement.verdict;
    (v == Verdict::holds ? holds : v == Verdict::conditional ? conditional : v == Verdict::fails ? fails : inconclusive).push_back(t.task);
    if (worst == nullptr || severity(v) > severity(worst->judgement.verdict)) worst = &t;
    per_task += fmt::format(" On {}: {} (observed {}, threshold {}): {}", t.task, to_string(v), format_real(t.judgement.observed),
                            format_real(t.threshold), t.judgement.note);
  }
  CombinedJudgement c;
  if (worst == nullptr) {
    c.judgement = {Verdict::untested, 0.0, "No task was measured." + per_task};
    return c;
  }
  std::string head;
  Verdict verdict;
  if (!conditional.empty() || (!fails.empty() && !holds.empty())) {
    verdict = Verdict::conditional;
    head = "Conditional on the task:";
    if (!holds.empty()) head += fmt::format(" holds on {};", names(holds));
    if (!conditional.empty()) head += fmt::format(" holds in part on {};", names(conditional));
    if (!fails.empty()) head += fmt::format(" fails on {};", names(fails));
    if (!inconclusive.empty()) head += fmt::format(" inconclusive on {};", names(inconclusive));
    head.back() = '.';
  } else if (!fails.empty()) {
    verdict = Verdict::fails;
    head = fmt::format("Fails on {}{}.", names(fails),
                       inconclusive.empty() ? std::string(", every task measured")
                                            : fmt::format(" (inconclusive on {}, which does not decide)", names(inconclusive)));
  } else if (!inconclusive.empty()) {
    verdict = Verdict::inconclusive;
    head = fmt::format("Inconclusive on {}{}.", names(inconclusive),
                       holds.empty() ? std::string() : fmt::format("; holds on {}", names(holds)));
  } else {
    verdict = Verdict::holds;
    head = fmt::format("Holds on {}.", names(holds));
  }
  c.judgement = {verdict, worst->judgement.observed, head + per_task};
  c.threshold = worst->threshold;
  return c;
}

}  // namespace attnlab
