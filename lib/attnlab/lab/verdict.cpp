// Turning measured ratios into verdicts with thresholds fixed before the run.
#include "attnlab/lab/verdict.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace attnlab {

Verdict triage(bool in_full, bool in_part) {
  if (in_full) return Verdict::holds;
  return in_part ? Verdict::conditional : Verdict::fails;
}

Verdict separate(bool on_claim_side, bool on_other_side) {
  if (on_claim_side && on_other_side) throw std::logic_error("separate: an interval cannot lie wholly on both sides of a line");
  if (on_claim_side) return Verdict::holds;
  return on_other_side ? Verdict::fails : Verdict::inconclusive;
}

void GroupOutcomes::add(const std::string& group, bool passes) {
  for (auto& [name, ok] : groups_)
    if (name == group) {
      ok = ok && passes;
      return;
    }
  groups_.emplace_back(group, passes);
}

std::vector<std::string> GroupOutcomes::passing() const {
  std::vector<std::string> out;
  for (const auto& [name, ok] : groups_)
    if (ok) out.push_back(name);
  return out;
}

std::vector<std::string> GroupOutcomes::failing() const {
  std::vector<std::string> out;
  for (const auto& [name, ok] : groups_)
    if (!ok) out.push_back(name);
  return out;
}

Verdict GroupOutcomes::verdict() const {
  if (groups_.empty()) throw std::invalid_argument("GroupOutcomes: no outcome was added");
  return triage(failing().empty(), !passing().empty());
}

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
  Judgement j{triage(fail.empty(), !pass.empty()), observed, ""};
  if (j.verdict != Verdict::conditional) return j;
  j.note = "holds only for ";
  for (std::size_t i = 0; i < pass.size(); ++i) j.note += (i ? "; " : "") + pass[i]->description;
  j.note += ". Fails for ";
  for (std::size_t i = 0; i < fail.size(); ++i) j.note += (i ? "; " : "") + fail[i]->description;
  j.note += ".";
  return j;
}

Judgement judge_outcomes_by_condition(const std::vector<ConditionOutcome>& conditions, const std::string& undecided_why) {
  if (conditions.empty()) throw std::invalid_argument("judge_outcomes_by_condition: nothing was measured");
  std::vector<const ConditionOutcome*> pass, fail, open;
  for (const auto& c : conditions) {
    if (c.outcome == Verdict::holds) pass.push_back(&c);
    else if (c.outcome == Verdict::fails) fail.push_back(&c);
    else if (c.outcome == Verdict::inconclusive) open.push_back(&c);
    else
      throw std::invalid_argument(fmt::format("judge_outcomes_by_condition: {}'s outcome is {}, not holds, fails or inconclusive",
                                              c.condition, to_string(c.outcome)));
  }
  const auto names = [](const std::vector<const ConditionOutcome*>& cs) {
    std::string out;
    for (std::size_t i = 0; i < cs.size(); ++i) out += (i ? "; " : "") + cs[i]->description;
    return out;
  };
  Judgement j{Verdict::inconclusive, 0, ""};
  if (open.empty() && fail.empty()) j.verdict = Verdict::holds;
  else if (open.empty() && pass.empty()) j.verdict = Verdict::fails;
  else if (!pass.empty() && !fail.empty()) j.verdict = Verdict::conditional;
  if (j.verdict == Verdict::holds || j.verdict == Verdict::fails) return j;
  if (!pass.empty()) j.note += fmt::format("{} for {}. ", j.verdict == Verdict::conditional ? "Holds only" : "Holds", names(pass));
  if (!fail.empty()) j.note += fmt::format("Fails for {}. ", names(fail));
  if (!open.empty())
    j.note += fmt::format("{} for {}{}", undecided_why, names(open), j.verdict == Verdict::inconclusive ? ": the data cannot decide." : ".");
  while (!j.note.empty() && j.note.back() == ' ') j.note.pop_back();
  return j;
}

Judgement judge_intervals_by_condition(const std::vector<ConditionInterval>& conditions, double threshold) {
  if (conditions.empty()) throw std::invalid_argument("judge_intervals_by_condition: nothing was measured");
  std::vector<ConditionOutcome> outcomes;
  double observed = -std::numeric_limits<double>::infinity();
  for (const auto& c : conditions) {
    if (c.lower > c.upper)
      throw std::invalid_argument(fmt::format("judge_intervals_by_condition: {}'s interval [{}, {}] is reversed", c.condition,
                                              c.lower, c.upper));
    // NaN fails both tests: undecided, never a pass.
    outcomes.push_back({c.condition, c.description, separate(c.upper <= threshold, c.lower > threshold)});
    observed = std::isnan(c.upper) || std::isnan(observed) ? std::numeric_limits<double>::quiet_NaN() : std::max(observed, c.upper);
  }
  Judgement j = judge_outcomes_by_condition(outcomes, fmt::format("The 95% interval contains the threshold {:.6g}", threshold));
  j.observed = observed;
  return j;
}

