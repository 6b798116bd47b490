// Timing verdicts from intervals: margins, bands, ratios, the fastest of a cell.
#include "attnlab/lab/timing_verdict.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "attnlab/lab/verdict.hpp"

namespace attnlab {

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

void check_estimate(const char* who, const std::string& name, const Estimate& e) {
  if (!std::isfinite(e.lower) || !std::isfinite(e.upper) || !std::isfinite(e.value) || e.lower > e.value || e.value > e.upper)
    throw std::invalid_argument(fmt::format("{}: {}'s estimate {} [{}, {}] is not a finite interval around its value", who, name,
                                            e.value, e.lower, e.upper));
}

bool has_nan(const Estimate& e) { return std::isnan(e.value) || std::isnan(e.lower) || std::isnan(e.upper); }

// The fastest of a set: the smallest median, within [smallest lower bound, smallest upper bound].
Estimate fastest_of(const std::vector<const Estimate*>& set) {
  Estimate best{kUnbounded, kUnbounded, kUnbounded};
  for (const Estimate* e : set) {
    best.value = std::min(best.value, e->value);
    best.lower = std::min(best.lower, e->lower);
    best.upper = std::min(best.upper, e->upper);
  }
  return best;
}

}  // namespace

Estimate estimate_of(const MedianInterval& m) { return {m.median, m.interval.lower, m.interval.upper}; }
Estimate slope_estimate(const PowerLawFit& fit) { return {fit.slope, fit.slope_interval.lower, fit.slope_interval.upper}; }
Estimate exact_estimate(double value) { return {value, value, value}; }

double margin_below(const Estimate& e, double line) {
  if (has_nan(e) || std::isnan(line)) return std::numeric_limits<double>::quiet_NaN();
  if (e.value <= line) {
    const double gap = line - e.value, half = e.upper - e.value;
    if (half > 0) return gap / half;
    return gap > 0 ? kUnbounded : 1.0;  // a zero-width interval on the line touches it: at or below, as upper <= line says
  }
  const double gap = e.value - line, half = e.value - e.lower;
  return half > 0 ? -gap / half : -kUnbounded;
}

double margin_above(const Estimate& e, double line) { return margin_below({-e.value, -e.upper, -e.lower}, -line); }

BandJudgement judge_band(const Estimate& e, double low, double high) {
  if (low > high) throw std::invalid_argument(fmt::format("judge_band: the band [{}, {}] is reversed", low, high));
  // NaN fails every comparison: inconclusive, never holds.
  const bool inside = e.lower >= low && e.upper <= high;
  const bool outside = e.upper < low || e.lower > high;
  return {separate(inside, outside), std::min(margin_above(e, low), margin_below(e, high))};
}

double separation_margin(const Estimate& faster, const Estimate& slower) {
  if (has_nan(faster) || has_nan(slower)) return std::numeric_limits<double>::quiet_NaN();
  if (faster.value <= slower.value) {
    const double gap = slower.value - faster.value, halves = (faster.upper - faster.value) + (slower.value - slower.lower);
    if (halves > 0) return gap / halves;
    return gap > 0 ? kUnbounded : 0.0;
  }
  const double gap = faster.value - slower.value, halves = (slower.upper - slower.value) + (faster.value - faster.lower);
  return halves > 0 ? -gap / halves : -kUnbounded;
}

Estimate ratio_estimate(const Estimate& a, const Estimate& b) {
  if (!(b.lower > 0) || !(a.lower >= 0))
    throw std::invalid_argument(fmt::format("ratio_estimate: the intervals [{}, {}] and [{}, {}] must be positive", a.lower, a.upper,
                                            b.lower, b.upper));
  return {a.value / b.value, a.lower / b.upper, a.upper / b.lower};
}

std::vector<std::string> fastest_candidates(const std::vector<NamedEstimate>& methods) {
  if (methods.empty()) throw std::invalid_argument("fastest_candidates: no methods");
  double smallest_upper = kUnbounded;
  for (const NamedEstimate& m : methods) {
    check_estimate("fastest_candidates", m.name, m.estimate);
    smallest_upper = std::min(smallest_upper, m.estimate.upper);
  }
  std::vector<std::string> out;
  for (const NamedEstimate& m : methods)
    if (m.estimate.lower <= smallest_upper) out.push_back(m.name);
  return out;
}

