// Verdicts drawn from timings, judged from intervals so that the machine's load cannot reverse them: a median
// time, a ratio of two medians or a fitted exponent decides only where its 95% interval clears the line it is
// judged against, and "fastest" only where one interval lies below every other. Otherwise the outcome is
// inconclusive, with its margin saying how far it is from deciding.
#pragma once

#include <string>
#include <vector>

#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/median_interval.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/verdict.hpp"

namespace attnlab {

// An estimate with its 95% interval, lower <= value <= upper: a median time, a ratio of medians, a fitted exponent.
struct Estimate {
  double value = 0, lower = 0, upper = 0;
};
Estimate estimate_of(const MedianInterval& m);
Estimate slope_estimate(const PowerLawFit& fit);  // the slope and its Student-t interval
Estimate exact_estimate(double value);           // a counted quantity: no noise, an interval of zero width

// The margin of `e` below `line`, in units of its interval: (line - value) / (upper - value) when value <= line,
// -(value - line) / (value - lower) otherwise. At least 1: the interval lies at or below the line; below -1: wholly
// above it; between: it contains the line and cannot decide. Infinite for an interval of zero width on the
// line's side. margin_above is the same with the sides exchanged.
double margin_below(const Estimate& e, double line);
double margin_above(const Estimate& e, double line);

// `e` against the band [low, high] (a claimed exponent and its tolerance; -inf or inf for one-sided):
//   holds         the whole interval lies inside (low <= lower, upper <= high);
//   fails         none of it does (upper < low or lower > high);
//   inconclusive  the interval contains an edge of the band.
// margin: the smaller of margin_above(e, low) and margin_below(e, high): >= 1 holds, < -1 fails.
struct BandJudgement {
  Verdict outcome;
  double margin;
};
BandJudgement judge_band(const Estimate& e, double low, double high);

// How far `faster` is from being separated below `slower`: (slower.value - faster.value) divided by the sum of the
// two half-widths that face each other, negative (and measured the other way) when `slower` is the lower. Above 1:
// faster's interval lies strictly below slower's (separated); below -1: strictly above; otherwise they overlap or
// touch, a tie. 0 for two identical intervals of zero width.
double separation_margin(const Estimate& faster, const Estimate& slower);

// The conservative interval of a ratio of two positive medians: if each median lies in its interval, the ratio
// lies in [a.lower / b.upper, a.upper / b.lower]; its value is a.value / b.value. It lies below 1 exactly when a's
// interval lies below b's. Throws std::invalid_argument unless b.lower > 0.
Estimate ratio_estimate(const Estimate& a, const Estimate& b);

struct NamedEstimate {
  std::string name;
  Estimate estimate;
};

// The methods that could be the fastest: those whose interval's lower bound is at or below the smallest upper
// bound of all, in the order given. One name: that method's interval lies strictly below every other's (the cell
// is decided); more: they tie. Throws std::invalid_argument for no methods or a reversed or non-finite interval.
std::vector<std::string> fastest_candidates(const std::vector<NamedEstimate>& methods);

// The claim "one of `group` is the fastest of `methods`" in one cell (U15: a linear form, of the five methods):
//   holds         every candidate (fastest_candidates) is in the group: some member's interval lies strictly
//                 below every other method's;
//   fails         no candidate is: some other method's interval lies strictly below every member's;
//   inconclusive  the candidates mix members and others: a tie decides the cell.
// group_best and others_best: the fastest of each side, [min lower, min upper] with the smallest median (if each
// median lies in its interval, the smallest lies in this one); margin = separation_margin(group_best, others_best).
// Throws std::invalid_argument as fastest_candidates does, or when the group or the others are empty.
struct GroupRace {
  Verdict outcome;
  double margin;
  std::vector<std::string> candidates;
  Estimate group_best, others_best;
};
GroupRace judge_group_fastest(const std::vector<NamedEstimate>& methods, const std::vector<std::string>& group);

// A margin for a note: "+2.31", "-0.47", "+inf".
std::string margin_text(double margin);

// One timed outcome of a claim (a method's exponent, a path's, a grid cell) with its margin, named for a note
// ("exact's time exponent", "the cell n=128,d=32"). outcome: holds, fails or inconclusive.
struct TimedOutcome {
  std::string what;
  Verdict outcome;
  double margin;
};

// The outcome whose margin says how firm a verdict drawn from `outcomes` is: the one whose change would change the
// verdict first.
//   holds         (every outcome holds): the smallest margin;
//   fails         every outcome fails (judge_outcomes_by_condition's ladder): the failure nearest to -1; or, with
//                 `one_failure_fails` (L2: the claim fails with any one), the strongest failure;
//   conditional   (some hold, some fail): the weaker of the strongest holding and the strongest failing outcome;
//   inconclusive  the undecided outcome nearest to deciding.
// NaN margins count as undecided. Throws std::invalid_argument for no outcome of the kind the verdict needs.
const TimedOutcome& deciding_outcome(const std::vector<TimedOutcome>& outcomes, Verdict verdict, bool one_failure_fails = false);

// The sentence each timing claim's note ends with, so that a reader sees how firm its verdict is:
// "Margin: +1.42 half-widths of its 95% interval from the threshold, exact's time exponent (the outcome that decides
// the verdict; beyond +-1 an outcome is decided, inside it its interval contains the threshold)." An infinite
// margin (a counted outcome, without an interval) is said to be one.
std::string margin_sentence(const TimedOutcome& deciding);

// One part of a statement made of timed outcomes (a corrected timing claim: an exponent against a band, one path
// faster than another at a size): its outcome and margin, and its description in words with the interval that
// decided it ("the qr path's exponent in d 0.91 [0.80, 1.02], at most 1.3, margin +3.10").
struct TimedPart {
  TimedOutcome outcome;
  std::string description;
};

// A statement that holds only if every part holds, judged by judge_outcomes_by_condition's ladder: holds when every
// part holds, fails when every part fails, conditional when some hold and some fail, inconclusive where an undecided
// part could change that. observed: the number of parts decided against the statement (its metric; threshold 0).
// The note lists every part in the order given ("Parts: a; b; c."), after the ladder's own note, and ends with
// margin_sentence of the part that decides the verdict. A part with a NaN margin counts as undecided. Throws std::invalid_argument for no parts or an outcome
// other than holds, fails or inconclusive.
Judgement judge_timed_parts(const std::vector<TimedPart>& parts);

}  // namespace attnlab