namespace {

std::string interval_text(const MethodInterval& m) { return fmt::format("{}'s [{:.6g}, {:.6g}]", m.name, m.lower, m.upper); }

// "a's [..]", "a's [..] and b's [..]", "a's [..], b's [..] and c's [..]".
std::string list_text(const std::vector<const MethodInterval*>& ms) {
  std::string out;
  for (std::size_t i = 0; i < ms.size(); ++i) out += (i == 0 ? "" : i + 1 == ms.size() ? " and " : ", ") + interval_text(*ms[i]);
  return out;
}

}  // namespace

Judgement judge_best_of(const std::vector<MethodInterval>& intervals, const std::string& claimed_best) {
  if (intervals.size() < 2)
    throw std::invalid_argument(fmt::format("judge_best_of: {} method(s); a best of needs at least two", intervals.size()));
  const MethodInterval* best = nullptr;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const MethodInterval& m = intervals[i];
    if (!std::isfinite(m.lower) || !std::isfinite(m.upper) || m.lower > m.upper)
      throw std::invalid_argument(fmt::format("judge_best_of: {}'s interval [{}, {}] is not a finite interval", m.name, m.lower, m.upper));
    for (std::size_t k = 0; k < i; ++k)
      if (intervals[k].name == m.name) throw std::invalid_argument(fmt::format("judge_best_of: method '{}' given twice", m.name));
    if (m.name == claimed_best) best = &m;
  }
  if (best == nullptr) throw std::invalid_argument(fmt::format("judge_best_of: the claimed best '{}' is not among the methods", claimed_best));

  // Others in the order given, split by where their interval lies relative to the claimed best's.
  std::vector<const MethodInterval*> below, above, overlapping;
  const MethodInterval* nearest = nullptr;  // the other with the highest upper bound
  for (const auto& m : intervals) {
    if (&m == best) continue;
    (m.upper < best->lower ? below : m.lower > best->upper ? above : overlapping).push_back(&m);
    if (nearest == nullptr || m.upper > nearest->upper) nearest = &m;
  }
  // Above every other (none above or overlapping) is the claim's side; some other strictly above is the other side.
  Judgement j{separate(above.empty() && overlapping.empty(), !above.empty()), best->lower - nearest->upper, ""};
  const std::string mine = fmt::format("{}'s 95% interval [{:.6g}, {:.6g}]", best->name, best->lower, best->upper);
  if (j.verdict == Verdict::fails) {
    j.note = fmt::format("{} lie{} strictly above {}.", list_text(above), above.size() == 1 ? "s" : "", mine);
  } else if (j.verdict == Verdict::holds) {
    j.note = fmt::format("{} lies strictly above every other's; the nearest is {}.", mine, interval_text(*nearest));
  } else {
    j.note = fmt::format("{} overlaps or touches {}: the intervals do not separate, the data cannot decide.", mine, list_text(overlapping));
  }
  return j;
}

Judgement judge_within_tolerance(const MethodInterval& score, double reference, double tolerance) {
  if (!std::isfinite(score.lower) || !std::isfinite(score.upper) || score.lower > score.upper)
    throw std::invalid_argument(fmt::format("judge_within_tolerance: {}'s interval [{}, {}] is not a finite interval",
                                            score.name, score.lower, score.upper));
  if (!std::isfinite(reference) || !std::isfinite(tolerance) || tolerance < 0)
    throw std::invalid_argument(fmt::format("judge_within_tolerance: reference {} and tolerance {} must be finite, tolerance >= 0",
                                            reference, tolerance));
  const double line = reference - tolerance;
  Judgement j{separate(score.lower > line, score.upper < line), reference - score.lower, ""};
  if (j.verdict == Verdict::holds) {
    j.note = fmt::format("{}'s 95% interval [{:.6g}, {:.6g}] lies above the tolerance line {:.6g} = {:.6g} - {:.6g}.",
                         score.name, score.lower, score.upper, line, reference, tolerance);
  } else if (j.verdict == Verdict::fails) {
    j.note = fmt::format("{}'s 95% interval [{:.6g}, {:.6g}] lies below the tolerance line {:.6g} = {:.6g} - {:.6g}.",
                         score.name, score.lower, score.upper, line, reference, tolerance);
  } else {
    j.note = fmt::format("{}'s 95% interval [{:.6g}, {:.6g}] contains the tolerance line {:.6g} = {:.6g} - {:.6g}: "
                         "the data cannot decide.",
                         score.name, score.lower, score.upper, line, reference, tolerance);
  }
  return j;
}

Judgement judge_direct_or_condition(const Judgement& direct, const Judgement& alternative, const std::string& condition) {
  Judgement j = direct;
  if (direct.verdict == Verdict::fails && alternative.verdict == Verdict::holds) {
    j.verdict = Verdict::conditional;
    j.note = "holds only " + condition + ". As stated it fails: " + direct.note;
  }
  j.note += (j.note.empty() ? "" : " ") + std::string("Under the condition (") + condition + "): " + to_string(alternative.verdict) +
            (alternative.note.empty() ? "" : ", " + alternative.note);
  return j;
}

}  // namespace attnlab
