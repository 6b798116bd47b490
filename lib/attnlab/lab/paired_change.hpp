// Paired differences grouped by replicate: each case measured twice (before and after a change, e.g. a head's
// rank at initialisation and trained, on the same test image), each replicate (a seed's model) holding many
// cases. Says how many cases rose, fell or stayed, and the mean over replicates of each replicate's mean
// difference with its 95% Student-t interval: the replicates, not the cases, are the independent draws.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "attnlab/lab/mean_interval.hpp"

namespace attnlab {

class PairedChange {
 public:
  void add(std::int64_t replicate, double before, double after);
  std::int64_t higher() const { return higher_; }
  std::int64_t lower() const { return lower_; }
  std::int64_t equal() const { return equal_; }
  std::int64_t cases() const { return higher_ + lower_ + equal_; }
  // Throws std::invalid_argument when nothing was added.
  MeanInterval mean_over_replicates() const;
  // "+1.2 [+0.9, +1.5] (a rise)": the mean with its interval and which way the interval says the change went
  // ("a rise" above 0, "a fall" below 0, "no measurable change" when it contains 0).
  std::string text() const;

 private:
  std::map<std::int64_t, std::pair<double, double>> sums_;  // [replicate]: (sum of after - before, cases)
  std::int64_t higher_ = 0, lower_ = 0, equal_ = 0;
};

}  // namespace attnlab
