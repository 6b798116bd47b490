// A metric measured once per (condition, seed's model) and summarised per condition by its mean over the
// seeds with a 95% Student-t interval: how the trained claims (R12, L5, U18) turn their models' tables into
// the intervals they are judged by. Conditions keep the order they were first seen in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/verdict.hpp"

namespace attnlab {

class SeedMeans {
 public:
  // The value of (condition, seed), replacing an earlier one.
  void set(const std::string& condition, std::int64_t seed, double value);
  // The largest value seen for (condition, seed) (NaN wins: a NaN anywhere is the worst outcome).
  void raise(const std::string& condition, std::int64_t seed, double value);

  const std::vector<std::string>& conditions() const { return order_; }
  // The condition's values in seed order (std::out_of_range for an unknown condition).
  std::vector<double> values(const std::string& condition) const;
  MeanInterval mean(const std::string& condition) const { return student_t_mean_interval(values(condition)); }
  // One interval per condition for judge_intervals_by_condition, described as "<condition> (<what> m [lo, hi])"
  // with the numbers in `format` (a fmt format for one double, e.g. "{:.3g}").
  std::vector<ConditionInterval> intervals(const std::string& what, const std::string& format) const;

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::map<std::int64_t, double>> values_;
};

// "m [lo, hi]" with each number in `format`.
std::string mean_interval_text(const MeanInterval& m, const std::string& format = "{:.4f}");

}  // namespace attnlab
