// Turning measured ratios into verdicts with thresholds fixed before the run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "attnlab/io/ledger.hpp"

namespace attnlab {

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

}  // namespace attnlab