GroupRace judge_group_fastest(const std::vector<NamedEstimate>& methods, const std::vector<std::string>& group) {
  const auto in_group = [&](const std::string& name) { return std::find(group.begin(), group.end(), name) != group.end(); };
  std::vector<const Estimate*> members, others;
  for (const NamedEstimate& m : methods) (in_group(m.name) ? members : others).push_back(&m.estimate);
  if (members.empty() || others.empty())
    throw std::invalid_argument(fmt::format("judge_group_fastest: {} of the {} methods are in the group; both sides need one",
                                            members.size(), methods.size()));
  GroupRace race;
  race.candidates = fastest_candidates(methods);
  const auto in = std::count_if(race.candidates.begin(), race.candidates.end(), in_group);
  race.outcome = separate(in == static_cast<std::ptrdiff_t>(race.candidates.size()), in == 0);
  race.group_best = fastest_of(members);
  race.others_best = fastest_of(others);
  race.margin = separation_margin(race.group_best, race.others_best);
  return race;
}

std::string margin_text(double margin) { return fmt::format("{:+.2f}", margin); }

std::string median_text(const MedianInterval& m) {
  return fmt::format("{:.3g} s [{:.3g}, {:.3g}]", m.median, m.interval.lower, m.interval.upper);
}

const TimedOutcome& deciding_outcome(const std::vector<TimedOutcome>& outcomes, Verdict verdict, bool one_failure_fails) {
  // Among the outcomes of one kind, the one with the smallest (weakest) or largest (strongest) |margin|.
  const auto pick = [&](Verdict kind, bool strongest) -> const TimedOutcome* {
    const TimedOutcome* best = nullptr;
    for (const TimedOutcome& o : outcomes) {
      const Verdict k = std::isnan(o.margin) ? Verdict::inconclusive : o.outcome;
      if (k != kind) continue;
      if (best == nullptr || (strongest ? std::abs(o.margin) > std::abs(best->margin) : std::abs(o.margin) < std::abs(best->margin)))
        best = &o;
    }
    return best;
  };
  const TimedOutcome* found = nullptr;
  switch (verdict) {
    case Verdict::holds: found = pick(Verdict::holds, false); break;
    case Verdict::fails: found = pick(Verdict::fails, one_failure_fails); break;
    case Verdict::conditional: {
      const TimedOutcome *hold = pick(Verdict::holds, true), *fail = pick(Verdict::fails, true);
      found = hold && fail ? (std::abs(hold->margin) <= std::abs(fail->margin) ? hold : fail) : nullptr;
      break;
    }
    case Verdict::inconclusive: found = pick(Verdict::inconclusive, true); break;
    default: break;
  }
  if (found == nullptr)
    throw std::invalid_argument(fmt::format("deciding_outcome: {} of {} outcome(s) cannot make the verdict {}",
                                            outcomes.empty() ? "none" : "no combination", outcomes.size(), to_string(verdict)));
  return *found;
}

std::string margin_sentence(const TimedOutcome& deciding) {
  if (std::isinf(deciding.margin))  // a counted outcome (an interval of zero width) decides
    return fmt::format("Margin: none needed: {} decides the verdict, and it is counted, not timed, so no rerun changes it.",
                       deciding.what);
  return fmt::format("Margin: {} half-widths of its 95% interval from the threshold, {} (the outcome that decides the verdict; "
                     "beyond +-1 an outcome is decided, inside it its interval contains the threshold).",
                     margin_text(deciding.margin), deciding.what);
}

Judgement judge_timed_parts(const std::vector<TimedPart>& parts) {
  if (parts.empty()) throw std::invalid_argument("judge_timed_parts: a statement of no parts");
  std::vector<ConditionOutcome> conditions;
  std::vector<TimedOutcome> outcomes;
  std::string list;
  double against = 0;
  for (const TimedPart& p : parts) {
    // A NaN margin decides nothing, whatever outcome it came with (as deciding_outcome reads it).
    const Verdict outcome = std::isnan(p.outcome.margin) ? Verdict::inconclusive : p.outcome.outcome;
    conditions.push_back({p.outcome.what, p.description, outcome});
    outcomes.push_back({p.outcome.what, outcome, p.outcome.margin});
    list += (list.empty() ? "" : "; ") + p.description;
    against += outcome == Verdict::fails;
  }
  Judgement j = judge_outcomes_by_condition(conditions, "The 95% interval cannot decide");
  j.observed = against;
  j.note = (j.note.empty() ? "" : j.note + " ") + "Parts: " + list + ". " + margin_sentence(deciding_outcome(outcomes, j.verdict));
  return j;
}

}  // namespace attnlab
