// Turning measured ratios into verdicts with thresholds fixed before the run.
#include "attnlab/lab/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnlab {

void WorstByCondition::add(const std::string& condition, const std::string& description, double value) {
  for (auto& e : entries_)
    if (e.condition == condition) {
      // NaN must win: a NaN anywhere under a condition is its worst outcome.
      if (std::isnan(value) || value > e.worst) e.worst = value;
      return;
    }
  entries_.push_back({condition, description, value});
}

Judgement judge_by_condition(const WorstByCondition& worst, double threshold) {
  if (worst.entries().empty()) throw std::invalid_argument("judge_by_condition: nothing was measured");
  std::vector<const WorstByCondition::Entry*> pass, fail;
  double observed = -std::numeric_limits<double>::infinity();
  for (const auto& e : worst.entries()) {
    (e.worst <= threshold ? pass : fail).push_back(&e);
    observed = std::isnan(e.worst) ? e.worst : std::max(observed, e.worst);
  }
  Judgement j{Verdict::holds, observed, ""};
  if (fail.empty()) return j;
  if (pass.empty()) {
    j.verdict = Verdict::fails;
    return j;
  }
  j.verdict = Verdict::conditional;
  j.note = "holds only for ";
  for (std::size_t i = 0; i < pass.size(); ++i) j.note += (i ? "; " : "") + pass[i]->description;
  j.note += ". Fails for ";
  for (std::size_t i = 0; i < fail.size(); ++i) j.note += (i ? "; " : "") + fail[i]->description;
  j.note += ".";
  return j;
}

}  // namespace attnlab
