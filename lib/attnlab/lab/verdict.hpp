// Turning measured ratios into verdicts with thresholds fixed before the run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attnlab/io/ledger.hpp"

namespace attnlab {

// The one holds / conditional / fails triage of this project; every judge below and every experiment's
// own judgement ends in it rather than re-coding the ladder. A claim
//   holds        when it holds in full (in every group, or at its full strength),
//   conditional  when it holds only in part (in some groups, or only in a weaker form),
//   fails        otherwise.
// `in_full` implies `in_part`; triage(true, false) is holds. A NaN measurement must count as a failure:
// compare as `value <= threshold`, which is false for NaN.
Verdict triage(bool in_full, bool in_part);

// The interval triage (judge_best_of, judge_within_tolerance, G12): holds when the 95% interval lies
// wholly on the claim's side of its line, fails when wholly on the other side, inconclusive when it
// straddles it (the data cannot decide). Both true is a contradiction and throws std::logic_error.
Verdict separate(bool on_claim_side, bool on_other_side);

// Pass or fail outcomes collected per named group (an input family, a sweep, a construction), in
// first-seen order so notes read the same every run. A group passes only if every outcome added for it
// passes.
class GroupOutcomes {
 public:
  void add(const std::string& group, bool passes);
  bool empty() const { return groups_.empty(); }
  std::vector<std::string> passing() const;  // in first-seen order
  std::vector<std::string> failing() const;
  // triage(no group fails, some group passes); throws std::invalid_argument when nothing was added.
  Verdict verdict() const;

 private:
  std::vector<std::pair<std::string, bool>> groups_;
};

// The worst (largest) value of a metric seen under each named condition (an input
// family, a shape regime), in first-seen order so notes read the same every run.
class WorstByCondition {
 public:
  // `description` says in words what the condition is ("W_K = W_Q: W_Q W_K^T symmetric").
  void add(const std::string& condition, const std::string& description, double value);
  struct Entry {
    std::string condition, description;
    double worst;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

struct Judgement {
  Verdict verdict;
  double observed;  // the worst value over all conditions
  std::string note; // for conditional: the conditions under which it holds, and those where it fails
};

// holds when every condition's worst value is <= threshold; conditional when some
// are; fails when none is. NaN counts as a failure.
Judgement judge_by_condition(const WorstByCondition& worst, double threshold);

// One condition's outcome, decided by a rule of its own (a band around a claimed exponent, the fastest of a
// grid cell): holds, fails, or inconclusive where its interval cannot decide.
struct ConditionOutcome {
  std::string condition, description;  // description: in words, with the interval that decided
  Verdict outcome;
};

// The ladder of judge_intervals_by_condition below over outcomes decided per condition:
//   holds         every condition holds;
//   fails         every condition fails;
//   conditional   some hold and some fail (whatever the undecided turn out to be);
//   inconclusive  otherwise: an undecided condition could change the verdict.
// The note (empty for holds and fails) names the conditions that hold, those that fail, and the undecided ones
// after `undecided_why` ("The 95% interval contains the threshold 25 for a [..]: the data cannot decide.").
// observed is 0: the caller's. Throws std::invalid_argument for no conditions or an outcome other than holds,
// fails or inconclusive.
Judgement judge_outcomes_by_condition(const std::vector<ConditionOutcome>& conditions, const std::string& undecided_why);

// judge_by_condition with each condition's metric known only as a 95% interval (L5, U18 over the seeds'
// models: a head's or an approximation's mean over seeds with its Student-t interval), lower is better.
// A condition passes when its whole interval lies at or below the threshold (upper <= threshold), fails
// when it lies above (lower > threshold), and is undecided when it straddles the threshold. Then
//   holds         every condition passes;
//   fails         every condition fails;
//   conditional   some pass and some fail (the note names both, and the undecided);
//   inconclusive  otherwise: an undecided condition could turn holds into conditional or fails into
//                 conditional, so the data cannot decide.
// observed is the largest upper bound (NaN wins). Throws std::invalid_argument for no conditions or an
// interval with lower > upper.
struct ConditionInterval {
  std::string condition, description;  // description: in words, with its interval
  double lower = 0, upper = 0;
};
Judgement judge_intervals_by_condition(const std::vector<ConditionInterval>& conditions, double threshold);

// One method's 95% interval for a score where higher is better (e.g. mean test accuracy over seeds).
struct MethodInterval {
  std::string name;
  double lower = 0, upper = 0;
};

// The separation a "best of" verdict needs: the claimed best's lower bound minus the highest upper
// bound among the others must exceed it. 0: any gap at all; touching intervals do not separate.
inline constexpr double kSeparationThreshold = 0.0;

// Judges "`claimed_best` scores highest of these methods" from their intervals (issue 14, U17):
//   holds        when its interval lies strictly above every other's (lower > each other upper);
//   fails        when some other's lies strictly above it (that lower > its upper);
//   inconclusive otherwise: the intervals do not separate, the data cannot decide.
// observed is the margin (claimed lower) - (highest other upper), judged against
// kSeparationThreshold; the note names the intervals that decided. For example, with
// {"linformer", 0.87, 0.89}, {"softmax", 0.85, 0.88}: inconclusive, observed -0.01, the note
// "linformer's 95% interval [0.87, 0.89] overlaps or touches softmax's [0.85, 0.88]: the intervals
// do not separate, the data cannot decide."
// Throws std::invalid_argument for fewer than two methods, a repeated name, a claimed best not
// among them, or an interval with a non-finite bound or lower > upper.
Judgement judge_best_of(const std::vector<MethodInterval>& intervals, const std::string& claimed_best);

// Judges "a change keeps `score` within `tolerance` of `reference`" (higher is better; R12: the test
// accuracy of a model after its attention is changed, against the unchanged model's accuracy) from the
// changed score's 95% interval:
//   holds        when score.lower > reference - tolerance (even the interval's worst case keeps it);
//   fails        when score.upper < reference - tolerance (even its best case loses more);
//   inconclusive otherwise: the interval straddles the tolerance line, the data cannot decide.
// observed is reference - score.lower (the largest loss the interval allows), judged against tolerance;
// the note names the interval and the line. Throws std::invalid_argument for a non-finite input, a
// negative tolerance or score.lower > score.upper.
Judgement judge_within_tolerance(const MethodInterval& score, double reference, double tolerance);

// A claim judged first as stated (`direct`) and, where that fails, under a condition (`alternative`, e.g.
// R12's model trained with the changed attention instead of changed after training):
//   direct holds                        -> direct's judgement;
//   direct fails, alternative holds     -> conditional, the note saying it holds only `condition`;
//   otherwise                           -> direct's judgement (its verdict, observed and note).
// The alternative's note is appended to every outcome's note.
Judgement judge_direct_or_condition(const Judgement& direct, const Judgement& alternative, const std::string& condition);

}  // namespace attnlab
